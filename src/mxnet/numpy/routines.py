"""More of MXNet 1.9.1's native ``mx.np`` functions: elementwise predicates and
two-argument math (``arctan2``, ``copysign``, ``ldexp``, ``lcm``, ``isnan`` ...),
joining and editing (``append``, ``insert``, ``delete``, ``column_stack``,
``atleast_*d``, ``broadcast_arrays``, ``resize``), differences, ``diag``/``diagflat``,
``average``, ``polyval``, quantiles, window functions and index helpers.

Differentiable ones compose registered operators (so autograd and the executor see
them); the ones MXNet computes without a gradient and whose output shape depends on
values (``bincount``, ``histogram``, ``insert``) compute on the host.
"""
import numpy as _onp

from .. import ndarray as _nd
from ..base import MXNetError
from ..ndarray.ndarray import NDArray
from . import manipulation as _man
from . import math as _m
from .creation import array, arange, full, zeros
from .fallback import call_on_host
from .multiarray import wrap

_F32 = _onp.dtype(_onp.float32)
_BOOL = _onp.dtype(_onp.bool_)
_I = _nd._internal

NAN = NaN = _onp.nan
PINF = _onp.inf
NINF = -_onp.inf
bool = bool  # noqa: A001  (MXNet exposes Python's bool as mx.np.bool)
finfo = _onp.finfo


def _arr(a):
    return a if isinstance(a, NDArray) else array(a)


def _floated(x):
    return x.astype(_F32) if x._dtype.kind in "iub" else x


# ------------------------------------------------------------------ elementwise math
def _binary_op(op_name, x1, x2, out, float_result=False, name=None):
    if _m._is_scalar(x1) and _m._is_scalar(x2):
        return _m._scalar_result(getattr(_onp, name)(x1, x2), out)
    ctx = (x1 if isinstance(x1, NDArray) else x2).context
    a = x1 if isinstance(x1, NDArray) else array(x1, dtype=x2.dtype, ctx=ctx)
    b = x2 if isinstance(x2, NDArray) else array(x2, dtype=a.dtype, ctx=ctx)
    a, b = _m._same_dtype(a, b)
    if float_result == "bool":       # only bool operands become float32
        a, b = (x.astype(_F32) if x._dtype == _BOOL else x for x in (a, b))
    elif float_result:
        a, b = _floated(a), _floated(b)
    return _m._finish(wrap(getattr(_I, op_name)(a, b)), out)


def arctan2(x1, x2, out=None, **kwargs):
    """Elementwise arc tangent of x1 / x2 in the correct quadrant."""
    _m._check_ufunc_kwargs("arctan2", kwargs)
    return _binary_op("_npi_arctan2", x1, x2, out, True, "arctan2")


def copysign(x1, x2, out=None, **kwargs):
    """Elementwise magnitude of x1 with the sign of x2 (integer arrays stay integer,
    as in MXNet 1.9.1)."""
    _m._check_ufunc_kwargs("copysign", kwargs)
    return _binary_op("_npi_copysign", x1, x2, out, "bool", "copysign")


def lcm(x1, x2, out=None, **kwargs):
    """Elementwise least common multiple of integer arrays."""
    _m._check_ufunc_kwargs("lcm", kwargs)
    for x in (x1, x2):
        if isinstance(x, NDArray) and x._dtype.kind not in "iu":
            raise MXNetError(f"lcm: only integer arrays are supported, got {x._dtype}")
    return _binary_op("_npi_lcm", x1, x2, out, False, "lcm")


def _bitwise(name):
    def fn(x1, x2, out=None, **kwargs):
        _m._check_ufunc_kwargs(name, kwargs)
        for x in (x1, x2):
            if isinstance(x, NDArray) and x._dtype.kind not in "iub":
                raise MXNetError(f"{name}: only integer and bool arrays are supported, "
                                 f"got {x._dtype}")
        return _binary_op(f"_npi_{name}", x1, x2, out, False, name)
    fn.__name__ = name
    fn.__doc__ = f"Elementwise {name} of integer or bool arrays (NumPy broadcasting)."
    return fn


bitwise_and, bitwise_or, bitwise_xor = (_bitwise(n) for n in
                                        ("bitwise_and", "bitwise_or", "bitwise_xor"))


def bitwise_not(x, out=None, **kwargs):
    """Elementwise bitwise NOT (logical NOT for bool arrays)."""
    _m._check_ufunc_kwargs("bitwise_not", kwargs)
    if _m._is_scalar(x):
        return _m._scalar_result(_onp.invert(x), out)
    if x._dtype.kind not in "iub":
        raise MXNetError(f"bitwise_not: only integer and bool arrays are supported, got "
                         f"{x._dtype}")
    return _m._finish(wrap(_I._npi_bitwise_not(x)), out)


invert = bitwise_not


def ldexp(x1, x2, out=None, **kwargs):
    """x1 * 2**x2, elementwise (a float result)."""
    _m._check_ufunc_kwargs("ldexp", kwargs)
    if _m._is_scalar(x1) and _m._is_scalar(x2):
        return _m._scalar_result(_onp.ldexp(x1, x2), out)
    if _m._is_scalar(x2):
        return _m._finish(_m.multiply(_arr(x1), 2.0 ** x2), out)
    x2 = _floated(x2)
    scale = wrap(_I._rpower_scalar(x2, scalar=2.0))
    return _m._finish(_m.multiply(x1, scale), out)


def fabs(x, out=None, **kwargs):
    """Elementwise absolute value as a float."""
    _m._check_ufunc_kwargs("fabs", kwargs)
    return _m.absolute(x if _m._is_scalar(x) else _arr(x), out)


def _predicate(name, build):
    def fn(x, out=None, **kwargs):
        _m._check_ufunc_kwargs(name, kwargs)
        if out is not None and getattr(out, "dtype", None) != _BOOL:
            from ..base import InvalidArgumentType      # MXNetError and TypeError
            raise InvalidArgumentType(f"mx.np.{name}: out must be a bool array, got "
                                      f"{getattr(out, 'dtype', type(out).__name__)}")
        if _m._is_scalar(x):
            return getattr(_onp, name)(x)
        if x._dtype.kind in "iub":        # integers are never nan or infinite
            return _m._finish(full(x.shape, name == "isfinite", dtype=_BOOL,
                                   ctx=x.context), out)
        res = build(x)
        return _m._finish(res if res._dtype == _BOOL else res.astype(_BOOL), out)
    fn.__name__ = name
    fn.__doc__ = f"Elementwise ``{name}`` (bool result)."
    return fn


isnan = _predicate("isnan", lambda x: wrap(_nd.broadcast_not_equal(x, x)))
isinf = _predicate("isinf", lambda x: wrap(_I._equal_scalar(_nd.abs(x), scalar=_onp.inf)))
isfinite = _predicate("isfinite", lambda x: wrap(_I._lesser_scalar(_nd.abs(x),
                                                                   scalar=_onp.inf)))
isposinf = _predicate("isposinf", lambda x: wrap(_I._equal_scalar(x, scalar=_onp.inf)))
isneginf = _predicate("isneginf", lambda x: wrap(_I._equal_scalar(x, scalar=-_onp.inf)))


def polyval(p, x):
    """Value of the polynomial with coefficients p (highest power first) at x."""
    p, x = _arr(p), _arr(x)
    if p.ndim != 1:
        raise MXNetError(f"polyval: p must be 1-d, got shape {p.shape}")
    p, x = _m._same_dtype(p, x)
    res = _m.multiply(x, 0.0)
    for i in range(p.shape[0]):
        res = _m.add(_m.multiply(res, x), p[i])
    return res


# ------------------------------------------------------------------ reductions
def average(a, axis=None, weights=None, returned=False, out=None):
    """Weighted mean over axis (weights 1-d along axis, or a's shape). With returned,
    a list [average, sum of weights]; as in MXNet 1.9.1 the sum of weights is a 0-d
    array when no weights or 1-d weights are given (not broadcast to the average's
    shape)."""
    a = _arr(a)
    if weights is None:
        avg = _m.mean(a, axis=axis)
        n = a.size // max(avg.size, 1) if a.size else 0
        scl = full((), n, dtype=avg.dtype, ctx=a.context)
    else:
        w = _arr(weights)
        if w.shape != a.shape:
            if axis is None:
                raise TypeError("Axis must be specified when shapes of a and weights "
                                "differ.")
            if w.ndim != 1:
                raise TypeError("1D weights expected when shapes of a and weights differ.")
            if w.shape[0] != a.shape[axis]:
                raise ValueError("Length of weights not compatible with specified axis.")
            shape = [1] * a.ndim
            shape[axis] = w.shape[0]
            w1d, w = w, _man.broadcast_to(w.reshape(shape), a.shape)
        else:
            w1d = None
        a, w = _m._same_dtype(_floated(a), w)
        scl = _m.sum(w, axis=axis)
        avg = _m.true_divide(_m.sum(_m.multiply(a, w), axis=axis), scl)
        if w1d is not None:
            scl = _m.sum(w1d).astype(avg.dtype, copy=False)
    avg = _m._finish(avg, out)
    return [avg, scl] if returned else avg


def product(a, axis=None, dtype=None, out=None, keepdims=False):
    """Same as ``prod``."""
    return _m.prod(a, axis=axis, dtype=dtype, out=out, keepdims=keepdims)


def sometrue(a, axis=None, keepdims=False, out=None):
    """Same as ``any``."""
    return _m.any(a, axis=axis, out=out, keepdims=keepdims)


def _quantile(name, a, q, axis, out, interpolation, keepdims, scale):
    a = _arr(a)
    qh = q.asnumpy() if isinstance(q, NDArray) else _onp.asarray(q)
    res = getattr(_onp, name)(a.asnumpy(), qh, axis=axis, method=interpolation,
                              keepdims=keepdims)
    # float64 input keeps float64; every other dtype gives float32, as in MXNet 1.9.1
    dt = a.dtype if a.dtype == _onp.float64 else _F32
    return _m._finish(array(_onp.asarray(res), dtype=dt, ctx=a.context), out)


def percentile(a, q, axis=None, out=None, overwrite_input=None, interpolation="linear",
               keepdims=False):
    """The q-th percentiles (0..100) along axis (computed on the host, no gradient)."""
    return _quantile("percentile", a, q, axis, out, interpolation, keepdims, 100)


def quantile(a, q, axis=None, out=None, overwrite_input=None, interpolation="linear",
             keepdims=False):
    """The q-th quantiles (0..1) along axis (computed on the host, no gradient)."""
    return _quantile("quantile", a, q, axis, out, interpolation, keepdims, 1)


def bincount(x, weights=None, minlength=0):
    """Counts (or summed weights) of each non-negative integer value in x."""
    x = _arr(x)
    if x._dtype.kind not in "iu":
        raise TypeError(f"bincount: input must be an integer array, got {x._dtype}")
    if minlength < 0:
        raise ValueError("minlength must be non-negative")
    res = call_on_host(_onp.bincount, (x, weights, minlength), {})
    # MXNet's dtype: x's without weights, else the weights' (bool weights: float32)
    if weights is None:
        dt = x._dtype
    else:
        dt = _arr(weights)._dtype
        dt = _F32 if dt == _BOOL else dt
    return res if res._dtype == dt else res.astype(dt)


def histogram(a, bins=10, range=None, normed=None, weights=None, density=None):  # noqa: A002
    """Histogram of a (counts and bin edges), computed on the host."""
    if normed is not None or density is not None and density:
        raise NotImplementedError("histogram: normed/density are not supported (as in "
                                  "MXNet 1.9.1)")
    a = _arr(a)
    counts, edges = call_on_host(_onp.histogram, (a, bins, range), {"weights": weights})
    return [counts.astype(_onp.int64), edges.astype(a.dtype) if a.dtype.kind == "f" else edges]


# ------------------------------------------------------------------ joining and editing
def append(arr, values, axis=None):
    """arr with values appended (both flattened when axis is None)."""
    arr, values = _arr(arr), _arr(values)
    if axis is None:
        return _man.concatenate([_man.ravel(arr), _man.ravel(values)], axis=0)
    return _man.concatenate([arr, values], axis=axis)


def delete(arr, obj, axis=None):
    """arr without the sub-arrays at obj (an int, slice or index list) along axis."""
    arr = _arr(arr)
    if axis is None:
        arr, axis = _man.ravel(arr), 0
    axis = _man._norm_axis(axis, arr.ndim)
    n = arr.shape[axis]
    if isinstance(obj, NDArray):
        obj = obj.asnumpy()
    keep = _onp.ones(n, dtype=_onp.bool_)
    if isinstance(obj, slice):
        keep[obj] = False
    else:
        idx = _onp.asarray(obj)
        if idx.dtype.kind not in "iub":
            raise IndexError("arrays used as indices must be of integer (or boolean) type")
        if idx.dtype.kind == "b":
            keep = ~idx
        else:
            if idx.ndim:            # MXNet skips an index array's entries outside
                idx = idx[(idx < n) & (idx >= 0)]       # [0, n), negative ones included
            elif idx >= n or idx < -n:
                from ..base import InvalidIndex        # MXNetError and IndexError
                raise InvalidIndex(f"index {int(idx)} is out of bounds for axis {axis} "
                                   f"with size {n}")
            keep[idx] = False
    kept = _onp.nonzero(keep)[0]
    return _man.take(arr, array(kept, dtype=_onp.int64, ctx=arr.context), axis=axis)


def insert(arr, obj, values, axis=None):
    """arr with values inserted before the positions obj along axis (on the host)."""
    arr = _arr(arr)
    vals = values.asnumpy() if isinstance(values, NDArray) else values
    o = obj.asnumpy() if isinstance(obj, NDArray) else obj
    res = _onp.insert(arr.asnumpy(), o, vals, axis=axis)
    return array(res, dtype=arr.dtype, ctx=arr.context)


def _atleast(n, arys):
    out = []
    for a in arys:
        a = _arr(a)
        if a.ndim < n:
            if n == 3 and a.ndim == 2:
                a = a.reshape(a.shape + (1,))
            elif n == 3 and a.ndim == 1:
                a = a.reshape((1,) + a.shape + (1,))
            else:
                a = a.reshape((1,) * (n - a.ndim) + a.shape)
        out.append(a)
    return out[0] if len(out) == 1 else out


def atleast_1d(*arys):
    """Each input as an array of at least one dimension."""
    return _atleast(1, arys)


def atleast_2d(*arys):
    """Each input as an array of at least two dimensions."""
    return _atleast(2, arys)


def atleast_3d(*arys):
    """Each input as an array of at least three dimensions."""
    return _atleast(3, arys)


def broadcast_arrays(*args):
    """The inputs broadcast against each other, in the container the installed NumPy
    uses (a list before NumPy 2, as MXNet 1.9.1 returns; a tuple from NumPy 2 on)."""
    args = [_arr(a) for a in args]
    shape = _onp.broadcast_shapes(*[a.shape for a in args])
    return _BROADCAST_ARRAYS_TYPE(a if a.shape == shape else _man.broadcast_to(a, shape)
                                  for a in args)


_BROADCAST_ARRAYS_TYPE = type(_onp.broadcast_arrays(_onp.zeros(1)))


def column_stack(tup):
    """1-d arrays as columns (2-d arrays as they are), joined along axis 1."""
    cols = [_arr(a) for a in tup]
    cols = [a.reshape(-1, 1) if a.ndim < 2 else a for a in cols]
    return _man.concatenate(cols, axis=1)


def row_stack(arrays):
    """Same as ``vstack``."""
    return _man.vstack(arrays)


def resize(a, new_shape):
    """a's elements repeated (cyclically) to fill new_shape."""
    a = _arr(a)
    new_shape = (new_shape,) if isinstance(new_shape, (int, _onp.integer)) else \
        tuple(new_shape)
    if any(d < 0 for d in new_shape):
        raise ValueError("all elements of `new_shape` must be non-negative")
    total = int(_onp.prod(new_shape, dtype=_onp.int64))
    if a.size == 0 or total == 0:
        return zeros(new_shape, dtype=a.dtype, ctx=a.context)
    idx = array(_onp.arange(total) % a.size, dtype=_onp.int64, ctx=a.context)
    return _man.take(_man.ravel(a), idx).reshape(new_shape)


def diff(a, n=1, axis=-1, prepend=None, append=None):  # noqa: A002
    """The n-th discrete difference along axis."""
    a = _arr(a)
    if n < 0:
        raise ValueError(f"order must be non-negative but got {n}")
    if n == 0:
        return a
    parts = []
    for extra in (prepend, append):
        if extra is None:
            parts.append(None)
            continue
        e = _arr(extra)
        if e.ndim == 0:
            shape = list(a.shape)
            shape[axis] = 1
            e = _man.broadcast_to(e.astype(a.dtype), tuple(shape))
        parts.append(e)
    if parts[0] is not None or parts[1] is not None:
        a = _man.concatenate([p for p in (parts[0], a, parts[1]) if p is not None],
                             axis=axis)
    axis = _man._norm_axis(axis, a.ndim)
    for _ in range(n):
        m = a.shape[axis]
        hi = _man.slice_along(a, axis, 1, m)
        lo = _man.slice_along(a, axis, 0, m - 1)
        a = _m.subtract(hi, lo)
    return a


def ediff1d(ary, to_end=None, to_begin=None):
    """Differences between consecutive elements of the flattened array."""
    flat = _man.ravel(_arr(ary))
    d = diff(flat) if flat.size else flat
    pieces = [_man.ravel(_arr(to_begin).astype(d.dtype))] if to_begin is not None else []
    pieces.append(d)
    if to_end is not None:
        pieces.append(_man.ravel(_arr(to_end).astype(d.dtype)))
    return _man.concatenate(pieces) if len(pieces) > 1 else d


def diag(array, k=0):  # noqa: A002
    """The k-th diagonal of a 2-d array, or a 2-d array with a 1-d one on it."""
    a = _arr(array)
    if a.ndim not in (1, 2):
        raise ValueError("Input must be 1- or 2-d.")
    return wrap(_I._np_diag(a, k=k))


def diagflat(array, k=0):  # noqa: A002
    """A 2-d array with the flattened input on its k-th diagonal."""
    return diag(_man.ravel(_arr(array)), k)


def diag_indices_from(arr):
    """The indices of the main diagonal of a square n-d array."""
    arr = _arr(arr)
    if arr.ndim < 2 or len(set(arr.shape)) != 1:
        raise ValueError("All dimensions of input must be of equal length")
    idx = arange(arr.shape[0], dtype=_onp.int64, ctx=arr.context)
    return tuple(idx for _ in range(arr.ndim))


def unravel_index(indices, shape, order="C"):
    """The coordinates (a tuple of arrays) of flat indices in an array of shape."""
    if not isinstance(indices, NDArray):   # a Python index: NumPy's integers, as in MXNet
        return _onp.unravel_index(indices, shape, order)
    res = call_on_host(_onp.unravel_index, (indices, shape, order), {})
    ctx = indices.context if isinstance(indices, NDArray) else None
    return tuple(array(r, dtype=_onp.int64, ctx=ctx) if not isinstance(r, NDArray) else r
                 for r in res)


def indices(dimensions, dtype=_onp.int32, ctx=None):
    """A grid of indices: shape (len(dimensions),) + dimensions."""
    return array(_onp.indices(tuple(dimensions), dtype=dtype), dtype=dtype, ctx=ctx)


def _window(name):
    def fn(M, dtype=_onp.float32, ctx=None):
        return array(getattr(_onp, name)(M), dtype=dtype, ctx=ctx)
    fn.__name__ = name
    fn.__doc__ = f"The {name} window of M points (float32 by default)."
    return fn


hamming, hanning, blackman = (_window(n) for n in ("hamming", "hanning", "blackman"))


def set_printoptions(precision=None, threshold=None, **kwarg):
    """Print options of mx.np arrays (precision and threshold, as NumPy's)."""
    if kwarg:
        raise NotImplementedError(f"set_printoptions: only precision and threshold are "
                                  f"supported, got {sorted(kwarg)}")
    _onp.set_printoptions(precision=precision, threshold=threshold)


def genfromtxt(*args, **kwargs):
    """Load data from a text file (NumPy's genfromtxt) as an mx.np array."""
    res = _onp.genfromtxt(*args, **kwargs)
    return array(res, dtype=res.dtype)


__all__ = [
    "NAN", "NaN", "PINF", "NINF", "bool", "finfo", "arctan2", "copysign", "lcm",
    "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "invert", "ldexp", "fabs",
    "isnan", "isinf", "isfinite", "isposinf", "isneginf", "polyval",
    "average", "product", "sometrue", "percentile", "quantile", "bincount", "histogram",
    "append", "delete", "insert", "atleast_1d", "atleast_2d", "atleast_3d",
    "broadcast_arrays", "column_stack", "row_stack", "resize", "diff", "ediff1d", "diag",
    "diagflat", "diag_indices_from", "unravel_index", "indices", "hamming", "hanning",
    "blackman", "set_printoptions", "genfromtxt"]
