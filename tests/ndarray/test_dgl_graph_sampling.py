"""mx.nd.contrib.dgl_csr_neighbor_uniform_sample / dgl_csr_neighbor_non_uniform_sample
and dgl_graph_compact, checked against the input graph itself: every sampled edge is an
edge of the graph with its edge id, a vertex has at most num_neighbor sampled
neighbours (exactly min(degree, num_neighbor) when nothing truncates), the layers are
the breadth-first distances from the seeds over the sampled edges, the counts and
padding agree, and the draws follow the stated distributions and mx.random.seed.
Output layouts (grouping, shapes, dtypes, the count in the last element, truncation at
max_num_vertices) are those MXNet 1.9.1 gives."""
import itertools
from collections import deque

import numpy as np
import pytest

import mxnet as mx
from mxnet.base import MXNetError

U = mx.nd.contrib.dgl_csr_neighbor_uniform_sample
NU = mx.nd.contrib.dgl_csr_neighbor_non_uniform_sample


def _random_graph(n=30, density=0.25, seed=0):
    """(csr NDArray, {(row, col): edge id}, degrees): rows sorted, edge ids distinct
    and unrelated to positions (so a value mix-up shows)."""
    rs = np.random.RandomState(seed)
    dense = rs.rand(n, n) < density
    rows, cols = np.nonzero(dense)
    eids = rs.permutation(len(rows)).astype(np.int64) + 1000
    indptr = np.r_[0, np.cumsum(np.bincount(rows, minlength=n))]
    g = mx.nd.sparse.csr_matrix((eids, cols, indptr), shape=(n, n), dtype=np.int64)
    edges = {(int(r), int(c)): int(e) for r, c, e in zip(rows, cols, eids)}
    return g, edges, np.bincount(rows, minlength=n)


def _complete5():
    """MXNet's documentation graph: 5 vertices, every pair joined, edge ids 1..20."""
    indices = np.array([1, 2, 3, 4, 0, 2, 3, 4, 0, 1, 3, 4, 0, 1, 2, 4, 0, 1, 2, 3])
    return mx.nd.sparse.csr_matrix((np.arange(1, 21, dtype=np.int64), indices,
                                    np.arange(0, 21, 4)), shape=(5, 5), dtype=np.int64)


def _seeds(*v):
    return mx.nd.array(v, dtype=np.int64)


def _check(vid_nd, sub, layer_nd, edges, degree, seeds, num_hops, num_neighbor, max_v,
           prob_nd=None, vprob=None):
    """Every property of one seed array's sample; returns (k, {vertex: layer},
    [(row vertex, col vertex)])."""
    n = len(degree)
    vid, layer = vid_nd.asnumpy(), layer_nd.asnumpy()
    assert vid.dtype == np.int64 and vid.shape == (max_v + 1,)
    assert layer.dtype == np.int64 and layer.shape == (max_v,)
    k = int(vid[-1])
    assert 0 < k <= max_v
    ids = vid[:k]
    assert np.all(np.diff(ids) > 0) and ids[0] >= 0 and ids[-1] < n
    assert np.all(vid[k:max_v] == 0) and np.all(layer[k:] == 0)
    assert set(seeds) <= set(ids.tolist())
    lay = dict(zip(ids.tolist(), layer[:k].tolist()))
    assert all(lay[s] == 0 for s in seeds)
    assert all(0 <= v <= num_hops for v in lay.values())
    # the sampled edges: shape, format, empty rows past k, real edges with their ids
    assert sub.stype == "csr" and sub.shape == (max_v, n) and sub.dtype == np.int64
    sub.check_format(full_check=True)
    indptr, cols, vals = sub.indptr.asnumpy(), sub.indices.asnumpy(), sub.data.asnumpy()
    assert np.all(indptr[k:] == indptr[k])
    sampled = []
    for i, u in enumerate(ids.tolist()):
        row = cols[indptr[i]:indptr[i + 1]].tolist()
        for c, e in zip(row, vals[indptr[i]:indptr[i + 1]].tolist()):
            assert edges.get((u, c)) == e           # an edge of the graph, its id
            assert c in lay                         # both ends are in the subgraph
            sampled.append((u, c))
        assert len(row) <= num_neighbor
        if row:
            assert lay[u] < num_hops                # the last layer is not expanded
    # layers are breadth-first distances from the seeds over the sampled edges
    dist = {s: 0 for s in seeds}
    queue = deque(dict.fromkeys(seeds))
    out_of = {}
    for u, c in sampled:
        out_of.setdefault(u, []).append(c)
    while queue:
        u = queue.popleft()
        for c in out_of.get(u, ()):
            if c not in dist:
                dist[c] = dist[u] + 1
                queue.append(c)
    assert dist == lay
    if prob_nd is not None:
        prob = prob_nd.asnumpy()
        assert prob.dtype == np.float32 and prob.shape == (max_v,)
        np.testing.assert_array_equal(prob[:k], vprob[ids])
        assert np.all(prob[k:] == 0)
    return k, lay, sampled


@pytest.mark.parametrize("non_uniform", [False, True])
@pytest.mark.parametrize("num_hops,num_neighbor", [(1, 1), (1, 3), (2, 2), (3, 1), (3, 4)])
def test_sample_is_a_breadth_first_neighbourhood(non_uniform, num_hops, num_neighbor):
    g, edges, degree = _random_graph()
    vprob = np.random.RandomState(1).rand(len(degree)).astype(np.float32) + 0.05
    seed_sets = [[4], [0, 7, 19], [29, 3, 3, 12]]
    max_v = 31       # more than the graph's 30 vertices: nothing truncates
    arrays = [_seeds(*s) for s in seed_sets]
    if non_uniform:
        out = NU(g, mx.nd.array(vprob), *arrays, num_args=2 + len(arrays),
                 num_hops=num_hops, num_neighbor=num_neighbor, max_num_vertices=max_v)
    else:
        out = U(g, *arrays, num_args=1 + len(arrays), num_hops=num_hops,
                num_neighbor=num_neighbor, max_num_vertices=max_v)
    m = len(seed_sets)
    assert len(out) == (4 if non_uniform else 3) * m
    for j, seeds in enumerate(seed_sets):
        prob = out[2 * m + j] if non_uniform else None
        k, lay, sampled = _check(out[j], out[m + j], out[-m + j], edges, degree, seeds,
                                 num_hops, num_neighbor, max_v, prob, vprob)
        # untruncated: every vertex below the last layer got min(degree, num_neighbor)
        per_row = {}
        for u, _ in sampled:
            per_row[u] = per_row.get(u, 0) + 1
        for u, layer in lay.items():
            want = min(degree[u], num_neighbor) if layer < num_hops else 0
            assert per_row.get(u, 0) == want


def test_truncation_at_max_num_vertices():
    g = _complete5()
    deg = np.full(5, 4)
    edges = {(r, c): None for r in range(5) for c in range(5) if r != c}
    for (r, c) in edges:
        edges[(r, c)] = 1 + 4 * r + (c if c < r else c - 1)
    # the seeds fill the subgraph: as in MXNet no vertex is expanded, no edge kept
    vid, sub, layer = U(g, _seeds(0, 1, 2, 3, 4), num_hops=1, num_neighbor=2,
                        max_num_vertices=5)
    np.testing.assert_array_equal(vid.asnumpy(), [0, 1, 2, 3, 4, 5])
    assert sub.indices.shape == (0,) and np.all(layer.asnumpy() == 0)
    for _ in range(20):
        # one neighbour per hop: 0 -> a, then a -> 0 (k = 2) or a -> b (k = 3)
        vid, sub, layer = U(g, _seeds(0), num_hops=2, num_neighbor=1, max_num_vertices=3)
        k, lay, sampled = _check(vid, sub, layer, edges, deg, [0], 2, 1, 3)
        assert sorted(lay.values()) == [0, 1, 2][:k] and len(sampled) == 2
        # room for one of the two sampled neighbours: the other edge is left out, so
        # the subgraph keeps only edges between its own vertices
        vid, sub, layer = U(g, _seeds(0), num_hops=1, num_neighbor=2, max_num_vertices=2)
        k, lay, sampled = _check(vid, sub, layer, edges, deg, [0], 1, 2, 2)
        assert k == 2 and len(sampled) == 1


def test_duplicate_seeds_count_once():
    g = _complete5()
    vid, sub, layer = U(g, _seeds(3, 3, 1), num_hops=1, num_neighbor=0, max_num_vertices=4)
    np.testing.assert_array_equal(vid.asnumpy(), [1, 3, 0, 0, 2])
    np.testing.assert_array_equal(layer.asnumpy(), [0, 0, 0, 0])
    assert sub.indices.shape == (0,)


def test_uniform_draws_are_uniform():
    # vertex 0 with 5 neighbours, 2 sampled: each is in the sample with probability 2/5
    g = mx.nd.sparse.csr_matrix((np.arange(5, dtype=np.int64), np.arange(1, 6),
                                 np.r_[0, 5, 5, 5, 5, 5, 5]), shape=(6, 6), dtype=np.int64)
    mx.random.seed(11)
    runs = 3000
    out = U(g, *[_seeds(0)] * runs, num_hops=1, num_neighbor=2, max_num_vertices=3)
    cols = np.stack([out[runs + i].indices.asnumpy() for i in range(runs)])
    assert cols.shape == (runs, 2) and np.all(cols[:, 0] < cols[:, 1])
    freq = np.bincount(cols.ravel(), minlength=6)[1:] / runs
    np.testing.assert_allclose(freq, 0.4, atol=0.04)


def test_non_uniform_draws_follow_the_probabilities():
    # vertex 0 with neighbours 1..4: two draws without replacement, each proportional
    # to the remaining weights; P({i, j}) = w_i/W * w_j/(W - w_i) + w_j/W * w_i/(W - w_j)
    w = np.array([0.0, 0.9, 0.8, 0.2, 0.4], np.float32)
    g = mx.nd.sparse.csr_matrix((np.arange(4, dtype=np.int64), np.arange(1, 5),
                                 np.r_[0, 4, 4, 4, 4, 4]), shape=(5, 5), dtype=np.int64)
    mx.random.seed(5)
    runs = 4000
    out = NU(g, mx.nd.array(w), *[_seeds(0)] * runs, num_hops=1, num_neighbor=2,
             max_num_vertices=3)
    pairs = [tuple(out[runs + i].indices.asnumpy().tolist()) for i in range(runs)]
    total = w.sum(dtype=np.float64)
    for i, j in itertools.combinations(range(1, 5), 2):
        want = (w[i] / total * w[j] / (total - w[i]) + w[j] / total * w[i] / (total - w[j]))
        assert abs(pairs.count((i, j)) / runs - want) < 0.035, (i, j)
    # the sampled vertices' probabilities come along
    np.testing.assert_array_equal(out[2 * runs].asnumpy()[:3],
                                  w[out[0].asnumpy()[:3]])


def test_zero_probability_neighbours():
    g, edges, degree = _random_graph(n=40, density=0.5, seed=3)
    vprob = np.random.RandomState(4).rand(40).astype(np.float32)
    vprob[::3] = 0                                   # a third of the vertices
    positive = vprob > 0
    indptr, indices = g.indptr.asnumpy(), g.indices.asnumpy()
    mx.random.seed(2)
    for v in range(40):
        row = indices[indptr[v]:indptr[v + 1]]
        n_pos = int(positive[row].sum())
        for _ in range(5):
            vid, sub, prob, layer = NU(g, mx.nd.array(vprob), _seeds(v), num_hops=1,
                                       num_neighbor=4, max_num_vertices=41)
            _check(vid, sub, layer, edges, degree, [v], 1, 4, 41, prob, vprob)
            got = sub.indices.asnumpy()
            assert len(got) == min(len(row), 4)
            if len(row) > 4:
                if n_pos >= 4:                       # never a zero-probability one
                    assert positive[got].all()
                else:                                # all positive ones, then fill
                    assert set(row[positive[row]]) <= set(got.tolist())


@pytest.mark.parametrize("non_uniform", [False, True])
def test_mx_random_seed_reproduces_the_sample(non_uniform):
    g, _, degree = _random_graph(n=60, density=0.4, seed=8)
    p = mx.nd.array(np.linspace(0.1, 1, 60))

    def draw():
        # a random operator queued on the same generator before the sample
        noise = mx.nd.random.uniform(shape=(50,)).asnumpy()
        seeds = [_seeds(1, 2), _seeds(30)]
        out = NU(g, p, *seeds, num_hops=2, num_neighbor=3, max_num_vertices=40) \
            if non_uniform else U(g, *seeds, num_hops=2, num_neighbor=3,
                                  max_num_vertices=40)
        return [noise] + [o.asnumpy() if o.stype == "default"
                          else np.r_[o.indptr.asnumpy(), o.indices.asnumpy()] for o in out]

    mx.random.seed(42)
    first = draw()
    mx.random.seed(42)
    again = draw()
    for a, b in zip(first, again):
        np.testing.assert_array_equal(a, b)
    mx.random.seed(43)
    other = draw()
    assert any(a.shape != b.shape or np.any(a != b) for a, b in zip(first[1:], other[1:]))


def test_compact_renumbers_a_sample():
    g, edges, degree = _random_graph()
    mx.random.seed(0)
    out = U(g, _seeds(2, 9), _seeds(17), num_hops=2, num_neighbor=3, max_num_vertices=12)
    sizes = [int(out[0].asnumpy()[-1]), int(out[1].asnumpy()[-1])]
    res = mx.nd.contrib.dgl_graph_compact(out[2], out[3], out[0], out[1],
                                          graph_sizes=tuple(sizes), return_mapping=True)
    assert len(res) == 4
    for j in range(2):
        vids = out[j].asnumpy()[:sizes[j]]
        sub, compact, mapping = out[2 + j], res[j], res[2 + j]
        assert compact.shape == mapping.shape == (sizes[j], sizes[j])
        compact.check_format(full_check=True)
        ip, cols = sub.indptr.asnumpy(), sub.indices.asnumpy()
        np.testing.assert_array_equal(compact.indptr.asnumpy(), ip[:sizes[j] + 1])
        np.testing.assert_array_equal(vids[compact.indices.asnumpy()], cols)
        np.testing.assert_array_equal(compact.data.asnumpy(), np.arange(len(cols)))
        np.testing.assert_array_equal(mapping.data.asnumpy(), sub.data.asnumpy())
        np.testing.assert_array_equal(mapping.indices.asnumpy(), compact.indices.asnumpy())
    one = mx.nd.contrib.dgl_graph_compact(out[2], out[0], graph_sizes=sizes[0],
                                          return_mapping=False)
    assert one.stype == "csr" and one.shape == (sizes[0], sizes[0])


def test_sampler_errors():
    g = _complete5()
    p = mx.nd.array([0.9, 0.8, 0.2, 0.4, 0.1])
    s = _seeds(0)
    bad = [
        (lambda: U(g.tostype("default"), s), "csr"),
        (lambda: U(g.astype("float32"), s), "int64"),
        (lambda: U(g, s, num_args=3), "num_args"),
        (lambda: NU(g, p, s, num_args=2), "num_args"),
        (lambda: U(g), "seed array"),
        (lambda: U(g, _seeds(7)), r"outside \[0, 5\)"),
        (lambda: U(g, _seeds(-1)), r"outside \[0, 5\)"),
        (lambda: U(g, mx.nd.array([0])), "integer"),
        (lambda: U(g, mx.nd.array([[0, 1]], dtype=np.int64)), "1-D"),
        (lambda: U(g, _seeds(0, 1, 2), max_num_vertices=2), "max_num_vertices"),
        (lambda: U(g, s, num_hops=-1), "num_hops"),
        (lambda: U(g, s, num_neighbor=1.5), "num_neighbor"),
        (lambda: U(mx.nd.sparse.csr_matrix((np.arange(2), [0, 1], [0, 1, 2]), shape=(2, 3),
                                           dtype=np.int64), s), "square"),
        (lambda: NU(g, p[:3], s), r"shape \(5,\)"),
        (lambda: NU(g, p.astype("float64"), s), "float32"),
        (lambda: NU(g, -p, s), "non-negative"),
        (lambda: NU(g), "probability input"),
        (lambda: NU(g, p), "seed array"),
        (lambda: U(g, s, out=mx.nd.zeros(3)), "out="),
    ]
    for fn, msg in bad:
        with pytest.raises(MXNetError, match=msg):
            fn()


def test_compact_errors():
    g = _complete5()
    vid, sub, _ = U(g, _seeds(1), num_hops=1, num_neighbor=0, max_num_vertices=3)
    C = mx.nd.contrib.dgl_graph_compact
    with pytest.raises(MXNetError, match="return_mapping"):
        C(sub, vid, graph_sizes=1)
    with pytest.raises(MXNetError, match="graph_sizes"):
        C(sub, vid, return_mapping=False)
    with pytest.raises(MXNetError, match="last element"):
        C(sub, vid, graph_sizes=2, return_mapping=False)
    with pytest.raises(MXNetError, match="even number"):
        C(sub, return_mapping=False, graph_sizes=1)
    with pytest.raises(MXNetError, match="csr"):
        C(sub.tostype("default"), vid, graph_sizes=1, return_mapping=False)
    # an edge to a vertex the vertex array does not list cannot be renumbered
    stray = mx.nd.sparse.csr_matrix((np.array([7]), np.array([4]), np.array([0, 1, 1, 1])),
                                    shape=(3, 5), dtype=np.int64)
    with pytest.raises(MXNetError, match=r"missing from its vertex array: \[4\]"):
        C(stray, vid, graph_sizes=1, return_mapping=False)


def test_compact_with_an_unsorted_vertex_array():
    # rows of vertices 4, 1, 3 (in that order); columns are original ids
    sub = mx.nd.sparse.csr_matrix((np.array([10, 11, 12, 13]), np.array([1, 3, 4, 1]),
                                   np.array([0, 2, 3, 4, 4])), shape=(4, 5), dtype=np.int64)
    vid = _seeds(4, 1, 3, 9, 3)             # padding 9, count 3 last
    compact, mapping = mx.nd.contrib.dgl_graph_compact(sub, vid, graph_sizes=(3,),
                                                       return_mapping=True)
    np.testing.assert_array_equal(compact.indices.asnumpy(), [1, 2, 0, 1])
    np.testing.assert_array_equal(compact.indptr.asnumpy(), [0, 2, 3, 4])
    np.testing.assert_array_equal(compact.data.asnumpy(), [0, 1, 2, 3])
    np.testing.assert_array_equal(mapping.data.asnumpy(), [10, 11, 12, 13])
