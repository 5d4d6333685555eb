"""CuPy's own host-to-device copy (``cupy.array``), made safe for page-locked sources.

``cupy.array(host)`` queues the transfer on the current stream and returns at once. For
ordinary (pageable) host memory it first copies the data into a pinned staging buffer
of its own, so the caller may write its array right away. A source that is itself in
page-locked memory (an ``mx.cpu_pinned()`` array) is read *in place*, when the stream
reaches the copy: behind every kernel queued before it. pymxnet's engine counts a GPU
copy as done once queued (it runs inline, for speed), so a write to the source that
the engine orders after the copy (``src[:] = next_batch``, ``out=src``) could land
before the transfer has read it, and the device would receive the new values.

Two ways out, chosen by the caller:

* a caller that can order later writes of the source (an NDArray copy: the source's
  engine variable) passes ``hold_source``; it gets a CUDA event recorded right after the
  copy and keeps writers of the source waiting until that event has passed
  (ndarray/ndarray.py ``source_hold``; the waiting is done by one watcher thread per
  device, backend/event_watcher.py). Nothing extra is copied, and neither the calling
  thread nor an engine worker waits for the device;
* any other caller gets the source copied into a fresh page-locked buffer first, as
  CuPy does for pageable memory, and may write its array as soon as this returns.

With ``CUPY_ENABLE_UMP=1`` (on systems whose GPU addresses host memory: Grace Hopper's
HMM/ATS), ``cupy.array(host)`` makes no copy at all: the device array is the host
memory, so a later write of the source would change it. There the source is copied
into a private host buffer first, which the device array then owns.

The copy-stream path (``MXNET_GPU_COPY_STREAM=1``, backend/copy_stream.py) has its own
rule for pinned sources and does not come here.
"""
import os

import numpy as np

from .cublas_graph import capturing

__all__ = ["copy", "read_in_place", "staged"]


def read_in_place(cp, host):
    """Whether ``cupy.array(host)`` would read ``host``'s own memory after returning:
    a non-empty, contiguous host array in the machine's byte order (CuPy converts any
    other into a pageable temporary, which it stages) whose memory is page-locked."""
    if not isinstance(host, np.ndarray) or host.ndim == 0 or host.size == 0 or \
            not host.dtype.isnative:
        return False
    flags = host.flags
    if not (flags.c_contiguous or flags.f_contiguous):
        return False
    pinned = getattr(getattr(cp.cuda, "pinned_memory", None), "is_memory_pinned", None)
    return pinned is not None and bool(pinned(host.ctypes.data))


def copy(cp, host, hold_source=None):
    """A new array on the current device holding ``host``'s values, queued on the
    current stream. ``hold_source(event)``: see the module docstring."""
    if _ump_enabled() and isinstance(host, np.ndarray):
        return cp.array(np.array(host, copy=True), copy=True)   # aliases the copy only
    if not read_in_place(cp, host):
        return cp.array(host, copy=True)
    if hold_source is None or capturing():
        # (inside a CUDA-graph capture an event could not be waited for)
        return cp.array(staged(cp, host), copy=True)
    out = cp.array(host, copy=True)
    # block: whoever waits for it (the event watcher, for up to a queue of kernels)
    # sleeps instead of spinning on a core the calling thread needs
    read = cp.cuda.Event(block=True, disable_timing=True)
    read.record(cp.cuda.get_current_stream())
    hold_source(read)
    return out


def _ump_enabled():
    """CuPy's CUPY_ENABLE_UMP (read by CuPy at import; the same rule here)."""
    try:
        return int(os.environ.get("CUPY_ENABLE_UMP", "0")) != 0
    except ValueError:
        return False


def staged(cp, host):
    """``host`` copied into a fresh C-ordered page-locked buffer from CuPy's pinned pool
    (whoever queues a transfer from it keeps it until that transfer has run: CuPy's
    watch list, the copy stream's staging list)."""
    mem = cp.cuda.alloc_pinned_memory(host.nbytes)
    buf = np.frombuffer(mem, host.dtype, host.size).reshape(host.shape)
    buf[...] = host
    return buf
