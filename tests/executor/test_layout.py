"""The layout pass (executor/layout.py): entries kept in oneDNN's channel-blocked layout
give the same outputs and gradients as the plain executor, whatever falls back."""
import numpy as np
import pytest

import mxnet as mx
from mxnet.backend import onednn

from bound_runs import assert_same_runs, bind_random, train_steps

pytestmark = pytest.mark.skipif(not onednn.available(), reason="oneDNN (libdnnl) absent")


def _net(channels=16, residual=True, bn=True):
    x = mx.sym.var("data")
    c1 = mx.sym.Convolution(x, kernel=(3, 3), pad=(1, 1), num_filter=channels, name="c1")
    r1 = mx.sym.relu(c1, name="r1")                    # fused with c1 on oneDNN
    p1 = mx.sym.Pooling(r1, kernel=(2, 2), stride=(2, 2), pool_type="max", name="p1")
    c2 = mx.sym.Convolution(p1, kernel=(3, 3), pad=(1, 1), num_filter=channels, name="c2")
    h = mx.sym.BatchNorm(c2, fix_gamma=False, name="bn") if bn else c2
    h = mx.sym.Activation(h, act_type="relu", name="r2")
    if residual:
        h = h + p1                                     # p1 read twice: its gradient adds
    p2 = mx.sym.Pooling(h, kernel=(2, 2), stride=(2, 2), pool_type="avg", name="p2")
    fc = mx.sym.FullyConnected(mx.sym.flatten(p2), num_hidden=5, name="fc")
    return mx.sym.SoftmaxOutput(fc, name="out")


def _bind(sym, blocked, monkeypatch, shape=(8, 3, 32, 32), grad_req="write"):
    # large enough for every oneDNN kernel to take these calls (kernels_onednn.MIN_WORK)
    monkeypatch.setenv("MXNET_ONEDNN_BLOCKED_LAYOUT", "1" if blocked else "0")
    return bind_random(sym, mx.cpu(), shape, grad_req)


@pytest.mark.parametrize("residual,bn", [(True, True), (False, True), (True, False)])
def test_blocked_executor_matches_the_plain_one(residual, bn, monkeypatch):
    sym = _net(residual=residual, bn=bn)
    blocked = _bind(sym, True, monkeypatch)
    assert blocked._blocked, "the pass kept nothing blocked"
    plain = _bind(sym, False, monkeypatch)
    assert not plain._blocked
    assert_same_runs(train_steps(blocked), train_steps(plain))


def test_what_stays_plain(monkeypatch):
    ex = _bind(_net(), True, monkeypatch)
    g = ex._graph
    names = {g.entry_name(e) for e in ex._blocked if e < g.num_entries}
    # kept blocked: the intermediates between oneDNN operators and elementwise ones
    assert {"r1_output", "p1_output", "bn_output", "r2_output"} <= names
    # plain: variables, heads, what Flatten / FullyConnected read, a fused pair's
    # intermediate (never computed)
    for e in ex._blocked:
        if e < g.num_entries:
            assert g.nodes[g.entry_node[e]].op is not None
            assert e not in g.heads
    assert "p2_output" not in names and "c1_output" not in names
    # a gradient entry has its entry's layout
    grads = g.backward.grad_entry
    for e in ex._blocked:
        if e in grads:
            assert grads[e] in ex._blocked


def test_channels_that_do_not_fill_blocks_stay_plain(monkeypatch):
    from mxnet.backend.onednn import kernels as K
    ex = _bind(_net(channels=K.block_width() * 3 // 2), True, monkeypatch)
    assert not ex._blocked


def test_blocked_operators_run_on_onednn_without_plain_copies(monkeypatch):
    """The block width is the one oneDNN's kernels take on this processor: a blocked
    executor's convolutions, poolings and batch norm run on the blocked arrays
    themselves, none on plain copies. (With blocks of 16 on an AVX2 machine, oneDNN had
    only its refused reference max pooling for them, so every pooling call, forward
    and backward, went through plain copies and NumPy.)"""
    from mxnet.executor import prepared
    calls = []
    for name in ("_plain_forward", "_plain_backward"):
        real = getattr(prepared, name)

        def counted(c, *args, _real=real, **kwargs):
            calls.append(c)
            return _real(c, *args, **kwargs)
        monkeypatch.setattr(prepared, name, counted)
    ex = _bind(_net(), True, monkeypatch)
    assert ex._blocked
    train_steps(ex)
    assert not calls, f"{len(calls)} calls ran on plain copies"


def _run_with_declining_kernels(bind):
    """``train_steps(bind())`` with the CPU kernels of Convolution, Pooling and BatchNorm
    declining every call that has blocked arrays (keeping their bfloat16 mark)."""
    from mxnet.operator import kernels as kt
    table = kt._TABLE
    saved = dict(table)

    def declining(kern):
        def k(octx, *args):
            if octx.layout is not None:
                return NotImplemented
            return kern(octx, *args)
        k.bfloat16 = getattr(kern, "bfloat16", False)
        return k
    try:
        for key, kern in saved.items():
            if key[0] in ("Convolution", "Pooling", "BatchNorm") and key[1] == "cpu":
                table[key] = declining(kern)
        return train_steps(bind())
    finally:
        table.clear()
        table.update(saved)


def test_a_declining_kernel_runs_on_plain_copies(monkeypatch):
    """Convolution's and Pooling's oneDNN kernels decline every call that has blocked
    arrays: the executor converts to plain, runs the NumPy bodies, converts back."""
    sym = _net()
    ref = train_steps(_bind(sym, False, monkeypatch))
    got = _run_with_declining_kernels(lambda: _bind(sym, True, monkeypatch))
    assert_same_runs(got, ref, rtol=1e-4, atol=1e-4)


def test_an_unsupported_primitive_falls_back_through_the_chain(monkeypatch):
    """oneDNN refuses the primitives at run time (the adapters decline after the pass
    chose blocked entries): the NumPy kernels chained behind the adapters must not
    see the blocked arrays; the executor converts instead."""
    from mxnet.backend.onednn import kernels as K
    sym = _net(bn=False)
    ref = train_steps(_bind(sym, False, monkeypatch))

    def refuse(*args, **kwargs):
        raise K.NotSupported("refused for the test")
    for name in ("conv_forward", "conv_backward", "conv_backward_data",
                 "pool_forward", "pool_forward_training", "pool_backward"):
        monkeypatch.setattr(K, name, refuse)
    ex = _bind(sym, True, monkeypatch)
    assert ex._blocked
    assert_same_runs(train_steps(ex), ref, rtol=1e-4, atol=1e-4)


def test_a_declining_fused_pair_falls_back(monkeypatch):
    """The fused Convolution+relu kernel declines: the pair runs as two steps, the
    convolution writing its (plain) intermediate and the relu converting its result
    into the blocked output."""
    from mxnet.executor import fusion
    sym = _net()
    ref = train_steps(_bind(sym, False, monkeypatch))
    real = fusion.lookup_fusion

    def declining(*args, **kwargs):
        fn = real(*args, **kwargs)
        return None if fn is None else (lambda *a, **k: NotImplemented)
    monkeypatch.setattr(fusion, "lookup_fusion", declining)
    ex = _bind(sym, True, monkeypatch)
    got = train_steps(ex)
    fused = [c for c in ex._fcalls if c.fused is not None]
    assert fused and any(c.then[1].convert for c in fused)
    assert_same_runs(got, ref)


def test_monitor_runs_plain_and_matches(monkeypatch):
    sym = _net()
    ref = train_steps(_bind(sym, False, monkeypatch))
    ex = _bind(sym, True, monkeypatch)
    seen = []
    ex.set_monitor_callback(lambda name, arr: seen.append(name))
    got = train_steps(ex)
    assert seen
    assert_same_runs(got, ref)


def test_gradient_requests_add(monkeypatch):
    sym = _net()
    ref = _bind(sym, False, monkeypatch, grad_req="add")
    got = _bind(sym, True, monkeypatch, grad_req="add")
    assert_same_runs(train_steps(got, steps=3), train_steps(ref, steps=3))


def test_hybridized_gluon_block(monkeypatch):
    from mxnet import autograd, nd
    from mxnet.gluon import nn

    def make():
        net = nn.HybridSequential()
        net.add(nn.Conv2D(16, 3, padding=1, activation="relu"), nn.MaxPool2D(),
                nn.Conv2D(32, 3, padding=1), nn.BatchNorm(), nn.Activation("relu"),
                nn.AvgPool2D(), nn.Flatten(), nn.Dense(3))
        net.initialize(mx.init.Xavier(), force_reinit=True)
        return net
    x = nd.array(np.random.RandomState(1).rand(4, 3, 16, 16))
    results = []
    src = None
    for flag in ("1", "0"):
        monkeypatch.setenv("MXNET_ONEDNN_BLOCKED_LAYOUT", flag)
        mx.random.seed(0)
        net = make()
        net(x)
        if src is not None:
            for a, b in zip(src.collect_params().values(), net.collect_params().values()):
                b.set_data(a.data())
        src = net
        net.hybridize(static_alloc=True, static_shape=True)
        with autograd.record():
            y = net(x)
        y.backward(nd.ones_like(y))
        results.append((y.asnumpy(), [p.grad().asnumpy() for p in net.collect_params().values()
                                      if p.grad_req != "null"]))
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-5, atol=1e-5)
    for a, b in zip(results[0][1], results[1][1]):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


def test_a_graph_of_small_operators_does_not_load_onednn():
    """The pass asks each operator whether oneDNN would take it: binding and running an
    MLP (every call below oneDNN's break-even) leaves the library unloaded, as its
    imperative calls do (loading it costs 0.1-0.3 s)."""
    import os
    import subprocess
    import sys
    src = os.path.join(os.path.dirname(__file__), "..", "..", "src")
    code = ("import mxnet as mx\n"
            "x = mx.sym.FullyConnected(mx.sym.var('data'), num_hidden=16)\n"
            "x = mx.sym.SoftmaxOutput(mx.sym.relu(x), name='out')\n"
            "ex = x.simple_bind(mx.cpu(), data=(8, 20))\n"
            "ex.forward(is_train=True); ex.backward(); mx.nd.waitall()\n"
            "from mxnet.backend.onednn import _runtime\n"
            "print(_runtime._state['tried'])\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env=dict(os.environ, PYTHONPATH=os.path.abspath(src)), timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split()[-1] == "False"


@pytest.mark.parametrize("name", ["mobilenet1.0", "resnet18_v2"])
def test_model_zoo_nets_train_the_same_blocked(name, monkeypatch):
    """Depthwise convolutions (MobileNet) and pre-activation residual blocks (ResNet v2):
    two training steps with the blocked layouts give the outputs, gradients and moving
    statistics of the plain executor."""
    from mxnet import autograd
    from mxnet.gluon.model_zoo import vision
    x = mx.nd.array(np.random.RandomState(0).rand(2, 3, 32, 32))
    nets = []
    for _ in range(2):
        net = vision.get_model(name, classes=10)
        net.initialize(mx.init.Xavier())
        net(x)
        nets.append(net)
    for a, b in zip(nets[0].collect_params().values(), nets[1].collect_params().values()):
        b.set_data(a.data())
    runs = []
    for flag, net in zip(("1", "0"), nets):
        monkeypatch.setenv("MXNET_ONEDNN_BLOCKED_LAYOUT", flag)
        net.hybridize(static_alloc=True, static_shape=True)
        outs = []
        for _ in range(2):
            with autograd.record():
                y = net(x)
            y.backward(mx.nd.ones_like(y))
            outs.append(y.asnumpy())
        blocked = sum(len(e.ex._blocked) for pool in net._cached_op._pools.values()
                      for e in pool)
        runs.append((outs, [p.grad().asnumpy() if p.grad_req != "null" else p.data().asnumpy()
                            for p in net.collect_params().values()], blocked))
    assert runs[0][2] > 0 and runs[1][2] == 0
    for a, b in zip(runs[0][0] + runs[0][1], runs[1][0] + runs[1][1]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def _bf16_primitives():
    from mxnet.backend.onednn import kernels as K
    return K.bf16_supported()


def _bind_bf16(sym, blocked, monkeypatch, shape=(8, 3, 32, 32)):
    monkeypatch.setenv("MXNET_ONEDNN_BLOCKED_LAYOUT", "1" if blocked else "0")
    ex = sym.simple_bind(mx.cpu(), data=shape, type_dict={"data": "bfloat16"},
                         grad_req="write")
    rng = np.random.RandomState(0)
    for name, arr in ex.arg_dict.items():
        vals = rng.randint(0, 5, arr.shape) if name == "out_label" else \
            rng.standard_normal(arr.shape) * 0.5
        arr[:] = mx.nd.array(vals, dtype=arr.dtype)
    for name, arr in ex.aux_dict.items():
        arr[:] = 1.0 if name.endswith("var") else 0.0
    return ex


def _as_f32(result):
    outs, grads, aux = result
    f = lambda a: a.astype(np.float32)  # noqa: E731
    return ([[f(o) for o in step] for step in outs], {k: f(v) for k, v in grads.items()},
            {k: f(v) for k, v in aux.items()})


@pytest.mark.skipif(not _bf16_primitives(), reason="no oneDNN bfloat16 primitives here")
def test_bfloat16_entries_blocked_match_plain(monkeypatch):
    """bfloat16 graphs keep their oneDNN intermediates blocked too (bfloat16 kernels on
    bfloat16 aBcd16b memory) and compute what the plain executor computes."""
    from mxnet.base import bfloat16
    sym = _net()
    blocked = _bind_bf16(sym, True, monkeypatch)
    g = blocked._graph
    assert any(g.dtypes[e] == bfloat16 for e in blocked._blocked if e < g.num_entries)
    plain = _bind_bf16(sym, False, monkeypatch)
    assert_same_runs(_as_f32(train_steps(blocked)), _as_f32(train_steps(plain)), rtol=1e-2, atol=1e-2)


@pytest.mark.skipif(not _bf16_primitives(), reason="no oneDNN bfloat16 primitives here")
def test_bfloat16_declining_kernel_runs_on_plain_copies(monkeypatch):
    """A bfloat16 kernel that declines blocked arrays: the executor reorders to plain
    and the runner computes the call (in float32), then reorders back."""
    sym = _net()
    ref = train_steps(_bind_bf16(sym, False, monkeypatch))
    got = _run_with_declining_kernels(lambda: _bind_bf16(sym, True, monkeypatch))
    assert_same_runs(_as_f32(got), _as_f32(ref), rtol=3e-2, atol=3e-2)
