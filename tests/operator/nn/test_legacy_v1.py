"""BatchNorm_v1, Convolution_v1, Pooling_v1 compute what their namesakes compute and
accept only the v1 parameter lists."""
import numpy as np
import pytest

import mxnet as mx
from mxnet.base import MXNetError

nd = mx.nd
rs = np.random.RandomState(14)


def test_convolution_v1_matches_convolution():
    x, w, b = rs.normal(size=(2, 3, 5, 5)), rs.normal(size=(4, 3, 3, 3)), rs.normal(size=4)
    args = [nd.array(a) for a in (x, w, b)]
    kw = dict(kernel=(3, 3), num_filter=4, pad=(1, 1), stride=(2, 1))
    np.testing.assert_allclose(nd.Convolution_v1(*args, **kw).asnumpy(),
                               nd.Convolution(*args, **kw).asnumpy(), rtol=1e-5,
                               atol=1e-5)   # float32 sums in another order (oneDNN)


@pytest.mark.parametrize("pool_type", ["max", "avg", "sum"])
def test_pooling_v1_matches_pooling(pool_type):
    x = nd.array(rs.normal(size=(2, 3, 6, 6)))
    kw = dict(kernel=(2, 2), stride=(2, 2), pool_type=pool_type)
    np.testing.assert_allclose(nd.Pooling_v1(x, **kw).asnumpy(), nd.Pooling(x, **kw).asnumpy(),
                               rtol=1e-6)
    with pytest.raises(MXNetError):
        nd.Pooling_v1(x, kernel=(2, 2), pool_type="lp")
    with pytest.raises(MXNetError):
        nd.Pooling_v1(x, kernel=(2, 2), layout="NCHW")


def test_batchnorm_v1_matches_batchnorm():
    x = rs.normal(size=(4, 3, 2, 2))
    g, b = rs.uniform(0.5, 1.5, 3), rs.normal(size=3)
    outs = []
    for fn in (nd.BatchNorm_v1, nd.BatchNorm):
        mm, mv = nd.zeros(3), nd.ones(3)
        xa = nd.array(x)
        xa.attach_grad()
        with mx.autograd.record():
            y = fn(xa, nd.array(g), nd.array(b), mm, mv, fix_gamma=False)
        y.backward(nd.array(x))
        outs.append((y.asnumpy(), xa.grad.asnumpy(), mm.asnumpy()))
    for a, b_ in zip(*outs):
        np.testing.assert_allclose(a, b_, rtol=1e-5, atol=1e-6)
    with pytest.raises(MXNetError):
        nd.BatchNorm_v1(nd.array(x), nd.array(g), nd.array(b), nd.zeros(3), nd.ones(3), axis=1)
    s = mx.sym.BatchNorm_v1(mx.sym.var("d"), name="bn", output_mean_var=True)
    assert s.list_auxiliary_states() == ["bn_moving_mean", "bn_moving_var"]
    assert len(s.list_outputs()) == 3
