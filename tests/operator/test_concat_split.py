"""Joining and splitting (ops/concat_split.py: Concat, stack, SliceChannel, _split_v2 and
the split_v2 front ends) against NumPy references, numeric gradients and MXNet 1.9.1's
golden cases."""
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


@pytest.mark.parametrize("case", fixture_cases_for("Concat", "SliceChannel", "split", "stack"))
def test_fixture(case):
    run_fixture_case(case)


def ref_split(x, n, axis, squeeze=False):
    parts = np.split(x, n, axis=axis)
    return [np.squeeze(q, axis=axis) if squeeze else q for q in parts]


UNARY = [
    Case("split", lambda x: ref_split(x, 2, 2), [[(2, 3, 4)]],
         kwargs={"num_outputs": 2, "axis": 2}, ref_kwargs=False, name="split"),
    Case("SliceChannel", lambda x: ref_split(x, 3, 1), [[(2, 3, 4)]],
         kwargs={"num_outputs": 3}, ref_kwargs=False, name="split_default_axis"),
    Case("split", lambda x: ref_split(x, 2, 0, True), [[(2, 3, 4)]],
         kwargs={"num_outputs": 2, "axis": 0, "squeeze_axis": True}, ref_kwargs=False,
         name="split_squeeze"),
    Case("split", lambda x: ref_split(x, 2, 2), [[(2, 3, 4)]],
         kwargs={"num_outputs": 2, "axis": -1}, ref_kwargs=False, name="split_neg"),
    Case("_split_v2", lambda x: np.split(x, [1, 3], axis=2), [[(2, 3, 4)]],
         kwargs={"indices": (0, 1, 3), "axis": 2}, ref_kwargs=False, name="split_v2_indices"),
    Case("_split_v2", lambda x: np.split(x, 3, axis=1), [[(2, 3, 4)]],
         kwargs={"indices": (), "sections": 3, "axis": 1}, ref_kwargs=False,
         name="split_v2_sections"),
    # the front end's argument translation (indices_or_sections -> indices / sections)
    Case("split_v2", lambda x: np.split(x, [1, 3], axis=2), [[(2, 3, 4)]],
         kwargs={"indices_or_sections": (1, 3), "axis": 2}, ref_kwargs=False,
         name="nd_split_v2_indices"),
    Case("split_v2", lambda x: ref_split(x, 2, 0, True), [[(2, 3, 4)]],
         kwargs={"indices_or_sections": 2, "axis": 0, "squeeze_axis": True},
         ref_kwargs=False, name="nd_split_v2_sections"),
]


test_unary = cases_test(UNARY)


@pytest.mark.parametrize("dtype", ["float64", "int32", "float16", "uint8"])
def test_dtype_kept(dtype):
    x = nd.array(np.arange(24).reshape(2, 3, 4), dtype=dtype)
    for out in (nd.concat(x, x, dim=0), nd.stack(x, x), nd.split(x, 3)[0],
                nd.split_v2(x, (1,), axis=2)[1]):
        assert out.dtype == np.dtype(dtype)


@pytest.mark.parametrize("shapes,dim", [
    ([(2, 1, 3), (2, 2, 3), (2, 3, 3)], 1),
    ([(1, 3), (2, 3)], 0),
    ([(2, 3), (2, 1)], -1),
    ([(4,), (2,), (1,)], 0),
    ([(2, 3)], 1),
])
def test_concat(shapes, dim):
    check(Case("Concat", lambda *a: np.concatenate(a, axis=dim), kwargs={"dim": dim},
               ref_kwargs=False, inputs=[rand(*s) for s in shapes]))


def test_rnn_param_concat():
    shapes = [(4,), (2,), (3,)]
    check(Case("_internal._rnn_param_concat", lambda *a: np.concatenate(a),
               kwargs={"dim": 0, "num_args": 3}, ref_kwargs=False,
               inputs=[rand(*s) for s in shapes]))
    # inputs of unknown length share what the known total leaves, equally
    a, b, c = (mx.sym.var(n, shape=s) for n, s in (("a", (0,)), ("b", (0,)), ("c", (5,))))
    cat = mx.sym._internal._rnn_param_concat(a, b, c, dim=0, num_args=3)
    assert cat.infer_shape_partial()[1] == [(0,)]
    args, _, _ = (cat + mx.sym.var("v", shape=(25,))).infer_shape()
    assert args[:3] == [(10,), (10,), (5,)]
    with pytest.raises(MXNetError, match="equally"):
        (cat + mx.sym.var("v", shape=(26,))).infer_shape()


@pytest.mark.parametrize("n,axis", [(2, 0), (3, 1), (2, 2), (2, -1), (1, 0)])
def test_stack(n, axis):
    check(Case("stack", lambda *a: np.stack(a, axis=axis), kwargs={"axis": axis},
               ref_kwargs=False, inputs=[rand(2, 3) for _ in range(n)]))


def test_split_one_output_returns_array():
    x = nd.array(rand(2, 3))
    out = nd.split(x, num_outputs=1, axis=1)
    assert isinstance(out, mx.nd.NDArray) and out.shape == (2, 3)


# --- the split_v2 front ends (MXNet 1.9.1's argument translation) -------------------------

def test_sym_split_v2_matches_nd():
    x = rand(6, 2)
    for args, kw in [(((2, 3),), dict(axis=0)), ((2,), dict(axis=1, squeeze_axis=True))]:
        s = mx.sym.split_v2(mx.sym.var("x"), *args, **kw)
        outs = s.bind(mx.cpu(), {"x": nd.array(x)}).forward()
        want = nd.split_v2(nd.array(x), *args, **kw)
        assert len(outs) == len(want)
        for o, w in zip(outs, want):
            assert np.array_equal(o.asnumpy(), w.asnumpy())
    assert mx.sym.var("x").split_v2(3, axis=1).infer_shape(x=(6, 3))[1] == [(6, 1)] * 3


def test_split_v2_attrs_as_mxnet_stores_them():
    # MXNet 1.9.1's symbol JSON: the starting offsets as a list, 0 first
    assert mx.sym.split_v2(mx.sym.var("x"), (2, 3)).list_attr() == {
        "indices": "[0, 2, 3]", "sections": "0", "axis": "0", "squeeze_axis": "False"}
    assert mx.sym.split_v2(mx.sym.var("x"), 3).list_attr() == {
        "indices": "[]", "sections": "3", "axis": "0", "squeeze_axis": "False"}


@pytest.mark.parametrize("bad", [[2, 3], np.int64(2), 2.0])
def test_split_v2_wants_int_or_tuple(bad):
    for front in (nd.split_v2, mx.sym.split_v2):
        arg = nd.ones((6, 2)) if front is nd.split_v2 else mx.sym.var("x")
        with pytest.raises(ValueError):
            front(arg, bad)


# --- shape inference (what the symbolic executor relies on) --------------------------------

A3 = np.arange(24, dtype=np.float64).reshape(2, 3, 4)


@pytest.mark.parametrize("name,arrays,kw", [
    ("Concat", [A3, A3[:, :1]], dict(dim=1)), ("stack", [A3, A3], dict(axis=-1)),
    ("SliceChannel", [A3], dict(num_outputs=3, squeeze_axis=True)),
    ("SliceChannel", [A3[:, 0, 0]], dict(num_outputs=2, axis=0, squeeze_axis=True)),
    ("_split_v2", [A3], dict(indices=(0, 3), axis=2)),
])
def test_inference_matches_forward(name, arrays, kw):
    check_infer(name, arrays, **kw)


def test_infer_shape_full():
    assert infer_shapes("Concat", [(2, 1), (2, 3)], num_args=2, dim=1)[1] == [(2, 4)]
    assert infer_shapes("stack", [(2, 3), (2, 3)], num_args=2, axis=2)[1] == [(2, 3, 2)]
    assert infer_shapes("SliceChannel", [(2, 6)], num_outputs=3)[1] == [(2, 2)] * 3
    assert infer_shapes("split", [(3, 2)], num_outputs=3, axis=0,
                        squeeze_axis=True)[1] == [(2,)] * 3
    assert infer_shapes("split", [(2,)], num_outputs=2, axis=0,
                        squeeze_axis=True)[1] == [(1,)] * 2
    assert infer_shapes("_split_v2", [(2, 5)], indices=(0, 2))[1] == [(2, 2), (2, 3)]


def test_infer_shape_partial():
    ins, outs = infer_shapes("Concat", [(2, 3), None, (None, 4)], num_args=3, dim=1)
    assert ins == [(2, 3), (2, None), (2, 4)] and outs == [(2, None)]
    ins, outs = infer_shapes("stack", [None, (2, 3)], num_args=2, axis=0)
    assert ins == [(2, 3), (2, 3)] and outs == [(2, 2, 3)]
    assert infer_shapes("SliceChannel", [(None, 6)], num_outputs=2)[1] == [(None, 3)] * 2
    assert infer_shapes("SliceChannel", [(2, None)], num_outputs=2)[1] == [(2, None)] * 2


def test_outputs_and_types():
    op = get_op("SliceChannel")
    p = op.parse({"num_outputs": 3})
    assert op.outputs(p) == ["output0", "output1", "output2"]
    assert op.outputs(op.parse({"num_outputs": 1})) == ["output0"]
    assert op.variadic is None and get_op("Concat").variadic == "num_args"
    assert get_op("stack").variadic == "num_args"
    c = get_op("Concat")
    with pytest.raises(MXNetError):
        c.infer_type(c.parse({"num_args": 2}), [np.dtype("float32"), np.dtype("float64")])


# --- errors ----------------------------------------------------------------------------------

X = nd.array(np.arange(24).reshape(2, 3, 4))


@pytest.mark.parametrize("call", [
    lambda: nd.Concat(X, nd.ones((2, 4, 4)), dim=2),
    lambda: nd.Concat(X, X, dim=3),
    lambda: nd.Concat(X, nd.ones((2, 3))),
    lambda: nd.Concat(X, X.astype("float64"), dim=0),
    lambda: nd.Concat(X, X, num_args=3),
    lambda: nd.stack(X, X, axis=4),
    lambda: nd.stack(X, nd.ones((2, 3, 5))),
    lambda: nd.split(X, num_outputs=2, axis=1),
    lambda: nd.split(X, num_outputs=2, axis=2, squeeze_axis=True),
    lambda: nd.split(X, num_outputs=2, axis=3),
    lambda: nd._internal._split_v2(X, indices=(1, 3), axis=2),
])
def test_errors(call):
    with pytest.raises(MXNetError):
        call()
