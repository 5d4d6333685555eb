"""Array creation: mx.nd.array, zeros, ones, full, empty, arange, eye, linspace."""
import math
import numbers

import numpy as np

from ..base import MXNetError, dtype_np, mx_real_t
from ..backend import array_module, device_put, device_scope
from ..engine import base as _engine_base
from ..storage import host_memory_bytes
from .ndarray import NDArray, _check_ctx, from_data
from ..util import is_np_shape

__all__ = ["array", "zeros", "ones", "full", "empty", "arange", "eye", "linspace"]


def _shape(shape):
    """shape as a tuple of non-negative ints; anything else is refused by name."""
    if shape.__class__ is tuple and all(s.__class__ is int and s >= 0 for s in shape):
        return shape                # the common case, without the checks' generators
    dims = (shape,) if isinstance(shape, (int, np.integer)) else shape
    try:
        dims = tuple(dims)
    except TypeError:
        raise MXNetError(f"invalid shape {shape!r}: expected an int or a tuple of ints") \
            from None
    if isinstance(shape, (str, bytes)) or not all(
            isinstance(s, (int, np.integer)) and not isinstance(s, bool) for s in dims):
        raise MXNetError(f"invalid shape {shape!r}: expected an int or a tuple of ints")
    if any(s < 0 for s in dims):
        raise MXNetError(f"invalid shape {shape!r}: dimensions must be non-negative")
    return tuple(int(s) for s in dims)


def array(source_array, ctx=None, dtype=None):
    """An NDArray copied from a NumPy array, NDArray or (nested) list.

    The dtype defaults to the source's for an NDArray source and float32 otherwise
    (NumPy arrays of any type become float32 unless dtype is given, as in MXNet 1.x).
    """
    ctx = _check_ctx(ctx)
    if source_array is None:
        raise MXNetError("mx.nd.array: source_array is None; expected an array-like "
                         "(NDArray, NumPy array, number or nested list)")
    if source_array.__class__ is not NDArray and (
            getattr(source_array, "_sparse", False) or _is_scipy_sparse(source_array)):
        from .sparse import array as sparse_array      # sparse sources stay sparse
        return sparse_array(source_array, ctx=ctx, dtype=dtype)
    if isinstance(source_array, NDArray):
        dt = dtype_np(dtype, source_array._dtype)
        data = source_array.asnumpy().astype(dt, copy=False)
    else:
        dt = dtype_np(dtype, mx_real_t)
        try:
            data = _host_array(source_array, dt)
        except (TypeError, ValueError) as err:
            raise MXNetError(f"cannot create an NDArray from {type(source_array).__name__}: "
                             f"{err}") from None
    xp = array_module(ctx)
    if xp is np and ctx.device_typeid != 3:
        return from_data(np.array(data, copy=True, order="C"), ctx)
    # device_put: cpu_pinned gets page-locked memory; a large copy to a GPU may take
    # its copy stream (backend/copy_stream.py)
    return from_data(device_put(data, ctx), ctx)


def _host_array(source, dtype):
    """``source`` as a NumPy array of ``dtype``. Python numbers that do not fit it wrap
    around as a C cast does (``-1`` as uint8 is 255), which is what MXNet 1.9.1 gives
    under NumPy 1.x; NumPy 2 refuses them, so they are converted first and cast after."""
    try:
        return np.array(source, dtype=dtype)
    except OverflowError:
        return np.asarray(source).astype(dtype)


def _is_scipy_sparse(x):
    mod = type(x).__module__
    if not mod.startswith("scipy.sparse"):
        return False
    import scipy.sparse as sps
    return sps.issparse(x)


def scalar_as(value, dtype):
    """A Python number for an array of ``dtype``: an integer out of an integer type's
    range wraps as MXNet's C cast does (-1 into uint8 is 255, 2**31 into int32 is
    -2**31) where NumPy 2 refuses it. The result stays a Python number (CuPy takes no
    NumPy values in assignments)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        return value
    dtype = np.dtype(dtype)
    if dtype.kind not in "iu":
        return value
    info = np.iinfo(dtype)
    value = int(value)
    if info.min <= value <= info.max:
        return value
    return (value - info.min) % (1 << info.bits) + info.min


def _filled(shape, ctx, dtype, fill):
    ctx = _check_ctx(ctx)
    hook = _engine_base.profile_hook       # the profiler's: records _zeros/_ones/_full
    if hook is not None and fill is not None:
        name = "_zeros" if fill == 0 else "_ones" if fill == 1 else "_full"
        return hook(_make_filled, name, ctx, "imperative")(shape, ctx, dtype, fill)
    return _make_filled(shape, ctx, dtype, fill)


def _make_filled(shape, ctx, dtype, fill):
    xp = array_module(ctx)
    shape = _shape(shape)
    dt = dtype_np(dtype)
    if ctx.device_type != "gpu":
        limit = host_memory_bytes()
        if limit is not None and _nbytes(shape, dt) > limit:
            limit = host_memory_bytes(cached=False)
            if limit is not None and _nbytes(shape, dt) > limit:
                _refuse(shape, dt, f"; this machine has {limit / 2**30:.1f} GiB of "
                                   "memory and swap")
    try:
        with device_scope(ctx):
            if fill is None:
                data = xp.empty(shape, dt)
            elif fill == 0:
                data = xp.zeros(shape, dt)
            else:
                data = xp.full(shape, scalar_as(fill, dt), dt)
    except MemoryError:
        _refuse(shape, dt, "")
    return from_data(data, ctx)


def _nbytes(shape, dt):
    return math.prod(shape) * dt.itemsize      # Python ints: exact, no overflow


def _refuse(shape, dt, why):
    raise MXNetError(f"cannot allocate an array of shape {shape} and dtype {dt}: "
                     f"{_nbytes(shape, dt) / 2**30:.1f} GiB requested{why}") from None


def _check_known_shape(shape, what):
    """Outside ``mx.np_shape()`` a 0 in a shape means "unknown" (MXNet's legacy
    semantics), so zero-size and zero-dim arrays cannot be created from a shape."""
    shape = _shape(shape)
    if not is_np_shape() and (not shape or 0 in shape):
        raise MXNetError(f"{what}: shape {shape} has an unknown (0) or no dimension; "
                         f"zero-size and scalar arrays need mx.np_shape(True)")


def zeros(shape, ctx=None, dtype=None, **kwargs):
    """An array of zeros (float32 unless dtype says otherwise); with ``out=`` the
    zeros are written into that array instead."""
    out = kwargs.pop("out", None)
    stype = kwargs.pop("stype", None)
    if out is not None:
        out[:] = 0
        return out
    if stype not in (None, "default"):
        from .sparse import zeros as sparse_zeros
        return sparse_zeros(stype, shape, ctx=ctx, dtype=dtype)
    _check_known_shape(shape, "zeros")
    return _filled(shape, ctx, dtype, 0)


def ones(shape, ctx=None, dtype=None, **kwargs):
    """An array of ones; with ``out=`` the ones are written into that array."""
    out = kwargs.pop("out", None)
    if out is not None:
        out[:] = 1
        return out
    _check_known_shape(shape, "ones")
    return _filled(shape, ctx, dtype, 1)


def full(shape, val, ctx=None, dtype=mx_real_t, out=None):
    """An array filled with the number val."""
    if not isinstance(val, (numbers.Number, np.generic)) and not (
            isinstance(val, np.ndarray) and val.ndim == 0):
        raise MXNetError(f"mx.nd.full: val must be a number, got {type(val).__name__}")
    if out is not None:
        out[:] = val
        return out
    return _filled(shape, ctx, dtype, val)


def empty(shape, ctx=None, dtype=None, stype=None):
    """An uninitialised array (of storage type ``stype``: sparse ones hold no entries)."""
    if stype not in (None, "default"):
        from .sparse import empty as sparse_empty
        return sparse_empty(stype, shape, ctx=ctx, dtype=dtype)
    return _filled(shape, ctx, dtype, None)


def arange(start, stop=None, step=1.0, repeat=1, infer_range=None, ctx=None,
           dtype=mx_real_t):
    """Evenly spaced values in [start, stop), each repeated ``repeat`` times."""
    if stop is None:
        start, stop = 0, start
    for name, v in (("start", start), ("stop", stop), ("step", step), ("repeat", repeat)):
        if not isinstance(v, (numbers.Real, np.generic)) or isinstance(v, bool):
            raise MXNetError(f"arange: {name} must be a number, got {v!r}")
    if step == 0:
        raise MXNetError("arange: step must not be 0")
    if int(repeat) != repeat or repeat < 1:
        raise MXNetError(f"arange: repeat must be a positive integer, got {repeat!r}")
    from . import _internal         # the one _arange operator computes the values
    return _internal._arange(start=start, stop=stop, step=step, repeat=int(repeat),
                             dtype=np.dtype(dtype_np(dtype)).name, ctx=ctx)


def eye(N, M=0, k=0, ctx=None, dtype=mx_real_t, **kwargs):
    return array(np.eye(N, M or None, k, dtype=dtype_np(dtype)), ctx=ctx,
                 dtype=dtype_np(dtype))


def linspace(start, stop, num, endpoint=True, ctx=None, dtype=mx_real_t):
    data = np.linspace(start, stop, num, endpoint=endpoint).astype(dtype_np(dtype))
    return array(data, ctx=ctx, dtype=data.dtype)
