"""Ordering operators (ops/sort.py): sort, argsort, topk — NumPy references, numeric
gradients, MXNet 1.9.1's golden cases and its tie order."""
import numpy as np
import pytest

import mxnet as mx
from mxnet.base import MXNetError
from mxnet.operator.registry import get_op
from opcheck import Case, check
from common import check_infer, fixture_cases_for, run_fixture_case

nd = mx.nd
rs = np.random.RandomState(3)
TIES = np.array([[3, 1, 2, 1], [0, 5, 5, -1], [2, 2, 2, 2]], dtype=np.float32)


def rand(*shape):
    return rs.permutation(int(np.prod(shape))).reshape(shape) / 7.0 - 1   # distinct values


@pytest.mark.parametrize("case", fixture_cases_for("sort", "argsort", "topk"))
def test_fixture(case):
    run_fixture_case(case)


def ref_argsort(x, axis, ascend):
    """Stable order: ties keep input order in both directions."""
    if axis is None:
        x, axis = x.reshape(-1), 0
    key = x.astype(np.float64)
    key = (key + 0.0) if ascend else -key       # + 0.0: -0.0 ties with 0.0
    return np.argsort(key, axis=axis, kind="stable")


# --- sort ------------------------------------------------------------------------------------

@pytest.mark.parametrize("shape,axis,ascend", [
    ((3, 5), -1, True), ((3, 5), 0, False), ((2, 3, 4), 1, True), ((2, 3, 4), 1, False),
    ((2, 3), None, True), ((6,), 0, False),
])
def test_sort(shape, axis, ascend):
    def ref(x):
        i = ref_argsort(x, axis, ascend)
        return np.take_along_axis(x.reshape(-1) if axis is None else x, i,
                                  axis=0 if axis is None else axis)
    check(Case("sort", ref, kwargs={"axis": axis, "is_ascend": ascend}, ref_kwargs=False,
               inputs=[rand(*shape)]))


def test_sort_ties_and_dtypes():
    x = nd.array(TIES)
    assert nd.sort(x).asnumpy().tolist() == [[1, 1, 2, 3], [-1, 0, 5, 5], [2, 2, 2, 2]]
    assert nd.sort(x, is_ascend=False).asnumpy().tolist() == \
        [[3, 2, 1, 1], [5, 5, 0, -1], [2, 2, 2, 2]]
    out = nd.sort(nd.array([3, 1, 2], dtype="int32"))
    assert out.dtype == np.int32 and out.asnumpy().tolist() == [1, 2, 3]
    assert nd.sort(nd.array([3, 1, 2], dtype="uint8"), is_ascend=False).asnumpy().tolist() \
        == [3, 2, 1]


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int8", "int32", "int64",
                                   "uint8"])
@pytest.mark.parametrize("ascend", [True, False])
def test_stable_order_all_dtypes(dtype, ascend):
    """Many ties, signed zeros, extremes: every dtype follows the stable order."""
    vals = rs.randint(-3, 4, (4, 50)).astype(np.float64)
    if np.dtype(dtype).kind == "f":
        vals[0, :6] = [0.0, -0.0, np.inf, -np.inf, -0.0, 0.0]
    info = np.iinfo(dtype) if np.dtype(dtype).kind in "iu" else None
    x = (np.clip(vals, info.min, info.max) if info is not None else vals).astype(dtype)
    if info is not None:
        x[1, :2] = [info.min, info.max]
    for axis in (-1, 0, None):
        got = nd.argsort(nd.array(x, dtype=dtype), axis=axis, is_ascend=ascend, dtype="int64")
        assert np.array_equal(got.asnumpy(), ref_argsort(x, axis, ascend)), axis
    for k in (1, 7, 50):
        got = nd.topk(nd.array(x, dtype=dtype), k=k, is_ascend=ascend, dtype="int64")
        assert np.array_equal(got.asnumpy(), ref_argsort(x, -1, ascend)[:, :k]), k


# --- argsort ---------------------------------------------------------------------------------

@pytest.mark.parametrize("axis,ascend", [(-1, True), (-1, False), (0, True), (0, False),
                                         (None, True)])
def test_argsort_ties(axis, ascend):
    out = nd.argsort(nd.array(TIES), axis=axis, is_ascend=ascend)
    assert out.dtype == np.float32
    assert np.array_equal(out.asnumpy(), ref_argsort(TIES, axis, ascend))


def test_argsort_values_known_from_mxnet():
    x = nd.array(TIES)
    assert nd.argsort(x).asnumpy().tolist() == [[1, 3, 2, 0], [3, 0, 1, 2], [0, 1, 2, 3]]
    assert nd.argsort(x, is_ascend=False).asnumpy().tolist() == \
        [[0, 2, 1, 3], [1, 2, 0, 3], [0, 1, 2, 3]]
    assert nd.argsort(x, axis=None).asnumpy().tolist() == [7, 4, 1, 3, 2, 8, 9, 10, 11, 0, 5, 6]


@pytest.mark.parametrize("dtype", ["float16", "float64", "int32", "int64", "uint8"])
def test_argsort_dtype(dtype):
    x = rand(2, 5)
    out = nd.argsort(nd.array(x), dtype=dtype)
    assert out.dtype == np.dtype(dtype)
    assert np.array_equal(out.asnumpy(), np.argsort(x, axis=-1))


def test_argsort_zero_grad():
    x = nd.array(rand(2, 3))
    x.attach_grad()
    with mx.autograd.record():
        y = nd.argsort(x)
    y.backward()
    assert not x.grad.asnumpy().any()


# --- topk ------------------------------------------------------------------------------------

def ref_topk(x, axis, k, ascend):
    if axis is None:
        x, axis = x.reshape(-1), 0
    n = x.shape[axis]
    k = n if k <= 0 else k
    i = np.take(ref_argsort(x, axis, ascend), np.arange(k), axis=axis)
    return np.take_along_axis(x, i, axis=axis), i


@pytest.mark.parametrize("shape,axis,k,ascend", [
    ((3, 5), -1, 2, False), ((4, 3), 0, 2, True), ((2, 3, 4), 1, 1, False),
    ((3, 4), None, 3, False), ((3, 4), -1, 0, False), ((3, 4), 1, -1, True),
    ((5,), 0, 5, True),
])
def test_topk(shape, axis, k, ascend):
    kw = dict(axis=axis, k=k, is_ascend=ascend)
    x = rand(*shape)
    check(Case("topk", lambda a: ref_topk(a, axis, k, ascend)[0],
               kwargs={"ret_typ": "value", **kw}, ref_kwargs=False, inputs=[x]))
    check(Case("topk", lambda a: list(ref_topk(a, axis, k, ascend)),
               kwargs={"ret_typ": "both", **kw}, ref_kwargs=False, inputs=[x],
               out_dtype=lambda dt: [dt, np.float32]))
    both = nd.topk(nd.array(x), ret_typ="both", **kw)
    assert len(both) == 2 and both[1].dtype == np.float32
    assert np.array_equal(both[1].asnumpy(), ref_topk(x, axis, k, ascend)[1])
    idx = nd.topk(nd.array(x), **kw)            # ret_typ='indices' is the default
    assert np.array_equal(idx.asnumpy(), ref_topk(x, axis, k, ascend)[1])
    if axis is not None:
        mask = nd.topk(nd.array(x), ret_typ="mask", **kw).asnumpy()
        ref = np.zeros(shape, np.float32)
        np.put_along_axis(ref, ref_topk(x, axis, k, ascend)[1], 1, axis=axis)
        assert np.array_equal(mask, ref)


def test_topk_ties_and_types():
    x = nd.array(TIES)
    v, i = nd.topk(x, k=2, ret_typ="both")
    assert v.asnumpy().tolist() == [[3, 2], [5, 5], [2, 2]]
    assert i.asnumpy().tolist() == [[0, 2], [1, 2], [0, 1]]
    v, i = nd.topk(x, k=2, ret_typ="both", is_ascend=True)
    assert i.asnumpy().tolist() == [[1, 3], [3, 0], [0, 1]]
    assert nd.topk(x, k=2, ret_typ="mask").asnumpy().tolist() == \
        [[1, 0, 1, 0], [0, 1, 1, 0], [1, 1, 0, 0]]
    v, i = nd.topk(nd.array([1, 3, 2], dtype="int32"), k=2, ret_typ="both")
    assert v.dtype == np.int32 and i.dtype == np.float32
    assert nd.topk(nd.array([1, 3, 2]), k=2, dtype="uint8").dtype == np.uint8
    m = nd.topk(nd.array([1, 3, 2], dtype="float64"), k=1, ret_typ="mask")
    assert m.dtype == np.float64
    assert nd.topk(nd.array([1, 3, 2]), k=1, ret_typ="value").shape == (1,)


@pytest.mark.parametrize("ret_typ", ["indices", "mask"])
def test_topk_zero_grad(ret_typ):
    x = nd.array(rand(2, 3))
    x.attach_grad()
    with mx.autograd.record():
        y = nd.topk(x, k=2, ret_typ=ret_typ)
    y.backward()
    assert not x.grad.asnumpy().any()


# --- inference, outputs, errors ----------------------------------------------------------------

@pytest.mark.parametrize("name,kw", [
    ("sort", {}), ("sort", dict(axis=None)), ("sort", dict(axis=0, is_ascend=False)),
    ("argsort", {}), ("argsort", dict(axis=None, dtype="int32")),
    ("topk", {}), ("topk", dict(k=2, ret_typ="value")), ("topk", dict(k=0, ret_typ="both")),
    ("topk", dict(k=3, axis=None, ret_typ="both", dtype="float64")),
    ("topk", dict(k=2, axis=0, ret_typ="mask")), ("topk", dict(k=2, dtype="int64")),
])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32"])
def test_inference_matches_forward(name, kw, dtype):
    check_infer(name, [rand(3, 4).astype(dtype)], **kw)


def test_outputs_and_inference():
    f32, f64, i64 = np.dtype("float32"), np.dtype("float64"), np.dtype("int64")
    op = get_op("sort")
    p = op.parse({})
    assert op.outputs(p) == ["output0", "output1"] and op.num_visible_outputs(p) == 1
    assert op.infer_shape(p, [(3, 4)])[1] == [(3, 4), (3, 4)]
    assert op.infer_shape(op.parse({"axis": None}), [(3, 4)])[1][0] == (12,)
    assert op.infer_type(p, [f64])[1][0] == f64
    op = get_op("topk")
    for ret, n_out, n_vis in (("value", 2, 1), ("both", 2, 2), ("indices", 1, 1),
                              ("mask", 1, 1)):
        p = op.parse({"ret_typ": ret, "k": 2})
        assert len(op.outputs(p)) == n_out and op.num_visible_outputs(p) == n_vis
        shapes = op.infer_shape(p, [(3, 5)])[1]
        assert shapes[0] == ((3, 5) if ret == "mask" else (3, 2))
    p = op.parse({"ret_typ": "both", "dtype": "int32"})
    assert op.infer_type(p, [f64])[1] == [f64, np.dtype("int32")]
    assert op.infer_type(op.parse({"ret_typ": "mask"}), [f64])[1] == [f64]
    assert op.infer_type(op.parse({}), [f64])[1] == [f32]
    assert op.infer_shape(op.parse({"k": 3, "axis": None}), [(3, 4)])[1] == [(3,)]
    assert op.infer_shape(op.parse({"k": 3}), [(None, 4)])[1] == [(None, 3)]
    op = get_op("argsort")
    assert op.infer_type(op.parse({"dtype": "int64"}), [f32])[1] == [i64]


X = nd.array(np.arange(12).reshape(3, 4))


@pytest.mark.parametrize("call", [
    lambda: nd.topk(X, k=5),
    lambda: nd.topk(X, axis=2),
    lambda: nd.topk(X, ret_typ="values"),
    lambda: nd.sort(X, axis=2),
    lambda: nd.argsort(X, axis=-3),
    lambda: nd.argsort(X, dtype="int8"),
])
def test_errors(call):
    with pytest.raises(MXNetError):
        call()
