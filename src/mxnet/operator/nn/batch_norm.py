"""BatchNorm: batch normalisation over every axis but ``axis`` (the channel axis).

Training (``is_train`` and not ``use_global_stats``) normalises with the batch mean and
biased variance and updates the auxiliary states in place:
``moving = momentum * moving + (1 - momentum) * batch_stat``. Otherwise the moving
statistics are used. Outputs: ``output`` plus two hidden outputs, ``mean`` and ``var``
(visible with ``output_mean_var``); as in MXNet 1.9.1, ``var`` holds the inverse
standard deviation 1/sqrt(var + eps) that backward reuses.

Backward without ``use_global_stats`` uses the training formula with the statistics the
forward used; after an inference-mode forward those are the moving statistics, which is
what MXNet 1.9.1 computes too (not the derivative of the inference forward).
"""
import math

import numpy as np

from ...base import MXNetError, bfloat16
from ..kernels import OutputBuffers
from ..params import Bool, Float, FloatOrNone, Int, Schema
from ..registry import Op, ShapeError, register
from .channel_sums import channel_dot, channel_sum

__all__ = ["BatchNorm", "channel_view"]


def _param_dtype(t):
    """gamma/beta/moving stats are float32 for float16 and bfloat16 data (MXNet's
    accumulation type for both), else the data's type."""
    if t is None:
        return None
    t = np.dtype(t)
    return np.dtype(np.float32) if t == np.float16 or t == bfloat16 else t


def channel_view(shape, axis):
    """(before, channels, after): ``shape`` seen as 3-D around its channel ``axis``."""
    return (math.prod(shape[:axis]), shape[axis], math.prod(shape[axis + 1:]))


@register
class BatchNorm(Op):
    """Batch normalisation: y = gamma * (x - mean) / sqrt(var + eps) + beta, per channel
    on ``axis``. ``fix_gamma=True`` (the default) uses gamma = 1 and gives gamma a zero
    gradient."""
    name = "BatchNorm"
    float_only = True
    checks_types = True
    rewrites_inputs = True

    def rewrite_inputs(self, p, inputs):
        # MXNet's BatchNorm with fix_gamma writes 1s into the gamma array on every
        # forward (any mode), so a gamma that weight decay or an update moved reads 1
        # again, as in MXNet's checkpoints
        if p.fix_gamma:
            inputs[1][...] = 1
    params = Schema(eps=Float(1e-3), momentum=Float(0.9), fix_gamma=Bool(True),
                    use_global_stats=Bool(False), output_mean_var=Bool(False),
                    axis=Int(1), cudnn_off=Bool(False),
                    min_calib_range=FloatOrNone(None), max_calib_range=FloatOrNone(None))
    backward_uses = ("out_grad", "in_data", "out_data")
    backward_out_data = (1, 2)          # the saved mean and invstd, not y
    writes_outputs = True

    def arguments(self, p):
        return ["data", "gamma", "beta"]

    def aux_states(self, p):
        return ["moving_mean", "moving_var"]

    def outputs(self, p):
        return ["output", "mean", "var"]

    def num_visible_outputs(self, p):
        return 3 if p.output_mean_var else 1

    def _axis(self, p, ndim):
        if not -ndim <= p.axis < ndim:
            raise ShapeError(f"BatchNorm: channel axis {p.axis} is out of range for data "
                             f"with {ndim} dimensions")
        return p.axis % ndim

    def infer_shape(self, p, in_shapes):
        d = in_shapes[0]
        if d is None:
            return list(in_shapes), [None, None, None], [None, None]
        d = tuple(d)
        c = (d[self._axis(p, len(d))],)
        names = ("gamma", "beta", "moving_mean", "moving_var")
        for nm, s in zip(names, in_shapes[1:]):
            if s is not None and tuple(s) != c:
                raise ShapeError(f"BatchNorm: {nm} must have shape {c} for data of shape "
                                 f"{d} (axis {p.axis}), got {tuple(s)}")
        return [d, c, c], [d, c, c], [c, c]

    def infer_type(self, p, in_types):
        t = in_types[0]
        pt = _param_dtype(t)
        if pt is None:
            pt = next((x for x in in_types[1:] if x is not None), None)
        for nm, x in zip(("gamma", "beta"), in_types[1:3]):
            if x is not None and pt is not None and np.dtype(x) != pt:
                raise MXNetError(f"BatchNorm: {nm} must be {pt.name} for {np.dtype(t).name} "
                                 f"data, got {np.dtype(x).name}")
        return [t, pt, pt], [t, pt, pt], [pt, pt]

    def _layout(self, p, x):
        """The data as (before the channel axis, channels, after it): statistics are
        sums over axes 0 and 2 of that view (one reduction call; NumPy's mean over
        several axes of the N-d array costs three times as much on small data), and
        per-channel values broadcast as (1, C, 1)."""
        return channel_view(x.shape, self._axis(p, x.ndim))

    def forward(self, ctx, p, inputs, aux, out=None):
        if out is None:
            y, mean, _, invstd = self._normalize(ctx, p, inputs, aux, out)
            return [y, mean, invstd]
        # the mean and invstd computed straight into the given arrays where they can be
        c, ct = inputs[1].shape, _param_dtype(inputs[0].dtype)
        o = OutputBuffers(ctx.xp, [None] + list(out[1:3]), 3, list(inputs) + list(aux))
        y = self._normalize(ctx, p, inputs, aux, out, (o.get(1, c, ct), o.get(2, c, ct)))[0]
        return [y] + o.done()[1:]

    def _saved_invstd(self, xp, p, saved):
        """The inverse standard deviation from forward's third output."""
        return saved

    def _normalize(self, ctx, p, inputs, aux, out, stats=None):
        """Forward's work: (y, mean, var, invstd) with the statistics it normalised by
        (the batch's in training, else the moving ones); ``stats``: destinations for
        the mean and invstd (each may be None)."""
        xp = ctx.xp
        x, gamma, beta = inputs
        mm, mv = aux
        self.infer_shape(p, [x.shape, gamma.shape, beta.shape, mm.shape, mv.shape])
        v3 = self._layout(p, x)
        b3 = (1, v3[1], 1)
        ct = _param_dtype(x.dtype)
        xc = x.astype(ct, copy=False).reshape(v3)
        # the normalised data goes straight into the destination when types agree (and
        # the destination reshapes without a copy)
        dst = out[0] if out is not None and ct == x.dtype else None
        dst = dst.reshape(v3) if dst is not None and dst.flags.c_contiguous else None
        beta = beta.astype(ct, copy=False).reshape(b3)
        mean_dst, invstd_dst = stats or (None, None)
        if ctx.is_train and not p.use_global_stats:
            count = ct.type(v3[0] * v3[2])
            mean = xp.divide(channel_sum(xp, xc), count, out=mean_dst)
            y = xp.subtract(xc, mean.reshape(b3), out=dst)
            var = channel_dot(xp, y, y) / count
            invstd = xp.divide(1.0, xp.sqrt(var + p.eps), out=invstd_dst)
            y *= (invstd if p.fix_gamma else (gamma * invstd).astype(ct, copy=False)
                  ).reshape(b3)
            y += beta
            m = mm.dtype.type(p.momentum)
            mm *= m
            mm += (1 - m) * mean.astype(mm.dtype, copy=False)
            mv *= m
            mv += (1 - m) * var.astype(mv.dtype, copy=False)
        else:
            if mean_dst is not None:
                mean_dst[...] = mm
                mean = mean_dst
            else:
                mean = mm.astype(ct, copy=True)
            var = mv.astype(ct, copy=True)
            invstd = xp.divide(1.0, xp.sqrt(var + p.eps), out=invstd_dst)
            scale = invstd if p.fix_gamma else gamma.astype(ct, copy=False) * invstd
            y = xp.multiply(xc, scale.reshape(b3), out=dst)
            y += beta - (mean * scale).reshape(b3)
        y = out[0] if dst is not None else y.reshape(x.shape).astype(x.dtype, copy=False)
        return (y, mean.astype(ct, copy=False),
                var.astype(ct, copy=False), invstd.astype(ct, copy=False))

    def backward(self, ctx, p, out_grads, inputs, outputs, aux, in_grad=None):
        xp = ctx.xp
        x, gamma, _ = inputs
        mean, invstd = outputs[1], self._saved_invstd(xp, p, outputs[2])
        v3 = self._layout(p, x)
        b3 = (1, v3[1], 1)
        ct = mean.dtype
        g = out_grads[0].astype(ct, copy=False).reshape(v3)
        need = ctx.need_grad
        c = (v3[1],)
        train_formula = not p.use_global_stats
        want_dgamma = need[1] and not p.fix_gamma
        # the results computed straight into the given destinations where they can be:
        # dx also over dy's own buffer (planned in place), as every read of g comes
        # before it is written or reads and writes each element at one position
        o = OutputBuffers(xp, in_grad, 3, [out_grads[0], x, gamma, mean, invstd])
        dbeta = channel_sum(xp, g, out=o.get(2, c, ct) if need[2] else None)
        if train_formula or want_dgamma:
            # dgamma = sum(g * xhat) as invstd * sum(g * (x - mean)): the centred data
            # is scaled once, into dx's term, not normalised first
            xc = xp.subtract(x.astype(ct, copy=False).reshape(v3), mean.reshape(b3))
            dgamma = channel_dot(xp, g, xc, out=o.get(1, c, ct) if want_dgamma else None)
            dgamma *= invstd
        if need[1] and p.fix_gamma:
            o.get(1, c, ct)[...] = 0
        scale = (invstd if p.fix_gamma else gamma.astype(ct, copy=False) * invstd).reshape(b3)
        direct = need[0] and ct == x.dtype
        dst3 = o.get(0, x.shape, ct, allow_alias=out_grads[0]).reshape(v3) if direct else None
        if not need[0]:
            dx = None
        elif not train_formula:
            dx = xp.multiply(g, scale, out=dst3)
        else:
            # dx = scale * (g - dbeta / count - xhat * dgamma / count)
            count = ct.type(v3[0] * v3[2])
            xc *= scale * (invstd * dgamma / -count).reshape(b3)
            dx = xp.multiply(g, scale, out=dst3)
            dx += xc
            dx -= scale * (dbeta / count).reshape(b3)
        res = o.done()
        if need[0] and not direct:
            res[0] = dx.reshape(x.shape).astype(x.dtype, copy=False)
        return res
