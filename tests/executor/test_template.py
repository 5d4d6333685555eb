"""BindTemplate: a hybridized block bound again for new input shapes reuses the
shape-independent planning (argument lists, CSE, graph numbering, dtype inference) and
still computes what NumPy does."""
import numpy as np
import pytest

import mxnet as mx
from mxnet import gluon, nd
from mxnet.base import MXNetError
from mxnet.executor import executor as executor_mod
from mxnet.executor.graph import Graph
from mxnet.executor.template import BindTemplate


class _Attention(gluon.HybridBlock):
    """x (batch, T, 4) -> softmax(x W^T (x W^T)^T) (x W^T): shapes follow T."""

    def __init__(self, **kw):
        super().__init__(**kw)
        with self.name_scope():
            self.proj = gluon.nn.Dense(4, flatten=False, use_bias=False)

    def hybrid_forward(self, F, x):
        h = self.proj(x)
        att = F.softmax(F.batch_dot(h, h, transpose_b=True), axis=-1)
        return F.batch_dot(att, h) + F.batch_dot(att, h)    # a common subexpression


def _reference(x, w):
    h = x @ w.T
    s = h @ h.transpose(0, 2, 1)
    e = np.exp(s - s.max(-1, keepdims=True))
    att = e / e.sum(-1, keepdims=True)
    return 2 * att @ h


@pytest.fixture
def counted(monkeypatch):
    """Counts of the shape-independent passes the executor runs."""
    counts = {"type": 0, "cse": 0}
    real_type, real_cse = executor_mod.infer_type_pass, executor_mod.eliminate_common_expr

    def type_pass(*a, **k):
        counts["type"] += 1
        return real_type(*a, **k)

    def cse(*a, **k):
        counts["cse"] += 1
        return real_cse(*a, **k)
    monkeypatch.setattr(executor_mod, "infer_type_pass", type_pass)
    monkeypatch.setattr("mxnet.executor.template.eliminate_common_expr", cse)
    return counts


def test_new_shapes_reuse_the_template_and_match_numpy(counted, monkeypatch):
    monkeypatch.setenv("MXNET_CACHEDOP_BIND_AT", "1")       # an executor per shape
    net = _Attention()
    net.initialize(mx.init.Xavier())
    net.hybridize()
    rng = np.random.RandomState(0)
    w = None
    for t in (1, 3, 7, 2):
        x = rng.randn(2, t, 4).astype(np.float32)
        out = net(nd.array(x))
        w = net.proj.weight.data().asnumpy()
        np.testing.assert_allclose(out.asnumpy(), _reference(x, w), rtol=1e-5, atol=1e-5)
    # four signatures, one type inference and one CSE between them
    assert len(net._cached_op._pools) == 4
    assert counted == {"type": 1, "cse": 1}
    # another dtype is another key: its types are inferred again, and still right
    net.cast("float64")
    x = rng.randn(2, 5, 4)
    out = net(nd.array(x, dtype="float64"))
    assert out.dtype == np.float64
    np.testing.assert_allclose(out.asnumpy(), _reference(x, w.astype(np.float64)),
                               rtol=1e-10)
    assert counted["type"] == 2


def test_gradients_through_templated_binds_match_numeric():
    net = _Attention()
    net.initialize(mx.init.Xavier())
    net.hybridize()
    rng = np.random.RandomState(1)
    for t in (2, 5):
        x = nd.array(rng.randn(1, t, 4))
        x.attach_grad()
        with mx.autograd.record():
            y = net(x).sum()
        y.backward()
        w = net.proj.weight.data().asnumpy().astype(np.float64)
        xv = x.asnumpy().astype(np.float64)
        eps, num = 1e-4, np.zeros_like(xv)
        for i in np.ndindex(xv.shape):
            d = np.zeros_like(xv)
            d[i] = eps
            num[i] = (_reference(xv + d, w).sum() - _reference(xv - d, w).sum()) / (2 * eps)
        np.testing.assert_allclose(x.grad.asnumpy(), num, rtol=1e-2, atol=1e-3)


def test_a_templated_bind_still_rejects_a_wrong_shape():
    data = mx.sym.var("data")
    weight = mx.sym.var("weight", shape=(3, 4))
    sym = mx.sym.FullyConnected(data, weight=weight, num_hidden=3, no_bias=True)
    template = BindTemplate(sym)
    from mxnet.executor.bind import bind
    ok = bind(sym, mx.cpu(), [nd.ones((2, 4)), nd.ones((3, 4))], grad_req="null",
              template=template)
    np.testing.assert_allclose(ok.forward()[0].asnumpy(), np.full((2, 3), 4.0))
    ok2 = bind(sym, mx.cpu(), [nd.ones((5, 4)), nd.ones((3, 4))], grad_req="null",
               template=template)
    assert ok2.forward()[0].shape == (5, 3)
    with pytest.raises(MXNetError, match="weight"):
        bind(sym, mx.cpu(), [nd.ones((5, 4)), nd.ones((3, 5))], grad_req="null",
             template=template)


def test_fresh_graph_shares_structure_not_pass_results():
    x = mx.sym.var("x")
    g = Graph(mx.sym.relu(x) + 1)
    g.shapes, g.dtypes = [(2,)] * g.num_entries, [np.float32] * g.num_entries
    f = g.fresh()
    assert f.nodes is g.nodes and f.node_inputs is g.node_inputs
    assert f.shapes is None and f.dtypes is None and f.backward is None and f.memory is None
    assert g.shapes is not None       # the original keeps its results
