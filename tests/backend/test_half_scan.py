"""The float16 cumulative-sum kernel (backend/half_scan.py): its source compiles with
nvcc (skipped without it); run on the host through the module's own launch code
(tests/cuda_on_host.py, skipped without g++) it equals NumPy's float16 cumsum bit for
bit - each partial sum rounded to float16 in order - along every axis, for strided
inputs and outputs, and through infinities, NaN and subnormals."""
import numpy as np
import pytest

from mxnet.backend import half_scan as H

from cuda_on_host import compile_ptx


def test_source_compiles_with_nvcc(tmp_path):
    compile_ptx(tmp_path, H.source()[1])


@pytest.fixture
def on_host(monkeypatch, host_raw_kernels):
    monkeypatch.setattr(H, "raw_kernel", host_raw_kernels)
    return host_raw_kernels


def _same_bits(got, want):
    assert got.dtype == want.dtype == np.float16 and got.shape == want.shape
    np.testing.assert_array_equal(got.view(np.uint16), want.view(np.uint16))


@pytest.mark.parametrize("shape,axis", [((1,), 0), ((300,), 0), ((4, 3, 40), 0),
                                        ((4, 3, 40), 1), ((4, 3, 40), 2), ((2, 0, 5), 2),
                                        ((7, 1), 1)])
def test_equals_numpy_bit_for_bit(on_host, shape, axis):
    x = (np.random.RandomState(3).standard_normal(shape) * 4).astype(np.float16)
    out = np.full(shape, np.nan, np.float16)
    H.cumsum_half(np, x, axis, out)
    _same_bits(out, np.cumsum(x, axis=axis, dtype=np.float16))


def test_strided_input_and_output(on_host):
    base = np.random.RandomState(4).standard_normal((6, 50)).astype(np.float16)
    x = base.T                                  # not C-contiguous
    out = np.zeros((100, 6), np.float16)[::2]   # nor is this
    H.cumsum_half(np, x, 0, out)
    _same_bits(out, np.cumsum(x, axis=0, dtype=np.float16))


def test_special_values(on_host):
    tiny = np.float16(2.0 ** -24)               # the smallest subnormal
    x = np.array([tiny, tiny, 65504, 65504, -np.inf, 1, np.nan, 2], np.float16)
    out = np.empty_like(x)
    H.cumsum_half(np, x, 0, out)
    _same_bits(out, np.cumsum(x, dtype=np.float16))
