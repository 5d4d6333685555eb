"""Activation functions: ``Activation`` (relu, sigmoid, tanh, softrelu, softsign) and
``LeakyReLU`` (leaky, prelu, rrelu, elu, selu, gelu).

Gradients follow MXNet 1.9.1 exactly, including one known quirk: selu's backward for
x <= 0 is ``lambda * (y + alpha)`` (y the output), not the true derivative.
"""
import math

import numpy as np

from .. import special
from ..params import Enum, Float, Schema
from ..registry import Op, ShapeError, register
from .convolution import same_dtype

__all__ = ["Activation", "LeakyReLU"]

_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_LAMBDA = 1.0507009873554804934193349852946
_SQRT_HALF = 1.0 / math.sqrt(2.0)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


def _sigmoid(xp, x):
    # 1 / (1 + exp(-x)): exp overflows to inf for very negative x, which still gives 0.
    with np.errstate(over="ignore"):
        y = xp.exp(-x)
    y += 1
    return xp.reciprocal(y, out=y)


# --- Activation ---------------------------------------------------------------------
# forward(xp, x, out) -> y, gradient(xp, g, y, out) -> dx, writing into out when it is
# not None (out may be x's, or g's, own buffer: read before writing). Every gradient
# reads only the output, which is why Activation can run in place in an executor.
def _relu(xp, x, out=None):
    return xp.maximum(x, 0, out=out)


def _relu_grad(xp, g, y, out=None):
    return xp.multiply(g, y > 0, out=out)


def _sigmoid_out(xp, x, out=None):
    if out is None:
        return _sigmoid(xp, x)
    xp.negative(x, out=out)
    with np.errstate(over="ignore"):
        xp.exp(out, out=out)
    out += 1
    return xp.reciprocal(out, out=out)


def _sigmoid_grad(xp, g, y, out=None):
    return xp.multiply(g, y * (1 - y), out=out)


def _tanh_grad(xp, g, y, out=None):
    return xp.multiply(g, 1 - y * y, out=out)


def _softrelu(xp, x, out=None):
    return xp.logaddexp(x, 0).astype(x.dtype, copy=False)


def _softrelu_grad(xp, g, y, out=None):
    # d/dx log(1 + e^x) = sigmoid(x) = 1 - exp(-y); -expm1 keeps precision for small y.
    return xp.multiply(g, -xp.expm1(-y), out=out)


def _softsign(xp, x, out=None):
    return xp.divide(x, 1 + xp.abs(x), out=out)


def _softsign_grad(xp, g, y, out=None):
    # 1 / (1 + |x|) == 1 - |y|
    d = 1 - xp.abs(y)
    return xp.multiply(g, d * d, out=out)


_ACTIVATIONS = {
    "relu": (_relu, _relu_grad),
    "sigmoid": (_sigmoid_out, _sigmoid_grad),
    "tanh": (lambda xp, x, out=None: xp.tanh(x, out=out), _tanh_grad),
    "softrelu": (_softrelu, _softrelu_grad),
    "softsign": (_softsign, _softsign_grad),
}


@register
class Activation(Op):
    """Elementwise activation ``act_type``: relu, sigmoid, tanh, softrelu
    (log(1 + exp(x))) or softsign (x / (1 + |x|))."""
    name = "Activation"
    float_only = True
    named_inputs = False
    params = Schema(act_type=Enum(tuple(_ACTIVATIONS)))
    backward_uses = ("out_grad", "out_data")
    inplace = ((0, 0),)
    writes_outputs = True

    def infer_type(self, p, in_types):
        t = in_types[0]
        return [t], [t], []

    def forward(self, ctx, p, inputs, aux, out=None):
        return [_ACTIVATIONS[p.act_type][0](ctx.xp, inputs[0],
                                            None if out is None else out[0])]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux, in_grad=None):
        return [_ACTIVATIONS[p.act_type][1](ctx.xp, out_grads[0], outputs[0],
                                            None if in_grad is None else in_grad[0])]


# --- LeakyReLU ------------------------------------------------------------------------
def _gelu(xp, x):
    # x * Phi(x) with Phi(x) = erfc(-x / sqrt(2)) / 2: no cancellation for negative x.
    z = x * -_SQRT_HALF
    if x.dtype == np.float64:
        cdf = special.erfc(xp, z)
    else:
        cdf = special.erfc_fast(xp, z)
    cdf *= 0.5
    return (x * cdf).astype(x.dtype, copy=False)


def _gelu_grad(xp, g, x, y):
    # Phi(x) = y / x recovers the forward's erf without a second (costly) evaluation.
    with np.errstate(divide="ignore", invalid="ignore"):
        cdf = xp.where(x != 0, y / x, 0.5).astype(x.dtype, copy=False)
    pdf = xp.exp(-0.5 * x * x)
    pdf *= x.dtype.type(_INV_SQRT_2PI)
    pdf *= x
    pdf += cdf
    return g * pdf


def _prelu_gamma_shape(gshape, dshape):
    """The shape gamma takes to broadcast against data: gamma's axes are matched, last
    to first, against data's axes 0 and 1 only (so (C,) lands on the channel axis and
    (N, C) on batch and channel), each equal to data's or 1; every other axis is 1."""
    gshape, dshape = tuple(gshape), tuple(dshape)
    res = [1] * len(dshape)
    k = len(gshape) - 1
    for i in range(min(1, len(dshape) - 1), -1, -1):
        if k >= 0 and gshape[k] in (dshape[i], 1):
            res[i] = gshape[k]
            k -= 1
    if k >= 0:
        raise ShapeError(f"LeakyReLU(prelu): cannot broadcast gamma of shape {gshape} to "
                         f"data of shape {dshape}; gamma's axes must match data's axes "
                         f"0 and 1 (e.g. ({dshape[1] if len(dshape) > 1 else 1},) or (1,))")
    return tuple(res)


def _prelu_gamma(xp, gamma, shape):
    """gamma reshaped to broadcast against data of ``shape``."""
    return gamma.reshape(_prelu_gamma_shape(gamma.shape, shape))


@register
class LeakyReLU(Op):
    """Leaky rectifiers. ``leaky``: x if x > 0 else slope*x; ``prelu``: like leaky with
    a learned per-channel slope ``gamma`` (channel axis 1, or one shared value);
    ``rrelu``: a random slope in [lower_bound, upper_bound] per element in training and
    their mean in inference (returns the slopes as a second output, ``mask``);
    ``elu``: slope*(exp(x)-1) for x <= 0; ``selu``: scaled elu with fixed constants;
    ``gelu``: x * Phi(x)."""
    name = "LeakyReLU"
    float_only = True
    checks_types = True
    params = Schema(act_type=Enum(("elu", "gelu", "leaky", "prelu", "rrelu", "selu"),
                                  "leaky"),
                    slope=Float(0.25), lower_bound=Float(0.125), upper_bound=Float(0.334))
    backward_uses = ("out_grad", "in_data", "out_data")
    resources = ("random",)

    def arguments(self, p):
        return ["data", "gamma"] if p.act_type == "prelu" else ["data"]

    def input_var_attrs(self, p, input_name):
        # MXNet starts PReLU's slopes at 0.25 (its initializer attribute on the variable)
        if input_name == "gamma" and p.act_type == "prelu":
            return {"__init__": '["Constant", {"value": 0.25}]'}
        return super().input_var_attrs(p, input_name)

    def outputs(self, p):
        return ["output", "mask"] if p.act_type == "rrelu" else ["output"]

    def infer_shape(self, p, in_shapes):
        d = in_shapes[0]
        n_out = len(self.outputs(p))
        if p.act_type != "prelu":
            return [d], [d] * n_out, []
        g = in_shapes[1]
        if d is not None:
            if g is None:
                if len(d) < 2:          # (MXNet cannot infer it either: no channel axis)
                    raise ShapeError(f"LeakyReLU(prelu): gamma's shape cannot be inferred "
                                     f"from data of shape {tuple(d)} (no channel axis 1)")
                g = (d[1],)
            else:                       # 1-D data: gamma (1,) or one slope per element
                _prelu_gamma_shape(g, d)
        return [d, g], [d], []

    def infer_type(self, p, in_types):
        t = same_dtype(self.name, self.arguments(p), in_types)
        return [t] * len(in_types), [t] * len(self.outputs(p)), []

    def forward(self, ctx, p, inputs, aux):
        xp, x = ctx.xp, inputs[0]
        act = p.act_type
        if act == "leaky":
            return [xp.where(x > 0, x, x * p.slope)]
        if act == "elu":
            with np.errstate(over="ignore"):
                return [xp.where(x > 0, x, p.slope * xp.expm1(x))]
        if act == "selu":
            with np.errstate(over="ignore"):
                return [_SELU_LAMBDA * xp.where(x > 0, x, _SELU_ALPHA * xp.expm1(x))]
        if act == "gelu":
            return [_gelu(xp, x)]
        if act == "prelu":
            gamma = inputs[1]
            if x.ndim < 2:
                self.infer_shape(p, [x.shape, gamma.shape])
            return [xp.where(x > 0, x, x * _prelu_gamma(xp, gamma, x.shape))]
        # rrelu
        if ctx.is_train:
            u = ctx.rng.random(x.shape, dtype=np.float32)
            mask = (p.lower_bound + (p.upper_bound - p.lower_bound) * u).astype(x.dtype)
        else:
            mask = xp.full(x.shape, (p.lower_bound + p.upper_bound) / 2, dtype=x.dtype)
        return [xp.where(x > 0, x, x * mask), mask]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux):
        xp, g, x = ctx.xp, out_grads[0], inputs[0]
        act = p.act_type
        if act == "leaky":
            return [xp.where(x > 0, g, g * p.slope)]
        if act == "elu":
            y = outputs[0]
            return [xp.where(x > 0, g, g * (y + p.slope))]
        if act == "selu":
            # MXNet 1.9.1's selu gradient for x <= 0: lambda * (y + alpha) (see module doc)
            y = outputs[0]
            return [g * xp.where(x > 0, _SELU_LAMBDA, _SELU_LAMBDA * (y + _SELU_ALPHA))]
        if act == "gelu":
            return [_gelu_grad(xp, g, x, outputs[0])]
        if act == "rrelu":
            return [xp.where(x > 0, g, g * outputs[1])]
        gamma = inputs[1]
        neg = x <= 0
        gshape = _prelu_gamma_shape(gamma.shape, x.shape)
        gx = xp.where(neg, g * gamma.reshape(gshape), g)
        ggamma = None
        if ctx.need_grad is None or ctx.need_grad[1]:
            contrib = g * x * neg
            axes = tuple(i for i, n in enumerate(gshape) if n == 1)
            ggamma = contrib.sum(axis=axes).reshape(gamma.shape)
        return [gx, ggamma]

