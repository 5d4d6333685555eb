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
