"""Reductions: sum, mean, prod, nansum, nanprod, max, min (parameters ``axis``,
``keepdims``, ``exclude``), norm, argmax, argmin and argmax_channel.

Legacy MXNet semantics: ``axis=None`` or ``axis=()`` reduces every axis, and a
result with no dims has shape (1,). The result keeps the input dtype (integer sums
wrap around, an integer mean truncates); float16 is accumulated in float32.
Gradients of max/min flow to every element equal to the extreme (ties all receive
the full gradient), as in MXNet; prod's gradient is out/x (NaN at zeros, as MXNet).
"""
import numpy as np

from ...base import MXNetError
from ..params import Bool, Enum, Int, IntOrNone, Schema, ShapeOrNone
from ..registry import Op, ShapeError, register

__all__ = ["reduce_axes", "reduced_shape"]

_f64 = np.float64


def reduce_axes(name, shape, axis, exclude=False):
    """The sorted axes a reduction over ``axis`` (int tuple, () or None) touches."""
    ndim = len(shape)
    if axis is None or len(axis) == 0:
        return tuple(range(ndim))
    axes = []
    for a in axis:
        if not -ndim <= a < ndim:
            raise ShapeError(f"{name}: reduction axis {a} exceeds input dimensions "
                             f"{tuple(shape)}")
        axes.append(a % ndim)
    if len(set(axes)) != len(axes):
        raise ShapeError(f"{name}: duplicate value in axis {tuple(axis)}")
    if exclude:
        return tuple(i for i in range(ndim) if i not in axes)
    return tuple(sorted(axes))


def reduced_shape(shape, axes, keepdims):
    """The output shape: reduced axes dropped (or 1 with keepdims); never 0-d."""
    if keepdims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes) or (1,)


def _kept(shape, axes):
    return tuple(1 if i in axes else d for i, d in enumerate(shape))


def _acc(dtype):
    """Accumulation dtype: float32 for float16, the dtype itself for integers (so
    sums wrap as MXNet's do), NumPy's choice otherwise."""
    if dtype == np.float16:
        return np.float32
    return dtype if dtype.kind in "iub" else None


def _trunc_div(xp, a, n):
    q = xp.floor_divide(a, n)
    return q + ((q * n != a) & (a < 0))


# ---------------------------------------------------------------------------------
# sum, mean, prod, nansum, nanprod, max, min
# ---------------------------------------------------------------------------------
_REDUCE_PARAMS = Schema(axis=ShapeOrNone(None), keepdims=Bool(False), exclude=Bool(False))


class _Reduce(Op):
    """Shared parts: axes, shapes and the gradient's broadcast back to the input.
    A subclass gives ``reduce(xp, x, axes)`` (result with kept dims) and
    ``grad(xp, gk, x, yk, axes)`` (gk, yk: out_grad and output with kept dims)."""
    params = _REDUCE_PARAMS
    backward_uses = ("out_grad",)
    # whether ``grad`` may divide by zero or multiply infinities (then NumPy's warnings
    # are silenced around it: entering np.errstate costs more than a small gradient)
    grad_warns = True

    def _axes(self, p, shape):
        return reduce_axes(self.name, shape, p["axis"], p["exclude"])

    def infer_shape(self, p, in_shapes):
        s = in_shapes[0]
        if s is None:
            return [None], [None], []
        return [s], [reduced_shape(s, self._axes(p, s), p["keepdims"])], []

    def forward(self, ctx, p, inputs, aux):
        x = inputs[0]
        axes = self._axes(p, x.shape)
        y = self.reduce(ctx.xp, x, axes)
        if y.dtype != x.dtype:
            y = y.astype(x.dtype)
        return [y.reshape(reduced_shape(x.shape, axes, p["keepdims"]))]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux):
        shape = ctx.in_shapes[0]
        axes = self._axes(p, shape)
        kept = _kept(shape, axes)
        gk = out_grads[0].reshape(kept)
        yk = outputs[0].reshape(kept) if outputs and outputs[0] is not None else None
        x = inputs[0] if inputs else None
        if self.grad_warns:
            with np.errstate(all="ignore"):
                g = self.grad(ctx.xp, gk, x, yk, shape, axes)
        else:
            g = self.grad(ctx.xp, gk, x, yk, shape, axes)
        return [g if g.dtype == gk.dtype else g.astype(gk.dtype)]


def _spread(xp, gk, shape):
    """gk broadcast to the input's shape, as a fresh array (written by one broadcasting
    assignment: ``broadcast_to(...).copy()`` costs several times more on small arrays)."""
    g = xp.empty(shape, gk.dtype)
    g[...] = gk
    return g


def _sum_kept(xp, x, axes, dtype):
    """x summed over axes, dims kept: the ufunc's reduce on the host (np.sum's Python
    wrapper is most of a small sum's time), xp.sum elsewhere."""
    if xp is np:
        return np.add.reduce(x, axis=axes, dtype=dtype, keepdims=True)
    return xp.sum(x, axis=axes, dtype=dtype, keepdims=True)


def _count(shape, axes):
    n = 1
    for a in axes:
        n *= shape[a]
    return n


@register
class Sum(_Reduce):
    """Sum over the given axes (all by default)."""
    name = "sum"
    named_inputs = False
    aliases = ("sum_axis",)
    grad_warns = False

    def reduce(self, xp, x, axes):
        return _sum_kept(xp, x, axes, _acc(x.dtype))

    def grad(self, xp, gk, x, yk, shape, axes):
        return _spread(xp, gk, shape)


@register
class Mean(_Reduce):
    """Mean over the given axes (all by default); integer means truncate."""
    name = "mean"
    named_inputs = False
    grad_warns = False

    def reduce(self, xp, x, axes):
        if x.dtype.kind in "iub":
            total = _sum_kept(xp, x, axes, x.dtype)
            if x.dtype.kind == "b":
                # MXNet divides in the input type, by the count cast to bool (True): the
                # mean of bools is their sum there, i.e. any()
                return total
            return _trunc_div(xp, total, _count(x.shape, axes) or 1)
        # the sum divided by the count in place: np.mean's own two steps, the same bits
        total = _sum_kept(xp, x, axes, _acc(x.dtype))
        n = _count(x.shape, axes)
        if n and isinstance(total, xp.ndarray):
            return xp.true_divide(total, n, out=total)
        # a 0-d input's sum is a scalar; a mean over nothing is NaN (0 / 0)
        with np.errstate(invalid="ignore"):
            return total / n

    def grad(self, xp, gk, x, yk, shape, axes):
        # over a zero-size axis the input, and so its gradient, has no elements
        return _spread(xp, gk / (_count(shape, axes) or 1), shape)


@register
class Prod(_Reduce):
    """Product over the given axes (all by default)."""
    name = "prod"
    named_inputs = False
    backward_uses = ("out_grad", "in_data", "out_data")

    def reduce(self, xp, x, axes):
        return xp.prod(x, axis=axes, dtype=_acc(x.dtype), keepdims=True)

    def grad(self, xp, gk, x, yk, shape, axes):
        return gk * (yk / x)


@register
class NanSum(_Reduce):
    """Sum treating NaN as zero."""
    name = "nansum"
    named_inputs = False
    backward_uses = ("out_grad", "in_data")
    grad_warns = False

    def reduce(self, xp, x, axes):
        return xp.nansum(x, axis=axes, dtype=_acc(x.dtype), keepdims=True)

    def grad(self, xp, gk, x, yk, shape, axes):
        return xp.where(xp.isnan(x), 0, gk) if x.dtype.kind == "f" else _spread(xp, gk, shape)


@register
class NanProd(_Reduce):
    """Product treating NaN as one."""
    name = "nanprod"
    named_inputs = False
    backward_uses = ("out_grad", "in_data", "out_data")

    def reduce(self, xp, x, axes):
        return xp.nanprod(x, axis=axes, dtype=_acc(x.dtype), keepdims=True)

    def grad(self, xp, gk, x, yk, shape, axes):
        g = gk * (yk / x)
        return xp.where(xp.isnan(x), 0, g) if x.dtype.kind == "f" else g


@register
class Max(_Reduce):
    """Maximum over the given axes; NaN propagates."""
    name = "max"
    named_inputs = False
    aliases = ("max_axis",)
    backward_uses = ("out_grad", "in_data", "out_data")

    def infer_shape(self, p, in_shapes):
        s = in_shapes[0]
        if s is not None and any(s[a] == 0 for a in self._axes(p, s)):
            # no identity element: an error at the call, as in MXNet
            raise ShapeError(f"{self.name}: cannot reduce over a zero-size axis of an "
                             f"array of shape {tuple(s)}")
        return super().infer_shape(p, in_shapes)

    def reduce(self, xp, x, axes):
        return xp.max(x, axis=axes, keepdims=True)

    def grad(self, xp, gk, x, yk, shape, axes):
        return gk * (x == yk)


@register
class Min(Max):
    """Minimum over the given axes; NaN propagates."""
    name = "min"
    named_inputs = False
    aliases = ("min_axis",)

    def reduce(self, xp, x, axes):
        return xp.min(x, axis=axes, keepdims=True)


# ---------------------------------------------------------------------------------
# norm
# ---------------------------------------------------------------------------------
class _OptionalDType(Enum):
    def convert(self, v):
        return None if v in (None, "None") else super().convert(v)


@register
class Norm(Op):
    """The L1 (``ord=1``) or L2 (``ord=2``, default) norm over ``axis`` (all axes by
    default; a 2-tuple gives matrix Frobenius/entrywise norms)."""
    name = "norm"
    named_inputs = False
    params = Schema(ord=Int(2),
                    axis=ShapeOrNone(None),
                    out_dtype=_OptionalDType((None, "float16", "float32", "float64", "int32",
                                              "int64", "int8"), None),
                    keepdims=Bool(False))
    backward_uses = ("out_grad", "in_data", "out_data")

    def check_params(self, p):
        if p["ord"] not in (1, 2):
            raise MXNetError(f"norm: only ord=1 and ord=2 are supported, got ord={p['ord']}")

    def infer_shape(self, p, in_shapes):
        s = in_shapes[0]
        if s is None:
            return [None], [None], []
        axes = reduce_axes(self.name, s, p["axis"])
        return [s], [reduced_shape(s, axes, p["keepdims"])], []

    def infer_type(self, p, in_types):
        t = in_types[0]
        out = np.dtype(p["out_dtype"]) if p["out_dtype"] else t
        return [t], [out], []

    def forward(self, ctx, p, inputs, aux):
        xp, x = ctx.xp, inputs[0]
        axes = reduce_axes(self.name, x.shape, p["axis"])
        if p["ord"] == 1:
            y = xp.sum(xp.abs(x), axis=axes, dtype=_acc(x.dtype), keepdims=True)
        elif x.dtype.kind == "f":
            # Square in float64 so large float16/float32 values do not overflow.
            y = xp.sqrt(xp.sum(xp.square(x, dtype=_f64), axis=axes, keepdims=True))
        else:
            # MXNet's scaled integer accumulation reduces to this: the largest
            # magnitude times the square root of how many elements reach it.
            ax = xp.abs(x)
            top = xp.max(ax, axis=axes, keepdims=True)
            hits = xp.sum(ax == top, axis=axes, keepdims=True)
            y = xp.trunc(top * xp.sqrt(hits.astype(_f64)))
        out_dtype = np.dtype(p["out_dtype"]) if p["out_dtype"] else x.dtype
        return [y.astype(out_dtype).reshape(reduced_shape(x.shape, axes, p["keepdims"]))]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux):
        xp, x = ctx.xp, inputs[0]
        axes = reduce_axes(self.name, x.shape, p["axis"])
        kept = _kept(x.shape, axes)
        gk = out_grads[0].reshape(kept).astype(x.dtype, copy=False)
        with np.errstate(all="ignore"):
            if p["ord"] == 1:
                return [gk * xp.sign(x)]
            yk = outputs[0].reshape(kept).astype(x.dtype, copy=False)
            return [gk * (x / yk)]


# ---------------------------------------------------------------------------------
# argmax, argmin, argmax_channel: indices in the input's dtype, as MXNet returns them
# ---------------------------------------------------------------------------------
class _ArgReduce(Op):
    params = Schema(axis=IntOrNone(None), keepdims=Bool(False))
    backward_uses = ()
    zero_grad = True
    _fn = None

    def _axis(self, p, shape):
        axis = p["axis"]
        if axis is None:
            return None
        ndim = len(shape)
        if not -ndim <= axis < ndim:
            raise ShapeError(f"{self.name}: axis {axis} exceeds the input dimension of {ndim}")
        return axis % ndim

    def _out_shape(self, p, shape):
        axis = self._axis(p, shape)
        if axis is None:
            return (1,) * len(shape) if p["keepdims"] else (1,)
        return reduced_shape(shape, (axis,), p["keepdims"])

    def infer_shape(self, p, in_shapes):
        s = in_shapes[0]
        return [s], [None if s is None else self._out_shape(p, s)], []

    def forward(self, ctx, p, inputs, aux):
        xp, x = ctx.xp, inputs[0]
        axis = self._axis(p, x.shape)
        if axis is None:
            x, axis = x.reshape(-1), 0
        idx = getattr(xp, self._fn)(x, axis=axis)
        if xp is not np and x.dtype.kind == "f" and x.size:
            # NaN wins, and the first NaN along the axis, as MXNet's sequential kernel
            # and NumPy answer; CuPy's parallel argmax/argmin returns any of several
            # NaNs (its combiner keeps whichever NaN operand comes first in its tree)
            nan = xp.isnan(x)
            idx = xp.where(xp.any(nan, axis=axis), xp.argmax(nan, axis=axis), idx)
        return [xp.asarray(idx).astype(inputs[0].dtype).reshape(
            self._out_shape(p, inputs[0].shape))]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux):
        return [ctx.xp.zeros(ctx.in_shapes[0], dtype=out_grads[0].dtype)]


@register
class ArgMax(_ArgReduce):
    """Index of the largest element along ``axis`` (of the flattened array when
    axis is None); the first one on ties, NaN counting as largest."""
    name = "argmax"
    named_inputs = False
    _fn = "argmax"


@register
class ArgMin(_ArgReduce):
    """Index of the smallest element along ``axis`` (flattened when None)."""
    name = "argmin"
    named_inputs = False
    _fn = "argmin"


@register
class ArgMaxChannel(Op):
    """Index of the largest element along axis 1 (the channel axis). Not
    differentiable, as in MXNet."""
    name = "argmax_channel"
    named_inputs = False
    params = Schema()

    def infer_shape(self, p, in_shapes):
        s = in_shapes[0]
        if s is None:
            return [None], [None], []
        if len(s) < 2:
            raise ShapeError(f"argmax_channel: axis 1 exceeds the input dimension of {len(s)}")
        return [s], [reduced_shape(s, (1,), False)], []

    def forward(self, ctx, p, inputs, aux):
        x = inputs[0]
        out_shape = self.infer_shape(p, [x.shape])[1][0]
        return [ctx.xp.argmax(x, axis=1).astype(x.dtype).reshape(out_shape)]
