"""``mx.np._internal`` (MXNet's ``mxnet.ndarray.numpy._internal``): the NumPy-mode
internal functions, each MXNet ``_npi_<name>`` operator under ``<name>``.

The boolean-mask assignments are front ends over mx.np's indexed assignment (the
``_npi_boolean_mask_assign_*`` operators' job); any other name is the registered
``_npi_<name>`` operator, returning mx.np arrays.
"""
from .. import ndarray as _nd
from ..base import MXNetError
from ..ndarray.ndarray import NDArray
from .multiarray import wrap

__all__ = ["boolean_mask_assign_scalar", "boolean_mask_assign_tensor"]


def _mask_assign(data, mask, value, start_axis, out):
    if not isinstance(mask, NDArray) or mask.dtype.kind != "b":
        raise MXNetError("boolean_mask_assign: mask must be a bool mx.np array")
    if not 0 <= int(start_axis) <= data.ndim - mask.ndim:
        raise MXNetError(f"boolean_mask_assign: start_axis={start_axis} does not fit a "
                         f"mask of shape {mask.shape} into data of shape {data.shape}")
    if mask.shape != data.shape[int(start_axis):int(start_axis) + mask.ndim]:
        raise MXNetError(f"boolean_mask_assign: mask shape {mask.shape} does not match "
                         f"data shape {data.shape} at axis {start_axis}")
    target = data if out is None else out
    if target is not data:
        target[...] = data
    target[(slice(None),) * int(start_axis) + (mask,)] = value
    return wrap(target)


def boolean_mask_assign_scalar(data, mask, value, start_axis=0, out=None):
    """data with the positions mask selects (mask covering axes start_axis...) set to
    the number value; written into out (``out=data``: in place)."""
    return _mask_assign(data, mask, float(value), start_axis, out)


def boolean_mask_assign_tensor(data, mask, value, start_axis=0, out=None):
    """data with the positions mask selects set from the array value (one row per
    selected position, or broadcast); written into out (``out=data``: in place)."""
    return _mask_assign(data, mask, value, start_axis, out)


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    fn = getattr(_nd._internal, "_npi_" + name, None)
    if fn is None:
        raise AttributeError(f"module 'mxnet.numpy._internal' has no attribute {name!r} "
                             f"(no operator _npi_{name})")

    def call(*args, **kwargs):
        res = fn(*args, **kwargs)
        return [wrap(r) for r in res] if isinstance(res, (list, tuple)) else wrap(res)
    call.__name__ = name
    return call
