"""Pad: constant / edge / reflect padding of the spatial axes of 4-D and 5-D arrays."""
import numpy as np

from ...base import MXNetError
from ..params import Enum, Float, Schema, Shape
from ..registry import Op, register

__all__ = ["Pad"]


def _widths(p, shape):
    """((before, after), ...) per axis, checked as MXNet does."""
    nd = len(shape)
    if nd not in (4, 5):
        raise MXNetError(f"Pad: only 4-D and 5-D inputs are supported, got shape {shape}")
    pw = tuple(p.pad_width)
    if len(pw) != 2 * nd:
        raise MXNetError(f"Pad: pad_width must have 2*ndim = {2 * nd} values (before_1, "
                         f"after_1, ..., before_N, after_N) for a {nd}-D input, got {pw}")
    if any(v < 0 for v in pw):
        raise MXNetError(f"Pad: pad_width must be non-negative, got {pw}")
    pairs = tuple((pw[2 * i], pw[2 * i + 1]) for i in range(nd))
    if pairs[0] != (0, 0) or pairs[1] != (0, 0):
        raise MXNetError(f"Pad: padding of the first two axes (batch, channel) must be zero, "
                         f"got pad_width={pw}")
    if p.mode == "reflect":
        for ax, (b, e) in enumerate(pairs):
            if max(b, e) >= shape[ax] and (b or e):
                raise MXNetError(f"Pad: reflect padding must be smaller than the input size; "
                                 f"axis {ax} has size {shape[ax]} and padding {(b, e)}")
    return pairs


def _axis_slice(nd, axis, sl):
    return (slice(None),) * axis + (sl,)


@register
class Pad(Op):
    """Pad the spatial axes of a 4-D or 5-D array.

    mode 'constant' fills with ``constant_value``, 'edge' repeats the border values,
    'reflect' mirrors the input about its borders (without repeating them; each padding
    must be smaller than the axis). ``pad_width`` is (before_1, after_1, ...,
    before_N, after_N) and must be zero for the first two axes."""
    name = "Pad"
    aliases = ("pad",)
    params = Schema(mode=Enum(("constant", "edge", "reflect")), pad_width=Shape(),
                    constant_value=Float(0.0))
    backward_uses = ("out_grad",)

    def infer_shape(self, p, in_shapes):
        d = in_shapes[0]
        if d is None:
            return [None], [None], []
        pairs = _widths(p, tuple(d))
        return [tuple(d)], [tuple(s + b + e for s, (b, e) in zip(d, pairs))], []

    def infer_type(self, p, in_types):
        t = in_types[0]
        if t is not None and np.dtype(t).kind != "f":
            raise MXNetError(f"Pad: only floating point types are supported, got "
                             f"{np.dtype(t).name}")
        return [t], [t], []

    def forward(self, ctx, p, inputs, aux):
        x = inputs[0]
        pairs = _widths(p, tuple(x.shape))
        self.infer_type(p, [x.dtype])
        if p.mode == "constant":
            return [ctx.xp.pad(x, pairs, mode="constant", constant_values=p.constant_value)]
        return [ctx.xp.pad(x, pairs, mode=p.mode)]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux):
        g = out_grads[0]
        shape = tuple(ctx.in_shapes[0])
        pairs = _widths(p, shape)
        for ax, (b, e) in enumerate(pairs):
            if not (b or e):
                continue
            n = shape[ax]
            inner = g[_axis_slice(g.ndim, ax, slice(b, b + n))].copy()
            if p.mode == "edge":
                if b:
                    inner[_axis_slice(g.ndim, ax, slice(0, 1))] += \
                        g[_axis_slice(g.ndim, ax, slice(0, b))].sum(axis=ax, keepdims=True)
                if e:
                    inner[_axis_slice(g.ndim, ax, slice(n - 1, n))] += \
                        g[_axis_slice(g.ndim, ax, slice(b + n, None))].sum(axis=ax,
                                                                            keepdims=True)
            elif p.mode == "reflect":
                # padded position j < b mirrors input b - j; b + n + t mirrors n - 2 - t
                if b:
                    inner[_axis_slice(g.ndim, ax, slice(1, b + 1))] += \
                        ctx.xp.flip(g[_axis_slice(g.ndim, ax, slice(0, b))], axis=ax)
                if e:
                    inner[_axis_slice(g.ndim, ax, slice(n - 1 - e, n - 1))] += \
                        ctx.xp.flip(g[_axis_slice(g.ndim, ax, slice(b + n, None))], axis=ax)
            g = inner
        return [g if g is not out_grads[0] else g.copy()]
