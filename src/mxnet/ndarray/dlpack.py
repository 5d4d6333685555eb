"""DLPack capsules as MXNet 1.9.1 hands them out and takes them in.

``to_dlpack_for_read``/``_for_write`` give a real ``PyCapsule`` named ``"dltensor"``
around a ``DLManagedTensor`` (what PyTorch's ``torch.utils.dlpack.from_dlpack``,
``cupy.fromDlpack`` or TensorFlow take); ``from_dlpack`` consumes one (renames it
``"used_dltensor"``, so a second use is refused) and owns the tensor from then on: its
deleter runs when the last array over that memory is gone. A capsule of host memory
is imported here, writable, over the exporter's memory, which NumPy's own
``from_dlpack`` does not offer for an unversioned capsule (it marks the result
read-only). The C API entry ``MXNDArrayFromDLPack`` (a ``DLManagedTensor*``, the
older way of importing) is answered from the same reader.
"""
import ctypes

import numpy as np

from ..base import MXNetError, _c_out, bfloat16, emulate_c_api

__all__ = ["is_capsule", "capsule_device", "consume", "host_array", "wrap",
           "pointer_device"]

KDL_CPU, KDL_CUDA, KDL_CUDA_HOST = 1, 2, 3
# DLDataTypeCode -> NumPy kind
_KINDS = {0: "i", 1: "u", 2: "f", 5: "c", 6: "b"}
_BFLOAT = 4


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int), ("device_id", ctypes.c_int)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8),
                ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int),
                ("dtype", DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


class DLManagedTensor(ctypes.Structure):
    pass


_DELETER = ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManagedTensor))
DLManagedTensor._fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p),
                            ("deleter", _DELETER)]

_api = ctypes.pythonapi
_api.PyCapsule_IsValid.restype = ctypes.c_int
_api.PyCapsule_IsValid.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_GetPointer.restype = ctypes.c_void_p
_api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_SetName.restype = ctypes.c_int
_api.PyCapsule_SetName.argtypes = [ctypes.py_object, ctypes.c_char_p]
# PyCapsule_SetName keeps the pointer it is given: these bytes live as long as the module
_FRESH, _USED = b"dltensor", b"used_dltensor"
_api.PyCapsule_New.restype = ctypes.py_object
_api.PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]


def is_capsule(obj):
    """Whether ``obj`` is a PyCapsule (fresh or consumed), not a ``__dlpack__`` object."""
    return type(obj).__name__ == "PyCapsule"


def _pointer(capsule):
    if not _api.PyCapsule_IsValid(capsule, _FRESH):
        raise MXNetError("Invalid DLPack Tensor. DLTensor capsules can be consumed only "
                         "once.")
    return _api.PyCapsule_GetPointer(capsule, _FRESH)


def capsule_device(capsule):
    """(DLPack device type, device id) of a fresh capsule."""
    return pointer_device(_pointer(capsule))


def consume(capsule):
    """The ``DLManagedTensor*`` of a fresh capsule, which is renamed
    ``"used_dltensor"``: its destructor no longer frees the tensor, the caller owns it."""
    ptr = _pointer(capsule)
    _api.PyCapsule_SetName(capsule, _USED)
    return ptr


def wrap(ptr):
    """A fresh capsule around a DLManagedTensor* the caller owns (ownership passes to
    whoever consumes the capsule; one never consumed leaks the tensor, as a C caller's
    capsule without destructor would)."""
    return _api.PyCapsule_New(ptr, _FRESH, None)


def pointer_device(ptr):
    """(DLPack device type, device id) of a DLManagedTensor*."""
    dev = DLManagedTensor.from_address(ptr).dl_tensor.device
    return dev.device_type, dev.device_id


def _numpy_dtype(dt):
    if dt.lanes != 1:
        raise MXNetError(f"DLPack: vector types (lanes={dt.lanes}) are not supported")
    if dt.code == _BFLOAT and dt.bits == 16:
        return bfloat16
    kind = _KINDS.get(dt.code)
    if kind == "b" and dt.bits == 8:
        return np.dtype(np.bool_)
    try:
        return np.dtype(f"{kind}{dt.bits // 8}") if kind and dt.bits % 8 == 0 else None
    except TypeError:
        return None


class _Owner:
    """Holds a consumed DLManagedTensor for the NumPy arrays over its memory (their
    base) and runs its deleter when the last of them goes."""

    def __init__(self, ptr, interface=None):
        self._ptr = ptr
        if interface is not None:
            self.__array_interface__ = interface

    def release(self):
        """Run the tensor's deleter (once)."""
        ptr, self._ptr = self._ptr, None
        if ptr:
            managed = DLManagedTensor.from_address(ptr)
            if managed.deleter:
                managed.deleter(ctypes.cast(ptr, ctypes.POINTER(DLManagedTensor)))

    def __del__(self):
        self.release()


def _compact(shape, strides):
    """Whether element strides describe a C-contiguous layout (axes of length 1 may
    carry any stride, and an empty tensor any strides)."""
    if 0 in shape:
        return True
    want = 1
    for size, stride in zip(reversed(shape), reversed(strides)):
        if size != 1 and stride != want:
            return False
        want *= size
    return True


def host_array(ptr):
    """A writable NumPy array over a consumed host DLManagedTensor (``ptr``), which it
    owns (see ``_Owner``)."""
    managed = DLManagedTensor.from_address(ptr)
    t = managed.dl_tensor
    if t.device.device_type not in (KDL_CPU, KDL_CUDA_HOST):
        raise MXNetError(f"DLPack: device type {t.device.device_type} is not host memory")
    dtype = _numpy_dtype(t.dtype)
    if dtype is None:
        raise MXNetError(f"DLPack: data type code {t.dtype.code} with {t.dtype.bits} bits "
                         "has no NumPy type")
    shape = tuple(t.shape[i] for i in range(t.ndim))
    if t.strides and not _compact(shape, [t.strides[i] for i in range(t.ndim)]):
        # an NDArray's memory is one dense block (MXNet 1.9.1 refuses these too)
        _Owner(ptr).release()
        raise MXNetError("Unsupported DLPack because MXNet only support compact tensor "
                         f"now: shape {shape} with strides "
                         f"{tuple(t.strides[i] for i in range(t.ndim))} (in elements)")
    if not t.data or 0 in shape:
        # nothing to share (a null pointer is legal for an empty tensor)
        _Owner(ptr).release()
        return np.empty(shape, dtype)
    # raw bytes of the element size, viewed as the type: __array_interface__ has no
    # spelling for bfloat16
    owner = _Owner(ptr, {"version": 3, "shape": shape, "strides": None,
                         "typestr": f"|V{dtype.itemsize}",
                         "data": (t.data + t.byte_offset, False)})
    return np.asarray(owner).view(dtype)


@emulate_c_api("MXNDArrayFromDLPack")
def _c_ndarray_from_dlpack(dlpack, out):
    """``_LIB.MXNDArrayFromDLPack(DLManagedTensor*, byref(NDArrayHandle))``: an NDArray
    over the tensor, which it now owns; ``NDArray(handle=...)`` takes it."""
    from .ndarray import hand_out
    from .interop import from_managed
    ptr = dlpack.value if isinstance(dlpack, ctypes.c_void_p) else dlpack
    if not isinstance(ptr, int) or not ptr:
        raise MXNetError("MXNDArrayFromDLPack: expected a DLManagedTensor pointer, got "
                         f"{dlpack!r}")
    _c_out(out).value = hand_out(from_managed(ptr))
    return 0
