"""diag (part of MXNet's matrix_op family): build a matrix from a diagonal, or take
a diagonal of an N-D array; and NumPy's ``_np_diag``/``_np_diagonal``, which give an
empty diagonal where the legacy operator rejects the offset."""
from ...base import MXNetError
from ..out_contract import adopt_out_contract
from ..params import Int, Schema
from ..registry import register
from .shape_utils import ShapeOnlyBackward, norm_axis


def _diag_axes(op, p, shape):
    nd = len(shape)
    # _np_diag has no axis parameters: its planes are always (0, 1)
    a1 = norm_axis(op.name, getattr(p, "axis1", 0), nd, "axis1")
    a2 = norm_axis(op.name, getattr(p, "axis2", 1), nd, "axis2")
    if a1 == a2:
        raise MXNetError(f"{op.name}: axis1 and axis2 must differ, both are {a1}")
    d1, d2, k = shape[a1], shape[a2], op.offset(p)
    if op.strict and d1 is not None and d2 is not None and (k > d2 or -k > d1):
        raise MXNetError(f"{op.name}: k={k} is out of range for axes of sizes {d1} and {d2}")
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
    # False: an offset past the matrix gives an empty diagonal (NumPy) instead of an error
    strict = True

    @staticmethod
    def offset(p):
        return p.k

    def infer_shape(self, p, in_shapes):
        s = in_shapes[0]
        if s is None:
            return in_shapes, [None], []
        if len(s) == 1:
            n = None if s[0] is None else s[0] + abs(self.offset(p))
            return in_shapes, [(n, n)], []
        a1, a2 = _diag_axes(self, p, s)
        d1, d2 = s[a1], s[a2]
        n = None if d1 is None or d2 is None else \
            max(0, min(d1 + min(self.offset(p), 0), d2 - max(self.offset(p), 0)))
        rest = tuple(d for i, d in enumerate(s) if i not in (a1, a2))
        return in_shapes, [rest + (n,)], []

    def forward(self, ctx, p, inputs, aux, out=None):
        x, xp = inputs[0], ctx.xp
        if x.ndim == 1:
            return [xp.diag(x, self.offset(p))]
        a1, a2 = _diag_axes(self, p, x.shape)
        return [xp.diagonal(x, self.offset(p), a1, a2)]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux, in_grad=None):
        g, xp = out_grads[0], ctx.xp
        in_shape = tuple(ctx.in_shapes[0])
        if len(in_shape) == 1:
            return [xp.diagonal(g, self.offset(p)).copy()]
        a1, a2 = _diag_axes(self, p, in_shape)
        out = xp.zeros(in_shape, g.dtype)
        view = xp.moveaxis(out, (a1, a2), (-2, -1))
        rows, cols = _diag_index(xp, self.offset(p), in_shape[a1], in_shape[a2])
        view[..., rows, cols] = g
        return [out]


@register
class NpDiag(Diag):
    """``mx.np.diag``: as ``diag`` with axes (0, 1); an offset beyond a 2-D input's
    extent gives an empty diagonal."""
    name = "_np_diag"
    params = Schema(k=Int(0))
    strict = False


@register
class NpDiagonal(Diag):
    """``mx.np.diagonal``: diagonal ``offset`` over (axis1, axis2) of an N-D (N >= 2)
    input, appended as the last axis; empty where the offset leaves no diagonal."""
    name = "_np_diagonal"
    params = Schema(offset=Int(0), axis1=Int(0), axis2=Int(1))
    strict = False

    @staticmethod
    def offset(p):
        return p.offset

    @staticmethod
    def _check_ndim(shape):
        if shape is not None and len(shape) < 2:
            raise MXNetError(f"_np_diagonal: the input must have at least 2 dimensions, "
                             f"got shape {tuple(shape)}")

    def infer_shape(self, p, in_shapes):
        self._check_ndim(in_shapes[0])
        return super().infer_shape(p, in_shapes)

    def forward(self, ctx, p, inputs, aux, out=None):
        # imperative calls may skip shape inference: a 1-D input must not build a matrix
        self._check_ndim(inputs[0].shape)
        return super().forward(ctx, p, inputs, aux, out)


adopt_out_contract(__name__)
