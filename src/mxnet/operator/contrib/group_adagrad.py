"""``group_adagrad_update`` (contrib): AdaGrad with one accumulated squared-gradient
value per row of the weight.

g = clip(rescale_grad * grad); history += mean(g^2 over all but the first axis);
weight -= lr * g / sqrt(history + epsilon). MXNet 1.9.1 implements it only for
row_sparse gradients on CPU; pymxnet applies the same rule to dense arrays (every row
is updated). ``history`` is an auxiliary state (updated in place), shape (rows, 1).
"""
import numpy as np

from ..ops.optimizer_ops import rescaled_grad
from ..params import Float, Schema
from ..registry import Op, ShapeError, register
from ._common import store

__all__ = ["GroupAdagradUpdate"]


@register
class GroupAdagradUpdate(Op):
    """One Group AdaGrad step; see the module docstring."""
    name = "_contrib_group_adagrad_update"
    writes_outputs = True
    params = Schema(lr=Float(), rescale_grad=Float(1.0), clip_gradient=Float(-1.0),
                    epsilon=Float(1e-5))
    backward_uses = ()

    def arguments(self, p):
        return ["weight", "grad"]

    def aux_states(self, p):
        return ["history"]

    def infer_shape(self, p, in_shapes):
        # arguments only (weight, grad); the history is the auxiliary state
        w, g = in_shapes[:2]
        h = in_shapes[2] if len(in_shapes) > 2 else None
        w = w if w is not None else g
        if w is None:
            return [w, g], [None], [h]
        if g is not None and tuple(g) != tuple(w):
            raise ShapeError(f"group_adagrad_update: grad {tuple(g)} must match weight "
                             f"{tuple(w)}")
        want = (w[0], 1)
        if h is not None and int(np.prod(h)) != w[0]:
            raise ShapeError(f"group_adagrad_update: history must have one value per row "
                             f"{want}, got {tuple(h)}")
        return [tuple(w), tuple(w)], [tuple(w)], [tuple(h) if h is not None else want]

    def forward(self, ctx, p, inputs, aux, out=None):
        xp = ctx.xp
        w, grad = inputs
        hist = aux[0]
        self.infer_shape(p, [w.shape, grad.shape, hist.shape])
        clip = p.clip_gradient if p.clip_gradient >= 0 else None
        g, _ = rescaled_grad(xp, grad, p.rescale_grad, clip, scratch=False)
        rows = g.reshape(g.shape[0], -1)
        hflat = hist.reshape(-1)
        hflat += (rows * rows).mean(axis=1).astype(hist.dtype)
        t = w.dtype.type
        denom = xp.sqrt(hflat.astype(w.dtype) + t(p.epsilon)).reshape((-1,) + (1,) * (w.ndim - 1))
        new = w - t(p.lr) * g / denom
        return [store(out, 0, new.astype(w.dtype, copy=False))]
