"""A GPU copy that reads page-locked host memory after it returned keeps its source's
writers waiting until the device has read it (ndarray.source_hold,
backend/host_to_device.py), on one emulated GPU (tests/multi_gpu_host.py).

The emulation copies at once, so the device's read is stood in for by a gate: the
copy's CUDA event is one whose ``synchronize`` returns only when the test opens it,
and the pinned-memory query says "in place". Each NDArray route from a ``cpu_pinned``
array to a GPU is checked: the copy's value, reads of the source going ahead, a write
of the source held until the gate opens (it would race the transfer on a GPU), the
engine working afterwards.
"""
import threading
import time

import numpy as np
import pytest

import mxnet as mx
from mxnet import engine
from mxnet.backend import host_to_device as H2D
import multi_gpu_host

SHAPE = (4, 3)


class _Gate:
    """A CUDA event whose passing the test decides (``_Gate.open``)."""
    open = None

    def __init__(self, *args, **kwargs):
        pass

    def record(self, stream=None):
        pass

    def synchronize(self):
        assert _Gate.open.wait(20), "the test never opened the gate"


@pytest.fixture
def gpu_with_gate(monkeypatch):
    if not isinstance(engine.get(), engine.ThreadedEngine):
        pytest.skip("the hold is pushed work: checked on the threaded engine")
    with multi_gpu_host.emulated_gpus(1) as cp:
        _Gate.open = threading.Event()
        monkeypatch.setattr(cp.cuda, "Event", _Gate)
        monkeypatch.setattr(H2D, "read_in_place", lambda cp, host: True)
        try:
            yield mx.gpu(0)
        finally:
            _Gate.open.set()             # never leave a worker waiting
            mx.nd.waitall()


def _pinned_ones():
    src = mx.nd.array(np.ones(SHAPE), ctx=mx.cpu_pinned())
    src.wait_to_read()
    return src


def _peek(src):
    """The source's memory now, without waiting for its pending work."""
    return np.array(src._chunk.data)


def _check_write_is_held(src):
    np.testing.assert_array_equal(src.asnumpy(), np.ones(SHAPE))   # reads go ahead
    src[:] = 5                                  # the caller's next batch
    time.sleep(0.05)
    np.testing.assert_array_equal(_peek(src), np.ones(SHAPE))      # held
    _Gate.open.set()                            # the device has read the source
    src.wait_to_read()
    np.testing.assert_array_equal(src.asnumpy(), np.full(SHAPE, 5.0))


def test_as_in_context_holds_the_source(gpu_with_gate):
    src = _pinned_ones()
    y = src.as_in_context(gpu_with_gate)
    _check_write_is_held(src)
    np.testing.assert_array_equal(y.asnumpy(), np.ones(SHAPE))


def test_copyto_an_existing_array_holds_the_source(gpu_with_gate):
    src = _pinned_ones()
    dst = mx.nd.zeros(SHAPE, ctx=gpu_with_gate)
    src.copyto(dst)
    _check_write_is_held(src)
    np.testing.assert_array_equal(dst.asnumpy(), np.ones(SHAPE))


def test_assignment_into_a_gpu_array_holds_the_source(gpu_with_gate):
    src = _pinned_ones()
    dst = mx.nd.zeros(SHAPE, ctx=gpu_with_gate)
    dst[:] = src
    _check_write_is_held(src)
    np.testing.assert_array_equal(dst.asnumpy(), np.ones(SHAPE))


def test_a_copy_run_by_a_worker_stages_the_source(gpu_with_gate):
    """With its destination busy, the copy is pushed work run by a worker. A read
    pushed from there could queue behind a write of the source pushed since, so the
    worker stages the source (as CuPy does for pageable memory) instead of holding it:
    the write pushed after the copy goes ahead without waiting for the device, and the
    copy has the values the source had when it ran."""
    src = _pinned_ones()
    dst = mx.nd.zeros(SHAPE, ctx=gpu_with_gate)
    busy = threading.Event()
    engine.get().push_sync(lambda rctx: busy.wait(20), gpu_with_gate, [], [dst._chunk])
    src.copyto(dst)                             # queued behind the busy work
    src[:] = 5                                  # queued behind the copy
    busy.set()
    src.wait_to_read()                          # not held: the gate is still shut
    np.testing.assert_array_equal(src.asnumpy(), np.full(SHAPE, 5.0))
    np.testing.assert_array_equal(dst.asnumpy(), np.ones(SHAPE))
    assert not _Gate.open.is_set()


def _open_gate_after(seconds):
    timer = threading.Timer(seconds, _Gate.open.set)
    timer.start()
    return timer


def test_wait_to_write_waits_for_the_device_to_read_the_source(gpu_with_gate):
    """NDArray.wait_to_write (before in-place writes: autograd's gradient buffers,
    to_dlpack_for_write) waits for pending reads as MXNet's WaitToWrite does, the
    device's read of a held source among them."""
    src = _pinned_ones()
    src.as_in_context(gpu_with_gate)
    _open_gate_after(0.3)
    t0 = time.perf_counter()
    src.wait_to_write()
    assert _Gate.open.is_set() and time.perf_counter() - t0 >= 0.25
    assert src._chunk.num_pending == 0


def test_an_in_place_gradient_write_waits_for_the_device_read(gpu_with_gate):
    """A page-locked gradient copied to the GPU, then rewritten in place by the next
    backward (grad_req 'write'): the write waits until the device has read it."""
    x = mx.nd.array(np.ones(SHAPE), ctx=mx.cpu_pinned())
    x.attach_grad()
    with mx.autograd.record():
        (x * 2).sum().backward()
    buf = x.grad._chunk.data
    x.grad.as_in_context(gpu_with_gate)         # the device reads buf in place
    _open_gate_after(0.3)
    with mx.autograd.record():
        (x * 3).sum().backward()
    assert _Gate.open.is_set()                  # written only after the read
    assert x.grad._chunk.data is buf            # in place
    np.testing.assert_array_equal(x.grad.asnumpy(), np.full(SHAPE, 3.0))


def test_held_copies_take_no_engine_worker(gpu_with_gate):
    """However many copies are in flight, the device's reads are waited for by one
    watcher thread (backend/event_watcher.py), not by a blocked engine worker each."""
    srcs = [_pinned_ones() for _ in range(32)]
    before = threading.active_count()
    copies = [s.as_in_context(gpu_with_gate) for s in srcs]
    time.sleep(0.2)
    assert all(s._chunk.num_pending == 1 for s in srcs)       # all held
    assert threading.active_count() - before <= 1             # the watcher at most
    _Gate.open.set()
    mx.nd.waitall()
    assert all(s._chunk.num_pending == 0 for s in srcs) and len(copies) == 32


def test_pageable_sources_are_not_held(monkeypatch):
    """An ordinary host array is staged by CuPy: no hold, no pushed work."""
    with multi_gpu_host.emulated_gpus(1):
        calls = []
        real = H2D.copy
        monkeypatch.setattr(H2D, "copy", lambda cp, host, hold_source=None: calls.append(
            hold_source) or real(cp, host, hold_source))
        src = mx.nd.array(np.ones(SHAPE))
        y = src.as_in_context(mx.gpu(0))
        src[:] = 5
        np.testing.assert_array_equal(y.asnumpy(), np.ones(SHAPE))
        np.testing.assert_array_equal(src.asnumpy(), np.full(SHAPE, 5.0))
        assert len(calls) == 1 and calls[0] is not None   # offered; not taken (pageable)


def test_a_held_source_is_copied_again_at_once(gpu_with_gate):
    """A training loop copying the same pinned batch each step: the next copy (a read)
    runs in the calling thread beside the hold, not on a worker behind it, so nothing
    downstream of it waits for the device."""
    src = _pinned_ones()
    first = mx.nd.zeros(SHAPE, ctx=gpu_with_gate)
    second = mx.nd.zeros(SHAPE, ctx=gpu_with_gate)
    src.copyto(first)
    src.copyto(second)
    assert src._chunk.num_pending == 2           # the two holds, still waiting
    assert second._chunk.num_pending == 0        # copied inline
    np.testing.assert_array_equal(second._chunk.data.get(), np.ones(SHAPE))
    _Gate.open.set()
    src.wait_to_read()
    mx.nd.waitall()
    assert src._chunk.num_pending == 0


class _FailingEvent(_Gate):
    def synchronize(self):
        raise RuntimeError("cudaErrorLaunchFailure: the device failed")


def test_a_device_failure_while_held_surfaces_at_waitall(gpu_with_gate, monkeypatch):
    """The device failing before it read the source: the failure is raised once, at the
    next waitall, and the engine keeps working (the source is writable again)."""
    monkeypatch.setattr(mx.backend.cupy_or_none().cuda, "Event", _FailingEvent)
    src = _pinned_ones()
    src.as_in_context(gpu_with_gate)
    with pytest.raises(mx.base.MXNetError, match="device failed"):
        mx.nd.waitall()
    mx.nd.waitall()                             # raised once
    src[:] = 7
    np.testing.assert_array_equal(src.asnumpy(), np.full(SHAPE, 7.0))
