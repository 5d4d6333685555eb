"""The fused GPU optimizer rules (kernels_gpu_optim): their statements, run with NumPy,
equal the update operators' own bodies (MXNet's rules) for every parameter regime; the
CUDA source they generate declares each temporary once; on a GPU (skipped without one)
the registered kernel equals the NumPy body and writes into out= and the states."""
import numpy as np
import pytest

import mxnet as mx
from mxnet.operator import kernels_gpu_optim as K
from mxnet.operator.registry import OpContext, get_op

REGIMES = [dict(), dict(wd=1e-3), dict(clip_gradient=0.05), dict(rescale_grad=0.5, wd=0.01,
                                                                 clip_gradient=0.3)]
EXTRA = {"sgd_update": dict(lr=0.1), "sgd_mom_update": dict(lr=0.1, momentum=0.9),
         "adam_update": dict(lr=0.01, beta1=0.8, beta2=0.95, epsilon=1e-6)}


def _data(name, dtype, seed=0):
    rng = np.random.RandomState(seed)
    w, g = (rng.randn(5, 7).astype(dtype) for _ in range(2))
    n_states = len(K.RULES[name][1])
    states = [rng.randn(5, 7).astype(dtype) for _ in range(n_states)]
    if name == "adam_update":
        states[1] = np.abs(states[1])       # a variance
    return w, g, states


def _body(name, kw, w, g, states, xp=np):
    op = get_op(name)
    p = op.parse(kw)
    st = [xp.asarray(s).copy() for s in states]
    out = op.forward(OpContext(xp, mx.cpu() if xp is np else mx.gpu(0)), p,
                     [xp.asarray(w), xp.asarray(g)], st)[0]
    return out, st, p


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("regime", REGIMES)
@pytest.mark.parametrize("name", sorted(K.RULES))
def test_rule_statements_equal_the_operator_body(name, regime, dtype):
    kw = dict(EXTRA[name], **regime)
    w, g, states = _data(name, dtype)
    ref, ref_states, p = _body(name, kw, w, g, states)
    st = [s.copy() for s in states]
    got = K.evaluate(name, w.copy(), g.copy(), st,
                     **{n: getattr(p, n) for n in K.RULES[name][0]})
    tol = 1e-6 if dtype == np.float32 else 1e-13
    np.testing.assert_allclose(got, ref, rtol=tol, atol=tol)
    for a, b in zip(st, ref_states):
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


@pytest.mark.parametrize("name", sorted(K.RULES))
def test_cuda_source_declares_temporaries_once_and_writes_states(name):
    in_p, out_p, body = K.cuda_source(name)
    assert in_p.startswith("T weight, T grad")
    assert out_p.endswith("T wout")
    assert body.count("T g =") == 1
    for s in K.RULES[name][1]:
        assert f"T {s}" in out_p and f"\n{s} = " in "\n" + body


def test_kernels_decline_numpy_arrays():
    w, g, states = _data("sgd_mom_update", np.float32)
    p = get_op("sgd_mom_update").parse(EXTRA["sgd_mom_update"])
    fn = K._fused("sgd_mom_update")
    assert fn(OpContext(np, mx.cpu()), p, [w, g], states) is NotImplemented


gpu = pytest.mark.skipif(mx.context.num_gpus() == 0, reason="no GPU")


@gpu
@pytest.mark.parametrize("regime", REGIMES)
@pytest.mark.parametrize("name", sorted(K.RULES))
def test_fused_kernel_on_gpu_equals_numpy_body(name, regime):
    import cupy as cp
    kw = dict(EXTRA[name], **regime)
    w, g, states = _data(name, np.float32)
    ref, ref_states, p = _body(name, kw, w, g, states)
    cw, cg = cp.asarray(w), cp.asarray(g)
    cst = [cp.asarray(s) for s in states]
    fn = K._fused(name)
    got = fn(OpContext(cp, mx.gpu(0)), p, [cw, cg], cst, out=[cw])
    assert got is not NotImplemented and got[0] is cw      # written in place
    np.testing.assert_allclose(cp.asnumpy(cw), ref, rtol=1e-5, atol=1e-6)
    for a, b in zip(cst, ref_states):
        np.testing.assert_allclose(cp.asnumpy(a), b, rtol=1e-5, atol=1e-6)


@gpu
def test_sgd_mom_through_mx_nd_on_gpu_equals_cpu():
    w, g, (m,) = _data("sgd_mom_update", np.float32)
    res = {}
    for ctx in (mx.cpu(), mx.gpu(0)):
        W, G, M = (mx.nd.array(a, ctx=ctx) for a in (w, g, m))
        mx.nd.sgd_mom_update(W, G, M, lr=0.1, momentum=0.9, wd=1e-3, out=W)
        res[ctx.device_type] = (W.asnumpy(), M.asnumpy())
    for a, b in zip(res["gpu"], res["cpu"]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_multi_kernels_decline_numpy_arrays():
    op = get_op("multi_sgd_mom_update")
    p = op.parse(dict(lrs=(0.1, 0.2), wds=(0.0, 0.01), momentum=0.9, num_weights=2))
    arrays = [np.ones(3, np.float32) for _ in range(6)]
    assert K._multi_fused(True)(OpContext(np, mx.cpu()), p, arrays, []) is NotImplemented


@gpu
@pytest.mark.parametrize("momentum", [False, True])
def test_multi_sgd_fused_on_gpu_equals_numpy_body(momentum):
    import cupy as cp
    name = "multi_sgd_mom_update" if momentum else "multi_sgd_update"
    rng = np.random.RandomState(3)
    shapes = [(4, 3), (7,), (2, 2, 2)]
    per = 3 if momentum else 2
    host = [rng.randn(*s).astype(np.float32) for s in shapes for _ in range(per)]
    kw = dict(lrs=(0.1, 0.05, 0.2), wds=(0.0, 0.01, 0.001), num_weights=3,
              rescale_grad=0.5, clip_gradient=0.4)
    if momentum:
        kw["momentum"] = 0.9
    op = get_op(name)
    p = op.parse(kw)
    ref_in = [a.copy() for a in host]
    ref = op.forward(OpContext(np, mx.cpu()), p, ref_in, [])
    dev = [cp.asarray(a) for a in host]
    outs = [dev[i * per] for i in range(3)]
    got = K._multi_fused(momentum)(OpContext(cp, mx.gpu(0)), p, dev, [], out=outs)
    assert got is not NotImplemented
    for i in range(3):
        assert got[i] is outs[i]
        np.testing.assert_allclose(cp.asnumpy(got[i]), ref[i], rtol=1e-5, atol=1e-6)
        if momentum:
            np.testing.assert_allclose(cp.asnumpy(dev[i * per + 2]), ref_in[i * per + 2],
                                       rtol=1e-5, atol=1e-6)


@gpu
@pytest.mark.parametrize("optimizer,kw", [
    ("sgd", {"learning_rate": 0.1, "momentum": 0.9, "wd": 1e-3}),
    ("adam", {"learning_rate": 0.01, "wd": 1e-3, "clip_gradient": 0.5})])
def test_trainer_on_gpu_equals_cpu(optimizer, kw):
    """gluon.Trainer on the GPU: SGD+momentum's list goes to one multi-tensor launch
    (kernels_gpu_multi), Adam writes each weight in place with one launch
    (optimizer._kernel.fused_rule_on_gpu); the weights after three steps equal the
    CPU's."""
    res = {}
    for ctx in (mx.cpu(), mx.gpu(0)):
        mx.random.seed(0)
        net = mx.gluon.nn.HybridSequential()
        net.add(mx.gluon.nn.Dense(8, activation="relu"), mx.gluon.nn.Dense(3))
        net.initialize(mx.init.Xavier(), ctx=mx.cpu())     # same numbers on both
        net.collect_params().reset_ctx(ctx)
        tr = mx.gluon.Trainer(net.collect_params(), optimizer, dict(kw))
        x = mx.nd.array(np.random.RandomState(1).randn(16, 5), ctx=ctx)
        for _ in range(3):
            with mx.autograd.record():
                loss = (net(x) ** 2).sum()
            loss.backward()
            tr.step(16)
        res[ctx.device_type] = [v.data().asnumpy() for v in net.collect_params().values()]
    for a, b in zip(res["gpu"], res["cpu"]):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("momentum", [0.0, 0.9])
def test_sgd_group_path_equals_per_weight_path(monkeypatch, momentum):
    """The grouped call SGD makes for lists the fused step does not take
    (multi_sgd(_mom)_update with the group's lrs/wds), forced on the CPU, gives the
    fused step's weights and momenta."""
    from mxnet.optimizer.sgd import SGD
    rng = np.random.RandomState(5)
    shapes = [(3, 4), (5,), (2, 3)]

    def run(grouped):
        monkeypatch.setattr(SGD, "_multi_ok", lambda self, w, s, mp: grouped)
        if grouped:     # lists otherwise take the fused step first
            monkeypatch.setattr(SGD, "_fused_plan", lambda self, w, g, s: None)
        opt = SGD(learning_rate=0.1, momentum=momentum, wd=1e-3, rescale_grad=0.5,
                  clip_gradient=0.3)
        ws = [mx.nd.array(rng.randn(*s)) for s in shapes]
        states = [opt.create_state(i, w) for i, w in enumerate(ws)]
        for _ in range(2):
            gs = [mx.nd.array(rng.randn(*s)) for s in shapes]
            opt.update([0, 1, 2], ws, gs, states)
        return [w.asnumpy() for w in ws] + [s.asnumpy() for s in states if s is not None]

    state = rng.get_state()
    a = run(False)
    rng.set_state(state)
    b = run(True)
    for x, y in zip(a, b):
        np.testing.assert_allclose(y, x, rtol=1e-6, atol=1e-7)
