"""``_npi_roll``: NumPy's roll (``mx.np.roll`` and ``mx.sym.np.roll``), differentiable.

Shifts and axes are parameters, so a symbolic graph needs no shapes to build it; with
``axis=None`` the flattened array is rolled and the shape kept. The gradient rolls the
output gradient back by the negated shifts.
"""
from ...base import MXNetError
from ..contrib._common import store
from ..params import Schema, Shape, ShapeOrNone
from ..registry import Op, register


@register
class NpRoll(Op):
    """Elements shifted along axes (cyclically); ``axis=None``: over the flattened
    array."""
    name = "_npi_roll"
    params = Schema(shift=Shape(), axis=ShapeOrNone(None))
    backward_uses = ("out_grad",)
    writes_outputs = True

    def arguments(self, p):
        return ["data"]

    def check_params(self, p):
        if p.axis is not None and len(p.shift) not in (1, len(p.axis)):
            raise MXNetError(f"_npi_roll: shift {p.shift} and axis {p.axis} must have the "
                             "same length (or shift one value)")
        if p.axis is None and len(p.shift) != 1:
            raise MXNetError(f"_npi_roll: with axis=None, shift must be one integer, "
                             f"got {p.shift}")

    def _axes(self, p, ndim):
        if p.axis is None:
            return None
        for ax in p.axis:
            if not -ndim <= ax < max(ndim, 1):
                raise MXNetError(f"_npi_roll: axis {ax} is out of range for a {ndim}-d "
                                 "array")
        return tuple(p.axis)

    def infer_shape(self, p, in_shapes):
        d = in_shapes[0]
        if d is not None:
            self._axes(p, len(d))
        return [d], [d], []

    def _roll(self, xp, x, p, sign):
        axes = self._axes(p, x.ndim)
        shift = tuple(sign * s for s in p.shift)
        if axes is None:
            return xp.roll(x, shift[0])
        if len(shift) == 1 and len(axes) > 1:
            shift = shift * len(axes)
        return xp.roll(x, shift, axis=axes)

    def forward(self, ctx, p, inputs, aux, out=None):
        y = self._roll(ctx.xp, inputs[0], p, 1)
        return [store(out, 0, y)]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux, in_grad=None):
        g = self._roll(ctx.xp, out_grads[0], p, -1)
        return [store(in_grad, 0, g)]
