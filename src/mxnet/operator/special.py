"""Special functions for the operators, vectorised over any array module ``xp``
(NumPy or CuPy). NumPy has none of them and SciPy is not a dependency.

Two families:

- ``erf``, ``erfc``, ``erfinv``, ``gammaln``, ``gamma`` and ``digamma`` take and return
  float64 arrays; ``precise=True`` gives float64 accuracy, ``precise=False`` float32
  accuracy (about 1e-8 relative) at about half the cost (digamma is always precise).
  The elementwise operators use them, and GELU on float64.
- ``erfc_fast`` computes in float32 for float32 (and narrower) consumers that need
  speed more than the last digits: GELU's normal CDF.
"""
import math

import numpy as np

__all__ = ["erf", "erfc", "erfinv", "gammaln", "gamma", "digamma", "erfc_fast"]

_SQRT_PI = math.sqrt(math.pi)
_TWO_OVER_SQRT_PI = 2.0 / _SQRT_PI
_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)


def _erf_series(xp, x, terms):
    # erf(x) = 2/sqrt(pi) exp(-x^2) sum_n x (2x^2)^n / (2n+1)!!: positive terms, no
    # cancellation, converges fast for |x| below ~2.5.
    x2 = 2.0 * x * x
    term = x
    total = x
    for n in range(1, terms):
        term = term * x2 / (2 * n + 1)
        total = total + term
    return _TWO_OVER_SQRT_PI * xp.exp(-x * x) * total


def _erfc_fraction(xp, x, depth):
    # erfc(x) = exp(-x^2)/sqrt(pi) / (x + (1/2)/(x + 1/(x + (3/2)/(x + ...)))),
    # evaluated from a fixed depth; converges fast for x above ~2.
    f = x
    for k in range(depth, 0, -1):
        f = x + (0.5 * k) / f
    return xp.exp(-x * x) / (_SQRT_PI * f)


def _erf_pair(xp, a, precise):
    """(erf(a), erfc(a)) for a >= 0, each from the expansion accurate where a lies."""
    threshold, terms = (2.5, 40) if precise else (2.0, 20)
    small = a < threshold
    big = ~small                         # NaN lands here and stays NaN
    erf_v = xp.empty_like(a)
    erfc_v = xp.empty_like(a)
    s = _erf_series(xp, a[small], terms)
    erf_v[small] = s
    erfc_v[small] = 1.0 - s
    c = _erfc_fraction(xp, a[big], terms)
    erfc_v[big] = c
    erf_v[big] = 1.0 - c
    return erf_v, erfc_v, small


def erf(xp, x, precise=True):
    """The error function of a float64 array."""
    with np.errstate(all="ignore"):
        return xp.copysign(_erf_pair(xp, xp.abs(x), precise)[0], x)


def erfc(xp, x, precise=True):
    """The complementary error function of a float64 array."""
    with np.errstate(all="ignore"):
        c = _erf_pair(xp, xp.abs(x), precise)[1]
        return xp.where(x < 0, 2.0 - c, c)


def erfinv(xp, x, precise=True):
    """The inverse error function: a closed-form first guess (Winitzki's), then
    Halley steps on erf(y) = |x| (on erfc(y) = 1 - |x| in the tail, where 1 - |x| is
    exact and erf would have lost the digits)."""
    with np.errstate(all="ignore"):
        a = xp.abs(x)
        k = 0.147
        ln = xp.log1p(-a) + xp.log1p(a)                 # log(1 - a^2)
        t = 2.0 / (math.pi * k) + 0.5 * ln
        y = xp.sqrt(xp.sqrt(t * t - ln / k) - t)
        y = xp.where(a < 1e-4, a * (0.5 * _SQRT_PI), y)  # the guess cancels for tiny a
        one_minus_a = 1.0 - a
        for _ in range(3 if precise else 2):
            erf_v, erfc_v, small = _erf_pair(xp, y, precise)
            resid = xp.where(small, erf_v - a, one_minus_a - erfc_v)
            u = resid / (_TWO_OVER_SQRT_PI * xp.exp(-y * y))
            y = y - u / (1.0 + y * u)
        y = xp.where(a == 1.0, np.inf, y)
        y = xp.where(a > 1.0, np.nan, y)
        return xp.copysign(y, x)


# Lanczos approximation, g = 7, nine terms (the widely published coefficient set;
# about 1e-15 relative accuracy for Gamma on the right half-plane).
_LANCZOS = (0.99999999999980993, 676.5203681218851, -1259.1392167224028,
            771.32342877765313, -176.61502916214059, 12.507343278686905,
            -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7)


def _lgamma_right(xp, x):
    """log Gamma(x) for x >= 0.5."""
    z = x - 1.0
    s = _LANCZOS[0]
    for k in range(1, len(_LANCZOS)):
        s = s + _LANCZOS[k] / (z + k)
    t = z + 7.5
    return _HALF_LOG_2PI + (z + 0.5) * xp.log(t) - t + xp.log(s)


def _reduce_half(xp, x):
    """x minus its nearest integer (exact), for sin(pi x) and tan(pi x) up to sign."""
    return x - xp.rint(x)


def gammaln(xp, x, precise=True):
    """log|Gamma(x)| (inf at 0 and the negative integers); float64-accurate either way."""
    with np.errstate(all="ignore"):
        left = x < 0.5
        out = xp.empty_like(x)
        out[~left] = _lgamma_right(xp, x[~left])
        xl = x[left]
        # Reflection: Gamma(x) Gamma(1 - x) = pi / sin(pi x).
        sin_pi = xp.abs(xp.sin(math.pi * _reduce_half(xp, xl)))
        out[left] = xp.log(math.pi / sin_pi) - _lgamma_right(xp, 1.0 - xl)
        return xp.where(x == np.inf, np.inf, out)


def gamma(xp, x, precise=True):
    """Gamma(x): exp(gammaln) with the sign of the left half-line; NaN at the negative
    integers and signed infinity at +-0, as C's tgamma."""
    with np.errstate(all="ignore"):
        mag = xp.exp(gammaln(xp, x))
        fl = xp.floor(x)
        negative = (x < 0) & (xp.mod(fl, 2.0) == 1.0)
        out = xp.where(negative, -mag, mag)
        out = xp.where((x < 0) & (x == fl), np.nan, out)
        return xp.where(x == 0, xp.copysign(np.inf, x), out)


def digamma(xp, x):
    """psi(x) = d/dx log Gamma(x): shift to x + 6 and use the asymptotic series;
    reflection psi(x) = psi(1 - x) - pi / tan(pi x) for x < 0.5. At the poles (0 and the
    negative integers) it is +inf, as MXNet's (Cephes') psi returns."""
    with np.errstate(all="ignore"):
        left = x < 0.5
        xr = xp.where(left, 1.0 - x, x)
        shift = 0.0
        for k in range(6):
            shift = shift + 1.0 / (xr + k)
        z = xr + 6.0
        iz2 = 1.0 / (z * z)
        series = iz2 * (1 / 12 - iz2 * (1 / 120 - iz2 * (1 / 252 - iz2 * (
            1 / 240 - iz2 * (1 / 132 - iz2 * (691 / 32760 - iz2 / 12))))))
        psi = xp.log(z) - 0.5 / z - series - shift
        refl = math.pi / xp.tan(math.pi * _reduce_half(xp, x))
        pole = (x <= 0) & (x == xp.floor(x))
        return xp.where(pole, math.inf, xp.where(left, psi - refl, psi))


# Chebyshev fit of erfc (Numerical Recipes' erfcc): fractional error below 1.2e-7 over
# the whole line, so neither tail loses digits to cancellation.
_ERFC_FIT = (0.17087277, -0.82215223, 1.48851587, -1.13520398, 0.27886807, -0.18628806,
             0.09678418, 0.37409196, 1.00002368, -1.26551223)


def erfc_fast(xp, x):
    """erfc of an array, computed in float32: relative error below 1e-5 where erfc is
    above float32's smallest normal, absolute error about an ulp of 2; float32 result."""
    f32 = np.float32
    z = xp.abs(x).astype(f32, copy=False)     # fresh either way: worked on in place
    t = z * f32(0.5)
    t += 1
    xp.reciprocal(t, out=t)
    poly = t * f32(_ERFC_FIT[0])
    for c in _ERFC_FIT[1:-1]:
        poly += f32(c)
        poly *= t
    poly += f32(_ERFC_FIT[-1])
    z *= z
    poly -= z
    with np.errstate(under="ignore"):
        xp.exp(poly, out=poly)
    poly *= t
    return xp.where(x < 0, f32(2) - poly, poly)
