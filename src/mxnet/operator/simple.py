"""SimpleOp (seed 002): declare a unary or binary elementwise operator with just a
function and its derivative.

``unary("smooth_l1", forward=f, gradient=df, uses="in", scalar=1.0)`` registers an
operator with a ``scalar`` parameter whose backward reads only the input (seed
002's UnaryGradFunctionT2) and may reuse the output gradient's memory for the input
gradient (kInplaceOutIn). ``uses`` picks the gradient form: "none" (out_grad only),
"out" (the output value) or "in" (the input value).

A ``forward`` or ``gradient`` function that takes an ``out`` keyword writes into the
array it is given (``xp.clip(x, lo, hi, out=out)``): the operator then runs in the
write-into-outputs form and executors hand it the planned buffer.
"""
import inspect

from .params import Float, Schema
from .registry import Op, ShapeError, register

__all__ = ["unary", "binary", "reduce_to_shape", "broadcast_shape", "takes_out"]

_USES = {"none": ("out_grad",), "out": ("out_grad", "out_data"), "in": ("out_grad", "in_data")}


def reduce_to_shape(xp, g, shape):
    """Sum a broadcast gradient back down to an input's shape."""
    shape = tuple(shape)
    if g.shape == shape:
        return g
    extra = g.ndim - len(shape)
    if extra:
        g = g.sum(axis=tuple(range(extra)))
    axes = tuple(i for i, (a, b) in enumerate(zip(g.shape, shape)) if b == 1 and a != 1)
    if axes:
        g = g.sum(axis=axes, keepdims=True)
    return g.reshape(shape)


def takes_out(fn):
    """Whether fn accepts an ``out`` keyword (so it can write into a given array)."""
    try:
        return "out" in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


def _first(out):
    return None if out is None else out[0]


def unary(name, forward, gradient=None, uses="in", scalar=None, aliases=(), doc="",
          inplace=True, zero_grad=False, params=None, out_type=None, is_loss=False,
          named_inputs=False):
    """Register a unary elementwise operator.

    forward(xp, x, p) -> y; gradient(xp, out_grad, value, p) -> in_grad, where value is
    the input ("in"), the output ("out") or None ("none"). ``scalar`` (a default value)
    adds a float parameter ``scalar``. ``out_type(in_dtype) -> dtype`` overrides the
    default "same as input" output type. ``named_inputs``: see ``Op.named_inputs`` (most
    of MXNet's unary operators leave their input unnamed).
    """
    fields = dict(params.fields) if params is not None else {}
    if scalar is not None:
        fields["scalar"] = Float(scalar)

    fwd_out, grad_out = takes_out(forward), gradient is not None and takes_out(gradient)

    class _Unary(Op):
        __doc__ = doc or f"Elementwise {name}."
        writes_outputs = True

        def forward(self, ctx, p, inputs, aux, out=None):
            if fwd_out:
                return [forward(ctx.xp, inputs[0], p, out=_first(out))]
            return [forward(ctx.xp, inputs[0], p)]

        def infer_type(self, p, in_types):
            t = in_types[0]
            return [t], [out_type(t) if (out_type and t is not None) else t], []

    _Unary.name, _Unary.aliases = name, tuple(aliases)
    _Unary.params = Schema(**fields)
    _Unary.backward_uses = _USES[uses]
    _Unary.inplace = ((0, 0),) if inplace else ()
    _Unary.zero_grad, _Unary.is_loss = zero_grad, is_loss
    _Unary.named_inputs = named_inputs
    _Unary.__name__ = _Unary.__qualname__ = f"Op_{name}"
    if gradient is not None:
        def backward(self, ctx, p, out_grads, inputs, outputs, aux, in_grad=None):
            value = inputs[0] if uses == "in" else outputs[0] if uses == "out" else None
            if grad_out:
                return [gradient(ctx.xp, out_grads[0], value, p, out=_first(in_grad))]
            return [gradient(ctx.xp, out_grads[0], value, p)]
        _Unary.backward = backward
    register(_Unary)
    return _Unary


def binary(name, forward, grad_lhs=None, grad_rhs=None, broadcast=False, aliases=(),
           doc="", zero_grad=False, uses="in", out_type=None):
    """Register a binary elementwise operator (``broadcast=True``: NumPy broadcasting,
    else both inputs must have the same shape, as MXNet's elemwise_* ops require).

    forward(xp, a, b, p) -> y; grad_lhs/grad_rhs(xp, out_grad, a, b, y, p) -> grad of the
    operand (before reduction to its shape, which this helper does).
    """

    fwd_out = takes_out(forward)

    class _Binary(Op):
        __doc__ = doc or f"Elementwise {name}."
        writes_outputs = True

        def arguments(self, p):
            return ["lhs", "rhs"]

        def infer_shape(self, p, in_shapes):
            a, b = in_shapes
            if a is None or b is None:
                return super().infer_shape(p, in_shapes) if not broadcast else \
                    ([a, b], [None], [])
            if not broadcast:
                if tuple(a) != tuple(b):
                    raise ShapeError(f"{name}: operands must have the same shape, got "
                                     f"{tuple(a)} and {tuple(b)}")
                return [a, b], [a], []
            out = broadcast_shape(name, a, b)
            return [a, b], [out], []

        def infer_type(self, p, in_types):
            t = in_types[0] if in_types[0] is not None else in_types[1]
            return [t, t], [out_type(t) if (out_type and t is not None) else t], []

        def forward(self, ctx, p, inputs, aux, out=None):
            a, b = inputs
            if not broadcast and a.shape != b.shape:
                raise ShapeError(f"{name}: operands must have the same shape, got "
                                 f"{a.shape} and {b.shape}")
            if fwd_out:
                return [forward(ctx.xp, a, b, p, out=_first(out))]
            return [forward(ctx.xp, a, b, p)]

    _Binary.name, _Binary.aliases = name, tuple(aliases)
    _Binary.params = Schema()
    _Binary.backward_uses = _USES[uses] + (("in_data",) if uses == "out" else ())
    _Binary.zero_grad = zero_grad
    _Binary.__name__ = _Binary.__qualname__ = f"Op_{name}"
    if grad_lhs is not None:
        def backward(self, ctx, p, out_grads, inputs, outputs, aux, in_grad=None):
            xp, g = ctx.xp, out_grads[0]
            a, b = inputs
            sa, sb = ctx.in_shapes
            y = outputs[0] if outputs else None
            need = ctx.need_grad
            ga = reduce_to_shape(xp, grad_lhs(xp, g, a, b, y, p), sa) if need[0] else None
            gb = reduce_to_shape(xp, grad_rhs(xp, g, a, b, y, p), sb) if need[1] else None
            return [ga, gb]
        _Binary.backward = backward
    register(_Binary)
    return _Binary


def broadcast_shape(name, a, b):
    """The broadcast of shapes a and b (NumPy's rule), or a ShapeError naming op name."""
    a, b = tuple(a), tuple(b)
    n = max(len(a), len(b))
    pa, pb = (1,) * (n - len(a)) + a, (1,) * (n - len(b)) + b
    out = []
    for x, y in zip(pa, pb):
        if x != y and x != 1 and y != 1:
            raise ShapeError(f"{name}: operands could not be broadcast together with shapes "
                             f"{a} and {b}")
        out.append(y if x == 1 else x)
    return tuple(out)
