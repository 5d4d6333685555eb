"""Mixed-precision casts inserted by AMP: amp_cast (cast floating inputs to ``dtype``,
leave others alone) and amp_multicast (cast several inputs to their widest, or with
``cast_narrow`` their narrowest, floating type). Gradients are cast back to each
input's own type."""
import numpy as np

from ...base import MXNetError, is_float_dtype
from ..params import Bool, DType, Int, Schema
from ..registry import Op, register
from ..out_contract import adopt_out_contract

_AMP_TYPES = ("bfloat16", "float16", "float32", "float64", "int32", "int64", "int8", "uint8")


def _target(p):
    return np.dtype(p.dtype)


def _cast_into(x, dtype, dst):
    """x as ``dtype``: converted straight into ``dst`` when one is given (one pass,
    where astype-then-copy would make two), else a fresh array."""
    if dst is not None and dst.shape == x.shape and dst.dtype == dtype:
        dst[...] = x
        return dst
    return x.astype(dtype, copy=True)


@register
class AmpCast(Op):
    """Cast a floating-point input to ``dtype``; other inputs pass unchanged."""
    name = "amp_cast"
    bfloat16_native = True     # moves or casts values: any type alike
    named_inputs = False
    params = Schema(dtype=DType(enum=_AMP_TYPES))
    backward_uses = ("out_grad", "in_data")

    def infer_shape_from_outputs(self, p, in_shapes, out_shapes):
        """The output has the input's shape, so a known output shape gives the input's
        (a parameter read only through amp_cast still gets its shape)."""
        return [s if s is not None else o for s, o in zip(in_shapes, out_shapes)]

    def infer_type(self, p, in_types):
        t = in_types[0]
        return [t], [_target(p) if is_float_dtype(t) else t], []

    def forward(self, ctx, p, inputs, aux, out=None):
        x = inputs[0]
        want = _target(p) if is_float_dtype(x.dtype) else x.dtype
        return [_cast_into(x, want, None if out is None else out[0])]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux, in_grad=None):
        return [_cast_into(out_grads[0], inputs[0].dtype,
                           None if in_grad is None else in_grad[0])]


@register
class AmpMulticast(Op):
    """Cast every floating input to the widest floating type among them (narrowest
    with ``cast_narrow``)."""
    name = "amp_multicast"
    bfloat16_native = True     # moves or casts values: any type alike
    params = Schema(num_outputs=Int(low=1), cast_narrow=Bool(False))
    variadic = "num_outputs"
    backward_uses = ("out_grad", "in_data")

    def outputs(self, p):
        return [f"output{i}" for i in range(p.num_outputs)]

    def _common(self, p, types):
        floats = [np.dtype(t) for t in types if is_float_dtype(t)]
        if not floats:
            return None
        pick = min if p.cast_narrow else max
        return pick(floats, key=lambda t: t.itemsize)

    def infer_shape(self, p, in_shapes):
        if len(in_shapes) != p.num_outputs:
            raise MXNetError(f"amp_multicast: num_outputs={p.num_outputs} but "
                             f"{len(in_shapes)} inputs were given")
        return in_shapes, list(in_shapes), []

    def infer_shape_from_outputs(self, p, in_shapes, out_shapes):
        """Output i has input i's shape."""
        return [s if s is not None else o for s, o in zip(in_shapes, out_shapes)]

    def infer_type(self, p, in_types):
        c = self._common(p, in_types)
        return in_types, [c if is_float_dtype(t) else t for t in in_types], []

    def forward(self, ctx, p, inputs, aux, out=None):
        self.infer_shape(p, [a.shape for a in inputs])
        c = self._common(p, [a.dtype for a in inputs])
        return [a.astype(c) if is_float_dtype(a.dtype) else a.copy() for a in inputs]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux, in_grad=None):
        return [g.astype(a.dtype, copy=False) for g, a in zip(out_grads, inputs)]


adopt_out_contract(__name__)
