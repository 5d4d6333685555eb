"""HybridBlocks whose hybrid_forward uses F.contrib.foreach / while_loop / cond: the
hybridized graph (one control-flow node holding subgraphs) gives the imperative run's
outputs and parameter gradients, under every hybridize configuration."""
import numpy as np
import pytest

import mxnet as mx
from mxnet import gluon
from mxnet.test_utils import assert_almost_equal


class _ScanRNN(gluon.HybridBlock):
    """A GRU cell run over the sequence with foreach, then a while_loop that halves
    the final state until its norm is below 1, and a cond on the output's sign."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.cell = gluon.rnn.GRUCell(6, input_size=4)

    def hybrid_forward(self, F, seq, h):
        out, states = F.contrib.foreach(self.cell, seq, [h])
        _, (small,) = F.contrib.while_loop(
            lambda s: F.norm(s) > 1, lambda s: (None, [s * 0.5]), [states[0]],
            max_iterations=10)
        flipped = F.contrib.cond(F.sum(small) < 0, lambda: small * -1, lambda: small * 1)
        return out, flipped


@pytest.mark.parametrize("config", [{}, {"inline_limit": 0}, {"static_alloc": True},
                                    {"static_alloc": True, "static_shape": True}])
def test_hybridized_matches_imperative(config):
    rs = np.random.RandomState(0)
    seq = mx.nd.array(rs.randn(5, 3, 4))
    h = mx.nd.array(rs.randn(3, 6) * 2)
    ref, net = _ScanRNN(), _ScanRNN()
    ref.initialize(mx.init.Xavier())
    net.initialize()
    ref(seq, h)
    net(seq, h)
    for (_, p), (_, q) in zip(sorted(ref.collect_params().items()),
                              sorted(net.collect_params().items())):
        q.set_data(p.data())
    net.hybridize(**config)
    results = []
    for block in (ref, net):
        with mx.autograd.record():
            out, flipped = block(seq, h)
            loss = (out * out).sum() + (flipped * 3).sum()
        loss.backward()
        grads = {n[len(block.prefix):]: p.grad().asnumpy()
                 for n, p in block.collect_params().items()}
        results.append((out.asnumpy(), flipped.asnumpy(), grads))
    (o1, f1, g1), (o2, f2, g2) = results
    assert_almost_equal(o1, o2, rtol=1e-5, atol=1e-6)
    assert_almost_equal(f1, f2, rtol=1e-5, atol=1e-6)
    assert np.linalg.norm(f1) <= 1 and g1.keys() == g2.keys()
    for k in g1:
        assert_almost_equal(g1[k], g2[k], rtol=1e-4, atol=1e-5)


def test_hybridized_export_and_reload(tmp_path):
    net = _ScanRNN()
    net.initialize()
    net.hybridize()
    seq, h = mx.nd.ones((2, 1, 4)), mx.nd.ones((1, 6))
    want = [o.asnumpy() for o in net(seq, h)]
    net.export(str(tmp_path / "scan"))
    back = gluon.SymbolBlock.imports(str(tmp_path / "scan-symbol.json"), ["data0", "data1"],
                                     str(tmp_path / "scan-0000.params"))
    for w, g in zip(want, back(seq, h)):
        assert_almost_equal(w, g.asnumpy())
