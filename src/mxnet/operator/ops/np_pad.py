"""``_npi_pad``: NumPy's ``pad`` over every axis of an array of any rank (the legacy
``Pad`` operator only pads the spatial axes of 4-D/5-D arrays).

Like MXNet 1.9.1, the gradient is defined for mode 'constant' only: the other modes
copy input values into the border, and MXNet rejects their backward."""
from ...base import MXNetError
from ..contrib._common import store
from ..params import Enum, Field, Float, Schema, Str
from ..registry import register, ShapeError
from .shape_utils import ShapeOnlyBackward

_MODES = ("constant", "edge", "reflect", "symmetric", "maximum", "minimum")


class PadWidth(Field):
    """``pad_width`` as NumPy takes it: an int, a (before, after) pair, ((b, a),) or one
    pair per axis. Kept as a tuple of pairs; broadcasting to the rank is shape work."""
    kind = "tuple of <Shape(tuple)>"

    def convert(self, v):
        def ints(t):
            return tuple(int(x) for x in t)
        if isinstance(v, (int, float)):
            return ((int(v), int(v)),)
        v = tuple(v)
        if all(not isinstance(x, (tuple, list)) for x in v):
            if len(v) == 1:
                return ((int(v[0]), int(v[0])),)
            if len(v) == 2:
                return (ints(v),)
            raise ValueError("a flat pad_width must have 1 or 2 values")
        if any(len(x) not in (1, 2) for x in v):
            raise ValueError("each axis needs (before, after) or (pad,)")
        return tuple(ints(x) if len(x) == 2 else (int(x[0]), int(x[0])) for x in v)


def _pairs(p, shape):
    """One (before, after) pair per axis of an input of this shape, checked."""
    pw, nd = p.pad_width, len(shape)
    if len(pw) == 1:
        pw = pw * nd
    if len(pw) != nd:
        raise ShapeError(f"_npi_pad: pad_width has {len(pw)} (before, after) pairs for a "
                         f"{nd}-D input of shape {tuple(shape)}")
    if any(b < 0 or a < 0 for b, a in pw):
        raise MXNetError(f"_npi_pad: pad_width must be non-negative, got {p.pad_width}")
    if p.mode in ("maximum", "minimum", "edge", "reflect", "symmetric"):
        for ax, ((b, a), d) in enumerate(zip(pw, shape)):
            if d == 0 and (b or a):
                raise MXNetError(f"_npi_pad: mode '{p.mode}' cannot pad the empty axis {ax}")
    return pw


@register
class NpPad(ShapeOnlyBackward):
    """Pad every axis of the input by ``pad_width``; ``mode`` as in NumPy's ``pad``
    ('constant' fills with ``constant_value``; 'reflect'/'symmetric' mirror without or
    with the edge value; 'edge' repeats it; 'maximum'/'minimum' use the axis' extreme)."""
    name = "_npi_pad"
    params = Schema(pad_width=PadWidth(), mode=Enum(_MODES, default="constant"),
                    constant_value=Float(0.0), reflect_type=Str("even"))
    writes_outputs = True

    def infer_shape(self, p, in_shapes):
        s = in_shapes[0]
        if s is None or any(d is None for d in s):
            return in_shapes, [None], []
        pw = _pairs(p, s)
        return in_shapes, [tuple(d + b + a for d, (b, a) in zip(s, pw))], []

    def forward(self, ctx, p, inputs, aux, out=None):
        x = inputs[0]
        pw = _pairs(p, x.shape)
        if p.mode == "constant":
            y = ctx.xp.pad(x, pw, mode="constant", constant_values=p.constant_value)
        elif p.mode in ("reflect", "symmetric"):
            y = ctx.xp.pad(x, pw, mode=p.mode, reflect_type=p.reflect_type)
        else:
            y = ctx.xp.pad(x, pw, mode=p.mode)
        return [store(out, 0, y)]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux, in_grad=None):
        if p.mode != "constant":
            raise MXNetError(f"_npi_pad: the gradient of mode '{p.mode}' is not supported "
                             f"(MXNet defines it for mode 'constant' only)")
        shape = tuple(ctx.in_shapes[0])
        pw = _pairs(p, shape)
        g = out_grads[0][tuple(slice(b, b + d) for (b, _), d in zip(pw, shape))]
        if in_grad is not None and in_grad[0] is not None:
            in_grad[0][...] = g
            return [in_grad[0]]
        return [g.copy()]


__all__ = ["NpPad", "PadWidth"]
