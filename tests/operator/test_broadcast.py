"""Broadcasting and replication (ops/broadcast.py: broadcast_to/axis/like, tile, repeat)
against NumPy references, numeric gradients and MXNet 1.9.1's golden cases."""
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
    "repeat", "tile", "broadcast_to", "broadcast_axis", "broadcast_like"))
def test_fixture(case):
    run_fixture_case(case)


UNARY = [
    Case("tile", lambda x: np.tile(x, (2, 3)), [[(2, 3)]], kwargs={"reps": (2, 3)},
         ref_kwargs=False, name="tile_same"),
    Case("tile", lambda x: np.tile(x, (2,)), [[(2, 3)]], kwargs={"reps": (2,)},
         ref_kwargs=False, name="tile_short"),
    Case("tile", lambda x: np.tile(x, (2, 1, 3)), [[(2, 3)]], kwargs={"reps": (2, 1, 3)},
         ref_kwargs=False, name="tile_long"),
    Case("repeat", lambda x: np.repeat(x, 2), [[(2, 3)]], kwargs={"repeats": 2},
         ref_kwargs=False, name="repeat_flat"),
    Case("repeat", lambda x: np.repeat(x, 3, axis=0), [[(2, 3)]],
         kwargs={"repeats": 3, "axis": 0}, ref_kwargs=False, name="repeat_axis0"),
    Case("repeat", lambda x: np.repeat(x, 2, axis=-1), [[(2, 3, 2)]],
         kwargs={"repeats": 2, "axis": -1}, ref_kwargs=False, name="repeat_neg"),
    Case("broadcast_to", lambda x: np.broadcast_to(x, (2, 3, 4)), [[(2, 1, 4)]],
         kwargs={"shape": (2, 3, 4)}, ref_kwargs=False, name="broadcast_to"),
    Case("broadcast_to", lambda x: np.broadcast_to(x, (3, 5)), [[(3, 1)]],
         kwargs={"shape": (0, 5)}, ref_kwargs=False, name="broadcast_to_zero"),
    Case("broadcast_axis", lambda x: np.broadcast_to(x, (2, 2, 3)), [[(1, 2, 1)]],
         kwargs={"axis": (0, 2), "size": (2, 3)}, ref_kwargs=False, name="broadcast_axis"),
    Case("broadcast_axes", lambda x: np.broadcast_to(x, (2, 4)), [[(2, 1)]],
         kwargs={"axis": 1, "size": 4}, ref_kwargs=False, name="broadcast_axes_int"),
]


test_unary = cases_test(UNARY)


@pytest.mark.parametrize("dtype", ["float64", "int32", "float16", "uint8"])
def test_dtype_kept(dtype):
    x = nd.array(np.arange(24).reshape(2, 3, 4), dtype=dtype)
    for out in (nd.tile(x, reps=(2,)), nd.repeat(x, 2), nd.broadcast_to(x[:1], shape=(3, 3, 4)),
                nd.broadcast_axis(x[:, :1], axis=1, size=2), nd.broadcast_like(x[:1], x)):
        assert out.dtype == np.dtype(dtype)


@pytest.mark.parametrize("ls,rs_,kw,out", [
    ((1, 3, 1), (2, 3, 4), {}, (2, 3, 4)),
    ((1, 3, 1), (5, 6), dict(lhs_axes=(0, 2), rhs_axes=(1, 0)), (6, 3, 5)),
    ((1, 3, 1), (5, 6), dict(lhs_axes=(-1,), rhs_axes=(-1,)), (1, 3, 6)),
])
def test_broadcast_like(ls, rs_, kw, out):
    check(Case("broadcast_like", lambda a, b: np.broadcast_to(a, out), kwargs=kw,
               ref_kwargs=False, inputs=[rand(*ls), np.zeros(rs_)], grad_inputs=[0]))


# --- shape inference (what the symbolic executor relies on) --------------------------------

A3 = np.arange(24, dtype=np.float64).reshape(2, 3, 4)


@pytest.mark.parametrize("name,arrays,kw", [
    ("tile", [A3], dict(reps=(2, 1, 1, 2))),
    ("repeat", [A3], dict(repeats=2)), ("repeat", [A3], dict(repeats=3, axis=1)),
    ("broadcast_to", [A3[:1]], dict(shape=(5, 0, 0))),
    ("broadcast_axis", [A3[:, :1]], dict(axis=(1,), size=(7,))),
    ("broadcast_like", [A3[:1], np.ones((3, 3, 4), np.float32)], {}),
])
def test_inference_matches_forward(name, arrays, kw):
    check_infer(name, arrays, **kw)


def test_infer_shape():
    assert infer_shapes("broadcast_to", [(1, 4)], shape=(3, 0))[1] == [(3, 4)]
    assert infer_shapes("broadcast_like", [(1, 4), (3, 4)])[1] == [(3, 4)]
    # partial shapes
    assert infer_shapes("tile", [(None, 3)], reps=(2, 2))[1] == [(None, 6)]
    assert infer_shapes("broadcast_to", [(None, 1)], shape=(0, 4))[1] == [(None, 4)]


def test_aliases():
    assert get_op("broadcast_axes") is get_op("broadcast_axis")


# --- errors ----------------------------------------------------------------------------------

X = nd.array(np.arange(24).reshape(2, 3, 4))


@pytest.mark.parametrize("call", [
    lambda: nd.tile(X, reps=(0, 1)),
    lambda: nd.repeat(X, repeats=-1),
    lambda: nd.repeat(X, repeats=2, axis=3),
    lambda: nd.broadcast_to(nd.ones((3,)), shape=(2, 3)),
    lambda: nd.broadcast_to(nd.ones((2, 3)), shape=(4, 3)),
    lambda: nd.broadcast_axis(nd.ones((1, 3)), axis=(1,), size=(3,)),
    lambda: nd.broadcast_axis(nd.ones((1, 3)), axis=(-1,), size=(4,)),
    lambda: nd.broadcast_axis(nd.ones((1, 3)), axis=(0, 1), size=(3,)),
    lambda: nd.broadcast_like(nd.ones((3, 1)), nd.ones((2, 3, 4))),
    lambda: nd.broadcast_like(nd.ones((2, 3, 1)), nd.ones((5, 3, 4))),
    lambda: nd.broadcast_like(nd.ones((1, 3)), nd.ones((5, 6)), lhs_axes=(0,)),
    lambda: nd.tile(X),
])
def test_errors(call):
    with pytest.raises(MXNetError):
        call()


def test_broadcast_like_refuses_empty_axes():
    lhs, rhs = nd.ones((1, 3)), nd.ones((4, 3))
    for kw in (dict(lhs_axes=(), rhs_axes=()), dict(lhs_axes=(0,), rhs_axes=())):
        with pytest.raises(MXNetError, match="empty"):
            nd.broadcast_like(lhs, rhs, **kw)
    assert nd.broadcast_like(lhs, rhs, lhs_axes=(0,), rhs_axes=(0,)).shape == (4, 3)
