"""The small contrib tensor operators and Python helpers against NumPy formulas,
numeric gradients and hand-worked cases."""
import math

import numpy as np
import pytest

import mxnet as mx
from mxnet.base import MXNetError
from mxnet.test_utils import assert_almost_equal, check_numeric_gradient

nd = mx.nd
RNG = np.random.RandomState(0)
X = RNG.randn(3, 4)


@pytest.mark.parametrize("fn,ref", [
    (lambda d: nd.contrib.quadratic(d, a=0.5, b=-2, c=3), lambda x: 0.5 * x * x - 2 * x + 3),
    (lambda d: nd.contrib.div_sqrt_dim(d), lambda x: x / 2.0),
])
def test_smooth_elementwise(fn, ref):
    assert_almost_equal(fn(nd.array(X)).asnumpy(), ref(X.astype(np.float32)), atol=1e-5)
    check_numeric_gradient(fn, [X], numeric_eps=1e-4, rtol=1e-4, atol=1e-6)


def _grad(fn, x, head):
    a = nd.array(x)
    a.attach_grad()
    with mx.autograd.record():
        y = fn(a)
    y.backward(nd.array(head))
    return y.asnumpy(), a.grad.asnumpy()


def test_straight_through_and_multiplier():
    x = np.array([-1.5, -0.4, 0.0, 0.5, 2.5], np.float32)
    head = np.array([1, 2, 3, 4, 5], np.float32)
    y, g = _grad(nd.contrib.round_ste, x, head)
    assert y.tolist() == [-2, 0, 0, 1, 3] and g.tolist() == head.tolist()
    y, g = _grad(nd.contrib.sign_ste, x, head)
    assert y.tolist() == [-1, -1, 0, 1, 1] and g.tolist() == head.tolist()
    y, g = _grad(lambda a: nd.contrib.gradientmultiplier(a, scalar=-0.5), x, head)
    assert y.tolist() == x.tolist() and g.tolist() == (-0.5 * head).tolist()


def test_arange_like():
    d = nd.zeros((2, 3))
    assert nd.contrib.arange_like(d).asnumpy().tolist() == [[0, 1, 2], [3, 4, 5]]
    out = nd.contrib.arange_like(d, start=1, step=0.5, repeat=2, axis=-1)
    assert out.asnumpy().tolist() == [1, 1, 1.5]
    assert nd.contrib.arange_like(nd.zeros((4,), dtype="int32"), start=1, step=2).dtype == \
        np.int32
    with pytest.raises(MXNetError, match="axis"):
        nd.contrib.arange_like(d, axis=2)


def test_index_array():
    out = nd.contrib.index_array(nd.zeros((2, 3)))
    assert out.dtype == np.int64 and out.shape == (2, 3, 2)
    assert_almost_equal(out.asnumpy(), np.stack(np.indices((2, 3)), -1))
    out = nd.contrib.index_array(nd.zeros((2, 3, 4)), axes=(-1, 0))
    assert_almost_equal(out.asnumpy(), np.stack([np.indices((2, 3, 4))[2],
                                                 np.indices((2, 3, 4))[0]], -1))


def test_index_copy_forward_backward_errors():
    old, new = RNG.randn(5, 3), RNG.randn(2, 3)
    idx = np.array([3, 0])
    out = nd.contrib.index_copy(nd.array(old), nd.array(idx), nd.array(new)).asnumpy()
    want = old.copy()
    want[idx] = new
    assert_almost_equal(out, want.astype(np.float32))
    check_numeric_gradient(lambda o, n: nd.contrib.index_copy(o, nd.array(idx), n),
                           [old, new], numeric_eps=1e-4, rtol=1e-4, atol=1e-6)
    with pytest.raises(MXNetError, match="out of range"):
        nd.contrib.index_copy(nd.zeros((4, 2)), nd.array([5]), nd.ones((1, 2))).asnumpy()
    with pytest.raises(MXNetError, match="do not match"):
        nd.contrib.index_copy(nd.zeros((4, 2)), nd.array([1]), nd.ones((1, 3)))


def test_boolean_mask():
    data = RNG.randn(5, 2)
    mask = np.array([1, 0, 1, 1, 0])
    out = nd.contrib.boolean_mask(nd.array(data), nd.array(mask))
    assert_almost_equal(out.asnumpy(), data[mask == 1].astype(np.float32))
    check_numeric_gradient(lambda d: nd.contrib.boolean_mask(d, nd.array(mask)), [data],
                           numeric_eps=1e-4, rtol=1e-4, atol=1e-6)
    with pytest.raises(MXNetError, match="axis 0"):
        nd.contrib.boolean_mask(nd.array(data), nd.array(mask), axis=1)


def test_allclose():
    a = RNG.randn(3, 4)
    r = nd.contrib.allclose(nd.array(a), nd.array(a + 1e-7))
    assert r.dtype == np.uint8 and r.shape == () and int(r.asnumpy()) == 1
    assert int(nd.contrib.allclose(nd.array(a), nd.array(a + 1e-2)).asnumpy()) == 0
    nan = nd.array([1.0, np.nan])
    assert int(nd.contrib.allclose(nan, nan).asnumpy()) == 1
    assert int(nd.contrib.allclose(nan, nan, equal_nan=False).asnumpy()) == 0


@pytest.mark.parametrize("sa,sb", [((2,), (2, 2)), ((2,), (3,)), ((1, 3), (3,))])
def test_allclose_needs_equal_shapes(sa, sb):
    # MXNet 1.9.1's shape inference refuses differing shapes, broadcastable or not
    # (checked against the oracle)
    with pytest.raises(MXNetError):
        nd.contrib.allclose(nd.ones(sa), nd.ones(sb)).wait_to_read()
    x = mx.sym.var("x")
    with pytest.raises(MXNetError):
        mx.sym.contrib.allclose(x, mx.sym.var("y")).infer_shape(x=sa, y=sb)


def test_count_sketch():
    data = RNG.uniform(-10, 10, (3, 7))
    h = RNG.randint(0, 4, (1, 7)).astype(np.float64)
    s = (RNG.randint(0, 2, (1, 7)) * 2 - 1).astype(np.float64)
    want = np.zeros((3, 4))
    for i in range(7):
        want[:, int(h[0, i])] += s[0, i] * data[:, i]
    out = nd.contrib.count_sketch(nd.array(data), nd.array(h), nd.array(s), out_dim=4)
    assert_almost_equal(out.asnumpy(), want.astype(np.float32), atol=1e-4)
    check_numeric_gradient(lambda d: nd.contrib.count_sketch(d, nd.array(h), nd.array(s),
                                                             out_dim=4),
                           [data], numeric_eps=1e-3, rtol=1e-4, atol=1e-5)


def test_fft_ifft():
    x = RNG.randn(3, 6)
    out = nd.contrib.fft(nd.array(x)).asnumpy()
    z = np.fft.fft(x, axis=-1)
    assert out.shape == (3, 12) and out.dtype == np.float32
    assert_almost_equal(out[:, 0::2], z.real, atol=1e-4)
    assert_almost_equal(out[:, 1::2], z.imag, atol=1e-4)
    inter = RNG.randn(2, 3, 10)
    back = nd.contrib.ifft(nd.array(inter)).asnumpy()
    zc = inter[..., 0::2] + 1j * inter[..., 1::2]
    assert_almost_equal(back, np.fft.ifft(zc, axis=-1).real * 5, atol=1e-4)
    # fft/ifft always output float32, so the finite differences carry float32 noise.
    check_numeric_gradient(lambda d: nd.contrib.fft(d), [x], numeric_eps=1e-2, rtol=1e-2,
                           atol=1e-3)
    check_numeric_gradient(lambda d: nd.contrib.ifft(d), [inter], numeric_eps=1e-2,
                           rtol=1e-2, atol=1e-3)


def test_isfinite_isnan_isinf():
    x = nd.array([1.0, np.inf, -np.inf, np.nan])
    assert nd.contrib.isfinite(x).asnumpy().tolist() == [1, 0, 0, 0]
    assert nd.contrib.isinf(x).asnumpy().tolist() == [0, 1, 1, 0]
    assert nd.contrib.isnan(x).asnumpy().tolist() == [0, 0, 0, 1]
    assert nd.contrib.isnan(x.astype("float64")).dtype == np.float64


def test_rand_zipfian():
    mx.random.seed(1)
    true = nd.array([0, 3, 9])
    sampled, count_true, count_sampled = nd.contrib.rand_zipfian(true, 4000, 10)
    s = sampled.asnumpy()
    assert sampled.dtype == np.int64 and s.min() >= 0 and s.max() < 10
    prob = np.log((np.arange(10) + 2) / (np.arange(10) + 1)) / math.log(11)
    freq = np.bincount(s, minlength=10) / 4000
    assert np.abs(freq - prob).max() < 0.03
    assert_almost_equal(count_true.asnumpy(), prob[[0, 3, 9]] * 4000)
    assert_almost_equal(count_sampled.asnumpy(), prob[s] * 4000)
    sym = mx.sym.contrib.rand_zipfian(mx.sym.var("t"), 5, 10)
    assert len(sym) == 3


@pytest.mark.parametrize("name", ["dgl_adjacency", "dgl_csr_neighbor_non_uniform_sample",
                                  "dgl_csr_neighbor_uniform_sample", "dgl_graph_compact",
                                  "dgl_subgraph", "edge_id"])
def test_sparse_graph_ops_say_not_implemented(name):
    # all six work imperatively (tests/ndarray/test_dgl_graph*.py); their symbolic
    # forms do not
    with pytest.raises(NotImplementedError, match=name):
        getattr(mx.sym.contrib, name)(nd.zeros((2, 2)))


def test_backward_gradientmultiplier():
    x = RNG.randn(4)
    out = nd.contrib.backward_gradientmultiplier(nd.array(x), scalar=-2.5)
    assert_almost_equal(out.asnumpy(), (x * -2.5).astype(np.float32))
    check_numeric_gradient(lambda d: nd.contrib.backward_gradientmultiplier(d, scalar=1.5),
                           [x], numeric_eps=1e-4, rtol=1e-4, atol=1e-6)


def test_sparse_embedding_forward_and_dense_gradient():
    w = RNG.randn(5, 3)
    idx = np.array([[1, 4], [0, 1]])
    out = nd.contrib.SparseEmbedding(nd.array(idx), nd.array(w), input_dim=5, output_dim=3)
    assert_almost_equal(out.asnumpy(), w[idx].astype(np.float32))
    W = nd.array(w)
    W.attach_grad()
    with mx.autograd.record():
        y = nd.contrib.SparseEmbedding(nd.array(idx), W, input_dim=5, output_dim=3)
    y.backward()
    assert W.grad.asnumpy()[:, 0].tolist() == [1, 2, 0, 0, 1]
    s = mx.sym.contrib.SparseEmbedding(mx.sym.var("d"), input_dim=5, output_dim=3)
    assert s.list_arguments() == ["d", "sparseembedding0_weight"] or \
        s.list_arguments()[1].endswith("_weight")


@pytest.mark.parametrize("name", ["backward_index_copy", "backward_hawkesll"])
def test_gradient_nodes_are_not_callable_directly(name):
    # As in MXNet 1.9.1: listed in contrib, but their inputs come from autograd.
    for ns in (nd.contrib, mx.sym.contrib):
        with pytest.raises(MXNetError, match=name):
            getattr(ns, name)()
