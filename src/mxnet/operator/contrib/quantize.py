"""INT8/UINT8 quantization operators of MXNet 1.9.1's contrib namespace: ``quantize``,
``quantize_v2`` and ``dequantize`` (the NumPy path; MXNet's oneDNN and native CPU
kernels agree on these formulas).

Symmetric: scale = R / max(|min|, |max|); int8 reports the range (-max|.|, +max|.|),
uint8 has zero point 0 (negatives become 0) and reports the range given.
``quantize``: R = 127 / 255, rounding half away from zero, int8 within +-127.
``quantize_v2``: R = 127.5 / 255.5 (MXNet's kInt8Range/kUint8Range), rounding half to
even, int8 saturating to [-128, 127]. ``dequantize``: q * max(|min|, |max|) / R with the
v2 ranges. All arithmetic is float32, as in MXNet.
"""
import numpy as np

from ...base import MXNetError
from ..params import Enum, FloatOrNone, Schema
from ..registry import Op, ShapeError, register
from ._common import store_all, store

__all__ = ["Quantize", "QuantizeV2", "Dequantize", "Requantize", "QuantizeAsym"]

_F32 = np.float32


def _quantize(xp, x, lo, hi, out_type, v2, ranges=(127.5, 255.5)):
    """(q, out_min, out_max) for data x and float32 range [lo, hi]; ``v2`` selects
    quantize_v2's rounding (half to even, int8 saturating at -128) and ``ranges`` (the
    int8 and uint8 R) instead of quantize's."""
    x = x.astype(_F32, copy=False)
    real = _F32(max(abs(lo), abs(hi)))
    r8, ru8 = ranges if v2 else (127, 255)
    if out_type == "int8":
        scale = _F32(r8) / real if real else _F32(0)
        if v2:
            q = xp.clip(xp.rint(x * scale), -128, 127)
        else:
            q = xp.sign(x) * xp.minimum(xp.trunc(xp.abs(x) * scale + _F32(0.5)), _F32(127))
        return q.astype(np.int8), -real, real
    scale = _F32(ru8) / real if real else _F32(0)
    q = xp.clip(xp.rint(x * scale) if v2 else xp.trunc(x * scale + _F32(0.5)), 0, 255)
    return q.astype(np.uint8), _F32(lo), _F32(hi)


def _scalar_range(name, arr):
    if arr.size != 1:
        raise ShapeError(f"{name}: min_range/max_range must hold one value, got shape "
                         f"{arr.shape}")
    return float(arr.reshape(-1)[0])


class _QuantizeBase(Op):
    writes_outputs = True
    backward_uses = ()

    def outputs(self, p):
        return ["output", "min_output", "max_output"]

    def _out_type(self, p):
        return p.out_type

    def infer_shape(self, p, in_shapes):
        d = in_shapes[0]
        rng = [(1,)] * (len(in_shapes) - 1)
        return [d and tuple(d)] + rng, [d and tuple(d), (1,), (1,)], []

    def infer_type(self, p, in_types):
        return ([in_types[0]] + [np.dtype(_F32)] * (len(in_types) - 1),
                [np.dtype(self._out_type(p)), np.dtype(_F32), np.dtype(_F32)], [])


@register
class Quantize(_QuantizeBase):
    """Quantize float ``data`` given its range (``min_range``, ``max_range`` arrays of
    one value) to int8 or uint8; outputs the quantized data and its range."""
    name = "_contrib_quantize"
    params = Schema(out_type=Enum(("int8", "uint8"), "uint8"))

    def arguments(self, p):
        return ["data", "min_range", "max_range"]

    def forward(self, ctx, p, inputs, aux, out=None):
        xp = ctx.xp
        data, mn, mx_ = inputs
        lo, hi = _scalar_range(self.name, mn), _scalar_range(self.name, mx_)
        q, omin, omax = _quantize(xp, data, lo, hi, p.out_type, False)
        return store_all(out, [q, xp.full((1,), omin, _F32), xp.full((1,), omax, _F32)])


@register
class QuantizeV2(_QuantizeBase):
    """Quantize float ``data`` using the calibrated range when given, else the data's
    own min and max. ``out_type='auto'``: uint8 when the calibrated minimum is >= 0,
    else int8."""
    name = "_contrib_quantize_v2"
    params = Schema(out_type=Enum(("auto", "int8", "uint8"), "int8"),
                    min_calib_range=FloatOrNone(None), max_calib_range=FloatOrNone(None))

    def _out_type(self, p):
        if p.out_type != "auto":
            return p.out_type
        if p.min_calib_range is not None and p.min_calib_range >= 0:
            return "uint8"
        return "int8"

    def forward(self, ctx, p, inputs, aux, out=None):
        xp = ctx.xp
        data = inputs[0]
        if p.min_calib_range is not None and p.max_calib_range is not None:
            lo, hi = p.min_calib_range, p.max_calib_range
        else:
            if data.size == 0:
                raise MXNetError(f"{self.name}: cannot take the range of empty data")
            lo, hi = float(data.min()), float(data.max())
        q, omin, omax = _quantize(xp, data, lo, hi, self._out_type(p), True)
        return store_all(out, [q, xp.full((1,), omin, _F32), xp.full((1,), omax, _F32)])


@register
class Dequantize(Op):
    """int8/uint8 ``data`` with its range back to float32: q * max(|min|, |max|) / R
    (R = 127.5 for int8, 255.5 for uint8)."""
    name = "_contrib_dequantize"
    writes_outputs = True
    params = Schema(out_type=Enum(("float32",), "float32"))
    backward_uses = ()

    def arguments(self, p):
        return ["data", "min_range", "max_range"]

    def infer_shape(self, p, in_shapes):
        d = in_shapes[0]
        return [d and tuple(d), (1,), (1,)], [d and tuple(d)], []

    def infer_type(self, p, in_types):
        t = in_types[0]
        if t is not None and np.dtype(t) not in (np.dtype(np.int8), np.dtype(np.uint8)):
            raise MXNetError(f"dequantize: data must be int8 or uint8, got "
                             f"{np.dtype(t).name}")
        return [t, np.dtype(_F32), np.dtype(_F32)], [np.dtype(_F32)], []

    def forward(self, ctx, p, inputs, aux, out=None):
        data, mn, mx_ = inputs
        self.infer_type(p, [data.dtype, None, None])
        real = _F32(max(abs(_scalar_range(self.name, mn)), abs(_scalar_range(self.name, mx_))))
        r = _F32(127.5) if data.dtype == np.int8 else _F32(255.5)
        return [store(out, 0, data.astype(_F32) * (real / r))]


_INT32_RANGE = 2147483647.0


@register
class Requantize(_QuantizeBase):
    """int32 ``data`` (as produced by quantized matrix products, with the float range
    ``min_range``/``max_range`` of its full int32 span) to int8/uint8: the real values
    q * max(|min|, |max|) / (2^31 - 1) are quantized as quantize_v2 does but with
    R = 127 / 255, into the calibrated range when given, else into the data's own
    range. (Uncalibrated, MXNet
    1.9.1's CPU kernel reports a reversed range and flips signs; pymxnet returns the
    symmetric range and the values' own signs.)"""
    name = "_contrib_requantize"
    params = Schema(out_type=Enum(("auto", "int8", "uint8"), "int8"),
                    min_calib_range=FloatOrNone(None), max_calib_range=FloatOrNone(None))
    _out_type = QuantizeV2._out_type

    def arguments(self, p):
        return ["data", "min_range", "max_range"]

    def infer_type(self, p, in_types):
        if in_types[0] is not None and np.dtype(in_types[0]) != np.int32:
            raise MXNetError(f"requantize: data must be int32, got {np.dtype(in_types[0]).name}")
        return super().infer_type(p, in_types)

    def forward(self, ctx, p, inputs, aux, out=None):
        xp = ctx.xp
        data, mn, mx_ = inputs
        if data.dtype != np.int32:
            raise MXNetError(f"requantize: data must be int32, got {data.dtype.name}")
        real_in = max(abs(_scalar_range(self.name, mn)), abs(_scalar_range(self.name, mx_)))
        real = data.astype(np.float64) * (real_in / _INT32_RANGE)
        if p.min_calib_range is not None and p.max_calib_range is not None:
            lo, hi = p.min_calib_range, p.max_calib_range
        else:
            lo, hi = float(real.min()), float(real.max())
            m = max(abs(lo), abs(hi))
            lo, hi = -m, m
        # requantize scales by 127 / 255 (not quantize_v2's 127.5 / 255.5).
        q, omin, omax = _quantize(xp, real.astype(_F32), lo, hi, self._out_type(p), True,
                                  ranges=(127, 255))
        return store_all(out, [q, xp.full((1,), omin, _F32), xp.full((1,), omax, _F32)])


@register
class QuantizeAsym(Op):
    """Asymmetric uint8 quantization (for quantized RNN data): with the calibrated range
    [lo, hi] (else the data's own), scale = 255 / (hi - lo) and shift = 255 - hi * scale;
    output = x * scale + shift rounded half to even into [0, 255], and the scale and
    shift as one-element float32 arrays. A zero-width range gives scale inf, shift -inf
    and zeros, as MXNet 1.9.1 does (which, unlike pymxnet, only runs 3-d data on CPU)."""
    name = "_contrib_quantize_asym"
    writes_outputs = True
    backward_uses = ()
    params = Schema(min_calib_range=FloatOrNone(None), max_calib_range=FloatOrNone(None))

    def arguments(self, p):
        return ["data"]

    def outputs(self, p):
        return ["output", "scale", "shift"]

    def infer_shape(self, p, in_shapes):
        d = in_shapes[0]
        return [d and tuple(d)], [d and tuple(d), (1,), (1,)], []

    def infer_type(self, p, in_types):
        t = in_types[0]
        if t is not None and np.dtype(t) != np.float32:
            raise MXNetError(f"quantize_asym: data must be float32, got {np.dtype(t).name}")
        return [np.dtype(_F32)], [np.dtype(np.uint8), np.dtype(_F32), np.dtype(_F32)], []

    def forward(self, ctx, p, inputs, aux, out=None):
        xp = ctx.xp
        data = inputs[0].astype(_F32, copy=False)
        if p.min_calib_range is not None and p.max_calib_range is not None:
            lo, hi = _F32(p.min_calib_range), _F32(p.max_calib_range)
        else:
            if data.size == 0:
                raise MXNetError("quantize_asym: cannot take the range of empty data")
            lo, hi = _F32(data.min()), _F32(data.max())
        if hi == lo:
            scale, shift = _F32(np.inf), _F32(-np.inf)
            q = xp.zeros(data.shape, np.uint8)
        else:
            scale = _F32(255) / (hi - lo)
            shift = _F32(255) - hi * scale
            q = xp.clip(xp.rint(data * scale + shift), 0, 255).astype(np.uint8)
        return store_all(out, [q, xp.full((1,), scale, _F32), xp.full((1,), shift, _F32)])
