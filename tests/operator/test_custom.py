"""Python operators: CustomOp/CustomOpProp through mx.nd.Custom (imperative, autograd)
and mx.sym.Custom (executors), and the legacy NumpyOp/NDArrayOp. References are NumPy
implementations written here and numeric gradients."""
import json
import os
import sys
import warnings

import numpy as np
import pytest

import mxnet as mx
from mxnet.base import MXNetError
from mxnet.test_utils import assert_almost_equal, check_numeric_gradient

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples"))
import custom_softmax_mlp  # noqa: E402,F401  (registers seed 001's "softmax" CustomOp)
from numpy_softmax import NumpySoftmax  # noqa: E402
from tile_layer import TileLayer  # noqa: E402


def np_softmax(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


# --- operators used by the tests (seed 001's softmax, from its example, and a few
# smooth ones) -----------------------------------------------------------------------
class ScaledCube(mx.operator.CustomOp):
    """y = scale * x**3 (+ b); a smooth op for numeric gradients."""

    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, is_train, req, in_data, out_data, aux):
        x, b = in_data
        self.assign(out_data[0], req[0], self.scale * x * x * x + b)

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        x = in_data[0]
        self.assign(in_grad[0], req[0], out_grad[0] * 3 * self.scale * x * x)
        self.assign(in_grad[1], req[1], out_grad[0])


@mx.operator.register("test_scaled_cube")
class ScaledCubeProp(mx.operator.CustomOpProp):
    def __init__(self, scale="1.0"):
        super().__init__(need_top_grad=True)
        self.scale = float(scale)

    def list_arguments(self):
        return ["data", "bias"]

    def create_operator(self, ctx, shapes, dtypes):
        return ScaledCube(self.scale)


class Counter(mx.operator.CustomOp):
    """out = 2 * x + state; in training, state += sum(x) before use."""

    def forward(self, is_train, req, in_data, out_data, aux):
        if is_train:
            aux[0][:] = aux[0] + in_data[0].sum()
        self.assign(out_data[0], req[0], in_data[0] * 2 + aux[0])

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        self.assign(in_grad[0], req[0], out_grad[0] * 2)


@mx.operator.register("test_counter")
class CounterProp(mx.operator.CustomOpProp):
    def list_auxiliary_states(self):
        return ["state"]

    def infer_shape(self, in_shape):
        return in_shape, [in_shape[0]], [(1,)]

    def declare_backward_dependency(self, out_grad, in_data, out_data):
        return out_grad

    def create_operator(self, ctx, shapes, dtypes):
        return Counter()


SEEN = {}


class Probe(mx.operator.CustomOp):
    """Records what backward could read; gradient = out_grad * 3."""

    def forward(self, is_train, req, in_data, out_data, aux):
        self.assign(out_data[0], req[0], in_data[0] * 3)

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        seen = {}
        for what, arrs in (("out_grad", out_grad), ("in_data", in_data),
                           ("out_data", out_data)):
            try:
                arrs[0].asnumpy()
                seen[what] = True
            except MXNetError:
                seen[what] = False
        SEEN.update(seen)
        SEEN["req"] = list(req)
        self.assign(in_grad[0], req[0], out_grad[0] * 3)


@mx.operator.register("test_probe")
class ProbeProp(mx.operator.CustomOpProp):
    def declare_backward_dependency(self, out_grad, in_data, out_data):
        return [out_grad[0]]

    def create_operator(self, ctx, shapes, dtypes):
        return Probe()


class Failing(mx.operator.CustomOp):
    def __init__(self, where):
        super().__init__()
        self.where = where

    def forward(self, is_train, req, in_data, out_data, aux):
        if self.where == "forward":
            raise ValueError("custom forward exploded")
        self.assign(out_data[0], req[0], in_data[0])

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        if self.where == "backward":
            raise RuntimeError("custom backward exploded")
        self.assign(in_grad[0], req[0], out_grad[0])


@mx.operator.register("test_failing")
class FailingProp(mx.operator.CustomOpProp):
    def __init__(self, where="forward"):
        super().__init__()
        self.where = where

    def create_operator(self, ctx, shapes, dtypes):
        return Failing(self.where)


class Cast64(mx.operator.CustomOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        self.assign(out_data[0], req[0], in_data[0].astype("float64"))
        self.assign(out_data[1], req[1], in_data[0].sum(axis=1))


@mx.operator.register("test_cast_split")
class CastSplitProp(mx.operator.CustomOpProp):
    """Two outputs: x as float64, and row sums (type and shape from the prop)."""

    def list_outputs(self):
        return ["as64", "rowsum"]

    def infer_shape(self, in_shape):
        return in_shape, [in_shape[0], [in_shape[0][0]]], []

    def infer_type(self, in_type):
        return in_type, [np.float64, in_type[0]], []

    def create_operator(self, ctx, shapes, dtypes):
        return Cast64()


# --- CustomOp --------------------------------------------------------------------
def _softmax_data(n=5, k=4, seed=0):
    rng = np.random.RandomState(seed)
    x = rng.randn(n, k).astype(np.float32)
    label = rng.randint(0, k, n).astype(np.float32)
    return x, label


def _softmax_grad(x, label):
    g = np_softmax(x)
    g[np.arange(len(label)), label.astype(int)] -= 1
    return g


def test_custom_softmax_imperative_forward_backward():
    x, label = _softmax_data()
    xd, ld = mx.nd.array(x), mx.nd.array(label)
    xd.attach_grad()
    with mx.autograd.record():
        y = mx.nd.Custom(xd, ld, op_type="softmax")
    assert y.shape == x.shape and y.dtype == np.float32
    assert_almost_equal(y.asnumpy(), np_softmax(x), rtol=1e-5, atol=1e-6)
    y.backward()
    assert_almost_equal(xd.grad.asnumpy(), _softmax_grad(x, label), rtol=1e-5, atol=1e-6)


def test_custom_softmax_executor_needs_no_head_gradient():
    """need_top_grad=False: the op ends a network like SoftmaxOutput."""
    x, label = _softmax_data(6, 3, seed=1)
    sym = mx.sym.Custom(mx.sym.var("data"), op_type="softmax", name="softmax")
    assert sym.list_arguments() == ["data", "softmax_label"]
    assert sym.list_outputs() == ["softmax_output"]
    exe = sym.simple_bind(mx.cpu(), data=x.shape)
    exe.forward(is_train=True, data=mx.nd.array(x), softmax_label=mx.nd.array(label))
    exe.backward()                       # no out_grads
    assert_almost_equal(exe.outputs[0].asnumpy(), np_softmax(x), rtol=1e-5, atol=1e-6)
    assert_almost_equal(exe.grad_dict["data"].asnumpy(), _softmax_grad(x, label),
                        rtol=1e-5, atol=1e-6)


def test_need_top_grad_true_requires_head_gradient():
    sym = mx.sym.Custom(mx.sym.var("x"), mx.sym.var("b"), op_type="test_scaled_cube")
    exe = sym.simple_bind(mx.cpu(), x=(2, 3), b=(2, 3))
    exe.forward(is_train=True)
    with pytest.raises(MXNetError, match="head_gradient"):
        exe.backward()


def test_custom_out_grad_hidden_when_need_top_grad_false():
    """The loss's backward sees no output gradient (MXNet passes an unreadable one)."""
    seen = {}

    class Loss(mx.operator.CustomOp):
        def forward(self, is_train, req, in_data, out_data, aux):
            self.assign(out_data[0], req[0], in_data[0])

        def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
            try:
                out_grad[0].asnumpy()
                seen["og"] = True
            except MXNetError:
                seen["og"] = False
            self.assign(in_grad[0], req[0], in_data[0] * 2)

    @mx.operator.register("test_loss_like")
    class LossProp(mx.operator.CustomOpProp):
        def __init__(self):
            super().__init__(need_top_grad=False)

        def create_operator(self, ctx, shapes, dtypes):
            return Loss()

    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    exe = mx.sym.Custom(mx.sym.var("x"), op_type="test_loss_like").simple_bind(
        mx.cpu(), x=x.shape)
    exe.forward(is_train=True, x=mx.nd.array(x))
    exe.backward()
    assert_almost_equal(exe.grad_dict["x"].asnumpy(), 2 * x)
    assert seen["og"] is False


def test_custom_with_aux_states():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    # imperative: aux passed after the arguments, updated in place in training
    state = mx.nd.zeros((1,))
    xd = mx.nd.array(x)
    xd.attach_grad()
    with mx.autograd.record():
        y = mx.nd.Custom(xd, state, op_type="test_counter")
    y.backward()
    assert_almost_equal(state.asnumpy(), [x.sum()])
    assert_almost_equal(y.asnumpy(), 2 * x + x.sum())
    assert_almost_equal(xd.grad.asnumpy(), np.full_like(x, 2))
    y2 = mx.nd.Custom(xd, state, op_type="test_counter")       # predict mode: no update
    assert_almost_equal(state.asnumpy(), [x.sum()])
    assert_almost_equal(y2.asnumpy(), 2 * x + x.sum())
    # symbolic: the aux state is an auxiliary variable of the executor
    sym = mx.sym.Custom(mx.sym.var("x"), op_type="test_counter", name="cnt")
    assert sym.list_auxiliary_states() == ["cnt_state"]
    assert sym.infer_shape(x=(2, 3))[2] == [(1,)]
    exe = sym.simple_bind(mx.cpu(), x=(2, 3))
    exe.forward(is_train=False, x=mx.nd.array(x))
    assert_almost_equal(exe.outputs[0].asnumpy(), 2 * x)
    assert_almost_equal(exe.aux_dict["cnt_state"].asnumpy(), [0])
    for step in (1, 2):
        exe.forward(is_train=True, x=mx.nd.array(x))
        exe.backward(mx.nd.ones((2, 3)))
        assert_almost_equal(exe.aux_dict["cnt_state"].asnumpy(), [step * x.sum()])
        assert_almost_equal(exe.outputs[0].asnumpy(), 2 * x + step * x.sum())
    assert_almost_equal(exe.grad_dict["x"].asnumpy(), np.full_like(x, 2))


def test_declare_backward_dependency_honoured():
    SEEN.clear()
    x = np.random.rand(3, 2).astype(np.float32)
    xd = mx.nd.array(x)
    xd.attach_grad()
    with mx.autograd.record():
        y = mx.nd.Custom(xd, op_type="test_probe")
    y.backward(mx.nd.ones((3, 2)) * 2)
    assert SEEN["out_grad"] and not SEEN["in_data"] and not SEEN["out_data"]
    assert_almost_equal(xd.grad.asnumpy(), np.full_like(x, 6))
    op = mx.operator.get_op("Custom")
    sym = mx.sym.Custom(mx.sym.var("x"), op_type="test_probe")
    node = sym._outputs[0][0]
    assert op.backward_uses_for(node.params) == ("out_grad",)
    # executor: same view of the world
    SEEN.clear()
    exe = sym.simple_bind(mx.cpu(), x=x.shape)
    exe.forward(is_train=True, x=mx.nd.array(x))
    exe.backward(mx.nd.ones((3, 2)))
    assert_almost_equal(exe.grad_dict["x"].asnumpy(), np.full_like(x, 3))
    assert SEEN["out_grad"] and not SEEN["in_data"] and not SEEN["out_data"]
    assert SEEN["req"] == ["write"]


def test_default_dependencies_and_null_req():
    SEEN.clear()
    sym = mx.sym.Custom(mx.sym.var("x"), op_type="test_scaled_cube", name="c")
    exe = sym.simple_bind(mx.cpu(), x=(2, 2), c_bias=(2, 2),
                          grad_req={"x": "write", "c_bias": "null"})
    exe.forward(is_train=True, x=mx.nd.ones((2, 2)), c_bias=mx.nd.zeros((2, 2)))
    exe.backward(mx.nd.ones((2, 2)))
    assert_almost_equal(exe.grad_dict["x"].asnumpy(), np.full((2, 2), 3.0))
    assert exe.grad_dict["c_bias"] is None


def test_infer_shape_and_type_through_prop():
    sym = mx.sym.Custom(mx.sym.var("data"), op_type="softmax", name="sm")
    arg, out, aux = sym.infer_shape(data=(7, 3))
    assert arg == [(7, 3), (7,)] and out == [(7, 3)] and aux == []
    two = mx.sym.Custom(mx.sym.var("x"), op_type="test_cast_split", name="cs")
    assert two.list_outputs() == ["cs_as64", "cs_rowsum"]
    assert two.infer_shape(x=(4, 5))[1] == [(4, 5), (4,)]
    assert two.infer_type(x=np.float32)[1] == [np.float64, np.float32]
    x = np.random.rand(4, 5).astype(np.float32)
    a64, rows = mx.nd.Custom(mx.nd.array(x), op_type="test_cast_split")
    assert a64.dtype == np.float64 and rows.dtype == np.float32
    assert_almost_equal(a64.asnumpy(), x.astype(np.float64))
    assert_almost_equal(rows.asnumpy(), x.sum(axis=1), rtol=1e-5)
    exe = two.simple_bind(mx.cpu(), x=(4, 5), grad_req="null")
    o64, orow = exe.forward(x=mx.nd.array(x))
    assert o64.dtype == np.float64
    assert_almost_equal(orow.asnumpy(), x.sum(axis=1), rtol=1e-5)


def test_bad_infer_shape_is_an_mxnet_error():
    @mx.operator.register("test_bad_shape")
    class BadProp(mx.operator.CustomOpProp):
        def infer_shape(self, in_shape):
            return [in_shape[0]], []          # no output shape

    with pytest.raises(MXNetError, match="infer_shape"):
        mx.sym.Custom(mx.sym.var("x"), op_type="test_bad_shape").infer_shape(x=(2,))


def test_autograd_matches_numeric_gradient():
    rng = np.random.RandomState(3)
    x = rng.uniform(-1, 1, (3, 4))
    b = rng.uniform(-1, 1, (3, 4))
    check_numeric_gradient(lambda xx, bb: mx.nd.Custom(xx, bb, op_type="test_scaled_cube",
                                                       scale=1.5),
                           [x, b], numeric_eps=1e-4, rtol=1e-3)


def test_symbolic_matches_imperative_and_kwargs_are_strings():
    rng = np.random.RandomState(4)
    x = rng.uniform(-1, 1, (2, 5)).astype(np.float32)
    b = rng.uniform(-1, 1, (2, 5)).astype(np.float32)
    head = rng.uniform(-1, 1, (2, 5)).astype(np.float32)
    xd, bd = mx.nd.array(x), mx.nd.array(b)
    xd.attach_grad()
    bd.attach_grad()
    with mx.autograd.record():
        y = mx.nd.Custom(xd, bd, op_type="test_scaled_cube", scale=2)
    y.backward(mx.nd.array(head))
    assert_almost_equal(y.asnumpy(), 2 * x ** 3 + b, rtol=1e-5)
    sym = mx.sym.Custom(data=mx.sym.var("x"), bias=mx.sym.var("b"),
                        op_type="test_scaled_cube", scale=2)
    exe = sym.simple_bind(mx.cpu(), x=x.shape, b=b.shape)
    exe.forward(is_train=True, x=mx.nd.array(x), b=mx.nd.array(b))
    exe.backward(mx.nd.array(head))
    assert_almost_equal(exe.outputs[0].asnumpy(), y.asnumpy(), rtol=1e-6)
    assert_almost_equal(exe.grad_dict["x"].asnumpy(), xd.grad.asnumpy(), rtol=1e-6)
    assert_almost_equal(exe.grad_dict["b"].asnumpy(), bd.grad.asnumpy(), rtol=1e-6)
    assert_almost_equal(xd.grad.asnumpy(), 6 * x ** 2 * head, rtol=1e-5)
    # JSON stores every keyword as a string and round-trips
    attrs = json.loads(sym.tojson())["nodes"][-1]["attrs"]
    assert attrs == {"op_type": "test_scaled_cube", "scale": "2"}
    again = mx.sym.load_json(sym.tojson())
    exe2 = again.simple_bind(mx.cpu(), x=x.shape, b=b.shape)
    exe2.forward(x=mx.nd.array(x), b=mx.nd.array(b))
    assert_almost_equal(exe2.outputs[0].asnumpy(), y.asnumpy(), rtol=1e-6)


def test_prop_receives_string_kwargs():
    got = {}

    @mx.operator.register("test_kwargs")
    class KwProp(mx.operator.CustomOpProp):
        def __init__(self, **kwargs):
            super().__init__()
            got.update(kwargs)

        def create_operator(self, ctx, shapes, dtypes):
            return Failing("nowhere")

    mx.nd.Custom(mx.nd.ones((2,)), op_type="test_kwargs", alpha=0.5, flag=True,
                 dims=(1, 2), name_="n")
    assert got == {"alpha": "0.5", "flag": "True", "dims": "(1, 2)", "name_": "n"}


def test_grad_req_add_accumulates():
    sym = mx.sym.Custom(mx.sym.var("x"), op_type="test_counter")
    exe = sym.simple_bind(mx.cpu(), x=(2, 2), grad_req="add")
    exe.forward(is_train=True, x=mx.nd.ones((2, 2)))
    exe.backward(mx.nd.ones((2, 2)))
    exe.backward(mx.nd.ones((2, 2)))
    assert_almost_equal(exe.grad_dict["x"].asnumpy(), np.full((2, 2), 4.0))


def test_naming_and_errors():
    sym = mx.sym.Custom(data=mx.sym.var("data"), op_type="softmax")
    assert sym.name.startswith("custom")
    assert sym.list_arguments()[1] == f"{sym.name}_label"
    with pytest.raises(MXNetError, match="Cannot find custom operator nope"):
        mx.sym.Custom(mx.sym.var("data"), op_type="nope")
    with pytest.raises(MXNetError, match="Cannot find custom operator nope"):
        mx.nd.Custom(mx.nd.ones((2, 2)), op_type="nope")
    with pytest.raises(MXNetError, match="op_type"):
        mx.sym.Custom(mx.sym.var("data"))
    with pytest.raises(MXNetError, match="label"):
        mx.nd.Custom(mx.nd.ones((2, 2)), op_type="softmax")   # missing input
    assert "Custom" in mx.operator.get_all_registered_operators()


def test_forward_exception_surfaces_and_engine_keeps_working():
    x = mx.nd.ones((2, 3))
    with pytest.raises(MXNetError) as info:
        y = mx.nd.Custom(x, op_type="test_failing", where="forward")
        y.asnumpy()
    text = str(info.value)
    assert "custom forward exploded" in text and "Traceback" in text
    # executors run on the engine's workers: the error comes at the sync point
    sym = mx.sym.Custom(mx.sym.var("x"), op_type="test_failing", where="forward")
    exe = sym.simple_bind(mx.cpu(), x=(2, 3))
    with pytest.raises(MXNetError, match="custom forward exploded"):
        exe.forward(x=x)
        exe.outputs[0].asnumpy()
    try:
        mx.nd.waitall()
    except MXNetError:
        pass
    z = mx.nd.ones((2, 2)) * 3
    assert_almost_equal(z.asnumpy(), np.full((2, 2), 3.0))
    ok = mx.sym.Custom(mx.sym.var("x"), op_type="test_failing", where="none")
    e2 = ok.simple_bind(mx.cpu(), x=(2, 3))
    assert_almost_equal(e2.forward(x=x)[0].asnumpy(), np.ones((2, 3)))


def test_backward_exception_surfaces():
    x = mx.nd.ones((2, 3))
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.Custom(x, op_type="test_failing", where="backward")
    with pytest.raises(MXNetError) as info:
        y.backward()
        x.grad.asnumpy()
    assert "custom backward exploded" in str(info.value)
    assert "Traceback" in str(info.value)
    assert_almost_equal((mx.nd.ones((2,)) + 1).asnumpy(), [2, 2])


def test_state_kept_between_forward_and_backward():
    """create_operator is called once per node/shape; forward state reaches backward."""
    created = []

    class Saver(mx.operator.CustomOp):
        def forward(self, is_train, req, in_data, out_data, aux):
            self.saved = in_data[0].asnumpy() * 10
            self.assign(out_data[0], req[0], in_data[0])

        def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
            self.assign(in_grad[0], req[0], mx.nd.array(self.saved))

    @mx.operator.register("test_saver")
    class SaverProp(mx.operator.CustomOpProp):
        def declare_backward_dependency(self, out_grad, in_data, out_data):
            return []

        def create_operator(self, ctx, shapes, dtypes):
            created.append((str(ctx), shapes, dtypes))
            return Saver()

    exe = mx.sym.Custom(mx.sym.var("x"), op_type="test_saver").simple_bind(
        mx.cpu(), x=(2,))
    for v in (1.0, 2.0):
        exe.forward(is_train=True, x=mx.nd.array([v, v]))
        exe.backward(mx.nd.ones((2,)))
        assert_almost_equal(exe.grad_dict["x"].asnumpy(), [10 * v, 10 * v])
    assert created == [("cpu(0)", [[2]], [0])]
    # imperative: every call has its own operator, so two uses in one graph keep
    # their own state (backward here returns the state, ignoring out_grad)
    x = mx.nd.array([1.0, 3.0])
    x.attach_grad()
    with mx.autograd.record():
        y1 = mx.nd.Custom(x, op_type="test_saver")
        y2 = mx.nd.Custom(y1 * 2, op_type="test_saver")
    y2.backward()
    assert_almost_equal(x.grad.asnumpy(), [10.0, 30.0])
    assert len(created) == 3


def test_custom_op_inside_a_larger_graph_with_fully_connected():
    x, label = _softmax_data(8, 6, seed=5)
    data = mx.sym.var("data")
    fc = mx.sym.FullyConnected(data, num_hidden=4, name="fc")
    net = mx.sym.Custom(fc, mx.sym.var("softmax_label"), op_type="softmax",
                        name="softmax")
    exe = net.simple_bind(mx.cpu(), data=x.shape, softmax_label=(8,))
    rng = np.random.RandomState(0)
    w = rng.randn(4, 6).astype(np.float32) * 0.1
    lab = rng.randint(0, 4, 8).astype(np.float32)
    exe.arg_dict["fc_weight"][:] = w
    exe.arg_dict["fc_bias"][:] = 0
    exe.forward(is_train=True, data=mx.nd.array(x), softmax_label=mx.nd.array(lab))
    exe.backward()
    z = x @ w.T
    g = _softmax_grad(z, lab)
    assert_almost_equal(exe.outputs[0].asnumpy(), np_softmax(z), rtol=1e-5, atol=1e-6)
    assert_almost_equal(exe.grad_dict["fc_weight"].asnumpy(), g.T @ x, rtol=1e-4, atol=1e-5)


# --- legacy NumpyOp / NDArrayOp ---------------------------------------------------------
class NDArrayScale(mx.operator.NDArrayOp):
    def __init__(self, factor):
        super().__init__(True)
        self.factor = factor

    def list_arguments(self):
        return ["x"]

    def forward(self, in_data, out_data):
        out_data[0][:] = in_data[0] * self.factor

    def backward(self, out_grad, in_data, out_data, in_grad):
        in_grad[0][:] = out_grad[0] * self.factor

    def declare_backward_dependency(self, out_grad, in_data, out_data):
        return out_grad


def _legacy(cls, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return cls(*args)


def test_numpy_op_in_executor():
    x, label = _softmax_data(4, 5, seed=7)
    op = _legacy(NumpySoftmax)
    sym = op(data=mx.sym.var("data"), name="softmax")
    assert sym.list_arguments() == ["data", "softmax_label"]
    assert sym.list_outputs() == ["softmax_output"]
    assert sym.infer_shape(data=(4, 5))[0] == [(4, 5), (4,)]
    exe = sym.simple_bind(mx.cpu(), data=x.shape)
    exe.forward(is_train=True, data=mx.nd.array(x), softmax_label=mx.nd.array(label))
    exe.backward()
    assert_almost_equal(exe.outputs[0].asnumpy(), np_softmax(x), rtol=1e-5, atol=1e-6)
    assert_almost_equal(exe.grad_dict["data"].asnumpy(), _softmax_grad(x, label),
                        rtol=1e-5, atol=1e-6)
    assert json.loads(sym.tojson())["nodes"][-1]["op"] == "_Native"
    auto = op(data=mx.sym.var("data"))
    assert auto.name.startswith("_native")


def test_ndarray_op_in_executor_and_dependencies():
    op = _legacy(NDArrayScale, 3.0)
    sym = op(mx.sym.var("a"), name="scale")
    assert sym.list_arguments() == ["a"] and sym.list_outputs() == ["scale_output"]
    x = np.random.rand(2, 3).astype(np.float32)
    exe = sym.simple_bind(mx.cpu(), a=x.shape)
    exe.forward(is_train=True, a=mx.nd.array(x))
    exe.backward(mx.nd.ones((2, 3)) * 2)
    assert_almost_equal(exe.outputs[0].asnumpy(), 3 * x, rtol=1e-6)
    assert_almost_equal(exe.grad_dict["a"].asnumpy(), np.full_like(x, 6))
    node = sym._outputs[0][0]
    assert node.op.name == "_NDArray"
    assert node.op.backward_uses_for(node.params) == ("out_grad",)
    assert op(mx.sym.var("a")).name.startswith("_ndarray")


def test_tile_layer_numpy_op_shapes():
    """Seed 001's TileLayer: infer_shape receives lists and appends to them. (The
    seed's forward and backward assign to local names only; working ones here.)"""
    class WorkingTileLayer(TileLayer):
        def forward(self, in_data, out_data):
            out_data[0][:] = np.tile(in_data[0][..., None], reps=self.tiles)

        def backward(self, out_grad, in_data, out_data, in_grad):
            in_grad[0][:] = 0

    custie = _legacy(WorkingTileLayer, 10, 2)
    tiles_a = custie(input=mx.sym.Variable('data'), name='tileop')
    arg_shapes, out_shape, aux_shape = tiles_a.infer_shape(data=(2, 3))
    assert arg_shapes == [(2, 3)] and out_shape == [(2, 3, 10)] and aux_shape == []
    assert tiles_a.list_outputs() == ["tileop_output"]
    exe = tiles_a.simple_bind(mx.cpu(), data=(1, 10, 10), grad_req="write")
    x = np.random.rand(1, 10, 10).astype(np.float32)
    out = exe.forward(is_train=True, data=mx.nd.array(x))[0]
    assert out.shape == (1, 10, 10, 10)
    assert_almost_equal(out.asnumpy(), np.repeat(x[..., None], 10, axis=3))


def test_numpy_op_exception_surfaces():
    class Broken(mx.operator.NumpyOp):
        def forward(self, in_data, out_data):
            raise KeyError("numpy op failed")

    sym = _legacy(Broken)(data=mx.sym.var("x"))
    exe = sym.simple_bind(mx.cpu(), x=(2,))
    with pytest.raises(MXNetError, match="numpy op failed"):
        exe.forward(x=mx.nd.ones((2,)))
        exe.outputs[0].asnumpy()
    try:
        mx.nd.waitall()
    except MXNetError:
        pass


def test_custom_ops_on_engine_workers_cannot_starve_the_pool():
    """Custom callbacks run on engine workers and wait on work they push; with a
    single worker that work still runs (a spare worker stands in)."""
    import threading
    from mxnet import engine
    from mxnet.engine import ThreadedEngine

    class Double(mx.operator.CustomOp):
        def forward(self, is_train, req, in_data, out_data, aux):
            self.assign(out_data[0], req[0], in_data[0] * 2)   # large: pushed

    @mx.operator.register("test_double_big")
    class DoubleProp(mx.operator.CustomOpProp):
        def create_operator(self, ctx, shapes, dtypes):
            return Double()

    prev = engine.get()
    eng = engine.set_engine(ThreadedEngine(num_workers=1))
    result = {}

    def work():
        x = mx.nd.ones((400, 400))
        ys = [mx.nd.Custom(x * 1, op_type="test_double_big") for _ in range(4)]
        result["sum"] = sum(float(y.asnumpy().sum()) for y in ys)

    t = threading.Thread(target=work, daemon=True)
    t.start()
    t.join(60)
    try:
        assert not t.is_alive(), "custom operators deadlocked the engine"
        assert result["sum"] == 4 * 2 * 400 * 400
    finally:
        if not t.is_alive():
            eng.wait_for_all()
        engine._engine = prev


def test_backward_sees_grad_req_add():
    """A CustomOp bound with grad_req='add' (executor or autograd) sees req 'add' in its
    backward, and the gradient accumulates onto the buffer exactly once."""
    seen = []

    class Sq(mx.operator.CustomOp):
        def forward(self, is_train, req, in_data, out_data, aux):
            self.assign(out_data[0], req[0], in_data[0] * in_data[0])

        def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
            seen.append(list(req))
            self.assign(in_grad[0], req[0], 2 * in_data[0] * out_grad[0])

    @mx.operator.register("house_sq_add")
    class SqProp(mx.operator.CustomOpProp):
        def list_arguments(self):
            return ["data"]

        def infer_shape(self, in_shape):
            return in_shape, [in_shape[0]], []

        def create_operator(self, ctx, shapes, dtypes):
            return Sq()

    x = np.array([1.0, 2.0, 3.0])
    ex = mx.sym.Custom(mx.sym.var("x"), op_type="house_sq_add").simple_bind(
        mx.cpu(), grad_req="add", x=(3,))
    ex.arg_dict["x"][:] = x
    ex.grad_dict["x"][:] = 10
    ex.forward(is_train=True)
    ex.backward([mx.nd.ones((3,))])
    np.testing.assert_allclose(ex.grad_dict["x"].asnumpy(), 10 + 2 * x)
    assert seen[-1] == ["add"]
    a = mx.nd.array(x)
    a.attach_grad(grad_req="add")
    a.grad[:] = 5
    with mx.autograd.record():
        b = mx.nd.Custom(a, op_type="house_sq_add")
    b.backward()
    np.testing.assert_allclose(a.grad.asnumpy(), 5 + 2 * x)
    assert seen[-1] == ["add"]
