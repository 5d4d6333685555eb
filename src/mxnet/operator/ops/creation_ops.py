"""Input-less creation operators: _zeros, _ones, _full, _zeros_without_dtype,
_arange, _linspace and _eye (the back ends of mx.nd/mx.sym zeros, ones, full, arange,
linspace and eye). The front end passes ``ctx`` to the dispatcher.

In a shape, 0 means an unknown dimension (MXNet 1.x legacy semantics): symbolic shape
inference fills it in from the consumers, as ``mx.sym.zeros(shape=(0, H))`` begin
states of RNN cells rely on.
"""
import math

import numpy as np

from ...base import MXNetError, FLAG_TO_DTYPE
from ..params import Bool, DType, Float, FloatOrNone, Int, Params, Schema, Shape
from ..registry import Op, register


_ALL_TYPES = ("float16", "float32", "float64", "int32", "int64", "int8", "uint8", "bool")
_NUM_TYPES = _ALL_TYPES[:-1]


class _Creation(Op):
    backward_uses = ()
    zero_grad = True

    def arguments(self, p):
        return []

    def shape(self, p):
        raise NotImplementedError

    def infer_shape(self, p, in_shapes):
        return [], [tuple(None if d <= 0 else d for d in self.shape(p))], []   # 0, -1: unknown

    def infer_type(self, p, in_types):
        return [], [np.dtype(self.dtype(p))], []

    def dtype(self, p):
        return p.dtype

    def values(self, xp, p):
        raise NotImplementedError

    def forward(self, ctx, p, inputs, aux):
        return [self.values(ctx.xp, p)]


class _Filled(_Creation):
    fill = 0

    def shape(self, p):
        if not p.shape:
            raise MXNetError(f"{self.name}: a shape is required")
        return p.shape

    def values(self, xp, p):
        return xp.full(self.shape(p), self.fill, dtype=self.dtype(p))

    def needs_inferred_params(self, p):
        return not all(d > 0 for d in p.shape)

    def complete_params(self, p, out_shapes):
        """The parameters an executor runs with once inference has found the output
        shape: unknown (0 or -1) dimensions of ``shape`` filled in from it."""
        if all(d > 0 for d in p.shape) or out_shapes[0] is None:
            return p
        done = Params(p)
        done["shape"] = tuple(out_shapes[0])
        done.given = p.given
        return done


@register
class Zeros(_Filled):
    """An array of zeros."""
    name = "_zeros"
    params = Schema(shape=Shape(()), dtype=DType("float32", enum=_ALL_TYPES))


@register
class Ones(_Filled):
    """An array of ones."""
    name = "_ones"
    params = Schema(shape=Shape(()), dtype=DType("float32", enum=_ALL_TYPES))
    fill = 1


@register
class Full(_Filled):
    """An array filled with ``value``."""
    name = "_full"
    params = Schema(shape=Shape(()), dtype=DType("float32", enum=_ALL_TYPES), value=Float())

    def values(self, xp, p):
        return xp.full(self.shape(p), p.value, dtype=self.dtype(p))


@register
class ZerosWithoutDType(_Filled):
    """Zeros whose dtype is a type flag (-1: float32)."""
    name = "_zeros_without_dtype"
    params = Schema(shape=Shape(()), dtype=Int(-1))

    def dtype(self, p):
        if p.dtype < 0:
            return "float32"
        try:
            return FLAG_TO_DTYPE[p.dtype]
        except KeyError:
            raise MXNetError(f"_zeros_without_dtype: unknown dtype flag {p.dtype}") from None


@register
class Arange(_Creation):
    """Values start, start+step, ... below stop (0..start when stop is None), each
    repeated ``repeat`` times."""
    name = "_arange"
    params = Schema(start=Float(), stop=FloatOrNone(None), step=Float(1.0), repeat=Int(1),
                    infer_range=Bool(False), dtype=DType("float32", enum=_NUM_TYPES))
    empty_ok = False            # nd.arange refuses an empty range, as MXNet's does

    def _range(self, p):
        if p.infer_range:
            raise MXNetError("_arange: infer_range=True takes its length from the output "
                             "shape, which only symbolic shape inference provides")
        start, stop = (0.0, p.start) if p.stop is None else (p.start, p.stop)
        if p.step == 0:
            raise MXNetError("_arange: step cannot be 0")
        if p.repeat < 1:
            raise MXNetError(f"_arange: repeat={p.repeat} must be positive")
        n = int(math.ceil((stop - start) / p.step))
        if n <= 0 and self.empty_ok:
            return start, 0
        if n <= 0:
            raise MXNetError(f"_arange: the range start={start}, stop={stop}, "
                             f"step={p.step} is empty")
        return start, n

    def shape(self, p):
        if p.infer_range:
            return (0,)                 # unknown until inference reaches the output
        return (self._range(p)[1] * p.repeat,)

    def needs_inferred_params(self, p):
        return bool(p.infer_range)

    def complete_params(self, p, out_shapes):
        """With ``infer_range``: the parameters of the range that fills the inferred
        output shape (the same start and step, ``stop`` half a step past the last
        value so that rounding cannot change the count)."""
        if not p.infer_range or out_shapes[0] is None or not all(out_shapes[0]):
            return p
        n = out_shapes[0][0] // max(p.repeat, 1)
        done = Params(p)
        done["infer_range"] = False
        done["stop"] = p.start + (n - 0.5) * p.step
        done.given = p.given
        return done

    def values(self, xp, p):
        start, n = self._range(p)
        dt = np.dtype(p.dtype)
        if dt.kind == "f":
            # start and step in the output type, as MXNet computes them
            v = dt.type(start) + xp.arange(n, dtype=dt) * dt.type(p.step)
        else:
            # integers: start and step truncated first (arange(1.3, 5, 1.3) is 1, 2, 3),
            # then wrapped into the type (a negative step in uint8)
            v = (int(start) + xp.arange(n, dtype=np.int64) * int(p.step)).astype(dt)
        return xp.repeat(v, p.repeat) if p.repeat > 1 else v


@register
class NpiArange(Arange):
    """mx.np.arange's operator: as ``_arange``, but an empty range gives an empty array
    (NumPy's rule)."""
    name = "_npi_arange"
    empty_ok = True


@register
class Linspace(_Creation):
    """``num`` evenly spaced values from start to stop (stop excluded when
    endpoint=False)."""
    name = "_linspace"
    params = Schema(start=Float(), stop=Float(), num=Int(low=0), endpoint=Bool(True),
                    dtype=DType("float32", enum=_NUM_TYPES))

    def shape(self, p):
        return (p.num,)

    def values(self, xp, p):
        return xp.linspace(p.start, p.stop, p.num, endpoint=p.endpoint).astype(p.dtype)


@register
class Eye(_Creation):
    """An N x M matrix (M=0 means N) with ones on diagonal k."""
    name = "_eye"
    params = Schema(N=Int(low=0), M=Int(0, low=0), k=Int(0),
                    dtype=DType("float32", enum=_NUM_TYPES))

    def shape(self, p):
        return (p.N, p.M or p.N)

    def values(self, xp, p):
        return xp.eye(p.N, p.M or p.N, p.k, dtype=p.dtype)
