"""The GPU pieces of a bfloat16 AMP training step that do not go through float32:
the finite check of AMP's loss scaler (one device flag, no host wait per array),
elemwise add/sub/mul on bfloat16 CuPy arrays, and a bfloat16 convolution's bias
gradient (cuDNN refuses it; summed in float32). References: NumPy, float32 on the
CPU."""
import numpy as np
import pytest

import mxnet as mx
from mxnet import autograd
from mxnet.base import bfloat16

pytestmark = pytest.mark.skipif(mx.context.num_gpus() == 0, reason="no GPU")


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_multi_all_finite_on_gpu_matches_numpy(dtype):
    rng = np.random.default_rng(0)
    host = [rng.normal(size=s).astype(dtype) for s in [(3, 4), (17,), (0,), (2, 5, 7)]]
    arrays = [mx.nd.array(h, ctx=mx.gpu(0), dtype=dtype) for h in host]
    flag = mx.nd.multi_all_finite(*arrays, num_arrays=len(arrays))
    assert flag.context == mx.gpu(0) and flag.dtype == np.float32
    assert flag.asnumpy().tolist() == [1.0]
    for bad in (np.inf, -np.inf, np.nan):
        host[3][1, 2, 3] = bad
        arrays[3] = mx.nd.array(host[3], ctx=mx.gpu(0), dtype=dtype)
        got = mx.nd.multi_all_finite(*arrays, num_arrays=len(arrays)).asnumpy()
        want = float(all(np.isfinite(h).all() for h in host))
        assert got.tolist() == [want] == [0.0]


def test_multi_all_finite_keeps_a_given_output_unless_a_value_is_not_finite():
    ok = mx.nd.ones((4,), ctx=mx.gpu(0))
    out = mx.nd.array([0.5], ctx=mx.gpu(0))
    mx.nd.multi_all_finite(ok, num_arrays=1, init_output=False, out=out)
    assert out.asnumpy().tolist() == [0.5]
    bad = mx.nd.array([1.0, np.nan], ctx=mx.gpu(0))
    mx.nd.multi_all_finite(ok, bad, num_arrays=2, init_output=False, out=out)
    assert out.asnumpy().tolist() == [0.0]


def test_loss_scaler_finds_an_overflow_in_gpu_gradients():
    from mxnet.contrib.amp.loss_scaler import LossScaler
    net = mx.gluon.nn.Dense(3, in_units=4)
    net.initialize(ctx=mx.gpu(0))
    x = mx.nd.ones((2, 4), ctx=mx.gpu(0))
    with autograd.record():
        loss = net(x).sum()
    loss.backward()
    scaler = LossScaler()
    params = list(net.collect_params().values())
    assert not scaler.has_overflow(params)
    params[0].grad()[0, 0] = np.inf
    assert scaler.has_overflow(params)
    assert scaler.loss_scale == 2.0 ** 15


@pytest.mark.parametrize("name", ["elemwise_add", "elemwise_sub", "elemwise_mul"])
def test_bfloat16_elementwise_on_gpu_matches_float32_rounded(name):
    rng = np.random.default_rng(1)
    a32, b32 = (rng.normal(size=(6, 33)).astype(np.float32).astype(bfloat16)
                .astype(np.float32) for _ in range(2))
    dy32 = rng.normal(size=(6, 33)).astype(np.float32).astype(bfloat16).astype(np.float32)
    op = getattr(mx.nd, name)

    def run(ctx, dtype):
        a = mx.nd.array(a32, ctx=ctx).astype(dtype)
        b = mx.nd.array(b32, ctx=ctx).astype(dtype)
        a.attach_grad()
        b.attach_grad()
        with autograd.record():
            y = op(a, b)
        y.backward(mx.nd.array(dy32, ctx=ctx).astype(dtype))
        return [v.astype("float32").asnumpy() for v in (y, a.grad, b.grad)]

    got = run(mx.gpu(0), bfloat16)
    want = run(mx.cpu(), np.float32)
    for g, w in zip(got, want):
        # one rounding to bfloat16 of the float32 result (CuPy's bfloat16 ufuncs)
        np.testing.assert_allclose(g, w.astype(bfloat16).astype(np.float32), rtol=1e-2,
                                   atol=1e-2)


def test_bfloat16_convolution_bias_gradient_on_gpu():
    rng = np.random.default_rng(2)
    x32 = rng.normal(size=(2, 4, 9, 9)).astype(np.float32)
    w32 = (0.3 * rng.normal(size=(8, 4, 3, 3))).astype(np.float32)
    b32 = rng.normal(size=(8,)).astype(np.float32)

    def run(ctx, dtype):
        x, w, b = (mx.nd.array(v, ctx=ctx).astype(dtype) for v in (x32, w32, b32))
        for v in (x, w, b):
            v.attach_grad()
        with autograd.record():
            y = mx.nd.Convolution(x, w, b, kernel=(3, 3), pad=(1, 1), num_filter=8)
        y.backward(mx.nd.ones_like(y))
        return [v.astype("float32").asnumpy() for v in (y, x.grad, w.grad, b.grad)]

    got = run(mx.gpu(0), bfloat16)
    want = run(mx.cpu(), np.float32)
    for g, w, tol in zip(got, want, (5e-2, 5e-2, 0.3, 0.5)):
        np.testing.assert_allclose(g, w, rtol=2e-2, atol=tol)
    # the bias gradient is the count of output positions (2 * 9 * 9 = 162), exact in
    # float32 and in bfloat16
    assert got[3].tolist() == [162.0] * 8
