"""SoftmaxOutput, the regression outputs and MakeLoss (defined in ops/elemwise_unary.py)
against NumPy references of MXNet 1.9.1's loss gradients and its golden cases."""
import numpy as np
import pytest

import mxnet as mx
from mxnet.base import MXNetError
from mxnet.operator.registry import get_op
from mxnet.test_utils import assert_almost_equal
from common import fixture_cases_for, run_fixture_case

nd = mx.nd
rs = np.random.RandomState(9)


def ref_softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def run(op, data, label, head=None, **kw):
    """Forward + backward with a (random) head gradient; returns output, data grad,
    label grad."""
    x, lab = nd.array(data), nd.array(label)
    x.attach_grad()
    lab.attach_grad()
    with mx.autograd.record():
        y = getattr(nd, op)(x, lab, **kw)
    head = rs.rand(*y.shape) * 5 if head is None else head
    y.backward(nd.array(head))
    return y.asnumpy(), x.grad.asnumpy(), lab.grad.asnumpy()


@pytest.mark.parametrize("case", fixture_cases_for("SoftmaxOutput"))
def test_fixture(case):
    run_fixture_case(case)


def test_softmax_output_default_ignores_head():
    x = rs.randn(4, 5)
    label = np.array([0, 4, 2, 1])
    y, g, gl = run("SoftmaxOutput", x, label)
    p = ref_softmax(x, 1)
    assert_almost_equal(y, p, rtol=1e-5)
    assert_almost_equal(g, p - np.eye(5)[label], rtol=1e-5, atol=1e-6)
    assert_almost_equal(gl, np.zeros(4))
    # the alias
    assert_almost_equal(nd.Softmax(nd.array(x), nd.array(label)).asnumpy(), p, rtol=1e-5)


@pytest.mark.parametrize("norm", ["null", "batch", "valid"])
@pytest.mark.parametrize("use_ignore", [False, True])
def test_softmax_output_normalization(norm, use_ignore):
    x = rs.randn(5, 4)
    label = np.array([0, 3, 2, 3, 1])
    _, g, _ = run("SoftmaxOutput", x, label, normalization=norm, use_ignore=use_ignore,
                  ignore_label=3, grad_scale=1.5)
    want = ref_softmax(x, 1) - np.eye(4)[label]
    keep = label != 3
    if use_ignore:
        want *= keep[:, None]
    div = {"null": 1, "batch": 5, "valid": keep.sum()}[norm]
    assert_almost_equal(g, want * 1.5 / div, rtol=1e-5, atol=1e-6)


def test_softmax_output_valid_all_ignored_no_division_by_zero():
    x = rs.randn(3, 4)
    _, g, _ = run("SoftmaxOutput", x, -np.ones(3), normalization="valid")
    assert_almost_equal(g, ref_softmax(x, 1), rtol=1e-5)    # divided by max(0, 1)


def test_softmax_output_smooth_alpha():
    x = rs.randn(3, 5)
    label = np.array([1, 0, 4])
    _, g, _ = run("SoftmaxOutput", x, label, smooth_alpha=0.2)
    target = np.full((3, 5), 0.2 / 4)
    target[np.arange(3), label] = 0.8
    assert_almost_equal(g, ref_softmax(x, 1) - target, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("norm", ["null", "batch", "valid"])
@pytest.mark.parametrize("label_2d", [True, False])
def test_softmax_output_multi_output(norm, label_2d):
    x = rs.randn(2, 4, 3, 2)
    label = rs.randint(0, 4, (2, 3, 2))
    label[0, 0, 0] = 9                      # out of range: no one-hot entry
    lab = label.reshape(2, 6) if label_2d else label
    y, g, _ = run("SoftmaxOutput", x, lab, multi_output=True, normalization=norm,
                  grad_scale=3.0)
    p = ref_softmax(x, 1)
    assert_almost_equal(y, p, rtol=1e-5)
    onehot = (label[:, None] == np.arange(4).reshape(1, 4, 1, 1))
    # MXNet 1.9.1: 'null' and 'batch' also divide by the positions per sample (6)
    div = {"null": 6, "batch": 12, "valid": 12}[norm]
    assert_almost_equal(g, (p - onehot) * 3.0 / div, rtol=1e-5, atol=1e-6)


def test_softmax_output_preserve_shape():
    x = rs.randn(2, 3, 4)
    label = rs.randint(0, 4, (2, 3))
    y, g, _ = run("SoftmaxOutput", x, label, preserve_shape=True, normalization="batch")
    p = ref_softmax(x, -1)
    assert_almost_equal(y, p, rtol=1e-5)
    assert_almost_equal(g, (p - np.eye(4)[label]) / 6, rtol=1e-5, atol=1e-6)


def test_softmax_output_nd_without_multi_output():
    # softmax over everything but axis 0; label has the data shape minus its last axis
    # and MXNet reads its first `batch` values
    x = rs.randn(3, 2, 4)
    label = rs.randint(0, 8, (3, 2))
    y, g, _ = run("SoftmaxOutput", x, label)
    p = ref_softmax(x.reshape(3, 8), 1)
    assert_almost_equal(y, p.reshape(x.shape), rtol=1e-5)
    want = p - np.eye(8)[label.reshape(-1)[:3]]
    assert_almost_equal(g, want.reshape(x.shape), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kw", [{}, {"normalization": "batch"}, {"grad_scale": 2.0},
                                {"out_grad": True}])
def test_softmax_output_probability_label(kw):
    """A label of the data's shape holds probabilities: the gradient is
    (softmax - label) * grad_scale (times the output with out_grad), unnormalised."""
    rs = np.random.RandomState(7)
    x, lab = rs.normal(size=(3, 5)), rs.uniform(size=(3, 5))
    lab /= lab.sum(axis=1, keepdims=True)
    xa = mx.nd.array(x)
    xa.attach_grad()
    with mx.autograd.record():
        y = mx.nd.SoftmaxOutput(xa, mx.nd.array(lab), **kw)
    y.backward()
    e = np.exp(x - x.max(axis=1, keepdims=True))
    sm = e / e.sum(axis=1, keepdims=True)
    want = (sm - lab) * kw.get("grad_scale", 1.0) * (sm if kw.get("out_grad") else 1)
    assert_almost_equal(y.asnumpy(), sm, rtol=1e-5, atol=1e-6)
    assert_almost_equal(xa.grad.asnumpy(), want, rtol=1e-4, atol=1e-6)


def test_softmax_output_out_grad_quirk():
    # MXNet 1.9.1 with out_grad=True scales by the output, not by the head gradient
    x = rs.randn(3, 4)
    label = np.array([0, 1, 2])
    y, g, _ = run("SoftmaxOutput", x, label, out_grad=True)
    p = ref_softmax(x, 1)
    assert_almost_equal(g, (p - np.eye(4)[label]) * p, rtol=1e-5, atol=1e-6)


def test_softmax_output_shapes_and_errors():
    op = get_op("SoftmaxOutput")
    assert op.arguments(op.parse({})) == ["data", "label"]
    cases = [({}, (3, 4), (3,)), ({}, (3, 4, 5), (3, 4)),
             ({"multi_output": True}, (3, 4, 5, 6), (3, 30)),
             ({"preserve_shape": True}, (3, 4, 5), (3, 4))]
    for kw, d, lab in cases:
        ins, outs, aux = op.infer_shape(op.parse(kw), [d, None])
        assert ins == [d, lab] and outs == [d] and aux == []
    with pytest.raises(MXNetError):
        nd.SoftmaxOutput(nd.ones((3, 4)), nd.ones((4,)))
    with pytest.raises(MXNetError):
        nd.SoftmaxOutput(nd.ones((3, 4)), nd.ones((3,)), normalization="mean")
    with pytest.raises(MXNetError):
        op.infer_type(op.parse({}), [np.dtype("float32"), np.dtype("int32")])


REGRESSION = {
    "LinearRegressionOutput": (lambda x: x, lambda y, l: y - l),
    "LogisticRegressionOutput": (lambda x: 1 / (1 + np.exp(-x)), lambda y, l: y - l),
    "MAERegressionOutput": (lambda x: x, lambda y, l: np.where(y - l > 0, 1.0, -1.0)),
}


def test_mae_gradient_is_minus_one_where_output_equals_label():
    # MXNet 1.9.1 takes the sign of a zero difference as -1 (oracle: x [[0.5, -1], [2,
    # 0.1]], label [[1, 0], [1.5, 0.1]] gives gradient [[-0.5, -0.5], [0.5, -0.5]])
    x = nd.array([[0.5, -1.0], [2.0, 0.1]])
    x.attach_grad()
    with mx.autograd.record():
        y = nd.MAERegressionOutput(x, nd.array([[1.0, 0.0], [1.5, 0.1]]))
    y.backward()
    assert x.grad.asnumpy().tolist() == [[-0.5, -0.5], [0.5, -0.5]]


@pytest.mark.parametrize("op", sorted(REGRESSION))
@pytest.mark.parametrize("dshape,lshape", [((3, 4), (3, 4)), ((3, 1), (3,)),
                                           ((3, 2, 2), (3, 4)), ((5,), (5,))])
def test_regression_outputs(op, dshape, lshape):
    fwd, grad = REGRESSION[op]
    x = rs.randn(*dshape)
    label = rs.randn(*lshape)
    y, g, gl = run(op, x, label, grad_scale=2.0)
    assert_almost_equal(y, fwd(x), rtol=1e-5, atol=1e-6)
    per_sample = int(np.prod(lshape[1:]))
    want = grad(fwd(x), label.reshape(dshape)) * 2.0 / per_sample
    assert_almost_equal(g, want, rtol=1e-5, atol=1e-6)
    assert_almost_equal(gl, np.zeros(lshape))


def test_regression_shapes_and_errors():
    op = get_op("LinearRegressionOutput")
    p = op.parse({})
    assert op.infer_shape(p, [(3, 1), None])[0] == [(3, 1), (3,)]
    assert op.infer_shape(p, [(3, 4), None])[0] == [(3, 4), (3, 4)]
    with pytest.raises(MXNetError):
        nd.LinearRegressionOutput(nd.ones((3, 4)), nd.ones((12,)))
    with pytest.raises(MXNetError):
        nd.MAERegressionOutput(nd.ones((3, 4)), nd.ones((3, 4)), grad_scale="x")


@pytest.mark.parametrize("kw,div", [({}, 1), ({"grad_scale": 2.0}, 0.5),
                                    ({"normalization": "batch"}, 2),
                                    ({"normalization": "valid"}, 4),
                                    ({"normalization": "valid", "valid_thresh": 0.2}, 3),
                                    ({"normalization": "valid", "valid_thresh": 9}, 1)])
def test_make_loss(kw, div):
    x = np.array([[0.5, -1, 2], [0, 3, 0.1]])
    xx = nd.array(x)
    xx.attach_grad()
    with mx.autograd.record():
        y = nd.MakeLoss(xx, **kw)
    y.backward(nd.array(np.full((2, 3), 7.0)))        # head gradient ignored
    assert_almost_equal(y.asnumpy(), x)
    assert_almost_equal(xx.grad.asnumpy(), np.full((2, 3), 1.0 / div), rtol=1e-6)


@pytest.mark.parametrize("preserve_shape", [False, True])
@pytest.mark.parametrize("normalization", ["null", "batch", "valid"])
def test_softmax_output_soft_labels(preserve_shape, normalization):
    # a label of the data's shape holds probabilities: grad = (softmax - label) *
    # grad_scale, neither normalised nor masked (as MXNet 1.9.1)
    rs = np.random.RandomState(5)
    x = rs.uniform(-1, 1, (3, 4))
    lab = rs.uniform(0, 1, (3, 4))
    lab /= lab.sum(axis=1, keepdims=True)
    X, L = mx.sym.Variable("X"), mx.sym.Variable("L")
    y = mx.sym.SoftmaxOutput(X, L, preserve_shape=preserve_shape, grad_scale=2.0,
                             normalization=normalization, use_ignore=True,
                             ignore_label=0.0)
    grad = nd.zeros((3, 4))
    ex = y.bind(mx.cpu(), args=[nd.array(x), nd.array(lab)], args_grad={"X": grad})
    ex.forward(is_train=True)
    ex.backward()
    sm = np.exp(x) / np.exp(x).sum(axis=1, keepdims=True)
    assert_almost_equal(ex.outputs[0].asnumpy(), sm, rtol=1e-5, atol=1e-6)
    assert_almost_equal(grad.asnumpy(), 2.0 * (sm - lab), rtol=1e-5, atol=1e-6)
