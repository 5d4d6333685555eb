"""Quantized (int8/uint8) layers of MXNet 1.9.1's contrib namespace whose integer result
needs no requantization: ``quantized_flatten``, ``quantized_act`` (relu),
``quantized_pooling`` and ``quantized_concat``. Each takes the quantized data with its
float range (min_data, max_data: one-value arrays) and returns the result with its
range.
"""
import numpy as np

from ...base import MXNetError
from ..nn.pooling import Pooling
from ..params import Bool, Enum, Int, Schema, Shape
from ..registry import Op, ShapeError, get_op, register
from ._common import store_all

__all__ = ["QuantizedFlatten", "QuantizedAct", "QuantizedPooling", "QuantizedConcat",
           "QuantizedFullyConnected", "QuantizedConv", "QuantizedEmbedding"]

_F32 = np.dtype(np.float32)


class _QuantizedUnary(Op):
    writes_outputs = True
    backward_uses = ()

    def arguments(self, p):
        return ["data", "min_data", "max_data"]

    def outputs(self, p):
        return ["output", "min_output", "max_output"]

    def _out_shape(self, p, d):
        return tuple(d)

    def infer_shape(self, p, in_shapes):
        d = in_shapes[0]
        return [d and tuple(d), (1,), (1,)], \
            [None if d is None else self._out_shape(p, d), (1,), (1,)], []

    def infer_type(self, p, in_types):
        t = in_types[0]
        if t is not None and np.dtype(t) not in (np.dtype(np.int8), np.dtype(np.uint8)):
            raise MXNetError(f"{self.name}: data must be int8 or uint8, got "
                             f"{np.dtype(t).name}")
        return [t, _F32, _F32], [t, _F32, _F32], []

    def forward(self, ctx, p, inputs, aux, out=None):
        data, mn, mx_ = inputs
        self.infer_type(p, [data.dtype, None, None])
        return store_all(out, [self._apply(ctx, p, data), mn.astype(np.float32).copy(),
                               mx_.astype(np.float32).copy()])


@register
class QuantizedFlatten(_QuantizedUnary):
    """Flatten quantized data to (batch, rest); the range is unchanged."""
    name = "_contrib_quantized_flatten"
    params = Schema()

    def _out_shape(self, p, d):
        return (d[0], int(np.prod(d[1:])))

    def _apply(self, ctx, p, data):
        return data.reshape(self._out_shape(p, data.shape)).copy()


@register
class QuantizedAct(_QuantizedUnary):
    """ReLU on quantized data (max(q, 0)); the range is unchanged. Like MXNet 1.9.1's
    CPU kernel, only act_type='relu' is supported."""
    name = "_contrib_quantized_act"
    params = Schema(act_type=Enum(("relu", "sigmoid", "softrelu", "softsign", "tanh")))

    def check_params(self, p):
        if p.act_type != "relu":
            raise MXNetError(f"quantized_act: only act_type='relu' is supported for "
                             f"quantized data, got {p.act_type!r}")

    def _apply(self, ctx, p, data):
        return ctx.xp.maximum(data, 0).astype(data.dtype)


@register
class QuantizedPooling(_QuantizedUnary):
    """Max or average pooling of quantized data (Pooling's parameters); averages are
    rounded half to even back to the integer type; the range is unchanged."""
    name = "_contrib_quantized_pooling"
    params = Pooling.params

    def _out_shape(self, p, d):
        return tuple(get_op("Pooling").infer_shape(p, [d])[1][0])

    def _apply(self, ctx, p, data):
        if p.pool_type not in ("max", "avg"):
            raise MXNetError(f"quantized_pooling: pool_type must be 'max' or 'avg', got "
                             f"{p.pool_type!r}")
        if p.pool_type == "avg" and p.pooling_convention == "full":
            # MXNet's quantized kernel divides the windows that overhang the input
            # differently from Pooling; not reproduced yet.
            raise NotImplementedError("quantized_pooling: average pooling with "
                                      "pooling_convention='full' is not implemented")
        y = get_op("Pooling").forward(ctx, p, [data.astype(np.float64)], [])[0]
        return ctx.xp.rint(y).astype(data.dtype)


@register
class QuantizedConcat(Op):
    """Concatenate quantized arrays along ``dim``: inputs are the num_args arrays, then
    a (min, max) pair per array. The result's range runs from the least min to the
    greatest max; every input is rescaled from its own max(|min|, |max|) to the
    result's (rounded half to even)."""
    name = "_contrib_quantized_concat"
    writes_outputs = True
    variadic = "num_args"
    params = Schema(num_args=Int(low=1), dim=Int(1))
    backward_uses = ()

    def arguments(self, p):
        n = p.num_args
        names = [f"arg{i}" for i in range(n)]
        for i in range(n):
            names += [f"arg{i}_min", f"arg{i}_max"]
        return names

    def outputs(self, p):
        return ["output", "min_output", "max_output"]

    def infer_shape(self, p, in_shapes):
        n = p.num_args
        if len(in_shapes) != 3 * n:
            raise ShapeError(f"quantized_concat: expected {3 * n} inputs (num_args arrays "
                             f"and a min/max pair each), got {len(in_shapes)}")
        data = in_shapes[:n]
        known = [tuple(s) for s in data if s is not None]
        out = None
        if len(known) == n:
            ax = p.dim % len(known[0])
            for s in known:
                if len(s) != len(known[0]) or any(a != b for i, (a, b) in
                                                  enumerate(zip(s, known[0])) if i != ax):
                    raise ShapeError(f"quantized_concat: shapes {known} differ outside "
                                     f"axis {p.dim}")
            out = list(known[0])
            out[ax] = sum(s[ax] for s in known)
            out = tuple(out)
        return list(data) + [(1,)] * (2 * n), [out, (1,), (1,)], []

    def infer_type(self, p, in_types):
        n = p.num_args
        t = next((x for x in in_types[:n] if x is not None), None)
        return [t] * n + [_F32] * (2 * n), [t, _F32, _F32], []

    def forward(self, ctx, p, inputs, aux, out=None):
        xp = ctx.xp
        n = p.num_args
        self.infer_shape(p, [a.shape for a in inputs])
        data = inputs[:n]
        mins = [float(inputs[n + 2 * i].reshape(-1)[0]) for i in range(n)]
        maxs = [float(inputs[n + 2 * i + 1].reshape(-1)[0]) for i in range(n)]
        ranges = [max(abs(a), abs(b)) for a, b in zip(mins, maxs)]
        lo, hi = min(mins), max(maxs)
        real = max(abs(lo), abs(hi))
        parts = []
        for d, r in zip(data, ranges):
            if r == real:
                parts.append(d)
            else:
                scaled = xp.rint(d.astype(np.float32) * np.float32(r / real))
                parts.append(scaled.astype(d.dtype))
        res = xp.concatenate(parts, axis=p.dim)
        return store_all(out, [res, xp.full((1,), lo, np.float32),
                               xp.full((1,), hi, np.float32)])


_INT32_MAX = 2147483647.0


def _range_of(arr):
    return float(arr.reshape(-1)[0])


class _QuantizedProduct(Op):
    """int8 (or uint8) data x int8 weight -> int32 (exact integer sums, computed by the
    float operator ``float_op`` on float64 copies), with the int32 range of the
    product: +-(rd / Rd) * (rw / 127) * (2^31 - 1) for data and weight ranges rd, rw,
    where Rd is 127 for int8 data and 255 for uint8 data (whose range is [0, rd])."""
    writes_outputs = True
    backward_uses = ()
    float_op = None

    def arguments(self, p):
        names = ["data", "weight"] + ([] if p.no_bias else ["bias"])
        names += ["min_data", "max_data", "min_weight", "max_weight"]
        return names + ([] if p.no_bias else ["min_bias", "max_bias"])

    def outputs(self, p):
        return ["output", "min_output", "max_output"]

    def _float_params(self, p):
        fields = get_op(self.float_op).params.fields
        return get_op(self.float_op).parse({k: v for k, v in p.given.items() if k in fields})

    def infer_shape(self, p, in_shapes):
        nb = 0 if p.no_bias else 1
        fop = get_op(self.float_op)
        ins, outs, _ = fop.infer_shape(self._float_params(p), list(in_shapes[:2 + nb]))
        return list(ins) + [(1,)] * (len(in_shapes) - 2 - nb), [outs[0], (1,), (1,)], []

    def infer_type(self, p, in_types):
        nb = 0 if p.no_bias else 1
        f = [_F32] * (len(in_types) - 2 - nb)
        return [in_types[0], np.dtype(np.int8)] + [np.dtype(np.int8)] * nb + f, \
            [np.dtype(np.int32), _F32, _F32], []

    def forward(self, ctx, p, inputs, aux, out=None):
        xp = ctx.xp
        nb = 0 if p.no_bias else 1
        data, weight = inputs[0], inputs[1]
        if data.dtype not in (np.int8, np.uint8) or weight.dtype != np.int8:
            raise MXNetError(f"{self.name}: data must be int8 or uint8 and weight int8, "
                             f"got {data.dtype.name} and {weight.dtype.name}")
        rngs = inputs[2 + nb:]
        rd = max(abs(_range_of(rngs[0])), abs(_range_of(rngs[1])))
        rw = max(abs(_range_of(rngs[2])), abs(_range_of(rngs[3])))
        d_levels = 255.0 if data.dtype == np.uint8 else 127.0
        # One int32 step is worth (rd / Rd) * (rw / 127) in real units.
        step = (rd / d_levels) * (rw / 127.0)
        fp = self._float_params(p)
        fp = get_op(self.float_op).parse({**fp.given, "no_bias": True})
        y = get_op(self.float_op).forward(ctx, fp, [data.astype(np.float64),
                                                    weight.astype(np.float64)], [])[0]
        if nb:
            rb = max(abs(_range_of(rngs[4])), abs(_range_of(rngs[5])))
            # The int8 bias as a float (b * rb / 127) into int32 units, truncated, with
            # the float32 arithmetic of MXNet 1.9.1's kernels (int8 and uint8 data
            # order the products differently).
            f = np.float32
            b = inputs[2].astype(np.float32)
            if data.dtype == np.int8:
                scale = (f(127) / f(rd)) * (f(127.5) / f(rw))
                bias = xp.trunc((b * (f(rb) / f(127))) * scale)
            else:
                scale = float(f((255.5 / rd) * (127.0 / rw) * (rb / 127.0)))
                bias = xp.trunc(b.astype(np.float64) * scale)
            shape = (1, -1) + (1,) * (y.ndim - 2)
            y = y + bias.reshape(shape)
        r = xp.full((1,), step * _INT32_MAX, np.float32)
        return store_all(out, [y.astype(np.int32), -r, r])


@register
class QuantizedFullyConnected(_QuantizedProduct):
    """FullyConnected on quantized data and weight: int32 output and its range."""
    name = "_contrib_quantized_fully_connected"
    float_op = "FullyConnected"
    params = Schema(num_hidden=Int(low=1), no_bias=Bool(False), flatten=Bool(True))


@register
class QuantizedConv(_QuantizedProduct):
    """Convolution (Convolution's parameters) on int8 or uint8 data and int8 weight:
    int32 output and its range. (MXNet 1.9.1's CPU oneDNN kernel, uint8 data only,
    reports int8 data's range and adds the int8 bias unscaled; pymxnet keeps the
    int32 result consistent with its range, as quantized_fully_connected does.)"""
    name = "_contrib_quantized_conv"
    float_op = "Convolution"
    params = get_op("Convolution").params



@register
class QuantizedEmbedding(Op):
    """Embedding lookup into an int8 ``weight`` (input_dim, output_dim) with its range
    (min_weight, max_weight), which the output keeps; indices are clipped into
    [0, input_dim) as Embedding does."""
    name = "_contrib_quantized_embedding"
    writes_outputs = True
    params = get_op("Embedding").params
    backward_uses = ()

    def arguments(self, p):
        return ["data", "weight", "min_weight", "max_weight"]

    def outputs(self, p):
        return ["output", "min_output", "max_output"]

    def infer_shape(self, p, in_shapes):
        d, w = in_shapes[0], in_shapes[1]
        want = (p.input_dim, p.output_dim)
        if w is not None and tuple(w) != want:
            raise ShapeError(f"quantized_embedding: weight must be {want}, got {tuple(w)}")
        out = None if d is None else tuple(d) + (p.output_dim,)
        return [d and tuple(d), want, (1,), (1,)], [out, (1,), (1,)], []

    def infer_type(self, p, in_types):
        return [in_types[0], np.dtype(np.int8), _F32, _F32], [np.dtype(np.int8), _F32, _F32], []

    def forward(self, ctx, p, inputs, aux, out=None):
        xp = ctx.xp
        data, weight, mn, mx_ = inputs
        self.infer_shape(p, [data.shape, weight.shape])
        if weight.dtype != np.int8:
            raise MXNetError(f"quantized_embedding: weight must be int8, got "
                             f"{weight.dtype.name}")
        idx = xp.clip(data.astype(np.int64), 0, p.input_dim - 1)
        return store_all(out, [weight[idx], mn.astype(np.float32).copy(),
                               mx_.astype(np.float32).copy()])
