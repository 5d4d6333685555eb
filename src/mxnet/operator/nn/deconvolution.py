"""Deconvolution (transposed convolution), 1-D/2-D/3-D, NCW/NCHW/NCDHW.

Its forward is the data gradient of the convolution that maps the deconvolution's
output back to its input, and its data gradient is that convolution's forward, so both
directions reuse the convolution kernels of im2col.py with the roles swapped.
"""
import functools

from ...base import MXNetError
from ..params import Bool, Int, Schema, Shape
from ..registry import Op, register
from .convolution import _LAYOUT, _TUNE, check_provided, same_dtype
from .im2col import (OptEnum, check_groups, check_layout, conv_backward, conv_forward,
                     spatial_tuple, windows)

__all__ = ["Deconvolution", "deconv_geometry", "deconv_forward", "deconv_backward"]


@functools.lru_cache(maxsize=1024)
def deconv_geometry(p, dshape, name="Deconvolution"):
    """Check parameters against the data shape: (kernel, stride, dilate, pad, out_size),
    with pad (and adj) derived from target_shape when it is set."""
    kernel = tuple(p.kernel)
    nd = len(kernel)
    if nd not in (1, 2, 3):
        raise MXNetError(f"{name}: kernel must have 1, 2 or 3 dimensions, got kernel={kernel}")
    if any(k <= 0 for k in kernel):
        raise MXNetError(f"{name}: kernel must be positive in every dimension, got {kernel}")
    check_layout(name, p.layout, nd)
    stride = spatial_tuple(name, "stride", p.stride, nd, 1)
    dilate = spatial_tuple(name, "dilate", p.dilate, nd, 1)
    pad = spatial_tuple(name, "pad", p.pad, nd, 0, low=0)
    adj = spatial_tuple(name, "adj", p.adj, nd, 0, low=0)
    target = tuple(p.target_shape) if p.target_shape else ()
    if target and len(target) != nd:
        raise MXNetError(f"{name}: target_shape must have {nd} dimensions, got {target}")
    use_target = any(target)
    if len(dshape) != nd + 2:
        raise MXNetError(f"{name}: input data should be {nd + 2}-D (batch, channel and {nd} "
                         f"spatial dims) for a {nd}-D kernel, got data of shape {dshape}")
    check_groups(name, p.num_filter, p.num_group, dshape[1])
    pads, out = [], []
    for d in range(nd):
        size = dshape[2 + d]
        span = (kernel[d] - 1) * dilate[d] + 1
        if not size:
            pads.append(pad[d])
            out.append(None)
            continue
        full = stride[d] * (size - 1) + span
        if use_target:
            if full < target[d]:
                raise MXNetError(f"{name}: too big target shape: target_shape[{d}] = "
                                 f"{target[d]} > {full}, the largest output possible")
            total = full - target[d]
            pd, ad = (total + 1) // 2, total % 2
        else:
            pd, ad = pad[d], adj[d]
        if ad >= stride[d]:
            raise MXNetError(f"{name}: adj must be smaller than stride, got adj={ad} "
                             f"and stride={stride[d]} in dim {d}"
                             + (f" (derived from target_shape={target})" if use_target else ""))
        o = full - 2 * pd + ad
        if o <= 0:
            raise MXNetError(f"{name}: pad {pad} is too large for data of shape {dshape}: "
                             f"the output would have size {o} in dim {d}")
        pads.append(pd)
        out.append(o)
    return kernel, stride, dilate, tuple(pads), tuple(out)


def deconv_windows(p, dshape, name="Deconvolution"):
    """The windows of the convolution that maps the deconvolution's output to its input."""
    kernel, stride, dilate, pad, out = deconv_geometry(p, tuple(dshape), name)
    return windows(out, kernel, stride, dilate, pad, tuple(dshape[2:]), True), out


def deconv_forward(ctx, win, out_size, x, weight, groups, bias=None, workspace=512):
    n = x.shape[0]
    f = weight.shape[1] * groups
    y, _, _ = conv_backward(ctx, win, x, None, weight, groups, need_data=True,
                            need_weight=False, in_shape=(n, f) + tuple(out_size),
                            workspace=workspace)
    if bias is not None:
        y += bias.reshape((1, f) + (1,) * len(out_size))
    return y


def deconv_backward(ctx, win, dy, x, weight, groups, need, workspace=512):
    """(dx, dweight, dbias) for need = (data, weight, bias) flags."""
    dx = conv_forward(ctx, win, dy, weight, groups, workspace=workspace) if need[0] else None
    dw = None
    if need[1]:
        _, dw, _ = conv_backward(ctx, win, x, dy, weight, groups, need_data=False,
                                 need_weight=True, workspace=workspace)
    db = dy.sum(axis=(0,) + tuple(range(2, dy.ndim))) if need[2] else None
    return dx, dw, db


@register
class Deconvolution(Op):
    """Compute N-d transposed convolution ("deconvolution") on (N, C, *spatial) inputs:
    the gradient of Convolution with the same kernel/stride/dilate/pad with respect to
    its input. weight is (C, num_filter/num_group, *kernel); the output size is
    stride*(in-1) + dilated kernel - 2*pad + adj, or target_shape when given (pad and
    adj are then derived from it). no_bias defaults to True."""
    name = "Deconvolution"
    params = Schema(kernel=Shape(), stride=Shape(()), dilate=Shape(()), pad=Shape(()),
                    adj=Shape(()), target_shape=Shape(()), num_filter=Int(low=0),
                    num_group=Int(1, low=0), workspace=Int(512, low=0), no_bias=Bool(True),
                    cudnn_tune=OptEnum(_TUNE, None), cudnn_off=Bool(False),
                    layout=OptEnum(_LAYOUT, None))
    backward_uses = ("out_grad", "in_data")
    resources = ("temp",)

    def arguments(self, p):
        return ["data", "weight"] if p.no_bias else ["data", "weight", "bias"]

    def infer_shape(self, p, in_shapes):
        d = in_shapes[0]
        if d is None:
            return list(in_shapes), [None], []
        d = tuple(d)
        _, _, _, _, out = deconv_geometry(p, d)
        ins = [d]
        if d[1]:
            w = (d[1], p.num_filter // p.num_group) + tuple(p.kernel)
            check_provided(self.name, "weight", in_shapes[1], w)
            ins.append(w)
        else:
            ins.append(in_shapes[1])
        if not p.no_bias:
            check_provided(self.name, "bias", in_shapes[2], (p.num_filter,))
            ins.append((p.num_filter,))
        oshape = (d[0], p.num_filter) + out
        return ins, [None if any(x is None for x in out) else oshape], []

    def infer_type(self, p, in_types):
        t = same_dtype(self.name, self.arguments(p), in_types)
        return [t] * len(in_types), [t], []

    def forward(self, ctx, p, inputs, aux):
        same_dtype(self.name, self.arguments(p), [a.dtype for a in inputs])
        self.infer_shape(p, [a.shape for a in inputs])
        win, out = deconv_windows(p, inputs[0].shape)
        bias = None if p.no_bias else inputs[2]
        return [deconv_forward(ctx, win, out, inputs[0], inputs[1], p.num_group, bias,
                               p.workspace)]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux):
        need = list(ctx.need_grad or [True] * len(inputs)) + [False]
        win, _ = deconv_windows(p, inputs[0].shape)
        dx, dw, db = deconv_backward(ctx, win, out_grads[0], inputs[0], inputs[1],
                                     p.num_group, (need[0], need[1],
                                                   not p.no_bias and need[2]), p.workspace)
        return [dx, dw] if p.no_bias else [dx, dw, db]
