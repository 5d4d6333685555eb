"""Samplers: iterables of dataset indices (or of index batches) that drive a
DataLoader. Shuffling draws from NumPy's global generator, as MXNet does, so
``np.random.seed`` makes it reproducible."""
import numbers

import numpy as np

from ...base import InvalidArgument

__all__ = ["Sampler", "SequentialSampler", "RandomSampler", "FilterSampler",
           "BatchSampler", "IntervalSampler"]

_LAST_BATCH = ("keep", "discard", "rollover")


class Sampler:
    """Base class: subclasses implement ``__iter__`` and ``__len__``."""

    def __iter__(self):
        raise NotImplementedError

    def __len__(self):
        raise NotImplementedError


class SequentialSampler(Sampler):
    """Indices ``start, start+1, ..., start+length-1`` in order."""

    def __init__(self, length, start=0):
        self._length = length
        self._start = start

    def __iter__(self):
        return iter(range(self._start, self._start + self._length))

    def __len__(self):
        return self._length


class RandomSampler(Sampler):
    """A fresh random permutation of ``range(length)`` for every pass."""

    def __init__(self, length):
        self._length = length

    def __iter__(self):
        indices = np.arange(self._length)
        np.random.shuffle(indices)
        return iter(indices.tolist())

    def __len__(self):
        return self._length


class FilterSampler(Sampler):
    """The indices ``i`` of ``dataset`` for which ``fn(dataset[i])`` is true."""

    def __init__(self, fn, dataset):
        self._fn = fn
        self._dataset = dataset
        self._indices = [i for i in range(len(dataset)) if fn(dataset[i])]

    def __iter__(self):
        return iter(self._indices)

    def __len__(self):
        return len(self._indices)


class BatchSampler(Sampler):
    """Groups the indices of ``sampler`` into lists of ``batch_size``.

    ``last_batch`` says what happens to a final incomplete batch: 'keep' yields it,
    'discard' drops it, 'rollover' carries its indices over to the start of the next
    pass.
    """

    def __init__(self, sampler, batch_size, last_batch="keep"):
        if isinstance(batch_size, bool) or not isinstance(batch_size, numbers.Integral) \
                or batch_size < 1:
            raise InvalidArgument(f"batch_size must be a positive integer, got {batch_size!r}")
        if last_batch not in _LAST_BATCH:
            raise InvalidArgument("last_batch must be one of 'keep', 'discard', or 'rollover', "
                             f"but got {last_batch}")
        self._sampler = sampler
        self._batch_size = batch_size
        self._last_batch = last_batch
        self._prev = []

    def __iter__(self):
        batch, self._prev = self._prev, []
        for i in self._sampler:
            batch.append(i)
            if len(batch) == self._batch_size:
                yield batch
                batch = []
        if batch:
            if self._last_batch == "keep":
                yield batch
            elif self._last_batch == "rollover":
                self._prev = batch

    def __len__(self):
        n, bs = len(self._sampler), self._batch_size
        if self._last_batch == "keep":
            return (n + bs - 1) // bs
        if self._last_batch == "discard":
            return n // bs
        return (len(self._prev) + n) // bs


class IntervalSampler(Sampler):
    """Indices ``0, interval, 2*interval, ...`` below ``length``; with ``rollover``
    the passes starting at ``1, 2, ..., interval-1`` follow, so every index appears
    once. (MXNet 1.9.1 keeps this in gluon.contrib.data.sampler; its ``len`` is
    ``length`` even without rollover, which is kept here.)"""

    def __init__(self, length, interval, rollover=True):
        assert interval <= length, (f"Interval {interval} must be smaller than or "
                                    f"equal to length {length}")
        self._length = length
        self._interval = interval
        self._rollover = rollover

    def __iter__(self):
        for start in range(self._interval if self._rollover else 1):
            yield from range(start, self._length, self._interval)

    def __len__(self):
        return self._length
