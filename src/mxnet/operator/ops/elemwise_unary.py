"""Unary elementwise operators: rounding, powers, exponentials and logarithms,
trigonometry, activations, special functions (erf, erfinv, gamma, gammaln), clip,
smooth_l1, BlockGrad/make_loss/MakeLoss and zeros_like/ones_like.

MXNet keeps the input dtype for every one of them: on integer arrays a floating
function is computed in floating point and truncated back (``exp`` of int32 [1, 2]
is [2, 7]). Rounding operators are the identity on integers.
"""
import math

import numpy as np

from ..params import Bool, Enum, Float, FloatOrNone, Schema
from ..registry import Op, register
from ..simple import unary
from ..special import digamma, erf, erfinv, gamma, gammaln

_SQRT_PI = math.sqrt(math.pi)
_TWO_OVER_SQRT_PI = 2.0 / _SQRT_PI


# ---------------------------------------------------------------------------------
# Forward helpers
# ---------------------------------------------------------------------------------
def _keep(y, x):
    """y in x's dtype (NumPy promotes integer inputs of float functions to float64)."""
    return y if y.dtype == x.dtype else y.astype(x.dtype)


def _work(x):
    """x in the precision MXNet computes a composite formula in: integer and bool
    arrays in double (so -x cannot wrap and nothing rounds before the final
    truncation), float16 in float32 (rounded once at the end); others as they are."""
    if x.dtype.kind in "biu":
        return x.astype(np.float64)
    return x.astype(np.float32) if x.dtype == np.float16 else x


def _math(fname):
    """Forward of a NumPy/CuPy function that keeps MXNet's dtype rule."""
    def forward(xp, x, p, out=None):
        if out is not None and x.dtype.kind == "f":     # same dtype: straight into out
            return getattr(xp, fname)(x, out=out)
        y = getattr(xp, fname)(x)
        if y.dtype.kind == "f" and x.dtype.kind != "f" and y.dtype.itemsize < 8:
            # NumPy computes int8/uint8/int16 in float16/float32; MXNet in double
            # (exp of int8 9 is 8103 -> -89, not float16's 8104 -> -88).
            y = getattr(xp, fname)(x.astype(np.float64))
        return y if y.dtype == x.dtype else y.astype(x.dtype)
    return forward


def _rounded(fname):
    """Forward of a function MXNet takes from the C library's float version (expf,
    logf, log2f, sinf, cosf), which rounds correctly in nearly all cases. NumPy's
    vectorised float32 loops may be an ulp off, so float32 is computed in float64 and
    rounded once; other dtypes follow ``_math``."""
    plain = _math(fname)

    def forward(xp, x, p, out=None):
        if x.dtype != np.float32:
            return plain(xp, x, p, out=out)
        y = getattr(xp, fname)(x, dtype=np.float64)
        if out is None:
            return y.astype(np.float32)
        out[...] = y
        return out
    return forward


def _special(fn, integral=False):
    """Forward of one of the float64 special functions above. ``integral``: fn is an
    integer at integer points (gamma), so on integer arrays the float64 value is
    rounded before the truncating cast (gamma(1) is 1, not 0.9999999999999998 -> 0)."""
    def forward(xp, x, p):
        y = fn(xp, x.astype(np.float64), x.dtype.itemsize >= 8)
        if integral and x.dtype.kind in "biu":
            y = xp.rint(y)
        return y.astype(x.dtype, copy=False)
    return forward


def _rounding(fname):
    """Rounding is the identity on integer arrays."""
    f = _math(fname)

    def forward(xp, x, p):
        return f(xp, x, p) if x.dtype.kind == "f" else x.copy()
    return forward


def _round_half_away(xp, x, p):
    # MXNet's round sends halves away from zero (C's round), unlike NumPy's rint.
    if x.dtype.kind != "f":
        return x.copy()
    t = xp.trunc(x)
    return xp.where(xp.abs(x - t) >= 0.5, t + xp.sign(x), t)


def _rint_half_down(xp, x, p):
    # MXNet's rint picks the nearer of floor and ceil, and floor on a tie
    # (rint(0.5) = 0, rint(1.5) = 1, rint(-0.5) = -1).
    if x.dtype.kind != "f":
        return x.copy()
    lo, hi = xp.floor(x), xp.ceil(x)
    return xp.where(x - lo > hi - x, hi, lo)


def _sign(xp, x, p):
    y = xp.sign(x)
    if y.dtype.kind == "f":
        y[y != y] = 0           # MXNet: sign(NaN) = 0
    return y


def _sigmoid(xp, x, p, out=None):
    with np.errstate(over="ignore"):
        if out is not None and x.dtype.kind == "f" and out.dtype == x.dtype \
                and x.dtype != np.float16:
            # the same operations, step by step in the destination (it may be x itself)
            xp.negative(x, out=out)
            xp.exp(out, out=out)
            out += 1
            return xp.reciprocal(out, out=out)
        return _keep(1 / (1 + xp.exp(-_work(x))), x)


def _sigmoid_gradient(xp, g, y, p, out=None):
    """g * y * (1 - y), in that order (into ``out``, which may be g itself)."""
    if out is None:
        return g * y * (1 - y)
    xp.multiply(g, y, out=out)
    out *= 1 - y
    return out


def _tanh_gradient(xp, g, y, p, out=None):
    """g * (1 - y * y) (into ``out``, which may be g itself)."""
    t = 1 - y * y
    return xp.multiply(g, t, out=out) if out is not None else g * t


def _zero_gradient(xp, g, value, p):
    return xp.zeros_like(g)


def _typed(dtype, value):
    """A Python number as a scalar of dtype, wrapping like a C cast when out of range."""
    try:
        return dtype.type(value)
    except (OverflowError, ValueError):
        with np.errstate(all="ignore"):
            return np.array(value).astype(dtype)[()]


_DEG = 180.0 / math.pi
_RAD = math.pi / 180.0
_LN2 = math.log(2.0)
_LN10 = math.log(10.0)


def _mish_grad(xp, g, x, p):
    with np.errstate(over="ignore"):
        t = xp.tanh(xp.logaddexp(0, x))
        return g * (t + x * (1 - t * t) / (1 + xp.exp(-x)))


def _gamma_grad(xp, g, x, p):
    x64 = x.astype(np.float64)
    return g * (gamma(xp, x64) * digamma(xp, x64)).astype(g.dtype)


# ---------------------------------------------------------------------------------
# The table: name -> (forward, gradient, what the gradient reads, aliases)
# gradient(xp, out_grad, value, p) where value is the input ("in") or output ("out").
# ---------------------------------------------------------------------------------
_Z = dict(gradient=_zero_gradient, uses="none", zero_grad=True)

_TABLE = {
    # --- signs and rounding --------------------------------------------------------
    "abs": dict(forward=_math("abs"), gradient=lambda xp, g, x, p: g * xp.sign(x)),
    "sign": dict(forward=_sign, **_Z),
    "round": dict(forward=_round_half_away, **_Z),
    "rint": dict(forward=_rint_half_down, **_Z),
    "ceil": dict(forward=_rounding("ceil"), **_Z),
    "floor": dict(forward=_rounding("floor"), **_Z),
    "trunc": dict(forward=_rounding("trunc"), **_Z),
    "fix": dict(forward=_rounding("trunc"), **_Z),
    "negative": dict(forward=_math("negative"), gradient=lambda xp, g, v, p: -g,
                     uses="none"),
    "reciprocal": dict(forward=_math("reciprocal"),
                       gradient=lambda xp, g, x, p: -g / (x * x)),
    # --- powers --------------------------------------------------------------------
    "square": dict(forward=_math("square"), gradient=lambda xp, g, x, p: 2 * x * g),
    "sqrt": dict(forward=_math("sqrt"), gradient=lambda xp, g, y, p: g * 0.5 / y,
                 uses="out"),
    "rsqrt": dict(forward=lambda xp, x, p: _keep(1 / xp.sqrt(_work(x)), x),
                  gradient=lambda xp, g, y, p: g * -0.5 * y * y * y, uses="out"),
    "cbrt": dict(forward=_math("cbrt"), gradient=lambda xp, g, y, p: g / (3 * y * y),
                 uses="out"),
    "rcbrt": dict(forward=lambda xp, x, p: _keep(1 / xp.cbrt(_work(x)), x),
                  gradient=lambda xp, g, y, p: g * (-1 / 3) * (y * y) * (y * y),
                  uses="out"),
    # --- exponentials and logarithms ---------------------------------------------
    "exp": dict(forward=_rounded("exp"), gradient=lambda xp, g, y, p: g * y, uses="out"),
    "expm1": dict(forward=_math("expm1"), gradient=lambda xp, g, y, p: g * (y + 1),
                  uses="out"),
    "log": dict(forward=_rounded("log"), gradient=lambda xp, g, x, p: g / x),
    "log2": dict(forward=_rounded("log2"), gradient=lambda xp, g, x, p: g / (x * _LN2)),
    "log10": dict(forward=_math("log10"), gradient=lambda xp, g, x, p: g / (x * _LN10)),
    "log1p": dict(forward=_math("log1p"), gradient=lambda xp, g, x, p: g / (1 + x)),
    # --- trigonometry ----------------------------------------------------------------
    "sin": dict(forward=_rounded("sin"), gradient=lambda xp, g, x, p: g * xp.cos(x)),
    "cos": dict(forward=_rounded("cos"), gradient=lambda xp, g, x, p: -g * xp.sin(x)),
    "tan": dict(forward=_math("tan"), gradient=lambda xp, g, y, p: g * (1 + y * y),
                uses="out"),
    "arcsin": dict(forward=_math("arcsin"),
                   gradient=lambda xp, g, x, p: g / xp.sqrt(1 - x * x)),
    "arccos": dict(forward=_math("arccos"),
                   gradient=lambda xp, g, x, p: -g / xp.sqrt(1 - x * x)),
    "arctan": dict(forward=_math("arctan"), gradient=lambda xp, g, x, p: g / (1 + x * x)),
    "sinh": dict(forward=_math("sinh"), gradient=lambda xp, g, x, p: g * xp.cosh(x)),
    "cosh": dict(forward=_math("cosh"), gradient=lambda xp, g, x, p: g * xp.sinh(x)),
    "tanh": dict(forward=_math("tanh"), gradient=_tanh_gradient, uses="out"),
    "arcsinh": dict(forward=_math("arcsinh"),
                    gradient=lambda xp, g, x, p: g / xp.sqrt(x * x + 1)),
    "arccosh": dict(forward=_math("arccosh"),
                    gradient=lambda xp, g, x, p: g / xp.sqrt(x * x - 1)),
    "arctanh": dict(forward=_math("arctanh"), gradient=lambda xp, g, x, p: g / (1 - x * x)),
    "degrees": dict(forward=_math("degrees"), gradient=lambda xp, g, v, p: g * _DEG,
                    uses="none"),
    "radians": dict(forward=_math("radians"), gradient=lambda xp, g, v, p: g * _RAD,
                    uses="none"),
    # --- activations -------------------------------------------------------------------
    "relu": dict(forward=lambda xp, x, p, out=None: xp.maximum(x, 0, out=out),
                 # sign(y): 1 where y > 0, 0 at 0, NaN where x was NaN (as MXNet's relu)
                 gradient=lambda xp, g, y, p, out=None: xp.multiply(g, xp.sign(y), out=out),
                 uses="out"),
    "sigmoid": dict(forward=_sigmoid, gradient=_sigmoid_gradient, uses="out"),
    "log_sigmoid": dict(forward=lambda xp, x, p: _keep(-xp.logaddexp(0, -_work(x)), x),
                        gradient=lambda xp, g, y, p: g * (1 - xp.exp(y)), uses="out"),
    "mish": dict(forward=lambda xp, x, p: _keep(
        _work(x) * xp.tanh(xp.logaddexp(0, _work(x))), x),
                 gradient=_mish_grad),
    "softsign": dict(forward=lambda xp, x, p: _keep(_work(x) / (1 + xp.abs(_work(x))), x),
                     gradient=lambda xp, g, x, p: g / ((1 + xp.abs(x)) ** 2)),
    # --- special functions -----------------------------------------------------------
    "erf": dict(forward=_special(erf),
                gradient=lambda xp, g, x, p: g * (_TWO_OVER_SQRT_PI * xp.exp(-x * x))),
    "erfinv": dict(forward=_special(erfinv),
                   gradient=lambda xp, g, y, p: g * (0.5 * _SQRT_PI * xp.exp(y * y)),
                   uses="out"),
    "gamma": dict(forward=_special(gamma, integral=True), gradient=_gamma_grad),
    "gammaln": dict(forward=_special(gammaln),
                    gradient=lambda xp, g, x, p:
                    g * digamma(xp, x.astype(np.float64)).astype(g.dtype)),
    # --- logic and constants ----------------------------------------------------------
    "logical_not": dict(forward=lambda xp, x, p: (x == 0).astype(x.dtype), **_Z),
    "zeros_like": dict(forward=lambda xp, x, p: xp.zeros_like(x), inplace=False, **_Z),
    "ones_like": dict(forward=lambda xp, x, p: xp.ones_like(x), inplace=False, **_Z),
    "BlockGrad": dict(forward=lambda xp, x, p: x.copy(), aliases=("stop_gradient",), **_Z),
    # The loss head: its gradient is ones whatever the head gradient is.
    "make_loss": dict(forward=lambda xp, x, p: x.copy(),
                      gradient=lambda xp, g, v, p: xp.ones_like(g), uses="none",
                      is_loss=True),
}

_DOCS = {
    "abs": "Elementwise absolute value.", "sign": "Elementwise sign (0 at 0 and NaN).",
    "round": "Round to the nearest integer, halves away from zero.",
    "rint": "Round to the nearest integer, halves down (toward -inf).",
    "fix": "Round toward zero.", "trunc": "Round toward zero.",
    "relu": "Rectified linear unit, max(x, 0).", "sigmoid": "Logistic sigmoid 1/(1+exp(-x)).",
    "log_sigmoid": "log(sigmoid(x)).", "mish": "x * tanh(softplus(x)).",
    "softsign": "x / (1 + |x|).", "erf": "The Gauss error function.",
    "erfinv": "The inverse of erf.", "gamma": "The gamma function.",
    "gammaln": "log|gamma(x)|.", "rsqrt": "1/sqrt(x).", "rcbrt": "1/cbrt(x).",
    "logical_not": "1 where x == 0, else 0 (in the input dtype).",
    "BlockGrad": "Pass the input through; no gradient flows back (alias stop_gradient).",
    "make_loss": "Mark the input as a loss: identity forward, gradient of ones.",
    "zeros_like": "An array of zeros with the input's shape and dtype.",
    "ones_like": "An array of ones with the input's shape and dtype.",
}

for _name, _spec in _TABLE.items():
    unary(_name, doc=_DOCS.get(_name, f"Elementwise {_name}."), **_spec)


# ---------------------------------------------------------------------------------
# Operators with parameters
# ---------------------------------------------------------------------------------
def _clip_bounds(x, p):
    return _typed(x.dtype, p["a_min"]), _typed(x.dtype, p["a_max"])


def _clip(xp, x, p):
    lo, hi = _clip_bounds(x, p)
    if lo <= hi:
        return xp.clip(x, lo, hi)
    # Reversed bounds: MXNet tests the upper bound first.
    return xp.where(x > hi, hi, xp.where(x < lo, lo, x))


def _clip_grad(xp, g, x, p):
    lo, hi = _clip_bounds(x, p)
    return g * ((x >= lo) & (x <= hi))


unary("clip", forward=_clip, gradient=_clip_grad, uses="in",
      params=Schema(a_min=Float(), a_max=Float()),
      doc="Clip values into [a_min, a_max]; the gradient passes where a_min <= x <= a_max.")


def _smooth_l1(xp, x, p):
    s2 = p["scalar"] * p["scalar"]
    ax = xp.abs(x)
    return _keep(xp.where(ax < 1.0 / s2, (0.5 * s2) * x * x, ax - 0.5 / s2), x)


def _smooth_l1_grad(xp, g, x, p):
    s2 = p["scalar"] * p["scalar"]
    return g * xp.where(xp.abs(x) < 1.0 / s2, s2 * x, xp.sign(x))


# seed 002's SimpleOp example: f(x) = 0.5 (sigma x)^2 if |x| < 1/sigma^2 else
# |x| - 0.5/sigma^2, with sigma the ``scalar`` parameter.
unary("smooth_l1", forward=_smooth_l1, gradient=_smooth_l1_grad, uses="in", scalar=1.0,
      doc="Smooth L1 loss with sigma = scalar: 0.5*(sigma*x)^2 where |x| < 1/sigma^2, "
          "|x| - 0.5/sigma^2 elsewhere.")


# y = clip(alpha * x + beta, 0, 1); the gradient is alpha where 0 < alpha * x + beta < 1.
unary("hard_sigmoid", params=Schema(alpha=Float(0.2), beta=Float(0.5)), uses="in",
      forward=lambda xp, x, p, out=None: xp.clip(x * p.alpha + p.beta, 0, 1, out=out),
      gradient=lambda xp, g, x, p: (g * p.alpha) * (xp.abs(x * p.alpha + p.beta - 0.5) < 0.5),
      doc="Hard sigmoid: clip(alpha * x + beta, 0, 1).")

# NumPy's nan_to_num (copy=False is mx.np's: it writes into x); grad passes where finite.
unary("_npi_nan_to_num", params=Schema(copy=Bool(True), nan=Float(0.0), posinf=FloatOrNone(),
                                       neginf=FloatOrNone()), uses="in",
      forward=lambda xp, x, p: xp.nan_to_num(x, nan=p.nan, posinf=p.posinf, neginf=p.neginf),
      gradient=lambda xp, g, x, p: g * xp.isfinite(x), doc="NumPy's nan_to_num.")


@register
class MakeLoss(Op):
    """Mark the input as a loss (legacy form of ``make_loss``): identity forward; the
    gradient is ``grad_scale`` divided by the batch size (``normalization='batch'``)
    or by the number of outputs above ``valid_thresh`` (``'valid'``)."""
    name = "MakeLoss"
    is_loss = True
    params = Schema(grad_scale=Float(1.0), valid_thresh=Float(0.0),
                    normalization=Enum(("null", "batch", "valid"), "null"))
    backward_uses = ("out_grad", "out_data")
    inplace = ((0, 0),)

    def forward(self, ctx, p, inputs, aux):
        return [inputs[0].copy()]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux):
        xp, g = ctx.xp, out_grads[0]
        scale = p.grad_scale
        if p.normalization == "batch":
            scale = scale / g.shape[0]
        elif p.normalization == "valid":
            valid = xp.sum(outputs[0] > p.valid_thresh)
            scale = scale / xp.maximum(valid, 1).astype(g.dtype)
        return [xp.full(g.shape, 1, dtype=g.dtype) * scale]

