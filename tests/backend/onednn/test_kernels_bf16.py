"""The oneDNN adapters on bfloat16 arrays (convolution, inner product, pooling, batch
norm, activations) against each operator's NumPy body on float32 copies of the same
bfloat16 values: the adapter must take the call itself (not decline) and return
bfloat16 results within bfloat16's rounding."""
import numpy as np
import pytest

from mxnet.backend import onednn
from mxnet.base import bfloat16

pytestmark = pytest.mark.skipif(not onednn.available(), reason="oneDNN (libdnnl) absent")

from bf16_adapter_check import F32, check_adapter, rand_bf16  # noqa: E402
from onednn_helpers import ctx_for, params  # noqa: E402
from mxnet.operator.kernels_onednn import OPS  # noqa: E402


def _bf16(*shape, scale=1.0):
    return rand_bf16(*shape, scale=scale)


def _supported():
    """Whether this processor's oneDNN builds bfloat16 primitives (AVX-512 and newer)."""
    p = params("FullyConnected", num_hidden=16, no_bias=True)
    got = OPS["FullyConnected"][0](ctx_for(), p, [_bf16(32, 64), _bf16(16, 64)], [])
    return got is not NotImplemented


@pytest.fixture(autouse=True)
def _need_bf16_primitives():
    if not _supported():
        pytest.skip("oneDNN has no bfloat16 primitives on this processor")


def _check(name, p, inputs, aux=(), is_train=True, out_dtypes=None, grads=True):
    check_adapter(OPS, name, p, inputs, aux, is_train, out_dtypes, grads)


@pytest.mark.parametrize("no_bias", [False, True])
def test_convolution(no_bias):
    p = params("Convolution", kernel=(3, 3), pad=(1, 1), num_filter=32, no_bias=no_bias)
    ins = [_bf16(4, 16, 10, 10), _bf16(32, 16, 3, 3, scale=0.3)] + \
        ([] if no_bias else [_bf16(32)])
    _check("Convolution", p, ins)


def test_fully_connected():
    p = params("FullyConnected", num_hidden=24)
    _check("FullyConnected", p, [_bf16(8, 40), _bf16(24, 40, scale=0.3), _bf16(24)])


@pytest.mark.parametrize("kw", [dict(kernel=(2, 2), stride=(2, 2), pool_type="max"),
                                dict(kernel=(3, 3), stride=(2, 2), pad=(1, 1),
                                     pool_type="avg")])
@pytest.mark.parametrize("channels", [16, 6])      # blocked and plain layouts
def test_pooling(kw, channels):
    _check("Pooling", params("Pooling", **kw), [_bf16(2, channels, 8, 8)])


@pytest.mark.parametrize("is_train", [True, False])
def test_batchnorm_bfloat16_data_float32_parameters(is_train):
    c = 16
    p = params("BatchNorm", fix_gamma=False, momentum=0.9)
    ins = [_bf16(4, c, 6, 6, scale=2.0), np.random.rand(c).astype(np.float32) + 0.5,
           np.random.randn(c).astype(np.float32)]
    aux = [np.random.randn(c).astype(np.float32), np.random.rand(c).astype(np.float32) + 0.5]
    _check("BatchNorm", p, ins, aux, is_train=is_train,
           out_dtypes=[bfloat16, F32, F32], grads=is_train)


@pytest.mark.parametrize("act", ["relu", "sigmoid", "tanh"])
def test_activation(act):
    _check("Activation", params("Activation", act_type=act), [_bf16(4, 16, 7, 7)])


def test_relu_operator():
    _check("relu", params("relu"), [_bf16(4, 16, 7, 7)])
