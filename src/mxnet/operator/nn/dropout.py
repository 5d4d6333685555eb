"""Dropout: in training (or always, with ``mode='always'``) zero each element with
probability ``p`` and scale the rest by 1/(1-p); otherwise the identity.

The random keep-mask (already scaled) is a hidden second output, ``mask``, that
backward multiplies the gradient by; it comes from the context's generator
(``ctx.rng``), so ``mx.random.seed`` makes it reproducible.
"""
import numpy as np

from ..params import Bool, Enum, Float, Optional, Schema, Shape
from ..registry import Op, ShapeError, register

__all__ = ["Dropout"]


@register
class Dropout(Op):
    """Randomly zero elements with probability ``p`` during training. ``axes`` lists
    axes along which one draw is shared (variational dropout: the mask has size 1 on
    them). ``mode='always'`` applies dropout in inference too. With p = 1 the scale
    1/(1-p) is infinite and every kept-or-not product 0 * inf, so the output and the
    gradient are NaN, as in MXNet 1.9.1."""
    name = "Dropout"
    float_only = True
    params = Schema(p=Float(0.5, low=0.0, high=1.0),
                    mode=Enum(("always", "training"), "training"),
                    axes=Shape(()), cudnn_off=Optional(Bool(), False))
    backward_uses = ("out_grad", "out_data")
    inplace = ((0, 0),)
    resources = ("random",)

    def outputs(self, p):
        return ["output", "mask"]

    def num_visible_outputs(self, p):
        return 1

    def infer_shape(self, p, in_shapes):
        d = in_shapes[0]
        if d is not None:
            for a in p.axes:
                if not -len(d) <= a < len(d):
                    raise ShapeError(f"Dropout: axis {a} in axes={p.axes} is out of range "
                                     f"for data with {len(d)} dimensions")
        return [d], [d, d], []

    def infer_type(self, p, in_types):
        return [in_types[0]], [in_types[0]] * 2, []

    @staticmethod
    def _active(ctx, p):
        return p.mode == "always" or ctx.is_train

    def forward(self, ctx, p, inputs, aux):
        xp, x = ctx.xp, inputs[0]
        if not self._active(ctx, p):
            # The mask is not read by an inference backward (MXNet leaves it unwritten).
            return [x.copy(), xp.empty(x.shape, x.dtype)]
        self.infer_shape(p, [x.shape])
        mshape = list(x.shape)
        for a in p.axes:
            mshape[a % x.ndim] = 1
        keep = 1.0 - p.p
        if keep <= 0.0:
            mask = xp.full(mshape, np.nan, x.dtype)     # 0 * (1 / 0), see the class doc
        else:
            mask = (ctx.rng.random(tuple(mshape), dtype=np.float32) < keep).astype(x.dtype)
            mask *= x.dtype.type(1.0 / keep)
        out = x * mask
        if mask.shape != x.shape:
            mask = xp.ascontiguousarray(xp.broadcast_to(mask, x.shape))
        return [out, mask]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux):
        g = out_grads[0]
        if not self._active(ctx, p):
            return [g]
        return [g * outputs[1]]
