"""The _scatter_* operators, the sparse _maximum/_minimum/_hypot kernels, BatchNorm's
refusal of fix_gamma with sparse inputs, and sparse executor heads: MXNet 1.9.1's
storage rules, values against NumPy."""
import numpy as np
import pytest

import mxnet as mx
from mxnet.base import MXNetError
from opcheck import Case, check


def _arrays():
    rs = np.random.RandomState(11)
    lhs = rs.uniform(0.5, 2, (6, 4)).astype(np.float32)
    lhs[[1, 4]] = 0                       # rows lhs does not store
    lhs[2, 1] = 0                         # a zero inside a stored row
    rhs = rs.uniform(0.5, 2, (6, 4)).astype(np.float32)
    rhs[2, 1] = 0                         # 0 / 0 in a stored row: nan, kept
    return lhs, rhs


def test_scatter_ops_dense_bodies():
    rs = np.random.RandomState(3)
    a, b = rs.uniform(0.5, 2, (3, 4)), rs.uniform(0.5, 2, (3, 4))
    check(Case("_internal._scatter_elemwise_div", np.divide, inputs=[a, b]))
    check(Case("_internal._scatter_plus_scalar", lambda x: x + 1.5,
               kwargs={"scalar": 1.5}, ref_kwargs=False, inputs=[a]))
    check(Case("_internal._scatter_minus_scalar", lambda x: x - 1.5,
               kwargs={"scalar": 1.5}, ref_kwargs=False, inputs=[a]))


@pytest.mark.parametrize("rhs_stype", ["row_sparse", "default", "csr"])
def test_scatter_elemwise_div_row_sparse(rhs_stype):
    lhs, rhs = _arrays()
    l = mx.nd.array(lhs).tostype("row_sparse")
    out = mx.nd._internal._scatter_elemwise_div(l, mx.nd.array(rhs).tostype(rhs_stype))
    assert out.stype == "row_sparse"
    np.testing.assert_array_equal(out.indices.asnumpy(), l.indices.asnumpy())
    with np.errstate(invalid="ignore"):
        want = np.where(np.isin(np.arange(6), l.indices.asnumpy())[:, None],
                        lhs / rhs, 0)
    np.testing.assert_allclose(out.asnumpy(), want, rtol=1e-6)
    assert np.isnan(out.asnumpy()[2, 1])


@pytest.mark.parametrize("lhs_stype,rhs_stype", [("csr", "default"), ("default", "csr"),
                                                 ("csr", "csr"), ("default", "row_sparse")])
def test_scatter_elemwise_div_dense_result(lhs_stype, rhs_stype):
    lhs, rhs = _arrays()
    rhs[rhs == 0] = 1
    out = mx.nd._internal._scatter_elemwise_div(mx.nd.array(lhs).tostype(lhs_stype),
                                                mx.nd.array(rhs).tostype(rhs_stype))
    assert out.stype == "default"
    np.testing.assert_allclose(out.asnumpy(), lhs / rhs, rtol=1e-6)


@pytest.mark.parametrize("stype", ["row_sparse", "csr"])
@pytest.mark.parametrize("name,sign", [("_scatter_plus_scalar", 1),
                                       ("_scatter_minus_scalar", -1)])
def test_scatter_scalar_stored_entries_only(stype, name, sign):
    lhs, _ = _arrays()
    x = mx.nd.array(lhs).tostype(stype)
    out = getattr(mx.nd._internal, name)(x, scalar=9)
    assert out.stype == stype
    stored = x.tostype("default").asnumpy() != 0 if stype == "csr" else \
        np.isin(np.arange(6), x.indices.asnumpy())[:, None] & np.ones((1, 4), bool)
    np.testing.assert_allclose(out.asnumpy(), np.where(stored, lhs + sign * 9, 0))


@pytest.mark.parametrize("stype", ["row_sparse", "csr"])
def test_scatter_ops_in_executor_keep_lhs_rows(stype):
    """Bound symbols give the sparse result the kernel gives (the stored rows of lhs),
    not a cast of the dense result (where every row would be non-zero)."""
    lhs, rhs = _arrays()
    l_nd = mx.nd.array(lhs).tostype(stype)
    lhs_sym = mx.sym.Variable("lhs", stype=stype)
    sym = mx.sym._internal._scatter_plus_scalar(lhs_sym, scalar=9)
    exe = sym.bind(mx.cpu(), args={"lhs": l_nd})
    out = exe.forward()[0]
    want = getattr(mx.nd._internal, "_scatter_plus_scalar")(l_nd, scalar=9)
    assert out.stype == stype
    np.testing.assert_array_equal(out.asnumpy(), want.asnumpy())
    if stype == "row_sparse":
        np.testing.assert_array_equal(out.indices.asnumpy(), l_nd.indices.asnumpy())
        div = mx.sym._internal._scatter_elemwise_div(lhs_sym, mx.sym.Variable("rhs"))
        exe = div.bind(mx.cpu(), args={"lhs": l_nd, "rhs": mx.nd.array(rhs)})
        out = exe.forward()[0]
        np.testing.assert_array_equal(out.indices.asnumpy(), l_nd.indices.asnumpy())


@pytest.mark.parametrize("stype", ["row_sparse", "csr"])
@pytest.mark.parametrize("name,ref", [("_maximum", np.maximum), ("_minimum", np.minimum),
                                      ("_hypot", np.hypot)])
def test_max_min_hypot_keep_sparse_storage(stype, name, ref):
    rs = np.random.RandomState(5)
    a = rs.normal(size=(5, 3)).astype(np.float32) * (rs.uniform(size=(5, 3)) > 0.5)
    b = rs.normal(size=(5, 3)).astype(np.float32) * (rs.uniform(size=(5, 3)) > 0.5)
    fn = getattr(mx.nd._internal, name)
    out = fn(mx.nd.array(a).tostype(stype), mx.nd.array(b).tostype(stype))
    assert out.stype == stype
    np.testing.assert_allclose(out.asnumpy(), ref(a, b), rtol=1e-6)
    mixed = fn(mx.nd.array(a).tostype(stype), mx.nd.array(b))
    assert mixed.stype == "default"
    np.testing.assert_allclose(mixed.asnumpy(), ref(a, b), rtol=1e-6)


def test_batchnorm_refuses_fix_gamma_with_sparse_inputs():
    x = mx.nd.array(np.random.RandomState(1).normal(size=(4, 3))).tostype("row_sparse")
    gamma, beta = mx.nd.ones((3,)), mx.nd.zeros((3,))
    mean, var = mx.nd.zeros((3,)), mx.nd.ones((3,))
    with pytest.raises(MXNetError, match="fix_gamma"):
        mx.nd.BatchNorm(x, gamma, beta, mean, var, fix_gamma=True).asnumpy()
    sym = mx.sym.BatchNorm(mx.sym.Variable("data", stype="row_sparse"), fix_gamma=True,
                           name="bn")
    with pytest.raises(MXNetError, match="fix_gamma"):
        sym.bind(mx.cpu(), args={"data": x, "bn_gamma": gamma, "bn_beta": beta},
                 aux_states=[mean, var]).forward()
    # fix_gamma=False runs densely (storage fallback), like the dense operator
    got = mx.nd.BatchNorm(x, gamma, beta, mean, var, fix_gamma=False,
                          use_global_stats=True)
    want = mx.nd.BatchNorm(x.tostype("default"), gamma, beta, mean, var, fix_gamma=False,
                           use_global_stats=True)
    np.testing.assert_allclose(got.asnumpy(), want.asnumpy(), rtol=1e-6)


def test_symbol_functions_ignore_out():
    """mx.sym.* accept out= (as MXNet 1.9.1 does) and ignore it."""
    l, r = mx.sym.Variable("l"), mx.sym.Variable("r")
    s = mx.sym.sparse.elemwise_add(l, r, out=l)
    assert s.list_arguments() == ["l", "r"]
    assert s.tojson() == mx.sym.sparse.elemwise_add(l, r, name=s.name).tojson()
