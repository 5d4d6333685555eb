"""Sharing memory with other array libraries: ``mx.nd.from_numpy`` and DLPack
(``to_dlpack_for_read`` / ``to_dlpack_for_write`` / ``from_dlpack``), as in MXNet 1.9.1."""
import numpy as np

from ..base import MXNetError
from ..context import Context, cpu
from . import dlpack as _dl
from .ndarray import NDArray, from_data

__all__ = ["from_numpy", "to_dlpack_for_read", "to_dlpack_for_write", "from_dlpack"]


def from_numpy(ndarray, zero_copy=True):
    """An NDArray holding a NumPy array's data.

    With zero_copy the NDArray uses the NumPy array's memory (which must be
    C-contiguous, else ValueError) and the NumPy array becomes read-only, so that only
    MXNet writes to it; otherwise the data is copied.
    """
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"from_numpy expects a numpy.ndarray, got {type(ndarray).__name__}")
    if not zero_copy:
        return from_data(np.array(ndarray, copy=True, order="C"), cpu())
    if not ndarray.flags["C_CONTIGUOUS"]:
        raise ValueError("Only c-contiguous arrays are supported for zero-copy")
    owner = ndarray if ndarray.base is None else None
    if owner is not None and not owner.flags.writeable:
        owner.flags.writeable = True     # (already shared once: it owns its memory)
    shared = ndarray.view()              # stays writable for MXNet ...
    ndarray.flags.writeable = False      # ... while the NumPy side becomes read-only
    return _exported(from_data(shared, cpu()))


def _exported(arr):
    """arr, its memory marked as shared with another library (Chunk.exported)."""
    arr._chunk.exported = True
    return arr


class _Capsule:
    """A DLPack capsule with the ``__dlpack__`` protocol CuPy's from_dlpack wants."""

    def __init__(self, capsule, device):
        self._capsule, self._device = capsule, device

    def __dlpack__(self, stream=None, **kwargs):
        return self._capsule

    def __dlpack_device__(self):
        return self._device


def _to_dlpack(data, wait):
    if not isinstance(data, NDArray):
        raise TypeError(f"expected an NDArray, got {type(data).__name__}")
    wait()
    capsule = data._data.__dlpack__()
    _exported(data)
    return capsule


def to_dlpack_for_read(data):
    """A DLPack capsule (a PyCapsule named "dltensor") of data's memory, after its
    pending writes (for readers)."""
    return _to_dlpack(data, data.wait_to_read)


def to_dlpack_for_write(data):
    """A DLPack capsule (a PyCapsule named "dltensor") of data's memory, after all its
    pending work (for writers)."""
    return _to_dlpack(data, data.wait_to_write)


def _from_gpu(source, dev_id):
    """An NDArray on GPU ``dev_id`` over the device memory a ``__dlpack__`` source
    describes, imported by CuPy."""
    import cupy
    return _exported(from_data(cupy.from_dlpack(source), Context("gpu", dev_id)))


def from_managed(ptr):
    """An NDArray over a DLManagedTensor* it takes ownership of."""
    dev_type, dev_id = _dl.pointer_device(ptr)
    if dev_type in (_dl.KDL_CPU, _dl.KDL_CUDA_HOST):
        return _exported(from_data(_dl.host_array(ptr), cpu()))
    if dev_type == _dl.KDL_CUDA:
        return _from_gpu(_Capsule(_dl.wrap(ptr), (dev_type, dev_id)), dev_id)
    raise MXNetError(f"from_dlpack: DLPack device type {dev_type} is not supported")


def from_dlpack(dlpack):
    """An NDArray sharing the memory a DLPack capsule describes; the capsule is consumed
    (renamed "used_dltensor"; using it again is an error). Objects with ``__dlpack__``
    (NumPy, CuPy, PyTorch arrays) are taken too."""
    if _dl.is_capsule(dlpack):
        dev_type, dev_id = _dl.capsule_device(dlpack)
        if dev_type == _dl.KDL_CUDA:        # CuPy consumes it
            return _from_gpu(_Capsule(dlpack, (dev_type, dev_id)), dev_id)
        return from_managed(_dl.consume(dlpack))
    if not hasattr(dlpack, "__dlpack__"):
        raise TypeError("from_dlpack expects a DLPack capsule or an object with "
                        f"__dlpack__, got {type(dlpack).__name__}")
    dev_type, dev_id = dlpack.__dlpack_device__()
    if dev_type in (_dl.KDL_CPU, _dl.KDL_CUDA_HOST):
        return _exported(from_data(np.from_dlpack(dlpack), cpu()))
    if dev_type == _dl.KDL_CUDA:
        return _from_gpu(dlpack, dev_id)
    raise MXNetError(f"from_dlpack: DLPack device type {dev_type} is not supported")
