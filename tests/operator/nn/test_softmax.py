"""softmax, log_softmax, softmin, SoftmaxActivation and softmax_cross_entropy against
NumPy references, numeric gradients and MXNet 1.9.1's golden cases."""
import numpy as np
import pytest

import mxnet as mx
from mxnet.base import MXNetError
from mxnet.operator.registry import get_op
from mxnet.test_utils import assert_almost_equal, check_numeric_gradient
from opcheck import Case, check
from common import fixture_cases_for, run_fixture_case

nd = mx.nd
rs = np.random.RandomState(5)


def ref_softmax(x, axis=-1, t=1.0):
    z = x / t
    e = np.exp(z - z.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def ref_log_softmax(x, axis=-1, t=1.0):
    z = x / t
    z = z - z.max(axis=axis, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=axis, keepdims=True))


@pytest.mark.parametrize("case", fixture_cases_for("softmax", "log_softmax"))
def test_fixture(case):
    run_fixture_case(case)


@pytest.mark.parametrize("axis", [-1, 0, 1, 2])
@pytest.mark.parametrize("temperature", [None, 0.5, 3.0])
def test_softmax(axis, temperature):
    x = rs.randn(2, 3, 4)
    t = 1.0 if temperature is None else temperature
    check(Case("softmax", lambda a: ref_softmax(a, axis, t),
               kwargs={"axis": axis, "temperature": temperature}, ref_kwargs=False,
               inputs=[x]))


@pytest.mark.parametrize("axis", [-1, 1])
@pytest.mark.parametrize("temperature", [None, 2.0])
def test_log_softmax(axis, temperature):
    x = rs.randn(3, 4, 2)
    t = 1.0 if temperature is None else temperature
    check(Case("log_softmax", lambda a: ref_log_softmax(a, axis, t),
               kwargs={"axis": axis, "temperature": temperature}, ref_kwargs=False,
               inputs=[x]))


@pytest.mark.parametrize("axis", [-1, 0])
def test_softmin(axis):
    x = rs.randn(3, 5)
    check(Case("softmin", lambda a: ref_softmax(-a, axis, 2.0),
               kwargs={"axis": axis, "temperature": 2.0}, ref_kwargs=False, inputs=[x]))


def test_softmax_positional_axis():
    x = rs.randn(3, 4)
    assert_almost_equal(nd.softmax(nd.array(x), 0).asnumpy(), ref_softmax(x, 0), rtol=1e-5)


def test_softmax_large_inputs_stable():
    x = np.array([[1000.0, 1001.0, 1002.0], [-1000.0, -1000.0, -1000.0]])
    y = nd.softmax(nd.array(x)).asnumpy()
    assert np.all(np.isfinite(y))
    assert_almost_equal(y, ref_softmax(x), rtol=1e-5)
    ly = nd.log_softmax(nd.array(x)).asnumpy()
    assert_almost_equal(ly, ref_log_softmax(x), rtol=1e-5)


@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_softmax_use_length(axis):
    x = rs.randn(3, 4, 5)
    shape = list(x.shape)
    n = shape.pop(axis % 3)
    length = rs.randint(1, n + 1, shape)

    def ref(a):
        pos = np.arange(n).reshape([-1 if i == axis % 3 else 1 for i in range(3)])
        mask = pos < np.expand_dims(length, axis)
        e = np.where(mask, np.exp(a - np.where(mask, a, -np.inf).max(axis, keepdims=True)), 0)
        return e / e.sum(axis, keepdims=True)

    check(Case("softmax", lambda a, _: ref(a), kwargs={"axis": axis, "use_length": True},
               ref_kwargs=False, inputs=[x, length], input_dtypes={1: "int32"},
               grad_inputs=[0]))


def test_softmax_length_names_and_shapes():
    op = get_op("softmax")
    p = op.parse({"use_length": True, "axis": 1})
    assert op.arguments(p) == ["data", "length"]
    assert op.arguments(op.parse({})) == ["data"]
    ins, outs, _ = op.infer_shape(p, [(3, 4, 5), None])
    assert ins == [(3, 4, 5), (3, 5)] and outs == [(3, 4, 5)]
    with pytest.raises(MXNetError):
        op.infer_shape(p, [(3, 4, 5), (3, 4)])


def test_softmax_dtype_param():
    x = rs.randn(3, 4)
    y = nd.softmax(nd.array(x, dtype="float16"), dtype="float32")
    assert y.dtype == np.float32
    assert_almost_equal(y.asnumpy(), ref_softmax(x), rtol=1e-2, atol=1e-3)
    y64 = nd.softmax(nd.array(x), dtype="float64")
    assert y64.dtype == np.float64
    assert nd.log_softmax(nd.array(x, dtype="float64")).dtype == np.float64
    op = get_op("softmax")
    _, outs, _ = op.infer_type(op.parse({"dtype": "float64"}), [np.dtype("float32")])
    assert outs == [np.dtype("float64")]


def test_softmax_errors():
    with pytest.raises(MXNetError):
        nd.softmax(nd.array([1, 2], dtype="int32"))
        mx.nd.waitall()   # computing errors surface at the sync point
    with pytest.raises(MXNetError):
        nd.softmax(nd.ones((2, 3)), axis=2)
        mx.nd.waitall()   # computing errors surface at the sync point
    with pytest.raises(MXNetError):
        nd.log_softmax(nd.ones((2, 3)), nd.ones((2,)), use_length=True)
        mx.nd.waitall()   # computing errors surface at the sync point
    with pytest.raises(MXNetError):
        nd.softmax(nd.ones((2, 3)), dtype="int32")
        mx.nd.waitall()   # computing errors surface at the sync point
    with pytest.raises(MXNetError):
        nd.softmax(nd.ones((2, 3)), nd.ones((3,), dtype="int32"), use_length=True)
        mx.nd.waitall()   # computing errors surface at the sync point


@pytest.mark.parametrize("dt", ["float32", "float64", "uint8", "int8"])
def test_softmax_length_must_be_int32_or_int64(dt):
    # MXNet 1.9.1: "This operation only support integer types" for any length dtype but
    # int32/int64, float32 (nd.array's default) included (checked against the oracle)
    x = nd.ones((2, 3))
    with pytest.raises(MXNetError):
        nd.softmax(x, nd.array([1, 2], dtype=dt), use_length=True).wait_to_read()
    for ok in ("int32", "int64"):
        y = nd.softmax(x, nd.array([1, 2], dtype=ok), use_length=True)
        assert_almost_equal(y.asnumpy(), [[1, 0, 0], [0.5, 0.5, 0]])


def test_softmax_activation():
    check(Case("SoftmaxActivation", lambda a: ref_softmax(a, -1), inputs=[rs.randn(3, 4)]))
    x = rs.randn(2, 3, 4)
    check(Case("SoftmaxActivation", lambda a: ref_softmax(a, 1), kwargs={"mode": "channel"},
               ref_kwargs=False, inputs=[x]))


def test_softmax_activation_instance_nd_gradient_quirk():
    # MXNet 1.9.1: 'instance' forward normalises the last axis, backward works on axis 1
    x, head = rs.randn(2, 3, 4), rs.randn(2, 3, 4)
    a = nd.array(x)
    a.attach_grad()
    with mx.autograd.record():
        y = nd.SoftmaxActivation(a)
    y.backward(nd.array(head))
    p = ref_softmax(x, -1)
    assert_almost_equal(y.asnumpy(), p, rtol=1e-5)
    want = p * (head - (head * p).sum(axis=1, keepdims=True))
    assert_almost_equal(a.grad.asnumpy(), want, rtol=1e-4, atol=1e-6)
    with pytest.raises(MXNetError):
        nd.SoftmaxActivation(nd.ones((2, 3)), mode="channel")


def test_softmax_cross_entropy():
    x = rs.randn(4, 5)
    label = np.array([0, 3, 4, 1], dtype=np.float32)
    out = nd.softmax_cross_entropy(nd.array(x), nd.array(label))
    assert out.shape == (1,)
    want = -ref_log_softmax(x)[np.arange(4), label.astype(int)].sum()
    assert_almost_equal(out.asnumpy(), np.array([want]), rtol=1e-5)

    lab = nd.array(label, dtype=np.float64)    # the (float64) data's dtype
    check_numeric_gradient(lambda a: nd.softmax_cross_entropy(a, lab), [x])


def test_softmax_cross_entropy_errors():
    with pytest.raises(MXNetError):
        nd.softmax_cross_entropy(nd.ones((2, 3, 4)), nd.ones((2,)))
    # MXNet 1.9.1's type inference wants the label in the data's dtype
    for ldt in ("int32", "float64"):
        with pytest.raises(MXNetError):
            nd.softmax_cross_entropy(nd.ones((2, 3)), nd.ones((2,), dtype=ldt)).wait_to_read()
    with pytest.raises(MXNetError):
        nd.softmax_cross_entropy(nd.ones((2, 3)), nd.ones((3,)))
    op = get_op("softmax_cross_entropy")
    ins, outs, _ = op.infer_shape(op.parse({}), [(3, 4), None])
    assert ins == [(3, 4), (3,)] and outs == [(1,)]
    x, lab = nd.ones((2, 3)), nd.ones((2,))
    x.attach_grad()
    lab.attach_grad()
    with mx.autograd.record():
        y = nd.softmax_cross_entropy(x, lab)
    with pytest.raises(MXNetError):
        y.backward()
