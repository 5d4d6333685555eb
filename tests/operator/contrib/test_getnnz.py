"""_contrib_getnnz (mx.nd.contrib.getnnz / mx.sym.contrib.getnnz): stored-value counts
of csr arrays against scipy.sparse, MXNet 1.9.1's axis rule and its refusal of dense
input."""
import numpy as np
import pytest
import scipy.sparse as sps

import mxnet as mx
from mxnet.base import MXNetError
from opcheck import Case, check


def _csr():
    m = sps.random(6, 5, density=0.4, format="csr", random_state=3, dtype=np.float32)
    return m, mx.nd.sparse.csr_matrix((m.data, m.indices, m.indptr), shape=m.shape)


@pytest.mark.parametrize("axis", [None, 1])
def test_getnnz_dense_body(axis):
    x = np.array([[1.0, 0, 2], [0, 0, 0], [3, 4, 0]])
    ref = (lambda a: np.array([np.count_nonzero(a)])) if axis is None else \
        (lambda a: np.count_nonzero(a, axis=1))
    check(Case("_internal._contrib_getnnz", ref, kwargs={"axis": axis}, ref_kwargs=False,
               inputs=[x], grad=False, out_dtype=lambda d: "int64"))


def test_getnnz_counts_stored_values():
    m, a = _csr()
    tot = mx.nd.contrib.getnnz(a)
    assert tot.dtype == np.int64 and tot.asnumpy().tolist() == [m.nnz]
    np.testing.assert_array_equal(mx.nd.contrib.getnnz(a, axis=1).asnumpy(), m.getnnz(axis=1))
    # an explicitly stored zero is a stored value
    z = mx.nd.sparse.csr_matrix((np.array([0.0, 5.0], np.float32), np.array([0, 2]),
                                 np.array([0, 2, 2])), shape=(2, 3))
    assert mx.nd.contrib.getnnz(z).asnumpy().tolist() == [2]


def test_getnnz_symbolic():
    m, a = _csr()
    s = mx.sym.contrib.getnnz(mx.sym.var("x", stype="csr"), axis=1)
    out = s.bind(mx.cpu(), {"x": a}).forward()[0]
    np.testing.assert_array_equal(out.asnumpy(), m.getnnz(axis=1))
    assert s.infer_type(x="float32")[1] == [np.int64]


def test_getnnz_errors():
    _, a = _csr()
    with pytest.raises(MXNetError, match="csr"):
        mx.nd.contrib.getnnz(a.tostype("default"))
    with pytest.raises(MXNetError, match="axis"):
        mx.nd.contrib.getnnz(a, axis=0).asnumpy()
