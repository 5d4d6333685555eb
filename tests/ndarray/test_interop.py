"""mx.nd.from_numpy and DLPack exchange: shared memory, read-only NumPy side, copies."""
import numpy as np
import pytest

import mxnet as mx


def test_from_numpy_zero_copy_shares_memory_and_locks_numpy():
    x = np.array([[1, 2], [3, 4], [5, 6]], dtype="float32")
    m = mx.nd.from_numpy(x)
    with pytest.raises(ValueError):
        x[2, 1] = 0
    m[2, 1] = 100
    assert x[2, 1] == 100
    with pytest.raises(ValueError, match="c-contiguous"):
        mx.nd.from_numpy(np.ones((3, 2)).T)


def test_from_numpy_copy_is_independent():
    x = np.arange(6, dtype="float32").reshape(2, 3)
    m = mx.nd.from_numpy(x, zero_copy=False)
    m[:] = 0
    assert x.flags.writeable and x[1, 2] == 5


def test_dlpack_roundtrip_read_and_write():
    a = mx.nd.array(np.arange(12, dtype="float32").reshape(3, 4))
    b = mx.nd.from_dlpack(a.to_dlpack_for_read())
    np.testing.assert_array_equal(b.asnumpy(), a.asnumpy())
    c = mx.nd.from_dlpack(mx.nd.to_dlpack_for_write(a))
    c[:] = 7
    assert (a.asnumpy() == 7).all()


def test_from_dlpack_of_a_numpy_array():
    x = np.arange(5, dtype="int32")
    m = mx.nd.from_dlpack(x)
    np.testing.assert_array_equal(m.asnumpy(), x)
