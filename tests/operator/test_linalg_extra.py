"""linalg det/slogdet/inverse/extractdiag/makediag/extracttrian/maketrian/gelqf/syevd
against NumPy references and numeric gradients, nd and sym paths."""
import numpy as np
import pytest

import mxnet as mx
from mxnet.base import MXNetError
from mxnet.test_utils import check_numeric_gradient
from opcheck import F32_64, Case, check

rs = np.random.RandomState(3)


def well_conditioned(*batch, n=3):
    return rs.uniform(-1, 1, batch + (n, n)) + 3 * np.eye(n)


def test_det():
    a = well_conditioned(2, n=3)
    check(Case("linalg.det", lambda x: np.linalg.det(x), inputs=[a], dtypes=F32_64))


def test_det_single_matrix_gives_shape_1():
    out = mx.nd.linalg.det(mx.nd.array(np.diag([2.0, 3.0])))
    assert out.shape == (1,) and out.asscalar() == pytest.approx(6.0)


def test_slogdet():
    a = well_conditioned(2, n=3)
    a[1] *= -1                                     # negative determinant
    check(Case("linalg.slogdet", lambda x: list(np.linalg.slogdet(x)), inputs=[a], dtypes=F32_64))


def test_inverse():
    check(Case("linalg.inverse", lambda x: np.linalg.inv(x),
               inputs=[well_conditioned(2, n=3)], dtypes=F32_64))


def test_inverse_rejects_non_square():
    with pytest.raises(MXNetError):
        mx.nd.linalg.inverse(mx.nd.ones((2, 3)))


@pytest.mark.parametrize("offset", [0, 1, -2])
def test_extractdiag_makediag(offset):
    a = rs.uniform(-1, 1, (2, 4, 4))
    check(Case("linalg.extractdiag", lambda x: np.diagonal(x, offset, axis1=-2, axis2=-1),
               kwargs={"offset": offset}, ref_kwargs=False, inputs=[a], dtypes=F32_64))
    v = rs.uniform(-1, 1, (2, 3))

    def ref(x):
        return np.stack([np.diag(row, offset) for row in x])
    check(Case("linalg.makediag", ref, kwargs={"offset": offset}, ref_kwargs=False,
               inputs=[v], dtypes=F32_64))


@pytest.mark.parametrize("shape", [(3, 4), (4, 3), (2, 3, 4)])
def test_extractdiag_takes_square_matrices_only(shape):
    # MXNet 1.9.1 refuses non-square input ("Input operand must be a tensor of square
    # matrices"), for any offset (checked against the oracle)
    for offset in (0, 1):
        with pytest.raises(MXNetError):
            mx.nd.linalg.extractdiag(mx.nd.ones(shape), offset=offset).wait_to_read()


def _tri_ref(a, offset, lower):
    """Packed triangle: tril(A, offset) row by row, or the upper one column by column."""
    n = a.shape[-1]
    if offset < 0 or (offset == 0 and lower):
        r, c = np.tril_indices(n, offset)
    else:
        c, r = np.tril_indices(n, -offset)
    return a[..., r, c]


@pytest.mark.parametrize("offset,lower", [(0, True), (0, False), (1, True), (-1, False)])
def test_extracttrian_maketrian(offset, lower):
    a = rs.uniform(-1, 1, (2, 4, 4))
    kw = {"offset": offset, "lower": lower}
    check(Case("linalg.extracttrian", lambda x: _tri_ref(x, offset, lower), kwargs=kw,
               ref_kwargs=False, inputs=[a], dtypes=F32_64))
    packed = np.ascontiguousarray(_tri_ref(a, offset, lower))

    def ref(v):
        out = np.zeros(v.shape[:-1] + (4, 4), v.dtype)
        n = 4
        if offset < 0 or (offset == 0 and lower):
            r, c = np.tril_indices(n, offset)
        else:
            c, r = np.tril_indices(n, -offset)
        out[..., r, c] = v
        return out
    check(Case("linalg.maketrian", ref, kwargs=kw, ref_kwargs=False, inputs=[packed],
               dtypes=F32_64))


def test_extracttrian_row_major_order():
    a = mx.nd.array(np.arange(1, 10).reshape(3, 3))
    assert mx.nd.linalg.extracttrian(a).asnumpy().tolist() == [1, 4, 5, 7, 8, 9]
    assert mx.nd.linalg.extracttrian(a, offset=1).asnumpy().tolist() == [2, 3, 6]


def test_gelqf_reconstructs_and_matches_householder_qr():
    a = rs.uniform(-1, 1, (2, 3, 5))

    def ref(x):
        q, r = np.linalg.qr(np.swapaxes(x, -1, -2))
        return [np.swapaxes(q, -1, -2), np.swapaxes(r, -1, -2)]
    check(Case("linalg.gelqf", ref, inputs=[a], grad=False, dtypes=F32_64))
    q, l = mx.nd.linalg.gelqf(mx.nd.array(a, dtype="float64"))
    q, l = q.asnumpy(), l.asnumpy()
    np.testing.assert_allclose(l @ q, a, atol=1e-10)
    np.testing.assert_allclose(q @ np.swapaxes(q, -1, -2), np.broadcast_to(np.eye(3), (2, 3, 3)),
                               atol=1e-10)
    assert np.allclose(np.triu(l, 1), 0)


def test_gelqf_gradient():
    a = rs.uniform(-1, 1, (2, 4)) + np.eye(2, 4) * 2
    check_numeric_gradient(lambda x: mx.nd.linalg.gelqf(x), [a], numeric_eps=1e-5, rtol=1e-3)
    s = mx.sym.linalg.gelqf(mx.sym.var("a"))
    for k in range(2):                  # MXNet's check projects a single output
        check_numeric_gradient(s[k], [a], numeric_eps=1e-5, rtol=1e-3, dtype=np.float64)


def test_gelqf_rejects_tall():
    with pytest.raises(MXNetError):
        mx.nd.linalg.gelqf(mx.nd.ones((3, 2)))


def _sym(*batch, n=3):
    a = rs.uniform(-1, 1, batch + (n, n))
    return a + np.swapaxes(a, -1, -2)


def test_syevd_forward():
    a = _sym(2, n=4)

    def ref(x):
        lam, v = np.linalg.eigh(x)
        u = np.swapaxes(v, -1, -2)
        big = np.take_along_axis(u, np.abs(u).argmax(-1)[..., None], -1)
        return [u * np.sign(big), lam]
    check(Case("linalg.syevd", ref, inputs=[a], grad=False, dtypes=F32_64))
    u, lam = (o.asnumpy() for o in mx.nd.linalg.syevd(mx.nd.array(a, dtype="float64")))
    np.testing.assert_allclose(np.swapaxes(u, -1, -2) @ (lam[..., None] * u), a, atol=1e-10)


def test_syevd_gradient_symmetric_directions():
    """Finite differences along symmetric perturbations (the input is symmetric)."""
    a = _sym(n=3)
    hu, hl = rs.normal(size=(3, 3)), rs.normal(size=3)
    x = mx.nd.array(a, dtype="float64")
    x.attach_grad()
    with mx.autograd.record():
        u, lam = mx.nd.linalg.syevd(x)
    mx.autograd.backward([u, lam], [mx.nd.array(hu, dtype="float64"),
                                    mx.nd.array(hl, dtype="float64")])
    grad = x.grad.asnumpy()

    def f(m):
        uu, ll = (o.asnumpy() for o in mx.nd.linalg.syevd(mx.nd.array(m, dtype="float64")))
        return (uu * hu).sum() + (ll * hl).sum()
    eps = 1e-6
    for i in range(3):
        for j in range(i, 3):
            e = np.zeros((3, 3))
            e[i, j] = e[j, i] = 1
            num = (f(a + eps * e) - f(a - eps * e)) / (2 * eps)
            assert num == pytest.approx((grad * e).sum(), rel=1e-4, abs=1e-6)
