"""Reductions (sum, mean, prod, nansum, nanprod, max, min, norm, argmax, argmin,
argmax_channel): forward against NumPy with MXNet's legacy shape rules, gradients
against finite differences, MXNet 1.9.1's dtype rules and the golden cases."""
import numpy as np
import pytest

import mxnet as mx
from mxnet.base import MXNetError
from mxnet.operator.registry import get_op
from mxnet.test_utils import assert_almost_equal, check_numeric_gradient

from common import fixture_cases_for, run_fixture_case

nd = mx.nd

REF = {"sum": np.sum, "mean": np.mean, "prod": np.prod, "nansum": np.nansum,
       "nanprod": np.nanprod, "max": np.max, "min": np.min}

# (axis, keepdims, exclude)
AXES = [(None, False, False), ((), False, False), (1, False, False), (-1, True, False),
        ((0, 2), False, False), ((0, 2), True, False), (1, False, True), ((0, 1), True, True),
        ((0, 1, 2), False, True)]


def np_reduce(f, x, axis, keepdims, exclude):
    """The NumPy reference with MXNet's axis semantics and legacy (1,) results."""
    if axis is None or axis == ():
        axes = tuple(range(x.ndim))
    else:
        axes = tuple(a % x.ndim for a in ((axis,) if isinstance(axis, int) else axis))
        if exclude:
            axes = tuple(i for i in range(x.ndim) if i not in axes)
    # No axes left (exclude=True on every axis): an elementwise pass; the nan* forms
    # still replace NaN (by 0 or 1), as MXNet does.
    out = f(x, axis=axes, keepdims=keepdims)
    out = np.asarray(out)
    return out.reshape(1) if out.ndim == 0 else out


def _kwargs(axis, keepdims, exclude):
    kw = {"keepdims": keepdims, "exclude": exclude}
    if axis is not None:
        kw["axis"] = axis
    return kw


@pytest.mark.parametrize("name", sorted(REF))
@pytest.mark.parametrize("axis, keepdims, exclude", AXES)
def test_forward(name, axis, keepdims, exclude):
    x = np.random.RandomState(0).uniform(0.5, 1.5, (2, 3, 4)).astype(np.float32)
    if name.startswith("nan"):
        x[0, 1, 2] = np.nan
    out = getattr(nd, name)(nd.array(x), **_kwargs(axis, keepdims, exclude))
    expect = np_reduce(REF[name], x.astype(np.float64), axis, keepdims, exclude)
    assert out.shape == expect.shape and out.dtype == np.float32
    assert_almost_equal(out.asnumpy(), expect, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", sorted(REF))
@pytest.mark.parametrize("axis, keepdims, exclude", AXES[::2])
def test_gradient(name, axis, keepdims, exclude):
    # Distinct values: max/min have a unique extreme, prod has no zero.
    rs = np.random.RandomState(1)
    x = (rs.permutation(24).reshape(2, 3, 4) / 24.0 + 0.5)
    kw = _kwargs(axis, keepdims, exclude)
    check_numeric_gradient(lambda a: getattr(nd, name)(a, **kw), [x], numeric_eps=1e-6,
                           rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("name", ["sum", "mean", "prod", "max", "min"])
def test_float64(name):
    x = np.random.RandomState(2).uniform(0.5, 1.5, (3, 5))
    out = getattr(nd, name)(nd.array(x, dtype="float64"), axis=1)
    assert out.dtype == np.float64
    assert_almost_equal(out.asnumpy(), REF[name](x, axis=1), rtol=1e-14, atol=0)


@pytest.mark.parametrize("name", ["sum", "mean", "nansum", "prod", "max", "min"])
@pytest.mark.parametrize("dtype", ["float32", "float16", "int32"])
def test_a_zero_dim_input_reduces_to_shape_one_with_its_gradient(name, dtype):
    """Under mx.np_shape(True) a 0-d array reduces to shape (1,), as in MXNet 1.9.1; its
    sum is a NumPy scalar on the host, which the in-place mean division must not get."""
    with mx.np_shape(True):
        x = mx.nd.array(np.array(5.0), dtype=dtype)
        x.attach_grad()
        with mx.autograd.record():
            y = getattr(mx.nd, name)(x)
        y.backward()
        assert y.shape == (1,) and y.dtype == np.dtype(dtype)
        assert float(y.asnumpy()[0]) == 5.0
        assert x.grad.shape == () and float(x.grad.asnumpy()) == 1.0


def test_integer_dtypes_match_mxnet():
    # Values from MXNet 1.9.1: the dtype is kept, sums wrap, means truncate.
    i = nd.array([1, 2, 3, -4], dtype="int32")
    assert nd.sum(i).dtype == np.int32 and nd.sum(i).asnumpy().tolist() == [2]
    assert nd.mean(i).asnumpy().tolist() == [0]
    assert nd.prod(i).asnumpy().tolist() == [-24]
    assert nd.mean(nd.array([1, 2, 4], dtype="int64")).asnumpy().tolist() == [2]
    assert nd.mean(nd.array([-1, -2, -4], dtype="int32")).asnumpy().tolist() == [-2]
    u = nd.sum(nd.array([200, 100], dtype="uint8"))
    assert u.dtype == np.uint8 and u.asnumpy().tolist() == [44]
    assert nd.max(nd.array([1, 2], dtype="int8")).dtype == np.int8


def test_float16_accumulates_in_float32():
    out = nd.sum(nd.ones((3000,), dtype="float16"))
    assert out.dtype == np.float16 and out.asnumpy().tolist() == [3000]


def test_full_reduction_shapes():
    x = nd.ones((2, 3))
    assert nd.sum(x).shape == (1,)
    assert nd.sum(x, keepdims=True).shape == (1, 1)
    assert nd.sum(x, axis=()).shape == (1,)
    assert nd.sum(x, axis=(), exclude=True).asnumpy().tolist() == [6]
    assert nd.sum(nd.ones((3,)), axis=0).shape == (1,)
    assert nd.sum(x, axis=(0, 1), exclude=True).asnumpy().tolist() == x.asnumpy().tolist()
    assert nd.sum(x, 1).asnumpy().tolist() == [3, 3]             # positional axis
    assert nd.sum(x, axis=[0, 1]).shape == (1,)
    assert nd.sum(x, axis="(0,)").asnumpy().tolist() == [2, 2, 2]  # as stored in JSON


def test_aliases():
    assert get_op("sum_axis") is get_op("sum")
    assert get_op("max_axis") is get_op("max") and get_op("min_axis") is get_op("min")
    x = nd.array([[1, 5], [7, 2]])
    assert nd.sum_axis(x, axis=1).asnumpy().tolist() == [6, 9]
    assert nd.max_axis(x, axis=0).asnumpy().tolist() == [7, 5]
    assert nd.min_axis(x, axis=1).asnumpy().tolist() == [1, 2]


def test_fluent_methods():
    xn = np.random.RandomState(3).normal(size=(3, 4)).astype(np.float32)
    x = nd.array(xn)
    assert_almost_equal(x.sum(axis=1).asnumpy(), xn.sum(axis=1), rtol=1e-5)
    assert_almost_equal(x.mean().asnumpy(), [xn.mean()], rtol=1e-5)
    assert_almost_equal(x.max(axis=0).asnumpy(), xn.max(axis=0))
    assert_almost_equal(x.norm().asnumpy(), [np.linalg.norm(xn)], rtol=1e-5)
    assert x.argmax(axis=1).asnumpy().tolist() == xn.argmax(axis=1).tolist()


def test_errors():
    x = nd.ones((2, 3))
    with pytest.raises(MXNetError, match="axis"):
        nd.sum(x, axis=2)
    with pytest.raises(MXNetError, match="axis"):
        nd.sum(x, axis=-3)
    with pytest.raises(MXNetError, match="duplicate"):
        nd.sum(x, axis=(0, 0))
    with pytest.raises(MXNetError, match="foo"):
        nd.sum(x, foo=1)
    with pytest.raises(MXNetError, match="keepdims"):
        nd.mean(x, keepdims="maybe")
    with pytest.raises(MXNetError, match="ord"):
        nd.norm(x, ord=3)
    with pytest.raises(MXNetError, match="axis"):
        nd.argmax(x, axis=5)
    with pytest.raises(MXNetError, match="axis"):
        nd.argmax(x, axis=(0,))             # argmax takes one axis
    with pytest.raises(MXNetError):
        nd.argmax_channel(nd.ones((3,)))
    with pytest.raises(MXNetError, match="exclude"):
        nd.norm(x, exclude=True)


def test_max_min_ties_all_receive_the_gradient():
    x = nd.array([[1, 3, 3], [2, 2, 2]])
    x.attach_grad()
    with mx.autograd.record():
        y = nd.max(x, axis=1)
    y.backward()
    assert x.grad.asnumpy().tolist() == [[0, 1, 1], [1, 1, 1]]
    with mx.autograd.record():
        y = nd.min(x)
    y.backward()
    assert x.grad.asnumpy().tolist() == [[1, 0, 0], [0, 0, 0]]
    # NaN propagates forward and no element gets a gradient
    z = nd.array([1, np.nan, 3])
    z.attach_grad()
    with mx.autograd.record():
        y = nd.max(z)
    y.backward()
    assert np.isnan(y.asnumpy()[0]) and z.grad.asnumpy().tolist() == [0, 0, 0]


def test_prod_nan_gradients_as_mxnet():
    x = nd.array([0, 2, 3])
    x.attach_grad()
    with mx.autograd.record():
        y = nd.prod(x)
    y.backward()
    g = x.grad.asnumpy()
    assert np.isnan(g[0]) and g[1:].tolist() == [0, 0]   # MXNet: out / x
    x = nd.array([2, np.nan, 3])
    x.attach_grad()
    with mx.autograd.record():
        y = nd.nanprod(x) + nd.nansum(x)
    y.backward()
    assert y.asnumpy().tolist() == [11] and x.grad.asnumpy().tolist() == [4, 0, 3]


# ------------------------------------------------------------------------------- norm
@pytest.mark.parametrize("ord_", [1, 2])
@pytest.mark.parametrize("axis, keepdims", [(None, False), (1, False), (-1, True),
                                            ((1, 2), False), ((0, 2), True), ((), False)])
def test_norm(ord_, axis, keepdims):
    xn = np.random.RandomState(4).uniform(-2, 2, (2, 3, 4))
    xn[np.abs(xn) < 0.1] = 0.5                  # keep |x| differentiable for ord=1
    kw = {"ord": ord_, "keepdims": keepdims}
    if axis is not None:
        kw["axis"] = axis
    f = np.abs if ord_ == 1 else np.square
    expect = np_reduce(np.sum, f(xn), axis, keepdims, False)
    expect = expect if ord_ == 1 else np.sqrt(expect)
    out = nd.norm(nd.array(xn), **kw)
    assert out.shape == expect.shape and out.dtype == np.float32
    assert_almost_equal(out.asnumpy(), expect, rtol=1e-5, atol=1e-6)
    check_numeric_gradient(lambda a: nd.norm(a, **kw), [xn], numeric_eps=1e-6, rtol=1e-5)


def test_norm_dtypes_and_edges():
    # float16/float32 values whose squares overflow still give the right norm
    h = nd.norm(nd.array([300, 400], dtype="float16"))
    assert h.dtype == np.float16 and h.asnumpy().tolist() == [500]
    assert_almost_equal(nd.norm(nd.array([3e20, 4e20])).asnumpy(), [5e20], rtol=1e-6)
    out = nd.norm(nd.ones((2, 3)), axis=1, out_dtype="float64")
    assert out.dtype == np.float64
    assert_almost_equal(out.asnumpy(), [np.sqrt(3)] * 2, rtol=1e-12)
    # integers: MXNet's scaled accumulation gives max|x| * sqrt(#elements at max|x|)
    assert nd.norm(nd.array([1, 2, 3, -4], dtype="int32")).asnumpy().tolist() == [4]
    assert nd.norm(nd.array([3, -3, 1, 3], dtype="int32")).asnumpy().tolist() == [5]
    assert nd.norm(nd.array([3, -3, 1, 3], dtype="int32"), ord=1).asnumpy().tolist() == [10]
    # gradient at a zero norm is NaN (0/0), at zero entries of ord=1 it is 0, as MXNet
    x = nd.array([[0, 0], [3, 4]])
    x.attach_grad()
    with mx.autograd.record():
        y = nd.norm(x, axis=1)
    y.backward()
    g = x.grad.asnumpy()
    assert np.isnan(g[0]).all()
    assert_almost_equal(g[1], np.array([0.6, 0.8]), rtol=1e-6)
    x = nd.array([0, -1, 2])
    x.attach_grad()
    with mx.autograd.record():
        y = nd.norm(x, ord=1)
    y.backward()
    assert x.grad.asnumpy().tolist() == [0, -1, 1]


# ------------------------------------------------------------------------- arg-reduce
@pytest.mark.parametrize("name", ["argmax", "argmin"])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "float16"])
def test_argmax_argmin(name, dtype):
    xn = np.random.RandomState(5).permutation(24).reshape(2, 3, 4).astype(dtype)
    x = nd.array(xn, dtype=dtype)
    ref = getattr(np, name)
    for axis in [0, 1, -1]:
        out = getattr(nd, name)(x, axis=axis)
        assert out.dtype == np.dtype(dtype)           # indices come in the input dtype
        assert out.asnumpy().tolist() == ref(xn, axis=axis).astype(dtype).tolist()
        out = getattr(nd, name)(x, axis=axis, keepdims=True)
        assert out.shape == tuple(1 if i == axis % 3 else d for i, d in enumerate(xn.shape))
    out = getattr(nd, name)(x)
    assert out.shape == (1,) and out.asnumpy().tolist() == [ref(xn)]
    assert getattr(nd, name)(x, keepdims=True).shape == (1, 1, 1)


def test_argmax_ties_nan_and_zero_gradient():
    assert nd.argmax(nd.array([[5, 5], [7, 7]]), axis=1).asnumpy().tolist() == [0, 0]
    assert nd.argmin(nd.array([[5, 5], [7, 7]]), axis=1).asnumpy().tolist() == [0, 0]
    assert nd.argmax(nd.array([[1, np.nan], [7, 2]]), axis=1).asnumpy().tolist() == [1, 0]
    assert nd.argmin(nd.array([1, np.nan, 0]), axis=0).asnumpy().tolist() == [1]
    x = nd.array([[0.5, 0], [-0.9, 3]])
    x.attach_grad()
    with mx.autograd.record():
        y = nd.argmax(x, axis=0) + x
    y.backward()
    assert (x.grad.asnumpy() == 1).all()


def test_argmax_channel():
    xn = np.random.RandomState(6).uniform(size=(2, 3, 4, 5)).astype(np.float32)
    out = nd.argmax_channel(nd.array(xn))
    assert out.shape == (2, 4, 5) and out.dtype == np.float32
    assert out.asnumpy().tolist() == xn.argmax(axis=1).astype(np.float32).tolist()
    out = nd.argmax_channel(nd.array([[1, 3, 2], [9, 0, 1]], dtype="int32"))
    assert out.dtype == np.int32 and out.asnumpy().tolist() == [1, 0]
    x = nd.array(xn)
    x.attach_grad()
    with mx.autograd.record():
        y = nd.argmax_channel(x)
    with pytest.raises(MXNetError, match="differentiable"):
        y.backward()


def test_shape_inference():
    s = get_op("sum")
    p = s.params.parse("sum", {"axis": (0, 2), "keepdims": True})
    assert s.infer_shape(p, [(2, 3, 4)])[1] == [(1, 3, 1)]
    assert s.infer_shape(p, [None])[1] == [None]
    n = get_op("norm")
    p = n.params.parse("norm", {"out_dtype": "None"})
    assert n.infer_shape(p, [(2, 3)])[1] == [(1,)]
    assert n.infer_type(p, [np.dtype("float32")])[1] == [np.dtype("float32")]
    a = get_op("argmax")
    p = a.params.parse("argmax", {"axis": 1})
    assert a.infer_shape(p, [(2, 3, 4)])[1] == [(2, 4)]


@pytest.mark.parametrize("case", fixture_cases_for("sum", "mean", "max", "min", "prod", "norm",
                                                   "argmax"))
def test_mxnet_fixture(case):
    run_fixture_case(case)


# --- argmax/argmin over several NaNs on gpu(0): the first NaN --------------------------------
# MXNet's kernel walks the axis in order and NaN wins (NumPy's answer too); CuPy's parallel
# argmax/argmin keeps whichever NaN its reduction tree puts first (MXNet 1.9.1's
# test_reduce of test_ndarray on a real GPU). The real GPU where CuPy sees one, else an
# emulated one (whose argmax/argmin answer the last NaN).
@pytest.mark.parametrize("name", ["argmax", "argmin"])
@pytest.mark.parametrize("axis", [None, 0, 1, -1])
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_arg_reduce_first_nan(gpu, name, axis, dtype):
    rs = np.random.RandomState(3)
    x = (rs.rand(6, 70) - 0.5).astype(dtype)
    x.ravel()[rs.choice(x.size, 60, replace=False)] = np.nan
    x[2] = np.inf                      # ties without NaN: the first one
    x[3, :5] = -np.inf
    x[:, 7] = 0.25
    got = getattr(nd, name)(nd.array(x, ctx=gpu, dtype=dtype), axis=axis).asnumpy()
    want = getattr(np, name)(x if axis is not None else x.reshape(-1), axis=axis or 0)
    np.testing.assert_array_equal(got.reshape(np.shape(want)), want)


def test_mean_of_bool_is_any():
    # MXNet 1.9.1 divides the (logical) sum by the count cast to bool, so the mean of
    # bools is True where any is True: mean([[1,0,1],[1,1,0]], axis=0) = [True]*3
    b = mx.nd.array([[1, 0, 1], [1, 1, 0]], dtype="bool")
    assert mx.nd.mean(b, axis=0).asnumpy().tolist() == [True, True, True]
    assert mx.nd.mean(b).asnumpy().tolist() == [True]
    assert mx.nd.mean(mx.nd.zeros((2,), dtype="bool")).asnumpy().tolist() == [False]
