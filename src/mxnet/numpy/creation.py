"""mx.np array creation. As in MXNet 1.9.1's NumPy mode the default dtype is float32:
Python lists (of ints or bools too) become float32 arrays, a NumPy array keeps its
dtype, ``zeros``/``ones``/``full``/``arange``/``linspace``/``eye`` give float32 unless
told otherwise."""
import numpy as _onp

from .. import ndarray as _nd
from ..base import MXNetError, dtype_np
from ..context import current_context
from ..ndarray.ndarray import NDArray
from .multiarray import as_np, ndarray, wrap

_F32 = _onp.dtype(_onp.float32)


def _dt(dtype, default=_F32):
    return default if dtype is None else dtype_np(dtype)


def _shape(shape):
    if isinstance(shape, (int, _onp.integer)):
        return (int(shape),)
    return tuple(int(d) for d in shape)


def array(object, dtype=None, ctx=None, device=None):  # noqa: A002
    """An mx.np array from a list, a NumPy array, a scalar or another array (copied)."""
    ctx = ctx or device or current_context()
    if isinstance(object, NDArray):
        out = wrap(object.copyto(ctx)) if object.context != ctx else wrap(object.copy())
        return out if dtype is None else out.astype(dtype, copy=False)
    if object is None:
        raise MXNetError("mx.np.array: object must be array-like, got None")
    if isinstance(object, _onp.ndarray) and object.dtype.kind == "O" and object.size:
        # An object array of Python numbers/bools (what pandas >= 2 gives for
        # ``DataFrame.values`` mixing floats and bool dummies) is taken as the nested
        # sequence it holds: float32 by default, like a list would be.
        object = object.tolist()
    if isinstance(object, _onp.ndarray):
        src, dt = object, _dt(dtype, object.dtype)
    else:
        src = _onp.asarray(object)
        if src.dtype.kind in "OUSV":
            raise MXNetError(f"mx.np.array: cannot make a numeric array from "
                             f"{type(object).__name__} of dtype {src.dtype}")
        dt = _dt(dtype)
    if dt.kind in "OUSV":
        raise MXNetError(f"mx.np.array: unsupported dtype {dt}")
    return wrap(_nd.array(_onp.array(src, dtype=dt, order="C"), ctx=ctx, dtype=dt))


def asarray(a, dtype=None, ctx=None):
    """``a`` itself when it is already an mx.np array of that dtype, else array(a)."""
    if isinstance(a, NDArray) and (dtype is None or dtype_np(dtype) == a._dtype):
        return as_np(a)
    return array(a, dtype=dtype, ctx=ctx)


def _c_order(name, order):
    # mx.np arrays are always C-contiguous; MXNet 1.9.1 refuses any other order
    if order != "C":
        raise NotImplementedError(f"mx.np.{name}: order={order!r} is not supported "
                                  "(only 'C')")


def zeros(shape, dtype=None, order="C", ctx=None, device=None):
    """An array of zeros (float32 unless dtype is given)."""
    _c_order("zeros", order)
    return wrap(_nd.zeros(_shape(shape), ctx=ctx or device, dtype=_dt(dtype)))


def ones(shape, dtype=None, order="C", ctx=None, device=None):
    """An array of ones (float32 unless dtype is given)."""
    _c_order("ones", order)
    return wrap(_nd.ones(_shape(shape), ctx=ctx or device, dtype=_dt(dtype)))


def empty(shape, dtype=None, order="C", ctx=None, device=None):
    """An uninitialised array (float32 unless dtype is given)."""
    _c_order("empty", order)
    return wrap(_nd.empty(_shape(shape), ctx=ctx or device, dtype=_dt(dtype)))


def full(shape, fill_value, dtype=None, order="C", ctx=None, device=None, out=None):
    """An array filled with fill_value: float32 unless dtype is given, except that a
    Python bool fills a bool array and an mx array fill_value keeps its own dtype."""
    _c_order("full", order)
    if isinstance(fill_value, NDArray):
        if fill_value.size != 1:          # an array fills by broadcasting
            from .manipulation import broadcast_to
            res = broadcast_to(fill_value, _shape(shape)).astype(
                fill_value.dtype if dtype is None else dtype)
            if out is not None:
                out[...] = res
                return out
            return res
        dtype = fill_value.dtype if dtype is None else dtype
        fill_value = fill_value.item()
    elif dtype is None and isinstance(fill_value, bool):
        dtype = _onp.bool_
    res = wrap(_nd.full(_shape(shape), fill_value, ctx=ctx or device, dtype=_dt(dtype)))
    if out is not None:
        out[...] = res
        return out
    return res


def _like(fn_name, a, dtype, value=None, order="C"):
    _c_order(fn_name + "_like", order)
    dt = a.dtype if dtype is None else dtype_np(dtype)
    if value is None:
        return wrap(getattr(_nd, fn_name)(a.shape, ctx=a.context, dtype=dt))
    return wrap(_nd.full(a.shape, value, ctx=a.context, dtype=dt))


def zeros_like(a, dtype=None, order="C", ctx=None, out=None):
    """Zeros with a's shape and dtype."""
    return _like("zeros", a, dtype, order=order)


def ones_like(a, dtype=None, order="C", ctx=None, out=None):
    """Ones with a's shape and dtype."""
    return _like("ones", a, dtype, order=order)


def full_like(a, fill_value, dtype=None, order="C", ctx=None, out=None):
    """fill_value with a's shape and dtype."""
    return _like("full", a, dtype, fill_value, order)


def empty_like(prototype, dtype=None, order="C", subok=False, shape=None):
    return _like("empty", prototype, dtype, order=order)


def arange(start, stop=None, step=1, dtype=None, ctx=None, device=None):
    """Evenly spaced values in [start, stop) (float32 unless dtype is given)."""
    if stop is None:
        start, stop = 0, start
    if step is None:
        step = 1
    if step == 0:
        raise MXNetError("mx.np.arange: step must not be zero")
    # _npi_arange: an empty range is an empty array here (nd.arange refuses it)
    return wrap(_nd._internal._npi_arange(start=start, stop=stop, step=step,
                                          ctx=ctx or device, dtype=_dt(dtype) or "float32"))


def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0,
             ctx=None, device=None):
    """num evenly spaced values from start to stop."""
    if axis != 0:
        raise NotImplementedError("mx.np.linspace: axis != 0 is not implemented in "
                                  "pymxnet yet")
    if isinstance(num, bool) or int(num) != num or num < 0:
        raise MXNetError(f"mx.np.linspace: num must be a non-negative integer, got {num}")
    dt = _dt(dtype)
    # NumPy's own rule for the values (NumPy 2 floors them for integer types)
    values = _onp.linspace(start, stop, int(num), endpoint=endpoint, retstep=retstep,
                           dtype=dt if dt is not None else _onp.float32)
    if retstep:
        values, step = values          # the step as a Python float, as MXNet gives it
        return array(values, dtype=dt, ctx=ctx or device), float(step)
    return array(values, dtype=dt, ctx=ctx or device)


def logspace(start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0, ctx=None):
    """num values spaced evenly on a log scale."""
    if axis != 0:
        raise NotImplementedError("mx.np.logspace: axis != 0 is not implemented in "
                                  "pymxnet yet")
    return array(_onp.logspace(start, stop, int(num), endpoint=endpoint, base=base),
                 dtype=_dt(dtype), ctx=ctx)


def eye(N, M=None, k=0, dtype=None, ctx=None, device=None):
    """A 2-d array with ones on the k-th diagonal (M=None means N columns; M=0 none)."""
    M = N if M is None else M
    if int(N) < 0 or int(M) < 0:
        raise MXNetError(f"mx.np.eye: N and M must be non-negative, got N={N}, M={M}")
    if int(M) == 0:                     # nd.eye reads M=0 as "M = N"
        return zeros((int(N), 0), dtype=dtype, ctx=ctx or device)
    return wrap(_nd.eye(N, M, k, ctx=ctx or device, dtype=_dt(dtype)))


def identity(n, dtype=None, ctx=None):
    """The n x n identity matrix."""
    return eye(n, dtype=dtype, ctx=ctx)


def meshgrid(*xi, **kwargs):
    """Coordinate matrices from coordinate vectors ('xy' or 'ij' indexing)."""
    indexing = kwargs.pop("indexing", "xy")
    sparse = kwargs.pop("sparse", False)
    kwargs.pop("copy", None)
    if kwargs:
        raise MXNetError(f"meshgrid: unexpected arguments {sorted(kwargs)}")
    from .manipulation import broadcast_to
    n = len(xi)
    flat = [asarray(x).reshape(-1) for x in xi]
    out = []
    for i, x in enumerate(flat):
        shape = [1] * n
        shape[i] = x.shape[0]
        if indexing == "xy" and n >= 2 and i < 2:
            shape[0], shape[1] = shape[1], shape[0]
        out.append(x.reshape(shape))
    if sparse:
        return out
    full_shape = _onp.broadcast_shapes(*(o.shape for o in out))
    return [broadcast_to(o, full_shape) for o in out]


def tril(m, k=0):
    """The lower triangle of the last two axes (the rest zeroed)."""
    m = asarray(m)
    mask = array(_onp.tril(_onp.ones(m.shape[-2:], dtype=bool), k), dtype=bool,
                 ctx=m.context)
    from .math import where
    return where(mask, m, zeros((), dtype=m.dtype, ctx=m.context))


def triu(m, k=0):
    """The upper triangle of the last two axes (the rest zeroed)."""
    m = asarray(m)
    mask = array(_onp.triu(_onp.ones(m.shape[-2:], dtype=bool), k), dtype=bool,
                 ctx=m.context)
    from .math import where
    return where(mask, m, zeros((), dtype=m.dtype, ctx=m.context))


def copy(a):
    return asarray(a).copy()


__all__ = ["array", "asarray", "zeros", "ones", "empty", "full", "zeros_like",
           "ones_like", "full_like", "empty_like", "arange", "linspace", "logspace", "eye",
           "identity", "meshgrid", "tril", "triu", "copy", "ndarray"]
