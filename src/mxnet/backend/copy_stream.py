"""Host-to-device copies on a copy stream of their own, one per GPU
(``MXNET_GPU_COPY_STREAM=1``; off until a device run has measured it).

Why: pymxnet queues a device's kernels on the calling thread's current stream, the
legacy default stream that every thread shares. A host-to-device copy queued there
(CuPy's ``cupy.array`` stages the host data in pinned memory and queues the copy)
waits behind every kernel already queued, and the kernels queued after it wait for it,
so the copy engine idles while the GPU computes. On a non-blocking stream of its own
the copy of the next batch runs beside the current step's kernels (as MXNet 1.9.1
copies on a per-device copy stream), and the compute stream waits for it only where
the work that reads it begins.

Three hazards, and what closes each:

* **read before written**: right after queuing the copy, the compute stream waits for
  the copy's event, so whatever is queued later (every reader of the result) runs
  after it.
* **the destination's memory**: it comes from the arena of CuPy's pool that belongs to
  the copy stream (CuPy gives a freed block back to the arena of the stream that
  allocated it, and hands it out again in that stream's order). When the last array
  viewing the block goes away, kernels that read it may still be queued on the compute
  stream, and the next copy must not overwrite it under them. So the block is *leased*:
  the array views memory this module holds, a finalizer notes when the array and all
  its views are gone, an event is then recorded on the compute stream (after every
  kernel that could read the block), and only when that event has passed is the block
  given back to the pool.
* **the source**: a pageable host array is first copied into a pinned staging buffer,
  held until the copy's event has passed (the pinned pool would hand it out again). A
  source already in pinned memory (``mx.cpu_pinned()``) is copied from directly, and
  the call waits for that transfer before returning, since the caller may write its
  buffer as soon as the copy "is done" (the engine runs GPU copies inline): the wait is
  for transfers only (the copy stream holds nothing else), not for the compute stream.

Assumes, as the rest of pymxnet does, that a device's kernels are queued on the
legacy default stream, shared by all threads; where the calling thread's current
stream is another (CuPy's per-thread default stream, a user's stream, a CUDA-graph
capture), the copy keeps CuPy's path on that stream. Plain numeric types in the
machine's byte order only (CuPy's path converts the rest). Arrays
smaller than ``MXNET_GPU_COPY_STREAM_MIN_BYTES`` (default 1 MiB: labels, scalars) keep
CuPy's path, where an event and a stream switch would cost more than they save.
"""
import collections
import os
import threading
import weakref

import numpy as np

from ..base import env_int
from . import host_to_device as h2d      # (this module has a host_to_device of its own)

__all__ = ["enabled", "wanted", "host_to_device", "after_sync", "for_device"]

_DEFAULT_MIN_BYTES = 1 << 20
_settings = {}                  # read once: a copy and its release must agree
_copiers = {}                   # device id -> CopyStream
_copiers_lock = threading.Lock()


def _read_settings():
    if not _settings:
        _settings["on"] = os.environ.get("MXNET_GPU_COPY_STREAM", "0").strip() == "1"
        # as every integer MXNET_* flag: unset or not a number means the default
        _settings["min_bytes"] = max(0, env_int("MXNET_GPU_COPY_STREAM_MIN_BYTES",
                                                _DEFAULT_MIN_BYTES))
    return _settings


def enabled():
    """Whether host-to-device copies take the copy stream (MXNET_GPU_COPY_STREAM=1)."""
    return _read_settings()["on"]


# plain numeric types in the machine's byte order: what is copied byte for byte. CuPy's
# own path converts or refuses the rest (big-endian data, objects, strings, records).
_PLAIN_CHARS = frozenset("?bhilqBHILQefdFD")


def wanted(host):
    """Whether the copy of host array ``host`` to a GPU takes the copy stream."""
    s = _read_settings()
    return (s["on"] and isinstance(host, np.ndarray) and host.nbytes >= s["min_bytes"]
            and host.nbytes > 0 and host.dtype.isnative
            and host.dtype.char in _PLAIN_CHARS)


class _Lease:
    """The owner of a leased block's array memory; its death (weakly observed) means
    the last array viewing the block is gone."""
    __slots__ = ("__weakref__",)


class CopyStream:
    """One GPU's copy stream and the blocks and staging buffers it holds.

    ``cp`` is the cupy module (a stand-in in the tests): what is used of it is
    ``cuda.Device``, ``cuda.Stream(non_blocking=True)``, ``cuda.Event``,
    ``cuda.get_current_stream``, ``cuda.alloc``, ``cuda.alloc_pinned_memory``,
    ``cuda.pinned_memory.is_memory_pinned``, ``cuda.UnownedMemory``,
    ``cuda.MemoryPointer``, ``ndarray(shape, dtype, memptr=)`` and ``array``."""

    def __init__(self, cp, device_id):
        self.cp = cp
        self.device_id = device_id
        with cp.cuda.Device(device_id):
            self.stream = cp.cuda.Stream(non_blocking=True)
        self._lock = threading.Lock()
        self._leased = {}                       # key -> pooled block an array views
        self._dropped = collections.deque()     # keys whose arrays are gone
        self._fenced = []       # (compute-stream event, block): released once passed
        self._staging = []      # (copy event, pinned buffer): released once passed
        self._keys = 0

    # -- the copy -------------------------------------------------------------------
    def host_to_device(self, host):
        """A device array (on this copier's GPU) holding ``host``'s values; the copy is
        queued on the copy stream and the calling thread's current stream waits for
        it."""
        cp = self.cp
        host = np.asarray(host)
        with cp.cuda.Device(self.device_id):
            compute = cp.cuda.get_current_stream()
            if compute.ptr != 0:
                # Not the legacy default stream (a per-thread default stream, a stream
                # of the user's, a CUDA-graph capture): other threads' readers would
                # escape the wait and the fence, so the copy stays on that stream.
                return cp.array(host, copy=True)
            with self._lock:
                self._reap(compute)
            source, staged = self._source(host)
            with self.stream:                       # the copy stream's pool arena
                block = cp.cuda.alloc(host.nbytes)
            copied = cp.cuda.Event(disable_timing=True)
            block.copy_from_host_async(source.ctypes.data, host.nbytes, self.stream)
            try:
                copied.record(self.stream)
                compute.wait_event(copied)
            except BaseException:
                # the transfer is queued: the staging buffer and the block must outlive it
                self.stream.synchronize()
                raise
            if staged:
                with self._lock:
                    self._staging.append((copied, source))
            else:
                # the caller's pinned buffer is free again once this returns (the copy
                # stream holds copies only: the wait is for transfers, not kernels)
                copied.synchronize()
            return self._lend(block, host.shape, host.dtype, host.nbytes)

    def _source(self, host):
        """(contiguous host array the copy reads, whether it is our staging buffer)."""
        cp = self.cp
        if host.flags.c_contiguous and \
                cp.cuda.pinned_memory.is_memory_pinned(host.ctypes.data):
            return host, False
        return h2d.staged(cp, host), True

    def _lend(self, block, shape, dtype, nbytes):
        cp = self.cp
        lease = _Lease()
        with self._lock:
            key = self._keys
            self._keys += 1
            self._leased[key] = block
        done = weakref.finalize(lease, self._dropped.append, key)
        done.atexit = False
        memory = cp.cuda.UnownedMemory(block.ptr, nbytes, lease, self.device_id)
        return cp.ndarray(shape, dtype, memptr=cp.cuda.MemoryPointer(memory, 0))

    # -- releases -------------------------------------------------------------------
    def _reap(self, compute):
        """Fence the blocks whose arrays are gone (an event on ``compute``, after every
        kernel queued so far), give back those whose fence has passed, and free the
        staging buffers whose copy has run. Called with the lock held."""
        while True:
            try:
                key = self._dropped.popleft()
            except IndexError:
                break
            block = self._leased.pop(key)
            fence = self.cp.cuda.Event(disable_timing=True)
            fence.record(compute)
            self._fenced.append((fence, block))
        if self._fenced:
            self._fenced = [(e, b) for e, b in self._fenced if not e.done]
        if self._staging:
            self._staging = [(e, s) for e, s in self._staging if not e.done]

    def after_sync(self, wait=False):
        """After a sync point: what the device has finished goes back. Still through
        the fences: another thread may have queued work since the synchronisation.
        ``wait``: wait for those fences too (emptying the cache: everything whose
        arrays are gone goes back now)."""
        with self.cp.cuda.Device(self.device_id):
            compute = self.cp.cuda.get_current_stream()
            with self._lock:
                self._reap(compute)
                if wait and (self._fenced or self._staging):
                    for event, _ in self._fenced + self._staging:
                        event.synchronize()
                    self._reap(compute)

    def held(self):
        """(leased, fenced, staging) counts, for tests and diagnostics."""
        with self._lock:
            return len(self._leased), len(self._fenced), len(self._staging)


def for_device(cp, device_id):
    """The copier of GPU ``device_id`` (made on first use)."""
    c = _copiers.get(device_id)
    if c is None:
        with _copiers_lock:
            c = _copiers.get(device_id)
            if c is None:
                c = _copiers[device_id] = CopyStream(cp, device_id)
    return c


def host_to_device(cp, host, device_id):
    """``host`` copied to GPU ``device_id`` through that GPU's copy stream."""
    return for_device(cp, device_id).host_to_device(host)


def after_sync(device_id, wait=False):
    """Hook for the sync points: GPU ``device_id`` has just been synchronised
    (``wait``: for emptying the cache, see CopyStream.after_sync)."""
    c = _copiers.get(device_id)
    if c is not None:
        c.after_sync(wait)
