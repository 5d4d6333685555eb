"""Quantized elementwise add/multiply and batch norm of MXNet 1.9.1's contrib namespace.

Each takes int8/uint8 data with its float range (one-value min/max arrays). A quantized
value q of range r stands for q * r / L, L = 127 for int8 and 255 for uint8 (add and
batch norm dequantize with MXNet's 127.5/255.5 where its kernels do, see each class).
Without a calibrated output range add and multiply return int32 with the range of the
int32 span; with one (``min_calib_range``/``max_calib_range``) they return int8 scaled to
it, which is also the range they report (MXNet 1.9.1 keeps int8 even when the range
starts at 0). Quantized batch norm needs the calibrated range, as in MXNet.
"""
import numpy as np

from ...base import MXNetError
from ..nn.batch_norm import BatchNorm
from ..params import Bool, FloatOrNone, Schema
from ..registry import Op, ShapeError, register
from ._common import store_all

__all__ = ["QuantizedElemwiseAdd", "QuantizedElemwiseMul", "QuantizedBatchNorm"]

_F32 = np.dtype(np.float32)
_INT32_MAX = 2147483647.0


def _real_range(lo, hi):
    return max(abs(float(lo.reshape(-1)[0])), abs(float(hi.reshape(-1)[0])))


def _levels(dtype, half=False):
    """Quantization levels of the dtype: 127/255, or MXNet's 127.5/255.5 with half."""
    base = 255.0 if np.dtype(dtype) == np.uint8 else 127.0
    return base + 0.5 if half else base


def _check_quantized(name, *arrays):
    for a in arrays:
        if a.dtype not in (np.int8, np.uint8):
            raise MXNetError(f"{name}: data must be int8 or uint8, got {a.dtype.name}")


def _to_int8(xp, real, lo, hi, trunc=False):
    """real values into int8 for the calibrated range (lo, hi): scale 127 / max|.|,
    rounded half to even (or truncated), saturating."""
    r = max(abs(lo), abs(hi))
    if not r:
        return xp.zeros(real.shape, np.int8)
    scaled = real * (127.0 / r)
    q = xp.trunc(scaled) if trunc else xp.rint(scaled)
    return xp.clip(q, -128, 127).astype(np.int8)


class _QuantizedBinary(Op):
    writes_outputs = True
    backward_uses = ()

    def _calibrated(self, p):
        return p.min_calib_range is not None and p.max_calib_range is not None

    def arguments(self, p):
        return ["lhs", "rhs", "lhs_min", "lhs_max", "rhs_min", "rhs_max"]

    def outputs(self, p):
        return ["output", "min_output", "max_output"]

    def infer_shape(self, p, in_shapes):
        a, b = in_shapes[0], in_shapes[1]
        if a is not None and b is not None and tuple(a) != tuple(b):
            raise ShapeError(f"{self.name}: lhs and rhs must have the same shape, got "
                             f"{tuple(a)} and {tuple(b)}")
        d = a if a is not None else b
        d = d and tuple(d)
        return [d, d] + [(1,)] * 4, [d] + [(1,)] * (len(self.outputs(p)) - 1), []

    def _out_type(self, p):
        return np.dtype(np.int8) if self._calibrated(p) else np.dtype(np.int32)

    def infer_type(self, p, in_types):
        t = [x for x in in_types[:2]]
        outs = [self._out_type(p)] + [_F32] * (len(self.outputs(p)) - 1)
        return t + [_F32] * 4, outs, []


@register
class QuantizedElemwiseAdd(_QuantizedBinary):
    """lhs + rhs of quantized arrays. Uncalibrated: int32 of range +-(r_lhs + r_rhs),
    from the inputs dequantized with 127.5/255.5. Calibrated: int8 of the given range,
    from the inputs dequantized with 127/255."""
    name = "_contrib_quantized_elemwise_add"
    params = Schema(min_calib_range=FloatOrNone(None), max_calib_range=FloatOrNone(None))

    def forward(self, ctx, p, inputs, aux, out=None):
        xp = ctx.xp
        a, b = inputs[0], inputs[1]
        _check_quantized(self.name, a, b)
        ra, rb = _real_range(inputs[2], inputs[3]), _real_range(inputs[4], inputs[5])
        calib = self._calibrated(p)
        la, lb = _levels(a.dtype, half=not calib), _levels(b.dtype, half=not calib)
        real = a.astype(np.float64) * (ra / la) + b.astype(np.float64) * (rb / lb)
        if calib:
            res = _to_int8(xp, real, p.min_calib_range, p.max_calib_range)
            lo, hi = p.min_calib_range, p.max_calib_range
        else:
            span = ra + rb
            res = xp.rint(real * (_INT32_MAX / span)) if span else xp.zeros_like(real)
            res = xp.clip(res, -_INT32_MAX, _INT32_MAX).astype(np.int32)
            lo, hi = -span, span
        return store_all(out, [res, xp.full((1,), lo, np.float32),
                               xp.full((1,), hi, np.float32)])


@register
class QuantizedElemwiseMul(_QuantizedBinary):
    """lhs * rhs of quantized arrays. Uncalibrated: the int32 products q_lhs * q_rhs with
    range +-(r_lhs / 127) * (r_rhs / 127) * (2^31 - 1). Calibrated: int8 of the given
    range (truncated toward zero). ``enable_float_output``: the float32 product alone (inputs dequantized with
    127.5/255.5, as for the calibrated result)."""
    name = "_contrib_quantized_elemwise_mul"
    params = Schema(min_calib_range=FloatOrNone(None), max_calib_range=FloatOrNone(None),
                    enable_float_output=Bool(False))

    def outputs(self, p):
        if p.enable_float_output:
            return ["output"]
        return ["output", "min_output", "max_output"]

    def _out_type(self, p):
        if p.enable_float_output:
            return _F32
        return super()._out_type(p)

    def forward(self, ctx, p, inputs, aux, out=None):
        xp = ctx.xp
        a, b = inputs[0], inputs[1]
        _check_quantized(self.name, a, b)
        ra, rb = _real_range(inputs[2], inputs[3]), _real_range(inputs[4], inputs[5])
        prod = a.astype(np.float64) * b.astype(np.float64)
        real_step = (ra / _levels(a.dtype, True)) * (rb / _levels(b.dtype, True))
        if p.enable_float_output:
            return store_all(out, [(prod * real_step).astype(np.float32)])
        if self._calibrated(p):
            # (MXNet 1.9.1 truncates here where add and batch norm round)
            res = _to_int8(xp, prod * real_step, p.min_calib_range, p.max_calib_range,
                           trunc=True)
            lo, hi = p.min_calib_range, p.max_calib_range
        else:
            res = prod.astype(np.int32)
            hi = (ra / _levels(a.dtype)) * (rb / _levels(b.dtype)) * _INT32_MAX
            lo = -hi
        return store_all(out, [res, xp.full((1,), lo, np.float32),
                               xp.full((1,), hi, np.float32)])


@register
class QuantizedBatchNorm(Op):
    """Inference batch norm (moving statistics) of quantized data: the data dequantized
    with 127.5/255.5, normalised as BatchNorm does, and quantized to int8 for the
    calibrated output range, which is required. Called as MXNet calls it: (data, gamma,
    beta, moving_mean, moving_var, min_data, max_data); the moving statistics are
    auxiliary states."""
    name = "_contrib_quantized_batch_norm"
    writes_outputs = True
    backward_uses = ()
    params = BatchNorm.params

    def arguments(self, p):
        return ["data", "gamma", "beta", "min_data", "max_data"]

    def aux_states(self, p):
        return ["moving_mean", "moving_var"]

    def positional_inputs(self, p):
        return ["data", "gamma", "beta", "moving_mean", "moving_var", "min_data",
                "max_data"]

    def outputs(self, p):
        return ["output", "min_output", "max_output"]

    def _check(self, p):
        if p.min_calib_range is None or p.max_calib_range is None:
            raise MXNetError(f"{self.name}: min_calib_range and max_calib_range are "
                             "required (quantized batch norm has no uncalibrated mode)")

    def infer_shape(self, p, in_shapes):
        d = in_shapes[0]
        bn_in = [d] + list(in_shapes[1:3]) + list(in_shapes[5:7])
        ins, _, aux = BatchNorm().infer_shape(p, bn_in)
        return list(ins) + [(1,), (1,)], [ins[0], (1,), (1,)], list(aux)

    def infer_type(self, p, in_types):
        t = in_types[0]
        if t is not None and np.dtype(t) not in (np.dtype(np.int8), np.dtype(np.uint8)):
            raise MXNetError(f"{self.name}: data must be int8 or uint8, got "
                             f"{np.dtype(t).name}")
        return [t, _F32, _F32, _F32, _F32], [np.dtype(np.int8), _F32, _F32], [_F32, _F32]

    def forward(self, ctx, p, inputs, aux, out=None):
        xp = ctx.xp
        self._check(p)
        data, gamma, beta, mn, mx_ = inputs
        _check_quantized(self.name, data)
        mean, var = aux
        real = data.astype(np.float32) * np.float32(_real_range(mn, mx_) /
                                                    _levels(data.dtype, True))
        axis = p.axis % data.ndim
        shape = [1] * data.ndim
        shape[axis] = -1
        g = xp.ones_like(gamma) if p.fix_gamma else gamma
        scale = (g / xp.sqrt(var.astype(np.float32) + np.float32(p.eps))).reshape(shape)
        y = (real - mean.reshape(shape)) * scale + beta.reshape(shape)
        res = _to_int8(xp, y, p.min_calib_range, p.max_calib_range)
        return store_all(out, [res, xp.full((1,), p.min_calib_range, np.float32),
                               xp.full((1,), p.max_calib_range, np.float32)])
