"""Samplers that give each distributed worker its own part of a data set, for
``gluon.data.DataLoader(dataset, batch_size, sampler=...)``; typically
``num_parts=kv.num_workers, part_index=kv.rank``.

Synchronous training needs every worker to run the same number of steps, so both
samplers give all parts the same length by default (``even=True``: the last
``len % num_parts`` samples of a pass are left out).
"""
import numpy as np

from ...io.sharding import check_shard, shard_range
from .sampler import Sampler

__all__ = ["SplitSampler", "ShardedSampler"]


class SplitSampler(Sampler):
    """The indices of one contiguous part of ``range(length)``.

    Parameters
    ----------
    length : int
        The size of the data set.
    num_parts : int, default 1
        The number of parts (workers).
    part_index : int, default 0
        Which part this sampler yields, 0 ... num_parts - 1.
    shuffle : bool, default False
        Shuffle the part's indices on every pass (NumPy's global generator, as
        RandomSampler; workers need not agree on it).
    even : bool, default True
        Every part gets ``length // num_parts`` indices; otherwise the parts are
        ``[p*length//num_parts, (p+1)*length//num_parts)`` (sizes differ by one).
    """

    def __init__(self, length, num_parts=1, part_index=0, shuffle=False, even=True):
        self._start, self._end = shard_range(length, num_parts, part_index,
                                             drop_remainder=even, where="SplitSampler")
        self._shuffle = shuffle

    def __iter__(self):
        indices = np.arange(self._start, self._end)
        if self._shuffle:
            np.random.shuffle(indices)
        return iter(indices.tolist())

    def __len__(self):
        return self._end - self._start


class ShardedSampler(Sampler):
    """Every ``num_parts``-th index of another sampler's pass, starting at
    ``part_index`` (interleaved parts, so a shuffling sampler spreads every worker over
    the whole data set).

    Parameters
    ----------
    sampler : Sampler
        Yields the indices of the whole data set (e.g. ``RandomSampler(len(data))``).
        Workers must draw the same sequence from it: give ``seed``, or seed NumPy
        identically on every worker.
    num_parts, part_index : int
        The number of parts and which one this sampler yields.
    even : bool, default True
        Every part gets ``len(sampler) // num_parts`` indices per pass (the tail is
        left out); otherwise the first ``len % num_parts`` parts get one more.
    seed : int, optional
        Draw pass ``e`` of ``sampler`` with NumPy's global generator seeded by
        ``seed + e`` (restored afterwards), so every worker sees the same order.
    """

    def __init__(self, sampler, num_parts=1, part_index=0, even=True, seed=None):
        check_shard(num_parts, part_index, "ShardedSampler")
        self._sampler = sampler
        self._num_parts = num_parts
        self._part_index = part_index
        self._even = even
        self._seed = seed
        self._epoch = 0

    def _draw(self):
        if self._seed is None:
            return list(self._sampler)
        saved = np.random.get_state()
        try:
            np.random.seed((self._seed + self._epoch) % (1 << 32))
            return list(self._sampler)
        finally:
            np.random.set_state(saved)
            self._epoch += 1

    def __iter__(self):
        indices = self._draw()
        if self._even:
            indices = indices[:len(indices) - len(indices) % self._num_parts]
        return iter(indices[self._part_index::self._num_parts])

    def __len__(self):
        n = len(self._sampler)
        if self._even:
            return n // self._num_parts
        return len(range(self._part_index, n, self._num_parts))
