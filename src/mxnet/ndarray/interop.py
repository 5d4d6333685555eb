"""Sharing memory with other array libraries: ``mx.nd.from_numpy`` and DLPack
(``to_dlpack_for_read`` / ``to_dlpack_for_write`` / ``from_dlpack``), as in MXNet 1.9.1."""
import numpy as np

from ..base import MXNetError
from ..context import Context, cpu
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
    return from_data(shared, cpu())


class _Capsule:
    """A DLPack capsule with the ``__dlpack__`` protocol NumPy/CuPy's from_dlpack want."""

    def __init__(self, capsule, device, array=None):
        self._capsule, self._device = capsule, device
        self._array = array      # the exporting array, when it is one of ours

    def __dlpack__(self, stream=None, **kwargs):
        return self._capsule

    def __dlpack_device__(self):
        return self._device


def _to_dlpack(data, wait):
    if not isinstance(data, NDArray):
        raise TypeError(f"expected an NDArray, got {type(data).__name__}")
    wait()
    raw = data._data
    device = raw.__dlpack_device__()
    return _Capsule(raw.__dlpack__(), device, raw)


def to_dlpack_for_read(data):
    """A DLPack capsule of data's memory, after its pending writes (for readers)."""
    return _to_dlpack(data, data.wait_to_read)


def to_dlpack_for_write(data):
    """A DLPack capsule of data's memory, after all its pending work (for writers)."""
    return _to_dlpack(data, data.wait_to_write)


def from_dlpack(dlpack):
    """An NDArray sharing the memory a DLPack capsule (or __dlpack__ object) describes."""
    source = dlpack if hasattr(dlpack, "__dlpack__") else _Capsule(dlpack, (1, 0))
    dev_type, dev_id = source.__dlpack_device__()
    if getattr(source, "_array", None) is not None:
        # exported by pymxnet: share the very array (NumPy imports DLPack read-only)
        ctx = cpu() if dev_type == 1 else Context("gpu", dev_id)
        return from_data(source._array, ctx)
    if dev_type == 1:
        return from_data(np.from_dlpack(source), cpu())
    if dev_type == 2:
        import cupy
        return from_data(cupy.from_dlpack(source), Context("gpu", dev_id))
    raise MXNetError(f"from_dlpack: DLPack device type {dev_type} is not supported")
