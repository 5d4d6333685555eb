"""KVStore with row_sparse values: push sums row_sparse gradients, row_sparse_pull
returns exactly the requested rows (NumPy reference), the optimizer on the store
updates only the rows a row_sparse gradient holds."""
import numpy as np
import pytest

import mxnet as mx
from mxnet.base import MXNetError


def _rsp(rows, values, shape):
    return mx.nd.sparse.row_sparse_array((np.asarray(values, np.float32), rows), shape=shape)


def test_push_sums_and_row_sparse_pull_selects_rows():
    kv = mx.kv.create("local")
    base = np.arange(12, dtype=np.float32).reshape(6, 2)
    kv.init("w", mx.nd.array(base).tostype("row_sparse"))
    g1, g2 = _rsp([2], [[1, 1]], (6, 2)), _rsp([2, 5], [[1, 2], [3, 4]], (6, 2))
    kv.push("w", [g1, g2])
    want = np.zeros((6, 2), np.float32)
    want[2] = [2, 3]
    want[5] = [3, 4]
    out = mx.nd.zeros((6, 2), stype="row_sparse")
    kv.row_sparse_pull("w", out=out, row_ids=mx.nd.array([5, 0, 5]))
    assert out.stype == "row_sparse"
    np.testing.assert_array_equal(out.indices.asnumpy(), [5])   # row 0 is not stored
    expect = np.zeros_like(want)
    expect[5] = want[5]
    np.testing.assert_array_equal(out.asnumpy(), expect)
    dense = mx.nd.zeros((6, 2))
    kv.pull("w", out=dense)
    np.testing.assert_array_equal(dense.asnumpy(), want)


def test_row_sparse_pull_refuses_dense_out():
    kv = mx.kv.create("local")
    kv.init(0, mx.nd.ones((3, 2)))
    with pytest.raises(MXNetError):
        kv.row_sparse_pull(0, out=mx.nd.zeros((3, 2)), row_ids=mx.nd.array([1]))


def test_store_optimizer_lazy_sgd():
    kv = mx.kv.create("local")
    w0 = np.random.RandomState(0).normal(size=(5, 3)).astype(np.float32)
    kv.init(0, mx.nd.array(w0))
    kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.5, wd=0.1))
    gv = np.ones((1, 3), np.float32)
    kv.push(0, _rsp([3], gv, (5, 3)))
    out = mx.nd.zeros((5, 3))
    kv.pull(0, out=out)
    want = w0.copy()
    want[3] = (1 - 0.05) * w0[3] - 0.5 * gv[0]
    np.testing.assert_allclose(out.asnumpy(), want, rtol=1e-6)
