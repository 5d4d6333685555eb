"""DataLoader: mini-batches from a Dataset, optionally loaded by parallel workers."""
from multiprocessing.reduction import ForkingPickler  # noqa: F401  (MXNet re-exports it)

import numpy as np

from ... import context, ndarray as nd
from ...ndarray import NDArray
from . import _workers
from .sampler import BatchSampler, RandomSampler, SequentialSampler
from ..parameter import _np_mode

__all__ = ["DataLoader", "default_batchify_fn", "default_mp_batchify_fn"]


def default_batchify_fn(data):
    """Merges a list of samples into a batch: NDArrays are stacked along a new first
    axis, tuples are batched element-wise (giving a list), anything else goes through
    ``np.asarray`` and becomes an NDArray of the same dtype."""
    if isinstance(data[0], NDArray):
        return nd.stack(*data)
    if isinstance(data[0], tuple):
        return [default_batchify_fn(list(items)) for items in zip(*data)]
    data = np.asarray(data)
    return nd.array(data, dtype=data.dtype)


def default_mp_batchify_fn(data):
    """The batchify function used in worker processes. MXNet places its batches in
    shared memory (``cpu_shared(0)``); here they travel back through a socket, so they
    are ordinary ``cpu(0)`` arrays and the result equals ``default_batchify_fn``'s."""
    return default_batchify_fn(data)


def _as_in_context(data, ctx):
    if isinstance(data, NDArray):
        return data.as_in_context(ctx)
    if isinstance(data, (list, tuple)):
        return [_as_in_context(d, ctx) for d in data]
    return data


class _MultiWorkerIter:
    """Yields the batches of one pass, in order, keeping ``prefetch`` of them in flight
    (one more is requested on every ``next``)."""

    def __init__(self, pool, batch_sampler, prefetch, timeout, pin_memory, pin_device_id,
                 data_loader):
        self._pool = pool
        self._iter = iter(batch_sampler)
        self._len = len(batch_sampler)
        self._tag = _workers.new_tag()
        self._sent = self._rcvd = 0
        self._timeout = timeout
        self._pin_ctx = context.cpu_pinned(pin_device_id) if pin_memory else None
        self._data_loader = data_loader   # the loader owns the pool: keep it alive
        for _ in range(prefetch):
            self._push_next()

    def __len__(self):
        return self._len

    def __iter__(self):
        return self

    def _push_next(self):
        indices = next(self._iter, None)
        if indices is None:
            return
        self._pool.submit((self._tag, self._sent), indices)
        self._sent += 1

    def __next__(self):
        self._push_next()
        if self._rcvd == self._sent:
            raise StopIteration
        batch = self._pool.get((self._tag, self._rcvd), self._timeout)
        self._rcvd += 1
        if self._pin_ctx is not None:
            batch = _as_in_context(batch, self._pin_ctx)
        return batch

    def __del__(self):
        pool = getattr(self, "_pool", None)
        if pool is not None and getattr(self, "_rcvd", 0) < getattr(self, "_sent", 0):
            try:
                pool.drop(self._tag)
            except Exception:   # interpreter shutdown may have torn the pool down
                pass


class DataLoader:
    """Loads data from a dataset and returns mini-batches of data.

    Parameters
    ----------
    dataset : Dataset
        Source dataset (numpy and MXNet arrays work directly).
    batch_size : int
        Size of mini-batch.
    shuffle : bool
        Whether to shuffle the samples. Either specify sampler or shuffle, not both.
    sampler : Sampler
        The sampler to use.
    last_batch : {'keep', 'discard', 'rollover'}
        What to do with a final incomplete batch (see BatchSampler); default 'keep'.
    batch_sampler : Sampler
        A sampler that yields lists of indices. batch_size, shuffle, sampler and
        last_batch must not be given with it.
    batchify_fn : callable
        Merges a list of samples into a batch; default ``default_batchify_fn``
        (``default_mp_batchify_fn`` with workers).
    num_workers : int, default 0
        Number of worker processes (threads with ``thread_pool``) loading batches in
        parallel; 0 loads in the calling thread.
    pin_memory : bool
        Whether to return batches in page-locked CPU memory (``cpu_pinned``).
    pin_device_id : int, default 0
        The GPU device the pinned memory is meant for.
    prefetch : int, default ``2 * num_workers``
        Number of batches requested ahead of the one being consumed.
    thread_pool : bool, default False
        Use threads instead of processes for the workers.
    timeout : int, default 120
        Seconds to wait for a worker's batch before raising an MXNetError.
    auto_reload : bool, default False
        Start prefetching the next pass as soon as one ends (and at construction).
    """

    def __init__(self, dataset, batch_size=None, shuffle=False, sampler=None,
                 last_batch=None, batch_sampler=None, batchify_fn=None,
                 num_workers=0, pin_memory=False, pin_device_id=0,
                 prefetch=None, thread_pool=False, timeout=120, auto_reload=False):
        self._dataset = dataset
        self._pin_memory = pin_memory
        self._pin_device_id = pin_device_id
        self._thread_pool = thread_pool
        self._timeout = timeout

        if batch_sampler is None:
            if batch_size is None:
                raise ValueError("batch_size must be specified unless "
                                 "batch_sampler is specified")
            if sampler is None:
                sampler = RandomSampler(len(dataset)) if shuffle else \
                    SequentialSampler(len(dataset))
            elif shuffle:
                raise ValueError("shuffle must not be specified if sampler is specified")
            batch_sampler = BatchSampler(sampler, batch_size,
                                         "keep" if last_batch is None else last_batch)
        elif batch_size is not None or shuffle or sampler is not None or \
                last_batch is not None:
            raise ValueError("batch_size, shuffle, sampler and last_batch must "
                             "not be specified if batch_sampler is specified.")
        self._batch_sampler = batch_sampler
        self._num_workers = num_workers if num_workers >= 0 else 0
        self._prefetch = max(0, int(prefetch) if prefetch is not None
                             else 2 * self._num_workers)
        if batchify_fn is None:
            batchify_fn = default_mp_batchify_fn if self._num_workers > 0 \
                else default_batchify_fn
        self._batchify_fn = batchify_fn

        self._worker_pool = None
        if self._num_workers > 0:
            if thread_pool:
                self._worker_pool = _workers.ThreadPool(self._num_workers, dataset,
                                                        batchify_fn)
            else:
                nd.waitall()   # fork only with the engine idle: nothing half-written
                self._worker_pool = _workers.ProcessPool(self._num_workers, dataset,
                                                         batchify_fn)
        self.auto_reload = auto_reload
        self._iter = None
        if auto_reload:
            self.refresh()

    def _same_process_iter(self):
        pin_ctx = context.cpu_pinned(self._pin_device_id) if self._pin_memory else None
        for batch in self._batch_sampler:
            ret = self._batchify_fn([self._dataset[idx] for idx in batch])
            if pin_ctx is not None:
                ret = _as_in_context(ret, pin_ctx)
            yield ret

    def _prefetch_iter(self):
        if self._num_workers == 0:
            return self._same_process_iter()
        return _MultiWorkerIter(self._worker_pool, self._batch_sampler, self._prefetch,
                                self._timeout, self._pin_memory, self._pin_device_id, self)

    def __iter__(self):
        if self._iter is None:
            self.refresh()
        it, self._iter = self._iter, None
        for batch in it:
            yield _np_mode(batch)        # NumPy mode: batches are mx.np arrays
        if self._iter is None and self.auto_reload:
            self.refresh()

    def __len__(self):
        return len(self._batch_sampler)

    def refresh(self):
        """Start a new pass now (prefetching its first batches)."""
        self._iter = self._prefetch_iter()

    def clean(self):
        """Drop a prefetched pass; the next ``iter`` starts a new one."""
        self._iter = None

    def __del__(self):
        pool = getattr(self, "_worker_pool", None)
        if pool is not None:
            pool.shutdown()
