"""HybridBlock.hybridize(): the cached graph gives the imperative results (outputs,
gradients, BatchNorm statistics), autograd works through it, executors are reused,
export/imports round-trip, and symbol naming matches MXNet 1.9.1."""
import json
import warnings

import numpy as np
import pytest

import mxnet as mx
from mxnet import autograd, gluon
from mxnet.gluon import nn
from mxnet.test_utils import assert_almost_equal


def _net():
    net = nn.HybridSequential()
    with net.name_scope():
        net.add(nn.Conv2D(4, 3, padding=1), nn.BatchNorm(), nn.Activation("relu"),
                nn.MaxPool2D(), nn.Flatten(), nn.Dense(8, activation="tanh"),
                nn.Dropout(0.0), nn.Dense(3))
    return net


def _twins(x):
    """Two nets with identical parameters; the second is hybridized."""
    a, b = _net(), _net()
    a.initialize(mx.init.Xavier())
    b.initialize()
    a(x)
    b(x)
    for pa, pb in zip(a.collect_params().values(), b.collect_params().values()):
        pb.set_data(pa.data())
    b.hybridize()
    return a, b


def _grads(net):
    return [p.grad().asnumpy() for p in net.collect_params().values() if p.grad_req != "null"]


def test_hybridized_equals_imperative_forward_backward():
    x = mx.nd.array(np.random.randn(5, 2, 6, 6))
    a, b = _twins(x)
    x.attach_grad()
    for _ in range(3):                      # BatchNorm statistics evolve identically
        with autograd.record():
            la = (a(x) ** 2).sum()
        la.backward()
        ga, gx = _grads(a), x.grad.asnumpy()
        with autograd.record():
            lb = (b(x) ** 2).sum()
        lb.backward()
        assert_almost_equal(lb.asnumpy(), la.asnumpy(), rtol=1e-5)
        for u, v in zip(_grads(b), ga):
            assert_almost_equal(u, v, rtol=1e-4, atol=1e-6)
        assert_almost_equal(x.grad.asnumpy(), gx, rtol=1e-4, atol=1e-6)
        for pa, pb in zip(a.collect_params().values(), b.collect_params().values()):
            assert_almost_equal(pb.data().asnumpy(), pa.data().asnumpy(), rtol=1e-5,
                                atol=1e-7)
    assert_almost_equal(b(x).asnumpy(), a(x).asnumpy(), rtol=1e-5, atol=1e-6)


def test_outputs_are_fresh_and_executors_are_cached(monkeypatch):
    monkeypatch.setenv("MXNET_CACHEDOP_BIND_AT", "1")       # bind at the first call
    net = nn.Dense(3, in_units=4)
    net.initialize()
    net.hybridize()
    x1, x2 = mx.nd.ones((2, 4)), mx.nd.ones((2, 4)) * 2
    y1 = net(x1)
    y2 = net(x2)
    w, b = net.weight.data().asnumpy(), net.bias.data().asnumpy()
    assert_almost_equal(y1.asnumpy(), np.ones((2, 4)) @ w.T + b, rtol=1e-5)
    assert_almost_equal(y2.asnumpy(), 2 * np.ones((2, 4)) @ w.T + b, rtol=1e-5)
    op = net._cached_op
    assert op is not None and len(op._pools) == 1
    ex = next(iter(op._pools.values()))[0].ex
    net(mx.nd.ones((2, 4)))
    assert next(iter(op._pools.values()))[0].ex is ex          # no re-binding
    net(mx.nd.ones((5, 4)))                                      # a new shape: new executor
    assert len(op._pools) == 2
    # parameters updated in place are seen without re-binding
    net.weight.set_data(mx.nd.zeros((3, 4)))
    assert_almost_equal(net(x1).asnumpy(), np.tile(b, (2, 1)), rtol=1e-6)


def test_two_recorded_forwards_before_backward():
    net = nn.Dense(2, in_units=3)
    net.initialize()
    ref = nn.Dense(2, in_units=3)
    ref.initialize()
    ref.weight.set_data(net.weight.data())
    net.hybridize()
    x1, x2 = mx.nd.array(np.random.rand(4, 3)), mx.nd.array(np.random.rand(4, 3))
    for blk in (ref, net):
        with autograd.record():
            y = (blk(x1) * blk(x2)).sum()        # both forwards alive at backward time
        y.backward()
    assert_almost_equal(net.weight.grad().asnumpy(), ref.weight.grad().asnumpy(), rtol=1e-5)
    with autograd.record():
        y = net(x1).sum()
    y.backward(retain_graph=True)
    g1 = net.weight.grad().asnumpy()
    net(x2)                                 # an inference call in between
    y.backward()
    assert_almost_equal(net.weight.grad().asnumpy(), g1)


def test_grad_req_add_and_data_gradient():
    net = nn.Dense(2, in_units=3)
    net.initialize()
    net.hybridize()
    net.collect_params().setattr("grad_req", "add")
    x = mx.nd.array(np.random.rand(4, 3))
    x.attach_grad()
    for _ in range(2):
        with autograd.record():
            y = net(x).sum()
        y.backward()
    assert_almost_equal(net.weight.grad().asnumpy(), 2 * np.tile(x.asnumpy().sum(0), (2, 1)),
                        rtol=1e-5)
    assert_almost_equal(x.grad.asnumpy(),
                        np.tile(net.weight.data().asnumpy().sum(0), (4, 1)), rtol=1e-5)


def test_deferred_init_and_infer_shape_when_hybridized():
    net = _net()
    net.initialize()
    net.hybridize()
    out = net(mx.nd.ones((2, 3, 6, 6)))
    assert out.shape == (2, 3)
    assert net[0].weight.shape == (4, 3, 3, 3) and net[5].weight.shape == (8, 36)
    other = _net()
    other.infer_shape(mx.nd.ones((2, 1, 4, 4)))
    assert other[0].weight.shape == (4, 1, 3, 3) and other[1].gamma.shape == (4,)
    assert other[5].weight.shape == (8, 16)


def test_symbol_naming_matches_mxnet():
    with mx.name.NameManager():
        net = _net()
    net.initialize()
    net.hybridize()
    net(mx.nd.ones((1, 1, 4, 4)))
    sym = net._cached_graph[1]
    names = [n["name"] for n in json.loads(sym.tojson())["nodes"] if n["op"] != "null"]
    # node names MXNet 1.9.1 gives this network (Dropout(0.0) is an identity there too)
    assert names == ["hybridsequential0_conv0_fwd", "hybridsequential0_batchnorm0_fwd",
                     "hybridsequential0_relu0_fwd", "hybridsequential0_pool0_fwd",
                     "hybridsequential0_flatten0_flatten0", "hybridsequential0_dense0_fwd",
                     "hybridsequential0_dense0_tanh_fwd", "hybridsequential0_dropout0_identity0",
                     "hybridsequential0_dense1_fwd"]
    assert sym.list_arguments()[0] == "data"
    assert sym.list_auxiliary_states() == ["hybridsequential0_batchnorm0_running_mean",
                                           "hybridsequential0_batchnorm0_running_var"]


def test_export_and_symbolblock_imports(tmp_path):
    x = mx.nd.array(np.random.randn(2, 1, 4, 4))
    with mx.name.NameManager():
        net = _net()
    net.initialize()
    with pytest.raises(RuntimeError, match="Please first call block.hybridize"):
        net.export(str(tmp_path / "none"))
    net.hybridize()
    ref = net(x).asnumpy()
    prefix = str(tmp_path / "model")
    net.export(prefix, epoch=7)
    saved = mx.nd.load(prefix + "-0007.params")
    assert list(saved.keys())[:2] == ["arg:hybridsequential0_conv0_weight",
                                      "arg:hybridsequential0_conv0_bias"]
    assert "aux:hybridsequential0_batchnorm0_running_var" in saved
    sb = gluon.SymbolBlock.imports(prefix + "-symbol.json", ["data"], prefix + "-0007.params")
    assert_almost_equal(sb(x).asnumpy(), ref, rtol=1e-5, atol=1e-6)
    assert repr(sb) == "SymbolBlock(\n<Symbol hybridsequential0_dense1_fwd> : 1 -> 1\n)"
    # SymbolBlock parameters keep their full names; attribute paths drop the common prefix
    assert "hybridsequential0_conv0_weight" in sb.collect_params()
    sb.save_parameters(str(tmp_path / "sb.params"))
    assert list(mx.nd.load(str(tmp_path / "sb.params")).keys())[:2] == ["conv0_weight",
                                                                       "conv0_bias"]
    # gradients flow through an imported block
    x.attach_grad()
    with autograd.record():
        y = sb(x).sum()
    y.backward()
    assert sb.collect_params()["hybridsequential0_dense1_bias"].grad().asnumpy().tolist() == \
        [2.0, 2.0, 2.0]
    # a Symbol input composes the graph
    out = sb(mx.sym.var("z"))
    assert out.list_arguments()[0] == "z"


def test_symbolblock_from_symbols_and_multiple_io():
    a, b = mx.sym.var("a"), mx.sym.var("b")
    fc = mx.sym.FullyConnected(a, num_hidden=2, name="fc")
    blk = gluon.SymbolBlock([fc + b, mx.sym.relu(fc)], [a, b])
    blk.initialize()
    xa, xb = mx.nd.ones((3, 4)), mx.nd.ones((3, 2))
    s, r = blk(xa, xb)
    w, bias = blk.params["fc_weight"].data().asnumpy(), blk.params["fc_bias"].data().asnumpy()
    lin = np.ones((3, 4)) @ w.T + bias
    assert_almost_equal(s.asnumpy(), lin + 1, rtol=1e-5)
    assert_almost_equal(r.asnumpy(), np.maximum(lin, 0), rtol=1e-5)


class _Multi(gluon.HybridBlock):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.fc = nn.Dense(2, in_units=3)

    def hybrid_forward(self, F, x, pair, extra=None):
        y = self.fc(x)
        out = [y + pair[0], [y * pair[1], F.relu(y)]]
        if extra is not None:
            out[1].append(extra * 2)
        return out


def test_nested_inputs_and_outputs():
    net = _Multi()
    net.initialize()
    x, p0, p1 = mx.nd.ones((2, 3)), mx.nd.ones((2, 2)), mx.nd.ones((2, 2)) * 3
    ref = net(x, [p0, p1])
    net.hybridize()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = net(x, [p0, p1])
    assert isinstance(out, list) and isinstance(out[1], list) and len(out[1]) == 2
    for u, v in zip([out[0]] + out[1], [ref[0]] + ref[1]):
        assert_almost_equal(u.asnumpy(), v.asnumpy(), rtol=1e-6)
    assert [i.name for i in net._cached_graph[0]] == ["data0", "data1", "data2"]
    with pytest.raises(ValueError, match="do not support mixed NDArrays and Symbols"):
        net(x, [mx.sym.var("p"), p1])


def test_op_hook_and_hybridize_flags():
    net = nn.HybridSequential()
    net.add(nn.Dense(2, in_units=3), nn.Activation("relu"))
    net.initialize()
    seen = []
    net.register_op_hook(lambda name, op, arr: seen.append((name, op)))
    net.hybridize(static_alloc=True, static_shape=True)
    net(mx.nd.ones((1, 3))).wait_to_read()
    assert any(op == "FullyConnected" for _, op in seen)
    assert any(op == "Activation" for _, op in seen)
    net.hybridize(False)
    assert not net._active and not net[0]._active


def test_plain_block_with_hybridized_children_trains():
    class Net(gluon.Block):
        def __init__(self):
            super().__init__()
            with self.name_scope():
                self.conv = nn.Conv2D(2, 3, padding=1)
                self.fc = nn.Dense(3)

        def forward(self, x):
            x = mx.nd.relu(self.conv(x))
            x = mx.nd.Pooling(x, pool_type="max", kernel=(2, 2), stride=(2, 2))
            return self.fc(x.reshape((0, -1)))

    x = mx.nd.array(np.random.rand(4, 1, 4, 4))
    label = mx.nd.array([0, 1, 2, 1])
    nets = []
    for hyb in (False, True):
        mx.random.seed(11)
        net = Net()
        net.initialize()
        if hyb:
            net.hybridize()
        trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1,
                                                              "momentum": 0.9})
        loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
        for _ in range(3):
            with autograd.record():
                loss = loss_fn(net(x), label)
            loss.backward()
            trainer.step(4)
        nets.append(net)
    for pa, pb in zip(nets[0].collect_params().values(), nets[1].collect_params().values()):
        assert_almost_equal(pb.data().asnumpy(), pa.data().asnumpy(), rtol=1e-5, atol=1e-7)


def _signatures(block):
    return list(block._cached_op._pools)


def test_executors_kept_for_other_shapes_stay_within_the_memory_budget(monkeypatch):
    # a decoder run step by step feeds a new length every call; MXNet's CachedOp
    # holds one signature's memory at a time, so the kept executors must be bounded
    monkeypatch.setenv("MXNET_CACHEDOP_MEMORY_MB", "0")
    monkeypatch.setenv("MXNET_CACHEDOP_BIND_AT", "1")
    net = nn.Dense(5, flatten=False)
    net.initialize(mx.init.Xavier())
    net.hybridize()
    w = None
    for t in range(1, 8):
        x = np.random.uniform(-1, 1, (2, t, 3)).astype(np.float32)
        out = net(mx.nd.array(x)).asnumpy()
        if w is None:
            w, b = net.weight.data().asnumpy(), net.bias.data().asnumpy()
        assert_almost_equal(out, x @ w.T + b, rtol=1e-5, atol=1e-6)
        assert len(_signatures(net)) == 1          # only the current one is kept
    # a recorded run whose backward is still to come keeps its executor's values
    net.collect_params().setattr("grad_req", "write")
    xa = mx.nd.array(np.random.uniform(-1, 1, (2, 3, 3)))
    xb = mx.nd.array(np.random.uniform(-1, 1, (2, 4, 3)))
    with autograd.record():
        ya = net(xa)
        net(xb)
    ya.backward()
    # d(sum y)/dW = sum over rows of x, for each output unit
    want = np.tile(xa.asnumpy().reshape(-1, 3).sum(0), (5, 1))
    assert_almost_equal(net.weight.grad().asnumpy(), want, rtol=1e-5, atol=1e-5)


def test_executors_for_every_shape_are_kept_under_the_default_budget(monkeypatch):
    monkeypatch.setenv("MXNET_CACHEDOP_BIND_AT", "1")
    net = nn.Dense(5, flatten=False)
    net.initialize()
    net.hybridize()
    for t in range(1, 6):
        net(mx.nd.ones((2, t, 3)))
    assert len(_signatures(net)) == 5              # each reused when its shape returns


def test_a_new_shape_runs_without_an_executor_until_it_comes_back():
    # a decoder's every step is a new length: the first call of a signature runs the
    # graph's operators directly; a signature seen again is bound and then reused
    net = nn.HybridSequential()
    net.add(nn.Dense(6, flatten=False, activation="tanh"), nn.Dense(2, flatten=False))
    net.initialize(mx.init.Xavier())
    net.hybridize()
    rng = np.random.RandomState(3)

    def want(x):
        w0, b0 = net[0].weight.data().asnumpy(), net[0].bias.data().asnumpy()
        w1, b1 = net[1].weight.data().asnumpy(), net[1].bias.data().asnumpy()
        return np.tanh(x @ w0.T + b0) @ w1.T + b1

    for t in (1, 2, 3):
        x = rng.randn(2, t, 4).astype(np.float32)
        assert_almost_equal(net(mx.nd.array(x)).asnumpy(), want(x), rtol=1e-5, atol=1e-6)
    assert len(_signatures(net)) == 0              # each seen once: nothing bound
    x = rng.randn(2, 2, 4).astype(np.float32)
    assert_almost_equal(net(mx.nd.array(x)).asnumpy(), want(x), rtol=1e-5, atol=1e-6)
    assert len(_signatures(net)) == 1              # length 2 came back: bound
    ex = next(iter(net._cached_op._pools.values()))[0].ex
    net(mx.nd.array(x))
    assert next(iter(net._cached_op._pools.values()))[0].ex is ex      # and reused
    # a recorded call binds at once (its backward runs the executor's)
    x4 = mx.nd.array(rng.randn(2, 4, 4))
    with autograd.record():
        net(x4).sum().backward()
    assert len(_signatures(net)) == 2


def test_a_graph_whose_parameters_need_shape_inference_is_always_bound():
    # zeros(shape=(0, 3)): the batch size comes from shape inference, which only an
    # executor runs
    class Net(gluon.HybridBlock):
        def hybrid_forward(self, F, x):
            batch = x.shape[0] if isinstance(x, mx.nd.NDArray) else 0
            return x + (F.zeros((batch, 3)) + 1)

    net = Net()
    net.hybridize()
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    assert_almost_equal(net(mx.nd.array(x)).asnumpy(), x + 1)
    assert len(_signatures(net)) == 1


def test_an_input_returned_by_a_graph_run_without_an_executor_is_a_copy():
    class Net(gluon.HybridBlock):
        def hybrid_forward(self, F, x, y):
            return x, y * 2

    net = Net()
    net.hybridize()
    x, y = mx.nd.ones((2,)), mx.nd.ones((2,))
    a, b = net(x, y)                         # the first call: no executor yet
    assert len(_signatures(net)) == 0
    a += 5
    assert_almost_equal(x.asnumpy(), np.ones(2))
    assert_almost_equal(b.asnumpy(), np.full(2, 2.0))
