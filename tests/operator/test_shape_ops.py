"""Reshaping and axis permutations (ops/shape_ops.py) against NumPy references, numeric
gradients and MXNet 1.9.1's golden cases; Reshape's golden cases too."""
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


@pytest.mark.parametrize("case", fixture_cases_for(
    "Flatten", "SwapAxis", "expand_dims", "squeeze", "transpose", "Reshape"))
def test_fixture(case):
    run_fixture_case(case)


UNARY = [
    Case("Flatten", lambda x: x.reshape(2, 12), [[(2, 3, 4)]], name="Flatten"),
    Case("flatten", lambda x: x.reshape(2, 12), [[(2, 3, 2, 2)]], name="flatten_4d"),
    Case("Flatten", lambda x: x.reshape(5, 1), [[(5,)]], name="flatten_1d"),
    Case("transpose", lambda x: x.T, [[(2, 3, 4)]], name="transpose"),
    Case("transpose", lambda x: np.transpose(x, (1, 2, 0)), [[(2, 3, 4)]],
         kwargs={"axes": (1, 2, 0)}, ref_kwargs=False, name="transpose_axes"),
    Case("expand_dims", lambda x: x[None], [[(2, 3)]], kwargs={"axis": 0}, ref_kwargs=False,
         name="expand_dims0"),
    Case("expand_dims", lambda x: x[..., None], [[(2, 3)]], kwargs={"axis": 2},
         ref_kwargs=False, name="expand_dims_end"),
    Case("expand_dims", lambda x: x[:, None], [[(2, 3)]], kwargs={"axis": -2},
         ref_kwargs=False, name="expand_dims_neg"),
    Case("squeeze", lambda x: x.reshape(3, 2), [[(1, 3, 1, 2)]], name="squeeze_all"),
    Case("squeeze", lambda x: x.reshape(3, 2), [[(1, 3, 1, 2)]], kwargs={"axis": (0, 2)},
         ref_kwargs=False, name="squeeze_axis"),
    Case("squeeze", lambda x: x[..., 0], [[(2, 3, 1)]], kwargs={"axis": -1},
         ref_kwargs=False, name="squeeze_neg"),
    Case("squeeze", lambda x: x.reshape(1), [[(1, 1)]], name="squeeze_to_1"),
    Case("SwapAxis", lambda x: np.swapaxes(x, 0, 2), [[(2, 3, 4)]],
         kwargs={"dim1": 0, "dim2": 2}, ref_kwargs=False, name="SwapAxis"),
    Case("swapaxes", lambda x: np.swapaxes(x, 2, 1), [[(2, 3, 4)]],
         kwargs={"dim1": -1, "dim2": 1}, ref_kwargs=False, name="swapaxes_neg"),
    Case("flip", lambda x: x[:, ::-1], [[(2, 3, 4)]], kwargs={"axis": 1}, ref_kwargs=False,
         name="flip"),
    Case("reverse", lambda x: x[::-1, :, ::-1], [[(2, 3, 4)]], kwargs={"axis": (0, 2)},
         ref_kwargs=False, name="reverse_multi"),
]


test_unary = cases_test(UNARY)


@pytest.mark.parametrize("dtype", ["float64", "int32", "float16", "uint8"])
def test_dtype_kept(dtype):
    x = nd.array(np.arange(24).reshape(2, 3, 4), dtype=dtype)
    for out in (nd.Flatten(x), nd.transpose(x), nd.flip(x, axis=0), nd.expand_dims(x, 0),
                nd.squeeze(x[:1]), nd.swapaxes(x, 0, 1), nd.reshape_like(x, x)):
        assert out.dtype == np.dtype(dtype)


@pytest.mark.parametrize("ls,rs_,kw,out", [
    ((2, 3, 4), (6, 4), {}, (6, 4)),
    ((30, 7), (15, 2, 4), dict(lhs_begin=0, lhs_end=1, rhs_begin=0, rhs_end=2), (15, 2, 7)),
    ((30, 12), (4, 2, 2, 3), dict(lhs_begin=-1, rhs_begin=1), (30, 2, 2, 3)),
])
def test_reshape_like(ls, rs_, kw, out):
    check(Case("reshape_like", lambda a, b: a.reshape(out), kwargs=kw, ref_kwargs=False,
               inputs=[rand(*ls), np.zeros(rs_)], grad_inputs=[0], grad=np.prod(ls) < 100))
    # the shape-only input gets a zero gradient
    a, b = nd.array(rand(*ls)), nd.array(np.ones(rs_))
    b.attach_grad()
    with mx.autograd.record():
        y = nd.reshape_like(a, b, **kw)
    y.backward()
    assert not b.grad.asnumpy().any()


# --- depth/space ---------------------------------------------------------------------------

def ref_depth_to_space(x, b):
    """Element-wise definition: out[n, c, h, w] = x[n, ((h%b)*b + w%b)*C' + c, h//b, w//b]."""
    n, c, h, w = x.shape
    c2 = c // (b * b)
    out = np.empty((n, c2, h * b, w * b), x.dtype)
    for hh in range(h * b):
        for ww in range(w * b):
            ch = ((hh % b) * b + ww % b) * c2
            out[:, :, hh, ww] = x[:, ch:ch + c2, hh // b, ww // b]
    return out


def ref_space_to_depth(x, b):
    n, c, h, w = x.shape
    out = np.empty((n, c * b * b, h // b, w // b), x.dtype)
    for bh in range(b):
        for bw in range(b):
            ch = (bh * b + bw) * c
            out[:, ch:ch + c] = x[:, :, bh::b, bw::b]
    return out


def test_depth_to_space():
    check(Case("depth_to_space", lambda x: ref_depth_to_space(x, 2),
               kwargs={"block_size": 2}, ref_kwargs=False, inputs=[rand(2, 8, 2, 3)]))
    # values MXNet 1.9.1 printed for arange input
    got = nd.depth_to_space(nd.array(np.arange(96).reshape(2, 8, 2, 3)), 2).asnumpy()
    assert got.ravel()[:12].tolist() == [0, 12, 1, 13, 2, 14, 24, 36, 25, 37, 26, 38]


def test_space_to_depth():
    check(Case("space_to_depth", lambda x: ref_space_to_depth(x, 2),
               kwargs={"block_size": 2}, ref_kwargs=False, inputs=[rand(2, 2, 4, 6)]))
    got = nd.space_to_depth(nd.array(np.arange(96).reshape(2, 2, 4, 6)), 2).asnumpy()
    assert got.ravel()[:12].tolist() == [0, 2, 4, 12, 14, 16, 24, 26, 28, 36, 38, 40]
    x = rand(1, 3, 4, 2)
    assert np.array_equal(nd.depth_to_space(nd.space_to_depth(nd.array(x), 2), 2).asnumpy(),
                          x.astype(np.float32))


# --- shape_array, size_array ---------------------------------------------------------------

def test_shape_size_array():
    x = nd.ones((2, 3, 4), dtype="float16")
    s, n = nd.shape_array(x), nd.size_array(x)
    assert s.dtype == np.int64 and s.asnumpy().tolist() == [2, 3, 4]
    assert n.dtype == np.int64 and n.shape == (1,) and n.asnumpy().tolist() == [24]
    x = nd.array(rand(2, 3))
    x.attach_grad()
    with mx.autograd.record():
        ys = [nd.shape_array(x), nd.size_array(x)]
    mx.autograd.backward(ys)
    assert not x.grad.asnumpy().any()


# --- shape inference (what the symbolic executor relies on) --------------------------------

A3 = np.arange(24, dtype=np.float64).reshape(2, 3, 4)


@pytest.mark.parametrize("name,arrays,kw", [
    ("Flatten", [A3], {}), ("transpose", [A3], dict(axes=(1, 0, 2))),
    ("expand_dims", [A3], dict(axis=-1)), ("squeeze", [A3[:1]], {}),
    ("squeeze", [np.ones((1, 1), np.int32)], {}), ("SwapAxis", [A3], dict(dim1=1)),
    ("reverse", [A3], dict(axis=(0, 1))),
    ("reshape_like", [A3, np.ones((4, 6))], {}),
    ("shape_array", [A3], {}), ("size_array", [A3], {}),
    ("depth_to_space", [np.ones((1, 8, 2, 3), np.float16)], dict(block_size=2)),
    ("space_to_depth", [np.ones((1, 2, 4, 6), np.int32)], dict(block_size=2)),
])
def test_inference_matches_forward(name, arrays, kw):
    check_infer(name, arrays, **kw)


def test_infer_shape_full():
    assert infer_shapes("Flatten", [(2, 3, 4)])[1] == [(2, 12)]
    assert infer_shapes("transpose", [(2, 3, 4)], axes=(2, 0, 1))[1] == [(4, 2, 3)]
    assert infer_shapes("reshape_like", [(6, 2), (3, 4)])[1] == [(3, 4)]
    assert infer_shapes("shape_array", [(3, 4, 5)])[1] == [(3,)]
    assert infer_shapes("size_array", [(3, 4, 5)])[1] == [(1,)]
    assert infer_shapes("depth_to_space", [(1, 8, 2, 3)], block_size=2)[1] == [(1, 2, 4, 6)]


def test_infer_shape_partial():
    assert infer_shapes("Flatten", [None])[1] == [None]
    assert infer_shapes("Flatten", [(2, None, 4)])[1] == [(2, None)]
    assert infer_shapes("transpose", [(None, 3)])[1] == [(3, None)]
    assert infer_shapes("expand_dims", [(None, 3)], axis=1)[1] == [(None, 1, 3)]
    assert infer_shapes("shape_array", [(None, 2)])[1] == [(2,)]


def test_aliases_and_types():
    sa = get_op("shape_array")
    assert sa.infer_type(sa.parse({}), [np.dtype("float16")])[1] == [np.dtype("int64")]
    assert get_op("flip") is get_op("reverse")
    assert get_op("flatten") is get_op("Flatten")
    assert get_op("swapaxes") is get_op("SwapAxis")


def test_param_strings_from_json():
    """Parameters arrive as strings from symbol JSON."""
    x = nd.array(np.arange(24).reshape(2, 3, 4))
    assert nd.transpose(x, axes="(2, 0, 1)").shape == (4, 2, 3)
    assert nd.squeeze(nd.ones((1, 2)), axis="None").shape == (2,)


# --- errors ----------------------------------------------------------------------------------

X = nd.array(np.arange(24).reshape(2, 3, 4))


@pytest.mark.parametrize("call", [
    lambda: nd.transpose(X, axes=(0, 1)),
    lambda: nd.transpose(X, axes=(0, -1, 1)),
    lambda: nd.transpose(X, axes=(0, 0, 1)),
    lambda: nd.expand_dims(X, axis=4),
    lambda: nd.expand_dims(X, axis=-5),
    lambda: nd.squeeze(X, axis=1),
    lambda: nd.squeeze(nd.ones((2, 1)), axis=(1, 1)),
    lambda: nd.SwapAxis(X, dim1=3, dim2=0),
    lambda: nd.flip(X, axis=3),
    lambda: nd.flip(X, axis=-1),
    lambda: nd.reshape_like(X, nd.ones((6, 5))),
    lambda: nd.reshape_like(nd.ones((2, 3)), nd.ones((1, 5)), lhs_begin=1, lhs_end=1),
    lambda: nd.depth_to_space(nd.ones((2, 6, 2, 3)), block_size=2),
    lambda: nd.space_to_depth(nd.ones((2, 2, 3, 4)), block_size=2),
    lambda: nd.depth_to_space(nd.ones((8, 2, 3)), block_size=2),
    lambda: nd.transpose(X, bad_param=1),
])
def test_errors(call):
    with pytest.raises(MXNetError):
        call()


@pytest.mark.parametrize("fn,shape", [("depth_to_space", (1, 4, 0, 3)),
                                      ("depth_to_space", (0, 4, 1, 1)),
                                      ("space_to_depth", (1, 0, 2, 2))])
def test_depth_space_refuse_empty_axes(fn, shape):
    with pytest.raises(MXNetError, match="cannot be 0"):
        getattr(nd, fn)(nd.array(np.zeros(shape)), 2)
