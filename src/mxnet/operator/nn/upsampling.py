"""UpSampling: nearest-neighbour (any number of inputs, concatenated or summed) and
bilinear (a depthwise Deconvolution whose weight is an input, as in MXNet)."""
import numpy as np

from ...base import MXNetError
from ..params import Enum, Int, Schema
from ..registry import Op, get_op, register
from .convolution import check_provided, same_dtype
from .deconvolution import deconv_backward, deconv_forward, deconv_windows

__all__ = ["UpSampling"]


def _bilinear_kernel(scale):
    return 2 * scale - scale % 2


def _deconv_params(scale, channels, workspace):
    """The Deconvolution that bilinear upsampling is."""
    k = _bilinear_kernel(scale)
    pad = -(-(scale - 1) // 2)
    return get_op("Deconvolution").parse(dict(
        kernel=(k, k), stride=(scale, scale), pad=(pad, pad), num_filter=channels,
        num_group=channels, no_bias=True, workspace=workspace))


def _check_float(t):
    # MXNet computes UpSampling for floating point types only (int32, uint8, ... refused)
    if t is not None and np.dtype(t).kind != "f":
        raise MXNetError(f"UpSampling: only floating point data is supported, got "
                         f"{np.dtype(t).name}")


def _check_4d(shape, kind):
    if len(shape) != 4:
        raise MXNetError(f"UpSampling ({kind}): input data should be 4-D in (batch, channel, "
                         f"y, x), got shape {tuple(shape)}")


@register
class UpSampling(Op):
    """Upsample (N, C, H, W) inputs by an integer ``scale``.

    nearest: every input is repeated to (scale*H_0, scale*W_0), the first input's size
    times scale (each input's own factor must be an integer); the results are
    concatenated along channels (multi_input_mode='concat') or added ('sum').
    bilinear: inputs are data and weight (C, 1, 2*scale - scale%2, same); the result is
    Deconvolution(data, weight, stride=scale, pad=ceil((scale-1)/2), num_group=C), and
    num_filter must be C."""
    name = "UpSampling"
    float_only = True           # (the runner refuses other data; infer_type below too)
    params = Schema(scale=Int(low=1), num_filter=Int(0),
                    sample_type=Enum(("bilinear", "nearest")),
                    multi_input_mode=Enum(("concat", "sum"), "concat"), num_args=Int(low=1),
                    workspace=Int(512, low=0))
    variadic = "num_args"
    backward_uses = ("out_grad", "in_data")
    resources = ("temp",)

    def arguments(self, p):
        if p.sample_type == "bilinear":
            return ["data", "weight"]
        return [f"arg{i}" for i in range(p.num_args or 1)]

    # --- shapes -------------------------------------------------------------------------
    def _nearest_scales(self, p, shapes):
        """Output shape and each input's own repeat factor."""
        for s in shapes:
            _check_4d(s, "nearest")
        n, _, h0, w0 = shapes[0]
        oh, ow = h0 * p.scale, w0 * p.scale
        scales, channels = [], []
        for i, (nb, c, h, w) in enumerate(shapes):
            if nb != n:
                raise MXNetError(f"UpSampling: input {i} has batch size {nb}, input 0 has {n}")
            if oh % h or ow % w or oh // h != ow // w:
                raise MXNetError(f"UpSampling: input {i} of size {h}x{w} cannot be upsampled "
                                 f"by an integer factor to the output size {oh}x{ow}")
            scales.append(oh // h)
            channels.append(c)
        if p.multi_input_mode == "sum":
            if any(c != channels[0] for c in channels):
                raise MXNetError("UpSampling: every input must have the same number of "
                                 f"channels when multi_input_mode='sum', got {channels}")
            c_out = channels[0]
        else:
            c_out = sum(channels)
        return (n, c_out, oh, ow), scales

    def infer_shape(self, p, in_shapes):
        if p.sample_type == "bilinear":
            if len(in_shapes) != 2:
                raise MXNetError("UpSampling: bilinear upsampling takes 2 inputs (data and "
                                 f"weight), got {len(in_shapes)}")
            d = in_shapes[0]
            if d is None:
                return list(in_shapes), [None], []
            _check_4d(d, "bilinear")
            if p.num_filter != d[1]:
                # the depthwise Deconvolution has num_filter groups, one per channel: any
                # other count (the default 0 included) fails in MXNet too
                raise MXNetError(f"UpSampling: bilinear upsampling needs num_filter equal to "
                                 f"the data's channels ({d[1]}), got {p.num_filter}")
            k = _bilinear_kernel(p.scale)
            w = (d[1], 1, k, k)
            check_provided(self.name, "weight", in_shapes[1], w)
            return [tuple(d), w], [(d[0], d[1], d[2] * p.scale, d[3] * p.scale)], []
        if p.num_args is not None and len(in_shapes) != p.num_args:
            raise MXNetError(f"UpSampling: expected {p.num_args} inputs (num_args), got "
                             f"{len(in_shapes)}")
        if any(s is None for s in in_shapes):
            return list(in_shapes), [None], []
        out, _ = self._nearest_scales(p, [tuple(s) for s in in_shapes])
        return list(in_shapes), [out], []

    def infer_type(self, p, in_types):
        t = same_dtype(self.name, self.arguments(p), in_types)
        _check_float(t)
        return [t] * len(in_types), [t], []

    # --- compute ------------------------------------------------------------------------
    def forward(self, ctx, p, inputs, aux):
        xp = ctx.xp
        same_dtype(self.name, self.arguments(p), [a.dtype for a in inputs])
        self.infer_shape(p, [a.shape for a in inputs])
        if p.sample_type == "bilinear":
            x, w = inputs
            dp = _deconv_params(p.scale, x.shape[1], p.workspace)
            win, out = deconv_windows(dp, x.shape, "UpSampling")
            return [deconv_forward(ctx, win, out, x, w, x.shape[1], workspace=p.workspace)]
        shape, scales = self._nearest_scales(p, [a.shape for a in inputs])
        y = xp.empty(shape, dtype=inputs[0].dtype)
        c0 = 0
        for i, (x, s) in enumerate(zip(inputs, scales)):
            c = x.shape[1]
            if p.multi_input_mode == "sum":
                _repeat_into(xp, x, s, y, add=i > 0)
            else:
                _repeat_into(xp, x, s, y[:, c0:c0 + c], add=False)
                c0 += c
        return [y]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux):
        dy = out_grads[0]
        need = ctx.need_grad or [True] * len(inputs)
        if p.sample_type == "bilinear":
            x, w = inputs
            dp = _deconv_params(p.scale, x.shape[1], p.workspace)
            win, _ = deconv_windows(dp, x.shape, "UpSampling")
            dx, dw, _ = deconv_backward(ctx, win, dy, x, w, x.shape[1],
                                        (need[0], need[1], False), p.workspace)
            return [dx, dw]
        shapes = [tuple(s) for s in (ctx.in_shapes or [a.shape for a in inputs])]
        _, scales = self._nearest_scales(p, shapes)
        n = dy.shape[0]
        grads, c0 = [], 0
        for i, ((_, c, h, w), s) in enumerate(zip(shapes, scales)):
            g = dy if p.multi_input_mode == "sum" else dy[:, c0:c0 + c]
            c0 += c
            if not need[i]:
                grads.append(None)
                continue
            grads.append(_fold(g, s, (n, c, h, w)))
        return grads


def _repeat_into(xp, x, s, dst, add):
    """dst (n, c, h*s, w*s) = (or +=) x repeated s times along both spatial axes: along
    the rows first through flat strided writes, then whole rows at a time (NumPy's
    inner loops stay long; a broadcast of x[..., None, :, None] would loop s at a time)."""
    n, c, h, w = x.shape
    if s == 1:
        if add:
            dst += x
        else:
            dst[...] = x
        return
    wide = xp.empty((n, c, h, w * s), dtype=x.dtype)
    flat, src = wide.reshape(-1), x.reshape(-1)
    for j in range(s):
        flat[j::s] = src
    rows = dst.reshape(n, c, h, s, w * s)
    if add:
        rows += wide[:, :, :, None, :]
    else:
        rows[...] = wide[:, :, :, None, :]


def _fold(g, s, shape):
    """The adjoint of _repeat_into: sum each s x s block of g (n, c, h*s, w*s)."""
    n, c, h, w = shape
    if s == 1:
        return g.copy()
    rows = g.reshape(n, c, h, s, w * s)
    acc = rows[:, :, :, 0, :] + rows[:, :, :, 1, :]
    for i in range(2, s):
        acc += rows[:, :, :, i, :]
    flat = acc.reshape(-1)
    out = flat[0::s] + flat[1::s]
    for j in range(2, s):
        out += flat[j::s]
    return out.reshape(shape)

