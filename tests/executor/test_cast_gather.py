"""AMP's weight casts gathered into one call each way (executor/cast_gather.py).

GPU executors gather; here CPU executors are made to (``applies`` forced), with the
gathered call's kernel either the real multi-tensor cast kernel compiled for the host
(tests/multi_cast_host.py) or declining (the plain calls then run). Either way the
executor must train exactly as the plain one: the casts round the same way, and the
graph's new order (the casts first) binds the same arrays and keeps the memory plan
consistent."""
import numpy as np
import pytest

import mxnet as mx
from mxnet import autograd, gluon, nd
from mxnet.base import bfloat16
from mxnet.executor import cast_gather
from mxnet.executor.graph import Graph

from bound_runs import bind_random
from multi_cast_host import host_multi_cast, install

pytestmark = pytest.mark.skipif(bfloat16 is None, reason="needs ml_dtypes")


@pytest.fixture
def gather_on_cpu(monkeypatch, tmp_path):
    """Gathering on CPU executors, the gathered calls cast by kernels_gpu_multi's own
    multi_cast with host-built kernels; returns a dict counting the gathered calls that
    ran and that declined (and, under "capturing", those that ran inside a capture)."""
    seen = {"ran": 0, "declined": 0, "kernel": True, "capturing": 0}
    monkeypatch.setattr(cast_gather, "applies", lambda device: True)
    host = install(monkeypatch, tmp_path)
    seen["cupy"] = host
    from mxnet.backend import cublas_graph

    def cast(xp, pairs, tables):
        ok = seen["kernel"] and host_multi_cast(host, pairs, tables)
        seen["ran" if ok else "declined"] += 1
        seen["capturing"] += bool(ok and cublas_graph.capturing())
        return ok
    monkeypatch.setattr(cast_gather, "_multi_cast", cast)
    return seen


def _amp_mlp():
    """FullyConnected layers reading bfloat16 casts of their float32 weights and
    biases (what AMP's conversion inserts), with a float32 softmax head."""
    sym = mx.sym
    x = sym.var("data")
    h = x
    for i, width in enumerate((12, 10)):
        w, b = sym.var(f"fc{i}_weight"), sym.var(f"fc{i}_bias")
        h = sym.FullyConnected(sym.amp_cast(h, dtype="bfloat16"),
                               sym.amp_cast(w, dtype="bfloat16"),
                               sym.amp_cast(b, dtype="bfloat16"), num_hidden=width,
                               name=f"fc{i}")
        h = sym.Activation(h, act_type="relu")
    out = sym.FullyConnected(sym.amp_cast(h, dtype="float32"), num_hidden=5, name="head")
    return sym.SoftmaxOutput(out, name="out")


def _bind(sym, grad_req="write"):
    return bind_random(sym, mx.cpu(), (4, 6), grad_req)


def _train(ex, steps=2):
    outs = []
    for _ in range(steps):
        ex.forward(is_train=True)
        ex.backward()
        outs.append([o.asnumpy() for o in ex.outputs])
        for name, g in ex.grad_dict.items():       # an SGD step, so that casts change
            if g is not None and not name.endswith("label"):
                ex.arg_dict[name][:] = ex.arg_dict[name] - 0.1 * g
    return outs, {k: v.asnumpy() for k, v in ex.grad_dict.items() if v is not None}


def _plain(monkeypatch, sym, grad_req="write"):
    with monkeypatch.context() as m:
        m.setattr(cast_gather, "applies", lambda device: False)
        return _train(_bind(sym, grad_req))


def _assert_equal(a, b):
    for u, v in zip(a[0], b[0]):
        for p, q in zip(u, v):
            np.testing.assert_array_equal(p, q)
    assert a[1].keys() == b[1].keys()
    for k in a[1]:
        np.testing.assert_array_equal(a[1][k], b[1][k], err_msg=k)


@pytest.mark.parametrize("kernel", [True, False], ids=["kernel", "declined"])
def test_symbol_training_equals_the_plain_executor(gather_on_cpu, monkeypatch, kernel):
    want = _plain(monkeypatch, _amp_mlp())
    gather_on_cpu["kernel"] = kernel
    sym = _amp_mlp()
    ex = _bind(sym)
    # the casts are numbered first; the bound arrays keep their order
    assert ex._graph.arg_names == sym.list_arguments()
    first = [n.op.name for n in ex._graph.nodes if n.op is not None][:5]
    assert first == ["amp_cast"] * 5          # the data's cast and four weight casts
    got = _train(ex)
    _assert_equal(got, want)
    assert isinstance(ex._fcalls[0].fused, cast_gather.GatheredForward)
    assert len(ex._fcalls[0].then) == 5
    assert isinstance(ex._bcalls[-1].fused, cast_gather.GatheredBackward)
    assert len(ex._bcalls[-1].then) == 5      # the data's gradient too (simple_bind)
    ran, declined = (4, 0) if kernel else (0, 4)     # two phases, two steps
    assert (gather_on_cpu["ran"], gather_on_cpu["declined"]) == (ran, declined)


def test_add_requests_keep_their_own_backward_calls(gather_on_cpu, monkeypatch):
    want = _plain(monkeypatch, _amp_mlp(), "add")
    ex = _bind(_amp_mlp(), "add")
    got = _train(ex)
    _assert_equal(got, want)
    assert isinstance(ex._fcalls[0].fused, cast_gather.GatheredForward)
    assert not any(isinstance(c.fused, cast_gather.GatheredBackward) for c in ex._bcalls)


def test_a_cast_that_is_an_output_stays_in_place(gather_on_cpu):
    sym = mx.sym
    w = sym.var("w")
    cast_w = sym.amp_cast(w, dtype="bfloat16", name="seen")
    y = sym.FullyConnected(sym.amp_cast(sym.var("data"), dtype="bfloat16"), cast_w,
                           sym.amp_cast(sym.var("b"), dtype="bfloat16"), num_hidden=3)
    ex = sym.Group([y, cast_w]).simple_bind(mx.cpu(), data=(2, 4))
    g = ex._graph
    assert [g.nodes[i].name for i in cast_gather.hoisted_casts(g)] != [] and \
        "seen" not in [g.nodes[i].name for i in cast_gather.hoisted_casts(g)]
    ex.arg_dict["w"][:] = np.arange(12, dtype=np.float32).reshape(3, 4)
    ex.forward()
    np.testing.assert_array_equal(ex.outputs[1].asnumpy().astype(np.float32),
                                  np.arange(12, dtype=np.float32).reshape(3, 4))


def test_hybridized_amp_training_equals_the_plain_executor(gather_on_cpu, monkeypatch):
    """Gluon's hybridized AMP training (amp.init, amp.init_trainer): a CNN with
    BatchNorm trains to the same parameters with the gathered casts as without."""
    from mxnet.contrib import amp
    from mxnet.contrib.amp import amp as amp_impl
    amp_impl._reset()               # amp.init patches operators process-wide
    amp.init(target_dtype="bfloat16")
    try:
        _compare_hybridized_amp_runs(amp, gather_on_cpu, monkeypatch)
    finally:
        amp_impl._reset()


def _hybridized_amp_run(amp, ctx, steps=3):
    """(last loss, parameters) after ``steps`` AMP SGD steps of a small CNN with
    BatchNorm, hybridized (amp.init already called)."""
    mx.random.seed(0)
    net = gluon.nn.HybridSequential()
    net.add(gluon.nn.Conv2D(8, 3, padding=1), gluon.nn.BatchNorm(),
            gluon.nn.Activation("relu"), gluon.nn.Conv2D(8, 3), gluon.nn.Flatten(),
            gluon.nn.Dense(10))
    net.initialize(mx.init.Xavier(), ctx=ctx)
    net.hybridize(static_alloc=True, static_shape=True)
    tr = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1, "momentum": 0.9})
    amp.init_trainer(tr)
    x = nd.array(np.random.RandomState(1).rand(4, 3, 8, 8), ctx=ctx)
    y = nd.array([1, 2, 3, 4], ctx=ctx)
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    for _ in range(steps):
        with autograd.record():
            loss = loss_fn(net(x), y)
            with amp.scale_loss(loss, tr) as scaled:
                pass
        autograd.backward(scaled)
        tr.step(4)
    return loss.asnumpy(), [p.data().asnumpy() for p in net.collect_params().values()]


def _compare_hybridized_amp_runs(amp, gather_on_cpu, monkeypatch):
    def run(gather):
        with monkeypatch.context() as m:
            if not gather:
                m.setattr(cast_gather, "applies", lambda device: False)
            return _hybridized_amp_run(amp, mx.cpu())
    want = run(False)
    before = gather_on_cpu["ran"]
    got = run(True)
    assert gather_on_cpu["ran"] - before == 6       # forward and backward, 3 steps
    assert gather_on_cpu["declined"] == 0
    np.testing.assert_array_equal(got[0], want[0])
    for a, b in zip(got[1], want[1]):
        np.testing.assert_array_equal(a, b)


def test_inference_executors_keep_the_graph_order(gather_on_cpu):
    """Without a backward the casts' outputs would all live from the start (in
    training they live until backward anyway): no reordering, no gathering."""
    sym = _amp_mlp()
    ex = sym.simple_bind(mx.cpu(), data=(4, 6), grad_req="null")
    assert not cast_gather.hoisted_order(ex._graph) is None   # it could reorder ...
    assert [n.name for n in ex._graph.nodes] == \
        [n.name for n in Graph(ex._optimized).nodes]
    ex.forward()
    assert not any(isinstance(c.fused, cast_gather.GatheredForward)   # ... but does not
                   for c in ex._fcalls)


def test_a_weight_read_elsewhere_keeps_its_cast_in_place(gather_on_cpu, monkeypatch):
    """A weight also read in float32 (here by a penalty on it): its gradient sums two
    contributions, whose order a reordered backward would change; its cast stays
    where it is. (Two casts of one weight are one node after the executor merges
    duplicate computations, and its gradient is summed before the one cast back.)"""
    def tied():
        sym = mx.sym
        w = sym.var("w")
        h = sym.FullyConnected(sym.amp_cast(sym.var("data"), dtype="bfloat16"),
                               sym.amp_cast(w, dtype="bfloat16"), no_bias=True,
                               num_hidden=6, name="a")
        h = sym.FullyConnected(sym.Activation(h, act_type="relu"),
                               sym.amp_cast(sym.var("v"), dtype="bfloat16"),
                               sym.amp_cast(sym.var("c"), dtype="bfloat16"),
                               num_hidden=5, name="head")
        out = sym.SoftmaxOutput(sym.amp_cast(h, dtype="float32"), name="out")
        penalty = sym.make_loss(0.1 * sym.sum(sym.square(w)), name="penalty")
        return sym.Group([out, penalty])
    want = _plain(monkeypatch, tied())
    ex = _bind(tied())
    g = ex._graph
    hoisted = {g.nodes[g.entry_node[g.node_inputs[i][0]]].name
               for i in cast_gather.hoisted_casts(g)}
    assert hoisted == {"data", "v", "c"}
    _assert_equal(_train(ex), want)


def test_with_cuda_graphs_on_training_equals_the_plain_run(gather_on_cpu, monkeypatch):
    """MXNET_ENABLE_CUDA_GRAPHS=1 (a stand-in graph backend whose replay reruns the
    captured phase): the gathered calls run in the replayed phases and the training
    equals the plain run. (Inside a real capture the calls use the launch tables made
    in the warm-up runs: tests/operator/test_kernels_gpu_multi_cast.py; on a GPU,
    test_on_gpu_gathered_casts_are_captured.)"""
    from mxnet.executor import cuda_graph

    class ReplayBackend:
        def __init__(self):
            self.captures, self.launches = 0, 0

        @staticmethod
        def ident(arr):
            return arr.__array_interface__["data"][0], arr.strides

        def capture(self, fn, owner):
            self.captures += 1
            return fn

        def launch(self, graph):
            self.launches += 1
            graph()

    from mxnet.contrib import amp
    from mxnet.contrib.amp import amp as amp_impl
    amp_impl._reset()
    amp.init(target_dtype="bfloat16")
    try:
        with monkeypatch.context() as m:
            m.setattr(cast_gather, "applies", lambda device: False)
            want = _hybridized_amp_run(amp, mx.cpu(), steps=5)
        backend = ReplayBackend()
        monkeypatch.setenv("MXNET_ENABLE_CUDA_GRAPHS", "1")
        monkeypatch.setattr(cuda_graph, "_test_backend", backend)
        ran = gather_on_cpu["ran"]
        got = _hybridized_amp_run(amp, mx.cpu(), steps=5)
    finally:
        amp_impl._reset()
    assert backend.captures >= 2 and backend.launches >= 2
    assert gather_on_cpu["ran"] - ran == 10 and gather_on_cpu["declined"] == 0
    np.testing.assert_array_equal(got[0], want[0])
    for a, b in zip(got[1], want[1]):
        np.testing.assert_array_equal(a, b)


def test_the_switch(monkeypatch):
    monkeypatch.delenv("MXNET_GPU_AMP_CAST_GATHER", raising=False)
    assert cast_gather.applies("gpu") and not cast_gather.applies("cpu")
    monkeypatch.setenv("MXNET_GPU_AMP_CAST_GATHER", "0")
    assert not cast_gather.applies("gpu")


@pytest.mark.skipif(mx.context.num_gpus() == 0, reason="no GPU")
def test_on_gpu_gathered_casts_train_as_the_plain_executor(monkeypatch):
    """On a GPU (gathering by default): the multi-tensor kernel runs every step (it
    does not decline) and the hybridized AMP network trains to the same parameters as
    with MXNET_GPU_AMP_CAST_GATHER=0."""
    from mxnet.contrib import amp
    from mxnet.contrib.amp import amp as amp_impl
    launched = []
    real = cast_gather._multi_cast
    monkeypatch.setattr(cast_gather, "_multi_cast",
                        lambda xp, pairs: launched.append(real(xp, pairs)) or launched[-1])
    amp_impl._reset()
    amp.init(target_dtype="bfloat16")
    try:
        runs = []
        for switch in ("0", "1"):
            monkeypatch.setenv("MXNET_GPU_AMP_CAST_GATHER", switch)
            runs.append(_hybridized_amp_run(amp, mx.gpu(0)))
    finally:
        amp_impl._reset()
    assert launched and all(launched)
    (loss0, params0), (loss1, params1) = runs
    np.testing.assert_array_equal(loss1, loss0)
    for a, b in zip(params1, params0):
        np.testing.assert_array_equal(a, b)


@pytest.mark.skipif(mx.context.num_gpus() == 0, reason="no GPU")
def test_on_gpu_gathered_casts_are_captured(monkeypatch):
    """With CUDA graphs on a GPU: the gathered casts run inside the captures (their
    launch tables made in the warm-up runs), the phases replay, and training equals
    the run without graphs bit for bit."""
    import warnings
    from mxnet.backend import cublas_graph
    from mxnet.contrib import amp
    from mxnet.contrib.amp import amp as amp_impl
    in_capture = []
    real = cast_gather._multi_cast

    def counted(xp, pairs, tables):
        ok = real(xp, pairs, tables)
        if cublas_graph.capturing():
            in_capture.append(ok)
        return ok
    monkeypatch.setattr(cast_gather, "_multi_cast", counted)
    amp_impl._reset()
    amp.init(target_dtype="bfloat16")
    try:
        monkeypatch.setenv("MXNET_ENABLE_CUDA_GRAPHS", "0")
        want = _hybridized_amp_run(amp, mx.gpu(0), steps=6)
        monkeypatch.setenv("MXNET_ENABLE_CUDA_GRAPHS", "1")
        with warnings.catch_warnings():         # a failed capture warns
            warnings.filterwarnings("error", message=".*CUDA graph capture failed")
            got = _hybridized_amp_run(amp, mx.gpu(0), steps=6)
    finally:
        amp_impl._reset()
    assert in_capture and all(in_capture)
    np.testing.assert_array_equal(got[0], want[0])
    for a, b in zip(got[1], want[1]):
        np.testing.assert_array_equal(a, b)
