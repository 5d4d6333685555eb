"""Hybridizing in NumPy mode (gluon/np_trace.py): the traced graph computes what the
imperative block computes (values and gradients), exports and re-imports, retraces
for new input shapes, and refuses computations that read values on the host."""
import numpy as onp
import pytest

import mxnet as mx
from mxnet import autograd, gluon, np, npx
from mxnet.gluon import nn


class _Net(gluon.HybridBlock):
    def __init__(self, **kw):
        super().__init__(**kw)
        with self.name_scope():
            self.dense = nn.Dense(4)

    def hybrid_forward(self, F, x):
        y = F.npx.relu(self.dense(x))
        z = F.npx.reshape(F.np.concatenate([y, y * 2], axis=1), (-2, -1))   # -2: keep the axis
        return F.np.mean(z, axis=1) + F.np.cumsum(z, axis=1)[:, -1] + z[:, 0] + z[1:, 2].sum()


@pytest.fixture
def np_mode():
    npx.set_np()
    yield
    npx.reset_np()


def _run(net, x):
    x = x.copy()
    x.attach_grad()
    with autograd.record():
        y = net(x)
    y.backward()
    return y.asnumpy(), x.grad.asnumpy(), net.dense.weight.grad().asnumpy().copy()


def test_hybridized_matches_imperative_and_exports(np_mode, tmp_path):
    net = _Net()
    net.initialize()
    x = np.random.uniform(size=(3, 5))
    want = _run(net, x)
    net.hybridize()
    got = _run(net, x)
    for g, w in zip(got, want):
        onp.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
    prefix = str(tmp_path / "net")
    net.export(prefix)
    sb = gluon.SymbolBlock.imports(prefix + "-symbol.json", ["data"], prefix + "-0000.params")
    onp.testing.assert_allclose(sb(x).asnumpy(), want[0], rtol=1e-5, atol=1e-6)
    assert isinstance(net(np.ones((2, 5))), np.ndarray)    # a new shape: traced again
    assert net(np.ones((2, 5))).shape == (2,)


def test_training_updates_traced_parameters(np_mode):
    net = _Net()
    net.initialize()
    net.hybridize()
    x = np.random.uniform(size=(3, 5))
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
    before = net(x).asnumpy()
    with autograd.record():
        loss = net(x).sum()
    loss.backward()
    trainer.step(1)
    assert not onp.allclose(net(x).asnumpy(), before)


def test_host_reads_run_imperatively_and_refuse_export(np_mode, tmp_path):
    class HostRead(gluon.HybridBlock):
        def hybrid_forward(self, F, x):
            return x * float(x.sum())
    blk = HostRead()
    blk.hybridize()
    x = np.ones((2, 2))
    assert blk(x).asnumpy().tolist() == [[4.0, 4.0], [4.0, 4.0]]
    x2 = np.full((2, 2), 2.0)            # not frozen into a graph: the value is read again
    assert blk(x2).asnumpy().tolist() == [[16.0, 16.0], [16.0, 16.0]]
    with pytest.raises(mx.MXNetError, match="host"):
        blk.export(str(tmp_path / "blk"))


def test_zero_size_inputs_replay_the_traced_graph(np_mode):
    class Sum(gluon.HybridBlock):
        def hybrid_forward(self, F, x, y):
            return F.np.concatenate([x + y, y * 2], axis=1)
    blk = Sum()
    blk.hybridize()
    x = np.ones((0, 3))
    x.attach_grad()
    with autograd.record():
        out = blk(x, np.ones((0, 3)))
    out.backward()
    assert out.shape == (0, 6) and x.grad.shape == (0, 3)


def test_tracing_a_constant_output_leaves_autograd_as_it_was(np_mode):
    """An output that is no computation of the inputs (here a constant, as tile with
    reps 0 of a 0-d array gives) is bound after tracing; autograd's recording must stay
    off afterwards (it was left on, and every later in-place write then failed)."""
    class Tile(gluon.HybridBlock):
        def hybrid_forward(self, F, x):
            return F.np.tile(x, reps=0)

    net = Tile()
    net.hybridize()
    x = np.array(onp.array(7, dtype=onp.int64))
    for _ in range(2):
        out = net(x)
        assert not autograd.is_recording()
    assert out.shape == onp.tile(onp.array(7), 0).shape
    y = np.zeros((2,))
    y[:] = 1                     # an in-place write works (no recording left on)
    onp.testing.assert_array_equal(y.asnumpy(), [1, 1])


def test_printing_inside_hybrid_forward_shows_symbols_and_keeps_the_graph(np_mode, capsys):
    # MXNet 1.9.1 prints "<_Symbol data>" / "<_Symbol ..._relu0>" on the first hybridized
    # call and nothing on later ones (the cached graph runs); printing is no host read
    calls = []

    class Printing(gluon.HybridBlock):
        def __init__(self, **kw):
            super().__init__(**kw)
            with self.name_scope():
                self.dense = nn.Dense(3)

        def hybrid_forward(self, F, x):
            calls.append(1)
            print("x:", x)
            h = F.npx.relu(self.dense(x))
            print("h:", repr(h))
            return h * 2

    net = Printing()
    net.initialize()
    x = np.array(onp.random.RandomState(0).randn(2, 5).astype("float32"))
    expect = net(x).asnumpy()
    net.hybridize()
    capsys.readouterr()
    got = net(x)
    out = capsys.readouterr().out
    assert "x: <_Symbol data>" in out and "h: <_Symbol " in out and "relu" in out
    n = len(calls)
    onp.testing.assert_allclose(net(x).asnumpy(), expect, rtol=1e-6)
    assert len(calls) == n and capsys.readouterr().out == ""      # the cached graph ran
    onp.testing.assert_allclose(got.asnumpy(), expect, rtol=1e-6)
    assert "<_Symbol" not in str(got) and "<_Symbol" not in repr(x)   # restored afterwards
