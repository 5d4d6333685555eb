"""``a + b``/``a - b``/``a * b`` on two NDArrays: the short path (dispatch.binary) gives
what the operator gives, and the cases it must not take (recording, pending or failed
inputs, broadcasting, other dtypes, bool) still behave as MXNet's operators do."""
import numpy as np
import pytest

import mxnet as mx
from mxnet.base import MXNetError

OPS = [(lambda a, b: a + b, np.add), (lambda a, b: a - b, np.subtract),
       (lambda a, b: a * b, np.multiply)]


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int32", "int8",
                                   "uint8", "int64"])
@pytest.mark.parametrize("op", OPS)
def test_matches_numpy(op, dtype):
    rng = np.random.RandomState(0)
    x = (rng.rand(3, 4) * 100).astype(dtype)
    y = (rng.rand(3, 4) * 100).astype(dtype)
    a, b = mx.nd.array(x, dtype=dtype), mx.nd.array(y, dtype=dtype)
    got = op[0](a, b)
    assert got.dtype == np.dtype(dtype) and got.shape == (3, 4)
    np.testing.assert_array_equal(got.asnumpy(), op[1](x, y))
    # the result is an array of its own
    got[:] = 0
    np.testing.assert_array_equal(a.asnumpy(), x)


def test_views_and_broadcasting():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    a = mx.nd.array(x)
    np.testing.assert_array_equal((a[1] + a[2]).asnumpy(), x[1] + x[2])
    np.testing.assert_array_equal((a + mx.nd.ones((1, 4))).asnumpy(), x + 1)


def test_recording_gives_gradients():
    a, b = mx.nd.array([1.0, 2.0]), mx.nd.array([3.0, 5.0])
    a.attach_grad()
    b.attach_grad()
    with mx.autograd.record():
        y = a * b - a
    y.backward()
    np.testing.assert_allclose(a.grad.asnumpy(), [2.0, 4.0])
    np.testing.assert_allclose(b.grad.asnumpy(), [1.0, 2.0])


def test_failed_input_carries_its_error():
    bad = mx.nd.array([1.0, 2.0]).reshape((2,))
    # a failure recorded on the input (as a failed operator leaves it) reaches the sum
    mx.engine.get().record_failure(ValueError("upstream broke"), [bad._chunk], "test")
    c = bad + mx.nd.ones(2)
    with pytest.raises(MXNetError, match="upstream broke"):
        c.asnumpy()
    try:
        mx.nd.waitall()
    except MXNetError:
        pass


def test_mixed_dtypes_are_refused_as_before():
    with pytest.raises(MXNetError):
        (mx.nd.ones(2, dtype="float32") + mx.nd.ones(2, dtype="float64")).asnumpy()
