"""diag (part of MXNet's matrix_op family): build a matrix from a diagonal, or take
a diagonal of an N-D array."""
from ...base import MXNetError
from ..params import Int, Schema
from ..registry import register
from .shape_utils import ShapeOnlyBackward, norm_axis


def _diag_axes(p, shape):
    nd = len(shape)
    a1 = norm_axis("diag", p.axis1, nd, "axis1")
    a2 = norm_axis("diag", p.axis2, nd, "axis2")
    if a1 == a2:
        raise MXNetError(f"diag: axis1 and axis2 must differ, both are {a1}")
    d1, d2 = shape[a1], shape[a2]
    if d1 is not None and d2 is not None and (p.k > d2 or -p.k > d1):
        raise MXNetError(f"diag: k={p.k} is out of range for axes of sizes {d1} and {d2}")
    return a1, a2


def _diag_index(xp, k, d1, d2):
    n = max(0, min(d1 + min(k, 0), d2 - max(k, 0)))
    i = xp.arange(n)
    return i - min(k, 0), i + max(k, 0)


@register
class Diag(ShapeOnlyBackward):
    """A 1-D input becomes a matrix with it on diagonal ``k``; an N-D input gives its
    diagonal ``k`` over (axis1, axis2), appended as the last axis."""
    name = "diag"
    params = Schema(k=Int(0), axis1=Int(0), axis2=Int(1))

    def infer_shape(self, p, in_shapes):
        s = in_shapes[0]
        if s is None:
            return in_shapes, [None], []
        if len(s) == 1:
            n = None if s[0] is None else s[0] + abs(p.k)
            return in_shapes, [(n, n)], []
        a1, a2 = _diag_axes(p, s)
        d1, d2 = s[a1], s[a2]
        n = None if d1 is None or d2 is None else \
            max(0, min(d1 + min(p.k, 0), d2 - max(p.k, 0)))
        rest = tuple(d for i, d in enumerate(s) if i not in (a1, a2))
        return in_shapes, [rest + (n,)], []

    def forward(self, ctx, p, inputs, aux):
        x, xp = inputs[0], ctx.xp
        if x.ndim == 1:
            return [xp.diag(x, p.k)]
        a1, a2 = _diag_axes(p, x.shape)
        return [xp.diagonal(x, p.k, a1, a2)]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux):
        g, xp = out_grads[0], ctx.xp
        in_shape = tuple(ctx.in_shapes[0])
        if len(in_shape) == 1:
            return [xp.diagonal(g, p.k).copy()]
        a1, a2 = _diag_axes(p, in_shape)
        out = xp.zeros(in_shape, g.dtype)
        view = xp.moveaxis(out, (a1, a2), (-2, -1))
        rows, cols = _diag_index(xp, p.k, in_shape[a1], in_shape[a2])
        view[..., rows, cols] = g
        return [out]
