"""bfloat16 on the GPU: the cuDNN adapters that take bfloat16 (convolution, pooling,
batch norm with float32 statistics, activations) against the NumPy bodies on float32 copies of the
same values, and operators without a bfloat16 kernel (computed in float32 by the
runner) through mx.nd and autograd against the CPU. Skips without a GPU, CuPy with
bfloat16 (CuPy 14 + ml_dtypes) or cuDNN."""
import numpy as np
import pytest

import mxnet as mx
from mxnet.base import bfloat16
from mxnet.operator.registry import get_op

if mx.context.num_gpus() == 0:
    pytest.skip("no GPU", allow_module_level=True)
cp = pytest.importorskip("cupy")
try:
    cp.zeros(1, bfloat16)
except Exception as err:   # CuPy before 14, or without ml_dtypes
    pytest.skip(f"CuPy has no bfloat16: {err}", allow_module_level=True)
from mxnet.backend import cudnn  # noqa: E402

if not cudnn.available():
    pytest.skip(f"cuDNN unavailable: {cudnn.load_error()}", allow_module_level=True)
from mxnet.operator.kernels_cudnn import OPS  # noqa: E402

from bf16_adapter_check import F32, check_adapter, rand_bf16 as _bf16  # noqa: E402

GPU = mx.gpu(0)


def _check(name, kw, inputs, aux=(), out_dtypes=None, grads=True):
    check_adapter(OPS, name, get_op(name).parse(kw), inputs, aux, True, out_dtypes, grads,
                  xp=cp, device=GPU, to_device=cp.asarray)


def test_convolution():
    _check("Convolution", dict(kernel=(3, 3), pad=(1, 1), num_filter=32),
           [_bf16(4, 16, 10, 10), _bf16(32, 16, 3, 3, scale=0.3), _bf16(32)])


@pytest.mark.parametrize("kw", [dict(kernel=(2, 2), stride=(2, 2), pool_type="max"),
                                dict(kernel=(2, 2), stride=(2, 2), pool_type="avg")])
def test_pooling(kw):
    _check("Pooling", kw, [_bf16(2, 16, 8, 8)])


def test_batchnorm_float32_statistics():
    c = 16
    ins = [_bf16(4, c, 6, 6, scale=2.0), np.random.rand(c).astype(np.float32) + 0.5,
           np.random.randn(c).astype(np.float32)]
    aux = [np.random.randn(c).astype(np.float32), np.random.rand(c).astype(np.float32) + 0.5]
    _check("BatchNorm", dict(fix_gamma=False), ins, aux, out_dtypes=[bfloat16, F32, F32])


@pytest.mark.parametrize("act", ["relu", "sigmoid", "tanh"])
def test_activation(act):
    _check("Activation", dict(act_type=act), [_bf16(4, 16, 7, 7)])


def test_nd_and_autograd_match_the_cpu():
    """Convolution (cuDNN bfloat16), relu and a sum (computed in float32 by the runner)
    under autograd on the GPU give what the CPU gives."""
    rng = np.random.RandomState(0)
    x = rng.randn(2, 4, 8, 8).astype(bfloat16)
    w = (rng.randn(8, 4, 3, 3) * 0.3).astype(bfloat16)
    res = {}
    for ctx in (mx.cpu(), GPU):
        xs, ws = mx.nd.array(x, ctx=ctx, dtype=bfloat16), mx.nd.array(w, ctx=ctx, dtype=bfloat16)
        ws.attach_grad()
        with mx.autograd.record():
            y = mx.nd.relu(mx.nd.Convolution(xs, ws, kernel=(3, 3), num_filter=8,
                                             no_bias=True))
            loss = (y * y).sum()
        loss.backward()
        assert y.dtype == bfloat16 and ws.grad.dtype == bfloat16
        res[ctx.device_type] = (y.asnumpy().astype(np.float32),
                                ws.grad.asnumpy().astype(np.float32))
    for a, b in zip(res["gpu"], res["cpu"]):
        np.testing.assert_allclose(a, b, rtol=3e-2, atol=3e-2 * np.abs(b).max())
