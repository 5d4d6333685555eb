"""mx.nd.contrib.edge_id / dgl_adjacency / dgl_subgraph on csr graphs against dense
NumPy references (explicitly stored zeros are edges; a subgraph keeps each row's entry
order, as MXNet 1.9.1 does)."""
import numpy as np
import pytest

import mxnet as mx
from mxnet.base import MXNetError

# a 5-vertex graph whose rows list their columns unsorted; edge 0 is a stored zero
INDPTR = np.array([0, 3, 4, 6, 8, 9])
INDICES = np.array([3, 0, 2, 1, 2, 0, 4, 1, 3])
DATA = np.arange(9, dtype=np.int64)


def _graph():
    return mx.nd.sparse.csr_matrix((DATA, INDICES, INDPTR), shape=(5, 5), dtype=np.int64)


def _entries():
    """(row, col, value) of every stored entry, in storage order."""
    rows = np.repeat(np.arange(5), np.diff(INDPTR))
    return list(zip(rows, INDICES, DATA))


def test_edge_id():
    g = _graph()
    u = np.array([0, 0, 3, 1, 4, 2])
    v = np.array([3, 1, 1, 1, 3, 0])
    want = np.full(u.shape, -1, np.int64)
    for r, c, d in _entries():
        want[(u == r) & (v == c)] = d
    got = mx.nd.contrib.edge_id(g, mx.nd.array(u, dtype="int64"),
                                mx.nd.array(v, dtype="int64"))
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got.asnumpy(), want)
    assert got.asnumpy()[0] == 0                 # the stored zero is edge 0


def test_dgl_adjacency():
    adj = mx.nd.contrib.dgl_adjacency(_graph())
    assert adj.stype == "csr" and adj.dtype == np.float32
    np.testing.assert_array_equal(adj.indptr.asnumpy(), INDPTR)
    np.testing.assert_array_equal(adj.indices.asnumpy(), INDICES)
    np.testing.assert_array_equal(adj.data.asnumpy(), np.ones(9))


@pytest.mark.parametrize("vids", [[0, 2, 3], [1, 4], [0, 1, 2, 3, 4]])
def test_dgl_subgraph(vids):
    sub, mapping = mx.nd.contrib.dgl_subgraph(_graph(), mx.nd.array(vids, dtype="int64"),
                                              return_mapping=True)
    pos = {v: i for i, v in enumerate(vids)}
    kept = [(pos[r], pos[c], d) for r, c, d in _entries() if r in pos and c in pos]
    kept.sort(key=lambda e: e[0])                # stable: each row keeps its order
    np.testing.assert_array_equal(sub.indices.asnumpy(), [c for _, c, _ in kept])
    np.testing.assert_array_equal(sub.data.asnumpy(), np.arange(len(kept)))
    np.testing.assert_array_equal(mapping.data.asnumpy(), [d for _, _, d in kept])
    np.testing.assert_array_equal(sub.indptr.asnumpy(), mapping.indptr.asnumpy())
    counts = np.bincount([r for r, _, _ in kept], minlength=len(vids))
    np.testing.assert_array_equal(sub.indptr.asnumpy(), np.r_[0, np.cumsum(counts)])
    assert sub.shape == (len(vids), len(vids))


def test_dgl_subgraph_several_lists_and_errors():
    g = _graph()
    res = mx.nd.contrib.dgl_subgraph(g, mx.nd.array([0, 2], dtype="int64"),
                                     mx.nd.array([1, 3], dtype="int64"),
                                     return_mapping=False)
    assert isinstance(res, list) and len(res) == 2
    with pytest.raises(MXNetError, match="sorted"):
        mx.nd.contrib.dgl_subgraph(g, mx.nd.array([3, 0], dtype="int64"),
                                   return_mapping=False)
    with pytest.raises(MXNetError, match="return_mapping"):
        mx.nd.contrib.dgl_subgraph(g, mx.nd.array([0], dtype="int64"))
    with pytest.raises(MXNetError, match="csr"):
        mx.nd.contrib.edge_id(g.tostype("default"), mx.nd.array([0]), mx.nd.array([0]))
