"""diag (ops/diag.py) against NumPy's diag/diagonal and numeric gradients."""
import numpy as np
import pytest

import mxnet as mx
from mxnet.base import MXNetError
from common import check_forward_backward, check_infer, infer_shapes

nd = mx.nd
rs = np.random.RandomState(11)


def rand(*shape):
    return rs.uniform(-1, 1, shape)


UNARY = [
    ("diag_1d", lambda x: nd.diag(x), (3,), lambda x: np.diag(x)),
    ("diag_1d_k", lambda x: nd.diag(x, k=1), (3,), lambda x: np.diag(x, 1)),
    ("diag_1d_kneg", lambda x: nd.diag(x, k=-2), (3,), lambda x: np.diag(x, -2)),
    ("diag_2d", lambda x: nd.diag(x), (3, 4), lambda x: np.diag(x)),
    ("diag_2d_k", lambda x: nd.diag(x, k=2), (3, 4), lambda x: np.diag(x, 2)),
    ("diag_2d_kneg", lambda x: nd.diag(x, k=-1), (3, 4), lambda x: np.diag(x, -1)),
    ("diag_3d", lambda x: nd.diag(x, k=-1, axis1=0, axis2=2), (3, 2, 4),
     lambda x: np.diagonal(x, -1, 0, 2)),
    ("diag_3d_neg", lambda x: nd.diag(x, k=1, axis1=-1, axis2=1), (2, 3, 4),
     lambda x: np.diagonal(x, 1, 2, 1)),
]


@pytest.mark.parametrize("name,call,shape,ref", UNARY, ids=[u[0] for u in UNARY])
def test_diag(name, call, shape, ref):
    check_forward_backward(call, [rand(*shape)], ref)


@pytest.mark.parametrize("dtype", ["float64", "int32", "float16", "uint8"])
def test_dtype_kept(dtype):
    x = nd.array(np.arange(24).reshape(2, 3, 4), dtype=dtype)
    assert nd.diag(x).dtype == nd.diag(x[0, 0]).dtype == np.dtype(dtype)


A3 = np.arange(24, dtype=np.float64).reshape(2, 3, 4)


@pytest.mark.parametrize("arrays,kw", [
    ([A3[0, 0]], dict(k=2)), ([A3], dict(k=1, axis1=2, axis2=0)),
])
def test_inference_matches_forward(arrays, kw):
    check_infer("diag", arrays, **kw)


def test_infer_shape():
    assert infer_shapes("diag", [(3,)], k=-1)[1] == [(4, 4)]
    assert infer_shapes("diag", [(3, 4, 5)], axis1=1, axis2=2)[1] == [(3, 4)]


@pytest.mark.parametrize("call", [
    lambda: nd.diag(nd.ones((3, 4)), k=5),
    lambda: nd.diag(nd.ones((2, 3, 4)), axis1=1, axis2=1),
])
def test_errors(call):
    with pytest.raises(MXNetError):
        call()
