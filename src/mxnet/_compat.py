"""Compatibility with the NumPy that MXNet 1.x code was written against.

NumPy 1.24 removed the aliases ``np.int``, ``np.float``, ``np.object``, ``np.complex``
and ``np.str`` that MXNet-era code (seed 001's ``astype(np.int)``, countless
tutorials) still uses. pymxnet's promise is that such code runs unchanged, so on
import it restores the missing aliases to the builtins they used to name. Set
``MXNET_NUMPY_LEGACY_ALIASES=0`` to leave NumPy untouched.
"""
import builtins
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
