"""Functions ``mx.np`` takes from official NumPy, computed on the host, as MXNet 1.9.1
does for its "fallback" list (set, polynomial, histogram, nan-aware and financial
functions...): the mx.np arrays among the arguments are copied to NumPy, NumPy
computes, and array results come back as ``mx.np.ndarray`` on the first input's
context (keeping NumPy's result dtype); scalars, dtypes and booleans come back as
NumPy gives them. No gradient flows through these, as in MXNet. Called without any mx
array among its arguments, such a function returns NumPy's result unchanged.

The same conversion serves ``ndarray.__array_function__``/``__array_ufunc__``: an
official NumPy function called on mx.np arrays that ``mx.np`` does not define runs here.
"""
import functools

import numpy as _onp

from ..ndarray.ndarray import NDArray
from .multiarray import same_sequence

# MXNet's ``np.fallback.__all__`` lists the fallback names (filled in at the end)
__all__ = []


def to_host(x):
    """mx arrays (nested in lists, tuples and dicts) as NumPy arrays."""
    if isinstance(x, NDArray):
        return x.asnumpy()
    if isinstance(x, (list, tuple)):
        return same_sequence(x, [to_host(v) for v in x])
    if isinstance(x, dict):
        return {k: to_host(v) for k, v in x.items()}
    return x


def _first_ctx(x):
    if isinstance(x, NDArray):
        return x.context
    if isinstance(x, (list, tuple)):
        for v in x:
            c = _first_ctx(v)
            if c is not None:
                return c
    if isinstance(x, dict):
        return _first_ctx(list(x.values()))
    return None


def from_host(x, ctx=None):
    """NumPy arrays (nested in lists and tuples) as mx.np arrays on ctx."""
    if isinstance(x, _onp.ndarray):
        from .creation import array
        if x.dtype.kind in "OUSV":
            return x
        return array(x, dtype=x.dtype, ctx=ctx)
    if isinstance(x, (list, tuple)):       # NumPy's named results (EigResult...) included
        return same_sequence(x, [from_host(v, ctx) for v in x])
    return x


def call_on_host(func, args, kwargs):
    """func(*args, **kwargs) with mx arrays copied to NumPy and array results copied
    back to the context of the first mx array argument."""
    from ..context import current_context
    ctx = _first_ctx(args) or _first_ctx(kwargs) or current_context()
    out = func(*to_host(args), **to_host(kwargs))
    return from_host(out, ctx)


def fallback(func, name=None):
    """An mx.np function computing ``func`` (official NumPy's) on the host."""
    @functools.wraps(func)
    def fn(*args, **kwargs):
        if _first_ctx(args) is None and _first_ctx(kwargs) is None:
            # no mx array among the arguments: NumPy's own result, as MXNet returns it
            return func(*args, **kwargs)
        return call_on_host(func, args, kwargs)
    fn.__name__ = name or getattr(func, "__name__", "fallback")
    fn.__doc__ = (f"``numpy.{fn.__name__}`` computed on the host (MXNet's fallback): "
                  "mx.np arrays in, mx.np arrays out, no gradient.")
    fn._np_fallback = func
    return fn


# --- NumPy 1.x functions that NumPy 2 removed (MXNet 1.9.1 lists them) -----------------
def _alltrue(a, axis=None, out=None, keepdims=False):
    return _onp.all(a, axis=axis, out=out, keepdims=keepdims)


def _msort(a):
    return _onp.sort(a, axis=0)


def _in1d(ar1, ar2, assume_unique=False, invert=False):
    return _onp.isin(_onp.ravel(ar1), ar2, assume_unique=assume_unique, invert=invert)


def _trapz(y, x=None, dx=1.0, axis=-1):
    return _onp.trapezoid(y, x=x, dx=dx, axis=axis)


# The financial functions (NumPy < 1.20, now numpy_financial), with 'end'=0/'begin'=1.
def _when(when):
    return {"end": 0, "begin": 1}.get(when, when)


def _npv(rate, values):
    values = _onp.atleast_2d(values)
    t = _onp.arange(values.shape[1])
    res = (values / (1 + rate) ** t).sum(axis=1)
    return res[0] if res.shape == (1,) else res


def _pmt(rate, nper, pv, fv=0, when="end"):
    when = _when(when)
    temp = (1 + rate) ** nper
    fact = _onp.where(rate == 0, nper, (1 + rate * when) * (temp - 1) / _onp.where(
        rate == 0, 1, rate))
    return -(fv + pv * temp) / fact


def _fv(rate, nper, pmt, pv, when="end"):
    when = _when(when)
    temp = (1 + rate) ** nper
    return _onp.where(rate == 0, -(pv + pmt * nper),
                      -pv * temp - pmt * (1 + rate * when) / _onp.where(rate == 0, 1, rate)
                      * (temp - 1))


def _ipmt(rate, per, nper, pv, fv=0, when="end"):
    when = _when(when)
    total = _pmt(rate, nper, pv, fv, when)
    ipmt = _fv(rate, per - 1, total, pv, when) * rate
    if when == 1:
        ipmt = _onp.where(per == 1, 0, ipmt / (1 + rate))
    return ipmt


def _ppmt(rate, per, nper, pv, fv=0, when="end"):
    return _pmt(rate, nper, pv, fv, when) - _ipmt(rate, per, nper, pv, fv, when)


def _pv(rate, nper, pmt, fv=0, when="end"):
    when = _when(when)
    temp = (1 + rate) ** nper
    fact = _onp.where(rate == 0, nper, (1 + rate * when) * (temp - 1) / _onp.where(
        rate == 0, 1, rate))
    return -(fv + pmt * fact) / temp


def _rate(nper, pmt, pv, fv, when="end", guess=None, tol=None, maxiter=100):
    """Interest rate per period, by Newton's method (nan when it does not converge)."""
    when = _when(when)
    rn = 0.1 if guess is None else guess
    tol = 1e-6 if tol is None else tol
    for _ in range(maxiter):
        t1 = (rn + 1) ** nper
        t2 = (rn + 1) ** (nper - 1)
        g = fv + t1 * pv + pmt * (t1 - 1) * (rn * when + 1) / rn
        dg = nper * t2 * pv - pmt * (t1 - 1) * (rn * when + 1) / rn ** 2 + \
            nper * pmt * t2 * (rn * when + 1) / rn + pmt * (t1 - 1) * when / rn
        step = g / dg
        rn = rn - step
        if _onp.all(_onp.abs(step) < tol):
            return rn
    return _onp.nan


def _mirr(values, finance_rate, reinvest_rate):
    values = _onp.asarray(values)
    n = values.size
    pos, neg = values > 0, values < 0
    if not (pos.any() and neg.any()):
        return _onp.nan
    numer = _onp.abs(_npv(reinvest_rate, values * pos))
    denom = _onp.abs(_npv(finance_rate, values * neg))
    return (numer / denom) ** (1 / (n - 1)) * (1 + reinvest_rate) - 1


_REPLACED = {"alltrue": _alltrue, "msort": _msort, "in1d": _in1d, "trapz": _trapz,
             "npv": _npv, "pv": _pv, "ppmt": _ppmt, "rate": _rate, "mirr": _mirr}

# MXNet 1.9.1's mx.np fallback list (the names it serves from official NumPy)
FALLBACK_NAMES = (
    "allclose", "alltrue", "apply_along_axis", "apply_over_axes", "argpartition",
    "argwhere", "array_equal", "array_equiv", "choose", "compress", "corrcoef", "correlate",
    "count_nonzero", "cov", "digitize", "divmod", "extract", "flatnonzero", "float_power",
    "frexp", "heaviside", "histogram2d", "histogram_bin_edges", "histogramdd", "i0", "in1d",
    "interp", "intersect1d", "isclose", "isin", "ix_", "lexsort", "min_scalar_type", "mirr",
    "modf", "msort", "nanargmax", "nanargmin", "nancumprod", "nancumsum", "nanmax",
    "nanmedian", "nanmin", "nanpercentile", "nanprod", "nanquantile", "npv", "packbits",
    "partition", "piecewise", "poly", "polyadd", "polydiv", "polyfit", "polyint", "polymul",
    "polysub", "positive", "ppmt", "promote_types", "ptp", "pv", "rate", "real", "rollaxis",
    "roots", "select", "setdiff1d", "setxor1d", "signbit", "spacing", "take_along_axis",
    "trapz", "tril_indices_from", "trim_zeros", "triu_indices_from", "union1d",
    "unpackbits", "unwrap", "vander")


def make_all():
    """{name: host-computed function} for every fallback name."""
    return {n: fallback(_REPLACED.get(n) or getattr(_onp, n), n) for n in FALLBACK_NAMES}


globals().update(make_all())
__all__ = list(FALLBACK_NAMES)
