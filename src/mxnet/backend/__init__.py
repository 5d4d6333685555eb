"""The array layer under the operators ("mshadow"): one array module per device.

CPU arrays are NumPy arrays; GPU arrays are CuPy arrays. CuPy is imported lazily and
guarded, so ``import mxnet`` never needs CUDA and ``num_gpus()`` is 0 without it.
"""
import contextlib

import numpy as np

from ..base import MXNetError
from . import copy_stream, host_to_device

__all__ = ["array_module", "gpu_count", "gpu_memory_info", "cupy_or_none", "to_numpy",
           "check_context", "device_scope", "device_put", "pinned_empty", "sync_device", "sync_all_devices",
           "release_gpu_cache", "INSTALL_HINT"]

_cupy = None
_cupy_checked = False
_cupy_import_error = None
# GPU ids that arrays were placed on: the devices ``waitall`` must synchronise.
_used_devices = set()

INSTALL_HINT = ("install CuPy and cuDNN for your CUDA: pip install 'pymxnet[gpu-cu12]' "
                "(CUDA 12) or pip install 'pymxnet[gpu-cu13]' (CUDA 13)")


def cupy_or_none():
    """The cupy module when it imports and sees a CUDA device, else None."""
    global _cupy, _cupy_checked, _cupy_import_error
    if not _cupy_checked:
        _cupy_checked = True
        try:
            import cupy  # noqa: F401 (optional dependency)
        except Exception as exc:  # noqa: BLE001  (not installed, or broken install)
            _cupy_import_error = exc
            return None
        try:
            if cupy.cuda.runtime.getDeviceCount() > 0:
                _cupy = cupy
        except Exception as exc:  # noqa: BLE001  (no driver or no device: CPU only)
            _cupy_import_error = exc
            _cupy = None
    return _cupy


def _no_gpu_reason():
    """Why mx.gpu() cannot be used here, with what to install when CuPy is missing."""
    cupy_or_none()
    if isinstance(_cupy_import_error, ImportError):
        return f"CuPy is not installed ({INSTALL_HINT})"
    if _cupy_import_error is not None:
        return (f"CuPy found no usable CUDA device ({type(_cupy_import_error).__name__}: "
                f"{_cupy_import_error}); check the NVIDIA driver, or {INSTALL_HINT}")
    return "CuPy sees no CUDA device"


def gpu_count():
    cp = cupy_or_none()
    return 0 if cp is None else cp.cuda.runtime.getDeviceCount()


def gpu_memory_info(device_id=0):
    cp = cupy_or_none()
    if cp is None:
        raise MXNetError(f"gpu_memory_info needs a CUDA GPU: {_no_gpu_reason()}")
    if not 0 <= device_id < gpu_count():
        raise MXNetError(f"gpu_memory_info: no GPU {device_id} ({gpu_count()} visible)")
    with cp.cuda.Device(device_id):
        return cp.cuda.runtime.memGetInfo()


def check_context(ctx):
    """Raise a clear MXNetError when ctx names a device this machine does not have."""
    if ctx.device_typeid == 2:
        n = gpu_count()
        if n == 0:
            raise MXNetError(f"cannot use context {ctx}: no CUDA GPU is available: "
                             f"{_no_gpu_reason()}")
        if ctx.device_id >= n:
            raise MXNetError(f"cannot use context {ctx}: only {n} GPU(s) visible")


def array_module(ctx):
    """numpy for CPU contexts, cupy for GPU contexts."""
    if ctx.device_typeid == 2:
        check_context(ctx)
        _used_devices.add(ctx.device_id)
        return _cupy
    return np


_NO_SWITCH = contextlib.nullcontext()      # stateless: one instance serves every caller


def device_scope(ctx):
    """What work for ``ctx`` runs under. CuPy allocates and launches on the calling
    thread's current device, so the work of ``gpu(k)`` needs device k current: for a
    GPU context that is not current this is CuPy's Device(k) context manager; for a
    host context, or when device k is current already, a no-op context."""
    if ctx is None or ctx.device_typeid != 2:
        return _NO_SWITCH
    cp = _cupy
    if cp is None or cp.cuda.runtime.getDevice() == ctx.device_id:
        return _NO_SWITCH
    return cp.cuda.Device(ctx.device_id)


def device_put(arr, ctx, hold_source=None):
    """A fresh array holding arr's values in ctx's memory (host or GPU ctx.device_id).

    Used for copies between devices; the caller has waited for arr's writer. A copy
    from page-locked host memory to a GPU may read ``arr`` after this returns: a
    caller that can keep later writes of ``arr`` waiting passes ``hold_source``, which
    is then called with the CUDA event that ends the read; without one, such a source
    is staged first (backend/host_to_device.py).
    """
    if ctx.device_typeid != 2:
        pinned = pinned_empty(arr.shape, arr.dtype) if ctx.device_typeid == 3 else None
        if pinned is not None:
            if isinstance(arr, np.ndarray):
                pinned[...] = arr
            else:
                arr.get(out=pinned)     # a CuPy array: straight into the pinned buffer
            return pinned
        out = to_numpy(arr)
        return out.copy() if out is arr else out
    cp = array_module(ctx)
    if isinstance(arr, cp.ndarray) and arr.device.id != ctx.device_id:
        return _copy_between_gpus(cp, arr, ctx.device_id)
    with cp.cuda.Device(ctx.device_id):
        if isinstance(arr, cp.ndarray):
            return arr.copy()
        if copy_stream.wanted(arr):            # MXNET_GPU_COPY_STREAM=1, large arrays
            return copy_stream.host_to_device(cp, arr, ctx.device_id)
        return host_to_device.copy(cp, arr, hold_source)


def _copy_between_gpus(cp, arr, dst_id):
    """arr (on another GPU) copied straight into a new array on GPU dst_id: one
    device-to-device copy (peer to peer where the GPUs allow it, else staged by the
    driver), never through NumPy.

    Kernels are queued, not finished, when the engine runs this, so the copy is ordered
    by events both ways: it waits for what the destination's stream had queued (its pool
    may hand out memory still being read there), it runs on the source's stream (after
    the writer of arr, and before the source memory can be reused), and the destination's
    stream waits for it before anything reads the result.

    Each stream call runs with its stream's device current: the default stream
    (``Stream.null``, handle 0) means the legacy stream of whichever device is current
    when it is used, and an event is recorded only on a stream of the device it was
    made on."""
    with cp.cuda.Device(dst_id):
        out = cp.empty(arr.shape, arr.dtype)
        dst_stream = cp.cuda.get_current_stream()
        dst_free = cp.cuda.Event(disable_timing=True)
        dst_free.record(dst_stream)
    with cp.cuda.Device(arr.device.id):
        src = cp.ascontiguousarray(arr)
        src_stream = cp.cuda.get_current_stream()
        src_stream.wait_event(dst_free)
        out.data.copy_from_device_async(src.data, src.nbytes, src_stream)
        copied = cp.cuda.Event(disable_timing=True)
        copied.record(src_stream)
    with cp.cuda.Device(dst_id):
        dst_stream.wait_event(copied)
    return out


def pinned_empty(shape, dtype):
    """A NumPy array in page-locked host memory (``mx.cpu_pinned()``), from CuPy's pinned
    memory pool, or None on a machine without a CUDA GPU (cpu_pinned arrays are then
    ordinary host memory, as every CPU context's). Copies between pinned memory and a
    GPU run at the bus's full rate, and asynchronously."""
    cp = cupy_or_none()
    if cp is None:
        return None
    import cupyx
    return cupyx.empty_pinned(tuple(shape), dtype=dtype)


def sync_device(device_id):
    """Block until every kernel and copy queued on GPU device_id has finished.

    CuPy launches are asynchronous: the engine marks an operation done once its
    kernels are queued, so the sync points (``wait_to_read``, ``waitall``) call this
    for the true end of the device work.
    """
    cp = _cupy
    if cp is None:
        return
    with cp.cuda.Device(device_id):
        cp.cuda.Device(device_id).synchronize()
    copy_stream.after_sync(device_id)


def sync_all_devices():
    """sync_device for every GPU an array was placed on in this process."""
    for dev in sorted(_used_devices):
        sync_device(dev)


def release_gpu_cache(device_id):
    """Give the free blocks of CuPy's memory pools back to the driver."""
    cp = _cupy
    if cp is None:
        return
    copy_stream.after_sync(device_id, wait=True)    # what the copy stream holds, back
    with cp.cuda.Device(device_id):
        cp.get_default_memory_pool().free_all_blocks()
        cp.get_default_pinned_memory_pool().free_all_blocks()


def to_numpy(arr):
    """A host NumPy array from a NumPy or CuPy array."""
    if isinstance(arr, np.ndarray):
        return arr
    get = getattr(arr, "get", None)
    if get is not None:
        return get()
    return np.asarray(arr)
