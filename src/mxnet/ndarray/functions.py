"""mx.nd's Python-level functions that are not single operators: the named
elementwise family (``add``, ``maximum``, ``equal``, ``logical_and`` ... taking arrays
or numbers on either side), ``concatenate``, ``moveaxis``, ``onehot_encode``,
``histogram``, NumPy/DLPack interchange and the indexing helpers (``CachedOp`` is
installed by mxnet.gluon, which implements it)
MXNet 1.9.1 exposes from ``mxnet.ndarray``.
"""
import ctypes
import numbers
import warnings

import numpy as np

from ..base import MXNetError, numeric_types
from .dispatch import invoke_by_name
from .ndarray import NDArray, from_data
from .creation import array
from ..backend.image_codec import decode
from ..context import cpu

__all__ = ["add", "subtract", "multiply", "divide", "true_divide", "modulo", "power",
           "maximum", "minimum", "equal", "not_equal", "greater", "greater_equal",
           "lesser", "lesser_equal", "logical_and", "logical_or", "logical_xor",
           "concatenate", "moveaxis", "onehot_encode", "histogram", "imdecode",
           "get_indexing_dispatch_code", "get_oshape_of_gather_nd_op",
           "indexing_key_expand_implicit_axes"]


def _named_binary(name, array_op, scalar_op, rscalar_op, pyfn):
    """A function of two operands, each an NDArray or a number: both arrays use the
    broadcasting operator, one number uses the scalar form (``rscalar_op`` when the
    number is on the left), two numbers give the plain Python result."""
    def fn(lhs, rhs):
        lnd, rnd = isinstance(lhs, NDArray), isinstance(rhs, NDArray)
        if lnd and rnd:
            return invoke_by_name(array_op, [lhs, rhs], {})
        if lnd and isinstance(rhs, numeric_types):
            return invoke_by_name(scalar_op, [lhs], {"scalar": float(rhs)})
        if rnd and isinstance(lhs, numeric_types):
            return invoke_by_name(rscalar_op, [rhs], {"scalar": float(lhs)})
        if isinstance(lhs, numeric_types) and isinstance(rhs, numeric_types):
            return pyfn(lhs, rhs)
        raise TypeError(f"{name}: operands must be NDArrays or numbers, got "
                        f"{type(lhs).__name__} and {type(rhs).__name__}")
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (f"Elementwise {name} of two operands (NDArray or number), with "
                  "broadcasting between arrays.")
    return fn


add = _named_binary("add", "broadcast_add", "_plus_scalar", "_plus_scalar",
                    lambda a, b: a + b)
subtract = _named_binary("subtract", "broadcast_sub", "_minus_scalar", "_rminus_scalar",
                         lambda a, b: a - b)
multiply = _named_binary("multiply", "broadcast_mul", "_mul_scalar", "_mul_scalar",
                         lambda a, b: a * b)
divide = _named_binary("divide", "broadcast_div", "_div_scalar", "_rdiv_scalar",
                       lambda a, b: a / b)
true_divide = divide
modulo = _named_binary("modulo", "broadcast_mod", "_mod_scalar", "_rmod_scalar",
                       lambda a, b: a % b)
power = _named_binary("power", "broadcast_power", "_power_scalar", "_rpower_scalar",
                      lambda a, b: a ** b)
maximum = _named_binary("maximum", "broadcast_maximum", "_maximum_scalar",
                        "_maximum_scalar", lambda a, b: a if a > b else b)
minimum = _named_binary("minimum", "broadcast_minimum", "_minimum_scalar",
                        "_minimum_scalar", lambda a, b: a if a < b else b)
# Comparisons with the number on the left flip the relation (2 > x is x < 2).
equal = _named_binary("equal", "broadcast_equal", "_equal_scalar", "_equal_scalar",
                      lambda a, b: 1 if a == b else 0)
not_equal = _named_binary("not_equal", "broadcast_not_equal", "_not_equal_scalar",
                          "_not_equal_scalar", lambda a, b: 1 if a != b else 0)
greater = _named_binary("greater", "broadcast_greater", "_greater_scalar",
                        "_lesser_scalar", lambda a, b: 1 if a > b else 0)
greater_equal = _named_binary("greater_equal", "broadcast_greater_equal",
                              "_greater_equal_scalar", "_lesser_equal_scalar",
                              lambda a, b: 1 if a >= b else 0)
lesser = _named_binary("lesser", "broadcast_lesser", "_lesser_scalar", "_greater_scalar",
                       lambda a, b: 1 if a < b else 0)
lesser_equal = _named_binary("lesser_equal", "broadcast_lesser_equal",
                             "_lesser_equal_scalar", "_greater_equal_scalar",
                             lambda a, b: 1 if a <= b else 0)
logical_and = _named_binary("logical_and", "broadcast_logical_and", "_logical_and_scalar",
                            "_logical_and_scalar", lambda a, b: 1 if (a and b) else 0)
logical_or = _named_binary("logical_or", "broadcast_logical_or", "_logical_or_scalar",
                           "_logical_or_scalar", lambda a, b: 1 if (a or b) else 0)
logical_xor = _named_binary("logical_xor", "broadcast_logical_xor", "_logical_xor_scalar",
                            "_logical_xor_scalar",
                            lambda a, b: 1 if (bool(a) != bool(b)) else 0)


def concatenate(arrays, axis=0, always_copy=True):
    """Join a list of NDArrays along an existing axis. One array with
    ``always_copy=False`` is returned as it is."""
    if not isinstance(arrays, (list, tuple)) or not arrays:
        raise MXNetError("concatenate: expected a non-empty list of NDArrays")
    first = arrays[0]
    for a in arrays:
        if not isinstance(a, NDArray):
            raise MXNetError(f"concatenate: expected NDArrays, got {type(a).__name__}")
        if a.dtype != first.dtype:
            raise MXNetError(f"concatenate: dtypes differ ({np.dtype(first.dtype).name} "
                             f"and {np.dtype(a.dtype).name})")
        if a.ndim != first.ndim or any(x != y for i, (x, y) in
                                       enumerate(zip(a.shape, first.shape))
                                       if i != axis % first.ndim):
            raise MXNetError(f"concatenate: shapes {first.shape} and {a.shape} differ "
                             f"outside axis {axis}")
    if len(arrays) == 1 and not always_copy:
        return first
    return invoke_by_name("Concat", list(arrays), {"dim": axis, "num_args": len(arrays)})


def _axes(value, ndim, what):
    items = [value] if isinstance(value, numbers.Integral) else list(value)
    out = []
    for a in items:
        if not -ndim <= a < ndim:
            raise ValueError(f"{what} axis {a} is out of range for an array of "
                             f"{ndim} dimensions")
        out.append(a % ndim)
    if len(set(out)) != len(out):
        raise ValueError(f"repeated {what} axes: {items}")
    return out


def moveaxis(tensor, source, destination):
    """Move axes of an array to new positions (numpy.moveaxis's rule); other axes keep
    their order."""
    src = _axes(source, tensor.ndim, "source")
    dst = _axes(destination, tensor.ndim, "destination")
    if len(src) != len(dst):
        raise ValueError("moveaxis: source and destination need the same number of axes")
    order = [a for a in range(tensor.ndim) if a not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return invoke_by_name("transpose", [tensor], {"axes": tuple(order)})


def onehot_encode(indices, out):
    """Write the one-hot rows of ``indices`` (length n) into ``out`` (n, depth)."""
    return invoke_by_name("_onehot_encode", [indices, out], {}, out=out)


def histogram(a, bins=10, range=None):  # noqa: A002  (MXNet's parameter name)
    """Histogram of the flattened array: ``(counts, bin_edges)``. ``bins`` is a count
    (with ``range`` (low, high); without it NumPy picks the range) or an NDArray of
    edges."""
    if isinstance(bins, NDArray):
        return invoke_by_name("_histogram", [a, bins], {})
    if isinstance(bins, numbers.Integral):
        if range is None:
            warnings.warn("histogram: no range given, the bins span the data's "
                          "minimum to maximum (numpy.histogram's choice)")
            counts, edges = np.histogram(a.asnumpy(), bins=bins)
            # both come back as nd.array's default float32, counts included (MXNet
            # wraps NumPy's result the same way; the operator's counts are int64)
            return array(counts), array(edges)
        return invoke_by_name("_histogram", [a], {"bin_cnt": bins, "range": range})
    raise ValueError("histogram: bins must be an integer or an NDArray of bin edges")


def imdecode(str_img, clip_rect=(0, 0, 0, 0), out=None, index=0, channels=3, mean=None):
    """Decode an image (bytes) to a float32 (1, channels, height, width) array, minus
    ``mean`` when given, cropped to ``clip_rect`` (x0, y0, x1, y1) unless all zero
    (MXNet's deprecated ``nd.imdecode``; ``index`` is the batch slot it fills in
    ``out``)."""
    if channels not in (1, 3):
        raise MXNetError(f"imdecode: channels must be 1 or 3, got {channels}")
    img = decode(bytes(str_img), flag=1 if channels == 3 else 0, to_rgb=True)
    if img.ndim == 2:
        img = img[:, :, None]
    x0, y0, x1, y1 = clip_rect
    if x0 or y0 or x1 or y1:
        if not (0 <= x0 < x1 <= img.shape[1] and 0 <= y0 < y1 <= img.shape[0]):
            raise MXNetError(f"imdecode: clip_rect {tuple(clip_rect)} is outside the "
                             f"{img.shape[1]}x{img.shape[0]} image")
        img = img[y0:y1, x0:x1]
    chw = np.ascontiguousarray(img.transpose(2, 0, 1), dtype=np.float32)
    if mean is not None:
        m = mean.asnumpy() if isinstance(mean, NDArray) else np.asarray(mean)
        chw = chw - m.reshape(chw.shape if m.size == chw.size else (-1, 1, 1))
    if out is None:
        return from_data(np.ascontiguousarray(chw[None], dtype=np.float32), cpu())
    out[index] = chw
    return out


# --- indexing helpers MXNet 1.9.1 exposes from mxnet.ndarray ---------------------
_BASIC_INDEXING, _ADVANCED_INDEXING, _EMPTY_TUPLE_INDEXING = 0, 1, 2
_NO_ZERO_DIM_BOOL_ARRAY = -1


def get_indexing_dispatch_code(key):
    """0 for basic indexing (ints, slices, None), 1 when ``key`` (a tuple) holds an
    array-like index, 2 for an empty tuple among its entries."""
    if not isinstance(key, tuple):
        raise AssertionError("get_indexing_dispatch_code: key must be a tuple")
    for idx in key:
        if isinstance(idx, (NDArray, np.ndarray, list, tuple, range)):
            if isinstance(idx, tuple) and not idx:
                return _EMPTY_TUPLE_INDEXING
            return _ADVANCED_INDEXING
        if not (idx is None or isinstance(idx, (slice, numbers.Integral))):
            raise ValueError(f"NDArray does not support indexing with {idx!r} of type "
                             f"{type(idx).__name__}")
    return _BASIC_INDEXING


def get_oshape_of_gather_nd_op(dshape, ishape):
    """Output shape of gather_nd for data shape ``dshape`` and index shape ``ishape``:
    ishape[1:] + dshape[ishape[0]:]."""
    return tuple(ishape[1:]) + tuple(dshape[ishape[0]:])


def indexing_key_expand_implicit_axes(key, shape):
    """(key with the axes an ellipsis or a short key leaves implicit written out as
    ``slice(None)``, -1). Boolean masks need numpy mode and raise ValueError."""
    key = key if isinstance(key, tuple) else (key,)
    ellipsis_at, explicit, n_new = None, [], 0
    for i, idx in enumerate(key):
        if idx is Ellipsis:
            if ellipsis_at is not None:
                raise IndexError("an index can only have a single ellipsis ('...')")
            ellipsis_at = i
            continue
        if idx is None:
            n_new += 1
        if isinstance(idx, bool) or (isinstance(idx, (NDArray, np.ndarray))
                                     and np.dtype(idx.dtype) == np.bool_):
            raise ValueError("boolean indexing needs numpy semantics (npx.set_np())")
        if isinstance(idx, NDArray) and idx.ndim == 0:
            idx = int(idx.asscalar())
        explicit.append(idx)
    if ellipsis_at is None:
        ellipsis_at = len(explicit)
    fill = (slice(None),) * (len(shape) + n_new - len(explicit))
    return tuple(explicit[:ellipsis_at]) + fill + tuple(explicit[ellipsis_at:]), \
        _NO_ZERO_DIM_BOOL_ARRAY
