"""Sparse arrays of a GPU context (their values live in host memory) at the boundary
with device memory, without a GPU: a stand-in device array that, like CuPy's, refuses
implicit conversion to NumPy and gives its values by ``.get()``. Gradients and dense
results computed in device memory must enter a sparse array through ``get``; dense
readers of a GPU sparse array (executors, dense kernels, the optimizer) must get device
memory. On a GPU, MXNet 1.9.1's test_gluon_gpu (test_embedding, test_zero_grad,
test_sparse_hybrid_block) covers the same."""
import numpy as np
import pytest

import mxnet as mx
from mxnet import backend
from mxnet.context import Context
from mxnet.ndarray import sparse as S
from mxnet.ndarray.sparse_dispatch import grad_store
from mxnet.operator import sparse_values as sv


class DeviceArray:
    """Values in 'device memory': no implicit conversion to NumPy (as CuPy)."""

    def __init__(self, a):
        self._a = np.array(a)

    shape = property(lambda self: self._a.shape)
    dtype = property(lambda self: self._a.dtype)

    def __array__(self, *args, **kwargs):
        raise TypeError("Implicit conversion to a NumPy array is not allowed")

    def get(self):
        return self._a.copy()

    def astype(self, dtype, copy=True):
        return DeviceArray(self._a.astype(dtype))


GPU = Context("gpu", 0)
DENSE = np.array([[0, 0, 0], [1, 2, 3], [0, 0, 0], [4, 0, 5]], np.float32)


def _gpu_row_sparse(dense):
    """A row_sparse array of context gpu(0), made without a GPU."""
    return S._wrap(sv.from_dense(dense, "row_sparse"), GPU)


def test_the_stand_in_refuses_implicit_conversion():
    with pytest.raises(TypeError):
        np.asarray(DeviceArray(DENSE))


def test_from_dense_takes_device_arrays():
    v = sv.from_dense(DeviceArray(DENSE), "row_sparse")
    assert v.indices.tolist() == [1, 3]
    np.testing.assert_array_equal(sv.todense(v), DENSE)


@pytest.mark.parametrize("add", [False, True])
def test_a_device_gradient_enters_a_sparse_gradient_buffer(add):
    buf = _gpu_row_sparse(np.eye(4, 3, dtype=np.float32))
    grad_store(buf, DeviceArray(DENSE), add)
    want = DENSE + (np.eye(4, 3, dtype=np.float32) if add else 0)
    np.testing.assert_array_equal(sv.todense(buf._read_value()), want)


def test_set_dense_takes_device_arrays():
    arr = _gpu_row_sparse(np.zeros((4, 3), np.float32))
    arr._set_dense(DeviceArray(DENSE))
    assert arr._read_value().indices.tolist() == [1, 3]
    np.testing.assert_array_equal(sv.todense(arr._read_value()), DENSE)


def test_dense_readers_of_a_gpu_sparse_array_get_device_memory(monkeypatch):
    monkeypatch.setattr(backend, "device_put", lambda a, ctx: DeviceArray(a))
    arr = S._wrap(sv.from_dense(DENSE, "csr"), GPU)
    d = arr._data
    assert isinstance(d, DeviceArray)
    np.testing.assert_array_equal(d.get(), DENSE)


def test_a_gpu_row_sparse_array_is_made_dense_on_the_device():
    # only the stored rows and their indices cross to the device (an Embedding's
    # gradient is a few rows of a large table); the zeros are made there
    from multi_gpu_host import emulated_gpus
    with emulated_gpus(1) as cp:
        d = _gpu_row_sparse(DENSE)._data
        assert isinstance(d, cp.ndarray) and d.device_id == 0
        np.testing.assert_array_equal(d.get(), DENSE)
        empty = _gpu_row_sparse(np.zeros((4, 3), np.float32))._data
        np.testing.assert_array_equal(empty.get(), np.zeros((4, 3)))
    # and on the CPU the dense form stays a NumPy array, without a copy to a device
    cpu = S._wrap(sv.from_dense(DENSE, "row_sparse"), mx.cpu())
    assert isinstance(cpu._data, np.ndarray)
    np.testing.assert_array_equal(cpu._data, DENSE)
