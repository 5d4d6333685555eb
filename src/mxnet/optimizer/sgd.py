"""SGD and its relatives: SGD, ccSGD, NAG, Signum, LARS, LBSGD, DCASGD, SGLD, Test.

The rules with a fused operator call it with ``out=weight`` (states are updated in
place by the operator); the others run as one in-place kernel (``_kernel``).
"""
import logging
import math
import os
import warnings

import numpy

from ..operator.ops.optimizer_ops import rescaled_grad
from ._kernel import apply_inplace
from .optimizer import Optimizer, _invoke, _state_stype, _zeros_like, register
from ..backend import array_module
from ..engine import base as engine_base
from ..resource import get_rng

__all__ = ["SGD", "ccSGD", "NAG", "Signum", "LARS", "LBSGD", "DCASGD", "SGLD", "Test"]


def _as_lists(indices, weights, grads, states):
    if isinstance(indices, (list, tuple)):
        return list(indices), list(weights), list(grads), list(states)
    return [indices], [weights], [grads], [states]


class _MomentumSGDBase(Optimizer):
    """What SGD, LARS and NAG share: a momentum buffer (None when momentum is 0) and,
    for float16 weights with multi_precision, the state ``(momentum, weight32)``."""

    def __init__(self, momentum=0.0, **kwargs):
        super().__init__(**kwargs)
        self.momentum = momentum

    def create_state_multi_precision(self, index, weight):
        if self.multi_precision and weight.dtype == numpy.float16:
            master = weight.astype(numpy.float32)
            return (self.create_state(index, master), master)
        if weight.dtype == numpy.float16 and not self.multi_precision:
            warnings.warn("Accumulating with float16 in optimizer can lead to poor accuracy "
                          "or slow convergence. Consider using multi_precision=True option "
                          f"of the {type(self).__name__} optimizer")
        return self.create_state(index, weight)

    # the momentum takes the weight's storage type (SGD, LARS; NAG's is always dense)
    _sparse_momentum = True

    def create_state(self, index, weight):
        if self.momentum == 0.0:
            return None
        stype = _state_stype(self, weight) if self._sparse_momentum else "default"
        return _zeros_like(weight, weight.dtype, stype)

    def _op_kwargs(self, momentum=None):
        kw = {"rescale_grad": self.rescale_grad}
        momentum = self.momentum if momentum is None else momentum
        if self.momentum > 0:
            kw["momentum"] = momentum
        if self.clip_gradient:
            kw["clip_gradient"] = self.clip_gradient
        return kw

    def _step(self, weight, grad, state, lr, wd, multi_precision, kw, mom_op="sgd_mom_update"):
        """One weight: the (mp_)sgd(_mom) or nag operator with out=weight."""
        if not multi_precision:
            if state is not None:
                _invoke(mom_op, [weight, grad, state], out=weight, lr=lr, wd=wd, **kw)
            else:
                _invoke("sgd_update", [weight, grad], out=weight, lr=lr, wd=wd, **kw)
            return
        mom, w32 = state                      # (momentum or None, float32 master copy)
        if mom is not None:
            _invoke("mp_" + mom_op, [weight, grad, mom, w32], out=weight, lr=lr, wd=wd, **kw)
        else:
            _invoke("mp_sgd_update", [weight, grad, w32], out=weight, lr=lr, wd=wd, **kw)

    def _use_mp(self, weight):
        first = weight[0] if isinstance(weight, (list, tuple)) else weight
        return self.multi_precision and first.dtype == numpy.float16

    def update(self, index, weight, grad, state):
        self._update_impl(index, weight, grad, state, multi_precision=False)

    def update_multi_precision(self, index, weight, grad, state):
        self._update_impl(index, weight, grad, state, multi_precision=self._use_mp(weight))


@register
class SGD(_MomentumSGDBase):
    """Stochastic gradient descent with momentum and weight decay::

        rescaled_grad = lr * (rescale_grad * clip(grad, clip_gradient) + wd * weight)
        state = momentum * state + rescaled_grad
        weight = weight - state

    Parameters
    ----------
    momentum : float, default 0.0
    lazy_update : bool, default True
        Only changes row_sparse updates in MXNet; accepted (pymxnet is dense).
    multi_precision : bool, default False
        Update a float32 master copy of float16 weights.
    """

    @property
    def gates_updates(self):
        """Every path of SGD's own update honours AMP's gate itself (a subclass that
        changes the update is gated by the Updater instead)."""
        cls = type(self)
        return cls._update_impl is SGD._update_impl and \
            cls.update is _MomentumSGDBase.update and \
            cls.update_multi_precision is _MomentumSGDBase.update_multi_precision

    def __init__(self, momentum=0.0, lazy_update=True, **kwargs):
        super().__init__(momentum=momentum, **kwargs)
        self.lazy_update = lazy_update
        # MXNet's size of one multi_sgd_update group; pymxnet's Updater hands SGD the
        # whole list of one dtype (_aggregate_size), updated in one fused step
        self.aggregate_num = int(os.getenv("MXNET_OPTIMIZER_AGGREGATION_SIZE", "4"))

    def _update_impl(self, indices, weights, grads, states, multi_precision=False):
        indices, weights, grads, states = _as_lists(indices, weights, grads, states)
        self._update_count(indices)
        lrs, wds = self._get_lrs(indices), self._get_wds(indices)
        kw = self._op_kwargs()
        gate = self._gate
        if not multi_precision and len(weights) > 1:
            # one engine step for the list (on the GPU: one multi-tensor launch)
            plan = self._fused_plan(weights, grads, states)
            if plan is not None:
                plan.run(lrs, wds, kw, gate)
                return
        if gate is not None and gate.skip():
            return          # AMP: this step's gradients overflowed
        if self._multi_ok(weights, states, multi_precision):
            # one multi_sgd(_mom)_update call for the group, as MXNet's SGD does when
            # aggregating (lists the fused step does not take, or under the profiler)
            args = []
            for w, g, s in zip(weights, grads, states):
                args += [w, g] + ([s] if s is not None else [])
            op = "multi_sgd_mom_update" if states[0] is not None else "multi_sgd_update"
            _invoke(op, args, out=list(weights), lrs=tuple(lrs), wds=tuple(wds),
                    num_weights=len(weights), **kw)
            return
        kw["lazy_update"] = self.lazy_update     # row_sparse gradients: present rows only
        for w, g, s, lr, wd in zip(weights, grads, states, lrs, wds):
            self._step(w, g, s, lr, wd, multi_precision, kw)

    def _aggregate_size(self, weights):
        # a list runs as one fused step (_FusedSGD) of any length, on the GPU as one
        # multi-tensor launch: one call for all of them saves the per-call work
        return max(self.aggregate_num, len(weights))

    def _fused_plan(self, weights, grads, states):
        """The fused step for this list of arrays (None: not fusable), kept while the
        same arrays come back (Module's updater passes the same ones every batch), so
        the checks and the scratch buffer are made once."""
        if engine_base.profile_hook is not None:     # the profile shows each update
            return None
        key = tuple(map(id, weights)) + tuple(map(id, grads)) + tuple(map(id, states))
        cache = self.__dict__.setdefault("_fused_plans", {})
        plan = cache.get(key)
        if plan is None:
            if not _fusable(weights, grads, states):
                return None
            if len(cache) >= 64:                      # arrays rebound: drop old plans
                cache.clear()
            # the plan holds the arrays, so their ids cannot be reused meanwhile
            plan = cache[key] = _FusedSGD(weights, grads, states)
        return plan

    def __getstate__(self):
        state = super().__getstate__()
        state.pop("_fused_plans", None)       # arrays and scratch: not optimizer state
        return state

    def _multi_ok(self, weights, states, multi_precision):
        """Whether a group goes to one multi_sgd(_mom)_update: several float32/64
        weights on a GPU, all with or all without momentum (CPU groups keep the
        per-weight operators)."""
        if multi_precision or len(weights) < 2 or self.aggregate_num < 2:
            return False
        if any(w.context.device_type != "gpu" or w.dtype not in (numpy.float32,
                                                                  numpy.float64)
               for w in weights):
            return False
        return all(s is None for s in states) or all(s is not None and not isinstance(
            s, (tuple, list)) for s in states)


def _fusable(weights, grads, states):
    """Whether a list update can run as one fused step: plain dense arrays on one
    context, each gradient and momentum of its weight's shape and dtype (what the
    update operators would check; anything else takes the per-weight operators, which
    raise their errors)."""
    from ..ndarray import NDArray
    ctx = weights[0].context
    for w, g, s in zip(weights, grads, states):
        for a in (w, g) if s is None else (w, g, s):
            if type(a) is not NDArray or a.context != ctx or a.shape != w.shape \
                    or a.dtype != w.dtype:
                return False
    return True


class _FusedSGD:
    """(Momentum) SGD on a list of weights as one engine step (MXNet's multi_sgd_update
    / multi_sgd_mom_update): the same rules as sgd_update / sgd_mom_update, run
    back to back over the raw arrays, instead of one operator dispatch (parameter
    parsing, shape and dtype inference, an engine push) per weight. Made once per list
    of arrays (checked by ``_fusable``), with one scratch buffer of the largest
    weight's size that every weight's rule uses in turn."""

    def __init__(self, weights, grads, states):
        self.weights, self.grads, self.states = list(weights), list(grads), list(states)
        self.has_mom = [s is not None for s in states]
        self.writes = self.weights + [s for s in states if s is not None]
        self.ctx = weights[0].context
        self.n = len(weights)
        self.scratch = None      # per weight, views of the scratch (_buffers)

    def _buffers(self, xp, arrays, decay):
        """Per weight, scratch views (a buffer for the rule, and one for the weight
        decay term when ``decay``, else None) of flat buffers, one per dtype of the
        largest weight's size, made at the first use."""
        views = self.scratch
        if views is not None and (views[0][1] is not None or not decay):
            return views
        size = {}
        for w in arrays:
            size[w.dtype] = max(size.get(w.dtype, 0), w.size)
        flat = {dt: (xp.empty(n, dt), xp.empty(n, dt) if decay else None)
                for dt, n in size.items()}
        views = self.scratch = [
            tuple(None if b is None else b[:w.size].reshape(w.shape) for b in flat[w.dtype])
            for w in arrays]
        return views

    def run(self, lrs, wds, kw, gate=None):
        """The step; ``gate`` (AMP's, or None): on a GPU the multi-tensor kernel reads
        it on the device, elsewhere it is asked first (a host wait)."""
        clip = kw.get("clip_gradient")
        clip = -1.0 if clip is None else clip
        rescale, momentum = kw["rescale_grad"], kw.get("momentum", 0.0)
        n, has_mom = self.n, self.has_mom

        def run(xp, *arrays):
            gs, ws, moms = arrays[:n], arrays[n:2 * n], iter(arrays[2 * n:])
            ms = [next(moms) if m else None for m in has_mom]
            todo = range(n)
            flag = None if gate is None or xp is numpy else gate.device_flag(xp)
            if gate is not None and flag is None and gate.skip():
                return      # AMP: overflowed (a gate no kernel here can read: asked first)
            if xp is not numpy:
                todo = _sgd_multi_tensor(xp, ws, gs, ms, lrs, wds, rescale, momentum, clip,
                                         flag)
                if not todo:
                    return
            if gate is not None and gate.skip():
                return
            bufs = self._buffers(xp, ws, any(wds))
            for i in todo:
                _sgd_in_place(xp, ws[i], gs[i], ms[i], lrs[i], wds[i], rescale, momentum,
                              clip, *bufs[i])
        apply_inplace("multi_sgd_update", run, self.grads, self.writes, self.ctx,
                      checked=True)


def _sgd_multi_tensor(xp, ws, gs, ms, lrs, wds, rescale, momentum, clip, gate=None):
    """sgd_update's / sgd_mom_update's rule over the weights on a GPU, written into the
    weights (and momenta): one multi-tensor launch for those with momentum, one for
    those without (operator.kernels_gpu_multi; ``gate``: AMP's device flag, 0 skips).
    Returns the indices it could not take (their arrays are not what the kernel takes:
    float16, strided)."""
    from ..operator.kernels_gpu_multi import multi_update
    from ..operator.kernels_gpu_optim import RULES
    left = []
    for name, with_mom in (("sgd_mom_update", True), ("sgd_update", False)):
        idx = [i for i, m in enumerate(ms) if (m is not None) == with_mom]
        if not idx:
            continue
        groups = [[ws[i], gs[i]] + ([ms[i]] if with_mom else []) + [ws[i]] for i in idx]
        scalars = [[{"lr": lrs[i], "wd": wds[i], "momentum": momentum,
                     "rescale_grad": rescale, "clip_gradient": clip}[p]
                    for p in RULES[name][0]] for i in idx]
        if not multi_update(xp, name, groups, scalars, gate):
            left += idx
    return sorted(left)


def _sgd_in_place(xp, w, grad, mom, lr, wd, rescale, momentum, clip, tmp, decay):
    """sgd_update's (``mom`` None) or sgd_mom_update's rule written straight into w
    (and mom), the same operations in the same order as the operators' ``_sgd`` /
    ``_sgd_mom`` (so the same values); ``tmp``/``decay``: scratch of w's shape (fresh
    temporaries of a large weight's size cost page faults every step)."""
    ty = w.dtype.type
    xp.multiply(grad, grad.dtype.type(rescale), out=tmp)
    if clip >= 0:
        xp.clip(tmp, -clip, clip, out=tmp)
    if mom is None:
        tmp *= ty(lr)
        factor = ty(1.0 - lr * wd)
        if factor != 1:               # w * 1 is w: skipping it changes no value
            w *= factor
        w -= tmp
        return
    ty = mom.dtype.type
    if wd:                            # weight decay is not clipped here
        xp.multiply(w, ty(wd), out=decay)
        tmp += decay
    tmp *= ty(lr)
    mom *= ty(momentum)
    mom -= tmp
    w += mom


@register
class ccSGD(SGD):  # noqa: N801  (MXNet's name)
    """[Deprecated] The same as SGD."""


@register
class NAG(_MomentumSGDBase):
    """Nesterov accelerated gradient::

        state = momentum * state - lr * (clip(rescale_grad * grad) + wd * weight)
        weight = weight + momentum * state - lr * (clip(rescale_grad * grad) + wd * weight)

    Parameters
    ----------
    momentum : float, default 0.0
    multi_precision : bool, default False
    """
    _sparse_momentum = False

    def _update_impl(self, index, weight, grad, state, multi_precision=False):
        lr, wd, _ = self._begin_update(index)
        self._step(weight, grad, state, lr, wd, multi_precision, self._op_kwargs(),
                   mom_op="nag_mom_update")

    def update_multi_precision(self, index, weight, grad, state):
        use_mp = self._use_mp(weight) and isinstance(state, (tuple, list))
        self._update_impl(index, weight, grad, state, multi_precision=use_mp)


@register
class Signum(Optimizer):
    """signSGD (momentum 0) and Signum::

        rescaled_grad = rescale_grad * clip(grad, clip_gradient) + wd * weight
        state = momentum * state + (1 - momentum) * rescaled_grad
        weight = (1 - lr * wd_lh) * weight - lr * sign(state)

    Parameters
    ----------
    learning_rate : float, default 0.01
    momentum : float, default 0.9
    wd_lh : float, default 0.0
        Decoupled weight decay.
    """

    def __init__(self, learning_rate=0.01, momentum=0.9, wd_lh=0.0, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.momentum = momentum
        self.wd_lh = wd_lh

    def create_state(self, index, weight):
        return None if self.momentum == 0.0 else _zeros_like(weight, weight.dtype,
                                                             weight.stype)

    def update(self, index, weight, grad, state):
        lr, wd, _ = self._begin_update(index)
        kw = {"rescale_grad": self.rescale_grad}
        if self.momentum > 0:
            kw["momentum"] = self.momentum
        if self.clip_gradient:
            kw["clip_gradient"] = self.clip_gradient
        if state is not None:
            if self.wd_lh:
                kw["wd_lh"] = self.wd_lh
            _invoke("signum_update", [weight, grad, state], out=weight, lr=lr, wd=wd, **kw)
        else:
            _invoke("signsgd_update", [weight, grad], out=weight, lr=lr, wd=wd, **kw)


def _sq_norm(xp, a, scale=1.0):
    a = a.astype(numpy.float32)
    if scale != 1.0:
        a = a * numpy.float32(scale)
    return float(xp.vdot(a.ravel(), a.ravel()))


def _norm(arr, scale=1.0):
    """L2 norm of an NDArray as a Python float (computed in float32, as MXNet)."""
    return math.sqrt(_sq_norm(array_module(arr.context), arr._read(), scale))


def _no_lars(name):
    return name.endswith("gamma") or name.endswith("beta") or name.endswith("bias")


@register
class LARS(_MomentumSGDBase):
    """Layer-wise adaptive rate scaling (You et al., 2017): SGD with momentum where the
    lr of every layer except biases and batch-norm parameters is scaled::

        lr_layer = lr * eta * ||w|| / (||g|| + wd * ||w|| + eps)   (if both norms > 0)

    Parameters
    ----------
    momentum : float, default 0.0
    lazy_update : bool, default True
    eta : float, default 0.001
    eps : float, default 0
    momentum_correction : bool, default True
        Scale the momentum by the lr ratio when a scheduler changes the lr.
    """

    def __init__(self, momentum=0.0, lazy_update=True, eta=0.001, eps=0,
                 momentum_correction=True, **kwargs):
        super().__init__(momentum=momentum, **kwargs)
        self.momentum_correction = momentum_correction
        self.lazy_update = lazy_update
        self.aggregate_num = int(os.getenv("MXNET_OPTIMIZER_AGGREGATION_SIZE", "4"))
        self.eta = eta
        self.eps = eps
        self.skip = 0
        self.last_lr = None
        self.cur_lr = None

    def _get_lrs(self, indices):
        lr = self._base_lr()
        self.last_lr = lr if self.cur_lr is None else self.cur_lr
        self.cur_lr = lr
        return super()._get_lrs(indices)

    def set_wd_mult(self, args_wd_mult):
        """As Optimizer.set_wd_mult, but only ``_weight`` parameters keep weight decay."""
        self.wd_mult = {n: 0.0 for n in self.idx2name.values() if not n.endswith("_weight")}
        self.wd_mult.update(self._sym_mults("__wd_mult__"))
        self.wd_mult.update(args_wd_mult)

    def _l2norm(self, v, rescale=False):
        return _norm(v, self.rescale_grad if rescale else 1.0)

    def _get_lars(self, i, weight, g, lr, wd):
        """The layer's learning rate."""
        name = self.idx2name.get(i, str(i))
        if _no_lars(name):
            return lr
        w_norm = self._l2norm(weight)
        g_norm = self._l2norm(g, rescale=True)
        if w_norm > 0.0 and g_norm > 0.0:
            return lr * self.eta * w_norm / (g_norm + wd * w_norm + self.eps)
        return lr

    def _update_impl(self, indices, weights, grads, states, multi_precision=False):
        indices, weights, grads, states = _as_lists(indices, weights, grads, states)
        self._update_count(indices)
        lrs, wds = self._get_lrs(indices), self._get_wds(indices)
        momentum = self.momentum
        if self.momentum > 0 and self.momentum_correction and self.last_lr != 0:
            momentum = self.momentum * (self.cur_lr / self.last_lr)
        kw = self._op_kwargs(momentum)
        for i, w, g, s, lr, wd in zip(indices, weights, grads, states, lrs, wds):
            # MXNet's fused path computes the norms of the float16 weight itself.
            self._step(w, g, s, self._get_lars(i, w, g, lr, wd), wd, multi_precision, kw)


@register
class LBSGD(Optimizer):
    """Large-batch SGD: momentum SGD whose lr is warmed up (strategies 'linear',
    'power2', 'sqrt') or set layer-wise ('lars'), with gradients accumulated over
    ``batch_scale`` steps before each update.

    Parameters
    ----------
    momentum : float, default 0.0
    multi_precision : bool, default False
    warmup_strategy : str, default 'linear'
    warmup_epochs : int, default 5
    batch_scale : int, default 1
    updates_per_epoch : int, default 32
    begin_epoch : int, default 0
    num_epochs : int, default 60
    """

    def __init__(self, momentum=0.0, multi_precision=False, warmup_strategy="linear",
                 warmup_epochs=5, batch_scale=1, updates_per_epoch=32, begin_epoch=0,
                 num_epochs=60, **kwargs):
        super().__init__(**kwargs)
        logging.info("Running Large-Batch SGD Algorithm")
        logging.info("(Batch_scale=%f, warmup_epochs=%d, warmup_strategy=%s, "
                     "updates_per_epoch=%d)", batch_scale, warmup_epochs, warmup_strategy,
                     updates_per_epoch)
        self.momentum = momentum
        self.multi_precision = multi_precision
        self.warmup_strategy = warmup_strategy
        self.warmup_epochs = warmup_epochs
        self.batch_scale = batch_scale
        self.updates_per_epoch = updates_per_epoch
        self.init_updates = begin_epoch * updates_per_epoch
        self.num_epochs = num_epochs
        self.lbmult = 1
        self.cumgrads = {}
        self.adaptive = False
        self.admult = 1

    def create_state(self, index, weight):
        if self.multi_precision and weight.dtype == numpy.float16:
            master = weight.astype(numpy.float32)
            mom = _zeros_like(weight, stype=weight.stype) if self.momentum != 0.0 else None
            return (mom, master)
        if weight.dtype == numpy.float16 and not self.multi_precision:
            warnings.warn("Accumulating with float16 in optimizer can lead to poor accuracy "
                          "or slow convergence. Consider using multi_precision=True option "
                          "of the SGD optimizer")
        return _zeros_like(weight, weight.dtype, weight.stype) if self.momentum != 0.0 \
            else None

    def _get_lbmult(self, nup):
        """The warm-up lr multiplier after nup accumulated updates."""
        nwup = self.warmup_epochs * self.updates_per_epoch
        maxmult = float(self.batch_scale)
        if nup >= nwup:
            return maxmult
        if nwup <= 1:
            return 1.0
        frac = float(nup) / nwup
        ramp = {"linear": frac, "power2": frac * frac, "sqrt": math.sqrt(frac)}
        if self.warmup_strategy not in ramp:
            return 1.0
        return 1.0 + (maxmult - 1) * ramp[self.warmup_strategy]

    def _l2norm(self, v):
        """Squared L2 norm (MXNet's LBSGD calls the inner product a norm)."""
        return _sq_norm(array_module(v.context), v._read())

    def _get_lars(self, weight, g, wd):
        """The layer-wise multiplier, clipped to [0.01, 100]."""
        w2, g2 = self._l2norm(weight), self._l2norm(g)
        lars = math.sqrt(w2 / (g2 + wd * w2 + 1e-18))
        return min(max(lars, 0.01), 100)

    def _reset_cum_gradient(self, index):
        self.cumgrads[index]["cum_grad"] = 0

    def _get_cum_gradient(self, index):
        return self.cumgrads.get(index, {})

    def _put_cum_gradient(self, index, cgrad):
        self.cumgrads[index] = cgrad

    def _cumulate_gradient(self, grad, index):
        """Add grad to index's running sum; returns {'cum_grad', 'num_cums'}."""
        cgrad = self._get_cum_gradient(index)
        if cgrad and cgrad["num_cums"] > 0:
            cum = cgrad["cum_grad"]
            cum_grad = grad.copy() if isinstance(cum, int) else _added(cum, grad)
            num_cums = cgrad["num_cums"] + 1
        else:
            cum_grad, num_cums = grad, self.init_updates + 1
        cgrad = {"cum_grad": cum_grad, "num_cums": num_cums}
        self._put_cum_gradient(index, cgrad)
        return cgrad

    def update(self, index, weight, grad, state):
        lr, wd = self._get_lr(index), self._get_wd(index)
        self._update_count(index)
        cgrad = self._cumulate_gradient(grad, index)
        if cgrad["num_cums"] % self.batch_scale != 0:
            # Not yet a full macro-batch: MXNet runs sgd_update with lr 0.
            _invoke("sgd_update", [weight, grad], out=weight, lr=0.0, wd=wd)
            return
        grad = _scaled_copy(cgrad["cum_grad"], 1.0 / self.batch_scale)
        if self.warmup_strategy == "lars":
            lr *= self._get_lars(weight, grad, wd)
        else:
            lr *= self._get_lbmult(cgrad["num_cums"])
        kw = {"rescale_grad": self.rescale_grad}
        if self.momentum > 0:
            kw["momentum"] = self.momentum
        if self.clip_gradient:
            kw["clip_gradient"] = self.clip_gradient
        if isinstance(state, (list, tuple)):
            mom, w32 = state
            if mom is not None:
                _invoke("mp_sgd_mom_update", [weight, grad, mom, w32], out=weight, lr=lr,
                        wd=wd, **kw)
            else:
                _invoke("mp_sgd_update", [weight, grad, w32], out=weight, lr=lr, wd=wd, **kw)
        elif state is not None:
            _invoke("sgd_mom_update", [weight, grad, state], out=weight, lr=lr, wd=wd, **kw)
        else:
            _invoke("sgd_update", [weight, grad], out=weight, lr=lr, wd=wd, **kw)
        self._reset_cum_gradient(index)


def _added(a, b):
    """A fresh NDArray a + b."""
    out = a.copy()

    def add(xp, src, dst):
        dst += src
    apply_inplace("lbsgd_cumulate", add, [b], [out])
    return out


def _scaled_copy(a, scale):
    out = a.copy()

    def mul(xp, dst):
        dst *= dst.dtype.type(scale)
    apply_inplace("lbsgd_scale", mul, [], [out])
    return out


@register
class DCASGD(Optimizer):
    """Delay-compensated asynchronous SGD (Zheng et al., 2016)::

        mom = momentum * mom - lr * (g + wd * weight + lamda * g^2 * (weight - previous))
        previous = weight;  weight += mom      (mom is just the step when momentum is 0)

    with g = clip(rescale_grad * grad). (MXNet 1.9.1 tests the momentum NDArray's
    truth value and so fails for momentum != 0; here momentum works as documented.)

    Parameters
    ----------
    momentum : float, default 0.0
    lamda : float, default 0.04
    """

    def __init__(self, momentum=0.0, lamda=0.04, **kwargs):
        super().__init__(**kwargs)
        self.momentum = momentum
        self.weight_previous = {}
        self.lamda = lamda

    def create_state(self, index, weight):
        mom = None if self.momentum == 0.0 else _zeros_like(weight, weight.dtype)
        return (mom, weight.copy())

    def update(self, index, weight, grad, state):
        lr, wd, _ = self._begin_update(index)
        mom, previous = state
        rescale, clip, lamda, momentum = self.rescale_grad, self.clip_gradient, \
            self.lamda, self.momentum

        def rule(xp, g, w, prev, *maybe_mom):
            t = w.dtype.type
            g, _ = rescaled_grad(xp, g, rescale, clip, scratch=False)
            step = g * g
            step *= t(lamda)
            xp.subtract(w, prev, out=prev)       # prev is rewritten below: scratch
            step *= prev
            step += g
            if wd:
                xp.multiply(w, t(wd), out=prev)
                step += prev
            step *= t(-lr)
            if maybe_mom:
                m = maybe_mom[0]
                m *= t(momentum)
                m += step
                step = m
            prev[...] = w
            w += step
        writes = [weight, previous] + ([mom] if mom is not None else [])
        apply_inplace("dcasgd_update", rule, [grad], writes)


@register
class SGLD(Optimizer):
    """Stochastic gradient Langevin dynamics::

        weight += -lr / 2 * (clip(rescale_grad * grad) + wd * weight) + N(0, sqrt(lr))

    The noise comes from the weight's context generator (``mx.random.seed``).
    """

    def create_state(self, index, weight):
        return None

    def update(self, index, weight, grad, state):
        lr, wd, _ = self._begin_update(index)
        rescale, clip = self.rescale_grad, self.clip_gradient
        # Drawn here, not inside the kernel, so the draw order is the call order.
        noise = _normal(get_rng(weight.context), math.sqrt(lr), weight.shape, weight.dtype)

        def rule(xp, g, w):
            t = w.dtype.type
            g, _ = rescaled_grad(xp, g, rescale, clip, scratch=False)
            g += w * t(wd)
            g *= t(-lr / 2)
            g += noise
            w += g
        apply_inplace("sgld_update", rule, [grad], [weight])


def _normal(rng, scale, shape, dtype):
    dt = numpy.dtype(dtype)
    gen_dt = dt if dt in (numpy.float32, numpy.float64) else numpy.float32
    out = rng.standard_normal(size=shape, dtype=gen_dt)
    out *= gen_dt.type(scale)
    return out.astype(dt, copy=False)


@register
class Test(Optimizer):
    """The optimizer of MXNet's tests: weight += rescale_grad * grad; state = weight."""

    def create_state(self, index, weight):
        return _zeros_like(weight)

    def update(self, index, weight, grad, state):
        rescale = self.rescale_grad

        def rule(xp, g, w, s):
            w += g * w.dtype.type(rescale)
            s[...] = w
        apply_inplace("test_update", rule, [grad], [weight, state])
