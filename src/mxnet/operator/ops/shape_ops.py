"""Reshaping and axis permutations (part of MXNet's matrix_op family): Flatten,
transpose, expand_dims, squeeze, SwapAxis, reverse/flip, reshape_like,
depth_to_space/space_to_depth, and the shape queries shape_array and size_array."""
import numpy as np

from ...base import MXNetError
from ..params import Int, IntOrNone, Schema, Shape, ShapeOrNone
from ..registry import Op, ShapeError, register
from .shape_utils import (ShapeOnlyBackward, check_axes_nonneg, legacy, norm_axis, prod,
                          write_view, zeros_if)


@register
class Flatten(ShapeOnlyBackward):
    """Collapse every axis but the first: (d0, d1, ..., dk) -> (d0, d1*...*dk)."""
    name = "Flatten"
    bfloat16_native = True     # moves or casts values: any type alike
    named_inputs = False
    aliases = ("flatten",)
    params = Schema()
    inplace = ((0, 0),)
    writes_outputs = True

    def infer_shape(self, p, in_shapes):
        s = in_shapes[0]
        if s is None:
            return in_shapes, [None], []
        if len(s) == 0:
            raise ShapeError("Flatten: the input must have at least one dimension")
        return in_shapes, [(s[0], prod(s[1:]))], []

    def forward(self, ctx, p, inputs, aux, out=None):
        x = inputs[0]
        y = x.reshape(x.shape[0], -1) if x.ndim else x.reshape(1, 1)
        return [write_view(ctx, y, None if out is None else out[0])]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux, in_grad=None):
        return [write_view(ctx, out_grads[0].reshape(ctx.in_shapes[0]),
                           None if in_grad is None else in_grad[0])]


def _transpose_axes(p, ndim):
    if not p.axes:
        return tuple(range(ndim - 1, -1, -1))
    axes = tuple(p.axes)
    if len(axes) != ndim:
        raise ShapeError(f"transpose: axes={axes} must give every axis of the {ndim}-d input")
    for a in axes:
        if not 0 <= a < ndim:
            raise MXNetError(f"transpose: axis {a} in axes={axes} must be in range [0, {ndim})")
    if len(set(axes)) != ndim:
        raise MXNetError(f"transpose: axes={axes} repeats an axis")
    return axes


@register
class Transpose(ShapeOnlyBackward):
    """Permute the axes (reverse them when ``axes`` is empty)."""
    name = "transpose"
    bfloat16_native = True     # moves or casts values: any type alike
    named_inputs = False
    params = Schema(axes=Shape(()))

    def infer_shape(self, p, in_shapes):
        s = in_shapes[0]
        if s is None:
            return in_shapes, [None], []
        return in_shapes, [tuple(s[a] for a in _transpose_axes(p, len(s)))], []

    def forward(self, ctx, p, inputs, aux):
        x = inputs[0]
        return [x.transpose(_transpose_axes(p, x.ndim))]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux):
        axes = _transpose_axes(p, len(ctx.in_shapes[0]))
        return [out_grads[0].transpose(tuple(int(a) for a in np.argsort(axes)))]


class _Reshaping(ShapeOnlyBackward):
    """Ops that only reshape (a view of) the data to ``_shape(p, input shape)``."""
    inplace = ((0, 0),)

    def _shape(self, p, s):
        raise NotImplementedError

    def infer_shape(self, p, in_shapes):
        s = in_shapes[0]
        return in_shapes, [None if s is None else self._shape(p, s)], []

    def forward(self, ctx, p, inputs, aux):
        x = inputs[0]
        return [x.reshape(self._shape(p, x.shape))]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux):
        return [out_grads[0].reshape(ctx.in_shapes[0])]


@register
class ExpandDims(_Reshaping):
    """Insert a new axis of size 1 at ``axis`` (in [-ndim-1, ndim])."""
    name = "expand_dims"
    bfloat16_native = True     # moves or casts values: any type alike
    named_inputs = False
    params = Schema(axis=Int())

    def _shape(self, p, s):
        a = norm_axis(self.name, p.axis, len(s), extra=1)
        return tuple(s[:a]) + (1,) + tuple(s[a:])


@register
class Squeeze(_Reshaping):
    """Remove axes of size 1 (all of them, or those in ``axis``); a result with no axes
    left has shape (1,)."""
    name = "squeeze"
    bfloat16_native = True     # moves or casts values: any type alike
    params = Schema(axis=ShapeOrNone(None))

    def _shape(self, p, s):
        if p.axis is None:
            if any(d is None for d in s):
                return None
            return legacy([d for d in s if d != 1])
        drop = set()
        for a in p.axis:
            a = norm_axis(self.name, a, len(s))
            if a in drop:
                raise MXNetError(f"squeeze: duplicate value in axis={p.axis}")
            if s[a] is not None and s[a] != 1:
                raise ShapeError(f"squeeze: cannot select an axis to squeeze out which has "
                                 f"size={s[a]} not equal to one (axis {a} of {tuple(s)})")
            drop.add(a)
        return legacy([d for i, d in enumerate(s) if i not in drop])


@register
class SwapAxis(ShapeOnlyBackward):
    """Interchange axes ``dim1`` and ``dim2``."""
    name = "SwapAxis"
    bfloat16_native = True     # moves or casts values: any type alike
    aliases = ("swapaxes",)
    params = Schema(dim1=Int(0), dim2=Int(0))

    def _dims(self, p, ndim):
        return (norm_axis(self.name, p.dim1, ndim, "dim1"),
                norm_axis(self.name, p.dim2, ndim, "dim2"))

    def infer_shape(self, p, in_shapes):
        s = in_shapes[0]
        if s is None:
            return in_shapes, [None], []
        a, b = self._dims(p, len(s))
        out = list(s)
        out[a], out[b] = s[b], s[a]
        return in_shapes, [tuple(out)], []

    def forward(self, ctx, p, inputs, aux):
        x = inputs[0]
        return [x.swapaxes(*self._dims(p, x.ndim))]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux):
        return [out_grads[0].swapaxes(*self._dims(p, len(ctx.in_shapes[0])))]


@register
class Reverse(ShapeOnlyBackward):
    """Reverse the order of elements along the given axes (non-negative, as MXNet)."""
    name = "reverse"
    aliases = ("flip",)
    params = Schema(axis=Shape())

    def infer_shape(self, p, in_shapes):
        s = in_shapes[0]
        if s is not None:
            check_axes_nonneg(self.name, p.axis, len(s))
        return in_shapes, [s], []

    def forward(self, ctx, p, inputs, aux):
        x = inputs[0]
        return [ctx.xp.flip(x, check_axes_nonneg(self.name, p.axis, x.ndim))]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux):
        return [ctx.xp.flip(out_grads[0], tuple(p.axis))]


def _like_range(opname, begin, end, ndim, which):
    b = 0 if begin is None else (begin + ndim if begin < 0 else begin)
    e = ndim if end is None else (end + ndim if end < 0 else end)
    if not (0 <= b < e <= ndim):
        raise MXNetError(f"{opname}: invalid {which}_begin={begin}, {which}_end={end} for "
                         f"a {ndim}-d {which}")
    return b, e


@register
class ReshapeLike(Op):
    """Reshape ``lhs`` so that lhs.shape[lhs_begin:lhs_end] becomes
    rhs.shape[rhs_begin:rhs_end] (the whole shapes by default)."""
    name = "reshape_like"
    bfloat16_native = True     # moves or casts values: any type alike
    params = Schema(lhs_begin=IntOrNone(None), lhs_end=IntOrNone(None),
                    rhs_begin=IntOrNone(None), rhs_end=IntOrNone(None))
    backward_uses = ("out_grad",)
    inplace = ((0, 0),)

    def arguments(self, p):
        return ["lhs", "rhs"]

    def _shape(self, p, l, r):
        lb, le = _like_range(self.name, p.lhs_begin, p.lhs_end, len(l), "lhs")
        rb, re = _like_range(self.name, p.rhs_begin, p.rhs_end, len(r), "rhs")
        out = tuple(l[:lb]) + tuple(r[rb:re]) + tuple(l[le:])
        a, b = prod(l), prod(out)
        if a is not None and b is not None and a != b:
            raise ShapeError(f"reshape_like: cannot reshape lhs {tuple(l)} to {out} "
                             f"(from rhs {tuple(r)}): sizes differ")
        return out

    def infer_shape(self, p, in_shapes):
        l, r = in_shapes
        if l is None or r is None:
            return in_shapes, [None], []
        return in_shapes, [self._shape(p, l, r)], []

    def infer_type(self, p, in_types):
        return in_types, [in_types[0]], []

    def forward(self, ctx, p, inputs, aux):
        l, r = inputs
        return [l.reshape(self._shape(p, l.shape, r.shape))]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux):
        g = out_grads[0]
        return [g.reshape(ctx.in_shapes[0]), zeros_if(ctx, 1, ctx.in_shapes[1], g.dtype)]


@register
class ShapeArray(Op):
    """The input's shape as a 1-D int64 array."""
    name = "shape_array"
    named_inputs = False
    params = Schema()
    zero_grad = True
    backward_uses = ()

    def infer_shape(self, p, in_shapes):
        s = in_shapes[0]
        return in_shapes, [None if s is None else (len(s),)], []

    def infer_type(self, p, in_types):
        return in_types, [np.dtype(np.int64)], []

    def forward(self, ctx, p, inputs, aux):
        return [ctx.xp.asarray(np.array(inputs[0].shape, dtype=np.int64))]


@register
class SizeArray(Op):
    """The input's number of elements as a (1,) int64 array."""
    name = "size_array"
    named_inputs = False
    params = Schema()
    zero_grad = True
    backward_uses = ()

    def infer_shape(self, p, in_shapes):
        return in_shapes, [(1,)], []

    def infer_type(self, p, in_types):
        return in_types, [np.dtype(np.int64)], []

    def forward(self, ctx, p, inputs, aux):
        return [ctx.xp.asarray(np.array([inputs[0].size], dtype=np.int64))]


def _d2s_shape(p, s, inverse):
    name = "space_to_depth" if inverse else "depth_to_space"
    b = p.block_size
    if b <= 0:
        raise MXNetError(f"{name}: block_size={b} must be positive")
    if len(s) != 4:
        raise ShapeError(f"{name}: the input must be 4-D (N, C, H, W), got {tuple(s)}")
    n, c, h, w = s
    for d, nm in zip(s, ("batch", "depth", "height", "width")):
        if d == 0:      # as MXNet: an empty axis is refused, not passed through
            raise ShapeError(f"{name}: the {nm} dimension of the input {tuple(s)} "
                             "cannot be 0")
    if not inverse:
        if c is not None and c % (b * b):
            raise ShapeError(f"{name}: channels ({c}) must be divisible by "
                             f"block_size**2 ({b * b})")
        return (n, None if c is None else c // (b * b),
                None if h is None else h * b, None if w is None else w * b)
    for d, nm in ((h, "height"), (w, "width")):
        if d is not None and d % b:
            raise ShapeError(f"{name}: {nm} ({d}) must be divisible by block_size ({b})")
    return (n, None if c is None else c * b * b,
            None if h is None else h // b, None if w is None else w // b)


def _depth_to_space(x, b):
    n, c, h, w = x.shape
    y = x.reshape(n, b, b, c // (b * b), h, w).transpose(0, 3, 4, 1, 5, 2)
    return y.reshape(n, c // (b * b), h * b, w * b)


def _space_to_depth(x, b):
    n, c, h, w = x.shape
    y = x.reshape(n, c, h // b, b, w // b, b).transpose(0, 3, 5, 1, 2, 4)
    return y.reshape(n, c * b * b, h // b, w // b)


class _DepthSpace(ShapeOnlyBackward):
    params = Schema(block_size=Int())
    inverse = False

    def infer_shape(self, p, in_shapes):
        s = in_shapes[0]
        return in_shapes, [None if s is None else _d2s_shape(p, s, self.inverse)], []

    def forward(self, ctx, p, inputs, aux):
        x = inputs[0]
        _d2s_shape(p, x.shape, self.inverse)
        f = _space_to_depth if self.inverse else _depth_to_space
        return [f(x, p.block_size)]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux):
        f = _depth_to_space if self.inverse else _space_to_depth
        return [f(out_grads[0], p.block_size)]


@register
class DepthToSpace(_DepthSpace):
    """Move blocks of channels into spatial blocks: (N, C, H, W) ->
    (N, C/b^2, H*b, W*b)."""
    name = "depth_to_space"


@register
class SpaceToDepth(_DepthSpace):
    """Move spatial blocks into channels: (N, C, H, W) -> (N, C*b^2, H/b, W/b)."""
    name = "space_to_depth"
    inverse = True
