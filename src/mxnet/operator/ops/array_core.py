"""Operators NDArray itself leans on: copies, casts, Reshape and basic indexing."""
import numpy as np

from ..params import Any, Bool, DType, Schema, Shape
from ..registry import Op, ShapeError, register
from ..shape_codes import infer_reshape
from .index_keys import resolve_key
from .indexing import scatter_add
from .shape_utils import write_view


@register
class Copy(Op):
    """Copy the input (``identity``)."""
    name = "_copy"
    bfloat16_native = True     # moves or casts values: any type alike
    named_inputs = False
    aliases = ("identity",)
    params = Schema()
    backward_uses = ("out_grad",)
    inplace = ((0, 0),)

    def forward(self, ctx, p, inputs, aux):
        return [inputs[0].copy()]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux):
        return [out_grads[0]]


@register
class CopyTo(Copy):
    """Copy into an existing array (``x.copyto(y)``)."""
    name = "_copyto"
    bfloat16_native = True     # moves or casts values: any type alike
    aliases = ()

    def infer_type(self, p, in_types):
        # the destination keeps its dtype (MXNet's copyto casts): the output is open
        return list(in_types), [None], []


@register
class IdentityAttrLikeRhs(Op):
    """``lhs`` passed through; ``rhs`` only ties its shape and dtype to the output's
    (an elementwise rule over both), so a shape known on either side reaches the
    other. ``rhs`` gets no gradient."""
    name = "_identity_with_attr_like_rhs"
    params = Schema()
    backward_uses = ("out_grad",)
    inplace = ((0, 0),)
    writes_outputs = True

    def arguments(self, p):
        return ["lhs", "rhs"]

    def forward(self, ctx, p, inputs, aux, out=None):
        if out is None:
            return [inputs[0].copy()]
        return [write_view(ctx, inputs[0], out[0])]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux, in_grad=None):
        # rhs's gradient is left None: the runner zeroes a 'write' destination.
        if in_grad is None or in_grad[0] is None:
            return [out_grads[0].copy(), None]
        in_grad[0][...] = out_grads[0]
        return [in_grad[0], None]


@register
class Cast(Op):
    """Cast to another dtype; the gradient is cast back to the input's dtype."""
    name = "Cast"
    bfloat16_native = True     # moves or casts values: any type alike
    named_inputs = False
    aliases = ("cast",)
    params = Schema(dtype=DType())
    backward_uses = ("out_grad", "in_data")

    def infer_type(self, p, in_types):
        return [in_types[0]], [np.dtype(p.dtype)], []

    def forward(self, ctx, p, inputs, aux):
        return [inputs[0].astype(p.dtype, copy=True)]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux):
        return [out_grads[0].astype(inputs[0].dtype)]


@register
class Reshape(Op):
    """Reshape with MXNet's special codes (0, -1, -2, -3, -4, reverse)."""
    name = "Reshape"
    bfloat16_native = True     # moves or casts values: any type alike
    named_inputs = False
    aliases = ("reshape",)
    params = Schema(shape=Shape(()), reverse=Bool(False), target_shape=Shape(()),
                    keep_highest=Bool(False))
    backward_uses = ("out_grad",)
    inplace = ((0, 0),)
    writes_outputs = True
    keeps_size = True           # see executor/partial_shape.py

    def _target(self, p, dshape):
        if p.shape:
            return infer_reshape(dshape, p.shape, p.reverse)
        if p.target_shape:                   # deprecated form
            return infer_reshape(dshape, tuple(d if d else -1 for d in p.target_shape))
        raise ShapeError("Reshape: a target shape is required")

    def infer_shape(self, p, in_shapes):
        s = in_shapes[0]
        return [s], [None if s is None else self._target(p, tuple(s))], []

    def forward(self, ctx, p, inputs, aux, out=None):
        x = inputs[0]
        return [write_view(ctx, x.reshape(self._target(p, x.shape)),
                           None if out is None else out[0])]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux, in_grad=None):
        return [write_view(ctx, out_grads[0].reshape(ctx.in_shapes[0]),
                           None if in_grad is None else in_grad[0])]


def _resolve(ctx, p, inputs):
    key = resolve_key(p.key, inputs[1:])
    xp = ctx.xp
    if xp is np:
        return key
    # index arrays written in the key (a NumPy array or list index) go to the device:
    # kernels such as the backward's scatter-add take device arrays only
    return tuple(xp.asarray(k) if isinstance(k, np.ndarray) else k for k in key)


@register
class GetItem(Op):
    """``x[key]`` for keys that are not first-axis views (steps, tuples, arrays)."""
    name = "_getitem"
    params = Schema(key=Any())
    backward_uses = ("out_grad", "in_data")
    variadic = "__none__"     # data followed by any number of index arrays

    def arguments(self, p):
        return ["data"]

    def infer_shape(self, p, in_shapes):
        if in_shapes[0] is None:
            return in_shapes, [None], []
        probe = np.empty(in_shapes[0], dtype=np.bool_)
        idx = [np.zeros(s, np.int64) for s in in_shapes[1:]]
        out = probe[resolve_key(p.key, idx)].shape or (1,)
        return in_shapes, [out], []

    def forward(self, ctx, p, inputs, aux):
        out = inputs[0][_resolve(ctx, p, inputs)]
        out = ctx.xp.array(out, copy=True)
        return [out.reshape(1) if out.ndim == 0 else out]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux):
        xp, x = ctx.xp, inputs[0]
        g = xp.zeros(x.shape, dtype=out_grads[0].dtype)
        key = _resolve(ctx, p, inputs)
        og = out_grads[0].reshape(x[key].shape)
        # an index array (repeated positions accumulate): NumPy's or the device's
        arrays = (np.ndarray,) if xp is np else (np.ndarray, xp.ndarray)
        if any(isinstance(k, arrays) for k in key):
            scatter_add(xp, g, key, og)
        else:
            g[key] += og
        return [g] + [None] * (len(inputs) - 1)


