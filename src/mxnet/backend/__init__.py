"""The array layer under the operators ("mshadow"): one array module per device.

CPU arrays are NumPy arrays; GPU arrays are CuPy arrays. CuPy is imported lazily and
guarded, so ``import mxnet`` never needs CUDA and ``num_gpus()`` is 0 without it.
"""
import numpy as np

from ..base import MXNetError

__all__ = ["array_module", "gpu_count", "gpu_memory_info", "cupy_or_none", "to_numpy",
           "check_context"]

_cupy = None
_cupy_checked = False


def cupy_or_none():
    """The cupy module when it imports and sees a CUDA device, else None."""
    global _cupy, _cupy_checked
    if not _cupy_checked:
        _cupy_checked = True
        try:
            import cupy  # noqa: F401 (optional dependency)
            if cupy.cuda.runtime.getDeviceCount() > 0:
                _cupy = cupy
        except Exception:  # no cupy, no driver, or no device: CPU only
            _cupy = None
    return _cupy


def gpu_count():
    cp = cupy_or_none()
    return 0 if cp is None else cp.cuda.runtime.getDeviceCount()


def gpu_memory_info(device_id=0):
    cp = cupy_or_none()
    if cp is None:
        raise MXNetError("gpu_memory_info needs a CUDA GPU, and none is available "
                         "(install pymxnet[gpu] on a machine with CUDA)")
    with cp.cuda.Device(device_id):
        return cp.cuda.runtime.memGetInfo()


def check_context(ctx):
    """Raise a clear MXNetError when ctx names a device this machine does not have."""
    if ctx.device_typeid == 2:
        n = gpu_count()
        if n == 0:
            raise MXNetError(f"cannot use context {ctx}: no CUDA GPU is available "
                             "(CuPy with a CUDA device is required for mx.gpu())")
        if ctx.device_id >= n:
            raise MXNetError(f"cannot use context {ctx}: only {n} GPU(s) visible")


def array_module(ctx):
    """numpy for CPU contexts, cupy for GPU contexts."""
    if ctx.device_typeid == 2:
        check_context(ctx)
        return _cupy
    return np


def to_numpy(arr):
    """A host NumPy array from a NumPy or CuPy array."""
    if isinstance(arr, np.ndarray):
        return arr
    get = getattr(arr, "get", None)
    if get is not None:
        return get()
    return np.asarray(arr)
