"""Normalisation layers other than BatchNorm: ``LayerNorm``, ``InstanceNorm``,
``GroupNorm``, ``L2Normalization`` and ``LRN`` (local response normalisation).

Each keeps its statistics as hidden outputs (as MXNet 1.9.1 does) so backward reuses
them instead of recomputing.
"""
import math

import numpy as np

from ..kernels import output_shapes
from ..params import Bool, Enum, Float, Int, Schema
from ..registry import Op, ShapeError, register
from .convolution import same_dtype
from .channel_sums import column_sum_wide, host_float, row_dot, row_sum

__all__ = ["LayerNorm", "InstanceNorm", "GroupNorm", "L2Normalization", "LRN"]


def _check_param(opname, name, shape, want, dshape):
    if shape is not None and tuple(shape) != tuple(want):
        raise ShapeError(f"{opname}: {name} must have shape {tuple(want)} for data of shape "
                         f"{tuple(dshape)}, got {tuple(shape)}")


def _check_gamma_beta(opname, in_shapes, want):
    for name, shape in zip(("gamma", "beta"), in_shapes[1:]):
        _check_param(opname, name, shape, want, in_shapes[0])


def _check_spatial(opname, d):
    if len(d) < 3:
        raise ShapeError(f"{opname}: data must have at least 3 dimensions "
                         f"(batch, channel, spatial...), got shape {d}")


def _as_tuple(axes):
    return (axes,) if isinstance(axes, int) else tuple(axes)


def _trailing_rows(xp, x, axes):
    """The row length when ``axes`` are x's trailing axes and x takes the BLAS routes
    (channel_sums.host_float): statistics over them are per-row sums of x seen as
    (rows, length); else None."""
    nd = x.ndim
    axes = sorted(a % nd for a in _as_tuple(axes))
    if not axes or axes != list(range(nd - len(axes), nd)) or not host_float(xp, x):
        return None
    return math.prod(x.shape[nd - len(axes):])


def _norm_grad(xp, dxhat, xhat, inv_std, axes):
    """Gradient of xhat = (x - mean(x)) * inv_std over axes, given d/dxhat."""
    length = _trailing_rows(xp, dxhat, axes)
    if length is not None and host_float(xp, xhat) and dxhat.shape == xhat.shape:
        # the two per-row means as a GEMV and per-row dot products, in place in dxhat
        t = dxhat.dtype.type
        d2, x2 = dxhat.reshape(-1, length), xhat.reshape(-1, length)
        a = row_sum(np, d2)
        a /= t(length)
        b = row_dot(d2, x2)
        b /= t(length)
        dx = d2 - a[:, None]
        dx -= x2 * b[:, None]
        dx = dx.reshape(dxhat.shape)
        dx *= inv_std
        return dx
    dx = dxhat - dxhat.mean(axis=axes, keepdims=True)
    dx -= xhat * (dxhat * xhat).mean(axis=axes, keepdims=True)
    dx *= inv_std
    return dx


def _scale_shift(xhat, gamma, beta, shape):
    """gamma * xhat + beta, in xhat, with gamma and beta reshaped to broadcast."""
    xhat *= gamma.reshape(shape)
    xhat += beta.reshape(shape)
    return xhat


def _accurate_sum(x, axes):
    """x summed over axes in a wider type (float32 -> float64, float16 -> float32), as
    MXNet's safe accumulation does: the parameter gradients sum over every sample, and
    a float32 running sum of a few thousand rows already errs by ~1e-4."""
    if x.dtype.itemsize >= 8:
        return x.sum(axis=axes)
    wide = "float64" if x.dtype.itemsize == 4 else "float32"
    return x.sum(axis=axes, dtype=wide).astype(x.dtype, copy=False)


def _affine_grads(xp, g, xhat, inv_std, gamma, shape, stat_axes, param_axes):
    """(dx, dgamma, dbeta) of y = gamma * xhat + beta, xhat standardised over
    stat_axes, gamma (reshaped to ``shape``) and beta shared over param_axes."""
    dgamma, dbeta = _param_grads(xp, g, xhat, stat_axes, param_axes)
    return _norm_grad(xp, g * gamma.reshape(shape), xhat, inv_std, stat_axes), dgamma, dbeta


def _param_grads(xp, g, xhat, stat_axes, param_axes):
    """(sum(g * xhat), sum(g)) over ``param_axes``, float64-accurate (_accurate_sum).
    Host float arrays take BLAS routes where the parameter is per trailing element
    (LayerNorm over the last axis: column sums) or per row group (one parameter per
    axis 1 with the statistics over the rest: per-row sums, added up per parameter in
    float64)."""
    nd = g.ndim
    params = sorted(a % nd for a in param_axes)
    if host_float(xp, g, xhat) and g.shape == xhat.shape:
        if params == list(range(nd - 1)):
            d = g.shape[-1]
            g2, x2 = g.reshape(-1, d), xhat.reshape(-1, d)
            return column_sum_wide(g2 * x2), column_sum_wide(g2)
        length = _trailing_rows(xp, g, stat_axes)
        if length is not None and nd - len(_as_tuple(stat_axes)) == 2 and \
                params == [0] + list(range(2, nd)):
            k = g.shape[1]
            g2, x2 = g.reshape(-1, length), xhat.reshape(-1, length)
            dgamma = row_dot(g2, x2).reshape(-1, k).sum(axis=0, dtype=np.float64)
            dbeta = row_sum(np, g2).reshape(-1, k).sum(axis=0, dtype=np.float64)
            return dgamma.astype(g.dtype), dbeta.astype(g.dtype)
    return _accurate_sum(g * xhat, param_axes), _accurate_sum(g, param_axes)


def _standardize(xp, x, axes, eps, out=None):
    """(xhat, mean, std) with mean/std kept as reduced dims; xhat written into ``out``
    when given."""
    length = _trailing_rows(xp, x, axes)
    if length is not None and (out is None or out.flags.c_contiguous):
        t = x.dtype.type
        x2 = x.reshape(-1, length)
        mean = row_sum(np, x2)
        mean /= t(length)
        xhat = np.subtract(x2, mean[:, None],
                           out=None if out is None else out.reshape(x2.shape))
        var = row_dot(xhat, xhat)
        var /= t(length)
        var += t(eps)
        std = np.sqrt(var, out=var)
        xhat /= std[:, None]
        stat = x.shape[:x.ndim - len(_as_tuple(axes))] + (1,) * len(_as_tuple(axes))
        return xhat.reshape(x.shape), mean.reshape(stat), std.reshape(stat)
    mean = x.mean(axis=axes, keepdims=True)
    xhat = xp.subtract(x, mean, out=out)
    std = xp.sqrt(xp.square(xhat).mean(axis=axes, keepdims=True) + x.dtype.type(eps))
    xhat /= std
    return xhat, mean, std


class _AffineNorm(Op):
    """Shared parts of Layer/Instance/GroupNorm: data, gamma, beta -> output + stats."""
    backward_uses = ("out_grad", "in_data", "out_data")

    def arguments(self, p):
        return ["data", "gamma", "beta"]

    def num_visible_outputs(self, p):
        return 3 if p.get("output_mean_var") else 1

    def infer_type(self, p, in_types):
        t = same_dtype(self.name, self.arguments(p), in_types)
        return [t, t, t], [t, t, t], []


@register
class LayerNorm(_AffineNorm):
    """Layer normalisation over ``axis``: y = gamma * (x - mean) / sqrt(var + eps) + beta,
    gamma and beta of shape (data.shape[axis],). Hidden outputs ``mean`` and ``std``
    have the data shape with ``axis`` set to 1."""
    name = "LayerNorm"
    float_only = True
    checks_types = True
    params = Schema(axis=Int(-1), eps=Float(1e-5), output_mean_var=Bool(False))

    def outputs(self, p):
        return ["output", "mean", "std"]

    def _axis(self, p, ndim):
        if not -ndim <= p.axis < ndim:
            raise ShapeError(f"LayerNorm: axis {p.axis} is out of range for data with "
                             f"{ndim} dimensions")
        return p.axis % ndim

    def infer_shape(self, p, in_shapes):
        d = in_shapes[0]
        if d is None:
            return list(in_shapes), [None] * 3, []
        d = tuple(d)
        axis = self._axis(p, len(d))
        c = (d[axis],)
        _check_gamma_beta(self.name, in_shapes, c)
        stat = d[:axis] + (1,) + d[axis + 1:]
        return [d, c, c], [d, stat, stat], []

    def _bshape(self, axis, x):
        shape = [1] * x.ndim
        shape[axis] = x.shape[axis]
        return tuple(shape)

    writes_outputs = True           # the normalised data goes into ``out[0]``

    def forward(self, ctx, p, inputs, aux, out=None):
        xp, (x, gamma, beta) = ctx.xp, inputs
        output_shapes(self, p, [a.shape for a in inputs])     # (cached) shape checks
        axis = self._axis(p, x.ndim)
        dst = out[0] if out is not None else None
        if dst is not None and (dst.dtype != x.dtype or dst.shape != x.shape):
            dst = None
        xhat, mean, std = _standardize(xp, x, axis, p.eps, dst)
        return [_scale_shift(xhat, gamma, beta, self._bshape(axis, x)), mean, std]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux, in_grad=None):
        xp, (x, gamma, _), g = ctx.xp, inputs, out_grads[0]
        mean, std = outputs[1], outputs[2]
        axis = self._axis(p, x.ndim)
        others = tuple(i for i in range(x.ndim) if i != axis)
        inv_std = 1 / std
        xhat = (x - mean) * inv_std
        return list(_affine_grads(xp, g, xhat, inv_std, gamma, self._bshape(axis, x), axis,
                                  others))


@register
class InstanceNorm(_AffineNorm):
    """Instance normalisation: each (sample, channel) is normalised over the spatial
    axes (data needs at least 3 dimensions); gamma and beta have shape (channels,)."""
    name = "InstanceNorm"
    float_only = True
    checks_types = True
    params = Schema(eps=Float(1e-3))

    def outputs(self, p):
        return ["output", "mean", "var"]

    def infer_shape(self, p, in_shapes):
        d = in_shapes[0]
        if d is None:
            return list(in_shapes), [None] * 3, []
        d = tuple(d)
        _check_spatial(self.name, d)
        c = (d[1],)
        _check_gamma_beta(self.name, in_shapes, c)
        return [d, c, c], [d, d[:2], d[:2]], []

    def forward(self, ctx, p, inputs, aux):
        xp, (x, gamma, beta) = ctx.xp, inputs
        self.infer_shape(p, [a.shape for a in inputs])
        axes = tuple(range(2, x.ndim))
        xhat, mean, std = _standardize(xp, x, axes, p.eps)
        var = xp.square(std) - x.dtype.type(p.eps)
        n, c = x.shape[:2]
        return [_scale_shift(xhat, gamma, beta, (1, -1) + (1,) * (x.ndim - 2)),
                mean.reshape(n, c), var.reshape(n, c)]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux):
        xp, (x, gamma, _), g = ctx.xp, inputs, out_grads[0]
        s = x.shape[:2] + (1,) * (x.ndim - 2)
        mean = outputs[1].reshape(s)
        inv_std = 1 / xp.sqrt(outputs[2].reshape(s) + x.dtype.type(p.eps))
        axes = tuple(range(2, x.ndim))
        xhat = (x - mean) * inv_std
        return list(_affine_grads(xp, g, xhat, inv_std, gamma, (1, -1) + (1,) * (x.ndim - 2),
                                  axes, (0,) + axes))


@register
class GroupNorm(_AffineNorm):
    """Group normalisation: channels (axis 1) are split into ``num_groups`` groups and
    each (sample, group) is normalised over its channels and spatial positions. As in
    MXNet 1.9.1, gamma and beta have shape (num_groups,) and scale whole groups.
    Hidden outputs ``mean`` and ``std`` have shape (batch, num_groups)."""
    name = "GroupNorm"
    float_only = True
    checks_types = True
    params = Schema(num_groups=Int(1), eps=Float(1e-5), output_mean_var=Bool(False))

    def outputs(self, p):
        return ["output", "mean", "std"]

    def infer_shape(self, p, in_shapes):
        d = in_shapes[0]
        if d is None:
            return list(in_shapes), [None] * 3, []
        d = tuple(d)
        _check_spatial(self.name, d)
        if p.num_groups < 1 or d[1] % p.num_groups:
            raise ShapeError(f"GroupNorm: the number of channels ({d[1]}) must be a multiple "
                             f"of num_groups ({p.num_groups})")
        gshape = (p.num_groups,)
        _check_gamma_beta(self.name, in_shapes, gshape)
        stat = (d[0], p.num_groups)
        return [d, gshape, gshape], [d, stat, stat], []

    def forward(self, ctx, p, inputs, aux):
        xp, (x, gamma, beta) = ctx.xp, inputs
        self.infer_shape(p, [a.shape for a in inputs])
        n, G = x.shape[0], p.num_groups
        xhat, mean, std = _standardize(xp, x.reshape(n, G, -1), 2, p.eps)
        xhat = _scale_shift(xhat, gamma, beta, (1, G, 1))
        return [xhat.reshape(x.shape), mean.reshape(n, G), std.reshape(n, G)]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux):
        xp, (x, gamma, _) = ctx.xp, inputs
        n, G = x.shape[0], p.num_groups
        g = out_grads[0].reshape(n, G, -1)
        mean = outputs[1].reshape(n, G, 1)
        inv_std = 1 / outputs[2].reshape(n, G, 1)
        xhat = (x.reshape(n, G, -1) - mean) * inv_std
        dx, dgamma, dbeta = _affine_grads(xp, g, xhat, inv_std, gamma, (1, G, 1), 2, (0, 2))
        return [dx.reshape(x.shape), dgamma, dbeta]


@register
class L2Normalization(Op):
    """Divide by the L2 norm: y = x / sqrt(sum(x^2) + eps), the sum over every axis but
    the first (``mode='instance'``), over axis 1 ('channel') or over axes 2.. ('spatial');
    'channel' and 'spatial' need at least 3 dimensions. Hidden output ``norm``."""
    name = "L2Normalization"
    float_only = True
    params = Schema(eps=Float(1e-10), mode=Enum(("channel", "instance", "spatial"),
                                                "instance"))
    backward_uses = ("out_grad", "out_data")

    def outputs(self, p):
        return ["output", "norm"]

    def num_visible_outputs(self, p):
        return 1

    def _axes(self, p, ndim):
        if p.mode != "instance" and ndim < 3:
            raise ShapeError(f"L2Normalization: mode='{p.mode}' needs data with at least 3 "
                             f"dimensions, got {ndim}")
        if p.mode == "instance":
            return tuple(range(1, ndim))
        if p.mode == "channel":
            return (1,)
        return tuple(range(2, ndim))

    def infer_shape(self, p, in_shapes):
        d = in_shapes[0]
        if d is None:
            return [None], [None, None], []
        d = tuple(d)
        axes = self._axes(p, len(d))
        norm = tuple(s for i, s in enumerate(d) if i not in axes)
        return [d], [d, norm], []

    def infer_type(self, p, in_types):
        return [in_types[0]], [in_types[0]] * 2, []

    def forward(self, ctx, p, inputs, aux):
        xp, x = ctx.xp, inputs[0]
        axes = self._axes(p, x.ndim)
        norm = xp.sqrt(xp.square(x).sum(axis=axes, keepdims=True) + x.dtype.type(p.eps))
        y = x / norm
        nshape = tuple(s for i, s in enumerate(x.shape) if i not in axes)
        return [y, norm.reshape(nshape)]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux):
        g, y = out_grads[0], outputs[0]
        axes = self._axes(p, y.ndim)
        kshape = tuple(1 if i in axes else s for i, s in enumerate(y.shape))
        norm = outputs[1].reshape(kshape)
        dx = g - y * (g * y).sum(axis=axes, keepdims=True)
        dx /= norm
        return [dx]


def _window_sum(x, half):
    """Sum over channels c-half..c+half (axis 1), clipped at the edges."""
    s = x.copy()
    for o in range(1, half + 1):
        s[:, o:] += x[:, :-o]
        s[:, :-o] += x[:, o:]
    return s


@register
class LRN(Op):
    """Local response normalisation across channels (4-D data, NCHW, or 2-D (N, C),
    which MXNet's CPU build takes as (N, C, 1, 1)):
    y = x * (knorm + alpha / nsize * sum of x^2 over the nsize neighbouring channels)
    ** -beta. Hidden output ``tmp_norm`` holds the bracket."""
    name = "LRN"
    params = Schema(alpha=Float(1e-4), beta=Float(0.75), knorm=Float(2.0),
                    nsize=Int(low=0))
    backward_uses = ("out_grad", "in_data", "out_data")

    def outputs(self, p):
        return ["output", "tmp_norm"]

    def num_visible_outputs(self, p):
        return 1

    def infer_shape(self, p, in_shapes):
        d = in_shapes[0]
        if d is not None and len(d) not in (2, 4):
            raise ShapeError(f"LRN: data must be 4-D (batch, channel, height, width) or 2-D "
                             f"(batch, channel), got shape {tuple(d)}")
        return [d], [d, d], []

    def infer_type(self, p, in_types):
        return [in_types[0]], [in_types[0]] * 2, []

    def forward(self, ctx, p, inputs, aux):
        xp, x = ctx.xp, inputs[0]
        self.infer_shape(p, [x.shape])
        t = x.dtype.type
        norm = _window_sum(xp.square(x), (p.nsize - 1) // 2)
        norm *= t(p.alpha / p.nsize)
        norm += t(p.knorm)
        y = x * norm ** t(-p.beta)
        return [y, norm]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux):
        g, x = out_grads[0], inputs[0]
        y, norm = outputs
        t = x.dtype.type
        # dy_c/dx_i = delta_ci norm_c^-beta - 2 beta alpha/n x_i x_c norm_c^(-beta-1)
        # for channels c whose window holds i (the window is symmetric).
        inner = _window_sum(g * y / norm, (p.nsize - 1) // 2)
        dx = g * norm ** t(-p.beta)
        dx -= t(2 * p.beta * p.alpha / p.nsize) * x * inner
        return [dx]

