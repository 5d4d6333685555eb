"""The channels-last bias-gradient kernel (backend/channel_sum.py): its sources compile
with nvcc (skipped without it); run on the host (tests/cuda_on_host.py, skipped without
g++) with the module's own launch shape they give NumPy's column sums, for every
float16 bit pattern too; on a GPU (skipped without one) the launcher equals NumPy."""
import ctypes

import numpy as np
import pytest

import mxnet as mx
from mxnet.backend import channel_sum as S
from mxnet.base import bfloat16

from cuda_on_host import per_dtype_host_library, per_dtype_ptx


def test_sources_compile_with_nvcc(tmp_path):
    per_dtype_ptx(tmp_path, S.source, S.TYPES)


@pytest.fixture(scope="module")
def host(tmp_path_factory):
    return per_dtype_host_library(
        tmp_path_factory.mktemp("chsum"), S.source, S.TYPES,
        "const void* x, long long rows, int cols, long long per, float* out",
        "(const {t}*)x, rows, cols, per, out")


def _host_sum(lib, m, out):
    """channel_sum's launch, with the kernel run on the host."""
    rows, cols = m.shape
    gx, gy, threads, per = S.launch_shape(rows, cols)
    assert gx * threads >= cols and gy * per >= rows and gy < 65536
    fn = getattr(lib, "emu_" + S.source(m.dtype)[0])
    fn(ctypes.c_uint(gx), ctypes.c_uint(gy), ctypes.c_uint(threads),
       ctypes.c_void_p(m.ctypes.data), ctypes.c_longlong(rows), ctypes.c_int(cols),
       ctypes.c_longlong(per), out.ctypes.data_as(ctypes.POINTER(ctypes.c_float)))


@pytest.mark.parametrize("dtype", S.TYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape", [(1, 1), (5, 3), (1000, 257), (3000, 64), (17, 1030)])
def test_column_sums_equal_numpy(host, dtype, shape):
    m = np.random.RandomState(0).standard_normal(shape).astype(dtype)
    out = np.full(shape[1], 0.5, np.float32)          # the kernel adds to it
    _host_sum(host, m, out)
    want = m.astype(np.float64).sum(axis=0) + 0.5
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-4 * np.sqrt(shape[0]))


def test_every_float16_bit_pattern_reads_exactly(host):
    bits = np.arange(65536, dtype=np.uint16)
    m = bits.view(np.float16).reshape(1, -1)
    out = np.zeros(65536, np.float32)
    _host_sum(host, m, out)
    want = m.astype(np.float32)[0]
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(out), nan)
    np.testing.assert_array_equal(out[~nan], want[~nan])


@pytest.mark.skipif(bfloat16 is None, reason="no ml_dtypes")
def test_bfloat16_reads_its_top_half_bits(host):
    m = np.array([[1.5, -2.25, 3e38, 1e-39]], dtype=bfloat16)
    out = np.zeros(4, np.float32)
    _host_sum(host, m, out)
    np.testing.assert_array_equal(out, m.astype(np.float32)[0])


def test_declines_what_it_does_not_take():
    m = np.zeros((4, 3), np.float64)
    assert S.channel_sum(None, m, np.zeros(3, np.float32)) is False
    assert S.channel_sum(None, np.zeros((4, 3), np.float32).T,
                         np.zeros(4, np.float32)) is False


@pytest.mark.skipif(mx.context.num_gpus() == 0, reason="no GPU")
@pytest.mark.parametrize("dtype", S.TYPES, ids=lambda d: np.dtype(d).name)
def test_on_gpu_equals_numpy(dtype):
    cp = pytest.importorskip("cupy")
    m = np.random.RandomState(1).standard_normal((64 * 7 * 7, 256)).astype(dtype)
    out = cp.zeros(256, cp.float32)
    assert S.channel_sum(cp, cp.asarray(m), out)
    np.testing.assert_allclose(cp.asnumpy(out), m.astype(np.float64).sum(axis=0),
                               rtol=1e-4, atol=1e-2)
