"""mx.nd.from_numpy and DLPack exchange: shared memory, read-only NumPy side, copies;
DLPack capsules as MXNet 1.9.1 gives and takes them (named "dltensor", consumed once,
released when the importing array goes)."""
import ctypes
import gc
import weakref

import numpy as np
import pytest

import mxnet as mx
from mxnet.base import MXNetError


def test_from_numpy_zero_copy_shares_memory_and_locks_numpy():
    x = np.array([[1, 2], [3, 4], [5, 6]], dtype="float32")
    m = mx.nd.from_numpy(x)
    with pytest.raises(ValueError):
        x[2, 1] = 0
    m[2, 1] = 100
    assert x[2, 1] == 100
    with pytest.raises(ValueError, match="c-contiguous"):
        mx.nd.from_numpy(np.ones((3, 2)).T)


def test_from_numpy_copy_is_independent():
    x = np.arange(6, dtype="float32").reshape(2, 3)
    m = mx.nd.from_numpy(x, zero_copy=False)
    m[:] = 0
    assert x.flags.writeable and x[1, 2] == 5


def test_dlpack_roundtrip_read_and_write():
    a = mx.nd.array(np.arange(12, dtype="float32").reshape(3, 4))
    b = mx.nd.from_dlpack(a.to_dlpack_for_read())
    np.testing.assert_array_equal(b.asnumpy(), a.asnumpy())
    c = mx.nd.from_dlpack(mx.nd.to_dlpack_for_write(a))
    c[:] = 7
    assert (a.asnumpy() == 7).all()


def test_from_dlpack_of_a_numpy_array():
    x = np.arange(5, dtype="int32")
    m = mx.nd.from_dlpack(x)
    np.testing.assert_array_equal(m.asnumpy(), x)


def _is_fresh_capsule(obj):
    api = ctypes.pythonapi
    api.PyCapsule_IsValid.restype = ctypes.c_int
    api.PyCapsule_IsValid.argtypes = [ctypes.py_object, ctypes.c_char_p]
    return type(obj).__name__ == "PyCapsule" and api.PyCapsule_IsValid(obj, b"dltensor")


def test_exports_are_dltensor_capsules_consumed_once():
    # what PyTorch's / CuPy's / TensorFlow's capsule importers take, as MXNet 1.9.1 gives
    a = mx.nd.array(np.arange(6, dtype="float32").reshape(2, 3))
    for pack in (a.to_dlpack_for_read(), mx.nd.to_dlpack_for_write(a)):
        assert _is_fresh_capsule(pack)
        b = mx.nd.from_dlpack(pack)
        assert not _is_fresh_capsule(pack)          # renamed "used_dltensor"
        with pytest.raises(MXNetError, match="consumed only once"):
            mx.nd.from_dlpack(pack)
        b[1, 2] = -1                                # the same memory, writable
        assert a.asnumpy()[1, 2] == -1
        a[:] = np.arange(6, dtype="float32").reshape(2, 3)


@pytest.mark.parametrize("make", [
    lambda: np.arange(24, dtype="float64").reshape(4, 6)[1:3],    # offset
    lambda: np.arange(10, dtype="int64")[2:7],
    lambda: np.arange(6, dtype="float32").reshape(3, 1, 2)[:, :, :],
    lambda: np.array([True, False, True]),
    lambda: np.zeros((0, 3), "float32")])
def test_foreign_capsules_share_memory_and_are_released(make):
    x = make()
    want = x.copy()
    alive = weakref.ref(x.base if x.base is not None else x)
    m = mx.nd.from_dlpack(x.__dlpack__())      # NumPy's unversioned capsule
    assert m.shape == x.shape and m.dtype == x.dtype
    np.testing.assert_array_equal(m.asnumpy(), want)
    if x.size and x.dtype != np.bool_:
        m[:] = 5
        assert (x == 5).all()                  # shared, and writable (unlike
    del x, m                                   # np.from_dlpack of such a capsule)
    gc.collect()
    assert alive() is None                     # the tensor's deleter ran


def test_strided_capsules_are_refused_and_released():
    x = np.arange(24, dtype="float64").reshape(4, 6)
    alive = weakref.ref(x)
    with pytest.raises(MXNetError, match="compact"):
        mx.nd.from_dlpack(x.T.__dlpack__())
    del x
    gc.collect()
    assert alive() is None


def test_writes_reach_memory_shared_with_numpy():
    # an NDArray over shared memory is written in place, never given a new buffer
    x = np.zeros(4, "float32")
    m = mx.nd.from_numpy(x)
    m[:] = np.arange(4, dtype="float32")
    m += 1
    mx.nd.relu(m - 2, out=m)
    np.testing.assert_array_equal(x, [0, 0, 1, 2])
    a = mx.nd.zeros((2, 2))
    b = mx.nd.from_dlpack(a.to_dlpack_for_write())
    a[:] = np.ones((2, 2), "float32")           # the exporter's side too
    a *= 3
    np.testing.assert_array_equal(b.asnumpy(), np.full((2, 2), 3))


def test_c_api_from_dlpack_and_ndarray_handle():
    # the older import MXNet's test_dlpack exercises: a DLManagedTensor* through the C API
    from mxnet.base import NDArrayHandle, _LIB, check_call
    api = ctypes.pythonapi
    api.PyCapsule_GetPointer.restype = ctypes.c_void_p
    api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
    api.PyCapsule_SetName.argtypes = [ctypes.py_object, ctypes.c_char_p]
    a = mx.nd.array([[1.0, 2.0], [3.0, 4.0]])
    pack = a.to_dlpack_for_read()
    handle = NDArrayHandle()
    check_call(_LIB.MXNDArrayFromDLPack(
        ctypes.c_void_p(api.PyCapsule_GetPointer(pack, b"dltensor")), ctypes.byref(handle)))
    api.PyCapsule_SetName(pack, _USED)          # the caller took the tensor over
    z = mx.nd.NDArray(handle=handle)
    np.testing.assert_array_equal(z.asnumpy(), a.asnumpy())
    with pytest.raises(MXNetError, match="DLManagedTensor"):
        _LIB.MXNDArrayFromDLPack(None, ctypes.byref(handle))


_USED = b"used_dltensor"        # kept alive: PyCapsule_SetName keeps the pointer
