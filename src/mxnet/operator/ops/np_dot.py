"""``_np_dot``: NumPy's ``dot`` (behind ``mx.np.dot`` and ``mx.sym.np.dot``).

A 0-d operand multiplies; a 1-d ``b`` is contracted with ``a``'s last axis; otherwise
``a``'s last axis is contracted with ``b``'s second-to-last, giving shape
``a.shape[:-1] + b.shape[:-2] + b.shape[-1:]``. (The legacy ``dot`` contracts ``b``'s
first axis instead.) Zero-size operands give zero-size or zero-filled results."""
from ..contrib._common import store, store_all
from ..params import Schema
from ..registry import Op, ShapeError, register
from .linalg import _same_type


def _b_axis(b_ndim):
    """The axis of b that is contracted."""
    return 0 if b_ndim == 1 else b_ndim - 2


def _tensordot(xp, x, y, axes):
    """tensordot that also takes an empty contraction (an outer product) of a 0-d
    operand, which CuPy's tensordot refuses (the 1-d . 1-d gradient)."""
    if not axes[0]:
        return x.reshape(x.shape + (1,) * y.ndim) * y
    return xp.tensordot(x, y, axes=axes)


def _out_shape(a, b):
    if not a or not b:                      # a 0-d operand: an elementwise product
        return tuple(a or b)
    kb = _b_axis(len(b))
    if a[-1] is not None and b[kb] is not None and a[-1] != b[kb]:
        raise ShapeError(f"_np_dot: shapes {tuple(a)} and {tuple(b)} not aligned: "
                         f"{a[-1]} (dim {len(a) - 1}) != {b[kb]} (dim {kb})")
    return tuple(a[:-1]) + tuple(d for i, d in enumerate(b) if i != kb)


@register
class NpDot(Op):
    """NumPy's dot product of two arrays of the same dtype."""
    name = "_np_dot"
    params = Schema()
    backward_uses = ("out_grad", "in_data")
    writes_outputs = True

    def arguments(self, p):
        return ["a", "b"]

    def infer_type(self, p, in_types):
        return _same_type(self.name, in_types, 1)

    def infer_shape(self, p, in_shapes):
        a, b = in_shapes
        if a is None or b is None:
            return in_shapes, [None], []
        return in_shapes, [_out_shape(tuple(a), tuple(b))], []

    def forward(self, ctx, p, inputs, aux, out=None):
        a, b = inputs
        _out_shape(a.shape, b.shape)
        res = ctx.xp.dot(a, b) if a.ndim and b.ndim else a * b
        res = ctx.xp.asarray(res, dtype=a.dtype)
        return [store(out, 0, res)]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux, in_grad=None):
        xp, (a, b), g = ctx.xp, inputs, out_grads[0]
        if a.ndim == 0 or b.ndim == 0:
            ga, gb = g * b, g * a
            ga = ga if a.ndim else xp.sum(ga)
            gb = gb if b.ndim else xp.sum(gb)
        else:
            kb = _b_axis(b.ndim)
            b_free = [i for i in range(b.ndim) if i != kb]
            na = a.ndim - 1
            # g's axes: a's free axes, then b's free axes in order
            ga = _tensordot(xp, g, b, (list(range(na, g.ndim)), b_free))
            gb = xp.moveaxis(_tensordot(xp, a, g, (list(range(na)), list(range(na)))),
                             0, kb)
        res = [xp.asarray(ga, dtype=a.dtype).reshape(a.shape),
               xp.asarray(gb, dtype=b.dtype).reshape(b.shape)]
        return store_all(in_grad, res)
