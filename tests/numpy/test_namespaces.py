"""The namespaces around mx.np: mx.nd.np / mx.nd.npx share mx.np's front ends,
mx.sym.np / mx.sym.npx build graphs, NumPy's dispatch protocols route official NumPy
calls on mx.np arrays, and npx.random's extra samplers."""
import numpy as onp
import pytest

import mxnet as mx
from mxnet import np, npx


def test_nd_namespaces_share_the_front_ends():
    assert mx.nd.np.sum is np.sum and mx.nd.npx.relu is npx.relu
    import mxnet.ndarray.numpy as ndnp
    assert ndnp is mx.nd.np and "polyval" in ndnp.__all__
    assert mx.nd.np.linalg is np.linalg


def test_symbolic_namespaces_build_graphs():
    x, y = mx.sym.var("x"), mx.sym.var("y")
    s = mx.sym.np.add(mx.sym.np.sum(x, axis=1), mx.sym.npx.relu(y))
    out = s.eval(ctx=mx.cpu(), x=mx.nd.array([[1, 2], [3, -4]]), y=mx.nd.array([-1, 5]))[0]
    assert out.asnumpy().tolist() == [3.0, 4.0]
    with pytest.raises(NotImplementedError, match="mx.sym.np.unique"):
        mx.sym.np.unique


def test_official_numpy_calls_dispatch_to_mx_np():
    a = np.array([[1.0, -2.0], [3.0, 4.0]])
    s = onp.sum(a, axis=0)                  # __array_function__: mx.np.sum
    assert isinstance(s, np.ndarray) and s.asnumpy().tolist() == [4.0, 2.0]
    e = onp.exp(a)                          # __array_ufunc__: mx.np.exp
    assert isinstance(e, np.ndarray)
    onp.testing.assert_allclose(e.asnumpy(), onp.exp(a.asnumpy()), rtol=1e-6)
    m = onp.nanmedian(a)                    # not in mx.np's list: computed on the host
    assert float(m) == 2.0
    assert np.fallback.__all__[0] == "allclose" and "qr" in np.fallback_linalg.__all__


def test_npx_random_samplers():
    npx.set_np()
    try:
        npx.random.seed(3)
        b = npx.random.bernoulli(prob=0.25, size=(4000,))
        assert b.dtype == onp.float32 and abs(float(b.mean()) - 0.25) < 0.05
        n = npx.random.normal_n(np.zeros((3,)), 1.0, batch_shape=(2,))
        assert n.shape == (2, 3)
        assert npx.random.uniform_n(0.0, 1.0, batch_shape=4).shape == (4,)
        with pytest.raises(ValueError):
            npx.random.bernoulli(prob=0.5, logit=0.0)
    finally:
        npx.reset_np()
