"""mx.nd.sparse: RowSparseNDArray / CSRNDArray against scipy.sparse and NumPy, storage
types of results as MXNet 1.9.1 infers them, save/load against files written by
MXNet 1.9.1, sparse gradients and lazy optimizer updates."""
import os
import pickle

import numpy as np
import pytest
import scipy.sparse as sps

import mxnet as mx
from mxnet.base import MXNetError

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(__file__)), "fixtures", "sparse")


def _dense(seed=0, shape=(6, 5), cut=0.6):
    x = np.random.RandomState(seed).uniform(size=shape).astype(np.float32)
    x[x < cut] = 0
    return x


# --- creation and layout ----------------------------------------------------------------
def test_csr_from_definition_matches_scipy():
    data, indices, indptr = [1.0, 2.0, 3.0], [0, 2, 1], [0, 2, 2, 3]
    a = mx.nd.sparse.csr_matrix((data, indices, indptr), shape=(3, 4))
    ref = sps.csr_matrix((data, indices, indptr), shape=(3, 4))
    assert a.stype == "csr" and a.shape == (3, 4) and a.dtype == np.float32
    assert a.indices.dtype == np.int64 and a.indptr.dtype == np.int64
    np.testing.assert_array_equal(a.asnumpy(), ref.toarray())
    np.testing.assert_array_equal(a.asscipy().toarray(), ref.toarray())


def test_csr_shape_inferred_and_coo_and_scipy_inputs():
    a = mx.nd.sparse.csr_matrix(([5.0, 6.0], [1, 3], [0, 1, 2]))
    assert a.shape == (2, 4)
    coo = mx.nd.sparse.csr_matrix(([1.0, 2.0], ([0, 2], [1, 0])), shape=(3, 2))
    np.testing.assert_array_equal(coo.asnumpy(), [[0, 1], [0, 0], [2, 0]])
    m = sps.random(7, 9, density=0.3, format="csr", random_state=1)
    b = mx.nd.sparse.csr_matrix(m)
    assert b.dtype == np.float64              # the scipy matrix's dtype
    np.testing.assert_allclose(b.asnumpy(), m.toarray())
    c = mx.nd.array(m)                        # mx.nd.array keeps scipy sources sparse
    assert c.stype == "csr"


def test_row_sparse_from_definition_and_dense():
    r = mx.nd.sparse.row_sparse_array(([[1, 2], [3, 4]], [1, 3]), shape=(5, 2))
    want = np.zeros((5, 2), np.float32)
    want[[1, 3]] = [[1, 2], [3, 4]]
    np.testing.assert_array_equal(r.asnumpy(), want)
    np.testing.assert_array_equal(r.indices.asnumpy(), [1, 3])
    d = mx.nd.sparse.row_sparse_array(want)
    np.testing.assert_array_equal(d.indices.asnumpy(), [1, 3])
    np.testing.assert_array_equal(d.data.asnumpy(), [[1, 2], [3, 4]])


def test_zeros_empty_and_bad_stype():
    for stype in ("csr", "row_sparse"):
        z = mx.nd.zeros((3, 4), stype=stype, dtype="float64")
        assert z.stype == stype and z.dtype == np.float64
        np.testing.assert_array_equal(z.asnumpy(), np.zeros((3, 4)))
        assert mx.nd.empty((2, 2), stype=stype).stype == stype
    with pytest.raises(ValueError):
        mx.nd.sparse.zeros("bogus", (2, 2))
    with pytest.raises(ValueError):
        mx.nd.sparse.csr_matrix((2, 2), shape=(3, 2))


def test_check_format_finds_bad_indices():
    good = mx.nd.sparse.csr_matrix(([7, 8, 9], [0, 2, 1], [0, 2, 2, 3]), shape=(3, 4))
    good.check_format()
    bad = mx.nd.sparse.csr_matrix(([7, 8, 9], [2, 1, 1], [0, 2, 2, 3]), shape=(3, 4))
    with pytest.raises(MXNetError):
        bad.check_format()
    rsp = mx.nd.sparse.row_sparse_array(([[1, 2], [3, 4]], [1, 0]), shape=(3, 2))
    with pytest.raises(MXNetError):
        rsp.check_format()


def test_tostype_round_trips_and_csr_needs_2d():
    x = _dense(1)
    for stype in ("csr", "row_sparse"):
        s = mx.nd.array(x).tostype(stype)
        assert s.stype == stype
        np.testing.assert_array_equal(s.tostype("default").asnumpy(), x)
    np.testing.assert_array_equal(
        mx.nd.array(x).tostype("csr").tostype("row_sparse").asnumpy(), x)
    with pytest.raises(ValueError):
        mx.nd.array([1, 2, 3]).tostype("csr")


def test_csr_row_slices_and_copies():
    x = _dense(2, (7, 4))
    a = mx.nd.array(x).tostype("csr")
    assert a[2:5].stype == "csr"
    np.testing.assert_array_equal(a[2:5].asnumpy(), x[2:5])
    np.testing.assert_array_equal(a[-1].asnumpy(), x[-1:])
    cols = mx.nd.slice(a, begin=(1, 1), end=(6, 3))
    np.testing.assert_array_equal(cols.asnumpy(), x[1:6, 1:3])
    b = a.copy()
    assert b.stype == "csr" and b is not a
    np.testing.assert_array_equal(b.asnumpy(), x)
    c = mx.nd.zeros(x.shape, stype="row_sparse")
    a.copyto(c)                                 # cast into the target's storage
    assert c.stype == "row_sparse"
    np.testing.assert_array_equal(c.asnumpy(), x)
    with pytest.raises(MXNetError):
        c.reshape((4, 7))


def test_pickle_and_astype():
    a = mx.nd.array(_dense(3)).tostype("csr")
    b = pickle.loads(pickle.dumps(a))
    assert isinstance(b, mx.nd.sparse.CSRNDArray)
    np.testing.assert_array_equal(a.asnumpy(), b.asnumpy())
    c = a.astype("float64")
    assert c.stype == "csr" and c.dtype == np.float64


# --- operators: values from scipy/NumPy, storage types as MXNet 1.9.1 infers -------------
def test_elementwise_storage_types():
    x, y = _dense(4), _dense(5)
    c1, c2 = mx.nd.array(x).tostype("csr"), mx.nd.array(y).tostype("csr")
    r1, r2 = mx.nd.array(x).tostype("row_sparse"), mx.nd.array(y).tostype("row_sparse")
    d = mx.nd.array(y)
    cases = [(c1 + c2, "csr", x + y), (c1 - c2, "csr", x - y), (c1 * c2, "csr", x * y),
             (r1 + r2, "row_sparse", x + y), (r1 * r2, "row_sparse", x * y),
             (c1 + d, "default", x + y), (r1 * d, "row_sparse", x * y),
             (mx.nd.sparse.multiply(d, c1), "csr", x * y),
             (c1 * 2, "csr", x * 2), (r1 / 4, "row_sparse", x / 4),
             (c1 + 1, "default", x + 1), (mx.nd.sqrt(c1), "csr", np.sqrt(x)),
             (mx.nd.exp(r1), "default", np.exp(x)), (c1 == 1, "csr", x == 1),
             (mx.nd.add_n(r1, r2), "row_sparse", x + y)]
    for out, stype, ref in cases:
        assert out.stype == stype
        np.testing.assert_allclose(out.asnumpy(), ref, rtol=1e-6)


def test_dot_output_storage_and_values():
    x = _dense(6, (4, 6))
    a = mx.nd.array(x).tostype("csr")
    w = np.random.RandomState(7).normal(size=(6, 3)).astype(np.float32)
    m = sps.csr_matrix(x)
    out = mx.nd.sparse.dot(a, mx.nd.array(w))
    assert out.stype == "default"
    np.testing.assert_allclose(out.asnumpy(), m @ w, rtol=1e-5)
    g = np.random.RandomState(8).normal(size=(4, 3)).astype(np.float32)
    t = mx.nd.sparse.dot(a, mx.nd.array(g), transpose_a=True)
    assert t.stype == "row_sparse"
    np.testing.assert_allclose(t.asnumpy(), m.T @ g, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(t.indices.asnumpy(), np.unique(m.indices))
    lhs = np.random.RandomState(9).normal(size=(2, 4)).astype(np.float32)
    u = mx.nd.sparse.dot(mx.nd.array(lhs), a)
    assert u.stype == "csr"
    np.testing.assert_allclose(u.asnumpy(), lhs @ x, rtol=1e-5, atol=1e-6)


def test_sum_mean_where_and_fallback_dense():
    x = _dense(10)
    a = mx.nd.array(x).tostype("csr")
    np.testing.assert_allclose(mx.nd.sum(a, axis=0).asnumpy(), x.sum(axis=0), rtol=1e-6)
    np.testing.assert_allclose(mx.nd.mean(a, axis=1).asnumpy(), x.mean(axis=1), rtol=1e-6)
    cond = mx.nd.array(x > 0).tostype("csr")
    out = mx.nd.sparse.where(cond, mx.nd.ones(x.shape), mx.nd.zeros(x.shape))
    assert out.stype == "default"
    np.testing.assert_array_equal(out.asnumpy(), (x > 0).astype(np.float32))


def test_getnnz_counts_stored_values():
    m = sps.random(5, 7, density=0.4, format="csr", random_state=3)
    a = mx.nd.sparse.csr_matrix(m)
    assert mx.nd.contrib.getnnz(a).asnumpy().tolist() == [m.nnz]
    np.testing.assert_array_equal(mx.nd.contrib.getnnz(a, axis=1).asnumpy(),
                                  m.getnnz(axis=1))
    with pytest.raises(MXNetError):
        mx.nd.contrib.getnnz(mx.nd.ones((2, 2)))


def test_retain_and_zeros_like():
    x = _dense(11)
    r = mx.nd.array(x).tostype("row_sparse")
    kept = mx.nd.sparse.retain(r, mx.nd.array([0, 1, 2], dtype="int64"))
    want = x.copy()
    want[3:] = 0
    np.testing.assert_array_equal(kept.asnumpy(), want)
    z = mx.nd.zeros_like(r)
    assert z.stype == "row_sparse" and z.indices.shape == (0,)


# --- save / load: byte-compatible with MXNet 1.9.1 ---------------------------------------
def test_load_files_written_by_mxnet():
    ref = np.load(os.path.join(FIXTURES, "sparse_dense_ref.npy"))
    d = mx.nd.load(os.path.join(FIXTURES, "sparse_mx191.nd"))
    assert d["csr"].stype == "csr" and d["rsp"].stype == "row_sparse"
    np.testing.assert_array_equal(d["csr"].asnumpy(), ref)
    np.testing.assert_array_equal(d["rsp"].asnumpy(), ref)
    assert d["rsp64"].dtype == np.float64
    assert d["rsp_empty_3d"].shape == (4, 2, 3)
    np.testing.assert_array_equal(d["csr"].asscipy().indptr, sps.csr_matrix(ref).indptr)


@pytest.mark.parametrize("name", ["sparse_mx191.nd", "sparse_list_mx191.nd"])
def test_save_writes_mxnet_bytes(name):
    path = os.path.join(FIXTURES, name)
    from mxnet.ndarray.serialization import dumps
    with open(path, "rb") as f:
        raw = f.read()
    assert dumps(mx.nd.load(path)) == raw


# --- gradients and optimizers --------------------------------------------------------------
def test_embedding_sparse_grad_is_row_sparse():
    w = mx.nd.array(np.random.RandomState(12).normal(size=(10, 3)))
    w.attach_grad(stype="row_sparse")
    idx = mx.nd.array([1, 3, 3])
    with mx.autograd.record():
        y = mx.nd.Embedding(idx, w, input_dim=10, output_dim=3, sparse_grad=True)
    y.backward()
    assert w.grad.stype == "row_sparse"
    np.testing.assert_array_equal(w.grad.indices.asnumpy(), [1, 3])
    want = np.zeros((10, 3), np.float32)
    np.add.at(want, [1, 3, 3], 1.0)
    np.testing.assert_array_equal(w.grad.asnumpy(), want)


def test_lazy_sgd_touches_only_present_rows():
    rs = np.random.RandomState(13)
    w0 = rs.normal(size=(6, 2)).astype(np.float32)
    gv = rs.normal(size=(2, 2)).astype(np.float32)
    w = mx.nd.array(w0)
    g = mx.nd.sparse.row_sparse_array((gv, [1, 4]), shape=(6, 2))
    mx.nd.sparse.sgd_update(w, g, lr=0.5, wd=0.1, out=w)
    want = w0.copy()
    want[[1, 4]] = (1 - 0.5 * 0.1) * w0[[1, 4]] - 0.5 * gv
    np.testing.assert_allclose(w.asnumpy(), want, rtol=1e-6)
    # lazy_update=False: the standard rule, weight decay on every row
    w = mx.nd.array(w0)
    mx.nd.sgd_update(w, g, lr=0.5, wd=0.1, lazy_update=False, out=w)
    dense_g = np.zeros_like(w0)
    dense_g[[1, 4]] = gv
    np.testing.assert_allclose(w.asnumpy(), (1 - 0.05) * w0 - 0.5 * dense_g, rtol=1e-6)


def test_lazy_adam_updates_state_rows_only():
    rs = np.random.RandomState(14)
    w0 = rs.normal(size=(5, 3)).astype(np.float32)
    gv = rs.normal(size=(1, 3)).astype(np.float32)
    w, mean, var = mx.nd.array(w0), mx.nd.zeros((5, 3)), mx.nd.zeros((5, 3))
    g = mx.nd.sparse.row_sparse_array((gv, [2]), shape=(5, 3))
    mx.nd.sparse.adam_update(w, g, mean, var, lr=0.1, out=w)
    m = 0.1 * gv
    v = 0.001 * gv * gv
    want = w0.copy()
    want[2] = w0[2] - 0.1 * m / (np.sqrt(v) + 1e-8)
    np.testing.assert_allclose(w.asnumpy(), want, rtol=1e-5)
    assert np.count_nonzero(mean.asnumpy()) == np.count_nonzero(gv)


@pytest.mark.parametrize("kw,rhs", [({}, (4, 2)), ({"transpose_a": True}, (3, 2)),
                                    ({"transpose_b": True}, (2, 4))])
def test_sparse_dot_shape_mismatch_is_an_mxnet_error(kw, rhs):
    # MXNet 1.9.1: "dot shape error: [4,3] X [4,2]" is an MXNetError (here SciPy's
    # ValueError leaked before)
    c = mx.nd.array(np.eye(4, 3)).tostype("csr")
    with pytest.raises(MXNetError):
        mx.nd.sparse.dot(c, mx.nd.ones(rhs), **kw).wait_to_read()
    with pytest.raises(MXNetError):
        mx.nd.sparse.dot(mx.nd.ones((2, 5)), c, **kw).wait_to_read()
