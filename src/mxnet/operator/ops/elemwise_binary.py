"""Binary elementwise operators in MXNet's three forms: ``elemwise_*`` / ``_op``
(operands of one shape), ``broadcast_*`` (NumPy broadcasting) and ``_op_scalar``
(an array and the float parameter ``scalar``), plus ``add_n``.

MXNet's dtype rules, which NumPy alone would not follow:
* both operands must have the same dtype, and the result has it too: comparisons
  and logical operators give 1/0 in that dtype, integer ``/`` truncates toward zero,
  integer ``**`` with a negative exponent truncates the real power;
* a scalar is cast to the array's dtype first (``is_int=True``, the default, as
  NDArray's operators call them): int32 [1, 2] + 1.5 is int32 [2, 3]. With
  ``is_int=False`` an integer array meets a real scalar and the result is float64;
* ``x % 0`` is 0 for floating types.
"""
import math

import numpy as np

from ...base import MXNetError
from ..params import Bool, Float, Int, Schema
from ..kernels import exact_alias
from ..registry import Op, ShapeError, register
from ..simple import broadcast_shape, reduce_to_shape, takes_out

_USES = {"none": ("out_grad",), "in": ("out_grad", "in_data"),
         "out": ("out_grad", "out_data"), "inout": ("out_grad", "in_data", "out_data")}
_f64 = np.float64


def _dtype_error(name, a, b):
    return MXNetError(f"{name}: operands must have the same dtype, got {np.dtype(a).name} "
                      f"and {np.dtype(b).name}")


# ---------------------------------------------------------------------------------
# Kernels shared by the array-array and the scalar forms
# ---------------------------------------------------------------------------------
def _trunc_div(xp, a, b):
    """Integer division rounding toward zero (C's), not NumPy's floor."""
    with np.errstate(divide="ignore", invalid="ignore"):
        q = xp.floor_divide(a, b)
        return q + ((q * b != a) & ((a < 0) != (b < 0)))


def _divide(xp, a, b, integer):
    return _trunc_div(xp, a, b) if integer else xp.divide(a, b)


def _mod(xp, a, b, integer):
    with np.errstate(divide="ignore", invalid="ignore"):
        r = xp.mod(a, b)
    return r if integer else xp.where(b == 0, 0, r)


def _any_negative(xp, b):
    """Whether an exponent (an array, or a Python or NumPy scalar) has a value below 0:
    a scalar is compared on the host (CuPy's any takes device arrays only)."""
    return bool(b < 0) if np.isscalar(b) else bool(xp.any(b < 0))


def _power(xp, a, b, integer, dtype):
    if integer and _any_negative(xp, b):
        # C's pow on the values, truncated back: 2 ** -1 is 0, 1 ** -1 is 1.
        with np.errstate(all="ignore"):
            return xp.power(xp.asarray(a, dtype=_f64), b).astype(dtype)
    return xp.power(a, b)


def _cast(r, dtype):
    return r if r.dtype == dtype else r.astype(dtype)


# ---------------------------------------------------------------------------------
# Array-array operators: (forward, lhs grad, rhs grad, what the grads read)
# forward(xp, a, b[, out]) (with ``out``: writes into it); grads (xp, g, a, b, y)
# before reduction to the operand shapes.
# ---------------------------------------------------------------------------------
def _is_int(a):
    return a.dtype.kind != "f"


def _int_zero(xp, grad, a):
    """MXNet's mod gradients are 0 for integer operands (its mod_grad is only 1 for
    floating point types)."""
    return xp.zeros_like(grad) if _is_int(a) else grad


_ARITH = {
    "add": (lambda xp, a, b, out=None: xp.add(a, b, out=out),
            lambda xp, g, a, b, y: g, lambda xp, g, a, b, y: g, "none"),
    "sub": (lambda xp, a, b, out=None: xp.subtract(a, b, out=out),
            lambda xp, g, a, b, y: g, lambda xp, g, a, b, y: -g, "none"),
    "mul": (lambda xp, a, b, out=None: xp.multiply(a, b, out=out),
            lambda xp, g, a, b, y: g * b, lambda xp, g, a, b, y: g * a, "in"),
    "div": (lambda xp, a, b: _divide(xp, a, b, _is_int(a)),
            lambda xp, g, a, b, y: g / b, lambda xp, g, a, b, y: -g * a / (b * b), "in"),
    "mod": (lambda xp, a, b: _mod(xp, a, b, _is_int(a)),
            lambda xp, g, a, b, y: _int_zero(xp, g, a),
            lambda xp, g, a, b, y: _int_zero(xp, -g * xp.floor_divide(a, b), a), "in"),
    "power": (lambda xp, a, b: _power(xp, a, b, _is_int(a), a.dtype),
              lambda xp, g, a, b, y: g * b * xp.power(a, b - 1),
              lambda xp, g, a, b, y: g * y * xp.log(a), "inout"),
    "maximum": (lambda xp, a, b, out=None: xp.maximum(a, b, out=out),
                lambda xp, g, a, b, y: g * (a >= b), lambda xp, g, a, b, y: g * (a < b), "in"),
    "minimum": (lambda xp, a, b, out=None: xp.minimum(a, b, out=out),
                lambda xp, g, a, b, y: g * (a <= b), lambda xp, g, a, b, y: g * (a > b), "in"),
    "hypot": (lambda xp, a, b: _cast(xp.hypot(a, b), a.dtype),
              lambda xp, g, a, b, y: g * a / y, lambda xp, g, a, b, y: g * b / y, "inout"),
}

_LOGIC = {
    "equal": lambda xp, a, b: xp.equal(a, b),
    "not_equal": lambda xp, a, b: xp.not_equal(a, b),
    "greater": lambda xp, a, b: xp.greater(a, b),
    "greater_equal": lambda xp, a, b: xp.greater_equal(a, b),
    "lesser": lambda xp, a, b: xp.less(a, b),
    "lesser_equal": lambda xp, a, b: xp.less_equal(a, b),
    "logical_and": lambda xp, a, b: xp.logical_and(a, b),
    "logical_or": lambda xp, a, b: xp.logical_or(a, b),
    "logical_xor": lambda xp, a, b: xp.logical_xor(a, b),
}

# Names: MXNet's same-shape operator, its aliases, and the broadcast operator's name
# and aliases.
_NAMES = {
    "add": ("elemwise_add", ("_add", "_plus", "_Plus"), "broadcast_add", ("broadcast_plus",)),
    "sub": ("elemwise_sub", ("_sub", "_minus", "_Minus"), "broadcast_sub",
            ("broadcast_minus",)),
    "mul": ("elemwise_mul", ("_mul", "_Mul"), "broadcast_mul", ()),
    "div": ("elemwise_div", ("_div", "_Div"), "broadcast_div", ()),
    "mod": ("_mod", ("_Mod",), "broadcast_mod", ()),
    "power": ("_power", ("_Power",), "broadcast_power", ()),
    "maximum": ("_maximum", ("_Maximum",), "broadcast_maximum", ()),
    "minimum": ("_minimum", ("_Minimum",), "broadcast_minimum", ()),
    "hypot": ("_hypot", ("_Hypot",), "broadcast_hypot", ()),
    "equal": ("_equal", ("_Equal",), "broadcast_equal", ()),
    "not_equal": ("_not_equal", ("_Not_Equal",), "broadcast_not_equal", ()),
    "greater": ("_greater", ("_Greater",), "broadcast_greater", ()),
    "greater_equal": ("_greater_equal", ("_Greater_Equal",), "broadcast_greater_equal", ()),
    "lesser": ("_lesser", ("_Lesser",), "broadcast_lesser", ()),
    "lesser_equal": ("_lesser_equal", ("_Lesser_Equal",), "broadcast_lesser_equal", ()),
    "logical_and": ("_logical_and", ("_Logical_And",), "broadcast_logical_and", ()),
    "logical_or": ("_logical_or", ("_Logical_Or",), "broadcast_logical_or", ()),
    "logical_xor": ("_logical_xor", ("_Logical_Xor",), "broadcast_logical_xor", ()),
}


# Same-shape arithmetic that CuPy computes on bfloat16 arrays as they are (a residual
# block's add in an AMP graph; the broadcast forms reduce their gradients, in float32).
_BF16_GPU = ("elemwise_add", "elemwise_sub", "elemwise_mul")


class _BinaryBase(Op):
    """Shared parts of the array-array operators; subclasses are made by _binary()."""
    params = Schema()
    broadcast = False

    @property
    def elemwise_shape(self):
        """Same-shape operands: partly known shapes merge (executor/partial_shape)."""
        return not self.broadcast

    def arguments(self, p):
        return ["lhs", "rhs"]

    def infer_shape(self, p, in_shapes):
        a, b = in_shapes
        if self.broadcast:
            out = None if a is None or b is None else broadcast_shape(self.name, a, b)
            return [a, b], [out], []
        if a is not None and b is not None and tuple(a) != tuple(b):
            raise ShapeError(f"{self.name}: operands must have the same shape, got "
                             f"{tuple(a)} and {tuple(b)}")
        s = a if a is not None else b
        return [s, s], [s], []

    def infer_type(self, p, in_types):
        a, b = in_types
        if a is not None and b is not None and np.dtype(a) != np.dtype(b):
            raise _dtype_error(self.name, a, b)
        t = a if a is not None else b
        return [t, t], [t], []


def _call(fn, with_out):
    """fn(xp, a, b, out) for a kernel that may or may not take ``out``. An ``out`` that
    is an in-place plan's second view of an operand's buffer is written through the
    operand itself (``exact_alias``: no defensive copy in CuPy's ufuncs)."""
    if with_out:
        def run(xp, a, b, out):
            o = None if out is None else out[0]
            if o is None:
                return fn(xp, a, b)
            fn(xp, a, b, out=exact_alias(o, (a, b)))
            return o
        return run
    return lambda xp, a, b, out: fn(xp, a, b)


def _binary(name, aliases, fwd, grad_l, grad_r, uses, broadcast, zero_grad, doc):
    run = _call(fwd, takes_out(fwd))
    if broadcast:
        def forward(self, ctx, p, inputs, aux, out=None):
            a, b = inputs
            da, db = a.dtype, b.dtype
            if da is not db and da != db:
                raise _dtype_error(name, da, db)
            return [run(ctx.xp, a, b, out)]
    else:
        def forward(self, ctx, p, inputs, aux, out=None):
            a, b = inputs
            if a.shape != b.shape:
                raise ShapeError(f"{name}: operands must have the same shape, got "
                                 f"{a.shape} and {b.shape}")
            if a.dtype != b.dtype:
                raise _dtype_error(name, a.dtype, b.dtype)
            return [run(ctx.xp, a, b, out)]

    attrs = dict(name=name, aliases=tuple(aliases), broadcast=broadcast, forward=forward,
                 backward_uses=_USES[uses], zero_grad=zero_grad, __doc__=doc,
                 inplace=((0, 0), (1, 0)), writes_outputs=True,
                 backward_identity=_IDENTITY.get(fwd, ()),
                 bfloat16_gpu=not broadcast and name in _BF16_GPU)
    if grad_l is not None:
        def backward(self, ctx, p, out_grads, inputs, outputs, aux, in_grad=None):
            xp, g = ctx.xp, out_grads[0]
            a, b = inputs
            y = outputs[0]
            need = ctx.need_grad
            sa, sb = ctx.in_shapes
            with np.errstate(all="ignore"):
                ga = reduce_to_shape(xp, grad_l(xp, g, a, b, y), sa) if need[0] else None
                gb = reduce_to_shape(xp, grad_r(xp, g, a, b, y), sb) if need[1] else None
            return [ga, gb]
        attrs["backward"] = backward
    cls = type(f"Op_{name}", (_BinaryBase,), attrs)
    register(cls)
    return cls


# the operators whose gradient passes the output gradient through unchanged (when no
# broadcasting reduces it): both operands of add, the left one of sub
_IDENTITY = {_ARITH["add"][0]: ((0, 0), (1, 0)), _ARITH["sub"][0]: ((0, 0),)}


def _zero_pair(xp, g, a, b, y):
    return xp.zeros_like(g)


_DESCR = {"add": "a + b", "sub": "a - b", "mul": "a * b",
          "div": "a / b (integers: truncated toward zero)",
          "mod": "a mod b with the sign of b (0 where b is 0)", "power": "a ** b",
          "maximum": "max(a, b)", "minimum": "min(a, b)", "hypot": "sqrt(a^2 + b^2)"}

for _key, (_fwd, _gl, _gr, _uses) in _ARITH.items():
    _n, _al, _bn, _bal = _NAMES[_key]
    _binary(_n, _al, _fwd, _gl, _gr, _uses, False, False,
            f"Elementwise {_DESCR[_key]} of two arrays of one shape.")
    _binary(_bn, _bal, _fwd, _gl, _gr, _uses, True, False,
            f"Elementwise {_DESCR[_key]} with NumPy broadcasting.")

for _key, _cmp in _LOGIC.items():
    _n, _al, _bn, _bal = _NAMES[_key]

    def _fwd(xp, a, b, _cmp=_cmp):
        return _cmp(xp, a, b).astype(a.dtype)
    _word = _key.replace("_", " ")
    _binary(_n, _al, _fwd, _zero_pair, _zero_pair, "none", False, True,
            f"Elementwise '{_word}' of two arrays of one shape: 1 or 0 in their dtype.")
    _binary(_bn, _bal, _fwd, _zero_pair, _zero_pair, "none", True, True,
            f"Elementwise '{_word}' with broadcasting: 1 or 0 in the operands' dtype.")

# Gradient accumulation (what MXNet inserts to sum gradients): elemwise_add by another
# name.
_binary("_grad_add", (), *_ARITH["add"], False, False, "Elementwise sum of two gradients.")


# ---------------------------------------------------------------------------------
# Array-scalar operators
# ---------------------------------------------------------------------------------
_SCALAR_PARAMS = Schema(scalar=Float(1.0), is_int=Bool(True))


def _scalar(x, p):
    """The scalar as the forward uses it: cast to x's dtype, unless x is an integer
    array and is_int is False (then a Python float, so the result is float64)."""
    dt = x.dtype
    if not p["is_int"] and dt.kind != "f":
        return p["scalar"]
    try:
        return dt.type(p["scalar"])
    except (OverflowError, ValueError):       # wrap like C's cast (uint8(-1.0) = 255)
        with np.errstate(all="ignore"):
            return np.array(p["scalar"]).astype(dt)[()]


def _int_math(x, s):
    """True when the result stays an integer array (integer x, integer-cast scalar)."""
    return x.dtype.kind != "f" and type(s) is not float


def _result_type(x, s):
    return _f64 if (type(s) is float and x.dtype.kind != "f") else x.dtype


# name -> (forward(xp, x, s), gradient(xp, g, x, y, s) or None, uses, aliases)
# In gradients s is the Python float parameter.
_SCALAR_OPS = {
    "_plus_scalar": (lambda xp, x, s, out=None: xp.add(x, s, out=out),
                     lambda xp, g, x, y, s: g, "none", ("_PlusScalar",)),
    "_minus_scalar": (lambda xp, x, s, out=None: xp.subtract(x, s, out=out),
                      lambda xp, g, x, y, s: g, "none", ("_MinusScalar",)),
    "_rminus_scalar": (lambda xp, x, s, out=None: xp.subtract(s, x, out=out),
                       lambda xp, g, x, y, s: -g, "none", ("_RMinusScalar",)),
    "_mul_scalar": (lambda xp, x, s, out=None: xp.multiply(x, s, out=out),
                    lambda xp, g, x, y, s: g * s, "none", ("_MulScalar",)),
    "_div_scalar": (lambda xp, x, s: _divide(xp, x, s, _int_math(x, s)),
                    lambda xp, g, x, y, s: g / s, "none", ("_DivScalar",)),
    "_rdiv_scalar": (lambda xp, x, s: _divide(xp, s, x, _int_math(x, s)),
                     lambda xp, g, x, y, s: -g * s / (x * x), "in", ("_RDivScalar",)),
    "_mod_scalar": (lambda xp, x, s: _mod(xp, x, s, _int_math(x, s)),
                    lambda xp, g, x, y, s: _int_zero(xp, g, x), "in", ("_ModScalar",)),
    "_rmod_scalar": (lambda xp, x, s: _mod(xp, s, x, _int_math(x, s)),
                     lambda xp, g, x, y, s: _int_zero(xp, -g * xp.floor_divide(s, x), x), "in",
                     ("_RModScalar",)),
    "_power_scalar": (lambda xp, x, s: _power(xp, x, s, _int_math(x, s), x.dtype),
                      lambda xp, g, x, y, s: g * s * xp.power(x, s - 1), "in",
                      ("_PowerScalar",)),
    "_rpower_scalar": (lambda xp, x, s: _power(xp, s, x, _int_math(x, s), x.dtype),
                       lambda xp, g, x, y, s: g * y * math.log(s), "out", ("_RPowerScalar",)),
    "_maximum_scalar": (lambda xp, x, s, out=None: xp.maximum(x, s, out=out),
                        lambda xp, g, x, y, s: g * (x >= s), "in", ("_MaximumScalar",)),
    "_minimum_scalar": (lambda xp, x, s, out=None: xp.minimum(x, s, out=out),
                        lambda xp, g, x, y, s: g * (x <= s), "in", ("_MinimumScalar",)),
    "_hypot_scalar": (lambda xp, x, s: _cast(xp.hypot(x, s), _result_type(x, s)),
                      lambda xp, g, x, y, s: g * x / y, "inout", ("_HypotScalar",)),
}

_SCALAR_LOGIC = {
    "_equal_scalar": ("equal", ("_EqualScalar",)),
    "_not_equal_scalar": ("not_equal", ("_NotEqualScalar",)),
    "_greater_scalar": ("greater", ("_GreaterScalar",)),
    "_greater_equal_scalar": ("greater_equal", ("_GreaterEqualScalar",)),
    "_lesser_scalar": ("lesser", ("_LesserScalar",)),
    "_lesser_equal_scalar": ("lesser_equal", ("_LesserEqualScalar",)),
    "_logical_and_scalar": ("logical_and", ("_LogicalAndScalar",)),
    "_logical_or_scalar": ("logical_or", ("_LogicalOrScalar",)),
    "_logical_xor_scalar": ("logical_xor", ("_LogicalXorScalar",)),
}


class _ScalarBase(Op):
    """Shared parts of the array-scalar operators; subclasses are made by _scalar_op()."""
    params = _SCALAR_PARAMS
    inplace = ((0, 0),)
    writes_outputs = True
    named_inputs = False

    def infer_type(self, p, in_types):
        t = in_types[0]
        if t is not None and np.dtype(t).kind != "f" and not p.is_int:
            return [t], [np.dtype(_f64)], []
        return [t], [t], []


def _scalar_op(name, aliases, fwd, grad, uses, zero_grad, doc):
    run = _call(fwd, takes_out(fwd))

    def forward(self, ctx, p, inputs, aux, out=None):
        x = inputs[0]
        return [run(ctx.xp, x, _scalar(x, p), out)]

    attrs = dict(name=name, aliases=tuple(aliases), forward=forward, zero_grad=zero_grad,
                 backward_uses=_USES[uses], __doc__=doc)
    if grad is not None:
        def backward(self, ctx, p, out_grads, inputs, outputs, aux, in_grad=None):
            with np.errstate(all="ignore"):
                return [grad(ctx.xp, out_grads[0], inputs[0], outputs[0], p["scalar"])]
        attrs["backward"] = backward
    cls = type(f"Op_{name}", (_ScalarBase,), attrs)
    register(cls)
    return cls


for _n, (_fwd, _grad, _uses, _al) in _SCALAR_OPS.items():
    _scalar_op(_n, _al, _fwd, _grad, _uses, False,
               f"``{_n}``: the array with the parameter ``scalar`` "
               f"({'reversed operands' if _n.startswith('_r') else 'array first'}).")

for _n, (_key, _al) in _SCALAR_LOGIC.items():
    def _fwd(xp, x, s, _cmp=_LOGIC[_key]):
        return _cmp(xp, x, s).astype(_result_type(x, s))
    _scalar_op(_n, _al, _fwd, lambda xp, g, x, y, s: xp.zeros_like(g), "none", True,
               f"Elementwise '{_key.replace('_', ' ')}' of the array and ``scalar``: "
               "1 or 0 in the array's dtype.")


# ---------------------------------------------------------------------------------
# add_n
# ---------------------------------------------------------------------------------
@register
class AddN(Op):
    """Sum any number of arrays of one shape and dtype (alias ElementWiseSum)."""
    name = "add_n"
    aliases = ("ElementWiseSum",)
    params = Schema(num_args=Int(low=1))
    variadic = "num_args"
    backward_uses = ("out_grad",)
    inplace = ((0, 0),)
    writes_outputs = True

    def infer_type(self, p, in_types):
        known = [np.dtype(t) for t in in_types if t is not None]
        if any(t != known[0] for t in known):
            raise MXNetError(f"add_n: all inputs must have the same dtype, got "
                             f"{[t.name for t in known]}")
        t = known[0] if known else None
        return [t] * len(in_types), [t], []

    def forward(self, ctx, p, inputs, aux, out=None):
        if len(inputs) != p.num_args:
            raise MXNetError(f"add_n: num_args is {p.num_args} but {len(inputs)} inputs "
                             "were given")
        first = inputs[0]
        for x in inputs[1:]:
            if x.shape != first.shape:
                raise ShapeError(f"add_n: all inputs must have the same shape, got "
                                 f"{[tuple(a.shape) for a in inputs]}")
            if x.dtype != first.dtype:
                raise _dtype_error("add_n", first.dtype, x.dtype)
        dst = None if out is None else out[0]
        if len(inputs) == 1:
            return [first.copy()] if dst is None else [_copy_into(dst, first)]
        # out may be inputs[0]'s buffer (inplace): each step reads before it writes
        y = ctx.xp.add(first, inputs[1], out=dst)
        for x in inputs[2:]:
            y += x
        return [y]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux, in_grad=None):
        return [out_grads[0]] * len(ctx.in_shapes)


def _copy_into(dst, src):
    dst[...] = src
    return dst
