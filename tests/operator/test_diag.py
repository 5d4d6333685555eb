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


# --- NumPy's _np_diag / _np_diagonal: like diag, but an offset past the matrix gives an
# empty diagonal instead of an error
NP_CASES = [
    Case("_np_diag", lambda x: np.diag(x, 2), [[(3,)]], kwargs={"k": 2}, ref_kwargs=False,
         name="np_diag_1d_k"),
    Case("_np_diag", lambda x: np.diag(x, -1), [[(3, 4)]], kwargs={"k": -1},
         ref_kwargs=False, name="np_diag_2d_kneg"),
    Case("_np_diagonal", lambda x: np.diagonal(x, 1, 2, 0), [[(3, 2, 4)]],
         kwargs={"offset": 1, "axis1": 2, "axis2": 0}, ref_kwargs=False,
         name="np_diagonal_3d"),
]
test_np_diag_ops = cases_test(NP_CASES)


@pytest.mark.parametrize("shape,k", [((2, 3), 5), ((2, 3), -4), ((1, 5), -1), ((4, 3), 3)])
def test_np_diagonal_past_the_matrix_is_empty_and_differentiable(shape, k):
    from mxnet import np as mnp
    x = mnp.array(rand(*shape))
    x.attach_grad()
    with mx.autograd.record():
        d = mnp.diag(x, k)
        t = mnp.trace(x, offset=k)
    assert d.shape == np.diag(x.asnumpy(), k).shape
    assert float(t) == pytest.approx(np.trace(x.asnumpy(), offset=k))
    d.backward()
    assert x.grad.shape == shape and not x.grad.asnumpy().any()


def test_np_diagonal_rejects_1d_and_equal_axes():
    from mxnet import np as mnp
    with pytest.raises(MXNetError):
        mnp.trace(mnp.ones((2,)))
    with pytest.raises(MXNetError):
        mnp.diagonal(mnp.ones((3, 2, 2)), 0, 1, 1)
