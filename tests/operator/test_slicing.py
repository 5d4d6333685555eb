"""Slicing (ops/slicing.py: slice/crop, slice_axis, slice_like) against NumPy
references, numeric gradients and MXNet 1.9.1's golden cases."""
import numpy as np
import pytest

import mxnet as mx
from mxnet.base import MXNetError
from mxnet.operator.registry import get_op
from opcheck import Case, check, cases_test
from common import (check_infer, fixture_cases_for, infer_shapes,
                    run_fixture_case)

nd = mx.nd
rs = np.random.RandomState(11)


def rand(*shape):
    return rs.uniform(-1, 1, shape)


@pytest.mark.parametrize("case", fixture_cases_for("slice", "slice_axis"))
def test_fixture(case):
    run_fixture_case(case)


UNARY = [
    Case("slice", lambda x: x[1:, :2], [[(3, 4, 2)]],
         kwargs={"begin": (1, None), "end": (None, 2)}, ref_kwargs=False, name="slice"),
    Case("slice", lambda x: x[::2, 3:0:-2], [[(3, 4, 2)]],
         kwargs={"begin": (None, 3), "end": (None, 0), "step": (2, -2)}, ref_kwargs=False,
         name="slice_step"),
    Case("slice", lambda x: x[-2:, -3:-1, 0:1], [[(3, 4, 2)]],
         kwargs={"begin": (-2, -3, 0), "end": (None, -1, 1)}, ref_kwargs=False,
         name="slice_neg"),
    Case("slice", lambda x: x[::-1], [[(3, 4)]],
         kwargs={"begin": (None,), "end": (None,), "step": (-1,)}, ref_kwargs=False,
         name="slice_reverse"),
    Case("slice", lambda x: x[-10:10, 1:100], [[(3, 4)]],
         kwargs={"begin": (-10, 1), "end": (10, 100)}, ref_kwargs=False,
         name="slice_clamped"),
    Case("slice_axis", lambda x: x[:, 1:3], [[(2, 4, 3)]],
         kwargs={"axis": 1, "begin": 1, "end": 3}, ref_kwargs=False, name="slice_axis"),
    Case("slice_axis", lambda x: x[..., -2:], [[(2, 4, 3)]],
         kwargs={"axis": -1, "begin": -2, "end": None}, ref_kwargs=False,
         name="slice_axis_none"),
    Case("slice_axis", lambda x: x[:-1], [[(3, 2)]],
         kwargs={"axis": 0, "begin": 0, "end": -1}, ref_kwargs=False,
         name="slice_axis_negend"),
]



def _assigned(x, value, key):
    out = np.array(x, copy=True)
    out[key] = value
    return out


# _slice_assign (alias _crop_assign) and its scalar form: not differentiable in MXNet
ASSIGN = [
    Case("_slice_assign", lambda x, v: _assigned(x, v, (slice(1, 3), slice(0, 2))),
         [[(3, 4), (2, 2)]], kwargs={"begin": (1, 0), "end": (3, 2)}, ref_kwargs=False,
         grad=False, name="slice_assign"),
    Case("_crop_assign", lambda x, v: _assigned(x, v, (slice(None), slice(3, 0, -2))),
         [[(2, 4, 3), (2, 2, 3)]], kwargs={"begin": (None, 3), "end": (None, 0),
                                           "step": (1, -2)},
         ref_kwargs=False, grad=False, name="crop_assign_step"),
    Case("_slice_assign_scalar", lambda x: _assigned(x, 2.5, (slice(0, 1), slice(-2, None))),
         [[(3, 4)]], kwargs={"scalar": 2.5, "begin": (0, -2), "end": (1, None)},
         ref_kwargs=False, grad=False, name="slice_assign_scalar"),
]


test_unary = cases_test(UNARY)
test_assign = cases_test(ASSIGN)


def test_slice_assign_in_place_and_bad_rhs():
    x = nd.zeros((2, 3))
    nd._internal._crop_assign(x, nd.ones((2, 1)), begin=(0, 1), end=(2, 2), out=x)
    assert x.asnumpy().tolist() == [[0, 1, 0], [0, 1, 0]]
    with pytest.raises(MXNetError, match="does not fit"):
        nd._internal._slice_assign(x, nd.ones((2, 2)), begin=(0, 1), end=(2, 2))


@pytest.mark.parametrize("dtype", ["float64", "int32", "float16", "uint8"])
def test_dtype_kept(dtype):
    x = nd.array(np.arange(24).reshape(2, 3, 4), dtype=dtype)
    for out in (nd.slice(x, begin=(1,), end=(2,)), nd.slice_axis(x, axis=1, begin=0, end=2),
                nd.slice_like(x, x[:1])):
        assert out.dtype == np.dtype(dtype)


def test_slice_like():
    like = np.zeros((1, 2, 3))
    check(Case("slice_like", lambda x, l: x[:1, :2, :3], inputs=[rand(2, 3, 4), like],
               grad_inputs=[0]))
    check(Case("slice_like", lambda x, l: x[:1, :, :3], kwargs={"axes": (0, -1)},
               ref_kwargs=False, inputs=[rand(2, 3, 4), like], grad_inputs=[0]))
    check(Case("slice_like", lambda x, l: x[:, :2], kwargs={"axes": (1,)}, ref_kwargs=False,
               inputs=[rand(2, 3, 4), np.zeros((5, 2))], grad_inputs=[0]))


# --- shape inference (what the symbolic executor relies on) --------------------------------

A3 = np.arange(24, dtype=np.float64).reshape(2, 3, 4)


@pytest.mark.parametrize("name,arrays,kw", [
    ("slice", [A3], dict(begin=(None, 2), end=(1, 0), step=(1, -1))),
    ("slice", [A3], dict(begin=(1,), end=(1,))),
    ("slice_axis", [A3], dict(axis=2, begin=1, end=None)),
    ("slice_like", [A3, np.ones((1, 2, 3))], {}),
])
def test_inference_matches_forward(name, arrays, kw):
    check_infer(name, arrays, **kw)


def test_infer_shape():
    assert infer_shapes("slice", [(5, 4)], begin=(1, None), end=(None, -1),
                        step=(2, 1))[1] == [(2, 3)]
    assert infer_shapes("slice", [(5, 4)], begin=(1,), end=(1,))[1] == [(0, 4)]
    assert infer_shapes("slice_axis", [(5, 4)], axis=1, begin=-3, end=None)[1] == [(5, 3)]
    assert infer_shapes("slice_like", [(5, 4), (2, 3)])[1] == [(2, 3)]
    # partial shapes
    assert infer_shapes("slice_axis", [(None, 4)], axis=1, begin=1, end=3)[1] == [(None, 2)]
    assert infer_shapes("slice_axis", [(5, None)], axis=1, begin=1, end=3)[1] == [(5, None)]


def test_aliases():
    assert get_op("crop") is get_op("slice")


def test_param_strings_from_json():
    """Parameters arrive as strings from symbol JSON."""
    x = nd.array(np.arange(24).reshape(2, 3, 4))
    out = nd.slice(x, begin="(1, None)", end="(None, 2)", step="(1, -1)")
    assert np.array_equal(out.asnumpy(), np.arange(24).reshape(2, 3, 4)[1:, :2:-1])


# --- errors ----------------------------------------------------------------------------------

X = nd.array(np.arange(24).reshape(2, 3, 4))


@pytest.mark.parametrize("call", [
    lambda: nd.slice(X, begin=(0,), end=(2,), step=(0,)),
    lambda: nd.slice(X, begin=(0, 0, 0, 0), end=(1, 1, 1, 1)),
    lambda: nd.slice(X, begin=(0, 0), end=(1,)),
    lambda: nd.slice(X, begin=(0, 0), end=(2, 3), step=(2,)),
    lambda: nd.slice_axis(X, axis=1, begin=2, end=1),
    lambda: nd.slice_axis(X, axis=1, begin=0, end=5),
    lambda: nd.slice_axis(X, axis=1, begin=-5, end=2),
    lambda: nd.slice_axis(X, axis=3, begin=0, end=1),
    lambda: nd.slice_like(X, nd.ones((3, 2, 3))),
    lambda: nd.slice_like(X, nd.ones((1, 2))),
])
def test_errors(call):
    with pytest.raises(MXNetError):
        call()
