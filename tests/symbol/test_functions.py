"""mx.sym's Python-level functions: eye, linspace, histogram and the random *_like
samplers; and new operators inside a hybridized block."""
import numpy as np
import pytest

import mxnet as mx


def test_eye_linspace():
    out = mx.sym.eye(3, 4, k=1).eval()[0]
    np.testing.assert_array_equal(out.asnumpy(), np.eye(3, 4, 1))
    out = mx.sym.linspace(0, 1, 5).eval()[0]
    np.testing.assert_allclose(out.asnumpy(), np.linspace(0, 1, 5))
    assert mx.sym.linspace(0, 1, 4, endpoint=False, dtype="float64").eval()[0].dtype == \
        np.float64


@pytest.mark.parametrize("name,params,check", [
    ("uniform_like", (2.0, 3.0), lambda v: (v >= 2).all() and (v < 3).all()),
    ("normal_like", (0.0, 1.0), lambda v: np.isfinite(v).all()),
    ("gamma_like", (2.0, 1.0), lambda v: (v > 0).all()),
    ("exponential_like", (2.0,), lambda v: (v >= 0).all()),
    ("poisson_like", (3.0,), lambda v: (v == np.round(v)).all() and (v >= 0).all()),
    ("negative_binomial_like", (3, 0.4), lambda v: (v == np.round(v)).all()),
    ("generalized_negative_binomial_like", (2.0, 0.5), lambda v: (v >= 0).all()),
])
def test_random_like(name, params, check):
    s = getattr(mx.sym.random, name)(mx.sym.var("a"), *params)
    out = s.eval(a=mx.nd.ones((50, 4), dtype="float64"))[0]
    assert out.shape == (50, 4) and out.dtype == np.float64
    assert check(out.asnumpy())


def test_uniform_like_mean():
    s = mx.sym.random.uniform_like(mx.sym.var("a"), low=2.0, high=4.0)
    v = s.eval(a=mx.nd.ones((4000,)))[0].asnumpy()
    assert abs(v.mean() - 3.0) < 0.05


class _Net(mx.gluon.HybridBlock):
    def hybrid_forward(self, F, x):
        y = F.Crop(x, num_args=1, h_w=(2, 2), offset=(1, 1))
        u, lam = F.linalg.syevd(F.linalg.gemm2(y.reshape((-3, -2)), y.reshape((-3, -2)),
                                               transpose_b=True))
        return F.cumsum(F.image.flip_left_right(y), axis=-1), lam


def test_new_operators_in_hybridized_block():
    net = _Net()
    x = mx.nd.array(np.random.RandomState(0).normal(size=(1, 2, 4, 4)))
    eager = [o.asnumpy() for o in net(x)]
    net.hybridize()
    hybrid = [o.asnumpy() for o in net(x)]
    for a, b in zip(eager, hybrid):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
