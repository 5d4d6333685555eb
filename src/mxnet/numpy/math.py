"""mx.np's mathematical functions: ufuncs with NumPy broadcasting and MXNet's NumPy
dtype rules, reductions with NumPy's axis/keepdims/dtype, products.

Each function calls the registered operator through ``mx.nd``'s generated front end
and labels the result ``mx.np.ndarray``. Dtype rules (MXNet 1.9.1's NumPy mode): a
scalar operand keeps the array's dtype (``int32 + 1.5`` is int32); two arrays promote
as NumPy does except that int-with-float gives the float type; true division of
integers gives float32; comparisons and logical functions give bool.
"""
import builtins

import numpy as _onp

from .. import ndarray as _nd
from ..base import MXNetError, dtype_np, numeric_types
from ..ndarray.ndarray import NDArray
from .multiarray import ndarray as _np_ndarray
from .multiarray import wrap
from ..ndarray.dispatch import invoke as _invoke
from ..operator.registry import get_op as _get_op

_DOT = _get_op("dot")

_SCALARS = numeric_types + (bool, _onp.bool_, _onp.generic)
_BOOL = _onp.dtype(_onp.bool_)
_F32 = _onp.dtype(_onp.float32)


def _is_scalar(x):
    return isinstance(x, _SCALARS) and not isinstance(x, NDArray)


def _as_array(x):
    if isinstance(x, NDArray):
        return x
    from .creation import array
    return array(x)


def result_type(a, b):
    """MXNet's NumPy-mode result dtype of a binary op on two arrays' dtypes."""
    a, b = _onp.dtype(a), _onp.dtype(b)
    if a == b:
        return a
    fa, fb = a.kind == "f", b.kind == "f"
    if fa and not fb:
        return a
    if fb and not fa:
        return b
    return _onp.promote_types(a, b)


def _same_dtype(a, b):
    dt = result_type(a._dtype, b._dtype)
    if a._dtype != dt:
        a = a.astype(dt)
    if b._dtype != dt:
        b = b.astype(dt)
    return a, b


# name -> (broadcast op, scalar op, reversed scalar op or None when commutative)
_BINARY = {
    "add": ("broadcast_add", "_plus_scalar", None),
    "subtract": ("broadcast_sub", "_minus_scalar", "_rminus_scalar"),
    "multiply": ("broadcast_mul", "_mul_scalar", None),
    "true_divide": ("broadcast_div", "_div_scalar", "_rdiv_scalar"),
    "mod": ("broadcast_mod", "_mod_scalar", "_rmod_scalar"),
    "power": ("broadcast_power", "_power_scalar", "_rpower_scalar"),
    "maximum": ("broadcast_maximum", "_maximum_scalar", None),
    "minimum": ("broadcast_minimum", "_minimum_scalar", None),
    "hypot": ("broadcast_hypot", "_hypot_scalar", None),
    "equal": ("broadcast_equal", "_equal_scalar", None),
    "not_equal": ("broadcast_not_equal", "_not_equal_scalar", None),
    "greater": ("broadcast_greater", "_greater_scalar", "_lesser_scalar"),
    "greater_equal": ("broadcast_greater_equal", "_greater_equal_scalar",
                      "_lesser_equal_scalar"),
    "less": ("broadcast_lesser", "_lesser_scalar", "_greater_scalar"),
    "less_equal": ("broadcast_lesser_equal", "_lesser_equal_scalar",
                   "_greater_equal_scalar"),
    "logical_and": ("broadcast_logical_and", "_logical_and_scalar", None),
    "logical_or": ("broadcast_logical_or", "_logical_or_scalar", None),
    "logical_xor": ("broadcast_logical_xor", "_logical_xor_scalar", None),
}
_BOOL_RESULT = {"equal", "not_equal", "greater", "greater_equal", "less", "less_equal",
                "logical_and", "logical_or", "logical_xor"}
# the classic operator names NDArray's Python operators use -> the np function
_FROM_OPERATOR = {spec[0]: name for name, spec in _BINARY.items()}


def _fn(name):
    return getattr(_nd, name, None) or getattr(_nd._internal, name)


def _binary(name, x1, x2, out=None):
    op, scalar_op, rscalar_op = _BINARY[name]
    if _is_scalar(x1) and _is_scalar(x2):
        # two scalars: official NumPy's scalar result, as MXNet returns it
        return _scalar_result(getattr(_onp, name)(x1, x2), out)
    if name == "true_divide":
        # integer division is true division in float32, as MXNet's NumPy mode does
        # (in the other operand's float type when that one is a float array)
        fdt = _F32
        for x in (x1, x2):
            if isinstance(x, NDArray) and x._dtype.kind == "f":
                fdt = x._dtype
        if isinstance(x1, NDArray) and x1._dtype.kind in "iub":
            x1 = x1.astype(fdt)
        if isinstance(x2, NDArray) and x2._dtype.kind in "iub":
            x2 = x2.astype(fdt)
    if name not in _BOOL_RESULT:
        # a bool array with a scalar computes in int64, as MXNet 1.9.1 does (b + 1 is
        # [2, 1, 2], not a bool array; the scalar is read as that integer type)
        if _is_scalar(x2) and isinstance(x1, NDArray) and x1._dtype == _BOOL:
            x1 = x1.astype(_onp.int64)
        elif _is_scalar(x1) and isinstance(x2, NDArray) and x2._dtype == _BOOL:
            x2 = x2.astype(_onp.int64)
    if _is_scalar(x2):
        res = _fn(scalar_op)(_as_array(x1), scalar=float(x2))
    elif _is_scalar(x1):
        res = _fn(rscalar_op or scalar_op)(x2, scalar=float(x1))
    else:
        a, b = _same_dtype(_as_array(x1), _as_array(x2))
        res = _fn(op)(a, b)
    if name in _BOOL_RESULT and res._dtype != _BOOL:
        res = res.astype(_BOOL)
    return _finish(wrap(res), out)


def _scalar_result(res, out):
    """A ufunc's result on scalar operands only: the NumPy scalar itself (MXNet 1.9.1
    hands scalars to official NumPy), or written into out when one is given."""
    if out is None:
        return res
    from .creation import array
    return _finish(array(res, dtype=_onp.asarray(res).dtype), out)


def _finish(res, out):
    if out is None:
        return res
    if not isinstance(out, NDArray):
        raise MXNetError(f"out must be an mx.np.ndarray, got {type(out).__name__}")
    if out._shape != res._shape:
        raise MXNetError(f"out has shape {out._shape}, the result {res._shape}")
    out[...] = res if res._dtype == out._dtype else res.astype(out._dtype)
    return out


def binary_from_operator(lhs, rhs, classic_op, reflect):
    """``lhs <op> rhs`` for ndarray's Python operators (``reflect``: rhs <op> lhs)."""
    name = _FROM_OPERATOR.get(classic_op)
    if name is None:
        raise MXNetError(f"mx.np.ndarray: operator {classic_op} is not supported")
    if not isinstance(rhs, (NDArray,) + _SCALARS):
        if isinstance(rhs, (list, tuple, _onp.ndarray)):
            rhs = _as_array(rhs)
        else:
            return NotImplemented
    return _binary(name, rhs, lhs) if reflect else _binary(name, lhs, rhs)


def _make_binary(name):
    def fn(x1, x2, out=None, **kwargs):
        _check_ufunc_kwargs(name, kwargs)
        return _binary(name, x1, x2, out)
    fn.__name__ = name
    fn.__doc__ = (f"Elementwise ``{name}`` of x1 and x2 with NumPy broadcasting "
                  f"(like ``numpy.{name}``).")
    return fn


_CASTINGS = ("no", "equiv", "safe", "same_kind", "unsafe")


def _check_ufunc_kwargs(name, kwargs):
    """NumPy's ufunc keywords as MXNet 1.9.1 takes them: their defaults are accepted,
    other valid values raise NotImplementedError, invalid ones TypeError."""
    for k, v in kwargs.items():
        if k == "where":
            ok, valid = v is True, isinstance(v, bool)
        elif k == "subok":
            ok, valid = bool(v), True
        elif k == "dtype":
            if v is None:
                continue
            try:
                _onp.dtype(v)
            except TypeError:
                raise TypeError(f"mx.np.{name}: data type {v!r} not understood") from None
            ok, valid = False, True
        elif k == "casting":
            ok, valid = v == "same_kind", v in _CASTINGS
        elif k == "order":
            ok, valid = v == "K", True       # MXNet: any other order is not implemented
        else:
            raise TypeError(f"mx.np.{name}() got an unexpected keyword argument {k!r}")
        if ok:
            continue
        if not valid:
            raise TypeError(f"mx.np.{name}: invalid {k}={v!r}")
        raise NotImplementedError(f"mx.np.{name}: {k}={v!r} is not implemented yet")


for _name in _BINARY:
    globals()[_name] = _make_binary(_name)
divide = true_divide  # noqa: F821  (defined just above)
remainder = mod  # noqa: F821


def floor_divide(x1, x2, out=None):
    """Elementwise floor(x1 / x2); integers stay integers."""
    if _is_scalar(x1) and _is_scalar(x2):
        return _scalar_result(_onp.floor_divide(x1, x2), out)
    q = _binary("true_divide", x1, x2)
    res = wrap(_nd.floor(q))
    dt = None
    for x in (x1, x2):
        if isinstance(x, NDArray):
            dt = x._dtype if dt is None else result_type(dt, x._dtype)
    if dt is not None and dt.kind in "iu":
        res = res.astype(dt)
    return _finish(res, out)


# ---------------------------------------------------------------------------- unary
_UNARY = {"negative": "negative", "absolute": "abs", "abs": "abs", "sign": "sign",
          "exp": "exp", "expm1": "expm1", "log": "log", "log2": "log2", "log10": "log10",
          "log1p": "log1p", "sqrt": "sqrt", "cbrt": "cbrt", "square": "square",
          "reciprocal": "reciprocal", "sin": "sin", "cos": "cos", "tan": "tan",
          "arcsin": "arcsin", "arccos": "arccos", "arctan": "arctan", "sinh": "sinh",
          "cosh": "cosh", "tanh": "tanh", "arcsinh": "arcsinh", "arccosh": "arccosh",
          "arctanh": "arctanh", "degrees": "degrees", "radians": "radians",
          "rad2deg": "degrees", "deg2rad": "radians", "floor": "floor", "ceil": "ceil",
          "trunc": "trunc", "fix": "fix", "rint": "rint", "logical_not": "logical_not"}
_FLOAT_RESULT = {"exp", "expm1", "log", "log2", "log10", "log1p", "sqrt", "cbrt",
                 "reciprocal", "sin", "cos", "tan", "arcsin", "arccos", "arctan", "sinh",
                 "cosh", "tanh", "arcsinh", "arccosh", "arctanh", "degrees", "radians",
                 "rad2deg", "deg2rad"}


def _make_unary(name, op):
    def fn(x, out=None, **kwargs):
        _check_ufunc_kwargs(name, kwargs)
        if _is_scalar(x):
            return _scalar_result(getattr(_onp, name)(x), out)
        if name in _FLOAT_RESULT and x._dtype.kind in "iub":
            x = x.astype(_F32)
        res = wrap(_fn(op)(x))
        if name == "logical_not" and res._dtype != _BOOL:
            res = res.astype(_BOOL)
        return _finish(res, out)
    fn.__name__ = name
    fn.__doc__ = f"Elementwise ``{name}`` (like ``numpy.{name}``)."
    return fn


for _name, _op in _UNARY.items():
    globals()[_name] = _make_unary(_name, _op)


def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None, **kwargs):
    """x with NaN, +inf and -inf replaced (copy=False: in x itself)."""
    if _is_scalar(x):
        return _onp.nan_to_num(x, nan=nan, posinf=posinf, neginf=neginf)
    res = wrap(_fn("_npi_nan_to_num")(x, nan=nan, posinf=posinf, neginf=neginf, **kwargs))
    from ..tape import _state
    if copy or _state.tracer is not None:   # a hybridized graph has no in-place form:
        return res                          # copy=False gives a new array there, as in
    return _finish(res, x)                  # MXNet's symbolic nan_to_num


def invert(x, out=None):
    """Bitwise NOT (logical NOT for bool arrays)."""
    if x._dtype == _BOOL:
        return logical_not(x, out)  # noqa: F821
    raise NotImplementedError("mx.np.invert of integer arrays is not implemented in "
                              "pymxnet yet")


def _bitwise(name):
    def fn(x1, x2, out=None):
        for x in (x1, x2):
            if isinstance(x, NDArray) and x._dtype != _BOOL:
                raise NotImplementedError(f"mx.np.{name} of integer arrays is not "
                                          "implemented in pymxnet yet (bool arrays work)")
        return _binary({"bitwise_and": "logical_and", "bitwise_or": "logical_or",
                        "bitwise_xor": "logical_xor"}[name], x1, x2, out)
    fn.__name__ = name
    return fn


bitwise_and, bitwise_or, bitwise_xor = (_bitwise(n) for n in
                                        ("bitwise_and", "bitwise_or", "bitwise_xor"))


def clip(a, a_min, a_max, out=None):
    """Limit the values to [a_min, a_max] (None: no bound on that side)."""
    if a_min is None and a_max is None:
        raise ValueError("array_clip: must set either max or min")
    if _is_scalar(a):
        return _scalar_result(_onp.clip(a, a_min, a_max), out)
    a = _as_array(a)
    lo = -_onp.inf if a_min is None else float(a_min)
    hi = _onp.inf if a_max is None else float(a_max)
    if a._dtype.kind in "iu":        # a bound outside the dtype's range clips nothing
        info = _onp.iinfo(a._dtype)  # (cast to the dtype, it would wrap around)
        lo, hi = builtins.max(lo, info.min), builtins.min(hi, info.max)
    return _finish(wrap(_nd.clip(a, a_min=lo, a_max=hi)), out)


def where(condition, x=None, y=None):
    """Elements of x where condition holds, else of y (broadcast); with only the
    condition, the indices of its nonzero elements."""
    if x is None and y is None:
        return nonzero(condition)
    from .creation import full
    cond = _as_array(condition)
    if _is_scalar(x) and _is_scalar(y):
        x = full(cond.shape, x, dtype=_F32, ctx=cond.context)
    if _is_scalar(x):
        x = full(y.shape, x, dtype=y._dtype, ctx=y.context)
    if _is_scalar(y):
        y = full(x.shape, y, dtype=x._dtype, ctx=x.context)
    x, y = _same_dtype(x, y)
    shape = _onp.broadcast_shapes(cond.shape, x.shape, y.shape)
    from .manipulation import broadcast_to
    parts = [p if p.shape == shape else broadcast_to(p, shape)
             for p in (cond.astype(x._dtype) if cond._dtype != x._dtype else cond, x, y)]
    return wrap(_nd.where(*parts))


def nonzero(a):
    """A tuple of index arrays (int64), one per axis, of the nonzero elements."""
    from .creation import array
    idx = _onp.nonzero(_onp.atleast_1d(a.asnumpy()))     # MXNet: a 0-d array acts 1-d
    return tuple(array(i, dtype=_onp.int64, ctx=a.context) for i in idx)


# ------------------------------------------------------------------------ reductions
def _axis(axis):
    if axis is None:
        return None
    if isinstance(axis, (list, tuple)):
        return tuple(int(a) for a in axis)
    return int(axis)


def _reduce(op, a, axis, keepdims, dtype=None, out=None, float_ints=False):
    a = _as_array(a)
    if a._dtype.kind == "f" and op in ("sum", "mean", "prod"):
        # MXNet accumulates float16 in float32 and casts the result to dtype afterwards
        # (a float input reduced to an integer dtype is truncated, its gradient still
        # flows back in the input's dtype)
        want_dt = a._dtype if dtype is None else dtype_np(dtype)
        acc = _F32 if a._dtype == _onp.float16 else a._dtype
        if want_dt.kind == "f" and want_dt.itemsize > acc.itemsize:
            acc = want_dt
        res = _reduce_as(op, a if a._dtype == acc else a.astype(acc), axis, keepdims)
        return _finish(res if res._dtype == want_dt else wrap(res.astype(want_dt)), out)
    if dtype is not None:
        a = a.astype(dtype)
    elif float_ints and a._dtype.kind in "iub":
        a = a.astype(_F32)
    elif a._dtype == _BOOL:
        a = a.astype(_onp.int64)
    return _finish(_reduce_as(op, a, axis, keepdims), out)


def _reduce_as(op, a, axis, keepdims):
    """The reduction computed in a's dtype, with NumPy's result shape."""
    if a.ndim == 0 or (isinstance(axis, (tuple, list)) and not axis):
        res = wrap(_nd.identity(a))          # nothing to reduce (axis=() in NumPy)
    else:
        res = wrap(_fn(op)(a, axis=_axis(axis), keepdims=bool(keepdims)))
    want = _reduced_shape(a.shape, axis, keepdims)
    if res.shape != want:
        res = wrap(res.reshape(want))
    return res


def _reduced_shape(shape, axis, keepdims):
    if isinstance(axis, (tuple, list)) and not axis:
        return tuple(shape)
    if axis is None:
        axes = set(range(len(shape)))
    else:
        axes = {a % len(shape) for a in (axis if isinstance(axis, (list, tuple)) else
                                         (axis,))} if shape else set()
    if keepdims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def sum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):  # noqa: A001
    """Sum of elements over the given axes (NumPy's signature)."""
    _no_initial("sum", initial, where)
    return _reduce("sum", a, axis, keepdims, dtype, out)


def prod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    """Product of elements over the given axes."""
    _no_initial("prod", initial, where)
    return _reduce("prod", a, axis, keepdims, dtype, out)


def mean(a, axis=None, dtype=None, out=None, keepdims=False):
    """Arithmetic mean over the given axes (integers average in float32)."""
    return _reduce("mean", a, axis, keepdims, dtype, out, float_ints=True)


def _extreme(op, a, axis, keepdims, out):
    a = _as_array(a)
    res = _reduce(op, a, axis, keepdims)
    if a._dtype == _BOOL:            # bool in, bool out (MXNet 1.9.1)
        res = res.astype(_BOOL)
    return _finish(res, out)


def max(a, axis=None, out=None, keepdims=False):  # noqa: A001
    """Largest element over the given axes."""
    return _extreme("max", a, axis, keepdims, out)


def min(a, axis=None, out=None, keepdims=False):  # noqa: A001
    """Smallest element over the given axes."""
    return _extreme("min", a, axis, keepdims, out)


amax, amin = max, min


def _no_initial(name, initial, where):
    if initial is not None or where is not None:
        raise NotImplementedError(f"mx.np.{name}: initial= and where= are not "
                                  "implemented in pymxnet yet")


def var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
    """Variance over the given axes (``ddof`` as in NumPy)."""
    a = _as_array(a)
    if a._dtype.kind in "iub":
        a = a.astype(_F32)
    m = mean(a, axis=axis, keepdims=True)
    d = subtract(a, m)  # noqa: F821
    n = a.size if axis is None else int(_onp.prod([a.shape[i] for i in
                                                   (axis if isinstance(axis, (list, tuple))
                                                    else (axis,))]))
    s = sum(multiply(d, d), axis=axis, keepdims=keepdims, dtype=dtype)  # noqa: F821
    return _finish(true_divide(s, builtins.max(n - ddof, 0)), out)  # noqa: F821


def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
    """Standard deviation over the given axes."""
    return _finish(sqrt(var(a, axis, dtype, None, ddof, keepdims)), out)  # noqa: F821


def _arg(op, a, axis, out):
    a = _as_array(a)
    want = None
    if axis is None or (a.ndim == 0 and axis in (0, -1)):   # NumPy: a 0-d array's
        want = ()                                         # axis 0/-1 is the flat one
        a = a.reshape(-1)
        axis = 0
    res = wrap(_fn(op)(a, axis=int(axis)).astype(_onp.int64))
    want = _reduced_shape(a.shape, axis, False) if want is None else want
    if res.shape != want:
        res = wrap(res.reshape(want))
    return _finish(res, out)


def argmax(a, axis=None, out=None):
    """Indices (int64) of the maximum along axis (of the flattened array if None)."""
    return _arg("argmax", a, axis, out)


def argmin(a, axis=None, out=None):
    """Indices (int64) of the minimum along axis (of the flattened array if None)."""
    return _arg("argmin", a, axis, out)


def any(a, axis=None, out=None, keepdims=False):  # noqa: A001
    """Whether any element (along axis) is true (False over an empty axis)."""
    nz = not_equal(_as_array(a), 0).astype(_onp.int32)  # noqa: F821
    return _finish(greater(sum(nz, axis=axis, keepdims=keepdims), 0), out)  # noqa: F821


def all(a, axis=None, out=None, keepdims=False):  # noqa: A001
    """Whether every element (along axis) is true (True over an empty axis)."""
    zeros = equal(_as_array(a), 0).astype(_onp.int32)  # noqa: F821
    return _finish(equal(sum(zeros, axis=axis, keepdims=keepdims), 0), out)  # noqa: F821


def cumsum(a, axis=None, dtype=None, out=None):
    """Cumulative sum along axis (of the flattened array if None)."""
    a = _as_array(a)
    if axis is None:
        a, axis = a.reshape(-1), 0
    if dtype is not None:
        a = a.astype(dtype)
    if a._dtype == _BOOL:
        a = a.astype(_onp.int64)
    return _finish(wrap(_nd.cumsum(a, axis=int(axis))), out)


# -------------------------------------------------------------------------- products
def dot(a, b, out=None):
    """NumPy's dot: scalars multiply, 1-d/2-d arrays are inner/matrix products, N-d
    contracts a's last axis with b's second-to-last."""
    if out is None and a.__class__ is b.__class__ is _np_ndarray and a._dtype == b._dtype \
            and a._shape and len(b._shape) == 2 and a._shape[-1] == b._shape[0]:
        # the common case (vector/matrix times matrix): MXNet's dot gives NumPy's result
        res = _invoke(_DOT, [a, b], None)
        res.__class__ = _np_ndarray
        return res
    if _is_scalar(a) or _is_scalar(b):
        return multiply(a, b, out)  # noqa: F821
    a, b = _same_dtype(_as_array(a), _as_array(b))
    return _finish(wrap(_nd._internal._np_dot(a, b)), out)


def matmul(a, b, out=None):
    """Matrix product with NumPy's broadcasting over leading (batch) axes."""
    a, b = _same_dtype(_as_array(a), _as_array(b))
    if a.ndim == 0 or b.ndim == 0:
        raise MXNetError("matmul: input operands must not be scalars (0-d arrays)")
    if a.ndim <= 2 and b.ndim <= 2:
        return dot(a, b, out)
    a2 = a.reshape((1,) + a.shape) if a.ndim == 1 else a
    b2 = b.reshape(b.shape + (1,)) if b.ndim == 1 else b
    if a2.shape[-1] != b2.shape[-2]:
        raise MXNetError(f"matmul: shapes {a.shape} and {b.shape} not aligned: "
                         f"{a2.shape[-1]} != {b2.shape[-2]}")
    try:
        batch = _onp.broadcast_shapes(a2.shape[:-2], b2.shape[:-2])
    except ValueError:
        raise MXNetError(f"matmul: the batch axes of shapes {a.shape} and {b.shape} "
                         "cannot be broadcast together") from None
    from .manipulation import broadcast_to
    # the batch size spelled out: with a zero-size matrix, -1 would be ambiguous
    nb = (int(_onp.prod(batch, dtype=_onp.int64)),)
    a3 = broadcast_to(a2, batch + a2.shape[-2:]).reshape(nb + a2.shape[-2:])
    b3 = broadcast_to(b2, batch + b2.shape[-2:]).reshape(nb + b2.shape[-2:])
    res = wrap(_nd.batch_dot(a3, b3)).reshape(batch + (a2.shape[-2], b2.shape[-1]))
    if a.ndim == 1:
        res = res.reshape(batch + (b2.shape[-1],))
    if b.ndim == 1:
        res = res.reshape(res.shape[:-1])
    return _finish(res, out)


def inner(a, b):
    """Inner product over the last axes (the ``_npi_tensordot`` operator)."""
    if _is_scalar(a) or _is_scalar(b) or _as_array(a).ndim == 0 or _as_array(b).ndim == 0:
        return multiply(a, b)  # noqa: F821
    a, b = _same_dtype(_as_array(a), _as_array(b))
    return _tensordot(a, b, (-1,), (-1,))


def outer(a, b):
    """Outer product of two flattened arrays."""
    a, b = _as_array(a).reshape(-1, 1), _as_array(b).reshape(1, -1)
    return multiply(a, b)  # noqa: F821


def vdot(a, b):
    """Dot product of two flattened arrays."""
    return dot(_as_array(a).reshape(-1), _as_array(b).reshape(-1))


def tensordot_axes(axes):
    """NumPy's ``axes`` argument of tensordot as the operator's (a_axes, b_axes): an int
    N pairs a's last N axes with b's first N (negative axes need no shapes)."""
    if isinstance(axes, (int, _onp.integer)):
        return tuple(range(-int(axes), 0)), tuple(range(int(axes)))
    axes_a, axes_b = axes
    as_tuple = lambda x: tuple(int(v) for v in x) if isinstance(x, (list, tuple)) \
        else (int(x),)  # noqa: E731
    return as_tuple(axes_a), as_tuple(axes_b)


def tensordot(a, b, axes=2):
    """Sum products over the given axes (NumPy's tensordot; the ``_npi_tensordot``
    operator, differentiable)."""
    a, b = _same_dtype(_as_array(a), _as_array(b))
    a_axes, b_axes = tensordot_axes(axes)
    return _tensordot(a, b, a_axes, b_axes)


def _tensordot(a, b, a_axes, b_axes):
    res = wrap(_nd.op._npi_tensordot(a, b, a_axes=a_axes, b_axes=b_axes))
    if a.ndim + b.ndim == 2 * len(a_axes) and res.shape != ():
        res = wrap(res.reshape(()))          # a full contraction is 0-d
    return res


def einsum(*operands, **kwargs):
    """Einstein summation ``einsum(subscripts, *operands, out=None, optimize=False)``
    (NumPy's subscripts, ``...`` included; differentiable)."""
    out = kwargs.pop("out", None)
    optimize = kwargs.pop("optimize", False)
    if kwargs:
        raise TypeError(f"einsum() got unexpected keyword arguments {sorted(kwargs)}")
    if not operands or not isinstance(operands[0], str):
        raise NotImplementedError("mx.np.einsum: only the subscripts-string form is "
                                  "supported")
    subscripts, arrays = operands[0], [_as_array(a) for a in operands[1:]]
    dt = arrays[0]._dtype
    for a in arrays[1:]:
        dt = result_type(dt, a._dtype)
    arrays = [a if a._dtype == dt else a.astype(dt) for a in arrays]
    res = wrap(_nd._internal._npi_einsum(*arrays, subscripts=subscripts,
                                         num_args=len(arrays), optimize=int(bool(optimize))))
    from ..operator.ops.np_einsum import explicit
    if not explicit(subscripts, [a.ndim for a in arrays])[1] and res.shape != ():
        res = wrap(res.reshape(()))          # a full contraction is 0-d
    return _finish(res, out)


def around(a, decimals=0, out=None):
    """Round to the given number of decimals (half to even, as NumPy)."""
    a = _as_array(a)
    if a._dtype.kind in "iub" and decimals >= 0:
        return _finish(a.copy(), out)
    return _finish(wrap(_nd._internal._npi_around(a, decimals=int(decimals))), out)


round_ = around


def round(a, decimals=0, out=None):  # noqa: A001
    return around(a, decimals, out)


__all__ = sorted(set(_BINARY) | set(_UNARY) | {
    "divide", "remainder", "floor_divide", "invert", "bitwise_and", "bitwise_or",
    "bitwise_xor", "clip", "where", "nonzero", "sum", "prod", "mean", "max", "min", "amax",
    "amin", "var", "std", "argmax", "argmin", "any", "all", "cumsum", "dot", "matmul",
    "inner", "outer", "vdot", "tensordot", "einsum", "around", "round", "round_",
    "result_type", "nan_to_num"})
