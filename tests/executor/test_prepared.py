"""The executor's prepared loops (executor/prepared.py) and its inline runs: the same
results as the runner's one-step-at-a-time path, failures that surface at the next sync
point naming their node, and kernels looked up at every run."""
import numpy as np
import pytest

import mxnet as mx
from mxnet.base import MXNetError
from mxnet.operator import kernels
from mxnet.operator.params import Schema
from mxnet.operator.registry import Op, list_ops, register
from mxnet.test_utils import assert_almost_equal


class _FailOnFlag(Op):
    """Test-only: forward fails when the input holds 7, backward when it holds 9."""
    name = "_test_prepared_fail_on_flag"
    params = Schema()
    backward_uses = ("out_grad", "in_data")

    def forward(self, ctx, p, inputs, aux):
        if (inputs[0] == 7).any():
            raise ValueError("seven in forward")
        return [inputs[0] * 2]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux):
        if (inputs[0] == 9).any():
            raise ValueError("nine in backward")
        return [out_grads[0] * 2]


if _FailOnFlag.name not in list_ops():
    register(_FailOnFlag)


def _net():
    data = mx.sym.var("data")
    h = mx.sym.Activation(mx.sym.FullyConnected(data, num_hidden=6, name="fc1"),
                          act_type="relu", name="r1")
    b = mx.sym.BatchNorm(mx.sym.FullyConnected(h, num_hidden=5, name="fc2"), name="bn")
    return mx.sym.SoftmaxOutput(mx.sym.tanh(b, name="t"), name="sm")


def _bind(monitored):
    ex = _net().simple_bind(mx.cpu(), data=(4, 7), grad_req="write")
    rng = np.random.RandomState(1)
    for name, arr in ex.arg_dict.items():
        arr[:] = rng.randint(0, 5, arr.shape) if name == "sm_label" else rng.randn(*arr.shape)
    if monitored:           # a monitor makes the executor run through the runner
        ex.set_monitor_callback(lambda name, arr: None)
    return ex


def test_prepared_loops_match_the_runner_path():
    fast, plain = _bind(False), _bind(True)
    for _ in range(2):                      # the second run reuses every prepared call
        got, want = [], []
        for ex, sink in ((fast, got), (plain, want)):
            ex.forward(is_train=True)
            ex.backward()
            sink += [o.asnumpy() for o in ex.outputs]
            sink += [g.asnumpy() for g in ex.grad_arrays if g is not None]
            sink += [a.asnumpy() for a in ex.aux_arrays]
        for a, b in zip(got, want):
            assert_almost_equal(a, b, rtol=1e-5, atol=1e-6)


def _flag_executor():
    x = mx.sym.var("x")
    y = mx.sym.Symbol._create(_FailOnFlag.name, [x], {}, name="flagged")
    gx = mx.nd.zeros(2)
    ex = (y * 1).bind(mx.cpu(), {"x": mx.nd.array([1.0, 2.0])}, args_grad={"x": gx})
    return ex, gx


@pytest.mark.parametrize("inline", [True, False])
def test_forward_failure_waits_for_the_sync_point_and_names_the_node(inline):
    ex, _ = _flag_executor()
    ex._inline = inline          # run in this thread, or pushed to the engine
    ex.arg_dict["x"][:] = 7
    outs = ex.forward(is_train=True)          # returns: the failure is kept for later
    with pytest.raises(MXNetError, match="seven in forward") as info:
        outs[0].asnumpy()
    assert "flagged" in str(info.value)
    try:
        mx.nd.waitall()
    except MXNetError:
        pass
    ex.arg_dict["x"][:] = 1
    assert_almost_equal(ex.forward()[0].asnumpy(), [2.0, 2.0])


@pytest.mark.parametrize("inline", [True, False])
def test_backward_failure_waits_for_the_sync_point(inline):
    ex, gx = _flag_executor()
    ex._inline = inline
    ex.arg_dict["x"][:] = 9
    ex.forward(is_train=True)
    ex.backward(mx.nd.ones(2))               # returns at once
    with pytest.raises(MXNetError, match="nine in backward"):
        gx.asnumpy()
    try:
        mx.nd.waitall()
    except MXNetError:
        pass
    ex.arg_dict["x"][:] = 1
    ex.forward(is_train=True)
    ex.backward(mx.nd.ones(2))
    assert_almost_equal(gx.asnumpy(), [2.0, 2.0])


def test_a_kernel_registered_after_bind_is_used():
    ex, _ = _flag_executor()
    assert_almost_equal(ex.forward()[0].asnumpy(), [2.0, 4.0])
    key = (_FailOnFlag.name, "cpu", False)
    kernels.register_kernel(_FailOnFlag.name, "cpu",
                            lambda ctx, p, inputs, aux, out=None: [inputs[0] * 3])
    try:
        assert_almost_equal(ex.forward()[0].asnumpy(), [3.0, 6.0])
    finally:
        del kernels._TABLE[key]
    assert_almost_equal(ex.forward()[0].asnumpy(), [2.0, 4.0])


def test_cached_graph_gradients_returned_earlier_are_not_overwritten():
    # a hybridized block's backward hands the tape its executor's own gradient arrays;
    # what autograd.grad returned from one step must survive the next step
    net = mx.gluon.nn.Dense(3, in_units=4)
    net.initialize()
    net.hybridize()
    x = mx.nd.array(np.arange(8).reshape(2, 4))
    x.attach_grad()
    grads = []
    for scale in (1.0, 5.0):
        with mx.autograd.record():
            y = net(x * scale)
        grads.append(mx.autograd.grad(y, [x], retain_graph=False)[0])
        with mx.autograd.record():
            y = net(x * scale)
        y.backward()
    w = net.weight.data().asnumpy()
    np.testing.assert_allclose(grads[0].asnumpy(), np.tile(w.sum(0), (2, 1)), rtol=1e-5)
    np.testing.assert_allclose(grads[1].asnumpy(), 5 * np.tile(w.sum(0), (2, 1)), rtol=1e-5)
    np.testing.assert_allclose(x.grad.asnumpy(), 5 * np.tile(w.sum(0), (2, 1)), rtol=1e-5)


def test_step_hook_sees_each_phase_and_runs_it(monkeypatch):
    from mxnet.executor import prepared
    seen = []

    def hook(ex, phase, run):
        seen.append(phase)
        run()
    monkeypatch.setattr(prepared, "step_hook", hook)
    ex, gx = _flag_executor()
    ex.forward(is_train=True)
    ex.backward(mx.nd.ones(2))
    assert_almost_equal(ex.outputs[0].asnumpy(), [2.0, 4.0])
    assert_almost_equal(gx.asnumpy(), [2.0, 2.0])
    assert seen == ["forward", "backward"]


def test_an_accumulating_backward_kernel_adds_into_add_destinations():
    """A backward kernel marked ``accumulates`` receives the 'add' destinations (and
    the requests in ctx.req) and adds into them itself; one that is not marked gets
    None there and the runner adds. Both give the NumPy sums over two backward
    passes with grad_req='add'."""
    data = mx.sym.var("data")
    sym = mx.sym.Activation(data, act_type="tanh", name="t")
    x = np.random.RandomState(2).randn(3, 4)
    expected = 2 * (1 - np.tanh(x) ** 2)
    key = ("Activation", "cpu", True)
    prev = kernels._TABLE.get(key)
    seen = []

    def tanh_grad(ctx, p, out_grads, inputs, outputs, aux, in_grad=None):
        g = out_grads[0] * (1 - outputs[0] ** 2)
        dst = None if in_grad is None else in_grad[0]
        seen.append((None if ctx.req is None else ctx.req[0], dst is not None))
        if dst is not None and ctx.req[0] == "add":
            dst += g
            return [dst]
        return [g]

    for accumulates in (True, False):
        fn = lambda *a, **k: tanh_grad(*a, **k)     # noqa: E731  (a fresh function)
        if accumulates:
            fn.accumulates = True
        kernels.register_kernel("Activation", "cpu", fn, backward=True)
        seen.clear()
        try:
            ex = sym.simple_bind(mx.cpu(), data=x.shape, grad_req="add")
            ex.arg_dict["data"][:] = x
            ex.grad_dict["data"][:] = 0
            for _ in range(2):
                ex.forward(is_train=True)
                ex.backward(mx.nd.ones(x.shape))
            assert_almost_equal(ex.grad_dict["data"].asnumpy(), expected, rtol=1e-6,
                                atol=1e-6)
        finally:
            if prev is None:
                del kernels._TABLE[key]
            else:
                kernels._TABLE[key] = prev
        assert seen and all(req == "add" for req, _ in seen)
        assert all(handed == accumulates for _, handed in seen)
