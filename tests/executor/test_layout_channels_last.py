"""The GPU layout scheme (channels-last, executor/layout.py) run on the CPU.

The executor is bound with the GPU's scheme, and the operators the scheme hands
channels-last arrays to run the real cuDNN adapters (operator/kernels_cudnn.py) on a
stand-in CuPy over NumPy, with NumPy stand-ins for cuDNN's compute calls
(tests/cudnn_stand_in.py); elementwise operators run their NumPy bodies on the
channels-last bytes. Outputs, gradients and moving statistics must equal the plain
executor's, including when a kernel declines and the executor converts to plain and
back. What the GPU computes is checked on a GPU (test_channels_last_gpu.py)."""
import numpy as np
import pytest

import mxnet as mx
from mxnet.executor import executor as E
from mxnet.executor import layout
from mxnet.operator import kernels as KT
from mxnet.operator import kernels_cudnn as KC

from bound_runs import assert_same_runs, bind_random, small_resnet, train_steps
from cudnn_stand_in import LIB, WHY, FakeArray, install_numeric_kernels

pytestmark = pytest.mark.skipif(LIB is None, reason=f"libcudnn not loadable: {WHY[:200]}")

CAPABLE = ("Convolution", "BatchNorm", "Pooling")
AGNOSTIC = ("Activation", "relu", "elemwise_add", "_plus", "broadcast_add", "amp_cast")


def _bind(sym, grad_req="write", shape=(2, 3, 8, 8)):
    return bind_random(sym, mx.cpu(), shape, grad_req)


def _same(a, b):
    assert_same_runs(a, b, rtol=1e-4, atol=1e-5)


CALLS = []
_INSIDE = []


def _via_cudnn(fn, decline=False):
    """A CPU kernel that runs cuDNN adapter ``fn`` on the stand-in CuPy: the arrays are
    viewed as FakeArrays (same memory) and the results mapped back to the arrays the
    executor gave (so it sees its destinations written)."""
    def kernel(ctx, p, *rest):
        # the stand-ins compute with MXNet's CPU operators, which find this kernel
        # again: inside a call, those run their own bodies
        if decline or _INSIDE:
            return NotImplemented
        back = {}

        def fake(v):
            if isinstance(v, list):
                return [fake(a) for a in v]
            if isinstance(v, np.ndarray):
                f = v.view(FakeArray)
                back[id(f)] = v
                return f
            return v
        args = [fake(a) for a in rest]
        CALLS.append((fn.__name__, ctx.layout))
        _INSIDE.append(fn)
        try:
            res = fn(ctx, p, *args)
        finally:
            _INSIDE.pop()
        if res is NotImplemented:
            return res
        return [None if r is None else back.get(id(r), np.asarray(r)) for r in res]
    kernel.accumulates = getattr(fn, "accumulates", False)
    return kernel


@pytest.fixture
def channels_last_on_cpu(monkeypatch, bn_kernels_on_host):
    """Bind CPU executors with the GPU scheme and the cuDNN adapters (channels-last
    BatchNorm's kernels compiled for the host)."""
    install_numeric_kernels(monkeypatch)
    monkeypatch.setattr(E, "layout_scheme", lambda device: layout.CHANNELS_LAST)
    for name in AGNOSTIC:                      # their NumPy bodies, not oneDNN's
        for bw in (False, True):
            monkeypatch.delitem(KT._TABLE, (name, "cpu", bw), raising=False)

    def use(decline=()):
        for name in CAPABLE:
            fwd, bwd = KC.OPS[name]
            monkeypatch.setitem(KT._TABLE, (name, "cpu", False),
                                _via_cudnn(fwd, name in decline))
            monkeypatch.setitem(KT._TABLE, (name, "cpu", True),
                                _via_cudnn(bwd, name in decline))
    CALLS.clear()
    return use


def _entries(ex, names):
    """The graph entries of the named nodes' first outputs."""
    g = ex._graph
    by_name = {g.nodes[g.entry_node[e]].name: e for e in range(g.num_entries)
               if e == g.row_ptr[g.entry_node[e]]}
    return {n: by_name[n] for n in names}


def test_the_plan_keeps_the_convolutional_body_channels_last(channels_last_on_cpu):
    channels_last_on_cpu()
    ex = _bind(small_resnet())
    cl = ["c1", "b1", "r1", "c2", "b2", "sum", "r2", "c3"]
    ents = _entries(ex, cl + ["data", "p", "g", "fc"])
    blocked = ex._blocked
    assert {n for n in cl if ents[n] in blocked} == set(cl)
    # the caller's arrays, what slice_axis reads, the one-position pooled map and the
    # classifier stay plain
    assert not {ents[n] for n in ("data", "p", "g", "fc")} & blocked
    grads = ex._graph.backward.grad_entry
    assert all(grads[ents[n]] in blocked for n in cl if ents[n] in grads)


def test_channel_counts_off_the_tensor_core_multiple_stay_plain(channels_last_on_cpu):
    channels_last_on_cpu()
    x = mx.sym.var("data")
    c = mx.sym.Convolution(x, kernel=(3, 3), pad=(1, 1), num_filter=12, name="c")
    r = mx.sym.relu(c, name="r")
    d = mx.sym.Convolution(r, kernel=(3, 3), pad=(1, 1), num_filter=16, name="d")
    e = mx.sym.relu(mx.sym.BatchNorm(d, name="bn"), name="e")
    f = mx.sym.Convolution(e, kernel=(1, 1), num_filter=16, name="f")
    ex = _bind(mx.sym.make_loss(mx.sym.sum(f)))
    ents = _entries(ex, ["c", "r", "d", "e", "f"])
    assert ents["c"] not in ex._blocked and ents["r"] not in ex._blocked
    assert ents["d"] in ex._blocked and ents["e"] in ex._blocked
    assert ents["f"] not in ex._blocked          # read by a reduction


@pytest.mark.parametrize("grad_req", ["write", "add"])
def test_outputs_gradients_and_statistics_equal_the_plain_executor(
        channels_last_on_cpu, monkeypatch, grad_req):
    with monkeypatch.context() as m:
        m.setattr(E, "layout_scheme", lambda device: None)
        want = train_steps(_bind(small_resnet(), grad_req))
    channels_last_on_cpu()
    got = train_steps(_bind(small_resnet(), grad_req))
    _same(got, want)
    # the adapters did get channels-last calls, forward and backward
    names = {n for n, lay in CALLS if lay is not None}
    assert {"conv_forward", "conv_backward", "bn_forward", "bn_backward", "pool_forward",
            "pool_backward"} <= names


@pytest.mark.parametrize("declined", [("Convolution",), ("BatchNorm", "Pooling")])
def test_a_declining_kernel_runs_on_plain_copies(channels_last_on_cpu, monkeypatch,
                                                 declined):
    with monkeypatch.context() as m:
        m.setattr(E, "layout_scheme", lambda device: None)
        want = train_steps(_bind(small_resnet()))
    channels_last_on_cpu(decline=declined)
    ex = _bind(small_resnet())
    assert ex._blocked
    _same(train_steps(ex), want)


def test_switch_turns_the_gpu_scheme_off(monkeypatch):
    monkeypatch.setenv("MXNET_CUDNN_CHANNELS_LAST", "0")
    assert layout.scheme("gpu") is None
    monkeypatch.setenv("MXNET_CUDNN_CHANNELS_LAST", "1")
    assert layout.scheme("gpu") is layout.CHANNELS_LAST
    monkeypatch.setenv("MXNET_ONEDNN_BLOCKED_LAYOUT", "1")
    assert layout.scheme("cpu") is layout.ONEDNN_BLOCKED


def test_conversions_round_trip():
    a = np.random.RandomState(0).standard_normal((2, 16, 3, 5)).astype(np.float32)
    mem = np.empty_like(a)
    layout.CHANNELS_LAST.into_blocked(a, mem)
    np.testing.assert_array_equal(mem.reshape(2, 3, 5, 16), a.transpose(0, 2, 3, 1))
    np.testing.assert_array_equal(layout.CHANNELS_LAST.to_plain(mem), a)


def test_a_fused_elementwise_pair_keeps_its_group_channels_last(channels_last_on_cpu,
                                                                monkeypatch):
    """The GPU's fused add -> relu (operator/kernels_gpu_fused.py) computes on whatever
    element order its arrays share: the pass must keep the addends and the relu's
    output in one layout (the sum itself is never computed)."""
    with monkeypatch.context() as m:
        m.setattr(E, "layout_scheme", lambda device: None)
        want = train_steps(_bind(small_resnet()))
    calls = []

    def add_relu(octx, p, args, aux, out):       # layout-blind, as the GPU kernel
        calls.append(octx.layout)
        np.maximum(args[0] + args[1], 0, out=out[0])
        return [out[0]]
    add_relu.bfloat16 = True
    monkeypatch.setattr(KT, "_FUSIONS", dict(KT._FUSIONS))
    KT.register_fusion("elemwise_add", "relu", "cpu", add_relu)
    channels_last_on_cpu()
    ex = _bind(small_resnet())
    ents = _entries(ex, ["b2", "r1", "sum", "r2"])
    assert {ents[n] for n in ("b2", "r1", "r2")} <= ex._blocked
    assert ents["sum"] not in ex._blocked              # the pair's intermediate
    _same(train_steps(ex), want)
    assert calls and all(lay is not None for lay in calls)


def _fuse_bn_relu_on_cpu(monkeypatch):
    """The GPU fusion table's BatchNorm -> relu registrations (and their relu test) for
    the CPU, with the adapter run on the stand-in CuPy."""
    fused = _via_cudnn(KC.bn_relu_forward)
    fused.bfloat16 = fused.producer_outputs = True
    monkeypatch.setattr(KT, "_FUSIONS", dict(KT._FUSIONS))
    KC.register_fusions(lambda first, second, device, fn, accepts=None:
                        KT.register_fusion(first, second, device, fused, accepts), "cpu")


def test_batchnorm_relu_runs_as_one_fused_pass(channels_last_on_cpu, monkeypatch):
    """BatchNorm -> relu (``bn_relu_forward`` in the GPU fusion table) on the CPU
    executor with the GPU scheme: its kernels run the pair in one call, writing the
    relu's output and BatchNorm's statistics, and training equals the plain
    executor's (outputs, gradients, moving statistics)."""
    with monkeypatch.context() as m:
        m.setattr(E, "layout_scheme", lambda device: None)
        want = train_steps(_bind(small_resnet()))
    _fuse_bn_relu_on_cpu(monkeypatch)
    channels_last_on_cpu()
    ex = _bind(small_resnet())
    ents = _entries(ex, ["b1", "r1"])
    assert ents["r1"] in ex._blocked and ents["b1"] not in ex._blocked  # never computed
    _same(train_steps(ex), want)
    monkeypatch.setenv("MXNET_GPU_BN_RELU_FUSION", "0")     # the switch: no fused step
    assert not any(s.__class__.__name__ == "FusedStep" and s.first.node.name == "b1"
                   for s in _bind(small_resnet())._fsteps)
    fused_calls = [lay for n, lay in CALLS if n == "bn_relu_forward"]
    assert fused_calls and all(lay is not None for lay in fused_calls)
    # b2 (followed by an addition) runs alone once per step, b1 only fused: no fallback
    assert len([n for n, _ in CALLS if n == "bn_forward"]) == len(fused_calls)


def test_convolution_bias_folds_into_the_batchnorm_on_the_gpu_path(channels_last_on_cpu,
                                                                   monkeypatch):
    """The GPU executor's whole forward path on the CPU: channels-last entries, the
    cuDNN adapters, BatchNorm -> relu fused, and the convolutions' biases folded into
    the BatchNorms after them (executor/bias_fold.py): training equals the plain
    executor's, and the folded convolutions did run without their bias."""
    from mxnet.executor import bias_fold
    with monkeypatch.context() as m:
        m.setattr(E, "layout_scheme", lambda device: None)
        want = train_steps(_bind(small_resnet()), steps=3)
    _fuse_bn_relu_on_cpu(monkeypatch)
    channels_last_on_cpu()
    monkeypatch.setattr(bias_fold, "applies", lambda device: True)
    ex = _bind(small_resnet())
    _same(train_steps(ex, steps=3), want)
    folded = [c for c in ex._fcalls if isinstance(c.fused, bias_fold._UnbiasedConvolution)]
    assert [c.name for c in folded] == ["c1", "c2"]
    assert all(c.fused.folded[0] for c in folded)
    assert any(n == "bn_relu_forward" for n, _ in CALLS)


def test_relu_backward_folds_into_the_batchnorm_backward(channels_last_on_cpu, monkeypatch):
    """With MXNET_GPU_BN_RELU_BACKWARD_FUSION=1 the GPU path's BatchNorm -> relu pair
    also runs its backward as one call (executor/backward_fusion.py: BatchNorm's
    channels-last kernels given the relu output's gradient, masking it themselves), and
    training equals the plain executor's."""
    from mxnet.executor import backward_fusion
    with monkeypatch.context() as m:
        m.setattr(E, "layout_scheme", lambda device: None)
        want = train_steps(_bind(small_resnet()), steps=3)
    _fuse_bn_relu_on_cpu(monkeypatch)
    fused_bwd = _via_cudnn(KC.bn_relu_backward)
    monkeypatch.setattr(KT, "_BACKWARD_FUSIONS", {})
    KC.register_fusions(lambda *a, **k: None, "cpu",
                        lambda first, second, device, fn, accepts=None:
                        KT.register_backward_fusion(first, second, device, fused_bwd,
                                                    accepts))
    channels_last_on_cpu()
    monkeypatch.setenv("MXNET_GPU_BN_RELU_BACKWARD_FUSION", "1")
    ex = _bind(small_resnet())
    folded = [c for c in ex._bcalls if c.fused is not None]
    assert [c.name for c in folded] == ["b1"]          # b2 is followed by an addition
    assert [t.name for t in folded[0].then] == ["r1", "b1"]
    _same(train_steps(ex, steps=3), want)
    assert any(n == "bn_relu_backward" for n, _ in CALLS)
    # declined, the pair runs apart and training is the same
    monkeypatch.setattr(backward_fusion, "lookup_backward_fusion",
                        lambda *a: _via_cudnn(KC.bn_relu_backward, decline=True))
    _same(train_steps(_bind(small_resnet()), steps=3), want)
    monkeypatch.setattr(backward_fusion, "lookup_backward_fusion",
                        KT.lookup_backward_fusion)
    assert any(c.fused is not None for c in _bind(small_resnet())._bcalls)
    monkeypatch.setenv("MXNET_GPU_BN_RELU_BACKWARD_FUSION", "0")     # the switch
    assert not any(c.fused is not None for c in _bind(small_resnet())._bcalls)
