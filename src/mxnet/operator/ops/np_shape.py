"""Shape operators of MXNet's NumPy mode: ``_np_reshape`` reshapes with NumPy's rules
(a target of ``()`` is a zero-dim array; -1 is inferred; no MXNet special codes)."""
import numpy as np

from ..params import Schema, Shape, Str
from ..registry import Op, ShapeError, register


def _np_target(shape, newshape):
    size = int(np.prod(shape, dtype=np.int64))
    known = int(np.prod([d for d in newshape if d != -1], dtype=np.int64))
    if list(newshape).count(-1) > 1 or (-1 in newshape and (known == 0 or size % known)) \
            or (-1 not in newshape and known != size):
        raise ShapeError(f"_np_reshape: cannot reshape array of shape {tuple(shape)} into "
                         f"shape {tuple(newshape)}")
    return tuple(size // known if d == -1 else d for d in newshape)


@register
class NumpyReshape(Op):
    """Reshape with NumPy's rules (``mx.np.reshape`` under autograd)."""
    name = "_np_reshape"
    params = Schema(newshape=Shape(), order=Str("C"))
    backward_uses = ("out_grad",)
    inplace = ((0, 0),)
    writes_outputs = True

    def infer_shape(self, p, in_shapes):
        s = in_shapes[0]
        return [s], [None if s is None else _np_target(tuple(s), p.newshape)], []

    def forward(self, ctx, p, inputs, aux, out=None):
        y = inputs[0].reshape(_np_target(inputs[0].shape, p.newshape))
        if out is not None and out[0] is not None:
            out[0][...] = y
            return [out[0]]
        return [y]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux, in_grad=None):
        return [out_grads[0].reshape(ctx.in_shapes[0])]
