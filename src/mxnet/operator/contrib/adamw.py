"""AdamW update kernels ``_adamw_update`` and ``_mp_adamw_update`` (exposed as
``mx.nd.contrib.adamw_update`` / ``mp_adamw_update`` by wrappers that accept a float
``rescale_grad``), as in MXNet 1.9.1.

g = clip(rescale_grad * grad); mean = beta1 mean + (1-beta1) g; var = beta2 var +
(1-beta2) g^2; weight -= eta * (lr * mean / (sqrt(var) + epsilon) + wd * weight).
``rescale_grad`` is an array so a loss scaler can set it without a host round trip; when
it is 0, NaN or infinite the whole step is skipped (weight and states unchanged).
(MXNet 1.9.1 also overwrites ``grad`` with the rescaled gradient, a side effect
pymxnet does not reproduce: its inputs stay as given.)

As in ops/optimizer_ops.py, the mutated states (mean, var, and weight32 for the
multi-precision form) are auxiliary states; rescale_grad is placed after them (an aux
entry it never writes) so positional calls keep MXNet's order.
"""
import numpy as np

from ...base import MXNetError
from ..ops.optimizer_ops import rescaled_grad
from ..params import Float, Schema
from ..registry import Op, ShapeError, register
from ._common import store

__all__ = ["AdamWUpdate", "MPAdamWUpdate"]


class _AdamWBase(Op):
    writes_outputs = True
    params = Schema(lr=Float(), beta1=Float(0.9), beta2=Float(0.999), epsilon=Float(1e-8),
                    wd=Float(0.0), eta=Float(), clip_gradient=Float(-1.0))
    backward_uses = ()
    states = ("mean", "var")

    def arguments(self, p):
        return ["weight", "grad"]

    def aux_states(self, p):
        return list(self.states) + ["rescale_grad"]

    def infer_shape(self, p, in_shapes):
        # in_shapes are the arguments (weight, grad); the states and rescale_grad are
        # auxiliary inputs, checked in forward (_check_aux)
        w = next((s for s in in_shapes if s is not None), None)
        for s in in_shapes:
            if s is not None and w is not None and tuple(s) != tuple(w):
                raise ShapeError(f"{self.name}: every input must have the weight's shape "
                                 f"{tuple(w)}, got {tuple(s)}")
        n = len(self.states)
        return [w, w], [w], [w] * n + [(1,)]

    def infer_type(self, p, in_types):
        t = in_types[0]
        f32 = np.dtype(np.float32)
        states = [f32 if s in ("weight32",) or (self.states != ("mean", "var") and
                                                s in ("mean", "var")) else t
                  for s in self.states]
        return [t, t], [t], states + [in_types[-1] or f32]

    def _step(self, xp, p, w, grad, mean, var, rescale):
        ty = mean.dtype.type
        clip = p.clip_gradient if p.clip_gradient >= 0 else None
        g, tmp = rescaled_grad(xp, grad.astype(mean.dtype, copy=False), rescale, clip)
        # (1 - beta) is formed in the states' precision, as MXNet 1.9.1 does.
        b1, b2 = ty(p.beta1), ty(p.beta2)
        mean *= b1
        mean += (ty(1) - b1) * g
        var *= b2
        xp.multiply(g, g, out=tmp)
        tmp *= ty(1) - b2
        var += tmp
        xp.sqrt(var, out=g)
        g += ty(p.epsilon)
        xp.divide(mean, g, out=g)
        g *= ty(p.lr)
        xp.multiply(w, ty(p.wd), out=tmp)
        g += tmp
        g *= ty(p.eta)
        return xp.subtract(w, g, out=tmp)

    @staticmethod
    def _rescale(r):
        if r.size != 1:
            raise ShapeError(f"rescale_grad must hold one value, got shape {tuple(r.shape)}")
        v = float(r.reshape(-1)[0])
        return None if (v == 0 or not np.isfinite(v)) else v


@register
class AdamWUpdate(_AdamWBase):
    """One AdamW step (decoupled weight decay); see the module docstring."""
    name = "_adamw_update"

    def forward(self, ctx, p, inputs, aux, out=None):
        w, grad = inputs
        mean, var, r = aux
        if mean.shape != w.shape or var.shape != w.shape or grad.shape != w.shape:
            raise ShapeError(f"{self.name}: grad/mean/var must have the weight's shape "
                             f"{w.shape}")
        rescale = self._rescale(r)
        new = w.copy() if rescale is None else self._step(ctx.xp, p, w, grad, mean, var,
                                                          rescale)
        return [store(out, 0, new.astype(w.dtype, copy=False))]


@register
class MPAdamWUpdate(_AdamWBase):
    """AdamW for low-precision weights: the step runs on the float32 master copy
    ``weight32`` (updated in place) and the output is its cast to weight's dtype."""
    name = "_mp_adamw_update"
    states = ("mean", "var", "weight32")

    def infer_type(self, p, in_types):
        t = in_types[0]
        f32 = np.dtype(np.float32)
        return [t, t], [t], [f32, f32, f32, in_types[-1] or f32]

    def forward(self, ctx, p, inputs, aux, out=None):
        w, grad = inputs
        mean, var, w32, r = aux
        for nm, a in (("mean", mean), ("var", var), ("weight32", w32)):
            if a.dtype != np.float32:
                raise MXNetError(f"{self.name}: {nm} must be float32, got {a.dtype.name}")
        rescale = self._rescale(r)
        if rescale is not None:
            w32[...] = self._step(ctx.xp, p, w32, grad, mean, var, rescale)
        return [store(out, 0, w32.astype(w.dtype))]
