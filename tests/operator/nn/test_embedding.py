"""Embedding against a NumPy lookup, a one-hot reference for the weight gradient,
numeric gradients and MXNet 1.9.1's golden case."""
import numpy as np
import pytest

import mxnet as mx
from mxnet.base import MXNetError
from mxnet.operator.registry import get_op
from mxnet.test_utils import assert_almost_equal, check_numeric_gradient
from common import fixture_cases_for, run_fixture_case

nd = mx.nd
rs = np.random.RandomState(19)


@pytest.mark.parametrize("case", fixture_cases_for("Embedding"))
def test_fixture(case):
    run_fixture_case(case)


def test_forward_clips_and_truncates():
    w = rs.randn(3, 4)
    idx = np.array([[-1, 0, 2.7, 3, 100], [1.2, 1, 0.9, -0.5, 2]])
    y = nd.Embedding(nd.array(idx), nd.array(w), input_dim=3, output_dim=4)
    assert y.shape == (2, 5, 4) and y.dtype == np.float32
    want = w[np.clip(np.trunc(idx).astype(int), 0, 2)]
    assert_almost_equal(y.asnumpy(), want.astype(np.float32))


@pytest.mark.parametrize("idx_dtype", ["float32", "int32", "int64"])
def test_weight_gradient_scatter_adds(idx_dtype):
    w = rs.randn(6, 3)
    idx = np.array([[0, 5, 5, 2], [2, 2, 1, 5]])
    head = rs.randn(2, 4, 3)
    data, weight = nd.array(idx, dtype=idx_dtype), nd.array(w)
    weight.attach_grad()
    with mx.autograd.record():
        y = nd.Embedding(data, weight, input_dim=6, output_dim=3)
    y.backward(nd.array(head))
    onehot = np.eye(6)[idx.reshape(-1)]                    # (8, 6)
    want = onehot.T @ head.reshape(-1, 3)
    assert_almost_equal(weight.grad.asnumpy(), want, rtol=1e-5, atol=1e-6)


def test_numeric_gradient():
    idx = nd.array(rs.randint(0, 5, (3, 2)))
    check_numeric_gradient(lambda w: nd.Embedding(idx, w, input_dim=5, output_dim=4),
                           [rs.randn(5, 4)])


def test_dtypes():
    w64 = nd.array(rs.randn(4, 2), dtype="float64")
    assert nd.Embedding(nd.array([0, 3]), w64, input_dim=4, output_dim=2).dtype == np.float64
    op = get_op("Embedding")
    p = op.parse({"input_dim": 4, "output_dim": 2, "dtype": "float16"})
    assert op.infer_type(p, [np.dtype("int32"), None]) == \
        ([np.dtype("int32"), np.dtype("float16")], [np.dtype("float16")], [])
    p = op.parse({"input_dim": 4, "output_dim": 2, "sparse_grad": True})
    assert op.infer_type(p, [None, None])[1] == [np.dtype("float32")]


def test_shape_inference():
    op = get_op("Embedding")
    p = op.parse({"input_dim": 10, "output_dim": 4})
    assert op.arguments(p) == ["data", "weight"]
    assert op.infer_shape(p, [(2, 3), None]) == ([(2, 3), (10, 4)], [(2, 3, 4)], [])


def test_errors():
    with pytest.raises(MXNetError):
        nd.Embedding(nd.array([0, 1]), nd.ones((3, 4)), input_dim=3, output_dim=5)
    with pytest.raises(MXNetError):
        nd.Embedding(nd.array([0, 1]), nd.ones((3, 4)), output_dim=4)    # no input_dim
    with pytest.raises(MXNetError):
        nd.Embedding(nd.array([0, 1]), nd.ones((3, 4)), input_dim=3, output_dim=4,
                     dtype="complex64")


@pytest.mark.parametrize("dtype", [np.float64, np.dtype("float16"), "float32", "int32"])
def test_dtype_takes_numpy_types_and_names(dtype):
    w = np.arange(12).reshape(4, 3)
    out = mx.nd.Embedding(mx.nd.array([3, 0]), mx.nd.array(w, dtype=dtype), input_dim=4,
                          output_dim=3, dtype=dtype)
    assert out.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(out.asnumpy(), w[[3, 0]].astype(dtype))
    layer = mx.gluon.nn.Embedding(4, 3, dtype=dtype)
    if np.dtype(dtype).kind == "i":
        # the default Uniform initializer cannot fill an int32 weight (MXNet 1.9.1 fails
        # the same way); a constant one can
        with pytest.raises(mx.MXNetError):
            layer.initialize()
            layer(mx.nd.array([1, 2]))
        layer = mx.gluon.nn.Embedding(4, 3, dtype=dtype,
                                      weight_initializer=mx.init.Constant(2))
    layer.initialize()
    assert layer(mx.nd.array([1, 2])).dtype == np.dtype(dtype)
