"""Errors, dtype tables and environment flags shared by every part of pymxnet."""
import ctypes
import os
import sys

import numpy as np
try:
    import ml_dtypes as _ml_dtypes
except ImportError:         # a source checkout without it: everything but bfloat16 works
    _ml_dtypes = None

__all__ = ["MXNetError", "InvalidArgument", "InvalidArgumentType", "InvalidIndex",
           "NotImplementedForSymbol", "string_types", "numeric_types",
           "integer_types", "DTYPE_TO_FLAG", "FLAG_TO_DTYPE", "dtype_np", "dtype_name",
           "env_int", "env_str", "mx_real_t", "data_dir", "py_str", "c_str", "_as_list",
           "classproperty", "check_call", "MXNetNotImplementedError", "NDArrayHandle"]


# MXNet's C handle type for arrays (see NDArray._as_parameter_).
NDArrayHandle = ctypes.c_void_p
SymbolHandle = ctypes.c_void_p
mx_uint = ctypes.c_uint
mx_int = ctypes.c_int


class MXNetError(RuntimeError):
    """The error MXNet raises for bad input, failed operators and engine failures."""


class InvalidArgument(MXNetError, ValueError):
    """A bad argument value: caught by ``except MXNetError`` and ``except ValueError``."""


class InvalidArgumentType(MXNetError, TypeError):
    """An argument of the wrong type: caught by ``except MXNetError`` and ``except
    TypeError``."""


class InvalidIndex(MXNetError, IndexError):
    """An index out of range: caught by ``except MXNetError`` and ``except IndexError``."""


class NotImplementedForSymbol(MXNetError):
    """Raised when an NDArray-only method is called on a Symbol."""

    def __init__(self, function, alias=None, *args):
        super().__init__()
        self.function = function.__name__ if callable(function) else str(function)
        self.alias = alias

    def __str__(self):
        name = self.alias or self.function
        return f"Function {name} is not implemented for Symbol and only available in NDArray."


string_types = (str,)
integer_types = (int, np.integer)
numeric_types = (float, int, np.generic)
mx_real_t = np.float32

# bfloat16 arrays are NumPy/CuPy arrays of ml_dtypes' bfloat16 type (importing it also
# lets np.dtype('bfloat16') resolve). MXNet 1.9.1 spelled the type as a record of one
# uint16 field; that spelling is accepted and means the same type.
MXNET_BFLOAT16_RECORD = np.dtype([("bfloat16", np.uint16)])
HAVE_BFLOAT16 = _ml_dtypes is not None
# without ml_dtypes: a stand-in no array has, so every "is it bfloat16" test says no
bfloat16 = np.dtype(_ml_dtypes.bfloat16) if HAVE_BFLOAT16 else \
    np.dtype([("bfloat16 (needs ml_dtypes)", np.uint16)])


# Set once any bfloat16 array or dtype has appeared in this process: until then the
# operator runner skips its per-call bfloat16 check (operator/bfloat16.py), which would
# otherwise cost every imperative call ~0.2 us.
BFLOAT16_IN_USE = False


def note_bfloat16():
    """Record that bfloat16 is in use (NDArray creation and dtype_np call this)."""
    global BFLOAT16_IN_USE
    BFLOAT16_IN_USE = True


def _bfloat16_needed():
    if not HAVE_BFLOAT16:
        raise MXNetError("dtype bfloat16 needs the ml_dtypes package "
                         "(pip install ml_dtypes; pymxnet's requirements list it)")
    note_bfloat16()
    return bfloat16


# MXNet's type flags (mshadow's kFloat32 ... kBool, kBfloat16), as stored in .params files.
DTYPE_TO_FLAG = {
    np.dtype(np.float32): 0, np.dtype(np.float64): 1, np.dtype(np.float16): 2,
    np.dtype(np.uint8): 3, np.dtype(np.int32): 4, np.dtype(np.int8): 5,
    np.dtype(np.int64): 6, np.dtype(np.bool_): 7, np.dtype(np.int16): 8,
    np.dtype(np.uint16): 9, np.dtype(np.uint32): 10, np.dtype(np.uint64): 11,
    bfloat16: 12,
}
FLAG_TO_DTYPE = {v: k for k, v in DTYPE_TO_FLAG.items()}

_DTYPE_ALIASES = {"float": np.float32, "real_t": np.float32}


def is_float_dtype(dtype):
    """True for the floating-point types, bfloat16 included (NumPy files ml_dtypes'
    bfloat16 under kind 'V', so ``kind == 'f'`` alone misses it); False for None (a
    type not known yet)."""
    if dtype is None:
        return False
    dt = np.dtype(dtype)
    return dt.kind == "f" or dt == bfloat16


def _names_bfloat16(dt):
    """Whether NumPy dtype ``dt`` is bfloat16 in either spelling (ml_dtypes' or MXNet's
    one-field record); both are kind 'V'."""
    return dt.kind == "V" and (dt == MXNET_BFLOAT16_RECORD or dt == bfloat16)


def dtype_np(dtype, default=np.float32):
    """Normalise a dtype given as a name, numpy type, flag or None into a numpy dtype."""
    if dtype is None:
        return np.dtype(default)
    if isinstance(dtype, np.dtype):
        return _bfloat16_needed() if _names_bfloat16(dtype) else dtype
    if isinstance(dtype, str):
        if dtype == "bfloat16":
            return _bfloat16_needed()
        if dtype in _DTYPE_ALIASES:
            return np.dtype(_DTYPE_ALIASES[dtype])
        if dtype.isdigit():
            return FLAG_TO_DTYPE[int(dtype)]
    if not isinstance(dtype, (type, str, bytes, np.ndarray, np.generic)) and \
            hasattr(dtype, "dtype"):
        # An NDArray given as a dtype (``x.astype(label)``) means its dtype: NumPy 1.x
        # read the ``.dtype`` attribute; NumPy 2 refuses it when it is a type, as
        # NDArray's is. (NumPy's own arrays and scalars are left to np.dtype.)
        return dtype_np(dtype.dtype, default)
    try:
        dt = np.dtype(dtype)
    except TypeError as err:
        raise MXNetError(f"unknown dtype {dtype!r}") from err
    if _names_bfloat16(dt):
        return _bfloat16_needed()
    if dt.kind in "OSUVMm":        # objects, strings, records, dates: not array data
        raise MXNetError(f"dtype {dtype!r} is not supported: NDArrays hold numbers and "
                         "booleans only")
    return dt


def dtype_name(dtype):
    """The MXNet spelling of a dtype ('float32', 'int64', 'bool', 'bfloat16')."""
    return dtype_np(dtype).name


def get_or_make(table, key, make, lock):
    """``table[key]``, made by ``make()`` the first time (under ``lock``, so threads
    racing for a missing key make it once)."""
    v = table.get(key)
    if v is None:
        with lock:
            v = table.get(key)
            if v is None:
                v = table[key] = make()
    return v


def pickled_as(module_name, classes):
    """Give ``classes`` the module MXNet 1.9.1 defines them in, ``module_name`` (already
    imported), and make them its attributes. A pickle records a class by module and
    name: objects pickled here then load in MXNet, and MXNet's pickles find the class
    here (pymxnet defines many classes in modules MXNet does not have)."""
    module = sys.modules[module_name]
    for cls in classes:
        cls.__module__ = module_name
        setattr(module, cls.__name__, cls)


def env_int(name, default):
    """An integer environment flag (MXNET_*), falling back to default when unset or bad."""
    try:
        return int(os.environ.get(name, default))
    except ValueError:
        return default


def env_str(name, default):
    return os.environ.get(name, default)


def data_dir():
    """Where datasets and models live: ``$MXNET_HOME`` or ``~/.mxnet`` (as MXNet)."""
    return os.environ.get("MXNET_HOME", os.path.join(os.path.expanduser("~"), ".mxnet"))


# --- Names MXNet's Python layer exports from mxnet.base and that user code imports. ---

def py_str(x):
    """A Python str from bytes (utf-8) or str: MXNet's helper for C strings."""
    return x.decode("utf-8") if isinstance(x, (bytes, bytearray)) else str(x)


def c_str(string):
    """The bytes MXNet would pass to its C API for a Python string (utf-8)."""
    return string.encode("utf-8")


def _as_list(obj):
    """obj itself when it is a list or tuple, else a one-element list holding it."""
    return obj if isinstance(obj, (list, tuple)) else [obj]


class classproperty:  # noqa: N801  (MXNet's spelling)
    """A read-only property computed on the class rather than on an instance."""

    def __init__(self, fget):
        self.fget = fget

    def __get__(self, obj, owner):
        return self.fget(owner)


class MXNetNotImplementedError(MXNetError, NotImplementedError):
    """An MXNetError for a feature pymxnet does not provide."""


def _c_out(arg):
    """The ctypes object a C out-argument refers to: ``ctypes.byref(x)`` or a ctypes
    pointer to x."""
    obj = getattr(arg, "_obj", None)        # ctypes.byref's CArgObject
    if obj is not None:
        return obj
    if isinstance(arg, ctypes._Pointer):
        return arg.contents
    raise MXNetError(f"expected ctypes.byref(...) or a ctypes pointer, got {arg!r}")


class _CLibrary:
    """``mxnet.base._LIB`` for code that imports it (MXNet's own tests do). pymxnet has
    no C library: the few C API functions such code calls that pymxnet can answer are
    emulated (``emulate_c_api``; their out-arguments, passed with ``ctypes.byref``,
    are filled as the C function fills them, and they return 0); calling any other
    raises MXNetNotImplementedError naming the function."""

    def __init__(self):
        self._emulated = {}
        self._returned = {}     # what a call handed out stays valid, as the C API's does

    def return_strings(self, name, strings, out_size, out_array):
        """Fill a ``(uint* out_size, const char*** out_array)`` pair of out-arguments
        with ``strings``, kept alive under ``name``."""
        array = (ctypes.c_char_p * len(strings))(*[s.encode() for s in strings])
        self._returned[name] = array
        _c_out(out_size).value = len(strings)
        target = _c_out(out_array)
        ctypes.cast(ctypes.pointer(target), ctypes.POINTER(ctypes.c_void_p))[0] = \
            ctypes.addressof(array)
        return 0

    def __getattr__(self, name):
        if name.startswith("_"):        # dunders and private names: not C functions
            raise AttributeError(name)
        fn = self._emulated.get(name)
        if fn is not None:
            return fn

        def unavailable(*args, **kwargs):
            raise MXNetNotImplementedError(
                f"MXNet's C API function {name} is not available: pymxnet is pure Python "
                "and has no libmxnet")
        unavailable.__name__ = name
        return unavailable

    def __repr__(self):
        return "<pymxnet: no C library>"


_LIB = _CLibrary()


def emulate_c_api(name):
    """Decorator: the function answers ``_LIB.<name>(...)`` (the module that knows the
    answer registers it, so this module imports none of them)."""
    def register(fn):
        _LIB._emulated[name] = fn
        return fn
    return register


def c_array(ctype, values):
    """A ctypes array of ``ctype`` holding ``values`` (MXNet's helper)."""
    return (ctype * len(values))(*values)


def c_str_array(strings):
    """A ctypes array of C strings (utf-8) from Python strings (MXNet's helper)."""
    return c_array(ctypes.c_char_p, [s.encode("utf-8") for s in strings])


def c_handle_array(objs):
    """A ctypes array of the objects' ``handle`` attributes (MXNet's helper)."""
    return c_array(ctypes.c_void_p, [o.handle for o in objs])


def check_call(ret):
    """MXNet's C API return-code check. pymxnet has no C library: only 0 (success) is
    accepted, anything else is an MXNetError."""
    if ret != 0:
        raise MXNetError(f"C API call failed with code {ret}")

