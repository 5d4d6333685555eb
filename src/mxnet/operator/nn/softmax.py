"""Softmax family: ``softmax`` (with an optional ``length`` mask), ``log_softmax``,
``softmin``, the legacy ``SoftmaxActivation`` and ``softmax_cross_entropy``.

All gradients are computed from the output alone, so backward keeps no input.
"""
import numpy as np

from ...base import MXNetError
from ..params import Bool, DType, Enum, FloatOrNone, Int, Optional, Schema
from ..registry import Op, ShapeError, register

__all__ = ["Softmax", "LogSoftmax", "Softmin", "SoftmaxActivation", "SoftmaxCrossEntropy",
           "softmax_forward", "check_axis"]


def check_axis(opname, axis, ndim):
    """The non-negative axis, or an MXNetError naming the operator."""
    if not -ndim <= axis < ndim:
        raise ShapeError(f"{opname}: axis {axis} is out of range for an array with "
                         f"{ndim} dimensions")
    return axis % ndim


def _length_mask(xp, length, shape, axis):
    """True where the position along ``axis`` is below that row's length."""
    n = shape[axis]
    pos = xp.arange(n).reshape((n,) + (1,) * (len(shape) - axis - 1))
    return pos < xp.expand_dims(length.astype(np.int64), axis)


def _check_length_type(opname, t):
    # MXNet takes the lengths in an index type only (int32 or int64): float32 lengths,
    # nd.array's default, and the other integer types are refused when the operator
    # runs (its type inference lets them through: a bound graph fails at forward)
    if t is not None and np.dtype(t) not in (np.dtype(np.int32), np.dtype(np.int64)):
        raise MXNetError(f"{opname}: length must be int32 or int64, got {np.dtype(t).name}")


def softmax_forward(xp, x, axis, log=False, temperature=None, mask=None, out=None):
    """softmax (or log-softmax) of x along axis, into ``out`` when given; a boolean mask
    zeroes (for log: -inf) the masked-out positions. Numerically safe: the maximum is
    subtracted first."""
    if x.size == 0:                     # nothing to normalise (no max of an empty axis)
        return x.copy() if out is None else out
    if temperature is not None and temperature != 1.0:
        x = x / x.dtype.type(temperature)
    if mask is not None:
        x = xp.where(mask, x, -np.inf)
    if x.size == 0:                 # nothing to normalise (max() has no identity)
        if out is None:
            return xp.empty(x.shape, x.dtype)
        return out
    m = x.max(axis=axis, keepdims=True)
    if mask is not None:
        m = xp.where(xp.isfinite(m), m, 0)
    e = xp.subtract(x, m, out=out)
    if log:
        with np.errstate(divide="ignore"):
            s = xp.log(xp.exp(e).sum(axis=axis, keepdims=True))
        e -= s
        return e
    xp.exp(e, out=e)
    s = e.sum(axis=axis, keepdims=True)
    if mask is not None:
        s[s == 0] = 1          # a row of length 0 gives all zeros, not NaN
    e /= s
    return e


def _softmax_grad(xp, g, y, axis, temperature):
    dx = g * y
    dx -= y * dx.sum(axis=axis, keepdims=True)
    if temperature is not None and temperature != 1.0:
        dx /= dx.dtype.type(temperature)
    return dx


def _log_softmax_grad(xp, g, y, axis, temperature):
    dx = g - xp.exp(y) * g.sum(axis=axis, keepdims=True)
    if temperature is not None and temperature != 1.0:
        dx /= dx.dtype.type(temperature)
    return dx


_SOFTMAX_PARAMS = Schema(axis=Int(-1), temperature=FloatOrNone(None),
                         dtype=Optional(DType(enum=("float16", "float32", "float64"))),
                         use_length=Optional(Bool(), False))


class _SoftmaxBase(Op):
    params = _SOFTMAX_PARAMS
    backward_uses = ("out_grad", "out_data")
    writes_outputs = True
    _log = False
    _negate = False
    _has_length = False

    def arguments(self, p):
        if p.use_length:
            if not self._has_length:
                raise MXNetError(f"{self.name}: use_length=True is only supported by "
                                 "softmax")
            return ["data", "length"]
        return ["data"]

    def infer_shape(self, p, in_shapes):
        d = in_shapes[0]
        if not p.use_length:
            return [d], [d], []
        ln = in_shapes[1]
        if d is not None:
            axis = check_axis(self.name, p.axis, len(d))
            want = tuple(d[:axis]) + tuple(d[axis + 1:])
            if ln is not None and tuple(ln) != want:
                raise ShapeError(f"{self.name}: length must have shape {want} (data shape "
                                 f"{tuple(d)} without axis {p.axis}), got {tuple(ln)}")
            ln = want
        return [d, ln], [d], []

    def infer_type(self, p, in_types):
        t = in_types[0]
        if t is not None and np.dtype(t).kind != "f":
            raise MXNetError(f"{self.name}: only floating point inputs are supported, got "
                             f"{np.dtype(t).name}")
        out = np.dtype(p.dtype) if (p.dtype is not None and t is not None) else t
        if p.dtype is not None and t is None:
            out = np.dtype(p.dtype)
        return [t] + list(in_types[1:]), [out], []

    def forward(self, ctx, p, inputs, aux, out=None):
        xp, x = ctx.xp, inputs[0]
        if x.dtype.kind != "f":
            raise MXNetError(f"{self.name}: only floating point inputs are supported, got "
                             f"{x.dtype.name}")
        axis = check_axis(self.name, p.axis, x.ndim)
        if p.dtype is not None and np.dtype(p.dtype) != x.dtype:
            x = x.astype(p.dtype)
        if self._negate:
            x = -x
        mask = None
        if p.use_length:
            _check_length_type(self.name, inputs[1].dtype)
            self.infer_shape(p, [inputs[0].shape, inputs[1].shape])
            mask = _length_mask(xp, inputs[1], x.shape, axis)
        return [softmax_forward(xp, x, axis, self._log, p.temperature, mask,
                                None if out is None else out[0])]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux, in_grad=None):
        xp, y = ctx.xp, outputs[0]
        g = out_grads[0].astype(y.dtype, copy=False)
        axis = p.axis % y.ndim
        grad = _log_softmax_grad if self._log else _softmax_grad
        dx = grad(xp, g, y, axis, p.temperature)
        if self._negate:
            dx = -dx
        # With dtype= the gradient stays in the output's type: backward keeps no input,
        # and the receiver casts it to the input's type.
        return [dx, None] if p.use_length else [dx]


@register
class Softmax(_SoftmaxBase):
    """softmax(x)_i = exp(x_i / T) / sum_j exp(x_j / T) along ``axis`` (T =
    ``temperature``, default 1). With ``use_length=True`` a second input ``length``
    (int32 or int64, the data shape without ``axis``) limits each row: positions at or
    past its length get 0. ``dtype`` sets the output (and compute) type."""
    name = "softmax"
    _has_length = True


@register
class LogSoftmax(_SoftmaxBase):
    """log(softmax(x)) along ``axis``, computed stably."""
    name = "log_softmax"
    _log = True


@register
class Softmin(_SoftmaxBase):
    """softmax(-x) along ``axis``."""
    name = "softmin"
    named_inputs = False
    _negate = True


@register
class SoftmaxActivation(Op):
    """Legacy softmax: ``mode='instance'`` normalises over the last axis, ``'channel'``
    over axis 1 (data needs at least 3 dimensions).

    As in MXNet 1.9.1, the backward always works along axis 1; for 'instance' mode on
    data with more than 2 dimensions that is not the axis the forward used."""
    name = "SoftmaxActivation"
    named_inputs = False
    params = Schema(mode=Enum(("channel", "instance"), "instance"))
    backward_uses = ("out_grad", "out_data")
    inplace = ((0, 0),)

    def infer_shape(self, p, in_shapes):
        d = in_shapes[0]
        if d is not None and p.mode == "channel" and len(d) < 3:
            raise ShapeError(f"SoftmaxActivation: mode='channel' needs data with at least 3 "
                             f"dimensions, got shape {tuple(d)}")
        return [d], [d], []

    def _axis(self, p, ndim):
        return 1 if p.mode == "channel" else ndim - 1

    def forward(self, ctx, p, inputs, aux):
        x = inputs[0]
        self.infer_shape(p, [x.shape])
        return [softmax_forward(ctx.xp, x, self._axis(p, x.ndim))]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux):
        y = outputs[0]
        return [_softmax_grad(ctx.xp, out_grads[0], y, 1 if y.ndim > 1 else 0, None)]


@register
class SoftmaxCrossEntropy(Op):
    """sum over the batch of -log(softmax(data)[label]); data (batch, classes), label
    (batch,) of class indices; the output has shape (1,). No gradient for label."""
    name = "softmax_cross_entropy"
    checks_types = True
    params = Schema()
    backward_uses = ("out_grad", "in_data")

    def arguments(self, p):
        return ["data", "label"]

    def infer_shape(self, p, in_shapes):
        d, lab = in_shapes
        if d is not None and len(d) != 2:
            raise ShapeError(f"softmax_cross_entropy: data must be 2-D (batch, classes), "
                             f"got shape {tuple(d)}")
        if lab is not None and len(lab) != 1:
            raise ShapeError(f"softmax_cross_entropy: label must be 1-D (batch,), got "
                             f"shape {tuple(lab)}")
        if d is not None:
            if lab is not None and lab[0] != d[0]:
                raise ShapeError(f"softmax_cross_entropy: label shape {tuple(lab)} does not "
                                 f"match data shape {tuple(d)}")
            lab = (d[0],)
        return [d, lab], [(1,)], []

    def infer_type(self, p, in_types):
        t = in_types[0] if in_types[0] is not None else in_types[1]
        # (not ``None in in_types``: NumPy's dtype('float64') == None is True)
        if all(x is not None for x in in_types) and \
                np.dtype(in_types[0]) != np.dtype(in_types[1]):
            raise MXNetError(f"softmax_cross_entropy: label dtype {np.dtype(in_types[1])} "
                             f"must match data dtype {np.dtype(in_types[0])}")
        return [t, t], [t], []

    def _labels(self, xp, label, k):
        return xp.clip(label.astype(np.int64), 0, k - 1)

    def forward(self, ctx, p, inputs, aux):
        xp, x, label = ctx.xp, inputs[0], inputs[1]
        self.infer_shape(p, [x.shape, label.shape])
        logp = softmax_forward(xp, x, 1, log=True)
        idx = self._labels(xp, label, x.shape[1])
        picked = xp.take_along_axis(logp, idx[:, None], axis=1)
        return [(-picked.sum()).reshape(1).astype(x.dtype)]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux):
        if ctx.need_grad is not None and ctx.need_grad[1]:
            raise MXNetError("softmax_cross_entropy: cannot take the gradient with respect "
                             "to label")
        xp, x, label = ctx.xp, inputs[0], inputs[1]
        dx = softmax_forward(xp, x, 1)
        idx = self._labels(xp, label, x.shape[1])
        dx[xp.arange(x.shape[0]), idx] -= 1
        dx *= out_grads[0].reshape(())
        return [dx, None]
