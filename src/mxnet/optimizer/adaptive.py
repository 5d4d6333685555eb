"""Optimizers with per-element adaptive steps: Adam, AdaGrad, RMSProp, AdaDelta, Ftrl,
FTML, Adamax, Nadam, LAMB."""
import math
import os

import numpy

from ..operator.ops.optimizer_ops import moving_average, rescaled_grad
from ._kernel import apply_inplace, fused_rule_on_gpu
from .optimizer import Optimizer, _invoke, _state_stype, _zeros_like, register
from ..ndarray import empty

__all__ = ["Adam", "AdaGrad", "RMSProp", "AdaDelta", "Ftrl", "FTML", "Adamax", "Nadam",
           "LAMB"]


def _clip_kw(opt, kw, key="clip_gradient"):
    if opt.clip_gradient:
        kw[key] = opt.clip_gradient
    return kw


def _weight_like_states(weight, n, stype="default"):
    """n zero states of the weight's shape, context and dtype, of storage ``stype``."""
    return tuple(_zeros_like(weight, weight.dtype, stype) for _ in range(n))


@register
class Adam(Optimizer):
    """Adam (Kingma & Ba, 2014)::

        rescaled_grad = clip(grad * rescale_grad + wd * weight, clip_gradient)
        m = beta1 * m + (1 - beta1) * rescaled_grad
        v = beta2 * v + (1 - beta2) * (rescaled_grad**2)
        w = w - learning_rate * m / (sqrt(v) + epsilon)

    with the bias correction folded into the learning rate:
    ``lr * sqrt(1 - beta2**t) / (1 - beta1**t)``.

    Parameters
    ----------
    learning_rate : float, default 0.001
    beta1 : float, default 0.9
    beta2 : float, default 0.999
    epsilon : float, default 1e-8
    lazy_update : bool, default True
        Only changes row_sparse updates in MXNet; accepted.
    """

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8,
                 lazy_update=True, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta1 = beta1
        self.beta2 = beta2
        self.epsilon = epsilon
        self.lazy_update = lazy_update

    def create_state(self, index, weight):
        return _weight_like_states(weight, 2, _state_stype(self, weight))

    def update(self, index, weight, grad, state):
        lr, wd, t = self._begin_update(index)
        lr *= math.sqrt(1.0 - self.beta2 ** t) / (1.0 - self.beta1 ** t)
        kw = _clip_kw(self, {"beta1": self.beta1, "beta2": self.beta2,
                             "epsilon": self.epsilon, "rescale_grad": self.rescale_grad})
        mean, var = state
        if fused_rule_on_gpu("adam_update", weight, grad, [mean, var],
                             dict(lr=lr, wd=wd, **kw)):
            return          # one launch, written into the weight
        _invoke("adam_update", [weight, grad, mean, var], out=weight,
                lazy_update=self.lazy_update, lr=lr, wd=wd, **kw)


@register
class AdaGrad(Optimizer):
    """AdaGrad (Duchi et al., 2011)::

        grad = clip(grad * rescale_grad, clip_gradient)
        history += square(grad)
        weight -= lr * (grad / sqrt(history + eps) + wd * weight)

    Parameters
    ----------
    eps : float, default 1e-7
    """

    def __init__(self, eps=1e-7, **kwargs):
        super().__init__(**kwargs)
        self.float_stable_eps = eps

    def create_state(self, index, weight):
        return _zeros_like(weight, stype=weight.stype)

    def update(self, index, weight, grad, state):
        lr, wd, _ = self._begin_update(index)
        rescale, clip, eps = self.rescale_grad, self.clip_gradient, self.float_stable_eps

        def rule(xp, g, w, history):
            t = w.dtype.type
            g, tmp = rescaled_grad(xp, g, rescale, clip)
            xp.multiply(g, g, out=tmp)
            history += tmp
            xp.add(history, t(eps), out=tmp)
            xp.sqrt(tmp, out=tmp)
            g /= tmp                        # w -= lr * (g / sqrt(h + eps) + wd * w)
            if wd:
                xp.multiply(w, t(wd), out=tmp)
                g += tmp
            g *= t(lr)
            w -= g
        apply_inplace("adagrad_update", rule, [grad], [weight, state])


@register
class RMSProp(Optimizer):
    """RMSProp: Tieleman & Hinton's (``centered=False``, ``rmsprop_update``) or Graves'
    (``centered=True``, ``rmspropalex_update``).

    Parameters
    ----------
    learning_rate : float, default 0.001
    gamma1 : float, default 0.9
    gamma2 : float, default 0.9
    epsilon : float, default 1e-8
    centered : bool, default False
    clip_weights : float, optional
        Clip weights to [-clip_weights, clip_weights] after the update.
    """

    def __init__(self, learning_rate=0.001, gamma1=0.9, gamma2=0.9, epsilon=1e-8,
                 centered=False, clip_weights=None, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.gamma1 = gamma1
        self.gamma2 = gamma2
        self.centered = centered
        self.epsilon = epsilon
        self.clip_weights = clip_weights

    def create_state(self, index, weight):
        n = 3 if self.centered else 1
        return tuple(_zeros_like(weight, stype=weight.stype) for _ in range(n))

    def update(self, index, weight, grad, state):
        lr, wd, _ = self._begin_update(index)
        kw = _clip_kw(self, {"gamma1": self.gamma1, "epsilon": self.epsilon,
                             "rescale_grad": self.rescale_grad})
        if self.clip_weights:
            kw["clip_weights"] = self.clip_weights
        if self.centered:
            kw["gamma2"] = self.gamma2
            _invoke("rmspropalex_update", [weight, grad, *state], out=weight, lr=lr, wd=wd,
                    **kw)
        else:
            _invoke("rmsprop_update", [weight, grad, state[0]], out=weight, lr=lr, wd=wd,
                    **kw)


@register
class AdaDelta(Optimizer):
    """AdaDelta (Zeiler, 2012)::

        grad = clip(grad * rescale_grad, clip_gradient)
        acc_grad = rho * acc_grad + (1 - rho) * grad**2
        delta = sqrt(acc_delta + epsilon) / sqrt(acc_grad + epsilon) * grad
        acc_delta = rho * acc_delta + (1 - rho) * delta**2
        weight -= delta + wd * weight

    (MXNet's version also scales the caller's grad array in place; this one leaves
    grad untouched.)

    Parameters
    ----------
    rho : float, default 0.90
    epsilon : float, default 1e-5
    """

    def __init__(self, rho=0.90, epsilon=1e-5, **kwargs):
        super().__init__(**kwargs)
        self.rho = rho
        self.epsilon = epsilon

    def create_state(self, index, weight):
        return (_zeros_like(weight), _zeros_like(weight))

    def update(self, index, weight, grad, state):
        _, wd, _ = self._begin_update(index)
        rescale, clip, rho, eps = self.rescale_grad, self.clip_gradient, self.rho, \
            self.epsilon

        def rule(xp, g, w, acc_g, acc_delta):
            t = acc_g.dtype.type
            g, tmp = rescaled_grad(xp, g, rescale, clip)
            moving_average(xp, acc_g, g, rho, tmp, square=True)
            # delta = sqrt(acc_delta + eps) / sqrt(acc_g + eps) * g, kept in g
            xp.add(acc_delta, t(eps), out=tmp)
            xp.sqrt(tmp, out=tmp)
            g *= tmp
            xp.add(acc_g, t(eps), out=tmp)
            xp.sqrt(tmp, out=tmp)
            g /= tmp
            moving_average(xp, acc_delta, g, rho, tmp, square=True)
            if wd:
                xp.multiply(w, w.dtype.type(wd), out=tmp)
                g += tmp
            w -= g
        apply_inplace("adadelta_update", rule, [grad], [weight, *state])


@register
class Ftrl(Optimizer):
    """FTRL-Proximal (McMahan et al., 2013), via ``ftrl_update``.

    Parameters
    ----------
    lamda1 : float, default 0.01
        L1 regularisation coefficient.
    learning_rate : float, default 0.1
    beta : float, default 1.0
    """

    def __init__(self, lamda1=0.01, learning_rate=0.1, beta=1, **kwargs):
        super().__init__(**kwargs)
        self.lamda1 = lamda1
        self.beta = beta
        self.lr = learning_rate

    def create_state(self, index, weight):
        return (_zeros_like(weight, stype=weight.stype),     # z, n
                _zeros_like(weight, stype=weight.stype))

    def update(self, index, weight, grad, state):
        lr, wd, _ = self._begin_update(index)
        kw = _clip_kw(self, {"lamda1": self.lamda1, "beta": self.beta,
                             "rescale_grad": self.rescale_grad})
        z, n = state
        _invoke("ftrl_update", [weight, grad, z, n], out=weight, lr=lr, wd=wd, **kw)


@register
class FTML(Optimizer):
    """FTML, Follow the Moving Leader (Zheng & Kwok, 2017), via ``ftml_update``.

    Parameters
    ----------
    beta1 : float, default 0.6
    beta2 : float, default 0.999
    epsilon : float, default 1e-8
    """

    def __init__(self, beta1=0.6, beta2=0.999, epsilon=1e-8, **kwargs):
        super().__init__(**kwargs)
        self.beta1 = beta1
        self.beta2 = beta2
        self.epsilon = epsilon

    def create_state(self, index, weight):
        return _weight_like_states(weight, 3)   # d, v, z

    def update(self, index, weight, grad, state):
        lr, wd, t = self._begin_update(index)
        kw = _clip_kw(self, {"beta1": self.beta1, "beta2": self.beta2,
                             "epsilon": self.epsilon, "rescale_grad": self.rescale_grad,
                             "t": t}, key="clip_grad")
        _invoke("ftml_update", [weight, grad, *state], out=weight, lr=lr, wd=wd, **kw)


@register
class Adamax(Optimizer):
    """AdaMax, Adam's infinity-norm variant::

        grad = clip(grad * rescale_grad + wd * weight, clip_gradient)
        m = beta1 * m + (1 - beta1) * grad
        u = maximum(beta2 * u, abs(grad))
        weight -= lr / (1 - beta1**t) * m / u

    Parameters
    ----------
    learning_rate : float, default 0.002
    beta1 : float, default 0.9
    beta2 : float, default 0.999
    """

    def __init__(self, learning_rate=0.002, beta1=0.9, beta2=0.999, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta1 = beta1
        self.beta2 = beta2

    def create_state(self, index, weight):
        return _weight_like_states(weight, 2)

    def update(self, index, weight, grad, state):
        lr, wd, t = self._begin_update(index)
        lr /= 1.0 - self.beta1 ** t
        rescale, clip, b1, b2 = self.rescale_grad, self.clip_gradient, self.beta1, \
            self.beta2

        def rule(xp, g, w, m, u):
            ty = w.dtype.type
            g, tmp = rescaled_grad(xp, g, rescale, clip, w, wd)
            moving_average(xp, m, g, b1, tmp)
            u *= ty(b2)
            xp.maximum(u, xp.abs(g, out=g), out=u)
            xp.divide(m, u, out=tmp)
            tmp *= ty(lr)
            w -= tmp
        apply_inplace("adamax_update", rule, [grad], [weight, *state])


@register
class Nadam(Optimizer):
    """Nesterov-accelerated Adam (Dozat, 2016) with the momentum schedule
    ``beta1 * (1 - 0.5 * 0.96**(t * schedule_decay))``.

    Parameters
    ----------
    learning_rate : float, default 0.001
    beta1 : float, default 0.9
    beta2 : float, default 0.999
    epsilon : float, default 1e-8
    schedule_decay : float, default 0.004
    """

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8,
                 schedule_decay=0.004, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta1 = beta1
        self.beta2 = beta2
        self.epsilon = epsilon
        self.schedule_decay = schedule_decay
        # One schedule product for the whole optimizer, as in MXNet.
        self.m_schedule = 1.

    def create_state(self, index, weight):
        return _weight_like_states(weight, 2)

    def update(self, index, weight, grad, state):
        lr, wd, t = self._begin_update(index)
        mom_t = self.beta1 * (1. - 0.5 * (pow(0.96, t * self.schedule_decay)))
        mom_t1 = self.beta1 * (1. - 0.5 * (pow(0.96, (t + 1) * self.schedule_decay)))
        self.m_schedule = self.m_schedule * mom_t
        m_sched, m_sched_next = self.m_schedule, self.m_schedule * mom_t1
        rescale, clip, b1, b2, eps = self.rescale_grad, self.clip_gradient, self.beta1, \
            self.beta2, self.epsilon

        def rule(xp, g, w, m, v):
            ty = w.dtype.type
            g, tmp = rescaled_grad(xp, g, rescale, clip, w, wd)
            moving_average(xp, m, g, b1, tmp)
            moving_average(xp, v, g, b2, tmp, square=True)
            # m_bar = (1 - mom_t) * g / (1 - m_sched) + mom_t1 * m / (1 - m_sched_next)
            g *= ty((1. - mom_t) / (1. - m_sched))
            xp.multiply(m, ty(mom_t1 / (1. - m_sched_next)), out=tmp)
            g += tmp
            # w -= lr * m_bar / (sqrt(v / (1 - beta2^t)) + epsilon)
            xp.divide(v, ty(1. - pow(b2, t)), out=tmp)
            xp.sqrt(tmp, out=tmp)
            tmp += ty(eps)
            g /= tmp
            g *= ty(lr)
            w -= g
        apply_inplace("nadam_update", rule, [grad], [weight, *state])


@register
class LAMB(Optimizer):
    """LAMB, layer-wise adaptive moments (You et al., 2019), via
    ``lamb_update_phase1``/``lamb_update_phase2`` (trust ratio ||w|| / ||g||,
    ||w|| bounded by lower_bound/upper_bound when given).

    Parameters
    ----------
    learning_rate : float, default 0.001
    beta1 : float, default 0.9
    beta2 : float, default 0.999
    epsilon : float, default 1e-6
    lower_bound : float, optional
    upper_bound : float, optional
    bias_correction : bool, default True
    """

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-6,
                 lower_bound=None, upper_bound=None, bias_correction=True, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta1 = beta1
        self.beta2 = beta2
        self.epsilon = epsilon
        self.lower_bound = lower_bound
        self.upper_bound = upper_bound
        self.bias_correction = bias_correction
        self.aggregate_num = max(1, min(45, int(os.getenv("MXNET_OPTIMIZER_AGGREGATION_SIZE",
                                                          "45"))))

    def create_state(self, index, weight):
        return _weight_like_states(weight, 2, weight.stype)

    def _update_impl(self, index, weight, grad, state, multi_precision=False):
        if not isinstance(index, (list, tuple)):
            index, weight, grad, state = [index], [weight], [grad], [state]
        for i, w, g, s in zip(index, weight, grad, state):
            lr, wd, t = self._begin_update(i)
            kw = _clip_kw(self, {"beta1": self.beta1, "beta2": self.beta2,
                                 "epsilon": self.epsilon, "t": t,
                                 "bias_correction": self.bias_correction,
                                 "rescale_grad": self.rescale_grad, "wd": wd})
            bounds = {}
            if self.lower_bound:
                bounds["lower_bound"] = self.lower_bound
            if self.upper_bound:
                bounds["upper_bound"] = self.upper_bound
            if multi_precision:
                w32, (mean, var) = s
                direction = _invoke("mp_lamb_update_phase1", [w, g, mean, var, w32], **kw)
                r1, r2 = _l2(w32), _l2(direction)
                _invoke("mp_lamb_update_phase2", [w, direction, r1, r2, w32], out=w, lr=lr,
                        **bounds)
            else:
                mean, var = s
                direction = _invoke("lamb_update_phase1", [w, g, mean, var], **kw)
                r1, r2 = _l2(w), _l2(direction)
                _invoke("lamb_update_phase2", [w, direction, r1, r2], out=w, lr=lr, **bounds)

    def update(self, index, weight, grad, state):
        self._update_impl(index, weight, grad, state, multi_precision=False)

    def update_multi_precision(self, index, weight, grad, state):
        first = weight[0] if isinstance(weight, (list, tuple)) else weight
        use_mp = self.multi_precision and first.dtype == numpy.float16
        self._update_impl(index, weight, grad, state, multi_precision=use_mp)


def _l2(arr):
    """||arr||_2 as a 1-element NDArray of arr's dtype, computed on the device."""
    out = empty((1,), arr.context, arr.dtype)

    def norm(xp, a, o):
        a32 = a.astype(numpy.float32, copy=False).ravel()
        o[...] = xp.sqrt(xp.vdot(a32, a32))
    apply_inplace("lamb_norm", norm, [arr], [out])
    return out
