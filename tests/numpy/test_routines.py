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
