"""cast_storage, _sparse_retain and _square_sum: their dense bodies (opcheck, numeric
gradients) and their sparse paths against NumPy/scipy."""
import numpy as np
import pytest
import scipy.sparse as sps

import mxnet as mx
from opcheck import Case, check


def test_cast_storage_default():
    x = np.random.RandomState(2).normal(size=(2, 3))
    check(Case("cast_storage", lambda a: a, kwargs={"stype": "default"}, ref_kwargs=False,
               inputs=[x]))


@pytest.mark.parametrize("stype", ["csr", "row_sparse"])
def test_cast_storage_sparse(stype):
    x = np.random.RandomState(3).normal(size=(4, 5)).astype(np.float32)
    x[x < 0.3] = 0
    y = mx.nd.cast_storage(mx.nd.array(x), stype=stype)
    assert y.stype == stype
    np.testing.assert_array_equal(y.asnumpy(), x)
    back = mx.nd.cast_storage(y, stype="default")
    assert back.stype == "default"
    np.testing.assert_array_equal(back.asnumpy(), x)


def _retain_ref(x, idx):
    keep = np.zeros(x.shape[0], bool)
    keep[idx.astype(int)] = True
    return x * keep[:, None]


def test_sparse_retain_dense_body():
    rs = np.random.RandomState(4)
    x = rs.normal(size=(5, 3))
    idx = np.array([0, 3])
    check(Case("_internal._sparse_retain", _retain_ref, inputs=[x, idx], grad_inputs=[0]))


def test_sparse_retain_row_sparse():
    x = np.arange(15, dtype=np.float32).reshape(5, 3)
    rsp = mx.nd.array(x).tostype("row_sparse")
    out = mx.nd.sparse.retain(rsp, mx.nd.array([1, 4], dtype="int64"))
    assert out.stype == "row_sparse"
    np.testing.assert_array_equal(out.indices.asnumpy(), [1, 4])
    np.testing.assert_array_equal(out.asnumpy(), _retain_ref(x, np.array([1, 4])))
    dense = mx.nd._internal._sparse_retain(mx.nd.array(x), mx.nd.array([1, 4]))
    assert dense.stype == "default"
    np.testing.assert_array_equal(dense.asnumpy(), out.asnumpy())


def test_sparse_retain_stores_the_requested_rows():
    # MXNet 1.9.1 (oracle): the result stores exactly the requested (sorted, unique) row
    # ids, a row the input does not store as zeros; an input with no stored row gives
    # an empty result
    x = np.array([[0, 1, 0], [2, 0, 3], [0, 0, 0], [4, 0, 0]], np.float32)
    rsp = mx.nd.array(x).tostype("row_sparse")          # stores rows 0, 1, 3
    out = mx.nd.sparse.retain(rsp, mx.nd.array([0, 2], dtype="int64"))
    assert out.indices.asnumpy().tolist() == [0, 2]
    assert out.data.asnumpy().tolist() == [[0, 1, 0], [0, 0, 0]]
    np.testing.assert_array_equal(out.asnumpy(), _retain_ref(x, np.array([0, 2])))
    out = mx.nd.sparse.retain(rsp, mx.nd.array([2]))
    assert out.indices.asnumpy().tolist() == [2] and out.data.shape == (1, 3)
    empty = mx.nd.sparse.retain(mx.nd.sparse.zeros("row_sparse", (4, 3)),
                                mx.nd.array([1, 2], dtype="int64"))
    assert empty.indices.shape == (0,) and empty.asnumpy().sum() == 0


@pytest.mark.parametrize("axis,keepdims", [(None, False), (0, False), (1, True)])
def test_square_sum_dense_body(axis, keepdims):
    x = np.random.RandomState(5).normal(size=(3, 4))
    check(Case("_internal._square_sum",
               lambda a: np.atleast_1d(np.sum(np.square(a), axis=axis, keepdims=keepdims)),
               kwargs={"axis": axis, "keepdims": keepdims}, ref_kwargs=False, inputs=[x]))


def test_square_sum_row_sparse():
    x = np.random.RandomState(6).normal(size=(6, 3)).astype(np.float32)
    x[[0, 2, 5]] = 0
    rsp = mx.nd.array(x).tostype("row_sparse")
    kept = mx.nd._internal._square_sum(rsp, axis=1, keepdims=True)
    assert kept.stype == "row_sparse"            # MXNet's storage inference
    np.testing.assert_allclose(kept.asnumpy(), np.sum(x * x, axis=1, keepdims=True),
                               rtol=1e-6)
    flat = mx.nd._internal._square_sum(rsp, axis=1)
    assert flat.stype == "default"
    np.testing.assert_allclose(flat.asnumpy(), np.sum(x * x, axis=1), rtol=1e-6)
    m = sps.csr_matrix(x)
    np.testing.assert_allclose(mx.nd._internal._square_sum(rsp, axis=0).asnumpy(),
                               np.asarray(m.multiply(m).sum(axis=0)).ravel(), rtol=1e-6)
