"""mx.cpu_pinned(): copies onto it land in page-locked host memory when there is a CUDA
GPU (CuPy's pinned pool), so host <-> GPU copies run at the bus's rate; without a GPU
they are ordinary host arrays."""
import numpy as np
import pytest

import mxnet as mx
from mxnet import backend


def test_cpu_pinned_copies_keep_values_on_any_machine():
    x = mx.nd.array(np.arange(12, dtype=np.float32).reshape(3, 4))
    p = x.as_in_context(mx.cpu_pinned())
    assert p.context == mx.cpu_pinned()
    np.testing.assert_array_equal(p.asnumpy(), x.asnumpy())
    np.testing.assert_array_equal((p + 1).asnumpy(), x.asnumpy() + 1)
    if mx.context.num_gpus() == 0:
        assert backend.pinned_empty((2,), np.float32) is None


@pytest.mark.skipif(mx.context.num_gpus() == 0, reason="no GPU")
def test_cpu_pinned_memory_is_page_locked_and_round_trips_through_the_gpu():
    import cupy as cp
    x = mx.nd.array(np.random.rand(64, 1024).astype(np.float32))
    p = x.as_in_context(mx.cpu_pinned())
    attrs = cp.cuda.runtime.pointerGetAttributes(p._data.ctypes.data)
    assert attrs.type == cp.cuda.runtime.memoryTypeHost
    g = p.as_in_context(mx.gpu(0))
    back = g.as_in_context(mx.cpu_pinned())
    attrs = cp.cuda.runtime.pointerGetAttributes(back._data.ctypes.data)
    assert attrs.type == cp.cuda.runtime.memoryTypeHost
    np.testing.assert_array_equal(back.asnumpy(), x.asnumpy())


def test_a_whole_write_keeps_a_cpu_pinned_buffer():
    """Writing a whole cpu_pinned array fills its page-locked buffer (a plain array's
    buffer is replaced by the fresh result instead, without a copy): swapped, the
    array would quietly lose the memory that makes its GPU copies fast."""
    import multi_gpu_host
    with multi_gpu_host.emulated_gpus(1):       # cpu_pinned arrays get their own buffer
        p = mx.nd.array(np.zeros((3, 4)), ctx=mx.cpu_pinned())
        buf = p._chunk.data
        p[:] = np.arange(12).reshape(3, 4)
        mx.nd.elemwise_add(mx.nd.ones((3, 4)), mx.nd.ones((3, 4)), out=p)
        mx.nd.waitall()
        assert p._chunk.data is buf
        np.testing.assert_array_equal(buf, np.full((3, 4), 2.0))
        plain = mx.nd.array(np.zeros((3, 4)))
        before = plain._chunk.data
        plain[:] = np.arange(12).reshape(3, 4)
        plain.wait_to_read()
        assert plain._chunk.data is not before     # the cheap swap stays for the rest
        np.testing.assert_array_equal(plain.asnumpy(), np.arange(12).reshape(3, 4))


@pytest.mark.skipif(mx.context.num_gpus() == 0, reason="no GPU")
def test_cpu_pinned_memory_stays_page_locked_when_written():
    import cupy as cp
    p = mx.nd.array(np.zeros((64, 1024)), ctx=mx.cpu_pinned())
    p[:] = np.random.rand(64, 1024)
    p.wait_to_read()
    attrs = cp.cuda.runtime.pointerGetAttributes(p._data.ctypes.data)
    assert attrs.type == cp.cuda.runtime.memoryTypeHost
