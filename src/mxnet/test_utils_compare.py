"""The comparison half of ``mx.test_utils`` (re-exported there under MXNet's names):
the default context and dtype of tests, per-dtype tolerances, and the array
comparisons (``same``, ``almost_equal``, ``assert_almost_equal``...). Below both
``test_utils`` and ``test_utils_symbolic``, which use it.
"""
import numbers
import os

import numpy as np

from .context import Context, current_context
from .util import get_cuda_compute_capability


def default_context():
    """The context tests run on: this thread's current context."""
    return current_context()


def set_default_context(ctx):
    """Make ctx this thread's default context (``Context.default_ctx``)."""
    Context.default_ctx = ctx


def default_dtype():
    """The dtype test data is made in (float32)."""
    return np.float32


_INT_DTYPES = ("bool", "int8", "uint8", "int32", "uint32", "int64", "uint64")


def default_rtols():
    """Relative tolerance per dtype: float16 1e-2, float32 1e-4, float64 1e-5, ints 0."""
    tols = {np.dtype(np.float16): 1e-2, np.dtype(np.float32): 1e-4,
            np.dtype(np.float64): 1e-5}
    tols.update({np.dtype(t): 0 for t in _INT_DTYPES})
    return tols


def default_atols():
    """Absolute tolerance per dtype: float16 1e-1, float32 1e-3, float64 1e-20, ints 0."""
    tols = {np.dtype(np.float16): 1e-1, np.dtype(np.float32): 1e-3,
            np.dtype(np.float64): 1e-20}
    tols.update({np.dtype(t): 0 for t in _INT_DTYPES})
    return tols


def default_numeric_eps():
    """Finite-difference step per float dtype (2**-6, 2**-9, 2**-14)."""
    return {np.dtype(np.float16): 1.0 / 2**6, np.dtype(np.float32): 1.0 / 2**9,
            np.dtype(np.float64): 1.0 / 2**14}


def _tf32_enabled(ctx):
    """Whether float32 convolutions (cuDNN's DEFAULT_MATH) and, with CuPy's
    CUPY_TF32=1, matrix products on ``ctx`` may use TF32: a GPU of compute capability
    8.0 or later, with NVIDIA_TF32_OVERRIDE not 0 (MXNet 1.9.1's rule)."""
    if ctx is None or getattr(ctx, "device_type", None) != "gpu":
        return False
    if os.environ.get("NVIDIA_TF32_OVERRIDE") == "0":
        return False
    if os.environ.get("CUPY_TF32", "0") == "1":
        return True
    try:
        return get_cuda_compute_capability(ctx) >= 80
    except Exception:  # noqa: BLE001  (no usable GPU: no TF32)
        return False


def effective_dtype(dat):
    """The dtype whose precision dat's values really have.

    float32 results on a GPU that allows TF32 tensor-core math (compute capability 8.0
    or later, unless NVIDIA_TF32_OVERRIDE=0) carry float16-like mantissas, so float16
    tolerances apply, as in MXNet 1.9.1.
    """
    dtype = np.dtype(getattr(dat, "dtype", np.asarray(dat).dtype))
    ctx = getattr(dat, "context", None)
    if dtype == np.float32 and _tf32_enabled(ctx):
        return np.dtype(np.float16)
    return dtype


def get_tolerance(dat, tol, default_tol):
    """tol when it is a number; else the entry for dat's effective dtype of tol (a dict
    by dtype) when it has one, else of default_tol."""
    if isinstance(tol, numbers.Number):
        return tol
    dtype = np.dtype(effective_dtype(dat))
    if tol and dtype in tol:
        return tol[dtype]
    return default_tol.get(dtype, 0)


def get_tols(x, y, rtol, atol):
    """(rtol, atol) for comparing x with y: the given ones, or the looser default of the
    two arrays' dtypes."""
    if isinstance(x, numbers.Number):
        x = np.array(x)
    if isinstance(y, numbers.Number):
        y = np.array(y)
    rtol = max(get_tolerance(x, rtol, default_rtols()),
               get_tolerance(y, rtol, default_rtols()))
    atol = max(get_tolerance(x, atol, default_atols()),
               get_tolerance(y, atol, default_atols()))
    return rtol, atol


def get_rtol(rtol=None, dtype=np.dtype(np.float64)):
    """rtol when given, else the default relative tolerance of dtype."""
    return default_rtols()[np.dtype(dtype)] if rtol is None else rtol


def get_atol(atol=None, dtype=np.dtype(np.float64)):
    """atol when given, else the default absolute tolerance of dtype."""
    return default_atols()[np.dtype(dtype)] if atol is None else atol


def get_etol(etol=None):
    """Allowed fraction of mismatching elements (0 unless given)."""
    return 0 if etol is None else etol


def _as_np(a):
    if hasattr(a, "asnumpy"):           # NDArray, mx.np.ndarray
        return a.asnumpy()
    return np.asarray(a)


# --------------------------------------------------------------------- random data


# --------------------------------------------------------------------- comparison

def same(a, b):
    """True when a and b are equal element by element (and in shape)."""
    return np.array_equal(_as_np(a), _as_np(b))


def checkShapes(a, b):  # noqa: N802  (MXNet's name)
    """Assert that a and b have the same shape."""
    if a.shape != b.shape:
        raise AssertionError(f"Shape mismatch: {a.shape} vs {b.shape}")


# Elements compared per step: the float64 temporaries of a comparison stay a few MB
# whatever the arrays' size (a whole-array isclose of two 512 MB float32 arrays needs
# about ten times their size).
_CHUNK = 1 << 20


def _close_mask(a, b, rtol, atol, equal_nan):
    """Boolean |a - b| <= atol + rtol * |b| per element (broadcast), computed in
    float64; operands of one shape a block of elements at a time."""
    def isclose(x, y):
        xf = x.astype(np.float64) if x.dtype.kind != "c" else x
        yf = y.astype(np.float64) if y.dtype.kind != "c" else y
        return np.isclose(xf, yf, rtol=rtol, atol=atol, equal_nan=equal_nan)

    if a.shape != b.shape or a.size <= _CHUNK:
        return isclose(a, b)
    close = np.empty(a.shape, dtype=bool)
    flat_a, flat_b, flat_c = a.reshape(-1), b.reshape(-1), close.reshape(-1)
    for i in range(0, a.size, _CHUNK):
        flat_c[i:i + _CHUNK] = isclose(flat_a[i:i + _CHUNK], flat_b[i:i + _CHUNK])
    return close


def almost_equal(a, b, rtol=None, atol=None, equal_nan=False, use_broadcast=True):
    """Whether |a - b| <= atol + rtol * |b| everywhere (dtype-default tolerances)."""
    rtol, atol = get_tols(a, b, rtol, atol)
    a, b = _as_np(a), _as_np(b)
    if not use_broadcast and a.shape != b.shape:
        return False
    try:
        return bool(_close_mask(a, b, rtol, atol, equal_nan).all())
    except ValueError:
        return False


def _find_max_violation(a, b, rtol, atol):
    """(index, ratio) of the element where |a - b| exceeds its tolerance the most."""
    af, bf = a.astype(np.float64), b.astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        err = np.abs(af - bf) / (atol + rtol * np.abs(bf))
    err = np.where(np.isnan(err), np.inf, err)
    if err.size == 0:
        return (), 0.0
    idx = np.unravel_index(np.argmax(err), err.shape)
    return idx, float(err[idx])


def locationError(a, b, index, names, maxError=False):  # noqa: N802,N803
    """Text naming the element at index of both arrays (for assertion messages)."""
    index = tuple(int(i) for i in np.atleast_1d(index)) if np.ndim(index) else index
    what = "Maximum error" if maxError else "Error"
    return (f"{what} at position {index}: {names[0]}={a[index]!r}, "
            f"{names[1]}={b[index]!r}")


def assert_almost_equal(a, b, rtol=None, atol=None, names=("a", "b"), equal_nan=False,
                        use_broadcast=True, mismatches=(10, 10)):
    """Assert |a - b| <= atol + rtol * |b| elementwise (dtype-default tolerances),
    reporting the worst element and the first mismatches."""
    rtol, atol = get_tols(a, b, rtol, atol)
    a, b = _as_np(a), _as_np(b)
    if not use_broadcast:
        checkShapes(a, b)
    try:
        close = _close_mask(a, b, rtol, atol, equal_nan)
    except ValueError as err:
        raise AssertionError(f"cannot compare {names[0]} {a.shape} with {names[1]} "
                             f"{b.shape}: {err}") from None
    if close.all():
        return
    a_b, b_b = np.broadcast_arrays(a, b)
    idx, ratio = _find_max_violation(a_b, b_b, rtol, atol)
    bad = np.argwhere(~close)
    shown = ", ".join(f"{tuple(int(i) for i in pos)}: {a_b[tuple(pos)]!r} vs "
                      f"{b_b[tuple(pos)]!r}" for pos in bad[:mismatches[0]])
    raise AssertionError(
        f"Items are not equal:\nError {ratio:.6g} exceeds tolerance rtol={rtol:.6g}, "
        f"atol={atol:.6g} ({len(bad)} of {close.size} elements differ).\n"
        f"Location of maximum error: {tuple(int(i) for i in idx)}, "
        f"{names[0]}={a_b[idx]!r}, {names[1]}={b_b[idx]!r}\nFirst mismatches: {shown}")


def assert_allclose(a, b, rtol=1e-07, atol=0, equal_nan=True):
    """numpy.testing-style allclose with MXNet's argument defaults."""
    assert_almost_equal(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)


def assert_almost_equal_with_err(a, b, rtol=None, atol=None, etol=None, names=("a", "b"),
                                 equal_nan=False, mismatches=(10, 10)):
    """Like assert_almost_equal, but up to a fraction etol of the elements may differ."""
    etol = get_etol(etol)
    if etol <= 0:
        return assert_almost_equal(a, b, rtol, atol, names, equal_nan,
                                   mismatches=mismatches)
    rtol, atol = get_tols(a, b, rtol, atol)
    a, b = _as_np(a), _as_np(b)
    close = _close_mask(a, b, rtol, atol, equal_nan)
    frac = float((~close).sum()) / max(close.size, 1)
    if frac > etol:
        idx, ratio = _find_max_violation(*np.broadcast_arrays(a, b), rtol, atol)
        raise AssertionError(f"{frac:.4g} of the elements differ (allowed {etol}); worst "
                             f"ratio {ratio:.4g} at {tuple(int(i) for i in idx)}")


def assert_almost_equal_ignore_nan(a, b, rtol=None, atol=None, names=("a", "b")):
    """assert_almost_equal after zeroing the positions that are NaN in either array."""
    a, b = np.copy(_as_np(a)), np.copy(_as_np(b))
    nan = np.logical_or(np.isnan(a), np.isnan(b))
    a[nan] = 0
    b[nan] = 0
    assert_almost_equal(a, b, rtol, atol, names)
