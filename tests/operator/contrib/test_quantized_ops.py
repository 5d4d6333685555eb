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
