"""Indexing operators (ops/indexing.py): take, batch_take, pick, gather_nd, scatter_nd,
one_hot, where — NumPy references, numeric gradients, MXNet 1.9.1's golden cases."""
import numpy as np
import pytest

import mxnet as mx
from mxnet.base import MXNetError
from mxnet.operator.registry import get_op
from opcheck import Case, check
from common import check_infer, fixture_cases_for, run_fixture_case

nd = mx.nd
rs = np.random.RandomState(5)


def rand(*shape):
    return rs.uniform(-1, 1, shape)


@pytest.mark.parametrize("case", fixture_cases_for("take", "pick", "one_hot", "where"))
def test_fixture(case):
    run_fixture_case(case)


def trunc(i):
    return np.trunc(np.asarray(i, dtype=np.float64)).astype(np.int64)


# --- take ------------------------------------------------------------------------------------

def ref_take(a, idx, axis=0, mode="clip"):
    n = a.shape[axis]
    i = trunc(idx)
    i = np.clip(i, 0, n - 1) if mode == "clip" else np.mod(i, n)
    return np.take(a, i, axis=axis)


@pytest.mark.parametrize("shape,idx,axis,mode", [
    ((4, 3), [[0, 5], [-1, 1]], 0, "clip"),
    ((4, 3), [[0, 5], [-1, 1]], 0, "wrap"),
    ((4, 3), [3, 3, 0, 3], 0, "clip"),               # repeated rows accumulate
    ((2, 4, 3), [1, -2, 6], 1, "wrap"),
    ((2, 4, 3), [[2, 0]], -1, "clip"),
    ((2, 4, 3), [0.6, 1.5, 2.9], 1, "clip"),          # fractional: truncated
    ((2, 4, 3), [-0.6, -1.5], 1, "wrap"),
    ((5,), [4, 0, 2], 0, "raise"),
])
def test_take(shape, idx, axis, mode):
    idx = np.array(idx, dtype=np.float64)
    check(Case("take",
               lambda a, i: ref_take(a, i, axis, "wrap" if mode == "wrap" else "clip"),
               kwargs={"axis": axis, "mode": mode}, ref_kwargs=False,
               inputs=[rand(*shape), idx], grad_inputs=[0]))


def test_take_types_and_index_grad():
    a = nd.array(np.arange(6).reshape(3, 2), dtype="int32")
    out = nd.take(a, nd.array([2, 0], dtype="int64"))
    assert out.dtype == np.int32 and out.asnumpy().tolist() == [[4, 5], [0, 1]]
    x = nd.array(rand(3, 2))
    i = nd.array([0, 2])
    x.attach_grad()
    i.attach_grad()
    i.grad[:] = 7
    with mx.autograd.record():
        y = nd.take(x, i)
    y.backward()
    assert not i.grad.asnumpy().any()       # indices get a zero gradient, as in MXNet
    assert x.grad.asnumpy().tolist() == [[1, 1], [0, 0], [1, 1]]


# --- batch_take --------------------------------------------------------------------------------

def test_take_of_a_scalar_index_clips_and_wraps():
    """A 0-d index (mx.np's take(a, 7)): the clipped position is a scalar, not an array
    (an in-place clip of it failed)."""
    a = mx.np.arange(5.0)
    for i in (7, -2, 3):
        for mode, ref in (("clip", np.clip(i, 0, 4)), ("wrap", i % 5)):
            got = mx.np.take(a, mx.np.array(i), mode=mode)
            assert got.shape == () and float(got) == ref


def test_batch_take():
    def ref(a, i):
        j = np.clip(trunc(i), 0, a.shape[1] - 1)
        return a[np.arange(a.shape[0]), j.ravel()].reshape(i.shape)
    # no gradient, as in MXNet 1.9.1 (batch_take registers none)
    check(Case("batch_take", ref, inputs=[rand(3, 4), np.array([0, 5, -1])], grad=False,
               input_dtypes={1: "int32"}))
    check(Case("batch_take", ref, inputs=[rand(3, 4), np.array([[0], [1], [3]])],
               grad=False, input_dtypes={1: "int32"}))
    with pytest.raises(MXNetError):
        nd.batch_take(nd.ones((3, 4)), nd.array([0, 1], dtype="int32"))


@pytest.mark.parametrize("dt", ["float32", "int64", "uint8"])
def test_batch_take_indices_must_be_int32(dt):
    # MXNet 1.9.1 fixes batch_take's index type to int32: nd.array([0, 1, 2, 1]) (float32)
    # and other dtypes are a type error there (checked against the oracle)
    a = nd.array(np.arange(12).reshape(4, 3))
    with pytest.raises(MXNetError):
        nd.batch_take(a, nd.array([0, 1, 2, 1], dtype=dt)).wait_to_read()
    got = nd.batch_take(a, nd.array([5, -1, 3, 0], dtype="int32"))
    assert got.asnumpy().tolist() == [2, 3, 8, 9]


def test_batch_take_is_not_differentiable():
    # as in MXNet 1.9.1: no gradient is registered, binding one fails; stop_gradient
    # in front of it makes the graph bindable again
    x, idx = mx.sym.var("x"), mx.sym.var("idx")
    y = mx.sym.batch_take(x, idx)
    kw = dict(x=(4, 3), idx=(4,), type_dict={"x": np.float32, "idx": np.int32})
    with pytest.raises(MXNetError, match="non-differentiable"):
        y.simple_bind(mx.cpu(), **kw)
    ex = mx.sym.stop_gradient(y).simple_bind(mx.cpu(), **kw)
    ex.forward()
    ex.backward()
    assert (ex.grad_dict["x"].asnumpy() == 0).all()


# --- pick ------------------------------------------------------------------------------------

def ref_pick(x, idx, axis, keepdims=False, mode="clip"):
    n = x.shape[axis]
    i = trunc(idx)
    i = np.clip(i, 0, n - 1) if mode == "clip" else np.mod(i, n)
    i = i.reshape(x.shape[:axis] + (1,) + x.shape[axis + 1:])
    out = np.take_along_axis(x, i, axis=axis)
    return out if keepdims else out.reshape(x.shape[:axis] + x.shape[axis + 1:] or (1,))


@pytest.mark.parametrize("shape,idx,axis,keepdims,mode", [
    ((3, 4), [0, 5, -1], -1, False, "clip"),
    ((3, 4), [0, 5, -1], 1, False, "wrap"),
    ((3, 4), [0, 2, 1, 1], 0, True, "wrap"),
    ((2, 3, 4), [[0, 1, 2, 3], [3, 2, 1, 0]], 1, False, "clip"),
    ((2, 3, 4), [[[0, 1, 2, 0]], [[2, 2, 1, 0]]], 1, True, "clip"),   # index in keepdims shape
    ((3,), [2], 0, False, "clip"),
    ((3, 4), [0.7, 1.5, 2.2], 1, False, "clip"),
])
def test_pick(shape, idx, axis, keepdims, mode):
    idx = np.array(idx, dtype=np.float64)
    check(Case("pick", lambda x, i: ref_pick(x, i, axis % len(shape), keepdims, mode),
               kwargs={"axis": axis, "keepdims": keepdims, "mode": mode}, ref_kwargs=False,
               inputs=[rand(*shape), idx], grad_inputs=[0]))


# --- gather_nd / scatter_nd --------------------------------------------------------------------

def ref_gather_nd(x, idx):
    i = trunc(idx)
    m = i.shape[0]
    out = x[tuple(i[k] for k in range(m))]
    return out.reshape(out.shape or (1,))


@pytest.mark.parametrize("shape,idx", [
    ((3, 4), [[0, 2], [1, 3]]),
    ((3, 4), [[0, -1], [1, 3]]),                      # negative counts from the end
    ((3, 4), [[0, 2, 0]]),                            # partial index: whole rows
    ((3, 4), [[0], [2]]),
    ((2, 3, 4), [[[0, 1], [1, 1]], [[2, 0], [2, 2]]]),
    ((3, 4), [[1, 1, 2], [0, 0, 3]]),                 # repeats accumulate in backward
])
def test_gather_nd(shape, idx):
    check(Case("gather_nd", ref_gather_nd,
               inputs=[rand(*shape), np.array(idx, dtype=np.float64)], grad_inputs=[0]))


def ref_scatter_nd(d, idx, shape):
    out = np.zeros(shape, d.dtype)
    i = trunc(idx)
    out[tuple(i[k] for k in range(i.shape[0]))] = d.reshape(i.shape[1:] + tuple(shape[i.shape[0]:]))
    return out


@pytest.mark.parametrize("dshape,idx,shape", [
    ((2,), [[0, 2], [1, 3]], (3, 4)),
    ((2, 3), [[0, 2]], (3, 3)),
    ((1, 2, 4), [[[0, 2]]], (3, 4)),
])
def test_scatter_nd(dshape, idx, shape):
    check(Case("scatter_nd", lambda d, i: ref_scatter_nd(d, i, shape),
               kwargs={"shape": shape}, ref_kwargs=False,
               inputs=[rand(*dshape), np.array(idx, dtype=np.float64)], grad_inputs=[0]))


def test_scatter_nd_repeats_last_wins():
    out = nd.scatter_nd(nd.array([1, 2]), nd.array([[0, 0], [1, 1]]), shape=(3, 4))
    expect = np.zeros((3, 4))
    expect[0, 1] = 2
    assert np.array_equal(out.asnumpy(), expect)
    # MXNet's backward gathers the head gradient for every entry, overwritten or not
    d = nd.array([1., 2, 3])
    d.attach_grad()
    with mx.autograd.record():
        y = nd.scatter_nd(d, nd.array([[0, 0, 2], [1, 1, 3]]), shape=(3, 4))
    y.backward(nd.array(np.arange(12).reshape(3, 4)))
    assert d.grad.asnumpy().tolist() == [1, 1, 11]


def test_gather_scatter_roundtrip():
    x = rand(3, 4).astype(np.float32)
    idx = nd.array([[0, 1, 2], [3, 0, 1]])
    g = nd.gather_nd(nd.array(x), idx)
    s = nd.scatter_nd(g, idx, shape=(3, 4)).asnumpy()
    mask = np.zeros((3, 4), bool)
    mask[[0, 1, 2], [3, 0, 1]] = True
    assert np.array_equal(s[mask], x[mask]) and not s[~mask].any()


# --- one_hot ---------------------------------------------------------------------------------

@pytest.mark.parametrize("idx,depth,kw", [
    ([0, 2, 5, -1], 4, {}),
    ([[0, 2], [1, 3]], 4, dict(dtype="int32")),
    ([0.7, 2.5], 4, dict(on_value=2.0, off_value=-1.0, dtype="float64")),
    ([1, 0], 3, dict(on_value=5, off_value=0, dtype="uint8")),
])
def test_one_hot(idx, depth, kw):
    idx = np.array(idx, dtype=np.float32)
    out = nd.one_hot(nd.array(idx), depth=depth, **kw)
    i = trunc(idx)
    ref = np.where(i[..., None] == np.arange(depth), kw.get("on_value", 1.0),
                   kw.get("off_value", 0.0)).astype(kw.get("dtype", "float32"))
    assert out.dtype == np.dtype(kw.get("dtype", "float32"))
    assert np.array_equal(out.asnumpy(), ref)


def test_one_hot_zero_grad():
    i = nd.array([0, 1])
    i.attach_grad()
    with mx.autograd.record():
        y = nd.one_hot(i, depth=3)
    y.backward()
    assert not i.grad.asnumpy().any()


# --- where -----------------------------------------------------------------------------------

@pytest.mark.parametrize("cshape,xshape", [((3, 4), (3, 4)), ((3,), (3, 2)), ((2,), (2, 3, 2)),
                                           ((4,), (4,))])
def test_where(cshape, xshape):
    cond = rs.randint(0, 3, cshape).astype(np.float64)

    def ref(c, x, y):
        c = c.reshape(c.shape + (1,) * (x.ndim - c.ndim))
        return np.where(c != 0, x, y)
    check(Case("where", ref, inputs=[cond, rand(*xshape), rand(*xshape)],
               grad_inputs=[1, 2]))


def test_where_types():
    out = nd.where(nd.array([1, 0], dtype="int32"), nd.ones((2,), dtype="float64"),
                   nd.zeros((2,), dtype="float64"))
    assert out.dtype == np.float64 and out.asnumpy().tolist() == [1, 0]
    out = nd.where(nd.array([np.nan, 0]), nd.ones((2,)), nd.zeros((2,)))
    assert out.asnumpy().tolist() == [1, 0]          # NaN is non-zero
    with pytest.raises(MXNetError):
        nd.where(nd.ones((2,)), nd.ones((2,)), nd.ones((2,), dtype="float64"))


# --- ravel_multi_index / unravel_index ----------------------------------------------------------

def test_ravel_unravel():
    shape = (7, 6, 5)
    coords = np.stack([rs.randint(0, d, 8) for d in shape]).astype(np.float32)
    flat = nd.ravel_multi_index(nd.array(coords), shape=shape)
    assert flat.dtype == np.float32
    assert np.array_equal(flat.asnumpy(), np.ravel_multi_index(coords.astype(int), shape))
    back = nd.unravel_index(flat, shape=shape)
    assert back.shape == (3, 8) and np.array_equal(back.asnumpy(), coords)
    out = nd._internal._ravel_multi_index(nd.array(coords, dtype="int32"), shape=shape)
    assert out.dtype == np.int32
    # MXNet: no bounds check; the first coordinate is what is left after the others
    assert nd.unravel_index(nd.array([50, 22]), shape=(7, 6)).asnumpy().tolist() == \
        [[8, 3], [2, 4]]
    with pytest.raises(MXNetError):
        nd.ravel_multi_index(nd.array(coords), shape=(7, 6))


def test_ravel_unravel_refuse_an_empty_shape():
    # MXNet 1.9.1: "Empty shape parameter for unravel operator" (oracle); unravel gave
    # a (1, 1) result before
    with pytest.raises(MXNetError):
        nd.unravel_index(nd.array([1]), shape=()).wait_to_read()
    with pytest.raises(MXNetError):
        nd.ravel_multi_index(nd.array([[1]]), shape=()).wait_to_read()


# --- shape / type inference and errors ---------------------------------------------------------

A2 = np.arange(12, dtype=np.float64).reshape(3, 4)
I2 = np.array([[0, 2], [1, 3]], np.float32)


@pytest.mark.parametrize("name,arrays,kw", [
    ("take", [A2, I2], {}), ("take", [A2.astype(np.int32), I2], dict(axis=1)),
    ("batch_take", [A2, np.array([0, 1, 2], np.int32)], {}),
    ("pick", [A2, np.array([0, 1, 2], np.float32)], {}),
    ("pick", [A2, np.array([0, 1, 2, 0.])], dict(axis=0, keepdims=True)),
    ("pick", [A2[0], np.array([1.])], dict(axis=0)),
    ("gather_nd", [A2, I2], {}), ("gather_nd", [A2, np.array([[1], [2]])], {}),
    ("scatter_nd", [np.ones(2, np.float16), I2], dict(shape=(3, 4))),
    ("one_hot", [I2], dict(depth=5, dtype="int8")),
    ("where", [np.ones(3, np.int32), A2, A2], {}),
    ("_ravel_multi_index", [I2], dict(shape=(4, 4))),
    ("_unravel_index", [I2[0]], dict(shape=(4, 4))),
])
def test_inference_matches_forward(name, arrays, kw):
    check_infer(name, arrays, **kw)


def infer(name, shapes, **kw):
    op = get_op(name)
    ins, outs, _ = op.infer_shape(op.parse(kw), shapes)
    return [None if s is None else tuple(s) for s in ins], \
        [None if s is None else tuple(s) for s in outs]


def test_infer_shape():
    assert infer("take", [(4, 3), (2, 5)])[1] == [(2, 5, 3)]
    assert infer("take", [(4, 3), (2, 5)], axis=1)[1] == [(4, 2, 5)]
    assert infer("take", [(4, 3), None])[1] == [None]
    assert infer("pick", [(4, 3), None])[0] == [(4, 3), (4,)]
    assert infer("pick", [(4, 3), (4,)], axis=1, keepdims=True)[1] == [(4, 1)]
    assert infer("gather_nd", [(3, 4, 5), (2, 6)])[1] == [(6, 5)]
    assert infer("scatter_nd", [(6, 5), (2, 6)], shape=(3, 4, 5))[1] == [(3, 4, 5)]
    assert infer("one_hot", [(2, 3)], depth=4)[1] == [(2, 3, 4)]
    ins, outs = infer("where", [(3,), None, (3, 2)])
    assert ins == [(3,), (3, 2), (3, 2)] and outs == [(3, 2)]
    assert infer("batch_take", [(3, 4), (3,)])[1] == [(3,)]


def test_infer_type():
    f32, f64, i32 = np.dtype("float32"), np.dtype("float64"), np.dtype("int32")
    op = get_op("take")
    assert op.infer_type(op.parse({}), [f64, i32])[1] == [f64]
    op = get_op("one_hot")
    assert op.infer_type(op.parse({"depth": 3}), [i32])[1] == [f32]
    assert op.infer_type(op.parse({"depth": 3, "dtype": "int64"}), [f32])[1] == \
        [np.dtype("int64")]
    op = get_op("where")
    assert op.infer_type(op.parse({}), [i32, f64, None]) == ([i32, f64, f64], [f64], [])
    op = get_op("batch_take")
    assert op.infer_type(op.parse({}), [f64, None])[0] == [f64, i32]


A = nd.array(np.arange(12).reshape(3, 4))


@pytest.mark.parametrize("call", [
    lambda: nd.take(A, nd.array([0, 5]), mode="raise"),
    lambda: nd.take(A, nd.array([-1]), mode="raise"),
    lambda: nd.take(A, nd.array([0]), axis=2),
    lambda: nd.take(A, nd.array([0]), mode="nearest"),
    lambda: nd.pick(A, nd.array([0, 2, 1, 1]), axis=None),
    lambda: nd.pick(A, nd.array([0, 2]), axis=1),
    lambda: nd.pick(A, nd.array([0, 1, 2]), mode="raise"),
    lambda: nd.gather_nd(A, nd.array([1, 2])),
    lambda: nd.gather_nd(A, nd.array([[0, 5], [1, 3]])),
    lambda: nd.gather_nd(A, nd.array([[1], [2], [0]])),
    lambda: nd.scatter_nd(nd.array([1, 2, 3]), nd.array([[0, 2], [1, 3]]), shape=(3, 4)),
    lambda: nd.one_hot(nd.array([1]), depth=-1),
    lambda: nd.where(nd.array([1, 0, 1]), nd.ones((2, 3)), nd.zeros((2, 3))),
    lambda: nd.where(nd.array([1, 0]), nd.ones((2, 3)), nd.zeros((2, 2))),
])
def test_errors(call):
    with pytest.raises(MXNetError):
        call()
        mx.nd.waitall()      # a failure while computing surfaces at the sync point


def test_gather_nd_out_of_range_is_an_index_error():
    data = nd.array([[0, 1, 2], [3, 4, 5]])
    for idx in ([[0, 1, 0], [0, 1, 3]], [[0, 1, 0], [0, 1, -5]]):
        with pytest.raises(IndexError, match="out of range"):
            nd.gather_nd(data, nd.array(idx)).asnumpy()
    with pytest.raises(MXNetError):
        nd.gather_nd(data, nd.array([[2], [0]])).asnumpy()
