"""Broadcasting and replication (ops/broadcast.py: broadcast_to/axis/like, tile, repeat)
against NumPy references, numeric gradients and MXNet 1.9.1's golden cases."""
import numpy as np
import pytest

import mxnet as mx
from mxnet.base import MXNetError
from mxnet.operator.registry import get_op
from common import (check_forward_backward, check_infer, fixture_cases_for, infer_shapes,
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
    ("tile_same", lambda x: nd.tile(x, reps=(2, 3)), (2, 3), lambda x: np.tile(x, (2, 3))),
    ("tile_short", lambda x: nd.tile(x, reps=(2,)), (2, 3), lambda x: np.tile(x, (2,))),
    ("tile_long", lambda x: nd.tile(x, reps=(2, 1, 3)), (2, 3),
     lambda x: np.tile(x, (2, 1, 3))),
    ("repeat_flat", lambda x: nd.repeat(x, repeats=2), (2, 3), lambda x: np.repeat(x, 2)),
    ("repeat_axis0", lambda x: nd.repeat(x, repeats=3, axis=0), (2, 3),
     lambda x: np.repeat(x, 3, axis=0)),
    ("repeat_neg", lambda x: nd.repeat(x, repeats=2, axis=-1), (2, 3, 2),
     lambda x: np.repeat(x, 2, axis=-1)),
    ("broadcast_to", lambda x: nd.broadcast_to(x, shape=(2, 3, 4)), (2, 1, 4),
     lambda x: np.broadcast_to(x, (2, 3, 4))),
    ("broadcast_to_zero", lambda x: nd.broadcast_to(x, shape=(0, 5)), (3, 1),
     lambda x: np.broadcast_to(x, (3, 5))),
    ("broadcast_axis", lambda x: nd.broadcast_axis(x, axis=(0, 2), size=(2, 3)), (1, 2, 1),
     lambda x: np.broadcast_to(x, (2, 2, 3))),
    ("broadcast_axes_int", lambda x: nd.broadcast_axes(x, axis=1, size=4), (2, 1),
     lambda x: np.broadcast_to(x, (2, 4))),
]


@pytest.mark.parametrize("name,call,shape,ref", UNARY, ids=[u[0] for u in UNARY])
def test_unary(name, call, shape, ref):
    check_forward_backward(call, [rand(*shape)], ref)


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
    check_forward_backward(lambda a, b: nd.broadcast_like(a, b, **kw),
                           [rand(*ls), np.zeros(rs_)],
                           lambda a, b: np.broadcast_to(a, out), grad_nodes=[0])


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
