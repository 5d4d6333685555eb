"""quantized_flatten / quantized_act / quantized_pooling / quantized_concat against
their float counterparts (values are also compared with MXNet 1.9.1 fixtures)."""
import numpy as np
import pytest

import mxnet as mx
from mxnet.base import MXNetError

nd = mx.nd
RNG = np.random.RandomState(0)
Q = RNG.randint(-127, 128, (2, 3, 6, 6)).astype(np.int8)
MN, MX = nd.array([-2.0]), nd.array([2.0])


def test_flatten_and_relu_keep_the_range():
    out, lo, hi = nd.contrib.quantized_flatten(nd.array(Q, dtype="int8"), MN, MX)
    assert out.shape == (2, 108) and out.dtype == np.int8
    assert (out.asnumpy() == Q.reshape(2, -1)).all()
    assert (lo.asnumpy()[0], hi.asnumpy()[0]) == (-2.0, 2.0)
    out, _, _ = nd.contrib.quantized_act(nd.array(Q, dtype="int8"), MN, MX, act_type="relu")
    assert (out.asnumpy() == np.maximum(Q, 0)).all()
    with pytest.raises(MXNetError, match="relu"):
        nd.contrib.quantized_act(nd.array(Q, dtype="int8"), MN, MX, act_type="tanh")


@pytest.mark.parametrize("pool_type", ["max", "avg"])
def test_pooling_equals_float_pooling_rounded(pool_type):
    kw = dict(kernel=(2, 2), stride=(2, 2), pool_type=pool_type)
    out, _, _ = nd.contrib.quantized_pooling(nd.array(Q, dtype="int8"), MN, MX, **kw)
    ref = nd.Pooling(nd.array(Q.astype(np.float64), dtype="float64"), **kw).asnumpy()
    assert out.dtype == np.int8 and (out.asnumpy() == np.rint(ref)).all()


def test_concat_rescales_to_the_common_range():
    b = RNG.randint(-127, 128, (2, 1, 6, 6)).astype(np.int8)
    out, lo, hi = nd.contrib.quantized_concat(nd.array(Q, dtype="int8"),
                                              nd.array(b, dtype="int8"), MN, MX,
                                              nd.array([-4.0]), nd.array([3.0]), num_args=2)
    assert out.shape == (2, 4, 6, 6)
    assert (lo.asnumpy()[0], hi.asnumpy()[0]) == (-4.0, 3.0)
    assert (out.asnumpy()[:, :3] == np.rint(Q * np.float32(0.5))).all()
    assert (out.asnumpy()[:, 3:] == b).all()


def test_quantized_fully_connected():
    x = RNG.randint(-127, 128, (3, 8)).astype(np.int8)
    w = RNG.randint(-127, 128, (4, 8)).astype(np.int8)
    rngs = [nd.array([-2.0]), nd.array([1.0]), nd.array([-0.5]), nd.array([0.5])]
    out, lo, hi = nd.contrib.quantized_fully_connected(
        nd.array(x, dtype="int8"), nd.array(w, dtype="int8"), *rngs, num_hidden=4,
        no_bias=True)
    assert out.dtype == np.int32
    assert (out.asnumpy() == x.astype(np.int64) @ w.astype(np.int64).T).all()
    assert abs(hi.asnumpy()[0] - 2.0 * 0.5 / 127 ** 2 * (2 ** 31 - 1)) < 1
    # Dequantized, the int32 result is the float product within quantization error.
    real = out.asnumpy() * (hi.asnumpy()[0] / (2 ** 31 - 1))
    ref = (x * 2.0 / 127) @ (w * 0.5 / 127).T
    assert np.abs(real - ref).max() < 1e-6
    # (the dispatcher may wrap the NotImplementedError in an MXNetError)
    with pytest.raises((NotImplementedError, MXNetError), match="uint8 data is not"):
        nd.contrib.quantized_fully_connected(nd.array(x, dtype="uint8"),
                                             nd.array(w, dtype="int8"), *rngs, num_hidden=4,
                                             no_bias=True)


def test_quantized_embedding():
    w = RNG.randint(-127, 128, (4, 3)).astype(np.int8)
    out, lo, hi = nd.contrib.quantized_embedding(nd.array([[1, 3], [0, 9]]),
                                                 nd.array(w, dtype="int8"), MN, MX,
                                                 input_dim=4, output_dim=3)
    assert out.dtype == np.int8 and out.shape == (2, 2, 3)
    assert (out.asnumpy() == w[[[1, 3], [0, 3]]]).all()       # 9 clips to the last row
    assert (lo.asnumpy()[0], hi.asnumpy()[0]) == (-2.0, 2.0)
