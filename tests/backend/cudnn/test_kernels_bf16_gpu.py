"""bfloat16 on the GPU: the cuDNN adapters that take bfloat16 (convolution, pooling,
batch norm with float32 statistics) against the NumPy bodies on float32 copies of the
same values, and operators without a bfloat16 kernel (computed in float32 by the
runner) through mx.nd and autograd against the CPU. Skips without a GPU, CuPy with
bfloat16 (CuPy 14 + ml_dtypes) or cuDNN."""
import numpy as np
import pytest

import mxnet as mx
from mxnet.base import bfloat16
from mxnet.operator.registry import OpContext, get_op

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

GPU = mx.gpu(0)
F32 = np.dtype(np.float32)


def _ctx(xp, is_train=True, need=None, shapes=None):
    return OpContext(xp, GPU if xp is cp else mx.cpu(), is_train=is_train, need_grad=need,
                     in_shapes=shapes, req=None if need is None else ["write"] * len(need))


def _host32(a):
    a = cp.asnumpy(a) if isinstance(a, cp.ndarray) else a
    return a.astype(np.float32) if a.dtype == bfloat16 else a


def _close(got, want, what, rel=2e-2):
    got, want = _host32(got).astype(np.float64), _host32(want).astype(np.float64)
    assert got.shape == want.shape, what
    scale = max(np.abs(want).max(), 1e-3)
    np.testing.assert_allclose(got, want, atol=rel * scale, rtol=0, err_msg=what)


def _check(name, kw, inputs, aux=(), out_dtypes=None, grads=True):
    op = get_op(name)
    p = op.parse(kw)
    fwd, bwd = OPS[name]
    shapes = [a.shape for a in inputs]
    aux_ref = [a.copy() for a in aux]
    aux_gpu = [cp.asarray(a) for a in aux]
    want = op.forward(_ctx(np), p, [_host32(a) for a in inputs], aux_ref)
    got = fwd(_ctx(cp), p, [cp.asarray(a) for a in inputs], aux_gpu)
    assert got is not NotImplemented, f"{name}: cuDNN declined bfloat16"
    for k, (g, w) in enumerate(zip(got, want)):
        t = (out_dtypes or [bfloat16] * len(got))[k]
        assert g.dtype == t, f"{name} output {k}: {g.dtype}"
        _close(g, w, f"{name} output {k}")
    for k, (g, w) in enumerate(zip(aux_gpu, aux_ref)):
        _close(g, w, f"{name} aux {k}")
    if not grads:
        return
    dy = [np.random.randn(*g.shape).astype(g.dtype) for g in got]
    need = [True] * len(inputs)
    w_grads = op.backward(_ctx(np, True, need, shapes), p, [_host32(d) for d in dy],
                          [_host32(a) for a in inputs], [_host32(g) for g in got], aux_ref)
    g_grads = bwd(_ctx(cp, True, need, shapes), p, [cp.asarray(d) for d in dy],
                  [cp.asarray(a) for a in inputs], list(got), aux_gpu)
    assert g_grads is not NotImplemented, f"{name} backward declined bfloat16"
    for k, (g, w, x) in enumerate(zip(g_grads, w_grads, inputs)):
        if g is not None:
            assert g.dtype == x.dtype, f"{name} gradient {k}: {g.dtype}"
            _close(g, w, f"{name} gradient {k}", rel=4e-2)


def _bf16(*shape, scale=1.0):
    return (np.random.randn(*shape) * scale).astype(bfloat16)


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
