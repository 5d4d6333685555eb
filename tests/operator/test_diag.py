"""diag (ops/diag.py) against NumPy's diag/diagonal and numeric gradients."""
import numpy as np
import pytest

import mxnet as mx
from mxnet.base import MXNetError
from opcheck import Case, cases_test
from common import check_infer, infer_shapes

nd = mx.nd
rs = np.random.RandomState(11)


def rand(*shape):
    return rs.uniform(-1, 1, shape)


UNARY = [
    Case("diag", lambda x: np.diag(x), [[(3,)]], name="diag_1d"),
    Case("diag", lambda x: np.diag(x, 1), [[(3,)]], kwargs={"k": 1}, ref_kwargs=False,
         name="diag_1d_k"),
    Case("diag", lambda x: np.diag(x, -2), [[(3,)]], kwargs={"k": -2}, ref_kwargs=False,
         name="diag_1d_kneg"),
    Case("diag", lambda x: np.diag(x), [[(3, 4)]], name="diag_2d"),
    Case("diag", lambda x: np.diag(x, 2), [[(3, 4)]], kwargs={"k": 2}, ref_kwargs=False,
         name="diag_2d_k"),
    Case("diag", lambda x: np.diag(x, -1), [[(3, 4)]], kwargs={"k": -1}, ref_kwargs=False,
         name="diag_2d_kneg"),
    Case("diag", lambda x: np.diagonal(x, -1, 0, 2), [[(3, 2, 4)]],
         kwargs={"k": -1, "axis1": 0, "axis2": 2}, ref_kwargs=False, name="diag_3d"),
    Case("diag", lambda x: np.diagonal(x, 1, 2, 1), [[(2, 3, 4)]],
         kwargs={"k": 1, "axis1": -1, "axis2": 1}, ref_kwargs=False, name="diag_3d_neg"),
]


test_diag = cases_test(UNARY)


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
