"""Broadcasting and replication (part of MXNet's matrix_op family): broadcast_to,
broadcast_axis/broadcast_axes, broadcast_like, tile and repeat. (The broadcasting
binary arithmetic, broadcast_add and friends, lives in elemwise_binary.)"""
from ...base import MXNetError
from ..params import Int, IntOrNone, Schema, Shape, ShapeOrNone
from ..registry import Op, ShapeError, register
from ..simple import reduce_to_shape
from .shape_utils import ShapeOnlyBackward, check_axes_nonneg, norm_axis, prod, zeros_if


def _broadcast_dim(opname, have, want, axis, src, dst):
    if have is None or want is None:
        return want
    if have != want and have != 1:
        raise ShapeError(f"{opname}: cannot broadcast {tuple(src)} to {tuple(dst)} "
                         f"(axis {axis}: {have} is neither 1 nor {want})")
    return want


class _BroadcastBase(Op):
    """Broadcast ops: forward is numpy broadcasting, backward sums back to the input."""
    backward_uses = ("out_grad",)

    def target(self, p, shape, other=None):
        raise NotImplementedError

    def infer_shape(self, p, in_shapes):
        if any(s is None for s in in_shapes):
            return in_shapes, [None], []
        return in_shapes, [self.target(p, *in_shapes)], []

    def infer_type(self, p, in_types):
        return in_types, [in_types[0]], []

    def forward(self, ctx, p, inputs, aux):
        x = inputs[0]
        out = self.target(p, *[a.shape for a in inputs])
        return [ctx.xp.broadcast_to(x, out)]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux):
        g = out_grads[0]
        grads = [reduce_to_shape(ctx.xp, g, ctx.in_shapes[0])]
        for i in range(1, len(ctx.in_shapes)):
            grads.append(zeros_if(ctx, i, ctx.in_shapes[i], g.dtype))
        return grads


@register
class BroadcastTo(_BroadcastBase):
    """Broadcast to ``shape`` (same number of axes; a 0 keeps the input's size)."""
    name = "broadcast_to"
    named_inputs = False
    params = Schema(shape=Shape(()))

    def target(self, p, s, other=None):
        if len(p.shape) != len(s):
            raise ShapeError(f"broadcast_to: shape={p.shape} must have as many axes as the "
                             f"input {tuple(s)}")
        want = tuple(d if w == 0 else w for w, d in zip(p.shape, s))
        return tuple(_broadcast_dim(self.name, d, w, i, s, want)
                     for i, (d, w) in enumerate(zip(s, want)))


@register
class BroadcastAxis(_BroadcastBase):
    """Broadcast axes ``axis`` (each of size 1) to sizes ``size``."""
    name = "broadcast_axis"
    named_inputs = False
    aliases = ("broadcast_axes",)
    params = Schema(axis=Shape(()), size=Shape(()))

    def target(self, p, s, other=None):
        if len(p.axis) != len(p.size):
            raise MXNetError(f"broadcast_axis: axis={p.axis} and size={p.size} must have "
                             "the same length")
        out = list(s)
        for a, n in zip(check_axes_nonneg(self.name, p.axis, len(s)), p.size):
            if s[a] is not None and s[a] != 1:
                raise ShapeError(f"broadcast_axis: axis {a} of {tuple(s)} must have size 1 "
                                 "to be broadcast")
            out[a] = n
        return tuple(out)


@register
class BroadcastLike(_BroadcastBase):
    """Broadcast ``lhs`` to the shape of ``rhs`` (on ``lhs_axes`` from ``rhs_axes`` when
    given)."""
    name = "broadcast_like"
    params = Schema(lhs_axes=ShapeOrNone(None), rhs_axes=ShapeOrNone(None))

    def check_params(self, p):
        for name in ("lhs_axes", "rhs_axes"):
            if p[name] == ():
                raise MXNetError(f"broadcast_like: {name}=() is empty; give the axes to "
                                 "broadcast, or leave both out for all of them")

    def arguments(self, p):
        return ["lhs", "rhs"]

    def target(self, p, s, r=None):
        if p.lhs_axes is None and p.rhs_axes is None:
            if len(s) != len(r):
                raise ShapeError(f"broadcast_like: lhs {tuple(s)} and rhs {tuple(r)} must "
                                 "have the same number of axes")
            return tuple(_broadcast_dim(self.name, d, w, i, s, r)
                         for i, (d, w) in enumerate(zip(s, r)))
        if p.lhs_axes is None or p.rhs_axes is None or len(p.lhs_axes) != len(p.rhs_axes):
            raise MXNetError(f"broadcast_like: lhs_axes={p.lhs_axes} and rhs_axes="
                             f"{p.rhs_axes} must both be given, with the same length")
        out = list(s)
        for la, ra in zip(p.lhs_axes, p.rhs_axes):
            la = norm_axis(self.name, la, len(s), "lhs_axes")
            ra = norm_axis(self.name, ra, len(r), "rhs_axes")
            out[la] = _broadcast_dim(self.name, s[la], r[ra], la, s, r)
        return tuple(out)


def _tile_shapes(p, s):
    for r in p.reps:
        if r <= 0:
            raise MXNetError(f"tile: reps={p.reps} must contain only positive values")
    n = max(len(s), len(p.reps))
    s = (1,) * (n - len(s)) + tuple(s)
    r = (1,) * (n - len(p.reps)) + tuple(p.reps)
    return s, r


@register
class Tile(ShapeOnlyBackward):
    """Repeat the whole array ``reps`` times along each axis (numpy.tile)."""
    name = "tile"
    params = Schema(reps=Shape())

    def infer_shape(self, p, in_shapes):
        s = in_shapes[0]
        if s is None:
            return in_shapes, [None], []
        s, r = _tile_shapes(p, s)
        return in_shapes, [tuple(None if d is None else d * k for d, k in zip(s, r))], []

    def forward(self, ctx, p, inputs, aux):
        _tile_shapes(p, inputs[0].shape)
        return [ctx.xp.tile(inputs[0], p.reps)]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux):
        in_shape = tuple(ctx.in_shapes[0])
        s, r = _tile_shapes(p, in_shape)
        inter = [x for pair in zip(r, s) for x in pair]
        g = out_grads[0].reshape(inter).sum(axis=tuple(range(0, len(inter), 2)))
        return [g.reshape(in_shape)]


@register
class Repeat(ShapeOnlyBackward):
    """Repeat each element ``repeats`` times along ``axis`` (the flattened array when
    axis is None)."""
    name = "repeat"
    params = Schema(repeats=Int(), axis=IntOrNone(None))

    def _check(self, p, ndim):
        if p.repeats < 0:
            raise MXNetError(f"repeat: repeats={p.repeats} cannot be a negative number")
        return None if p.axis is None else norm_axis(self.name, p.axis, ndim)

    def infer_shape(self, p, in_shapes):
        s = in_shapes[0]
        if s is None:
            return in_shapes, [None], []
        a = self._check(p, len(s))
        if a is None:
            n = prod(s)
            return in_shapes, [(None if n is None else n * p.repeats,)], []
        out = list(s)
        out[a] = None if s[a] is None else s[a] * p.repeats
        return in_shapes, [tuple(out)], []

    def forward(self, ctx, p, inputs, aux):
        x = inputs[0]
        a = self._check(p, x.ndim)
        return [ctx.xp.repeat(x.reshape(-1) if a is None else x, p.repeats, axis=a or 0)]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux):
        in_shape = tuple(ctx.in_shapes[0])
        a = self._check(p, len(in_shape))
        g = out_grads[0]
        if a is None:
            return [g.reshape(-1, p.repeats).sum(axis=1).reshape(in_shape)]
        split = in_shape[:a + 1] + (p.repeats,) + in_shape[a + 1:]
        return [g.reshape(split).sum(axis=a + 1)]
