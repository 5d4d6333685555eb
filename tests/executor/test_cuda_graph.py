"""CUDA graphs for hybridized blocks (executor/cuda_graph.py).

The decisions (when to capture, which inputs are copied or aliased, re-capture when a
buffer moves, ineligible graphs, fallback after a failed capture) are device-free and
run here on the CPU with a stand-in backend whose "graph" replays the recorded Python
run with the inputs pinned as they were at capture time — so a replay reads stale
data exactly where a real CUDA graph would, and these tests compare against the
ordinary path. The GPU test at the end runs only where CuPy sees a device.
"""
import types
import warnings

import numpy as np
import pytest

import mxnet as mx
from mxnet import autograd, gluon
from mxnet.executor import cuda_graph
from mxnet.backend import cublas_graph
from mxnet.base import MXNetError
from mxnet.gluon import nn


class FakeGraph:
    def __init__(self, fn):
        self.fn = fn
        self.launches = 0


class FakeBackend:
    """Capture = remember the run; launch = run it again (pointers as captured)."""

    def __init__(self, fail=None):
        self.fail = fail
        self.captures = []
        self.launched = 0
        self.capturing_seen = []

    def ident(self, arr):
        return arr.__array_interface__["data"][0], arr.strides

    def capture(self, fn, owner):
        self.capturing_seen.append(cuda_graph.capturing())
        if self.fail is not None:
            raise self.fail
        g = FakeGraph(fn)
        self.captures.append(g)
        return g

    def launch(self, graph):
        graph.launches += 1
        self.launched += 1
        graph.fn()


@pytest.fixture
def graphs_on(monkeypatch):
    backend = FakeBackend()
    monkeypatch.setenv("MXNET_ENABLE_CUDA_GRAPHS", "1")
    monkeypatch.setattr(cuda_graph, "_test_backend", backend)
    return backend


def _net(dropout=0.0, seed=0):
    mx.random.seed(seed)
    net = nn.HybridSequential()
    net.add(nn.Dense(8, activation="relu", in_units=5), nn.BatchNorm(in_channels=8))
    if dropout:
        net.add(nn.Dropout(dropout))
    net.add(nn.Dense(3, in_units=8))
    net.initialize(mx.init.Xavier())
    return net


def _train(net, batches, lr=0.1):
    """SGD steps; returns the losses and the final parameters."""
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": lr})
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    losses = []
    for x, y in batches:
        with autograd.record():
            loss = loss_fn(net(x), y)
        loss.backward()
        trainer.step(x.shape[0])
        losses.append(loss.asnumpy())
    params = [v.data().asnumpy() for v in net.collect_params().values()]
    names = [k for k in net.collect_params().keys()]
    return losses, dict(zip(range(len(params)), params)) | {"names": names}


def _batches(n=6, seed=1):
    rng = np.random.RandomState(seed)
    return [(mx.nd.array(rng.randn(4, 5)), mx.nd.array(rng.randint(0, 3, 4)))
            for _ in range(n)]


def _entries(net):
    return [e for pool in net._cached_op._pools.values() for e in pool]


def test_config_needs_env_and_both_static_flags(monkeypatch):
    monkeypatch.delenv("MXNET_ENABLE_CUDA_GRAPHS", raising=False)
    assert cuda_graph.config([("static_alloc", True), ("static_shape", True)]) is None
    monkeypatch.setenv("MXNET_ENABLE_CUDA_GRAPHS", "1")
    assert cuda_graph.config([("static_alloc", True)]) is None
    assert cuda_graph.config({"static_alloc": "true", "static_shape": "false"}) is None
    cfg = cuda_graph.config({"static_alloc": "true", "static_shape": "1"})
    assert cfg is not None and cfg.warmup == 2
    monkeypatch.setenv("MXNET_CUDA_GRAPHS_WARMUP", "5")
    assert cuda_graph.config([("static_alloc", True), ("static_shape", True)]).warmup == 5
    monkeypatch.setenv("MXNET_ENABLE_CUDA_GRAPHS", "0")
    assert cuda_graph.config([("static_alloc", True), ("static_shape", True)]) is None


def test_no_runner_on_cpu_without_backend(monkeypatch):
    monkeypatch.setenv("MXNET_ENABLE_CUDA_GRAPHS", "1")
    net = _net()
    net.hybridize(static_alloc=True, static_shape=True)
    net(mx.nd.ones((2, 5)))
    assert all(e.graph is None for e in _entries(net))


def test_ineligible_reasons(monkeypatch):
    class P:
        mode = "training"
        axes = (1,)         # one draw shared along an axis: the operator body draws
    assert cuda_graph.ineligible_reason([("Convolution", None)], True) is None
    assert cuda_graph.ineligible_reason([("Dropout", P())], False) is None
    assert "random" in cuda_graph.ineligible_reason([("Dropout", P())], True)
    P.mode = "always"
    assert cuda_graph.ineligible_reason([("Dropout", P())], False) is not None
    # without axes Dropout draws from the device's Philox stream, which replays move on
    # (so does RNN's dropout between layers)
    P.axes = ()
    rnn = types.SimpleNamespace(p=0.2)
    assert cuda_graph.ineligible_reason([("Dropout", P())], True) is None
    assert cuda_graph.ineligible_reason([("RNN", rnn)], True) is None
    monkeypatch.setenv("MXNET_GPU_FUSED_DROPOUT", "0")
    assert "random" in cuda_graph.ineligible_reason([("Dropout", P())], True)
    assert "random" in cuda_graph.ineligible_reason([("RNN", rnn)], True)
    assert cuda_graph.ineligible_reason([("_random_uniform", None)], False) is not None
    assert cuda_graph.ineligible_reason([("_sample_normal", None)], False) is not None
    assert "Python" in cuda_graph.ineligible_reason([("Custom", None)], False)
    rrelu = types.SimpleNamespace(act_type="rrelu")
    assert cuda_graph.ineligible_reason([("LeakyReLU", rrelu)], True) is not None
    assert cuda_graph.ineligible_reason([("LeakyReLU", rrelu)], False) is None
    assert cuda_graph.ineligible_reason([("RNN", types.SimpleNamespace(p=0.0))],
                                        True) is None


def test_training_with_graphs_matches_ordinary_path(graphs_on):
    ref_net = _net()
    ref_net.hybridize()     # the ordinary path: graphs need static_alloc/static_shape
    batches = _batches()
    ref_losses, ref_params = _train(ref_net, batches)
    graph_net = _net()
    graph_net.hybridize(static_alloc=True, static_shape=True)
    losses, params = _train(graph_net, batches)
    assert graphs_on.captures, "nothing was captured"
    assert graphs_on.launched >= 2 * (len(batches) - 3)
    for a, b in zip(ref_losses, losses):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    names = params.pop("names")
    ref_params.pop("names")
    for k in ref_params:
        np.testing.assert_allclose(ref_params[k], params[k], rtol=1e-5, atol=1e-6)
    # BatchNorm's moving statistics were updated by the replays, in place
    for k, name in enumerate(names):
        if "running" in name:
            assert not np.allclose(params[k], 0 if "mean" in name else 1)


def test_data_input_is_copied_parameters_aliased(graphs_on):
    net = _net()
    net.hybridize(static_alloc=True, static_shape=True)
    _train(net, _batches(4))
    (entry,) = _entries(net)
    names = net._cached_op.symbol.list_inputs()
    runner = entry.graph
    data_pos = names.index("data")
    assert runner.moved[data_pos]
    # parameters: updated in place by the trainer, so they stay aliased
    assert sum(runner.moved) < len(runner.moved)


def test_outputs_are_fresh_copies(graphs_on):
    """A replay must not overwrite outputs handed out earlier."""
    net = _net()
    net.hybridize(static_alloc=True, static_shape=True)
    xs = [mx.nd.array(np.random.RandomState(i).randn(3, 5)) for i in range(6)]
    outs = [net(x) for x in xs]
    assert graphs_on.launched >= 3
    ref = _net()
    for x, o in zip(xs, outs):
        np.testing.assert_allclose(o.asnumpy(), ref(x).asnumpy(), rtol=1e-5, atol=1e-6)


def test_gradients_are_fresh_and_match(graphs_on):
    net = _net()
    net.hybridize(static_alloc=True, static_shape=True)
    ref = _net()
    x = mx.nd.array(np.random.RandomState(0).randn(4, 5))
    coef = mx.nd.array(np.random.RandomState(1).randn(4, 3))
    grads = []
    for k in range(5):
        with autograd.record():
            y = (net(x * (k + 1)) * coef).sum()
        y.backward()
        grads.append([p.grad().asnumpy() for p in net.collect_params().values()
                      if p.grad_req != "null"])
    for k in range(5):
        with autograd.record():
            y = (ref(x * (k + 1)) * coef).sum()
        y.backward()
        want = [p.grad().asnumpy() for p in ref.collect_params().values()
                if p.grad_req != "null"]
        assert len(want) == len(grads[k])
        for a, b in zip(grads[k], want):
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
    assert graphs_on.launched > 0


def test_parameter_moved_is_recaptured(graphs_on):
    """A parameter given a new buffer (set_data) after capture: the old graph must not
    read the old buffer."""
    net = _net()
    net.hybridize(static_alloc=True, static_shape=True)
    x = mx.nd.array(np.random.RandomState(0).randn(2, 5))
    for _ in range(4):
        net(x)
    n_caps = len(graphs_on.captures)
    assert n_caps >= 1
    w = net[0].weight
    w.set_data(w.data() * 2)
    got = net(x).asnumpy()
    ref = _net()
    ref[0].weight.set_data(ref[0].weight.data() * 2)
    np.testing.assert_allclose(got, ref(x).asnumpy(), rtol=1e-5, atol=1e-6)
    for _ in range(2):
        got = net(x).asnumpy()
    np.testing.assert_allclose(got, ref(x).asnumpy(), rtol=1e-5, atol=1e-6)
    assert len(graphs_on.captures) > n_caps


def test_training_mode_is_part_of_the_key(graphs_on):
    net = _net()
    net.hybridize(static_alloc=True, static_shape=True)
    x = mx.nd.array(np.random.RandomState(0).randn(2, 5))
    for _ in range(3):
        net(x)
    for _ in range(3):
        with autograd.train_mode():
            net(x)
    (entry,) = _entries(net)
    assert ("fwd", False) in entry.graph.graphs and ("fwd", True) in entry.graph.graphs


def test_dropout_in_training_is_captured_only_when_it_draws_on_the_device(graphs_on,
                                                                          monkeypatch):
    # by default a GPU Dropout draws from the device's Philox stream: eligible
    net = _net(dropout=0.5)
    net.hybridize(static_alloc=True, static_shape=True)
    _train(net, _batches(5))
    (entry,) = _entries(net)
    assert ("fwd", True) in entry.graph.graphs
    # with its kernel off it draws from CuPy's generator, which a replay would repeat
    monkeypatch.setenv("MXNET_GPU_FUSED_DROPOUT", "0")
    net = _net(dropout=0.5)
    net.hybridize(static_alloc=True, static_shape=True)
    _train(net, _batches(5))
    (entry,) = _entries(net)
    assert ("fwd", True) in entry.graph.off
    assert ("fwd", True) not in entry.graph.graphs
    # inference: Dropout is the identity, the graph may be captured
    x = mx.nd.ones((4, 5))
    for _ in range(4):
        net(x)
    assert any(("fwd", False) in e.graph.graphs for e in _entries(net))


def test_dropout_body_refuses_to_draw_inside_a_capture():
    """The operator body's draw (CuPy's generator on a GPU) would be replayed with the
    same numbers: inside a capture it raises, so the capture fails and the graph stays
    off; outside one it draws as usual."""
    x = mx.nd.ones((4, 6))
    prev = cublas_graph.capture_flag(True)
    try:
        with autograd.train_mode():
            with pytest.raises(MXNetError, match="CUDA graph"):
                mx.nd.Dropout(x, p=0.5).wait_to_read()
    finally:
        cublas_graph.capture_flag(prev)
    with autograd.train_mode():
        y = mx.nd.Dropout(x, p=0.5).asnumpy()
    assert set(np.unique(y)) <= {0.0, 2.0}


def test_failed_capture_falls_back_with_one_warning(monkeypatch):
    backend = FakeBackend(fail=RuntimeError("operation not permitted when stream is "
                                            "capturing"))
    monkeypatch.setenv("MXNET_ENABLE_CUDA_GRAPHS", "1")
    monkeypatch.setattr(cuda_graph, "_test_backend", backend)
    monkeypatch.setattr(cuda_graph, "_warned", set())
    net = _net()
    net.hybridize(static_alloc=True, static_shape=True)
    batches = _batches(6)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        losses, params = _train(net, batches)
    msgs = [str(w.message) for w in rec if "CUDA graph" in str(w.message)]
    assert len(msgs) == 1, msgs
    assert backend.capturing_seen and all(backend.capturing_seen)
    ref_losses, ref_params = _train(_ref_net_plain(), batches)
    for a, b in zip(ref_losses, losses):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def _ref_net_plain():
    net = _net()
    net.hybridize()
    return net


def test_not_capturing_outside_capture():
    assert cuda_graph.capturing() is False


def test_storage_private_scope_bypasses_free_lists():
    from mxnet import storage
    pool = storage.HostPool()
    b = pool.alloc(64)
    pool.free(b)
    with storage.private_scope():
        p = pool.alloc(64)
        assert pool.num_reuses == 0         # not taken from the free list
        p.pool.free(p)
    assert pool.stats()["bytes_pooled"] == 64   # and not given back to it
    assert pool.alloc(64) is not None and pool.num_reuses == 1


HAS_GPU = mx.context.num_gpus() > 0


@pytest.mark.skipif(not HAS_GPU, reason="needs a CUDA GPU seen by CuPy")
def test_gpu_graphs_match_ordinary_path(monkeypatch):
    monkeypatch.setenv("MXNET_ENABLE_CUDA_GRAPHS", "1")
    ctx = mx.gpu(0)
    batches = [(x.as_in_context(ctx), y.as_in_context(ctx)) for x, y in _batches(8)]

    def run(graphs):
        monkeypatch.setenv("MXNET_ENABLE_CUDA_GRAPHS", "1" if graphs else "0")
        mx.random.seed(0)
        net = nn.HybridSequential()
        net.add(nn.Conv2D(4, 3, padding=1), nn.BatchNorm(), nn.Activation("relu"),
                nn.MaxPool2D(), nn.Dense(3))
        net.initialize(mx.init.Xavier(), ctx=ctx)
        net.hybridize(static_alloc=True, static_shape=True)
        trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
        loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
        losses = []
        for x, y in batches:
            x = x.reshape((4, 1, 1, 5)).tile((1, 2, 5, 1))
            with autograd.record():
                loss = loss_fn(net(x), y)
            loss.backward()
            trainer.step(4)
            losses.append(loss.asnumpy())
        entries = [e for pool in net._cached_op._pools.values() for e in pool]
        return losses, net, entries

    ref, _, _ = run(False)
    got, net, entries = run(True)
    assert entries and entries[0].graph is not None
    assert entries[0].graph.graphs, entries[0].graph.off
    for a, b in zip(ref, got):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


class _FakeCupy:
    """Just enough of CuPy for CupyGraphs: records the capture protocol."""

    def __init__(self):
        self.log = []
        fake = self

        class Device:
            def __init__(self, i):
                self.i = i

            def __enter__(self):
                fake.log.append(("device", self.i))

            def __exit__(self, *a):
                return False

        class Stream:
            def __init__(self, non_blocking=False):
                fake.log.append(("stream", non_blocking))
                self.ptr = 99

            def __enter__(self):
                fake.log.append("stream-enter")
                return self

            def __exit__(self, *a):
                fake.log.append("stream-exit")

            def begin_capture(self):
                fake.log.append("begin")

            def end_capture(self):
                fake.log.append("end")
                return "GRAPH"

        class MemoryPool:
            def malloc(self, n):
                return n

        class _Alloc:
            def __init__(self, fn):
                self.fn = fn

            def __enter__(self):
                fake.log.append(("allocator", type(self.fn.__self__).__name__))

            def __exit__(self, *a):
                fake.log.append("allocator-exit")

        self.cuda = types.SimpleNamespace(Device=Device, Stream=Stream,
                                          MemoryPool=MemoryPool, using_allocator=_Alloc,
                                          get_current_stream=lambda: "CUR")


def test_cupy_backend_capture_protocol(monkeypatch):
    from mxnet.backend import cublas_graph
    from mxnet.backend.cudnn import _runtime
    monkeypatch.setattr(cublas_graph, "prepare", lambda dev: None)
    monkeypatch.setattr(_runtime, "try_runtime", lambda: None)
    cp = _FakeCupy()
    b = cuda_graph.CupyGraphs(cp, 3)
    ran = []
    owner = types.SimpleNamespace(pool=None)
    assert b.capture(lambda: ran.append(cp.log[-1]), owner) == "GRAPH"
    assert owner.pool is not None
    # the run happens between begin and end, on a non-blocking stream, with the
    # private pool as the allocator
    assert ran == ["begin"]
    assert cp.log[:2] == [("device", 3), ("stream", True)]
    assert ("allocator", "MemoryPool") in cp.log and cp.log[-2:] == ["stream-exit",
                                                                    "allocator-exit"]
    cp.log.clear()

    def boom():
        raise NotImplementedError("calling cuBLAS API during stream capture")
    pool = owner.pool
    with pytest.raises(NotImplementedError):
        b.capture(boom, owner)
    assert owner.pool is pool                           # one pool per owner
    assert "begin" in cp.log and "end" in cp.log        # the capture was closed
    assert ("stream", True) not in cp.log               # one stream per device


def test_capture_does_not_block_other_threads_allocations(graphs_on):
    """What the captured run allocates from the storage pool is private to it."""
    from mxnet import storage
    net = _net()
    net.hybridize(static_alloc=True, static_shape=True)
    seen = []
    real = graphs_on.capture

    def capture(fn, owner):
        seen.append(getattr(storage._private, "on", False))
        return real(fn, owner)
    graphs_on.capture = capture
    for _ in range(4):
        net(mx.nd.ones((2, 5)))
    assert seen and all(seen)
    assert getattr(storage._private, "on", False) is False


class _Isolated(gluon.HybridBlock):
    """One layer between identity copies, so the whole computation is in the graph."""

    def __init__(self, make, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.f = make()

    def hybrid_forward(self, F, *args):
        out = self.f(*[F.identity(a) for a in args])
        return F.identity(out)


_LAYERS = {
    "add": (lambda: (lambda x, y: x + y), 2),
    "add_scalar": (lambda: (lambda x: x + 0.5), 1),
    "Conv2D": (lambda: nn.Conv2D(8, kernel_size=(1, 1)), 1),
    "Conv2DTranspose": (lambda: nn.Conv2DTranspose(8, kernel_size=(1, 1)), 1),
    "Dense": (lambda: nn.Dense(16), 1),
    "tanh": (lambda: nn.Activation("tanh"), 1),
    "Flatten": (lambda: nn.Flatten(), 1),
    "MaxPool2D": (lambda: nn.MaxPool2D(), 1),
    "AvgPool2D": (lambda: nn.AvgPool2D(), 1),
    "GlobalAvgPool2D": (lambda: nn.GlobalAvgPool2D(), 1),
    "BatchNorm": (lambda: nn.BatchNorm(), 1),
    "InstanceNorm": (lambda: nn.InstanceNorm(), 1),
    "LayerNorm": (lambda: nn.LayerNorm(), 1),
    "LeakyReLU": (lambda: nn.LeakyReLU(0.1), 1),
    "PReLU": (lambda: nn.PReLU(), 1),
    "ELU": (lambda: nn.ELU(), 1),
    "Swish": (lambda: nn.Swish(), 1),
}


def _layer_parity(name, ctx, steps=5):
    """An imperative layer and a graph-run copy (same parameters, same inputs) agree in
    inference and in training: outputs, input gradients, parameter gradients."""
    make, n_in = _LAYERS[name]
    rng = np.random.RandomState(3)
    shape = (2, 3, 6, 4)
    inputs = [mx.nd.array(rng.rand(*shape), ctx=ctx) for _ in range(n_in)]
    inputs_g = [a.copy() for a in inputs]
    for a in inputs + inputs_g:
        a.attach_grad()
    net, net_g = _Isolated(make), _Isolated(make)
    net.initialize(ctx=ctx)
    net_g.initialize(ctx=ctx)
    net(*inputs)
    for p, q in zip(net.collect_params().values(), net_g.collect_params().values()):
        q.set_data(p.data())
    net_g.hybridize(static_alloc=True, static_shape=True)
    for _ in range(steps):
        np.testing.assert_allclose(net(*inputs).asnumpy(), net_g(*inputs_g).asnumpy(),
                                   rtol=1e-4, atol=1e-5)
    for _ in range(steps):
        with autograd.record():
            out = net(*inputs)
        out.backward()
        with autograd.record():
            out_g = net_g(*inputs_g)
        out_g.backward()
        np.testing.assert_allclose(out.asnumpy(), out_g.asnumpy(), rtol=1e-4, atol=1e-5)
        for a, b in zip(inputs, inputs_g):
            np.testing.assert_allclose(a.grad.asnumpy(), b.grad.asnumpy(), rtol=1e-4,
                                       atol=1e-5)
        for p, q in zip(net.collect_params().values(), net_g.collect_params().values()):
            np.testing.assert_allclose(p.data().asnumpy(), q.data().asnumpy(), rtol=1e-4,
                                       atol=1e-5)
            if p.grad_req != "null":
                np.testing.assert_allclose(p.grad().asnumpy(), q.grad().asnumpy(),
                                           rtol=1e-4, atol=1e-5)
    return [e.graph for pool in net_g._cached_op._pools.values() for e in pool]


@pytest.mark.parametrize("name", sorted(_LAYERS))
def test_layers_with_graphs_match_imperative(graphs_on, name):
    runners = _layer_parity(name, mx.cpu())
    assert all(r is not None for r in runners)
    assert sum(len(r.graphs) for r in runners) >= 2      # inference and training
    assert sum(r.replays for r in runners) > 0


@pytest.mark.skipif(not HAS_GPU, reason="needs a CUDA GPU seen by CuPy")
@pytest.mark.parametrize("name", sorted(_LAYERS))
def test_gpu_layers_with_graphs_match_imperative(monkeypatch, name):
    monkeypatch.setenv("MXNET_ENABLE_CUDA_GRAPHS", "1")
    runners = _layer_parity(name, mx.gpu(0))
    assert all(r is not None for r in runners)
    assert sum(r.replays for r in runners) > 0, [r.off for r in runners]


def test_nd_cached_op_flags_enable_graphs(graphs_on):
    data = mx.sym.var("data")
    sym = mx.sym.FullyConnected(data, num_hidden=4, name="fc")
    w = mx.nd.array(np.random.RandomState(0).randn(4, 3))
    b = mx.nd.zeros(4)
    x = mx.nd.array(np.random.RandomState(1).randn(2, 3))
    plain = mx.nd.CachedOp(sym)
    op = mx.nd.CachedOp(sym, flags=[("static_alloc", "true"), ("static_shape", "true")])
    want = plain(x, w, b).asnumpy()
    for _ in range(4):
        np.testing.assert_allclose(op(x, w, b).asnumpy(), want, rtol=1e-6)
    assert graphs_on.launched >= 1
    assert plain._graph.graph_cfg is None


def _resnet_steps(graphs, monkeypatch, steps=4):
    from mxnet.gluon.model_zoo import vision
    monkeypatch.setenv("MXNET_ENABLE_CUDA_GRAPHS", "1" if graphs else "0")
    mx.random.seed(7)
    net = vision.resnet18_v1(classes=5)
    net.initialize(mx.init.Xavier())
    net.hybridize(static_alloc=True, static_shape=True)
    trainer = gluon.Trainer(net.collect_params(), "sgd",
                            {"learning_rate": 0.05, "momentum": 0.9})
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    rng = np.random.RandomState(0)
    losses = []
    for _ in range(steps):
        x = mx.nd.array(rng.rand(2, 3, 32, 32))
        y = mx.nd.array(rng.randint(0, 5, 2))
        with autograd.record():
            loss = loss_fn(net(x), y)
        loss.backward()
        trainer.step(2)
        losses.append(loss.asnumpy())
    return losses, [p.data().asnumpy() for p in net.collect_params().values()]


@pytest.mark.slow
def test_resnet18_training_with_graphs_matches(graphs_on, monkeypatch):
    ref_losses, ref_params = _resnet_steps(False, monkeypatch)
    launched = graphs_on.launched
    losses, params = _resnet_steps(True, monkeypatch)
    assert graphs_on.launched - launched >= 2          # forward and backward replayed
    for a, b in zip(ref_losses, losses):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
    for a, b in zip(ref_params, params):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


def test_moved_auxiliary_state_is_copied_in_and_back(graphs_on):
    """BatchNorm's running mean given a new buffer after capture: it becomes a copied
    input, and every training forward still updates the caller's array."""
    nets = []
    for graphs in (False, True):
        net = _net()
        if graphs:
            net.hybridize(static_alloc=True, static_shape=True)
        else:
            net.hybridize()
        nets.append(net)
    x = mx.nd.array(np.random.RandomState(0).randn(4, 5))
    for k in range(7):
        if k == 4:
            for net in nets:
                bn = net[1]
                bn.running_mean.set_data(bn.running_mean.data() + 1)
        for net in nets:
            with autograd.record():
                y = net(x * (k + 1))
            y.backward()
    (entry,) = _entries(nets[1])
    assert entry.graph.replays > 0 and any(entry.graph.moved[entry.graph.n_args:])
    for a, b in zip(nets[0].collect_params().values(), nets[1].collect_params().values()):
        np.testing.assert_allclose(a.data().asnumpy(), b.data().asnumpy(), rtol=1e-5,
                                   atol=1e-6)


def test_verbose_reports_captures_on_stderr(graphs_on, monkeypatch, capsys):
    monkeypatch.setenv("MXNET_CUDA_GRAPHS_VERBOSE", "1")
    net = _net()
    net.hybridize(static_alloc=True, static_shape=True)
    for _ in range(4):
        net(mx.nd.ones((2, 5)))
    err = capsys.readouterr().err
    assert "captured ('fwd', False)" in err


def test_bfloat16_amp_training_with_graphs_matches_ordinary_path(graphs_on):
    """Under amp.init('bfloat16') the graph's bfloat16 nodes run through the runner
    (float32 where no kernel takes bfloat16): captured and replayed, the training is
    the ordinary path's."""
    from mxnet.contrib import amp
    from mxnet.contrib.amp import amp as amp_impl
    amp_impl._reset()
    amp.init(target_dtype="bfloat16")
    try:
        batches = _batches()
        ref_net = _net()
        ref_net.hybridize()
        ref_losses, ref_params = _train(ref_net, batches)
        graph_net = _net()
        graph_net.hybridize(static_alloc=True, static_shape=True)
        losses, params = _train(graph_net, batches)
    finally:
        amp_impl._reset()
    assert graphs_on.captures and graphs_on.launched >= 2 * (len(batches) - 3)
    for a, b in zip(ref_losses, losses):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    # and it did run in bfloat16: float32 training differs by bfloat16's rounding
    f32_losses, _ = _train(_net(), batches)
    assert not np.allclose(np.concatenate(f32_losses), np.concatenate(losses), rtol=1e-4)
    params.pop("names")
    ref_params.pop("names")
    for k in ref_params:
        np.testing.assert_allclose(ref_params[k], params[k], rtol=1e-5, atol=1e-6)


def test_lent_gradients_are_copied_before_a_later_replay(graphs_on):
    """The graph's gradient arrays are lent to the tape (no copy per step): what
    autograd.grad returns and what backward() wrote into the parameters stay as they
    were when later replays rewrite those arrays."""
    net = _net()
    net.hybridize(static_alloc=True, static_shape=True)
    x = mx.nd.array(np.random.RandomState(0).randn(4, 5))
    params = [p for p in net.collect_params().values() if p.grad_req != "null"]
    for _ in range(4):                                     # warm up, then capture
        with autograd.record():
            y = net(x).sum()
        y.backward()
    kept_grad, kept_buf = [], []
    for k in range(3):
        with autograd.record():
            y = (net(x * (k + 1)) ** 2).sum()
        w = params[0].data()
        kept_grad.append(autograd.grad(y, [w], retain_graph=True)[0])
        y.backward()
        kept_buf.append(params[0].grad().copy())
        kept_buf[-1].wait_to_read()
    assert graphs_on.launched > 0
    for k in range(3):
        np.testing.assert_allclose(kept_grad[k].asnumpy(), kept_buf[k].asnumpy(),
                                   rtol=1e-5, atol=1e-6)
    assert not np.allclose(kept_grad[0].asnumpy(), kept_grad[2].asnumpy())


def test_graph_runs_stay_in_the_calling_thread(graphs_on, monkeypatch):
    """A replay only queues work on the device: it runs in the caller's thread even for
    an executor too large for the inline rule (here every one is), so the loss reading
    its outputs is not pushed to an engine worker after it."""
    from mxnet import engine
    monkeypatch.setenv("MXNET_EXEC_INLINE_MAX_BYTES", "0")
    net = _net()
    net.hybridize(static_alloc=True, static_shape=True)
    batches = _batches(8)
    _train(net, batches[:4])
    assert graphs_on.captures, "nothing was captured"
    eng = engine.get()
    pushed = []
    push = eng.push_sync

    def counting(fn, ctx, const, mutate, priority=0, name=None):
        pushed.append(name)
        return push(fn, ctx, const, mutate, priority, name)
    monkeypatch.setattr(eng, "push_sync", counting)
    launched = graphs_on.launched
    _train(net, batches[4:])
    assert graphs_on.launched > launched
    assert "CUDAGraph.forward" not in pushed, pushed
