"""mx.np's routines and fallback functions against official NumPy (values, shapes,
dtypes as MXNet 1.9.1 gives them), and gradients where MXNet has them."""
import numpy as onp
import pytest

import mxnet as mx
from mxnet import autograd, np, npx

A = onp.array([[1.5, -2.0, 3.0], [0.5, 4.0, -1.0]], dtype=onp.float32)
B = onp.array([0.5, -1.0, 2.0], dtype=onp.float32)
K = onp.array([1, -2, 3], dtype=onp.int32)
S = onp.array([[onp.nan, onp.inf, 1.0], [-onp.inf, 0.0, 2.0]], dtype=onp.float32)


@pytest.mark.parametrize("name, args, kwargs", [
    ("arctan2", (A, B), {}), ("copysign", (A, B), {}), ("ldexp", (A, K), {}),
    ("fabs", (A,), {}), ("diff", (A,), {"axis": 1}), ("diff", (A,), {"n": 2, "axis": 1}),
    ("ediff1d", (A,), {}), ("append", (A, B), {}), ("delete", (A, 1), {"axis": 1}),
    ("insert", (B, 1, 7.0), {}), ("diag", (B,), {"k": 1}), ("diagflat", (A,), {}),
    ("column_stack", ([B, B],), {}), ("resize", (B, (2, 4)), {}), ("polyval", (B, A), {}),
    ("average", (A,), {"axis": 1, "weights": B}), ("percentile", (A, 30), {"axis": 0}),
    ("quantile", (A, 0.5), {}), ("nan_to_num", (S,), {}),
    ("isnan", (S,), {}), ("isinf", (S,), {}), ("isfinite", (A,), {}),
    ("isposinf", (S,), {}), ("isneginf", (S,), {}),
    ("allclose", (A, A + 1e-9), {}), ("isclose", (A, B), {}), ("argwhere", (A > 0,), {}),
    ("union1d", (A, B), {}), ("cov", (A,), {}), ("interp", (B, B, B), {}),
    ("nanmax", (A,), {"axis": 0}), ("rollaxis", (A, 1), {}), ("ptp", (A,), {}),
])
def test_matches_numpy(name, args, kwargs):
    import warnings
    mx_args = tuple(np.array(a, dtype=a.dtype) if isinstance(a, onp.ndarray) else
                    [np.array(x) for x in a] if isinstance(a, list) else a for a in args)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = getattr(onp, name)(*args, **kwargs)
        got = getattr(np, name)(*mx_args, **kwargs)
    if isinstance(got, np.ndarray):
        assert got.shape == onp.shape(want)
        onp.testing.assert_allclose(got.asnumpy(), want, rtol=1e-5, atol=1e-6)
    else:
        onp.testing.assert_allclose(got, want, rtol=1e-5)


def test_integer_functions_keep_integers():
    i = np.array([4, 6, 3], dtype="int32")
    j = np.array([6, 4, 5], dtype="int32")
    assert np.lcm(i, j).tolist() == [12, 12, 15]
    assert (i & j).tolist() == [4, 4, 1] and (~i).tolist() == [-5, -7, -4]
    assert np.bitwise_xor(i, j).dtype == onp.int32
    with pytest.raises(mx.MXNetError):
        np.lcm(np.array([1.5]), np.array([2.0]))


def test_creation_helpers_default_float32():
    assert np.hanning(5).dtype == onp.float32 and np.indices((2, 3)).shape == (2, 2, 3)
    assert np.indices((2, 3)).dtype == onp.int32
    assert np.atleast_3d(np.ones(3)).shape == (1, 3, 1)
    assert [a.shape for a in np.broadcast_arrays(np.ones(3), np.ones((2, 1)))] == \
        [(2, 3), (2, 3)]


def test_array_from_object_ndarray_of_numbers_and_bools():
    # pandas >= 2 gives such an object array for DataFrame.values with bool dummies
    src = onp.array([[3.0, True, False], [onp.nan, False, True]], dtype=object)
    out = np.array(src)
    assert out.dtype == onp.float32          # like the same nested list would give
    onp.testing.assert_array_equal(out.asnumpy(),
                                   onp.array([[3, 1, 0], [onp.nan, 0, 1]], onp.float32))
    assert np.array(src, dtype="float64").dtype == onp.float64
    with pytest.raises(mx.MXNetError):
        np.array(onp.array([["a", 1]], dtype=object))


def test_gradients_flow_through_composed_routines():
    x = np.array(A)
    y = np.array(B)
    x.attach_grad()
    y.attach_grad()
    with autograd.record():
        out = (np.arctan2(x, y).sum() + np.diff(x, axis=1).sum() + np.average(x, axis=1,
                                                                        weights=y).sum())
    out.backward()
    den = A * A + B * B
    want_x = B / den
    want_x[:, 0] -= 1
    want_x[:, 2] += 1
    want_x += B / B.sum()
    onp.testing.assert_allclose(x.grad.asnumpy(), want_x, rtol=1e-4, atol=1e-5)


def test_npx_additions():
    assert npx.nonzero(np.array([[0, 1], [2, 0]])).tolist() == [[0, 1], [1, 0]]
    assert npx.slice(np.ones((3, 4)), begin=(0, 1), end=(2, 3)).shape == (2, 2)
    assert bool(npx.constraint_check(np.array([True, True], dtype=bool)))
    with pytest.raises(ValueError, match="too big"):
        npx.constraint_check(np.array([True, False], dtype=bool), "too big")


def test_ufuncs_on_scalars_only_return_numpy_scalars():
    # MXNet 1.9.1 hands scalar-only calls to official NumPy: np.add(1, 2) is numpy's 3
    cases = [(np.add, (1, 2)), (np.subtract, (1, 2.5)), (np.true_divide, (1, 2)),
             (np.maximum, (1, 2)), (np.power, (2, 3)), (np.mod, (-5, 3)),
             (np.equal, (2, 3)), (np.hypot, (3, 4)), (np.arctan2, (1, 2)),
             (np.copysign, (1, -2)), (np.lcm, (4, 6)), (np.ldexp, (1.0, 2)),
             (np.bitwise_and, (3, 5)), (np.sin, (1.0,)), (np.sqrt, (4,)),
             (np.abs, (-2,)), (np.logical_not, (True,)), (np.fabs, (-2,))]
    for fn, args in cases:
        got = fn(*args)
        want = getattr(onp, fn.__name__ if fn is not np.fabs else "absolute")(*args)
        assert not isinstance(got, np.ndarray), fn.__name__
        assert got == want and onp.asarray(got).dtype == onp.asarray(want).dtype, fn.__name__
    assert np.clip(5, 0, 3) == 3 and not isinstance(np.clip(5, 0, 3), np.ndarray)
    with mx.util.np_shape(True):
        out = np.zeros(())
        assert np.add(1.0, 2.0, out=out) is out and out.item() == 3.0


def test_fallbacks_without_mx_arrays_return_numpy_results():
    # MXNet 1.9.1: a fallback function given no mx.np array returns NumPy's own result
    got = np.interp([0.5, 1.5], [0, 1, 2], [0, 10, 20])
    assert type(got) is onp.ndarray
    onp.testing.assert_allclose(got, [5.0, 15.0])
    assert type(np.isin([1, 2], [2])) is onp.ndarray
    assert isinstance(np.interp(np.array([0.5]), np.array([0., 1.]), np.array([0., 10.])),
                      np.ndarray)
    r, c = np.unravel_index(5, (3, 4))
    assert (r, c) == (1, 1) and not isinstance(r, np.ndarray)
    r, c = np.unravel_index(np.array([5, 7], dtype="int64"), (3, 4))
    assert isinstance(r, np.ndarray) and r.tolist() == [1, 1] and c.tolist() == [1, 3]


def test_result_dtypes_as_mxnet_gives_them():
    # dtypes from MXNet 1.9.1: quantiles are float32 unless a is float64; bincount
    # keeps x's dtype, or the weights' (bool weights: float32); copysign of integers
    # stays integer; searchsorted of one value is a NumPy integer
    for dt in ("int32", "int64", "float16", "float32"):
        assert np.percentile(np.array([1, 2, 3, 4], dtype=dt), 50).dtype == onp.float32
        assert np.quantile(np.array([1, 2, 3, 4], dtype=dt), [0.5]).dtype == onp.float32
    assert np.percentile(np.array([1, 2], dtype="float64"), 50).dtype == onp.float64
    x = np.array([0, 1, 1, 3], dtype="int32")
    assert np.bincount(x).dtype == onp.int32 and np.bincount(x).tolist() == [1, 2, 0, 1]
    assert np.bincount(x.astype("uint8")).dtype == onp.uint8
    w = np.array([1, 2, 3, 4], dtype="int32")
    assert np.bincount(x, weights=w).dtype == onp.int32
    assert np.bincount(x, weights=w.astype("float16")).dtype == onp.float16
    assert np.bincount(x, weights=np.array([True, False, True, True])).dtype == onp.float32
    assert np.bincount(x, minlength=6).shape == (6,)
    got = np.copysign(np.array([1, 2], dtype="int32"), np.array([-1, 1], dtype="int32"))
    assert got.dtype == onp.int32 and got.tolist() == [-1, 2]
    assert np.copysign(np.array([1, 2], dtype="int32"), -1.5).tolist() == [-1, -2]
    assert np.copysign(np.array([1., 2.]), -1).dtype == onp.float32
    v = np.array([1., 2., 2., 3.])
    s = np.searchsorted(v, 2.0, side="right")
    assert type(s) is onp.int64 and s == 3
    assert np.searchsorted(v, np.array([2.0])).tolist() == [1]


def test_average_returned_is_a_list_with_the_weights_sum_as_mxnet_shapes_it():
    # MXNet 1.9.1: [average, sum of weights]; no weights or 1-d weights give a 0-d sum
    a = np.array([[1., 2.], [3., 4.]])
    avg, scl = got = np.average(a, axis=0, weights=np.array([1., 3.]), returned=True)
    assert type(got) is list and scl.shape == () and scl.item() == 4.0
    onp.testing.assert_allclose(avg.asnumpy(), [2.5, 3.5])
    avg, scl = np.average(a, axis=0, returned=True)
    assert scl.shape == () and scl.item() == 2.0
    avg, scl = np.average(a, axis=0, weights=np.array([[1., 3.], [2., 2.]]), returned=True)
    assert scl.tolist() == [3.0, 5.0]
    onp.testing.assert_allclose(avg.asnumpy(), [7. / 3, 14. / 5], rtol=1e-6)


def test_expand_dims_refuses_an_axis_out_of_range():
    x = np.ones((2, 3))
    assert np.expand_dims(x, 2).shape == (2, 3, 1)
    assert np.expand_dims(x, -3).shape == (1, 2, 3)
    for axis in (3, -4):
        with pytest.raises(mx.base.MXNetError):
            np.expand_dims(x, axis)
