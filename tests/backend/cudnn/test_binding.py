"""The cuDNN ctypes binding without a GPU: every bound symbol exists in the library,
and descriptor calls (which need no device) agree with MXNet's own shape rules.

Runs where a libcudnn loads (the nvidia-cudnn wheel, the system's, or
MXNET_CUDNN_LIBRARY); skips otherwise.
"""
import ctypes

import numpy as np
import pytest

from mxnet.backend.cudnn import _lib as L
from mxnet.backend.cudnn import descriptors as D
from mxnet.operator.registry import get_op

try:
    LIB, PATH = L.load()
except OSError as err:          # no cuDNN on this machine
    LIB, PATH, WHY = None, None, str(err)
else:
    WHY = ""

pytestmark = pytest.mark.skipif(LIB is None, reason=f"libcudnn not loadable: {WHY[:200]}")


def test_every_bound_symbol_exists_and_version_is_recent():
    for name in L._SIGS:
        assert getattr(LIB, name) is not None
    assert LIB.cudnnGetVersion() >= 8000


def test_status_strings_come_from_the_library():
    assert LIB.cudnnGetErrorString(0) == b"CUDNN_STATUS_SUCCESS"
    with pytest.raises(L.CudnnError, match="cudnnSetTensorNdDescriptor"):
        d = D._create(LIB, "Tensor")
        dims = (ctypes.c_int * 4)(2, -3, 4, 4)
        L.check(LIB, "cudnnSetTensorNdDescriptor",
                LIB.cudnnSetTensorNdDescriptor(d, L.DATA_FLOAT, 4, dims, dims))


CONV_CASES = [
    # x shape, kernel, stride, dilate, pad, groups, num_filter
    ((2, 3, 9, 9), (3, 3), (1, 1), (1, 1), (1, 1), 1, 4),
    ((2, 4, 10, 7), (3, 2), (2, 1), (1, 1), (0, 1), 2, 6),
    ((1, 2, 11, 11), (3, 3), (2, 2), (2, 2), (2, 2), 1, 3),
    ((2, 4, 5, 6, 7), (3, 3, 3), (1, 2, 1), (1, 1, 2), (1, 0, 1), 4, 8),
    ((64, 256, 56, 56), (3, 3), (1, 1), (1, 1), (1, 1), 1, 256),
]


@pytest.mark.parametrize("xs,k,s,d,p,g,f", CONV_CASES)
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64])
def test_convolution_output_dims_match_mxnet(xs, k, s, d, p, g, f, dtype):
    op = get_op("Convolution")
    params = op.parse(dict(kernel=k, stride=s, dilate=d, pad=p, num_group=g, num_filter=f))
    _, (want,), _ = op.infer_shape(params, [xs, None, None])
    ws = (f, xs[1] // g) + k
    math = D.conv_math_type(dtype)
    conv = D.convolution(LIB, p, s, d, g, dtype, math)
    got = D.conv_output_dims(LIB, conv, D.tensor(LIB, xs, dtype), D.filter_(LIB, ws, dtype),
                             len(xs))
    assert got == want


POOL_CASES = [
    ((2, 3, 8, 8), dict(kernel=(2, 2), stride=(2, 2))),
    ((2, 3, 9, 9), dict(kernel=(3, 3), stride=(2, 2), pad=(1, 1))),
    ((2, 3, 7, 7), dict(kernel=(2, 2), stride=(2, 2))),
    ((1, 2, 6, 6, 6), dict(kernel=(2, 2, 2), stride=(2, 2, 2))),
    ((64, 64, 112, 112), dict(kernel=(3, 3), stride=(2, 2), pad=(1, 1))),
]


@pytest.mark.parametrize("xs,kw", POOL_CASES)
def test_pooling_output_dims_match_mxnet_valid_convention(xs, kw):
    op = get_op("Pooling")
    _, (want,), _ = op.infer_shape(op.parse(kw), [xs])
    nd = len(xs) - 2
    pd = D.pooling(LIB, L.POOLING_MAX, kw["kernel"], kw.get("pad", (0,) * nd),
                   kw["stride"])
    assert D.pool_output_dims(LIB, pd, D.tensor(LIB, xs, np.float32), len(xs)) == want


def test_descriptors_are_cached_per_key():
    a = D.tensor(LIB, (2, 3, 4, 5), np.float32)
    assert D.tensor(LIB, (2, 3, 4, 5), np.float32) == a
    assert D.tensor(LIB, (2, 3, 4, 5), np.float16) != a


def test_unsupported_dtype_and_sizes_are_declined():
    with pytest.raises(D.NotSupported):
        D.tensor(LIB, (2, 3, 4, 5), np.int32)
    with pytest.raises(D.NotSupported):
        D.tensor(LIB, (2, 0, 4, 5), np.float32)
    with pytest.raises(D.NotSupported):
        D.tensor(LIB, (2 ** 16, 2 ** 16, 1, 1), np.float32)


def test_batchnorm_parameter_descriptor_derives_without_a_device():
    xd = D.tensor(LIB, (4, 6, 10, 1), np.float16)
    assert D.bn_param(LIB, xd, ("test", 1)) is not None


def test_activation_descriptor():
    assert D.activation(LIB, L.ACTIVATION_RELU) is not None
