"""Optimizer update operators (sgd_update, adam_update, ...), MXNet 1.9.1's names,
parameters and update rules.

How in-place updates are expressed here. MXNet's update operators mutate some of their
inputs: the optimizer calls ``sgd_mom_update(weight, grad, mom, out=weight, ...)`` and
both ``weight`` (through ``out``) and ``mom`` change. In this registry:

* the new weight is the operator's one output, returned fresh by ``forward``; a caller
  who passes ``out=weight`` gets the weight overwritten, one who does not gets a new
  array and an untouched weight (as in MXNet);
* every other mutated input (``mom``, ``mean``/``var``, ``n``, ``z``, ``weight32``...)
  is declared as an auxiliary state, so ``mx.nd.<op>(weight, grad, mom, ...)`` still
  takes it positionally, the engine orders it as a write, and ``forward`` updates it
  in place, as BatchNorm updates its moving statistics.

``lazy_update`` only changes row_sparse updates in MXNet; pymxnet arrays are dense, so
it is accepted and has no effect. Gradient clipping is on when ``clip_gradient >= 0``
(MXNet's rule: 0 clips everything to 0; the Python optimizers pass it only when set).
The optimizers' own rules without a fused MXNet operator (AdaDelta, Adamax, Nadam,
...) live in ``mxnet.optimizer``.
"""
import numpy as np

from ...base import MXNetError
from ..params import Bool, Float, Int, Schema
from ..registry import Op, ShapeError, register

# Parameters most update operators share, with MXNet's defaults.
_COMMON = dict(wd=Float(0.0), rescale_grad=Float(1.0), clip_gradient=Float(-1.0))


def rescaled_grad(xp, grad, rescale, clip=None, weight=None, wd=0.0, scratch=True):
    """The gradient an update rule starts from, fresh: rescale * grad (+ wd * weight
    when wd, before clipping: Adam's order), clipped to [-clip, clip] unless clip is
    None; and (``scratch``) a scratch buffer of its shape, else None.

    Rules write their temporaries into the scratch buffer and finally their result,
    so an update allocates two arrays whatever its length (fresh large arrays cost
    page faults, more than the arithmetic). The optimizers' own rules
    (mxnet.optimizer) use this too."""
    g = xp.multiply(grad, grad.dtype.type(rescale))
    buf = None
    if wd:
        buf = xp.multiply(weight, weight.dtype.type(wd))
        g += buf
    elif scratch:
        buf = xp.empty_like(g)
    if clip is not None:
        xp.clip(g, -clip, clip, out=g)
    return g, buf


def moving_average(xp, acc, value, decay, tmp, square=False):
    """acc = decay * acc + (1 - decay) * value (value**2 when ``square``), in place;
    ``tmp`` is scratch space of acc's shape."""
    t = acc.dtype.type
    acc *= t(decay)
    if square:
        xp.multiply(value, value, out=tmp)
        tmp *= t(1.0 - decay)
    else:
        xp.multiply(value, t(1.0 - decay), out=tmp)
    acc += tmp


def _scaled_grad(xp, p, grad, weight=None, clip=None, wd=None):
    """rescaled_grad with an update operator's parameters (clipping on when the bound,
    ``clip`` or else ``p.clip_gradient``, is >= 0)."""
    bound = p.clip_gradient if clip is None else clip
    return rescaled_grad(xp, grad, p.rescale_grad, bound if bound >= 0 else None, weight,
                         wd)


class _UpdateOp(Op):
    """An update operator: arguments (weight, grad, ...), mutable states declared as
    auxiliary states, one output (the new weight, same shape and dtype as weight).

    Subclasses set ``args``/``states``/``params`` and implement
    ``update(xp, p, args, states) -> new weight``.
    """
    args = ("weight", "grad")
    states = ()
    # States kept in float32 whatever the weight's dtype (multi-precision copies).
    fp32_states = ()
    # Arguments not shaped like the weight (LAMB's norms r1, r2), and arguments whose
    # dtype may differ from the weight's (the float32 direction of mp LAMB).
    free_shape = ()
    free_dtype = ()
    backward_uses = ()

    def arguments(self, p):
        return list(self.args)

    def aux_states(self, p):
        return list(self.states)

    def infer_shape(self, p, in_shapes):
        shapes = list(in_shapes)
        known = shapes[0]
        if known is None:
            known = next((s for n, s in zip(self.args, shapes)
                          if s is not None and n not in self.free_shape), None)
        for name, s in zip(self.args, shapes):
            if s is not None and known is not None and name not in self.free_shape \
                    and tuple(s) != tuple(known):
                raise ShapeError(f"{self.name}: input '{name}' has shape {tuple(s)}, "
                                 f"expected {tuple(known)} (the weight's shape)")
        shapes = [(1,) if (s is None and n in self.free_shape) else
                  known if s is None else s for n, s in zip(self.args, shapes)]
        return shapes, [known], [known] * len(self.states)

    def infer_type(self, p, in_types):
        wt = in_types[0]
        for name, t in zip(self.args[1:], in_types[1:]):
            if t is not None and wt is not None and name not in self.free_dtype \
                    and name not in self.free_shape and np.dtype(t) != np.dtype(wt):
                raise MXNetError(f"{self.name}: input '{name}' has dtype {np.dtype(t).name}, "
                                 f"expected {np.dtype(wt).name} (the weight's dtype)")
        ins = [wt if (t is None and n not in self.free_dtype) else t
               for n, t in zip(self.args, in_types)]
        aux = [np.dtype(np.float32) if s in self.fp32_states else wt for s in self.states]
        return ins, [wt], aux

    def forward(self, ctx, p, inputs, aux):
        w = inputs[0]
        for name, a in zip(self.args[1:], inputs[1:]):
            if name not in self.free_shape and a.shape != w.shape:
                raise ShapeError(f"{self.name}: input '{name}' has shape {a.shape}, "
                                 f"expected {w.shape} (the weight's shape)")
            if name not in self.free_dtype and name not in self.free_shape \
                    and a.dtype != w.dtype:
                raise MXNetError(f"{self.name}: input '{name}' has dtype {a.dtype.name}, "
                                 f"expected {w.dtype.name} (the weight's dtype)")
        for name, s in zip(self.states, aux):
            if s.shape != w.shape:
                raise ShapeError(f"{self.name}: state '{name}' has shape {s.shape}, "
                                 f"expected {w.shape} (the weight's shape)")
            want = np.float32 if name in self.fp32_states else w.dtype
            if s.dtype != want:
                raise MXNetError(f"{self.name}: state '{name}' has dtype {s.dtype.name}, "
                                 f"expected {np.dtype(want).name}")
        return [self.update(ctx.xp, p, inputs, aux)]

    def update(self, xp, p, args, states):
        raise NotImplementedError


# --- SGD family ---------------------------------------------------------------------------

def _sgd(xp, p, w, grad):
    # w = (1 - lr * wd) * w - lr * g
    ty = w.dtype.type
    g, out = _scaled_grad(xp, p, grad)
    g *= ty(p.lr)
    xp.multiply(w, ty(1.0 - p.lr * p.wd), out=out)
    out -= g
    return out


def _sgd_mom(xp, p, w, grad, mom):
    # mom = momentum * mom - lr * (wd * w + g) ; w += mom
    ty = mom.dtype.type
    g, out = _scaled_grad(xp, p, grad)
    if p.wd:                            # weight decay is not clipped here
        xp.multiply(w, ty(p.wd), out=out)
        g += out
    g *= ty(p.lr)
    mom *= ty(p.momentum)
    mom -= g
    xp.add(w, mom, out=out)
    return out


def _nag_mom(xp, p, w, grad, mom):
    # g = clip(rescale * grad) + wd * w ; mom = momentum * mom - lr * g ;
    # w += momentum * mom - lr * g
    ty = mom.dtype.type
    g, out = _scaled_grad(xp, p, grad)
    if p.wd:
        xp.multiply(w, ty(p.wd), out=out)
        g += out
    g *= ty(p.lr)
    mom *= ty(p.momentum)
    mom -= g
    xp.multiply(mom, ty(p.momentum), out=out)
    out += w
    out -= g
    return out


_SGD_PARAMS = dict(lr=Float(), **_COMMON, lazy_update=Bool(True))
_MOM_PARAMS = dict(lr=Float(), momentum=Float(0.0), **_COMMON, lazy_update=Bool(True))


@register
class SGDUpdate(_UpdateOp):
    """weight = (1 - lr * wd) * weight - lr * clip(rescale_grad * grad)."""
    name = "sgd_update"
    params = Schema(**_SGD_PARAMS)

    def update(self, xp, p, args, states):
        return _sgd(xp, p, *args)


@register
class SGDMomUpdate(_UpdateOp):
    """Momentum SGD: mom = momentum * mom - lr * (wd * weight + clip(rescale_grad *
    grad)); weight += mom."""
    name = "sgd_mom_update"
    states = ("mom",)
    params = Schema(**_MOM_PARAMS)

    def update(self, xp, p, args, states):
        return _sgd_mom(xp, p, args[0], args[1], states[0])


def _mp(fn):
    """Run an update rule on the float32 master copy (the last state), write it back
    there, and return the new weight in the weight's own dtype."""
    def update(self, xp, p, args, states):
        w32 = states[-1]
        w32[...] = fn(xp, p, w32, args[1].astype(np.float32), *states[:-1])
        return w32.astype(args[0].dtype)
    return update


@register
class MPSGDUpdate(_UpdateOp):
    """sgd_update for low-precision weights with a float32 master copy ``weight32``."""
    name = "mp_sgd_update"
    states = ("weight32",)
    fp32_states = ("weight32",)
    params = Schema(**_SGD_PARAMS)
    update = _mp(lambda xp, p, w, g: _sgd(xp, p, w, g))


@register
class MPSGDMomUpdate(_UpdateOp):
    """sgd_mom_update for low-precision weights: float32 ``mom`` and ``weight32``."""
    name = "mp_sgd_mom_update"
    states = ("mom", "weight32")
    fp32_states = ("mom", "weight32")
    params = Schema(**_MOM_PARAMS)
    update = _mp(lambda xp, p, w, g, mom: _sgd_mom(xp, p, w, g, mom))


@register
class NAGMomUpdate(_UpdateOp):
    """Nesterov momentum: g = clip(rescale_grad * grad) + wd * weight;
    mom = momentum * mom - lr * g; weight += momentum * mom - lr * g.

    (MXNet's kernel, called with ``out=weight`` and wd != 0, stores a momentum
    computed from the already-updated weight; this is the rule it computes when
    the output does not alias the weight.)"""
    name = "nag_mom_update"
    states = ("mom",)
    params = Schema(lr=Float(), momentum=Float(0.0), **_COMMON)

    def update(self, xp, p, args, states):
        return _nag_mom(xp, p, args[0], args[1], states[0])


@register
class MPNAGMomUpdate(_UpdateOp):
    """nag_mom_update for low-precision weights: float32 ``mom`` and ``weight32``."""
    name = "mp_nag_mom_update"
    states = ("mom", "weight32")
    fp32_states = ("mom", "weight32")
    params = Schema(lr=Float(), momentum=Float(0.0), **_COMMON)
    update = _mp(lambda xp, p, w, g, mom: _nag_mom(xp, p, w, g, mom))


# --- sign methods ---------------------------------------------------------------------------

@register
class SignSGDUpdate(_UpdateOp):
    """weight = (1 - lr * wd) * weight - lr * sign(clip(rescale_grad * grad))."""
    name = "signsgd_update"
    params = Schema(lr=Float(), **_COMMON)

    def update(self, xp, p, args, states):
        w, grad = args
        ty = w.dtype.type
        g, out = _scaled_grad(xp, p, grad)
        xp.sign(g, out=g)
        g *= ty(p.lr)
        xp.multiply(w, ty(1.0 - p.lr * p.wd), out=out)
        out -= g
        return out


@register
class SignumUpdate(_UpdateOp):
    """mom = momentum * mom - (1 - momentum) * (wd * weight + clip(rescale_grad * grad));
    weight = (1 - lr * wd_lh) * weight + lr * sign(mom)."""
    name = "signum_update"
    states = ("mom",)
    params = Schema(lr=Float(), momentum=Float(0.0), **_COMMON, wd_lh=Float(0.0))

    def update(self, xp, p, args, states):
        w, grad = args
        mom = states[0]
        ty = w.dtype.type
        g, out = _scaled_grad(xp, p, grad)
        if p.wd:
            xp.multiply(w, ty(p.wd), out=out)
            g += out
        g *= ty(1.0 - p.momentum)
        mom *= ty(p.momentum)
        mom -= g
        xp.sign(mom, out=g)
        g *= ty(p.lr)
        xp.multiply(w, ty(1.0 - p.lr * p.wd_lh), out=out)
        out += g
        return out


# --- adaptive methods -------------------------------------------------------------------------

@register
class AdamUpdate(_UpdateOp):
    """g = clip(rescale_grad * grad + wd * weight); mean = beta1 * mean + (1 - beta1) * g;
    var = beta2 * var + (1 - beta2) * g^2; weight -= lr * mean / (sqrt(var) + epsilon).
    (The Adam optimizer folds the bias correction into lr.)"""
    name = "adam_update"
    states = ("mean", "var")
    params = Schema(lr=Float(), beta1=Float(0.9), beta2=Float(0.999), epsilon=Float(1e-8),
                    **_COMMON, lazy_update=Bool(True))

    def update(self, xp, p, args, states):
        w, grad = args
        mean, var = states
        ty = w.dtype.type
        g, out = _scaled_grad(xp, p, grad, w, wd=p.wd)
        moving_average(xp, mean, g, p.beta1, out)
        moving_average(xp, var, g, p.beta2, out, square=True)
        xp.sqrt(var, out=g)                 # g is free now: the denominator
        g += ty(p.epsilon)
        xp.divide(mean, g, out=g)
        g *= ty(p.lr)
        xp.subtract(w, g, out=out)
        return out


def _clip_weights(xp, out, bound):
    if bound >= 0:
        xp.clip(out, -bound, bound, out=out)
    return out


_RMS_PARAMS = dict(lr=Float(), gamma1=Float(0.95), epsilon=Float(1e-8), **_COMMON,
                   clip_weights=Float(-1.0))


@register
class RMSPropUpdate(_UpdateOp):
    """Tieleman & Hinton's RMSProp: g = clip(rescale_grad * grad + wd * weight);
    n = (1 - gamma1) * g^2 + gamma1 * n; weight -= lr * g / sqrt(n + epsilon)
    (then clipped to [-clip_weights, clip_weights] when clip_weights >= 0)."""
    name = "rmsprop_update"
    states = ("n",)
    params = Schema(**_RMS_PARAMS)

    def update(self, xp, p, args, states):
        w, grad = args
        n = states[0]
        ty = w.dtype.type
        g, out = _scaled_grad(xp, p, grad, w, wd=p.wd)
        moving_average(xp, n, g, p.gamma1, out, square=True)
        xp.add(n, ty(p.epsilon), out=out)
        xp.sqrt(out, out=out)
        g /= out
        g *= ty(p.lr)
        xp.subtract(w, g, out=out)
        return _clip_weights(xp, out, p.clip_weights)


@register
class RMSPropAlexUpdate(_UpdateOp):
    """Graves' centered RMSProp: n = (1 - gamma1) * g^2 + gamma1 * n;
    g_avg = (1 - gamma1) * g + gamma1 * g_avg;
    delta = gamma2 * delta - lr * g / sqrt(n - g_avg^2 + epsilon); weight += delta."""
    name = "rmspropalex_update"
    states = ("n", "g", "delta")
    params = Schema(lr=Float(), gamma1=Float(0.95), gamma2=Float(0.9), epsilon=Float(1e-8),
                    **_COMMON, clip_weights=Float(-1.0))

    def update(self, xp, p, args, states):
        w, grad = args
        n, gavg, delta = states
        ty = w.dtype.type
        g, out = _scaled_grad(xp, p, grad, w, wd=p.wd)
        moving_average(xp, n, g, p.gamma1, out, square=True)
        moving_average(xp, gavg, g, p.gamma1, out)
        xp.multiply(gavg, gavg, out=out)
        xp.subtract(n, out, out=out)
        out += ty(p.epsilon)
        xp.sqrt(out, out=out)
        g /= out
        g *= ty(p.lr)
        delta *= ty(p.gamma2)
        delta -= g
        xp.add(w, delta, out=out)
        return _clip_weights(xp, out, p.clip_weights)


@register
class FtrlUpdate(_UpdateOp):
    """FTRL-Proximal: g = clip(rescale_grad * grad);
    z += g - (sqrt(n + g^2) - sqrt(n)) * weight / lr; n += g^2;
    weight = (sign(z) * lamda1 - z) / ((beta + sqrt(n)) / lr + wd) where |z| > lamda1,
    else 0."""
    name = "ftrl_update"
    states = ("z", "n")
    params = Schema(lr=Float(), lamda1=Float(0.01), beta=Float(1.0), **_COMMON)

    def update(self, xp, p, args, states):
        w, grad = args
        z, n = states
        ty = w.dtype.type
        g, out = _scaled_grad(xp, p, grad)
        # z += g - (sqrt(n + g^2) - sqrt(n)) * w / lr ; n += g^2
        z += g
        xp.sqrt(n, out=out)
        g *= g
        n += g
        xp.sqrt(n, out=g)                   # sqrt(n + g^2), kept for the denominator
        xp.subtract(g, out, out=out)
        out *= w
        out /= ty(p.lr)
        z -= out
        # w = (sign(z) * lamda1 - z) / ((beta + sqrt(n)) / lr + wd) where |z| > lamda1
        g += ty(p.beta)
        g /= ty(p.lr)
        g += ty(p.wd)
        xp.sign(z, out=out)
        out *= ty(p.lamda1)
        out -= z
        out /= g
        out *= xp.abs(z) > ty(p.lamda1)
        return out


@register
class FTMLUpdate(_UpdateOp):
    """FTML: g = clip(rescale_grad * grad + wd * weight, clip_grad);
    v = beta2 * v + (1 - beta2) * g^2;
    d_t = (1 - beta1^t) / lr * (sqrt(v / (1 - beta2^t)) + epsilon);
    z = beta1 * z + (1 - beta1) * g - (d_t - beta1 * d) * weight; d = d_t;
    weight = -z / d_t."""
    name = "ftml_update"
    states = ("d", "v", "z")
    params = Schema(lr=Float(), beta1=Float(0.6), beta2=Float(0.999), epsilon=Float(1e-8),
                    t=Int(), wd=Float(0.0), rescale_grad=Float(1.0), clip_grad=Float(-1.0))

    def update(self, xp, p, args, states):
        w, grad = args
        d, v, z = states
        ty = w.dtype.type
        g, d_t = _scaled_grad(xp, p, grad, w, clip=p.clip_grad, wd=p.wd)
        moving_average(xp, v, g, p.beta2, d_t, square=True)
        moving_average(xp, z, g, p.beta1, d_t)
        # d_t = (1 - beta1^t) / lr * (sqrt(v / (1 - beta2^t)) + epsilon)
        xp.divide(v, ty(1.0 - p.beta2 ** p.t), out=d_t)
        xp.sqrt(d_t, out=d_t)
        d_t += ty(p.epsilon)
        d_t *= ty((1.0 - p.beta1 ** p.t) / p.lr)
        # z -= (d_t - beta1 * d) * w ; d = d_t ; w = -z / d_t
        d *= ty(-p.beta1)
        d += d_t
        d *= w
        z -= d
        d[...] = d_t
        xp.divide(z, d_t, out=g)
        xp.negative(g, out=g)
        return g


# --- LAMB -------------------------------------------------------------------------------------

_LAMB1_PARAMS = dict(beta1=Float(0.9), beta2=Float(0.999), epsilon=Float(1e-6), t=Int(),
                     bias_correction=Bool(True), wd=Float(), rescale_grad=Float(1.0),
                     clip_gradient=Float(-1.0))


def _lamb_phase1(xp, p, w, grad, mean, var):
    ty = mean.dtype.type
    g, out = _scaled_grad(xp, p, grad)
    moving_average(xp, mean, g, p.beta1, out)
    moving_average(xp, var, g, p.beta2, out, square=True)
    # out = m_hat / (sqrt(v_hat) + epsilon) + wd * w, hats bias-corrected if asked
    bc1 = 1.0 - p.beta1 ** p.t if p.bias_correction else 1.0
    bc2 = 1.0 - p.beta2 ** p.t if p.bias_correction else 1.0
    xp.divide(var, ty(bc2), out=g)
    xp.sqrt(g, out=g)
    g += ty(p.epsilon)
    xp.divide(mean, ty(bc1), out=out)
    out /= g
    if p.wd:
        xp.multiply(w, ty(p.wd), out=g)
        out += g
    return out


def _lamb_phase2(xp, p, w, g, r1, r2):
    """weight -= lr * (r1 / r2) * g, r1 first bounded to [lower_bound, upper_bound]
    (each bound only when >= 0); the ratio is 1 when r1 or r2 is 0."""
    r1 = r1.reshape(()).astype(np.float32)
    r2 = r2.reshape(()).astype(np.float32)
    if p.lower_bound >= 0:
        r1 = xp.maximum(r1, np.float32(p.lower_bound))
    if p.upper_bound >= 0:
        r1 = xp.minimum(r1, np.float32(p.upper_bound))
    ok = (r1 > 0) & (r2 > 0)
    ratio = xp.where(ok, r1 / xp.where(ok, r2, np.float32(1)), np.float32(1))
    out = xp.multiply(g, (ratio * np.float32(p.lr)).astype(w.dtype))
    xp.subtract(w, out, out=out)
    return out


@register
class LambUpdatePhase1(_UpdateOp):
    """LAMB phase 1: updates mean/var and returns the direction
    g = mean_hat / (sqrt(var_hat) + epsilon) + wd * weight (bias-corrected when
    bias_correction); phase 2 applies it with the trust ratio."""
    name = "lamb_update_phase1"
    states = ("mean", "var")
    params = Schema(**_LAMB1_PARAMS)

    def update(self, xp, p, args, states):
        return _lamb_phase1(xp, p, args[0], args[1], *states)


@register
class LambUpdatePhase2(_UpdateOp):
    """LAMB phase 2: weight -= lr * (r1 / r2) * g, with r1 = ||weight|| and
    r2 = ||g|| (r1 bounded by lower_bound/upper_bound when they are >= 0)."""
    name = "lamb_update_phase2"
    args = ("weight", "g", "r1", "r2")
    free_shape = ("r1", "r2")
    params = Schema(lr=Float(), lower_bound=Float(-1.0), upper_bound=Float(-1.0))

    def update(self, xp, p, args, states):
        return _lamb_phase2(xp, p, *args)


@register
class MPLambUpdatePhase1(_UpdateOp):
    """lamb_update_phase1 for low-precision weights (float32 mean/var/weight32;
    the direction is float32)."""
    name = "mp_lamb_update_phase1"
    states = ("mean", "var", "weight32")
    fp32_states = ("mean", "var", "weight32")
    params = Schema(**_LAMB1_PARAMS)

    def infer_type(self, p, in_types):
        ins, _, aux = super().infer_type(p, in_types)
        return ins, [np.dtype(np.float32)], aux

    def update(self, xp, p, args, states):
        mean, var, w32 = states
        return _lamb_phase1(xp, p, w32, args[1].astype(np.float32), mean, var)


@register
class MPLambUpdatePhase2(_UpdateOp):
    """lamb_update_phase2 for low-precision weights: updates weight32 and returns the
    weight in its own dtype."""
    name = "mp_lamb_update_phase2"
    args = ("weight", "g", "r1", "r2")
    states = ("weight32",)
    fp32_states = ("weight32",)
    free_shape = ("r1", "r2")
    free_dtype = ("g",)
    params = Schema(lr=Float(), lower_bound=Float(-1.0), upper_bound=Float(-1.0))

    def update(self, xp, p, args, states):
        w, g, r1, r2 = args
        w32 = states[0]
        w32[...] = _lamb_phase2(xp, p, w32, g.astype(np.float32), r1, r2)
        return w32.astype(w.dtype)


# --- AdaGrad -----------------------------------------------------------------------------------

@register
class AdagradUpdate(_UpdateOp):
    """AdaGrad (MXNet's ``_sparse_adagrad_update``, i.e. ``mx.nd.sparse.adagrad_update``),
    here on dense arrays: g = clip(rescale_grad * grad); history += g^2;
    weight -= lr * g / sqrt(history + epsilon). As in MXNet, wd must be 0."""
    name = "_sparse_adagrad_update"
    states = ("history",)
    params = Schema(lr=Float(), epsilon=Float(1e-7), **_COMMON)

    def update(self, xp, p, args, states):
        if p.wd != 0:
            raise MXNetError(f"{self.name}: weight decay (wd={p.wd}) is not supported; "
                             "use wd=0")
        w, grad = args
        h = states[0]
        ty = w.dtype.type
        g, out = _scaled_grad(xp, p, grad)
        xp.multiply(g, g, out=out)
        h += out
        xp.add(h, ty(p.epsilon), out=out)
        xp.sqrt(out, out=out)
        g /= out
        g *= ty(p.lr)
        xp.subtract(w, g, out=out)
        return out
