"""Contributed optimizers (``mx.optimizer.contrib``): GroupAdaGrad."""
from ..base import MXNetError
from ..ndarray import zeros
from ._kernel import apply_inplace
from .optimizer import Optimizer, register

__all__ = ["GroupAdaGrad"]


@register
class GroupAdaGrad(Optimizer):
    """AdaGrad with one history value per row of a 2-D weight (embeddings)::

        grad = clip(grad * rescale_grad, clip_gradient)
        history += mean(square(grad), axis=1, keepdims=True)
        weight -= lr * grad / sqrt(history + epsilon)

    Weight decay is not supported.

    Parameters
    ----------
    eps : float, default 1e-5
    """

    def __init__(self, eps=1e-5, **kwargs):
        super().__init__(**kwargs)
        self.float_stable_eps = eps

    def create_state(self, index, weight):
        if len(weight.shape) != 2:
            raise AssertionError("GroupAdaGrad needs 2-D weights, got shape "
                                 f"{weight.shape}")
        return zeros((weight.shape[0], 1), weight.context, stype=weight.stype)

    def update(self, index, weight, grad, state):
        lr, wd, _ = self._begin_update(index)
        if wd != 0:
            raise AssertionError("Weight decay is not supported for GroupAdaGrad")
        if grad.shape != weight.shape:
            raise MXNetError(f"GroupAdaGrad: grad shape {grad.shape} does not match weight "
                             f"shape {weight.shape}")
        rescale, clip, eps = self.rescale_grad, self.clip_gradient, self.float_stable_eps

        def rule(xp, g, w, history):
            t = w.dtype.type
            g = g * t(rescale)
            if clip is not None:
                xp.clip(g, -clip, clip, out=g)
            history += (g * g).mean(axis=1, keepdims=True)
            g /= xp.sqrt(history + history.dtype.type(eps))
            w -= g * t(lr)
        apply_inplace("group_adagrad_update", rule, [grad], [weight, state])
