"""Higher-order gradients (autograd.grad(create_graph=True), mxnet/autograd_graph.py),
checked against finite differences of NumPy functions (float64)."""
import numpy as np
import pytest

import mxnet as mx
from mxnet import autograd, nd

RS = np.random.RandomState(3)

UNARY = [
    ("sin", np.sin, (-2, 2)), ("cos", np.cos, (-2, 2)), ("tan", np.tan, (-1, 1)),
    ("sinh", np.sinh, (-2, 2)), ("cosh", np.cosh, (-2, 2)), ("tanh", np.tanh, (-2, 2)),
    ("arcsin", np.arcsin, (-0.9, 0.9)), ("arccos", np.arccos, (-0.9, 0.9)),
    ("arctan", np.arctan, (-2, 2)), ("arcsinh", np.arcsinh, (-2, 2)),
    ("arccosh", np.arccosh, (1.5, 3)), ("arctanh", np.arctanh, (-0.9, 0.9)),
    ("log", np.log, (0.5, 3)), ("log2", np.log2, (0.5, 3)), ("log10", np.log10, (0.5, 3)),
    ("square", np.square, (-2, 2)), ("exp", np.exp, (-2, 2)), ("expm1", np.expm1, (-2, 2)),
    ("log1p", np.log1p, (-0.5, 2)), ("reciprocal", np.reciprocal, (0.5, 2)),
    ("sigmoid", lambda x: 1 / (1 + np.exp(-x)), (-2, 2)), ("sqrt", np.sqrt, (0.5, 3)),
    ("cbrt", np.cbrt, (0.5, 3)), ("rsqrt", lambda x: x ** -0.5, (0.5, 3)),
    ("rcbrt", lambda x: x ** (-1 / 3), (0.5, 3)), ("radians", np.radians, (-2, 2)),
    ("relu", lambda x: np.maximum(x, 0), (0.2, 2)), ("abs", np.abs, (0.2, 2)),
]


def _second(fn, x, h=1e-4):
    return (fn(x + h) - 2 * fn(x) + fn(x - h)) / h ** 2


def _grads(op, x_np, heads):
    """First and second derivatives with the given head gradients."""
    x = nd.array(x_np, dtype="float64")
    x.attach_grad()
    with autograd.record():
        y = op(x)
        g1 = autograd.grad(y, [x], head_grads=heads[0], create_graph=True,
                           retain_graph=True)[0]
        g2 = autograd.grad(g1, [x], head_grads=heads[1], create_graph=True,
                           retain_graph=True)[0]
    return g1.asnumpy(), g2.asnumpy()


@pytest.mark.parametrize("name, fn, dom", UNARY, ids=[u[0] for u in UNARY])
def test_second_order_unary(name, fn, dom):
    x = RS.uniform(*dom, size=(3, 4))
    h1, h2 = RS.uniform(0.5, 1.5, (2, 3, 4))
    g1, g2 = _grads(getattr(nd, name), x,
                    [nd.array(h1, dtype="float64"), nd.array(h2, dtype="float64")])
    first = (fn(x + 1e-6) - fn(x - 1e-6)) / 2e-6
    np.testing.assert_allclose(g1, first * h1, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(g2, _second(fn, x) * h1 * h2, rtol=1e-3, atol=1e-4)


def test_third_order_and_composition():
    x_np = RS.uniform(-1, 1, (5,))
    x = nd.array(x_np, dtype="float64")
    x.attach_grad()
    with autograd.record():
        y = nd.sin(x) * nd.exp(x) + 3 * x * x
        g = y
        for _ in range(3):
            g = autograd.grad(g, [x], create_graph=True, retain_graph=True)[0]
    # d3/dx3 [sin(x) e^x] = 2 e^x (cos x - sin x); the quadratic term vanishes
    np.testing.assert_allclose(g.asnumpy(), 2 * np.exp(x_np) * (np.cos(x_np) - np.sin(x_np)),
                               rtol=1e-10)
    # backward() through a create_graph gradient
    x2 = nd.array([1.0], dtype="float64")
    x2.attach_grad()
    with autograd.record():
        z = nd.elemwise_add(nd.exp(x2), x2)
    dx, = autograd.grad(z, [x2], create_graph=True)
    dx.backward()
    np.testing.assert_allclose(x2.grad.asnumpy(), [np.e], rtol=1e-12)


@pytest.mark.parametrize("flatten, xshape", [(True, (2, 3, 2)), (False, (2, 3, 4))])
def test_dense_mixed_second_order(flatten, xshape):
    net = mx.gluon.nn.Dense(3, flatten=flatten)
    net.initialize(mx.init.Uniform(1.0))
    x = nd.array(RS.uniform(-1, 1, xshape))
    x.attach_grad()
    with autograd.record():
        y = net(x)
        w = net.weight.data()
        o_y = nd.array(RS.uniform(-1, 1, y.shape))
        x_grad = autograd.grad(y, [x], head_grads=o_y, create_graph=True,
                               retain_graph=True)[0]
        o_x = nd.array(RS.uniform(-1, 1, x_grad.shape))
        w_grad_grad = autograd.grad(x_grad, [w], head_grads=o_x)[0]
    # x_grad = o_y . W (rows of o_y against W), so d<o_x, x_grad>/dW = o_y^T . o_x
    k = w.shape[1]
    oy2 = o_y.asnumpy().reshape(-1, 3)
    ox2 = o_x.asnumpy().reshape(-1, k)
    np.testing.assert_allclose(x_grad.asnumpy().reshape(-1, k), oy2 @ w.asnumpy(), rtol=1e-5)
    np.testing.assert_allclose(w_grad_grad.asnumpy(), oy2.T @ ox2, rtol=1e-4, atol=1e-6)


def test_constant_gradient_differentiates_to_zero():
    x = nd.array([1.0, 2.0])
    x.attach_grad()
    with autograd.record():
        g1 = autograd.grad(nd.radians(x), [x], create_graph=True, retain_graph=True)[0]
        g2 = autograd.grad(g1, [x], create_graph=True, retain_graph=True)[0]
    np.testing.assert_allclose(g1.asnumpy(), [np.pi / 180] * 2, rtol=1e-6)
    assert (g2.asnumpy() == 0).all()


def test_operator_without_rule_refuses_second_order():
    x = nd.array([0.3, 0.7])
    x.attach_grad()
    with autograd.record():
        g1 = autograd.grad(nd.erf(x), [x], create_graph=True, retain_graph=True)[0]
    # the first gradient is right: 2/sqrt(pi) exp(-x^2)
    np.testing.assert_allclose(g1.asnumpy(), 2 / np.sqrt(np.pi) * np.exp(-x.asnumpy() ** 2),
                               rtol=1e-5)
    with pytest.raises(mx.MXNetError, match="erf"):
        autograd.grad(g1, [x])


def _recorded_ops(net, x, **hybridize):
    import json
    net.hybridize(**hybridize)
    with autograd.record():
        y = net(x)
    nodes = json.loads(autograd.get_symbol(y).tojson())["nodes"]
    y.backward()
    return [n["op"] for n in nodes if n["op"] != "null"], len(nodes)


def test_get_symbol_of_hybridized_block_follows_inline_limit():
    # MXNet records a cached graph of at most inline_limit operators op by op, a larger
    # one (or any with static_alloc) as one _CachedOp node with every input
    net = mx.gluon.nn.HybridSequential()
    with net.name_scope():
        net.add(mx.gluon.nn.Dense(4), mx.gluon.nn.BatchNorm(), mx.gluon.nn.Activation("relu"))
    net.initialize()
    x = nd.ones((2, 3))
    ops, n_inline = _recorded_ops(net, x, inline_limit=3)
    assert ops == ["FullyConnected", "BatchNorm", "Activation"]
    ops, n_cached = _recorded_ops(net, x, inline_limit=2)
    assert ops == ["_CachedOp"]
    assert n_inline == n_cached + 2           # 7 leaves (data, 4 params, 2 stats)
    assert _recorded_ops(net, x, inline_limit=100, static_alloc=True)[0] == ["_CachedOp"]


def test_first_order_grad_through_op_without_rule_that_keeps_no_outputs():
    # broadcast_maximum has no higher-order rule and its backward keeps no outputs;
    # create_graph=True must still give the first derivative (MXNet 1.9.1: [2, 0, 6])
    x = mx.nd.array([1.0, -2.0, 3.0])
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.broadcast_maximum(x, mx.nd.array([0.5]))
        z = (y * y).sum()
    g = mx.autograd.grad(z, [x], create_graph=True)[0]
    xn = x.asnumpy()
    np.testing.assert_allclose(g.asnumpy(), np.where(xn > 0.5, 2 * xn, 0.0))
