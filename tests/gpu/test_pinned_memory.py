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
