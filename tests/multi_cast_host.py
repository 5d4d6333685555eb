"""kernels_gpu_multi.multi_cast run on the host: its own code (grouping, overlap rule,
tables, launch shape), with NumPy arrays posing as CuPy ones (``as_device``) and the
kernels compiled for the host (tests/cuda_on_host.HostKernels standing in for
raw_kernel); for the tests of the kernels and of the executor's gathered casts
(executor/cast_gather.py) on machines without a GPU."""
import types

import numpy as np

from mxnet.operator import kernels_gpu_multi as M

from cuda_on_host import HostKernels


class _Device:
    """device 0, usable as a context manager as CuPy's Device is."""
    id = 0

    def __eq__(self, other):
        return isinstance(other, _Device)

    def __hash__(self):
        return 0

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


class DeviceView(np.ndarray):
    """A NumPy array the kernels module takes for a CuPy array on device 0 (its memory
    is the host memory the host-built kernels read and write)."""
    __module__ = "cupy_on_host"

    @property
    def device(self):
        return _Device()

    @property
    def data(self):
        return types.SimpleNamespace(ptr=self.__array_interface__["data"][0] if self.size
                                     else 0)


def as_device(a):
    """``a`` (a NumPy array, same memory) as a DeviceView."""
    return np.asarray(a).view(DeviceView)


class HostCupy:
    """The few CuPy names multi_cast uses; ``asarray`` counts the tables it copies."""
    ndarray = DeviceView

    def __init__(self):
        self.table_copies = 0

    def asarray(self, table):
        self.table_copies += 1
        return np.array(table)


def install(monkeypatch, tmp_dir):
    """Host-built kernels for kernels_gpu_multi's raw_kernel; returns a HostCupy."""
    monkeypatch.setattr(M, "raw_kernel", HostKernels(tmp_dir))
    return HostCupy()


def host_multi_cast(cp, pairs, tables=None):
    """``multi_cast`` over NumPy arrays (shown to it as device arrays)."""
    return M.multi_cast(cp, [(as_device(x), as_device(y)) for x, y in pairs], tables)


def same_values(got, want):
    """Bit for bit, except that any NaN matches any NaN (payloads may differ)."""
    g = np.asarray(got).astype(np.float32)
    w = np.asarray(want).astype(np.float32)
    nan = np.isnan(w)
    assert np.array_equal(np.isnan(g), nan)
    assert np.array_equal(g[~nan].view(np.uint32), w[~nan].view(np.uint32))
