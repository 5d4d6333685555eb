"""_npi_svd and _npi_tensorinv (ops/np_linalg.py): factorisations checked by
reconstruction, gradients against numeric gradients of sign-independent functions."""
import numpy as np
import pytest

import mxnet as mx
from mxnet import np as mnp
from mxnet.base import MXNetError
from opcheck import F32_64, Case, check

rs = np.random.RandomState(5)


@pytest.mark.parametrize("shape", [(3, 3), (3, 5), (2, 2, 4), (0, 1), (3, 0, 2)])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_svd_reconstructs(shape, dtype):
    a = rs.uniform(-2, 2, shape).astype(dtype)
    ut, s, v = (x.asnumpy() for x in mnp.linalg.svd(mnp.array(a, dtype=dtype)))
    m = shape[-2]
    assert ut.shape == shape[:-1] + (m,) and s.shape == shape[:-1] and v.shape == shape
    assert ut.dtype == s.dtype == v.dtype == np.dtype(dtype)
    tol = 1e-4 if dtype == "float32" else 1e-10
    np.testing.assert_allclose(np.matmul(ut * s[..., None, :], v), a, atol=tol)
    np.testing.assert_allclose(np.matmul(v, np.swapaxes(v, -1, -2)),
                               np.broadcast_to(np.eye(m), ut.shape), atol=tol)
    assert (np.diff(s, axis=-1) <= tol).all()          # descending


def test_svd_rejects_tall_matrices():
    with pytest.raises(MXNetError, match="rows <= columns"):
        mnp.linalg.svd(mnp.ones((3, 2)))


def _numeric_grad(f, a, eps=1e-6):
    g = np.zeros_like(a)
    for i in np.ndindex(a.shape):
        up, down = a.copy(), a.copy()
        up[i] += eps
        down[i] -= eps
        g[i] = (f(up) - f(down)) / (2 * eps)
    return g


# functions of the factors that do not depend on the singular vectors' signs
W_S = rs.uniform(-1, 1, (2, 3))
W_A = rs.uniform(-1, 1, (2, 3, 5))
W_P = rs.uniform(-1, 1, (2, 5, 5))
LOSSES = {
    "singular_values": lambda ut, s, v, m: m.sum(s * W_S),
    "reconstruction": lambda ut, s, v, m: m.sum(m.matmul(ut * s[..., None, :], v) * W_A),
    "row_space_projector": lambda ut, s, v, m: m.sum(
        m.matmul(m.swapaxes(v, -1, -2) * m.arange(1, 4, dtype=v.dtype), v) * W_P),
}


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_svd_gradient_matches_numeric(name):
    loss = LOSSES[name]
    a = rs.uniform(-2, 2, (2, 3, 5))
    x = mnp.array(a, dtype="float64")
    x.attach_grad()
    with mx.autograd.record():
        out = loss(*mnp.linalg.svd(x), mnp)
    out.backward()
    num = _numeric_grad(lambda v: float(loss(*np.linalg.svd(v, full_matrices=False), np)),
                        a)
    np.testing.assert_allclose(x.grad.asnumpy(), num, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("shape,ind", [((4, 6, 8, 3), 2), ((6, 2, 3), 1), ((2, 3, 6), 2)])
def test_tensorinv(shape, ind):
    n = int(np.prod(shape[:ind]))
    a = (rs.uniform(-1, 1, (n, n)) + 3 * np.eye(n)).reshape(shape)
    check(Case("_npi_tensorinv", lambda x: np.linalg.tensorinv(x, ind), inputs=[a],
               kwargs={"ind": ind}, ref_kwargs=False, dtypes=F32_64))


def test_tensorinv_rejects_non_square_split():
    with pytest.raises(MXNetError):
        mnp.linalg.tensorinv(mnp.ones((2, 3, 4)), 1)


@pytest.mark.parametrize("front", ["sym.np.linalg", "sym._internal"])
def test_svd_operator_through_the_symbol_front_ends(front):
    a = rs.uniform(-1, 1, (2, 3, 4))
    fn = mx.sym.np.linalg.svd if front == "sym.np.linalg" else mx.sym._internal._npi_svd
    sym = fn(mx.sym.var("a"))
    assert len(sym.list_outputs()) == 3
    ut, s, v = (o.asnumpy() for o in sym.eval(a=mx.nd.array(a, dtype="float64")))
    np.testing.assert_allclose(np.matmul(ut * s[..., None, :], v), a, atol=1e-10)
    np.testing.assert_allclose(s, np.linalg.svd(a, compute_uv=False), atol=1e-10)
