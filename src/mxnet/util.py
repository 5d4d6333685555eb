"""mx.util: NumPy-semantics switches, environment access and small helpers (MXNet 1.9.1).

Two switches change how MXNet reads shapes and which array type front ends return:

* **np_shape** (``is_np_shape``/``set_np_shape``/``np_shape``/``use_np_shape``): zero-size
  dimensions and zero-dim arrays are real (``0`` is a size, ``-1`` marks an unknown
  dimension) instead of the legacy reading where ``0`` meant "unknown".
* **np_array** (``is_np_array``/``np_array``/``use_np_array``): front ends return
  ``mx.np.ndarray`` instead of ``mx.nd.NDArray``.

Both are per thread, as in MXNet (a new thread starts with both off).

"""
import functools
import inspect
import os
import threading

from .base import MXNetError, py_str  # noqa: F401  (py_str re-exported as in MXNet)
from .context import num_gpus, gpu_memory_info
from .backend import cupy_or_none

__all__ = ["is_np_shape", "set_np_shape", "np_shape", "use_np_shape",
           "is_np_array", "set_np_array", "np_array", "use_np_array",
           "use_np", "set_np", "reset_np", "getenv", "setenv", "set_module",
           "get_gpu_count", "get_gpu_memory", "get_cuda_compute_capability",
           "np_ufunc_legal_option", "wrap_np_unary_func", "wrap_np_binary_func"]

# np_shape: a per-thread flag, plus a process-wide default that set_np_shape(2) turns on
# (MXNet's "global" mode, seen by threads that never set their own flag).
_shape_state = threading.local()
_global_np_shape = [False]


def is_np_shape():
    """Whether NumPy shape semantics (zero-size dims, zero-dim arrays) are on in this thread."""
    return getattr(_shape_state, "value", _global_np_shape[0])


def set_np_shape(active):
    """Turn NumPy shape semantics on or off; returns the previous state of this thread.

    ``active`` is a bool, or MXNet's int modes: 0 off (this thread and the process-wide
    default), 1 on in this thread, 2 on in every thread. Turning them off while np_array
    is on is refused: np arrays need np shapes.
    """
    mode = int(active)
    if mode not in (0, 1, 2):
        raise ValueError(f"set_np_shape: active must be a bool or 0/1/2, got {active!r}")
    if not mode and is_np_array():
        raise ValueError("NumPy Shape semantics is required in using NumPy array semantics; "
                         "turn np_array off first (mx.util.set_np_array(False))")
    prev = is_np_shape()
    if mode == 2:
        _global_np_shape[0] = True
    elif mode == 0:
        _global_np_shape[0] = False
    _shape_state.value = bool(mode)
    return prev


def _set_np_shape_logged(active):
    # Name kept for code written against MXNet; the switch itself logs nothing here.
    return set_np_shape(active)


class _NumpyShapeScope:
    """Scope of NumPy shape semantics (what ``np_shape(active)`` returns)."""

    def __init__(self, is_np_shape=True):  # noqa: F811  (MXNet's argument name)
        self._enter_is_np_shape = bool(is_np_shape)
        self._prev_is_np_shape = None

    def __enter__(self):
        self._prev_is_np_shape = set_np_shape(self._enter_is_np_shape)
        return self

    def __exit__(self, *exc):
        if self._prev_is_np_shape != self._enter_is_np_shape:
            set_np_shape(self._prev_is_np_shape)


class _NumpyArrayScope:
    """Scope of NumPy array semantics (what ``np_array(active)`` returns).

    The active scope of each thread is ``_NumpyArrayScope._current.value`` (a
    thread-local). With is_np_array=True, Gluon blocks, parameters and data loaders
    hand out ``mx.np`` arrays.
    """

    _current = threading.local()

    def __init__(self, is_np_array=True):  # noqa: F811
        self._is_np_array = bool(is_np_array)
        self._old_scope = None

    def __enter__(self):
        current = _NumpyArrayScope._current
        self._old_scope = getattr(current, "value", None)
        current.value = self
        return self

    def __exit__(self, *exc):
        if self._old_scope is None:
            try:
                del _NumpyArrayScope._current.value
            except AttributeError:
                pass
        else:
            _NumpyArrayScope._current.value = self._old_scope


def is_np_array():
    """Whether front ends return mx.np arrays (NumPy array semantics) in this thread."""
    # (asked several times per Gluon call: one attribute lookup on the common path)
    scope = getattr(_NumpyArrayScope._current, "value", None)
    return scope is not None and scope._is_np_array


def set_np_array(active):
    """Turn NumPy array semantics on or off for this thread; returns the previous
    state."""
    prev = is_np_array()
    _NumpyArrayScope._current.value = _NumpyArrayScope(bool(active))
    return prev


_set_np_array = set_np_array
_set_np_array_logged = set_np_array


def np_shape(active=True):
    """Context manager: NumPy shape semantics on (or off with active=False) inside it."""
    return _NumpyShapeScope(active)


def np_array(active=True):
    """Context manager: NumPy array semantics inside it (needs mx.np; see set_np_array)."""
    return _NumpyArrayScope(active)


def _decorate(scope_factory, func, what):
    """Wrap a function (or every public method of a class) so it runs inside a scope."""
    if inspect.isclass(func):
        # Inherited methods too (as MXNet does): a decorated Block's __call__/forward
        # run inside the scope, so its outputs follow the scope's array type.
        for name in dir(func):
            method = inspect.getattr_static(func, name)
            if inspect.isfunction(method) and (not name.startswith("_") or name in (
                    "__init__", "__call__", "__getitem__", "__setitem__", "__repr__")):
                setattr(func, name, _decorate(scope_factory, method, what))
            elif isinstance(method, property):
                setattr(func, name, property(
                    _decorate(scope_factory, method.fget, what) if method.fget else None,
                    _decorate(scope_factory, method.fset, what) if method.fset else None,
                    method.fdel, method.__doc__))
        return func
    if not callable(func):
        raise TypeError(f"{what} can only decorate classes and callable objects, "
                        f"got {type(func).__name__}")

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        with scope_factory():
            return func(*args, **kwargs)
    return wrapper


def use_np_shape(func):
    """Decorator: run func (or each method of a class) with NumPy shape semantics."""
    return _decorate(lambda: np_shape(True), func, "use_np_shape")


def use_np_array(func):
    """Decorator: run func with NumPy array semantics (raises until mx.np exists)."""
    return _decorate(lambda: np_array(True), func, "use_np_array")


def use_np(func):
    """Decorator: NumPy shape and array semantics together (``use_np_shape(use_np_array(f))``)."""
    return use_np_shape(use_np_array(func))


def set_np(shape=True, array=True, dtype=False):
    """Set both switches for this thread (MXNet 1.9.1 has no dtype switch: must be False)."""
    if dtype:
        raise NotImplementedError("set_np(dtype=True): NumPy default dtype semantics are "
                                  "not part of MXNet 1.9.1 nor of pymxnet")
    if not shape and array:
        raise ValueError("NumPy Shape semantics is required for using NumPy array semantics")
    if array:
        set_np_array(True)
    else:
        set_np_array(False)
    set_np_shape(shape)


def reset_np():
    """Turn both NumPy switches off in this thread."""
    set_np(shape=False, array=False)


def getenv(name):
    """The value of environment variable ``name`` as MXNet's runtime sees it, or None."""
    return os.environ.get(name)


def setenv(name, value):
    """Set (or, with value None, unset) environment variable ``name`` for MXNet's runtime."""
    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = str(value)


def set_module(module):
    """Decorator that sets ``__module__`` of a function or class (for documentation)."""
    def decorator(func):
        if module is not None:
            func.__module__ = module
        return func
    return decorator


def get_gpu_count():
    """Number of visible GPUs (0 without CuPy or without a driver)."""
    return num_gpus()


def _check_gpu(gpu_dev_id):
    count = get_gpu_count()
    if not 0 <= int(gpu_dev_id) < count:
        raise MXNetError(f"invalid GPU device id {gpu_dev_id}: {count} GPU(s) visible")


def get_gpu_memory(gpu_dev_id):
    """(free, total) memory in bytes of GPU ``gpu_dev_id``."""
    _check_gpu(gpu_dev_id)
    return gpu_memory_info(gpu_dev_id)


def get_cuda_compute_capability(ctx):
    """Compute capability of ctx's GPU as an int (e.g. 90 for sm_90)."""
    if ctx.device_type != "gpu":
        raise ValueError(f"expecting a gpu context to get cuda compute capability, got {ctx}")
    _check_gpu(ctx.device_id)
    props = cupy_or_none().cuda.runtime.getDeviceProperties(ctx.device_id)
    return int(props["major"]) * 10 + int(props["minor"])


def np_ufunc_legal_option(key, value):
    """Whether a NumPy ufunc keyword (out/where/casting/order/dtype/subok) has a value
    mx.np supports."""
    if key == "where":
        return True
    if key == "casting":
        return value in ("no", "equiv", "safe", "same_kind", "unsafe")
    if key == "order":
        return isinstance(value, str)
    if key == "dtype":
        import numpy as np
        return value in (np.int8, np.uint8, np.int32, np.int64, np.float16, np.float32,
                         np.float64, "int8", "uint8", "int32", "int64", "float16",
                         "float32", "float64")
    if key == "subok":
        return isinstance(value, bool)
    return False


def _np_ufunc_wrapper(func):
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        for key, value in kwargs.items():
            if key != "out" and not np_ufunc_legal_option(key, value):
                raise TypeError(f"{func.__name__}: {key}={value!r} is not supported")
        return func(*args, **kwargs)
    return wrapper


def wrap_np_unary_func(func):
    """Decorator checking a unary ufunc's NumPy keyword arguments."""
    return _np_ufunc_wrapper(func)


def wrap_np_binary_func(func):
    """Decorator checking a binary ufunc's NumPy keyword arguments."""
    return _np_ufunc_wrapper(func)
