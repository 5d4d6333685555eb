"""mx.nd.contrib's graph functions on csr adjacency matrices (MXNet's DGL operators):
``edge_id``, ``dgl_adjacency``, ``dgl_subgraph``, the neighbour samplers
``dgl_csr_neighbor_uniform_sample`` / ``dgl_csr_neighbor_non_uniform_sample`` and
``dgl_graph_compact``, computed from the csr structure with NumPy (explicitly stored
zeros are edges, as in MXNet). Imperative only: their symbolic forms are not
implemented."""
import logging

import numpy as np

from ..base import MXNetError
from ..operator import sparse_values as sv

__all__ = ["edge_id", "dgl_adjacency", "dgl_subgraph", "dgl_csr_neighbor_uniform_sample",
           "dgl_csr_neighbor_non_uniform_sample", "dgl_graph_compact"]

_logger = logging.getLogger(__name__)


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


# --- neighbour sampling ---------------------------------------------------------------

def _int_array(arr, what, label):
    """A 1-D int64 copy of an NDArray of vertex ids, refusing other dtypes and ranks
    (MXNet reads these buffers as int64 and fails or crashes on anything else)."""
    from .ndarray import NDArray
    if not isinstance(arr, NDArray):
        raise MXNetError(f"{what}: {label} must be an NDArray, got {type(arr).__name__}")
    if not np.issubdtype(np.dtype(arr.dtype), np.integer):
        raise MXNetError(f"{what}: {label} must hold integer (int64) vertex ids, got "
                         f"dtype {np.dtype(arr.dtype).name}")
    if arr.ndim != 1:
        raise MXNetError(f"{what}: {label} must be 1-D, got shape {arr.shape}")
    return arr.asnumpy().astype(np.int64)


def _count(value, what, name, minimum):
    try:
        v = int(value)
    except (TypeError, ValueError):
        raise MXNetError(f"{what}: {name} must be an integer, got {value!r}") from None
    if v != value or v < minimum:
        raise MXNetError(f"{what}: {name} must be an integer >= {minimum}, got {value!r}")
    return v


def _host_rng(ctx, what):
    """The generator of ctx (the one ``mx.random.seed`` seeds), once the random operators
    already pushed on it have drawn: this sampler draws synchronously, so it must come
    after them in the generator's sequence for a seed to reproduce the whole run."""
    from .. import engine
    from ..resource import get_rng, rng_var
    if ctx.device_typeid == 2:
        # MXNet 1.9.1 registers the sampling kernels for cpu only
        raise MXNetError(f"{what}: this operator runs on cpu only (as in MXNet 1.9.1); "
                         f"the graph is on {ctx}")
    var = rng_var(ctx)
    if var.num_pending:
        engine.get().wait_quietly(var)
    return get_rng(ctx)


def _pick_uniform(deg, k, rng, weights):
    """Positions (ascending, so each row keeps the graph's entry order) of the
    neighbours sampled from a row of ``deg`` entries: all of them when deg <= k, as in
    MXNet; else k distinct ones, uniformly."""
    if deg <= k:
        return np.arange(deg)
    return np.sort(rng.choice(deg, size=k, replace=False))


def _pick_weighted(deg, k, rng, weights):
    """As _pick_uniform, but the k draws are without replacement, each proportional to
    the remaining neighbours' probabilities (Efraimidis-Spirakis keys log(u)/w: the
    k largest keys are such a draw). Zero-probability neighbours are only taken when
    fewer than k neighbours have a positive probability (MXNet's own result is
    undefined there); they fill the remaining places uniformly."""
    if deg <= k:
        return np.arange(deg)
    pos = np.flatnonzero(weights > 0)
    if len(pos) >= k:
        # 1 - u lies in (0, 1], so the log is finite or 0: no -inf ties to break
        keys = np.log1p(-rng.random(len(pos))) / weights[pos]
        chosen = pos[np.argpartition(-keys, k - 1)[:k]]
    else:
        zeros = np.flatnonzero(weights <= 0)
        chosen = np.concatenate([pos, rng.choice(zeros, size=k - len(pos), replace=False)])
    return np.sort(chosen)


def _sample_subgraph(g, seeds, vprob, num_hops, num_neighbor, max_v, rng):
    """One seed array's breadth-first sample; returns (vertex ids, their layers, sampled
    columns per sampled vertex, truncated?)."""
    indptr, indices, eids = g.indptr, g.indices, g.data
    layer = {}
    order = []                 # the queue, in discovery order (seeds first)
    for s in seeds.tolist():   # a repeated seed counts once, as in MXNet
        if s not in layer:
            layer[s] = 0
            order.append(s)
    pick = _pick_uniform if vprob is None else _pick_weighted
    edges = {}                 # expanded vertex -> (columns, edge ids) kept
    truncated = False
    head = 0
    # As in MXNet, expansion stops as soon as the subgraph holds max_num_vertices
    # vertices, even for vertices already queued (their rows stay empty).
    while head < len(order) and len(layer) < max_v:
        v = order[head]
        head += 1
        lv = layer[v]
        if lv >= num_hops:
            continue
        lo, hi = int(indptr[v]), int(indptr[v + 1])
        w = None if vprob is None else vprob[indices[lo:hi]]
        sel = lo + pick(hi - lo, num_neighbor, rng, w)
        cols, ids = indices[sel], eids[sel]
        keep = np.ones(len(sel), bool)
        for j, c in enumerate(cols.tolist()):
            if c in layer:
                continue
            if len(layer) < max_v:
                layer[c] = lv + 1
                order.append(c)
            else:
                # MXNet keeps such an edge to a vertex outside the subgraph, which
                # dgl_graph_compact then cannot renumber (it aborts); it is dropped here
                keep[j] = False
                truncated = True
        edges[v] = (cols[keep], ids[keep])
    truncated = truncated or any(layer[u] < num_hops for u in order[head:])
    vids = np.array(sorted(order), dtype=np.int64)
    layers = np.array([layer[u] for u in vids.tolist()], dtype=np.int64)
    return vids, layers, edges, truncated


def _neighbor_sample(what, graph, vprob_arr, seed_arrays, num_args, num_hops, num_neighbor,
                     max_num_vertices, out, n_fixed):
    """Shared body of the two samplers: checks, then per seed array the sample and its
    outputs, grouped as MXNet returns them (all vertex arrays, all csr matrices, [all
    probability arrays,] all layer arrays)."""
    if out is not None:
        raise MXNetError(f"{what}: out= is not supported (the outputs' shapes depend on "
                         "max_num_vertices); use the returned arrays")
    if not seed_arrays:
        raise MXNetError(f"{what}: give at least one seed array")
    if num_args is not None and _count(num_args, what, "num_args", n_fixed + 1) != \
            n_fixed + len(seed_arrays):
        fixed = "the graph, the probability" if n_fixed == 2 else "the graph"
        raise MXNetError(f"{what}: num_args={num_args} but {n_fixed + len(seed_arrays)} "
                         f"inputs were given ({fixed} and {len(seed_arrays)} seed "
                         "array(s))")
    num_hops = _count(num_hops, what, "num_hops", 0)
    num_neighbor = _count(num_neighbor, what, "num_neighbor", 0)
    max_v = _count(max_num_vertices, what, "max_num_vertices", 0)
    g = _graph(graph, what)
    n = g.shape[0]
    if g.shape[0] != g.shape[1]:
        raise MXNetError(f"{what}: the graph's csr matrix must be square (one row and "
                         f"one column per vertex), got shape {g.shape}")
    if not np.issubdtype(g.dtype, np.integer):
        raise MXNetError(f"{what}: the graph must store integer (int64) edge ids, got "
                         f"dtype {g.dtype.name}")
    vprob = None
    if vprob_arr is not None:
        from .ndarray import NDArray
        if not isinstance(vprob_arr, NDArray) or vprob_arr.stype != "default":
            raise MXNetError(f"{what}: probability must be a dense NDArray")
        if np.dtype(vprob_arr.dtype) != np.float32:
            raise MXNetError(f"{what}: probability must be float32 (as in MXNet), got "
                             f"dtype {np.dtype(vprob_arr.dtype).name}")
        if vprob_arr.shape != (n,):
            raise MXNetError(f"{what}: probability needs one value per vertex, shape "
                             f"({n},), got {vprob_arr.shape}")
        vprob = vprob_arr.asnumpy()
        if not np.all(np.isfinite(vprob)) or np.any(vprob < 0):
            raise MXNetError(f"{what}: probability must be finite and non-negative")
    seeds_all = []
    for i, arr in enumerate(seed_arrays):
        seeds = _int_array(arr, what, f"seed array {i}")
        if len(seeds) and (seeds.min() < 0 or seeds.max() >= n):
            raise MXNetError(f"{what}: seed array {i} holds vertex ids outside [0, {n}): "
                             f"{seeds[(seeds < 0) | (seeds >= n)][:5].tolist()}")
        if len(seeds) > max_v:
            raise MXNetError(f"{what}: seed array {i} has {len(seeds)} seeds, more than "
                             f"max_num_vertices={max_v}")
        seeds_all.append(seeds)
    ctx = graph.context
    rng = _host_rng(ctx, what)
    g_ids = sv.CSR(g.data.astype(np.int64, copy=False), g.indices.astype(np.int64),
                   g.indptr.astype(np.int64), g.shape)
    from .ndarray import from_data
    vid_outs, csr_outs, prob_outs, layer_outs = [], [], [], []
    for seeds in seeds_all:
        vids, layers, edges, truncated = _sample_subgraph(
            g_ids, seeds, vprob, num_hops, num_neighbor, max_v, rng)
        if truncated:
            _logger.warning("%s: the sampling is truncated because the subgraph reached "
                            "max_num_vertices=%d; use fewer seeds or a smaller "
                            "neighbourhood", what, max_v)
        k = len(vids)
        # Entries past the k valid ones are unspecified in MXNet (left uninitialised);
        # here they are 0. The vertex array's extra last element holds k.
        vid_out = np.zeros(max_v + 1, np.int64)
        vid_out[:k], vid_out[max_v] = vids, k
        layer_out = np.zeros(max_v, np.int64)
        layer_out[:k] = layers
        empty = np.zeros(0, np.int64)
        rows = [edges.get(v, (empty, empty)) for v in vids.tolist()]
        counts = np.array([len(c) for c, _ in rows], dtype=np.int64)
        indptr = np.zeros(max_v + 1, np.int64)
        indptr[1:k + 1] = np.cumsum(counts)
        indptr[k + 1:] = indptr[k]
        cols = np.concatenate([c for c, _ in rows]) if rows else empty
        ids = np.concatenate([e for _, e in rows]) if rows else empty
        # rows: the sampled vertices in vid_out's order; columns: the original vertex
        # ids (dgl_graph_compact renumbers them); values: the original edge ids
        vid_outs.append(from_data(vid_out, ctx))
        csr_outs.append(_new_csr(ids.astype(np.int64), cols, indptr, (max_v, n), ctx))
        layer_outs.append(from_data(layer_out, ctx))
        if vprob is not None:
            prob_out = np.zeros(max_v, np.float32)
            prob_out[:k] = vprob[vids]
            prob_outs.append(from_data(prob_out, ctx))
    return vid_outs + csr_outs + prob_outs + layer_outs


def dgl_csr_neighbor_uniform_sample(csr_matrix=None, *seed_arrays, num_args=None, num_hops=1,
                                    num_neighbor=2, max_num_vertices=100, out=None,
                                    name=None, **kwargs):
    """Sample subgraphs of a csr graph by uniform neighbour sampling (MXNet's DGL
    operator ``_contrib_dgl_csr_neighbor_uniform_sample``).

    For each seed array: starting from the seed vertices (layer 0), breadth first,
    every vertex of a layer below ``num_hops`` has up to ``num_neighbor`` of its
    neighbours (the columns of its row) sampled uniformly without replacement (all of
    them when it has no more); sampled neighbours not yet in the subgraph join it one
    layer further, until it holds ``max_num_vertices`` vertices.

    Parameters
    ----------
    csr_matrix : CSRNDArray
        The graph: a square csr matrix whose stored values are (int64) edge ids.
    seed_arrays : NDArray[]
        1-D int64 arrays of seed vertices, one subgraph per array.
    num_args : int, optional
        The number of inputs (1 + the number of seed arrays); inferred when omitted.
    num_hops : int, optional, default=1
        Number of hops.
    num_neighbor : int, optional, default=2
        Number of neighbors sampled per vertex.
    max_num_vertices : int, optional, default=100
        Max number of vertices of a subgraph.

    Returns
    -------
    list of NDArrays, three sets each with one array per seed array:
        1) the sampled vertex ids, int64 of length max_num_vertices + 1: the k vertices
        in ascending order, then padding (0 here; unspecified in MXNet), the last
        element holding k; 2) the sampled edges, a CSRNDArray of shape
        (max_num_vertices, number of vertices) whose row i lists the sampled
        neighbours of the i-th vertex (original vertex ids as columns, original edge
        ids as values; rows past k are empty); 3) the layer (hop) at which each vertex
        was reached, int64 of length max_num_vertices.

    The draws come from the context's generator, so ``mx.random.seed`` reproduces a
    sample (MXNet seeds them from the clock). Unlike MXNet, a sampled edge whose
    neighbour no longer fits into the subgraph is left out, so every edge joins two
    of the subgraph's vertices.
    """
    return _neighbor_sample("dgl_csr_neighbor_uniform_sample", csr_matrix, None, seed_arrays,
                            num_args, num_hops, num_neighbor, max_num_vertices, out, 1)


def dgl_csr_neighbor_non_uniform_sample(csr_matrix=None, probability=None, *seed_arrays,
                                        num_args=None, num_hops=1, num_neighbor=2,
                                        max_num_vertices=100, out=None, name=None,
                                        **kwargs):
    """Sample subgraphs of a csr graph by non-uniform neighbour sampling (MXNet's DGL
    operator ``_contrib_dgl_csr_neighbor_non_uniform_sample``).

    As ``dgl_csr_neighbor_uniform_sample``, but a vertex with more than
    ``num_neighbor`` neighbours draws them without replacement, each draw
    proportional to the ``probability`` of the remaining neighbours; neighbours of
    probability 0 are only taken when fewer than ``num_neighbor`` neighbours have a
    positive one.

    Parameters
    ----------
    csr_matrix : CSRNDArray
        The graph: a square csr matrix whose stored values are (int64) edge ids.
    probability : NDArray
        float32, one non-negative weight per vertex.
    seed_arrays : NDArray[]
        1-D int64 arrays of seed vertices, one subgraph per array.
    num_args : int, optional
        The number of inputs (2 + the number of seed arrays); inferred when omitted.
    num_hops : int, optional, default=1
        Number of hops.
    num_neighbor : int, optional, default=2
        Number of neighbors sampled per vertex.
    max_num_vertices : int, optional, default=100
        Max number of vertices of a subgraph.

    Returns
    -------
    list of NDArrays, four sets each with one array per seed array: the sampled
    vertex ids, the sampled edges (csr) and the layers as in the uniform sampler,
    and, third, the probability of each sampled vertex (float32 of length
    max_num_vertices, valid for the first k entries).
    """
    if probability is None:
        raise MXNetError("dgl_csr_neighbor_non_uniform_sample: the probability input (one "
                         "float32 weight per vertex) is missing")
    return _neighbor_sample("dgl_csr_neighbor_non_uniform_sample", csr_matrix, probability,
                            seed_arrays, num_args, num_hops, num_neighbor,
                            max_num_vertices, out, 2)


def dgl_graph_compact(*graph_data, return_mapping=None, graph_sizes=None, num_args=None,
                      out=None, name=None, **kwargs):
    """Compact the csr matrices the DGL samplers produce (MXNet's
    ``_contrib_dgl_graph_compact``): keep the first ``graph_sizes[i]`` rows of the i-th
    graph and renumber its columns (original vertex ids) to positions in its vertex
    array, giving a square (size, size) csr matrix whose values are new edge ids
    0..m-1.

    Parameters
    ----------
    graph_data : NDArray[]
        The sampled csr matrices, then their vertex arrays (as the samplers return
        them: the last element of a vertex array is its number of vertices).
    return_mapping : bool, required
        Also return, per graph, the same structure holding the original edge ids
        (MXNet 1.9.1 returns empty matrices there).
    graph_sizes : tuple of int, required
        The number of vertices of each graph.
    num_args : int, optional
        The number of inputs; inferred when omitted.

    Returns
    -------
    The compacted matrices, then (return_mapping) the mappings; a single array when
    that makes one result.
    """
    what = "dgl_graph_compact"
    if return_mapping is None:
        raise MXNetError(f"{what}: required parameter return_mapping (a bool) is missing")
    if graph_sizes is None:
        raise MXNetError(f"{what}: required parameter graph_sizes (a tuple of int) is "
                         "missing")
    if out is not None:
        raise MXNetError(f"{what}: out= is not supported; use the returned arrays")
    if len(graph_data) < 2 or len(graph_data) % 2:
        raise MXNetError(f"{what}: give the graphs then their vertex arrays (an even "
                         f"number of at least 2 inputs), got {len(graph_data)}")
    if num_args is not None and _count(num_args, what, "num_args", 2) != len(graph_data):
        raise MXNetError(f"{what}: num_args={num_args} but {len(graph_data)} inputs were "
                         "given")
    n_graphs = len(graph_data) // 2
    sizes = np.asarray(graph_sizes).ravel()
    if len(sizes) < n_graphs:
        raise MXNetError(f"{what}: graph_sizes has {len(sizes)} entries for {n_graphs} "
                         "graphs")
    subs, maps = [], []
    for i in range(n_graphs):
        graph, vert = graph_data[i], graph_data[n_graphs + i]
        g = _graph(graph, what)
        size = _count(sizes[i], what, f"graph_sizes[{i}]", 0)
        vids = _int_array(vert, what, f"vertex array {i}")
        if len(vids) < size + 1 or vids[-1] != size:
            raise MXNetError(f"{what}: graph_sizes[{i}]={size} must be the vertex count "
                             "stored in the last element of its vertex array, which "
                             f"holds {vids[-1] if len(vids) else 'nothing'}")
        if size > g.shape[0] or size > g.shape[1]:
            raise MXNetError(f"{what}: graph_sizes[{i}]={size} exceeds the graph's shape "
                             f"{g.shape}")
        indptr = g.indptr[:size + 1].astype(np.int64)
        nnz = int(indptr[-1])
        members = vids[:size]
        order = np.argsort(members, kind="stable")
        cols = g.indices[:nnz].astype(np.int64)
        at = np.minimum(np.searchsorted(members[order], cols), max(size - 1, 0))
        found = (members[order][at] == cols) if size else np.zeros(nnz, bool)
        if not np.all(found):
            raise MXNetError(f"{what}: graph {i} has edges to vertices missing from its "
                             f"vertex array: {np.unique(cols[~found])[:5].tolist()}")
        new_cols = order[at]
        subs.append(_new_csr(np.arange(nnz, dtype=np.int64), new_cols, indptr.copy(),
                             (size, size), graph.context))
        if return_mapping:
            maps.append(_new_csr(g.data[:nnz].astype(np.int64), new_cols.copy(),
                                 indptr.copy(), (size, size), graph.context))
    res = subs + maps
    return res[0] if len(res) == 1 else res
