"""Executor: bind/simple_bind, forward/backward against imperative mx.nd + autograd
and NumPy, grad_req handling, sharing, reshape, monitor, errors (MXNet 1.9.1
behaviour recorded from it)."""
import numpy as np
import pytest

import mxnet as mx
from mxnet.base import MXNetError
from mxnet.name import NameManager
from mxnet.operator.params import Schema
from mxnet.operator.registry import Op, list_ops, register
from mxnet.test_utils import assert_almost_equal


@pytest.fixture(autouse=True)
def _fresh_names():
    with NameManager():
        yield


def _seed_graph():
    a, b = mx.sym.Variable("A"), mx.sym.Variable("B")
    return (a + b) / 10 + 1


def test_seed004_bind_forward_backward():
    d = _seed_graph()
    args = {"A": mx.nd.ones((10,)), "B": mx.nd.ones((10,))}
    ex = d.bind(ctx=mx.cpu(), args=args, grad_req="null")
    assert list(ex.arg_dict) == ["A", "B"] and ex.arg_dict["A"] is args["A"]
    va, vb = np.random.rand(10), np.random.rand(10)
    ex["A"][:] = va                              # executor[name] is arg_dict[name]
    ex.arg_dict["B"][:] = vb
    ex.forward()
    assert len(ex.outputs) == 1
    assert_almost_equal(ex.outputs[0].asnumpy(), (va + vb) / 10 + 1)
    assert ex.grad_arrays == [None, None]
    grads = {"A": mx.nd.ones((10,)), "B": mx.nd.ones((10,))}
    ex = d.bind(ctx=mx.cpu(), args=args, args_grad=grads, grad_req="write")
    ex.forward(is_train=True)
    ex.backward([mx.nd.ones((10,))])
    assert ex.grad_arrays[0] is grads["A"]
    assert_almost_equal(grads["A"].asnumpy(), np.full(10, 0.1))
    assert_almost_equal(grads["B"].asnumpy(), np.full(10, 0.1))
    with pytest.raises(MXNetError, match="head_gradient is required"):
        ex.backward()


def _mlp():
    data = mx.sym.Variable("data")
    label = mx.sym.Variable("softmax_label")
    w1, b1 = mx.sym.Variable("weight1"), mx.sym.Variable("bias1")
    l1 = mx.sym.FullyConnected(data=data, num_hidden=16, name="layer1", weight=w1, bias=b1)
    a1 = mx.sym.Activation(data=l1, act_type="relu", name="act1")
    l2 = mx.sym.FullyConnected(data=a1, num_hidden=5, name="layer2")
    return mx.sym.SoftmaxOutput(data=l2, label=label)


def _mlp_imperative(values):
    nds = {k: mx.nd.array(v) for k, v in values.items()}
    for k in ("weight1", "bias1", "layer2_weight", "layer2_bias", "data"):
        nds[k].attach_grad()
    with mx.autograd.record():
        h = mx.nd.FullyConnected(nds["data"], nds["weight1"], nds["bias1"], num_hidden=16)
        h = mx.nd.Activation(h, act_type="relu")
        o = mx.nd.FullyConnected(h, nds["layer2_weight"], nds["layer2_bias"], num_hidden=5)
        out = mx.nd.SoftmaxOutput(o, nds["softmax_label"])
    out.backward()
    return out.asnumpy(), {k: v.grad.asnumpy() for k, v in nds.items() if v.grad is not None}


def test_mlp_matches_imperative_autograd():
    net = _mlp()
    ex = net.simple_bind(ctx=mx.cpu(), grad_req="write", data=(8, 12), softmax_label=(8,))
    assert net.list_arguments() == ["data", "weight1", "bias1", "layer2_weight",
                                    "layer2_bias", "softmax_label"]
    assert [a.shape for a in ex.arg_arrays] == [(8, 12), (16, 12), (16,), (5, 16), (5,), (8,)]
    assert all(float(abs(a).sum().asscalar()) == 0 for a in ex.arg_arrays)   # zero-filled
    values = {n: np.random.randn(*a.shape).astype(np.float32) * 0.5
              for n, a in ex.arg_dict.items()}
    values["softmax_label"] = np.random.randint(0, 5, size=8).astype(np.float32)
    for n, v in values.items():
        ex.arg_dict[n][:] = v
    ex.forward(is_train=True)
    ex.backward()                        # a loss head needs no output gradient
    out, grads = _mlp_imperative(values)
    assert_almost_equal(ex.outputs[0].asnumpy(), out, rtol=1e-5, atol=1e-6)
    for name, g in grads.items():
        assert_almost_equal(ex.grad_dict[name].asnumpy(), g, rtol=1e-4, atol=1e-5,
                            names=(f"executor {name}", f"autograd {name}"))
    assert_almost_equal(ex.grad_dict["softmax_label"].asnumpy(), np.zeros(8))
    assert list(ex.output_dict) == ["softmaxoutput0_output"]


def test_shared_arguments_between_executors():
    net = _mlp()
    ex = net.simple_bind(ctx=mx.cpu(), grad_req="write", data=(4, 12), softmax_label=(4,))
    test = net.bind(ctx=mx.cpu(), grad_req="null", args=ex.arg_arrays)
    for r in ex.arg_arrays:
        r[:] = np.random.randn(*r.shape) * 0.1
    x = np.random.rand(4, 12).astype(np.float32)
    ex.arg_dict["data"][:] = x
    ex.forward(is_train=True)
    ex.backward()
    for name, w, g in zip(net.list_arguments(), ex.arg_arrays, ex.grad_arrays):
        if name not in ("data", "softmax_label"):
            w[:] = w - g * 0.5
    test.arg_dict["data"][:] = x                 # the same array as ex's data
    test.forward()
    ex.forward()
    assert_almost_equal(test.outputs[0].asnumpy(), ex.outputs[0].asnumpy())
    assert test.arg_dict["weight1"] is ex.arg_dict["weight1"]


def test_grad_req_add_null_and_per_argument():
    a, b = mx.sym.var("a"), mx.sym.var("b")
    y = a * b + a                  # a is used twice: its gradient sums b + 1
    va, vb = np.random.rand(3).astype(np.float32), np.random.rand(3).astype(np.float32)
    og = np.random.rand(3).astype(np.float32)
    ga, gb = mx.nd.ones(3), mx.nd.ones(3)
    ex = y.bind(mx.cpu(), {"a": mx.nd.array(va), "b": mx.nd.array(vb)},
                args_grad={"a": ga, "b": gb}, grad_req={"a": "add", "b": "null"})
    for _ in range(2):
        ex.forward(is_train=True)
        ex.backward(mx.nd.array(og))
    assert_almost_equal(ga.asnumpy(), 1 + 2 * og * (vb + 1))
    assert_almost_equal(gb.asnumpy(), np.ones(3))
    assert ex.grad_arrays[1] is None and ex.grad_dict["b"] is None
    ex2 = y.bind(mx.cpu(), [mx.nd.array(va), mx.nd.array(vb)],
                 args_grad=[mx.nd.zeros(3), mx.nd.zeros(3)], grad_req=["write", "write"])
    ex2.forward(is_train=True)
    ex2.backward([mx.nd.array(og)])
    assert_almost_equal(ex2.grad_arrays[0].asnumpy(), og * (vb + 1))
    assert_almost_equal(ex2.grad_arrays[1].asnumpy(), og * va)
    only_a = y.bind(mx.cpu(), [mx.nd.array(va), mx.nd.array(vb)],
                    args_grad={"a": mx.nd.zeros(3)})
    assert only_a.grad_dict["b"] is None


def test_variable_heads_and_repeated_heads():
    x = mx.sym.var("x")
    r = mx.sym.relu(x)
    g = mx.sym.Group([x, r, r])
    vx = np.array([-1.0, 2.0], dtype=np.float32)
    gx = mx.nd.zeros(2)
    ex = g.bind(mx.cpu(), {"x": mx.nd.array(vx)}, args_grad={"x": gx})
    outs = ex.forward(is_train=True)
    assert outs[0] is ex.arg_dict["x"]
    assert_almost_equal(outs[1].asnumpy(), [0.0, 2.0])
    h = [mx.nd.array([1.0, 1.0]), mx.nd.array([10.0, 10.0]), mx.nd.array([100.0, 100.0])]
    ex.backward(h)
    assert_almost_equal(gx.asnumpy(), [1.0, 111.0])


def test_batchnorm_aux_states_and_modes():
    x = mx.sym.var("x")
    bn = mx.sym.BatchNorm(x, fix_gamma=False, momentum=0.9, name="bn")
    data = np.random.randn(4, 3, 2, 2).astype(np.float32)
    ex = bn.simple_bind(mx.cpu(), x=data.shape)
    assert list(ex.aux_dict) == ["bn_moving_mean", "bn_moving_var"]
    ex.arg_dict["x"][:] = data
    ex.arg_dict["bn_gamma"][:] = 1
    ex.aux_dict["bn_moving_var"][:] = 1
    out = ex.forward(is_train=True)[0].asnumpy()
    mean = data.mean(axis=(0, 2, 3))
    var = data.var(axis=(0, 2, 3))
    ref = (data - mean[None, :, None, None]) / np.sqrt(var[None, :, None, None] + 1e-3)
    assert_almost_equal(out, ref, rtol=1e-4, atol=1e-4)
    assert_almost_equal(ex.aux_dict["bn_moving_mean"].asnumpy(), 0.1 * mean, rtol=1e-4,
                        atol=1e-5)
    before = ex.aux_dict["bn_moving_mean"].asnumpy()
    out = ex.forward(is_train=False)[0].asnumpy()
    assert_almost_equal(ex.aux_dict["bn_moving_mean"].asnumpy(), before)
    mm, mv = before, ex.aux_dict["bn_moving_var"].asnumpy()
    ref = (data - mm[None, :, None, None]) / np.sqrt(mv[None, :, None, None] + 1e-3)
    assert_almost_equal(out, ref, rtol=1e-4, atol=1e-4)
    ex.backward([mx.nd.ones(data.shape)])


def test_forward_keyword_arguments_and_errors():
    d = _seed_graph()
    ex = d.bind(mx.cpu(), {"A": mx.nd.ones(10), "B": mx.nd.ones(10)})
    out = ex.forward(A=mx.nd.zeros(10), B=np.full(10, 5.0))[0]
    assert_almost_equal(out.asnumpy(), np.full(10, 1.5))
    with pytest.raises(TypeError, match="Unknown argument C"):
        ex.forward(C=mx.nd.zeros(10))
    with pytest.raises(ValueError, match="Shape not match"):
        ex.forward(A=mx.nd.zeros(9))
    with pytest.raises(MXNetError):
        ex.forward(A=mx.nd.zeros(9))


def test_bind_errors():
    d = _seed_graph()
    one = mx.nd.ones(10)
    with pytest.raises(ValueError, match="key `B` is missing"):
        d.bind(mx.cpu(), {"A": one})
    with pytest.raises(MXNetError):
        d.bind(mx.cpu(), {"A": one})
    with pytest.raises(ValueError, match="Length of args"):
        d.bind(mx.cpu(), [one])
    with pytest.raises(MXNetError) as err:
        d.bind(mx.cpu(), {"A": one, "B": mx.nd.ones(9)})
    assert "(10,)" in str(err.value) and "(9,)" in str(err.value)
    with pytest.raises(ValueError, match="grad_req must be in"):
        d.bind(mx.cpu(), {"A": one, "B": one}, args_grad={"A": one}, grad_req="foo")
    with pytest.raises(TypeError):
        d.bind(mx.cpu(), {"A": np.ones(10), "B": one})
    # extra names in a dict are ignored, as MXNet does
    d.bind(mx.cpu(), {"A": one, "B": one, "C": mx.nd.ones(3)})
    with pytest.raises(MXNetError, match="aux_states"):
        mx.sym.BatchNorm(mx.sym.var("x")).bind(
            mx.cpu(), {"x": mx.nd.ones((2, 2)), "batchnorm0_gamma": mx.nd.ones(2),
                       "batchnorm0_beta": mx.nd.ones(2)})


def test_simple_bind_options_and_errors():
    net = _mlp()
    ex = net.simple_bind(mx.cpu(), type_dict={"data": "float64"}, data=(4, 12),
                         softmax_label=(4,))
    assert all(np.dtype(a.dtype) == np.float64 for a in ex.arg_arrays)
    ex = net.simple_bind(mx.cpu(), data=(4, 12))           # label shape inferred
    assert ex.arg_dict["softmax_label"].shape == (4,)
    ex = net.simple_bind(mx.cpu(), grad_req={"weight1": "write"}, data=(4, 12))
    assert [g is None for g in ex.grad_arrays] == [True, False, True, True, True, True]
    ex = net.simple_bind(mx.cpu(), grad_req="null", data=(4, 12))
    assert ex.grad_arrays == [None] * 6
    with pytest.raises(MXNetError, match="data"):
        net.simple_bind(mx.cpu(), softmax_label=(4,))
    with pytest.raises(MXNetError, match="nosuch"):
        net.simple_bind(mx.cpu(), data=(4, 12), nosuch=(1,))
    with pytest.raises(MXNetError, match="storage type"):
        net.simple_bind(mx.cpu(), stype_dict={"data": "bogus"}, data=(4, 12))
    sparse = net.simple_bind(mx.cpu(), stype_dict={"data": "csr"}, data=(4, 12))
    assert sparse.arg_dict["data"].stype == "csr"     # the forward reads its dense form
    x = np.random.rand(4, 12).astype(np.float32)
    x[x < 0.5] = 0
    sparse.arg_dict["data"][:] = mx.nd.array(x).tostype("csr")
    dense = net.simple_bind(mx.cpu(), grad_req="null", data=(4, 12))
    for name, arr in sparse.arg_dict.items():
        if name != "data":
            arr.copyto(dense.arg_dict[name])
    dense.arg_dict["data"][:] = x
    np.testing.assert_allclose(sparse.forward()[0].asnumpy(), dense.forward()[0].asnumpy(),
                               rtol=1e-5)


def test_simple_bind_shared_exec_and_arg_names():
    net = _mlp()
    big = net.simple_bind(mx.cpu(), data=(8, 12))
    small = net.simple_bind(mx.cpu(), data=(4, 12), shared_exec=big,
                            shared_arg_names=["weight1", "bias1", "layer2_weight",
                                              "layer2_bias"])
    assert small.arg_dict["weight1"] is big.arg_dict["weight1"]
    assert small.grad_dict["weight1"] is big.grad_dict["weight1"]
    assert small._mem is big._mem
    big.arg_dict["weight1"][:] = 1
    small.arg_dict["data"][:] = 1
    small.forward()
    big.arg_dict["data"][:] = 1
    big.forward()
    assert_almost_equal(small.outputs[0].asnumpy(), big.outputs[0].asnumpy()[:4])


def test_copy_params_from():
    net = _mlp()
    ex = net.simple_bind(mx.cpu(), data=(2, 12))
    ex.copy_params_from({"weight1": mx.nd.ones((16, 12)), "bias1": np.full(16, 2.0)})
    assert_almost_equal(ex.arg_dict["weight1"].asnumpy(), np.ones((16, 12)))
    assert_almost_equal(ex.arg_dict["bias1"].asnumpy(), np.full(16, 2.0))
    with pytest.raises(ValueError, match="not in the arguments"):
        ex.copy_params_from({"nope": mx.nd.ones(2)})
    ex.copy_params_from({"nope": mx.nd.ones(2)}, allow_extra_params=True)
    with pytest.raises(ValueError, match="auxiliary states"):
        ex.copy_params_from({}, {"x": mx.nd.ones(2)})
    with pytest.raises(MXNetError):
        ex.copy_params_from({"weight1": mx.nd.ones((16, 13))})


def test_reshape():
    data = mx.sym.Variable("data")
    net = mx.sym.Activation(mx.sym.FullyConnected(data, num_hidden=5, name="fc"),
                            act_type="relu")
    ex = net.simple_bind(mx.cpu(), data=(4, 3))
    small = ex.reshape(data=(2, 3))
    assert [a.shape for a in small.arg_arrays] == [(2, 3), (5, 3), (5,)]
    assert small.arg_dict["fc_weight"] is ex.arg_dict["fc_weight"]
    small.arg_dict["data"][:] = 1                       # a view of the first rows
    assert_almost_equal(ex.arg_dict["data"].asnumpy(), [[1] * 3] * 2 + [[0] * 3] * 2)
    with pytest.raises(MXNetError, match="larger than original"):
        ex.reshape(data=(8, 3))
    assert [g.shape for g in ex.reshape(allow_up_sizing=True, data=(8, 3)).grad_arrays] \
        == [(8, 3), (5, 3), (5,)]
    with pytest.raises(MXNetError, match="unspecified"):
        ex.reshape(data=(4, 2))
    ok = ex.reshape(partial_shaping=True, data=(2, 2))
    assert ok.arg_dict["fc_weight"].shape == (5, 2)
    ex.arg_dict["fc_weight"][:] = 1
    small.forward()
    assert_almost_equal(small.outputs[0].asnumpy(), np.full((2, 5), 3.0))
    # the smaller executor's outputs live in the first rows of the old one's (MXNet)
    assert_almost_equal(ex.outputs[0].asnumpy()[:2], np.full((2, 5), 3.0))
    ex.forward()
    assert_almost_equal(ex.outputs[0].asnumpy(), np.full((4, 5), 3.0) * [[1], [1], [0], [0]])
    # a larger one cannot view them: it gets its own
    big = ex.reshape(allow_up_sizing=True, data=(8, 3))
    big.forward()
    assert big.outputs[0].shape == (8, 5) and ex.outputs[0].shape == (4, 5)


def test_monitor_callback():
    data = mx.sym.Variable("data")
    net = mx.sym.Activation(mx.sym.FullyConnected(data, num_hidden=5, name="fc"),
                            act_type="relu", name="act1")
    ex = net.simple_bind(mx.cpu(), data=(4, 3))
    seen = []
    ex.set_monitor_callback(lambda name, arr: seen.append((name, arr.shape)))
    ex.forward()
    # names come as bytes, as MXNet's C API hands them (mx.base.py_str decodes them)
    assert seen == [(b"fc_output", (4, 5)), (b"act1_output", (4, 5))]
    seen.clear()
    ex.set_monitor_callback(lambda name, arr: seen.append(mx.base.py_str(name)),
                            monitor_all=True)
    ex.forward()
    # as MXNet 1.9.1: a variable input under its own name first; Activation's inputs
    # have no registered names (input0)
    assert seen == ["data", "fc_data", "fc_weight", "fc_weight", "fc_bias", "fc_bias",
                    "fc_output", "act1_input0", "act1_output"]


def test_monitor_callback_array_as_handle():
    # MXNet's callbacks get a C handle: ctypes.cast(arr, NDArrayHandle) and
    # NDArray(handle) must give the array back
    import ctypes
    from mxnet.base import NDArrayHandle
    from mxnet.operator import NDArray
    ex = (mx.sym.Variable("x") * 2).simple_bind(mx.cpu(), x=(2,))
    ex.arg_dict["x"][:] = mx.nd.array([1.0, 3.0])
    got = {}

    def cb(name, arr):
        got[name.decode()] = NDArray(ctypes.cast(arr, NDArrayHandle),
                                     writable=False).asnumpy()
    ex.set_monitor_callback(cb, monitor_all=True)
    ex.forward()
    assert got["x"].tolist() == [1.0, 3.0]
    assert [v.tolist() for k, v in got.items() if k.endswith("_output")] == [[2.0, 6.0]]


def test_eval_and_debug_str():
    a = mx.sym.var("a")
    out = (a * 2).eval(ctx=mx.cpu(), a=mx.nd.ones(2))
    assert_almost_equal(out[0].asnumpy(), [2.0, 2.0])
    ex = _mlp().simple_bind(mx.cpu(), data=(4, 12))
    text = ex.debug_str()
    assert "Op:_backward_FullyConnected, Name=layer2_backward" in text
    assert "Total" in text and "MB allocated" in text and "without reuse" in text


class _FailOnNegative(Op):
    """Test-only operator whose forward fails at run time on negative input."""
    name = "_test_executor_fail_on_negative"
    params = Schema()
    backward_uses = ("out_grad",)

    def forward(self, ctx, p, inputs, aux):
        if (inputs[0] < 0).any():
            raise ValueError("negative input")
        return [inputs[0] * 1]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux):
        return [out_grads[0]]


if _FailOnNegative.name not in list_ops():
    register(_FailOnNegative)


def test_forward_failure_is_reported_and_executor_recovers():
    y = mx.sym.Symbol._create(_FailOnNegative.name, [mx.sym.var("x")], {})
    ex = y.bind(mx.cpu(), {"x": mx.nd.array([-1.0, 2.0])})
    with pytest.raises(MXNetError, match="negative input"):
        ex.forward()[0].asnumpy()
    try:
        mx.nd.waitall()                 # the engine reports it once more, then forgets it
    except MXNetError:
        pass
    ex.arg_dict["x"][:] = 3
    assert_almost_equal(ex.forward()[0].asnumpy(), [3.0, 3.0])


def test_get_symbol_from_tape():
    x = mx.nd.ones((2, 3))
    x.attach_grad()
    w = mx.nd.ones((4, 3))
    w.attach_grad()
    c = mx.nd.ones((2, 4))
    with mx.autograd.record():
        z = mx.nd.relu(mx.nd.FullyConnected(x, w, num_hidden=4, no_bias=True)) * 2 + c
    s = mx.autograd.get_symbol(z)
    assert s.list_arguments() == ["var0", "var1", "null2"]       # as MXNet 1.9.1 names them
    assert s.list_outputs() == ["node_3_output"]
    vals = {"var0": np.random.rand(2, 3), "var1": np.random.rand(4, 3),
            "null2": np.random.rand(2, 4)}
    out = s.eval(ctx=mx.cpu(), **{k: mx.nd.array(v) for k, v in vals.items()})[0]
    ref = np.maximum(vals["var0"] @ vals["var1"].T, 0) * 2 + vals["null2"]
    assert_almost_equal(out.asnumpy(), ref, rtol=1e-5, atol=1e-6)
    with pytest.raises(MXNetError):
        mx.autograd.get_symbol(mx.nd.ones(2))


def test_loss_marking_heads_need_no_gradient():
    x = mx.sym.var("x")
    xv = np.array([1.0, 3.0, 2.0], dtype=np.float32)
    for loss in (mx.sym.make_loss(mx.sym.sum(mx.sym.square(x))),
                 mx.sym.MakeLoss(mx.sym.sum(mx.sym.square(x)))):
        gx = mx.nd.zeros(3)
        ex = loss.bind(mx.cpu(), {"x": mx.nd.array(xv)}, args_grad={"x": gx})
        ex.forward(is_train=True)
        ex.backward()
        assert_almost_equal(gx.asnumpy(), 2 * xv)          # as MXNet 1.9.1 gives
        ex.backward(mx.nd.array([7.0]))                    # the head gradient is ignored
        assert_almost_equal(gx.asnumpy(), 2 * xv)


def test_non_differentiable_paths_write_zeros():
    x = mx.sym.var("x")
    xv = mx.nd.array([1.0, 3.0, 2.0])
    for sym in (mx.sym.argmax(x, axis=0), mx.sym.BlockGrad(x) * 0 + mx.sym.BlockGrad(x)):
        gx = mx.nd.ones(3)
        ex = sym.bind(mx.cpu(), {"x": xv}, args_grad={"x": gx})
        out = ex.forward(is_train=True)[0]
        ex.backward([mx.nd.ones(out.shape)])
        assert_almost_equal(gx.asnumpy(), np.zeros(3))
    gx = mx.nd.ones(3)
    ex = (mx.sym.BlockGrad(x) * x).bind(mx.cpu(), {"x": xv}, args_grad={"x": gx})
    ex.forward(is_train=True)
    ex.backward([mx.nd.ones(3)])
    assert_almost_equal(gx.asnumpy(), xv.asnumpy())


def test_simple_bind_takes_shapes_only_from_tuples():
    # MXNet reads input shapes from the tuple-valued keywords and ignores the rest
    x = mx.sym.var("x")
    ex = (x * 2).simple_bind(mx.cpu(), x=(2, 3), axis=0, mode="clip", force_rebind=True)
    assert ex.arg_dict["x"].shape == (2, 3)
    with pytest.raises(MXNetError, match="not found"):
        (x * 2).simple_bind(mx.cpu(), y=(2, 3))


def test_backward_ignores_head_gradients_nothing_reads():
    # shape_array has a zero gradient: its head gradient is never read, so its shape
    # is not checked either (MXNet neither)
    x = mx.sym.var("x")
    xa = mx.nd.ones((4, 5))
    xg = mx.nd.ones((4, 5))
    ex = mx.sym.shape_array(x).bind(mx.cpu(), args={"x": xa}, args_grad={"x": xg})
    ex.forward(is_train=True)
    ex.backward([mx.nd.ones((4, 5))])
    assert ex.outputs[0].asnumpy().tolist() == [4, 5]
    assert (xg.asnumpy() == 0).all()
    # a head gradient that is read must still fit its output
    ex2 = (x * 2).bind(mx.cpu(), args={"x": xa}, args_grad={"x": xg})
    ex2.forward(is_train=True)
    with pytest.raises(MXNetError, match="out_grad"):
        ex2.backward([mx.nd.ones((2,))])


def test_backward_ignores_extra_head_gradients():
    # MXNet reads one head gradient per output and ignores the rest
    x = mx.sym.Variable("x")
    gx = mx.nd.zeros((2,))
    ex = (x * 3).bind(mx.cpu(), args={"x": mx.nd.ones((2,))}, args_grad={"x": gx})
    ex.forward(is_train=True)
    ex.backward([mx.nd.ones((2,)), mx.nd.ones((5,))])
    assert gx.asnumpy().tolist() == [3.0, 3.0]


def test_simple_bind_skips_keyword_values_that_are_no_shape():
    """MXNet 1.9.1 skips them (its GPU tests pass ``args_grad=`` a list); a shape for
    a name the graph lacks is still an error."""
    a = mx.sym.var("a")
    ex = (a * 2).simple_bind(mx.cpu(), a=(2,), args_grad=[mx.nd.zeros(2)], other=None)
    assert list(ex.arg_dict) == ["a"]
    with pytest.raises(MXNetError, match="keyword argument name b not found"):
        (a * 2).simple_bind(mx.cpu(), a=(2,), b=(3,))


def test_forward_keyword_values_must_be_arrays():
    # MXNet 1.9.1 raises ValueError for a keyword value that is no NDArray/numpy array
    x = mx.sym.var("x")
    ex = (x * 2).simple_bind(mx.cpu(), x=(2,))
    with pytest.raises(ValueError):
        ex.forward(x=[1.0, 2.0])
    out = ex.forward(x=np.array([1.0, 2.0]))[0]
    assert out.asnumpy().tolist() == [2.0, 4.0]


def test_simple_bind_dot_of_csr_gives_rhs_a_row_sparse_gradient():
    # MXNet 1.9.1 infers a row_sparse gradient for rhs of dot(csr, rhs) (csr.T . og),
    # default for the csr operand, and default when transposed or when rhs is also
    # used densely (a sum of row_sparse and dense gradients is dense)
    s, w = mx.sym.var("s", stype="csr"), mx.sym.var("w")
    ex = mx.sym.dot(s, w).simple_bind(mx.cpu(), s=(2, 3), w=(3, 1))
    assert ex.grad_dict["w"].stype == "row_sparse"
    assert ex.grad_dict["s"].stype == "default"
    ex = mx.sym.dot(mx.sym.var("a"), w).simple_bind(mx.cpu(), a=(2, 3), w=(3, 1),
                                                    stype_dict={"a": "csr"})
    assert ex.grad_dict["w"].stype == "row_sparse"
    s2 = mx.sym.var("s2", stype="csr")
    both = mx.sym.Group([mx.sym.dot(s, w), mx.sym.dot(s2, w)])
    assert both.simple_bind(mx.cpu(), s=(2, 3), s2=(2, 3), w=(3, 1)) \
        .grad_dict["w"].stype == "row_sparse"
    mixed = mx.sym.Group([mx.sym.dot(s, w), w * 2])
    assert mixed.simple_bind(mx.cpu(), s=(2, 3), w=(3, 1)).grad_dict["w"].stype == "default"
    tb = mx.sym.dot(s, w, transpose_b=True).simple_bind(mx.cpu(), s=(2, 3), w=(1, 3))
    assert tb.grad_dict["w"].stype == "default"
    # values: csr.T . out_grad
    ex = mx.sym.dot(s, w).simple_bind(mx.cpu(), s=(2, 3), w=(3, 1), grad_req={"w": "write"})
    dense = np.array([[0, 1, 0], [0, 2, 3]], dtype=np.float32)
    mx.nd.array(dense).tostype("csr").copyto(ex.arg_dict["s"])
    ex.arg_dict["w"][:] = mx.nd.array([[1], [2], [3]])
    ex.forward(is_train=True)
    ex.backward(mx.nd.array([[1.0], [0.5]]))
    expected = dense.T @ np.array([[1.0], [0.5]], dtype=np.float32)
    np.testing.assert_allclose(ex.grad_dict["w"].tostype("default").asnumpy(), expected)


def test_tied_sparse_embedding_weight_gets_a_dense_gradient():
    # the Embedding's row_sparse part plus the FullyConnected's dense part: dense,
    # as MXNet 1.9.1 infers
    tied = mx.sym.var("tw")
    emb = mx.sym.Embedding(mx.sym.var("i"), weight=tied, input_dim=5, output_dim=2,
                           sparse_grad=True)
    out = mx.sym.FullyConnected(emb, weight=tied, num_hidden=5, no_bias=True)
    assert out.simple_bind(mx.cpu(), i=(3,)).grad_dict["tw"].stype == "default"
