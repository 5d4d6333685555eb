"""Convolution: 1-D, 2-D and 3-D grouped, strided, dilated convolution (NCW/NCHW/NCDHW),
computed by im2col + one BLAS GEMM per group (see im2col.py)."""
import functools

import numpy as np

from ...base import MXNetError
from ..params import Bool, Int, Schema, Shape
from ..kernels import output_shapes
from ..registry import Op, ShapeError, register
from . import channel_last as CL
from .im2col import (OptEnum, check_groups, check_layout, conv_backward, conv_forward, known,
                     spatial_tuple, windows)

__all__ = ["Convolution", "check_provided", "same_dtype"]

_TUNE = (None, "fastest", "limited_workspace", "off")
_LAYOUT = (None, "NCDHW", "NCHW", "NCW", "NDHWC", "NHWC")
_AXES = {1: "batch-num_filter-x", 2: "batch-num_filter-y-x", 3: "batch-num_filter-z-y-x"}


def check_provided(opname, what, provided, inferred):
    """A given shape must equal the inferred one (MXNet's 'Shape inconsistent')."""
    if provided is not None and known(provided) and tuple(provided) != tuple(inferred):
        raise ShapeError(f"{opname}: shape inconsistent for {what}, provided = "
                         f"{tuple(provided)}, inferred shape = {tuple(inferred)}")


def same_dtype(opname, names, in_types):
    """Every input has the data's dtype (MXNet's 'uniform type' rule)."""
    t = next((x for x in in_types if x is not None), None)
    for nm, x in zip(names, in_types):
        if x is not None and t is not None and np.dtype(x) != np.dtype(t):
            raise MXNetError(f"{opname}: every input must have the same dtype; expected "
                             f"{np.dtype(t).name}, got {np.dtype(x).name} for '{nm}'")
    return t


@functools.lru_cache(maxsize=1024)
def _geometry(p, dshape):
    """Check parameters against the data shape; returns (kernel, stride, dilate, pad,
    out_size). Unknown spatial input dims give None output dims."""
    name = "Convolution"
    kernel = tuple(p.kernel)
    nd = len(kernel)
    if nd not in (1, 2, 3):
        raise MXNetError(f"{name}: kernel must have 1, 2 or 3 dimensions, got kernel={kernel}"
                         f" ({nd}-D convolution is not supported)")
    if any(k <= 0 for k in kernel):
        raise MXNetError(f"{name}: kernel must be positive in every dimension, got {kernel}")
    check_layout(name, p.layout, nd)
    stride = spatial_tuple(name, "stride", p.stride, nd, 1)
    dilate = spatial_tuple(name, "dilate", p.dilate, nd, 1)
    pad = spatial_tuple(name, "pad", p.pad, nd, 0, low=0)
    if len(dshape) != nd + 2:
        raise MXNetError(f"{name}: input data should be {nd + 2}-D in {_AXES[nd]} for a "
                         f"{nd}-D kernel, got data of shape {dshape}")
    check_groups(name, p.num_filter, p.num_group, dshape[1])
    out = []
    for d in range(nd):
        size = dshape[2 + d]
        if not size:
            out.append(None)
            continue
        span = (kernel[d] - 1) * dilate[d] + 1
        if span > size + 2 * pad[d]:
            raise MXNetError(f"{name}: kernel size exceeds input: dilated kernel {span} "
                             f"> input {size} padded to {size + 2 * pad[d]} (dim {d})")
        out.append((size + 2 * pad[d] - span) // stride[d] + 1)
    return kernel, stride, dilate, pad, tuple(out)


def conv_windows(p, dshape):
    kernel, stride, dilate, pad, out = _geometry(p, tuple(dshape))
    return windows(tuple(dshape[2:]), kernel, stride, dilate, pad, out, True)


@register
class Convolution(Op):
    """Compute N-d convolution on (N, C, *spatial) inputs: out[n, f] = bias[f] + sum over
    the channels of f's group and the kernel window of weight * data, with MXNet's
    stride, dilate, pad and num_group semantics. weight is (num_filter,
    channels/num_group, *kernel). ``workspace`` bounds the im2col buffers (MB);
    cudnn_tune/cudnn_off are accepted and have no effect on CPU."""
    name = "Convolution"
    float_only = True
    params = Schema(kernel=Shape(), stride=Shape(()), dilate=Shape(()), pad=Shape(()),
                    num_filter=Int(low=0), num_group=Int(1, low=0),
                    workspace=Int(1024, low=0), no_bias=Bool(False),
                    cudnn_tune=OptEnum(_TUNE, None), cudnn_off=Bool(False),
                    layout=OptEnum(_LAYOUT, None))
    backward_uses = ("out_grad", "in_data")
    resources = ("temp",)
    writes_outputs = True           # the GEMMs write the destination (out / in_grad)

    def arguments(self, p):
        return ["data", "weight"] if p.no_bias else ["data", "weight", "bias"]

    def infer_shape(self, p, in_shapes):
        d = in_shapes[0]
        n_in = 2 if p.no_bias else 3
        if d is None:
            return list(in_shapes), [None], []
        d = tuple(d)
        if p.layout in CL.FIRST:      # data (N, *s, C), weight (F, *k, C/g)
            ins, (o,), _ = self.infer_shape(
                CL.channel_first(p), [CL.shape_to_first(d), CL.shape_to_first(in_shapes[1])]
                + list(in_shapes[2:]))
            return [d, CL.shape_to_last(ins[1])] + ins[2:], [CL.shape_to_last(o)], []
        _, _, _, _, out = _geometry(p, d)
        ins = [d]
        if d[1]:
            w = (p.num_filter, d[1] // p.num_group) + tuple(p.kernel)
            check_provided(self.name, "weight", in_shapes[1], w)
            ins.append(w)
        else:
            ins.append(in_shapes[1])
        if n_in == 3:
            check_provided(self.name, "bias", in_shapes[2], (p.num_filter,))
            ins.append((p.num_filter,))
        oshape = (d[0], p.num_filter) + out
        return ins, [None if any(x is None for x in out) else oshape], []

    def infer_type(self, p, in_types):
        t = same_dtype(self.name, self.arguments(p), in_types)
        return [t] * len(in_types), [t], []

    def _check(self, p, inputs):
        same_dtype(self.name, self.arguments(p), [a.dtype for a in inputs])
        output_shapes(self, p, [a.shape for a in inputs])    # (cached) shape checks
        return conv_windows(p, inputs[0].shape)

    def forward(self, ctx, p, inputs, aux, out=None):
        if p.layout in CL.FIRST:      # fresh results: the runner writes them as req says
            xp = ctx.xp
            ins = [CL.to_first(xp, inputs[0]), CL.to_first(xp, inputs[1])] + inputs[2:]
            return [CL.to_last(xp, self.forward(ctx, CL.channel_first(p), ins, aux)[0])]
        win = self._check(p, inputs)
        bias = None if p.no_bias else inputs[2]
        return [conv_forward(ctx, win, inputs[0], inputs[1], p.num_group, bias,
                             p.workspace, None if out is None else out[0])]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux, in_grad=None):
        if p.layout in CL.FIRST:
            xp = ctx.xp
            grads = self.backward(
                ctx, CL.channel_first(p), [CL.to_first(xp, out_grads[0])],
                [CL.to_first(xp, inputs[0]), CL.to_first(xp, inputs[1])] + inputs[2:],
                outputs, aux)
            return [None if g is None else CL.to_last(xp, g) if i < 2 else g
                    for i, g in enumerate(grads)]
        x, w = inputs[0], inputs[1]
        need = ctx.need_grad
        win = conv_windows(p, x.shape)
        dx, dw, db = conv_backward(ctx, win, out_grads[0], x, w, p.num_group,
                                   need_data=need[0], need_weight=need[1],
                                   need_bias=not p.no_bias and need[2],
                                   workspace=p.workspace,
                                   dx_out=None if in_grad is None else in_grad[0])
        return [dx, dw] if p.no_bias else [dx, dw, db]
