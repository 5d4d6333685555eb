"""The storage allocator (seed 002): pooled device memory, reused across allocations.

A pool hands out raw byte blocks rounded up to a size class and keeps freed blocks for
reuse, so executors and operator workspaces do not hit the system allocator on every
step. ``HostPool`` serves CPU contexts; a device backend implements the same interface
(``alloc``, ``free``, ``release_all``, ``stats``).
"""
import contextlib
import math
import os
import threading

import numpy as np

from .base import env_int
from .backend import array_module, device_scope

__all__ = ["HostPool", "get_pool", "empty", "Block", "private_scope", "host_memory_bytes"]

_PAGE = 4096
# While a CUDA graph is captured on a thread (executor/cuda_graph.py), that thread's
# allocations must never come from or go back to the shared free lists: a replayed
# graph keeps writing the buffers it was captured with.
_private = threading.local()


_HOST_MEMORY = []        # the last reading of host_memory_bytes, once read


def host_memory_bytes(cached=True):
    """Physical memory plus swap of this machine, in bytes (None where unknown): the
    most a host allocation can ever use. Linux hands out more address space than that
    (overcommit), so an oversized request succeeds and the process is killed when the
    pages are touched; creation checks against this instead. ``cached``: the first
    reading (reading /proc/meminfo costs more than making a small array); a caller
    refusing a request asks again with ``cached=False``, in case swap was added."""
    if cached and _HOST_MEMORY:
        return _HOST_MEMORY[0]
    try:
        total = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, OSError, ValueError):
        total = None
    else:
        try:
            with open("/proc/meminfo") as f:
                for line in f:
                    if line.startswith("SwapTotal:"):
                        total += int(line.split()[1]) * 1024
                        break
        except (OSError, ValueError, IndexError):
            pass
    _HOST_MEMORY[:] = [total]
    return total


class _Detached:
    """The 'pool' of blocks allocated in a private scope: freeing one drops it."""

    @staticmethod
    def free(block):
        block.buffer = None


@contextlib.contextmanager
def private_scope():
    """Allocations on this thread bypass the pools' free lists (fresh buffers from the
    array module's current allocator, never returned for reuse)."""
    prev = getattr(_private, "on", False)
    _private.on = True
    try:
        yield
    finally:
        _private.on = prev


def _keep_freed_host_memory():
    """Have glibc's allocator keep freed NumPy buffers of up to 32 MB for reuse.

    By default it serves such buffers with fresh mmaps once its adaptive threshold
    sits low, and every fresh mapping costs a page fault per 4 KB on first write: a
    training step that makes and drops a few MB of temporaries (optimizer scratch,
    imperative results) paid ~1000 faults (a millisecond or more) per step, depending
    on what happened to be freed before. Fixed thresholds (heap up to 32 MB a buffer,
    trimmed above 64 MB free) make that reuse steady. Off with MXNET_HOST_MALLOC_TUNE=0;
    nothing happens where the C library has no mallopt (not glibc)."""
    if not env_int("MXNET_HOST_MALLOC_TUNE", 1):
        return
    try:
        import ctypes
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return
    m_trim_threshold, m_mmap_threshold = -1, -3
    mallopt(m_mmap_threshold, 32 << 20)
    mallopt(m_trim_threshold, 64 << 20)


_keep_freed_host_memory()


def _count(shape):
    """Elements of shape (math.prod: np.prod costs microseconds on a small tuple)."""
    return math.prod(int(d) for d in shape)


def nbytes_of(shape, dtype):
    """Bytes of an array of shape (a tuple or an int) and dtype."""
    n = shape if shape.__class__ is int else _count(shape)
    return n * np.dtype(dtype).itemsize


def size_class(nbytes):
    """Round a request up: powers of two below 1 MiB, whole pages above."""
    if nbytes <= 0:
        return 0
    if nbytes < (1 << 20):
        return 1 << (int(nbytes) - 1).bit_length()
    return -(-int(nbytes) // _PAGE) * _PAGE


class Block:
    """A pooled allocation: ``buffer`` is a flat uint8 array of ``size`` bytes."""
    __slots__ = ("buffer", "size", "pool", "__weakref__")

    def __init__(self, buffer, size, pool):
        self.buffer, self.size, self.pool = buffer, size, pool

    def view(self, shape, dtype, offset=0):
        """The block's bytes from ``offset`` on as an array of shape/dtype (no copy)."""
        dtype = np.dtype(dtype)
        n = _count(shape) * dtype.itemsize
        return self.buffer[offset:offset + n].view(dtype).reshape(shape)


class HostPool:
    """Pooled host memory with reuse of freed blocks and byte statistics."""

    def __init__(self, xp=np):
        self._xp = xp
        self._free = {}                 # size class -> list of free buffers
        self._lock = threading.Lock()
        self.bytes_in_use = 0
        self.bytes_pooled = 0
        self.peak_bytes_in_use = 0
        self.num_allocs = 0
        self.num_reuses = 0
        self._limit = env_int("MXNET_CPU_MEM_POOL_LIMIT_MB", 4096) << 20

    def alloc(self, nbytes):
        size = size_class(nbytes)
        if getattr(_private, "on", False):
            return Block(self._xp.empty(size, dtype=np.uint8), size, _Detached)
        with self._lock:
            free = self._free.get(size)
            if free:
                buf = free.pop()
                self.bytes_pooled -= size
                self.num_reuses += 1
            else:
                buf = None
            self.bytes_in_use += size
            self.num_allocs += 1
            self.peak_bytes_in_use = max(self.peak_bytes_in_use, self.bytes_in_use)
        if buf is None:
            buf = self._xp.empty(size, dtype=np.uint8)
        return Block(buf, size, self)

    def free(self, block):
        """Return a block; it is kept for reuse unless the pool is over its limit."""
        with self._lock:
            self.bytes_in_use -= block.size
            if self.bytes_pooled + block.size <= self._limit:
                self._free.setdefault(block.size, []).append(block.buffer)
                self.bytes_pooled += block.size
        block.buffer = None

    def release_all(self):
        """Give every pooled (free) block back to the system."""
        with self._lock:
            self._free.clear()
            self.bytes_pooled = 0

    def stats(self):
        return {"bytes_in_use": self.bytes_in_use, "bytes_pooled": self.bytes_pooled,
                "peak_bytes_in_use": self.peak_bytes_in_use, "num_allocs": self.num_allocs,
                "num_reuses": self.num_reuses}


_pools = {}


def get_pool(ctx):
    """The pool serving ctx (one per device; every cpu id shares the host pool)."""
    key = ("gpu", ctx.device_id) if ctx.device_typeid == 2 else ("cpu", 0)
    pool = _pools.get(key)
    if pool is None:
        pool = _pools.setdefault(key, HostPool(array_module(ctx)))
    return pool


def empty(ctx, shape, dtype):
    """An array of shape/dtype from ctx's pool, and the Block to free when done."""
    dtype = np.dtype(dtype)
    with device_scope(ctx):         # a new block is made in ctx's device memory
        block = get_pool(ctx).alloc(_count(shape) * dtype.itemsize)
    return block.view(shape, dtype), block
