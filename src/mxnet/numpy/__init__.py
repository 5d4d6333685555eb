"""``mx.np``: MXNet 1.9.1's NumPy-compatible array API on pymxnet.

``from mxnet import np, npx; npx.set_np()`` gives ``np.ndarray`` arrays with NumPy
semantics (zero-dim arrays, NumPy broadcasting and indexing, bool comparisons,
float32 by default) that run asynchronously through the same operator registry and
engine as ``mx.nd``, record on the autograd tape, and flow through Gluon in NumPy
mode. A name MXNet 1.9.1's ``mx.np`` has that pymxnet does not implement yet raises
NotImplementedError naming it.
"""
import numpy as _onp

from . import _internal, fallback, fallback_linalg, linalg, random  # noqa: F401
from .creation import *  # noqa: F401,F403
from .creation import __all__ as _creation_names
from .manipulation import (array_split, argsort, broadcast_to, concat, concatenate,  # noqa: F401
                           diagonal, dsplit, dstack, expand_dims, flip, fliplr, flipud,
                           hsplit, hstack, moveaxis, pad, ravel, repeat, reshape, roll,
                           rot90, searchsorted, sort, split, squeeze, stack, swapaxes, take,
                           tile, trace, transpose, unique, vsplit, vstack)
from .math import *  # noqa: F401,F403
from .math import __all__ as _math_names
from .multiarray import ndarray
from .routines import *  # noqa: F401,F403  (after math: its bitwise/invert handle ints)
from .routines import __all__ as _routine_names
from .fallback import make_all as _make_fallbacks

globals().update(_make_fallbacks())     # MXNet's host-computed (fallback) functions

# dtypes and constants, as NumPy names them
bool_ = _onp.bool_
int8, uint8, int16, int32, int64 = _onp.int8, _onp.uint8, _onp.int16, _onp.int32, _onp.int64
float16, float32, float64 = _onp.float16, _onp.float32, _onp.float64
dtype = _onp.dtype
pi, e, inf, nan, newaxis, euler_gamma = (_onp.pi, _onp.e, _onp.inf, _onp.nan, None,
                                         _onp.euler_gamma)
PZERO, NZERO = 0.0, -0.0


def shape(a):
    return a.shape


def size(a, axis=None):
    return a.size if axis is None else a.shape[axis]


def ndim(a):
    return a.ndim


def isscalar(element):
    return _onp.isscalar(element)


def may_share_memory(a, b, max_work=None):
    """Whether a and b are views of overlapping parts of the same storage (views are
    contiguous element ranges, so this is exact)."""
    if a._chunk is not b._chunk or a.size == 0 or b.size == 0:
        return False
    a0 = 0 if a._view is None else a._view[0]
    b0 = 0 if b._view is None else b._view[0]
    return a0 < b0 + b.size and b0 < a0 + a.size


shares_memory = may_share_memory


def save(file, arr):
    """Save one array to file in MXNet's format (``npx.savez`` saves several)."""
    from ..ndarray import save as _save
    _save(file, [arr.as_nd_ndarray()] if isinstance(arr, ndarray) else arr)


def load(file):
    """Arrays saved by ``np.save``/``npx.savez`` (a list or a dict), as np arrays."""
    from ..ndarray import load as _load
    from .multiarray import as_np
    data = _load(file)
    if isinstance(data, dict):
        return {k: as_np(v) for k, v in data.items()}
    return [as_np(v) for v in data]


from .._missing import MissingFeatureError as NotImplementedName  # noqa: E402


def __getattr__(name):
    # Names MXNet 1.9.1's mx.np has (NumPy's names) that pymxnet does not implement yet.
    if not name.startswith("__") and hasattr(_onp, name):
        raise NotImplementedName(f"mx.np.{name} is not implemented in pymxnet yet")
    raise AttributeError(f"module 'mxnet.numpy' has no attribute {name!r}")


__all__ = (["ndarray", "linalg", "random"] + list(_creation_names) + list(_math_names) +
           list(_routine_names))
