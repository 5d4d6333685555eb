"""dot, batch_dot and the linalg family against NumPy references, numeric gradients and
MXNet 1.9.1's golden cases."""
import numpy as np
import pytest

import mxnet as mx
from mxnet.base import MXNetError
from opcheck import F32_64, Case, check
from common import fixture_cases_for, run_fixture_case

nd = mx.nd
rs = np.random.RandomState(7)


def rand(*shape):
    return rs.uniform(-1, 1, shape)


def spd(*batch, n=3):
    a = rs.rand(*batch, n, n)
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


def lower_tri(*batch, n=3):
    return np.tril(rs.uniform(-1, 1, batch + (n, n))) + 2 * np.eye(n)


def T(x):
    return np.swapaxes(x, -1, -2)


@pytest.mark.parametrize("case", fixture_cases_for("dot", "batch_dot"))
def test_fixture(case):
    run_fixture_case(case)


def ref_dot(a, b, ta=False, tb=False):
    """Independent reference: contract lhs axis -1 (0 if ta) with rhs axis 0 (-1 if tb)."""
    out = np.tensordot(a, b, axes=([0 if ta else a.ndim - 1], [b.ndim - 1 if tb else 0]))
    return out.reshape(out.shape or (1,))


@pytest.mark.parametrize("ls,rs_,ta,tb", [
    ((3, 4), (4, 5), False, False),
    ((4, 3), (4, 5), True, False),
    ((3, 4), (5, 4), False, True),
    ((4, 3), (5, 4), True, True),
    ((2, 3, 4), (4, 5), False, False),
    ((2, 3, 4), (2, 5), True, False),
    ((2, 3, 4), (6, 4), False, True),
    ((2, 3, 4), (6, 2), True, True),
    ((2, 3, 4), (4, 2, 5), False, False),
    ((5, 2), (4, 3, 2), False, True),
    ((3,), (3,), False, False),
    ((3,), (3, 2), False, False),
    ((3,), (3, 2), True, False),
    ((2, 3), (3,), False, False),
    ((2, 3), (2,), True, False),
])
def test_dot(ls, rs_, ta, tb):
    a, b = rand(*ls), rand(*rs_)
    check(Case("dot", lambda x, y: ref_dot(x, y, ta, tb),
               kwargs={"transpose_a": ta, "transpose_b": tb}, ref_kwargs=False,
               inputs=[a, b]))


def test_dot_float64_and_positional():
    a, b = rand(3, 4), rand(4, 2)
    out = nd.dot(nd.array(a, dtype="float64"), nd.array(b, dtype="float64"))
    assert out.dtype == np.float64
    np.testing.assert_allclose(out.asnumpy(), a @ b, rtol=1e-12)
    out = nd.dot(nd.array(a.T), nd.array(b), True, forward_stype="default")
    np.testing.assert_allclose(out.asnumpy(), a @ b, rtol=1e-5)


def test_dot_errors():
    with pytest.raises(MXNetError, match="dot"):
        nd.dot(nd.ones((2, 3)), nd.ones((4,)))
        mx.nd.waitall()   # computing errors surface at the sync point
    with pytest.raises(MXNetError, match="vector"):
        nd.dot(nd.ones((3,)), nd.ones((3,)), transpose_a=True)
        mx.nd.waitall()   # computing errors surface at the sync point
    with pytest.raises(MXNetError, match="dtype"):
        nd.dot(nd.ones((2, 3), dtype="float64"), nd.ones((3, 2)))
        mx.nd.waitall()   # computing errors surface at the sync point
    with pytest.raises(MXNetError, match="int32"):
        nd.dot(nd.ones((2, 3), dtype="int32"), nd.ones((3, 2), dtype="int32"))
        mx.nd.waitall()   # computing errors surface at the sync point


def ref_batch_dot(a, b, ta=False, tb=False):
    return np.matmul(T(a) if ta else a, T(b) if tb else b)


@pytest.mark.parametrize("ls,rs_,ta,tb", [
    ((2, 3, 4), (2, 4, 5), False, False),
    ((2, 4, 3), (2, 4, 5), True, False),
    ((2, 3, 4), (2, 5, 4), False, True),
    ((2, 4, 3), (2, 5, 4), True, True),
    ((2, 2, 3, 4), (2, 2, 4, 1), False, False),
])
def test_batch_dot(ls, rs_, ta, tb):
    check(Case("batch_dot", lambda x, y: ref_batch_dot(x, y, ta, tb),
               kwargs={"transpose_a": ta, "transpose_b": tb}, ref_kwargs=False,
               inputs=[rand(*ls), rand(*rs_)]))


def test_batch_dot_errors():
    with pytest.raises(MXNetError, match="batch"):
        nd.batch_dot(nd.ones((2, 3, 4)), nd.ones((3, 4, 5)))
    with pytest.raises(MXNetError, match="N >= 3"):
        nd.batch_dot(nd.ones((3, 4)), nd.ones((4, 5)))
    with pytest.raises(MXNetError, match="mismatch"):
        nd.batch_dot(nd.ones((2, 3, 4)), nd.ones((2, 5, 5)))


def test_dot_symbol_shape_inference():
    from mxnet.operator.registry import get_op
    op = get_op("dot")
    p = op.parse({"transpose_a": True})
    assert op.infer_shape(p, [(2, 3, 4), (2, 5)])[1] == [(3, 4, 5)]
    assert op.infer_shape(p, [None, (2, 5)])[1] == [None]


# ---------------------------------------------------------------- linalg
def mat(x, ta):
    return T(x) if ta else x


@pytest.mark.parametrize("sa,sb,kw", [
    ((3, 4), (4, 5), {}),
    ((4, 3), (5, 4), {"transpose_a": True, "transpose_b": True, "alpha": 0.5}),
    ((2, 3, 4), (2, 4, 2), {"alpha": -2.0}),
])
def test_gemm2(sa, sb, kw):
    ta, tb, alpha = kw.get("transpose_a", False), kw.get("transpose_b", False), \
        kw.get("alpha", 1.0)
    check(Case("linalg.gemm2", lambda a, b: alpha * mat(a, ta) @ mat(b, tb), kwargs=kw,
               ref_kwargs=False, inputs=[rand(*sa), rand(*sb)], dtypes=F32_64))


def test_gemm2_axis():
    a, b = rand(4, 2, 3), rand(3, 2, 5)

    def ref(a, b):     # rows on axis 0: batch over axis 1
        return np.moveaxis(np.moveaxis(a, 0, -2) @ np.moveaxis(b, 0, -2), -2, 0)
    check(Case("linalg.gemm2", ref, kwargs={"axis": 0}, ref_kwargs=False, inputs=[a, b],
               dtypes=F32_64))


@pytest.mark.parametrize("kw", [{}, {"alpha": 2.0, "beta": 3.0, "transpose_b": True},
                                {"beta": 0.0, "transpose_a": True}])
def test_gemm(kw):
    ta, tb = kw.get("transpose_a", False), kw.get("transpose_b", False)
    a = rand(2, 4, 3) if ta else rand(2, 3, 4)
    b = rand(2, 5, 4) if tb else rand(2, 4, 5)
    c = rand(2, 3, 5)
    alpha, beta = kw.get("alpha", 1.0), kw.get("beta", 1.0)
    check(Case("linalg.gemm", lambda x, y, z: alpha * mat(x, ta) @ mat(y, tb) + beta * z,
               kwargs=kw, ref_kwargs=False, inputs=[a, b, c], dtypes=F32_64))


def test_gemm_errors():
    with pytest.raises(MXNetError, match="gemm2"):
        nd.linalg.gemm2(nd.ones((3, 4)), nd.ones((5, 2)))
        mx.nd.waitall()   # computing errors surface at the sync point
    with pytest.raises(MXNetError, match="gemm2"):
        nd.linalg.gemm2(nd.ones((2, 3, 4)), nd.ones((3, 4, 5)))
        mx.nd.waitall()   # computing errors surface at the sync point
    with pytest.raises(MXNetError, match="float32/float64"):
        nd.linalg.gemm2(nd.ones((3, 4), dtype="int32"), nd.ones((4, 5), dtype="int32"))
        mx.nd.waitall()   # computing errors surface at the sync point
    with pytest.raises(MXNetError, match="C has shape"):
        nd.linalg.gemm(nd.ones((3, 4)), nd.ones((4, 5)), nd.ones((3, 4)))
        mx.nd.waitall()   # computing errors surface at the sync point


def test_potrf_potri():
    a = spd(2)
    check(Case("linalg.potrf", np.linalg.cholesky, inputs=[a], grad=False, dtypes=F32_64))
    # MXNet's potrf gradient is the symmetric one; check the directional derivative of a
    # symmetric perturbation against finite differences.
    x = nd.array(a, dtype="float64")
    x.attach_grad()
    head = rs.rand(2, 3, 3)
    with mx.autograd.record():
        y = nd.linalg.potrf(x)
    y.backward(nd.array(head, dtype="float64"))
    d = rs.rand(2, 3, 3)
    d = d + T(d)
    eps = 1e-6
    f = lambda m: (np.linalg.cholesky(m) * head).sum()  # noqa: E731
    numeric = (f(a + eps * d) - f(a - eps * d)) / (2 * eps)
    np.testing.assert_allclose((x.grad.asnumpy() * d).sum(), numeric, rtol=1e-6)
    np.testing.assert_allclose(x.grad.asnumpy(), T(x.grad.asnumpy()), atol=1e-12)

    L = lower_tri(2)
    check(Case("linalg.potri", lambda m: np.linalg.inv(m @ T(m)), inputs=[L],
               dtypes=F32_64))


def test_potrf_errors():
    with pytest.raises(MXNetError, match="potrf"):
        nd.linalg.potrf(nd.array(-spd()))
        mx.nd.waitall()   # computing errors surface at the sync point
    with pytest.raises(MXNetError, match="square"):
        nd.linalg.potrf(nd.ones((3, 4)))
        mx.nd.waitall()   # computing errors surface at the sync point


@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("transpose", [False, True])
@pytest.mark.parametrize("rightside", [False, True])
def test_trsm_trmm(lower, transpose, rightside):
    a = rand(3, 3) + 3 * np.eye(3)
    b = rand(4, 3) if rightside else rand(3, 4)
    kw = dict(lower=lower, transpose=transpose, rightside=rightside, alpha=1.5)

    def op_a(x):
        t = np.tril(x) if lower else np.triu(x)
        return t.T if transpose else t

    def ref_trmm(x, y):
        return 1.5 * (y @ op_a(x) if rightside else op_a(x) @ y)

    def ref_trsm(x, y):
        inv = np.linalg.inv(op_a(x))
        return 1.5 * (y @ inv if rightside else inv @ y)
    check(Case("linalg.trmm", ref_trmm, kwargs=kw, ref_kwargs=False, inputs=[a, b], dtypes=F32_64))
    check(Case("linalg.trsm", ref_trsm, kwargs=kw, ref_kwargs=False, inputs=[a, b], dtypes=F32_64))


def test_syrk_sumlogdiag():
    a = rand(2, 3, 4)
    check(Case("linalg.syrk", lambda x: 2.0 * x @ T(x), kwargs={"alpha": 2.0},
               ref_kwargs=False, inputs=[a], dtypes=F32_64))
    check(Case("linalg.syrk", lambda x: T(x) @ x, kwargs={"transpose": True},
               ref_kwargs=False, inputs=[a], dtypes=F32_64))
    m = spd(2)
    check(Case("linalg.sumlogdiag", lambda x: np.log(np.diagonal(x, axis1=-2, axis2=-1)).sum(-1),
               inputs=[m], dtypes=F32_64))
    out = nd.linalg.sumlogdiag(nd.array(spd()))
    assert out.shape == (1,)
    with pytest.raises(MXNetError, match="square"):
        nd.linalg.sumlogdiag(nd.ones((3, 4)))


def test_aliases():
    assert nd.linalg_gemm2 is not None and nd.linalg_potrf is not None
    a, b = rand(3, 4), rand(4, 2)
    np.testing.assert_allclose(nd.linalg_gemm2(nd.array(a), nd.array(b)).asnumpy(), a @ b,
                               rtol=1e-5)


@pytest.mark.parametrize("ta, tb, lshape, rshape, want_r", [
    (False, False, (64, 1000), (0, 100), (1000, 100)),
    (False, True, (64, 1000), (100, 0), (100, 1000)),
    (True, False, (1000, 64), (0, 100), (1000, 100))])
def test_dot_infers_a_contracted_dim_known_on_one_side(ta, tb, lshape, rshape, want_r):
    # a deferred weight (0 = unknown) learns its input size from the data
    y = mx.sym.dot(mx.sym.var("x"), mx.sym.var("w", shape=rshape), transpose_a=ta,
                   transpose_b=tb)
    args, outs, _ = y.infer_shape(x=lshape)
    assert args == [lshape, want_r]
    assert outs == [np.dot(np.zeros(lshape).T if ta else np.zeros(lshape),
                           np.zeros(want_r).T if tb else np.zeros(want_r)).shape]


def test_dot_with_zero_contracted_size_and_its_gradient():
    with mx.util.np_shape(True):             # zero-size arrays need NumPy shapes
        a, b = nd.ones((3, 0)), nd.ones((0, 4))
        a.attach_grad()
        b.attach_grad()
        with mx.autograd.record():
            y = nd.dot(a, b)
        np.testing.assert_array_equal(y.asnumpy(), np.zeros((3, 4)))
        y.backward()
        assert a.grad.shape == (3, 0) and b.grad.shape == (0, 4)


def test_potrf_potri_upper():
    # lower=False: the upper factor U with A = U^T U, read from A's upper triangle
    a = spd(2)
    upper = lambda m: T(np.linalg.cholesky(m))  # noqa: E731
    junk = a + np.tril(np.full((3, 3), 50.0), -1)     # the lower triangle is not read
    check(Case("linalg.potrf", lambda m: upper(a), inputs=[junk], kwargs={"lower": False},
               ref_kwargs=False, grad=False, dtypes=F32_64))
    U = T(lower_tri(2))
    check(Case("linalg.potri", lambda m: np.linalg.inv(T(m) @ m), inputs=[U],
               kwargs={"lower": False}, ref_kwargs=False, grad=False, dtypes=F32_64))
    # potri's gradient (on the upper triangle it reads) against finite differences
    u, head = U[0], rs.rand(3, 3)
    f = lambda m: (np.linalg.inv(T(np.triu(m)) @ np.triu(m)) * head).sum()  # noqa: E731
    x = nd.array(u, dtype="float64")
    x.attach_grad()
    with mx.autograd.record():
        y = nd.linalg.potri(x, lower=False)
    y.backward(nd.array(head, dtype="float64"))
    eps, numeric = 1e-6, np.zeros((3, 3))
    for i in range(3):
        for j in range(3):
            d = np.zeros((3, 3))
            d[i, j] = eps
            numeric[i, j] = (f(u + d) - f(u - d)) / (2 * eps)
    np.testing.assert_allclose(x.grad.asnumpy(), numeric, rtol=1e-5, atol=1e-8)
    # the upper factor's gradient equals the lower one's for the transposed head
    x = nd.array(a, dtype="float64")
    head = rs.rand(2, 3, 3)
    grads = []
    for lower, h in ((True, head), (False, T(head))):
        x.attach_grad()
        with mx.autograd.record():
            y = nd.linalg.potrf(x, lower=lower)
        y.backward(nd.array(h, dtype="float64"))
        grads.append(x.grad.asnumpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-10, atol=1e-12)
