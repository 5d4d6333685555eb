"""mx.nd.contrib's graph functions on csr adjacency matrices (MXNet's DGL operators):
``edge_id``, ``dgl_adjacency`` and ``dgl_subgraph``, computed from the csr structure
with NumPy (explicitly stored zeros are edges, as in MXNet). Imperative only; the
neighbour-sampling operators and their symbolic forms are not implemented."""
import numpy as np

from ..base import MXNetError
from ..operator import sparse_values as sv

__all__ = ["edge_id", "dgl_adjacency", "dgl_subgraph"]


def _graph(data, what):
    if getattr(data, "stype", None) != "csr":
        raise MXNetError(f"{what}: the graph must be a csr array, got storage type "
                         f"{getattr(data, 'stype', type(data).__name__)}")
    return data._read_value()


def _ids(arr):
    from .ndarray import NDArray
    return (arr.asnumpy() if isinstance(arr, NDArray) else np.asarray(arr)).astype(np.int64)


def _new_csr(data, indices, indptr, shape, ctx):
    from .sparse import _wrap
    return _wrap(sv.CSR(data, indices.astype(np.int64), indptr.astype(np.int64), shape),
                 ctx)


def edge_id(data=None, u=None, v=None, out=None, name=None, **kwargs):
    """For each pair (u[i], v[i]): the value the csr graph stores at that position (the
    edge id), or -1 where it stores none; u's shape, the graph's dtype."""
    g = _graph(data, "edge_id")
    uu, vv = _ids(u), _ids(v)
    if uu.shape != vv.shape:
        raise MXNetError(f"edge_id: u and v need one shape, got {uu.shape} and {vv.shape}")
    rows, cols = g.shape
    entry_rows = np.repeat(np.arange(rows, dtype=np.int64), np.diff(g.indptr))
    keys = entry_rows * cols + g.indices
    order = np.argsort(keys, kind="stable")
    keys = keys[order]
    want = uu.ravel() * cols + vv.ravel()
    at = np.minimum(np.searchsorted(keys, want), max(len(keys) - 1, 0))
    found = (len(keys) > 0) & (keys[at] == want) if len(keys) else np.zeros(want.shape, bool)
    res = np.full(want.shape, -1, dtype=g.dtype)
    if len(keys):
        res[found] = g.data[order[at[found]]]
    from .ndarray import from_data
    result = from_data(res.reshape(uu.shape), data.context)
    if out is not None:
        out[:] = result
        return out
    return result


def dgl_adjacency(data=None, out=None, name=None, **kwargs):
    """The graph's adjacency matrix: the same csr structure with every stored value 1
    (float32)."""
    g = _graph(data, "dgl_adjacency")
    return _new_csr(np.ones(g.data.shape, np.float32), g.indices.copy(), g.indptr.copy(),
                    g.shape, data.context)


def dgl_subgraph(graph=None, *vertices, return_mapping=None, num_args=None, out=None,
                 name=None, **kwargs):
    """The subgraphs induced by sorted vertex lists: for each list a csr matrix over
    the listed vertices (renumbered 0..k-1) whose values are new edge ids 0..m-1 in
    the order of its entries; with ``return_mapping`` also, per list, the same structure holding
    the original edge ids. One list without mapping: the array itself, else a list."""
    if return_mapping is None:
        raise MXNetError("dgl_subgraph: required parameter return_mapping (a bool) is "
                         "missing")
    if not vertices:
        raise MXNetError("dgl_subgraph: give at least one vertex list")
    g = _graph(graph, "dgl_subgraph")
    n = g.shape[0]
    subs, maps = [], []
    for vert in vertices:
        vids = _ids(vert).ravel()
        if np.any(np.diff(vids) < 0):
            raise MXNetError("dgl_subgraph: the input vertex list has to be sorted")
        if len(vids) and (vids[0] < 0 or vids[-1] >= n):
            raise MXNetError(f"dgl_subgraph: vertex ids must lie in [0, {n})")
        k = len(vids)
        pos = np.full(g.shape[1], -1, np.int64)
        pos[vids] = np.arange(k)
        counts = g.indptr[vids + 1] - g.indptr[vids]
        new_rows = np.repeat(np.arange(k, dtype=np.int64), counts)
        # the entries of the selected rows, row by row
        starts = np.repeat(g.indptr[vids] - np.r_[0, np.cumsum(counts)[:-1]], counts)
        entries = starts + np.arange(counts.sum(), dtype=np.int64)
        cols = pos[g.indices[entries]]
        keep = cols >= 0
        # rows in list order, each row's entries in the graph's own order
        new_rows, cols, orig = new_rows[keep], cols[keep], g.data[entries[keep]]
        indptr = np.r_[0, np.cumsum(np.bincount(new_rows, minlength=k))]
        ids = np.arange(len(cols)).astype(g.dtype)
        subs.append(_new_csr(ids, cols, indptr, (k, k), graph.context))
        if return_mapping:
            maps.append(_new_csr(orig.copy(), cols.copy(), indptr.copy(), (k, k),
                                 graph.context))
    res = subs + maps
    return res[0] if len(res) == 1 else res
