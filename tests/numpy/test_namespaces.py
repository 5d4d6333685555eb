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


def _eval(sym, **inputs):
    """Forward of sym on NumPy inputs through the graph executor."""
    ex = sym.bind(mx.cpu(), {k: mx.nd.array(v, dtype=v.dtype) for k, v in inputs.items()})
    return [o.asnumpy() for o in ex.forward()]


_R = onp.random.RandomState(3)
_A, _B = _R.uniform(-1, 1, (2, 3, 4)), _R.uniform(-1, 1, (4, 3, 5))


@pytest.mark.parametrize("build, ref", [
    (lambda a, b: mx.sym.np.tensordot(a, b, axes=([1, 2], [1, 0])),
     lambda a, b: onp.tensordot(a, b, axes=([1, 2], [1, 0]))),
    (lambda a, b: mx.sym.np.tensordot(a, b, axes=1), lambda a, b: onp.tensordot(a, b, 1)),
    (lambda a, b: mx.sym.np.inner(a, mx.sym.np.transpose(b)),
     lambda a, b: onp.inner(a, b.T)),
    (lambda a, b: mx.sym.np.outer(a, b), onp.outer),
    (lambda a, b: mx.sym.np.einsum("ijk,kjl->il", a, b),
     lambda a, b: onp.einsum("ijk,kjl->il", a, b))])
def test_symbolic_products_match_numpy(build, ref):
    out = build(mx.sym.var("a"), mx.sym.var("b"))
    got, = _eval(out, a=_A.astype("float32"), b=_B.astype("float32"))
    onp.testing.assert_allclose(got, ref(_A, _B), rtol=1e-5, atol=1e-5)


def test_symbolic_vdot_and_elementwise_helpers():
    a, b = _A.astype("float32"), _A[::-1].copy().astype("float32")
    got, = _eval(mx.sym.np.vdot(mx.sym.var("a"), mx.sym.var("b")), a=a, b=b)
    onp.testing.assert_allclose(got.reshape(()), onp.vdot(a, b), rtol=1e-5)
    x = mx.sym.var("a")
    for build, ref in ((mx.sym.np.ravel(x), a.ravel()), (mx.sym.np.flip(x, axis=1),
                                                         onp.flip(a, 1)),
                       (mx.sym.np.argmax(x, axis=2), a.argmax(2)),
                       (mx.sym.np.argsort(x, axis=-1), a.argsort(-1)),
                       (mx.sym.np.sort(x), onp.sort(a)), (mx.sym.np.fabs(x), abs(a)),
                       (mx.sym.np.amax(x, axis=0), a.max(0)),
                       (mx.sym.np.around(x, 1), onp.around(a, 1))):
        onp.testing.assert_allclose(_eval(build, a=a)[0], ref, rtol=1e-6)


def test_symbolic_linalg_matches_numpy():
    m = onp.array([[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]], "float64")
    x = mx.sym.var("m")
    la = mx.sym.np.linalg
    onp.testing.assert_allclose(_eval(la.inv(x), m=m)[0], onp.linalg.inv(m), rtol=1e-6)
    onp.testing.assert_allclose(_eval(la.cholesky(x), m=m)[0], onp.linalg.cholesky(m),
                                rtol=1e-6)
    onp.testing.assert_allclose(_eval(la.det(x), m=m)[0].reshape(()), onp.linalg.det(m),
                                rtol=1e-6)
    sign, logdet = la.slogdet(x)
    onp.testing.assert_allclose(_eval(logdet, m=m)[0].reshape(()),
                                onp.linalg.slogdet(m)[1], rtol=1e-6)
    w, v = la.eigh(x)
    w_ref, v_ref = onp.linalg.eigh(m)
    onp.testing.assert_allclose(_eval(w, m=m)[0], w_ref, rtol=1e-6)
    got_v = _eval(v, m=m)[0]
    onp.testing.assert_allclose(abs(got_v), abs(v_ref), rtol=1e-5, atol=1e-6)
    onp.testing.assert_allclose(_eval(la.eigvalsh(x), m=m)[0], w_ref, rtol=1e-6)
    with pytest.raises(NotImplementedError, match="mx.sym.np.linalg.lstsq"):
        la.lstsq


def test_symbolic_tensordot_gradient_matches_numeric():
    a, b = _A.astype("float64"), _B.astype("float64")
    prod = mx.sym.np.tensordot(mx.sym.var("a"), mx.sym.var("b"), axes=([2], [0]))
    out = mx.sym.make_loss(mx.sym.sum(prod ** 2))
    args = {"a": mx.nd.array(a, dtype="float64"), "b": mx.nd.array(b, dtype="float64")}
    grads = {k: mx.nd.zeros(v.shape, dtype="float64") for k, v in args.items()}
    ex = out.bind(mx.cpu(), args, args_grad=grads)
    ex.forward(is_train=True)
    ex.backward()

    def loss(x, y):
        return (onp.tensordot(x, y, axes=([2], [0])) ** 2).sum()
    eps = 1e-6
    for name, val, other in (("a", a, b), ("b", b, a)):
        num = onp.zeros_like(val)
        for i in onp.ndindex(*val.shape):
            p, m = val.copy(), val.copy()
            p[i] += eps
            m[i] -= eps
            num[i] = ((loss(p, other) - loss(m, other)) if name == "a" else
                      (loss(other, p) - loss(other, m))) / (2 * eps)
        onp.testing.assert_allclose(grads[name].asnumpy(), num, rtol=1e-5, atol=1e-6)
