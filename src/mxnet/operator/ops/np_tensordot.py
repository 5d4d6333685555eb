"""``_npi_tensordot``: NumPy's tensordot (``mx.np.tensordot``, ``inner``), differentiable.

The contracted axes are parameters (negative ones count from the end), so the operator
needs no shapes when a graph is built: ``mx.sym.np.tensordot`` is this operator too.
Each operand's gradient is the tensordot of the output gradient with the other operand
over that operand's kept axes, put back in the operand's axis order. A contraction
over no axes (a 0-d operand, or the 0-d output gradient of a full contraction) is an
outer product: CuPy's tensordot refuses a 0-d operand unless ``axes`` is 0 or
``((), ())``, so such products do not go through it.
"""
from ...base import MXNetError
from ..params import Schema, Shape
from ..registry import Op, ShapeError, register
from .np_dot import _tensordot
from .shape_utils import norm_axis


def axes_plan(a_axes, b_axes, a_ndim, b_ndim):
    """(contracted axes of a, of b, kept axes of a, of b), all non-negative."""
    if len(a_axes) != len(b_axes):
        raise MXNetError(f"tensordot: a_axes {a_axes} and b_axes {b_axes} differ in "
                         "length")
    ca, cb = [], []
    for axes, nd, out, name in ((a_axes, a_ndim, ca, "a"), (b_axes, b_ndim, cb, "b")):
        for ax in axes:
            out.append(norm_axis("tensordot", ax, nd, name=f"{name}_axes"))
        if len(set(out)) != len(out):
            raise MXNetError(f"tensordot: repeated axis in {name}'s axes {axes}")
    fa = [i for i in range(a_ndim) if i not in ca]
    fb = [i for i in range(b_ndim) if i not in cb]
    return ca, cb, fa, fb


def _argsort(labels):
    return sorted(range(len(labels)), key=labels.__getitem__)


@register
class TensorDot(Op):
    """Sum of products of a and b over the axes ``a_axes`` of a and ``b_axes`` of b
    (paired in order); the result has a's other axes, then b's."""
    name = "_npi_tensordot"
    params = Schema(a_axes=Shape(), b_axes=Shape())
    backward_uses = ("out_grad", "in_data")

    def arguments(self, p):
        return ["a", "b"]

    def plan(self, p, a_ndim, b_ndim):
        return axes_plan(p.a_axes, p.b_axes, a_ndim, b_ndim)

    def infer_shape(self, p, in_shapes):
        sa, sb = in_shapes
        if sa is None or sb is None:
            return in_shapes, [None], []
        ca, cb, fa, fb = self.plan(p, len(sa), len(sb))
        for i, j in zip(ca, cb):
            if sa[i] is not None and sb[j] is not None and sa[i] != sb[j]:
                raise ShapeError(f"tensordot: shape mismatch: axis {i} of a has size "
                                 f"{sa[i]}, axis {j} of b has {sb[j]}")
        return in_shapes, [tuple(sa[i] for i in fa) + tuple(sb[j] for j in fb)], []

    def infer_type(self, p, in_types):
        t = next((x for x in in_types if x is not None), None)
        return [t, t], [t], []

    def forward(self, ctx, p, inputs, aux):
        a, b = inputs
        ca, cb, _, _ = self.plan(p, a.ndim, b.ndim)
        self.infer_shape(p, [a.shape, b.shape])
        return [ctx.xp.ascontiguousarray(_tensordot(ctx.xp, a, b, (ca, cb)))]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux):
        xp, (a, b), g = ctx.xp, inputs, out_grads[0]
        ca, cb, fa, fb = self.plan(p, a.ndim, b.ndim)
        g = g.reshape([a.shape[i] for i in fa] + [b.shape[j] for j in fb])
        need = ctx.need_grad or (True, True)
        ga = gb = None
        if need[0]:
            # g's b-part against b's kept axes leaves b's contracted axes (in b's
            # order), each standing for its partner axis of a
            t = _tensordot(xp, g, b, (list(range(len(fa), g.ndim)), fb))
            labels = fa + [ca[cb.index(j)] for j in sorted(cb)]
            ga = xp.transpose(t, _argsort(labels)).astype(a.dtype, copy=False)
        if need[1]:
            t = _tensordot(xp, a, g, (fa, list(range(len(fa)))))
            labels = [cb[ca.index(i)] for i in sorted(ca)] + fb
            gb = xp.transpose(t, _argsort(labels)).astype(b.dtype, copy=False)
        return [ga, gb]

