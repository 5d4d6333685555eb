"""Compatibility with the NumPy that MXNet 1.x code was written against.

NumPy 1.24 removed the aliases ``np.int``, ``np.float``, ``np.object``, ``np.complex``
and ``np.str`` that MXNet-era code (seed 001's ``astype(np.int)``, countless
tutorials) still uses. pymxnet's promise is that such code runs unchanged, so on
import it restores the missing aliases to the builtins they used to name, the names
NumPy 2.0 dropped (``np.NaN``, ``np.lib.arraysetops`` ...) and ``np.save`` of a ragged
list of arrays (an object array, as before NumPy 1.24). Set
``MXNET_NUMPY_LEGACY_ALIASES=0`` to leave NumPy untouched.
"""
import builtins
import importlib
import os
import warnings

import numpy as np

_ALIASES = ("int", "float", "object", "complex", "str")

# NumPy 2.0 removed these spellings (NEP 52); MXNet 1.x code and tests still use them.
# Each is the exact object NumPy itself recommends instead.
_NUMPY2_ALIASES = {
    "NaN": np.nan, "NAN": np.nan, "Inf": np.inf, "Infinity": np.inf, "infty": np.inf,
    "PINF": np.inf, "NINF": -np.inf, "PZERO": 0.0, "NZERO": -0.0,
    "float_": np.float64, "complex_": np.complex128, "cfloat": np.complex128,
    "longfloat": np.longdouble, "singlecomplex": np.complex64,
    "unicode_": np.str_, "string_": np.bytes_,
    "product": np.prod, "cumproduct": np.cumprod, "alltrue": np.all, "sometrue": np.any,
}

_NUMPY2_LIB_MODULES = ("arraypad", "arraysetops", "arrayterator", "function_base",
                       "histograms", "index_tricks", "nanfunctions", "polynomial",
                       "shape_base", "twodim_base", "type_check", "ufunclike", "utils")


def restore_numpy_aliases():
    if os.environ.get("MXNET_NUMPY_LEGACY_ALIASES", "1") == "0":
        return
    for name in _ALIASES:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")       # NumPy warns while saying "gone"
            try:
                getattr(np, name)
                continue
            except AttributeError:
                pass
        setattr(np, name, getattr(builtins, name))
    missing = set()
    for name in _NUMPY2_ALIASES:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                getattr(np, name)
            except AttributeError:
                missing.add(name)
    for name in missing:
        setattr(np, name, _NUMPY2_ALIASES[name])
    for name in _NUMPY2_LIB_MODULES:
        # NumPy 2.0 made these np.lib submodules private (np.lib.arraysetops.unique in
        # MXNet-era code); each name points at the module that holds its functions now
        if name not in vars(np.lib):
            try:
                module = importlib.import_module(f"numpy.lib._{name}_impl")
            except ImportError:
                continue
            setattr(np.lib, name, module)
    if not getattr(np.save, "_mxnet_ragged", False):
        np.save = _save_ragged_as_objects(np.save)


def _save_ragged_as_objects(save):
    """``np.save`` that stores a ragged list of arrays as an object array.

    Until NumPy 1.24, ``np.save(f, [a, b], allow_pickle=True)`` with arrays of different
    shapes (one per bucket, say) saved a one-dimensional object array; NumPy 1.24 made
    building that array an error. MXNet-era code saves training state this way, so the
    list is turned into the object array NumPy used to build, and only then saved.
    """
    def wrapped(file, arr, allow_pickle=True, *args, **kwargs):
        if isinstance(arr, (list, tuple)) and allow_pickle:
            try:
                arr = np.asanyarray(arr)
            except ValueError:
                ragged = np.empty(len(arr), dtype=object)
                for i, item in enumerate(arr):
                    ragged[i] = item
                arr = ragged
        return save(file, arr, allow_pickle, *args, **kwargs)

    wrapped.__doc__ = save.__doc__
    wrapped.__name__ = wrapped.__qualname__ = save.__name__
    wrapped.__module__ = save.__module__
    wrapped.__wrapped__ = save
    wrapped._mxnet_ragged = True
    return wrapped


# NumPy's floating-point warnings ("divide by zero encountered in log" ...) start with
# one of these; NumPy attributes them to the module that called the ufunc.
_FLOATING_POINT_WARNING = r"(divide by zero|overflow|underflow|invalid value) encountered"


def silence_kernel_floating_point_warnings():
    """MXNet's kernels return inf and nan without a word (``nd.log(nd.zeros(1))`` is
    ``-inf``, silently); NumPy warns. Ignore NumPy's floating-point RuntimeWarnings
    raised from pymxnet's own modules only: the user's NumPy calls still warn, and so
    do the RuntimeWarnings pymxnet issues on purpose (their messages differ). A filter
    costs nothing until a warning is raised, unlike ``np.errstate`` around every
    kernel. (Importing mxnet inside ``warnings.catch_warnings()``, as pytest's
    collection does, drops the filter when that block ends.)"""
    warnings.filterwarnings("ignore", message=_FLOATING_POINT_WARNING,
                            category=RuntimeWarning, module=r"mxnet(\.|$)")
