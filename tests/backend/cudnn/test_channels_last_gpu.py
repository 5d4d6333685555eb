"""The channels-last GPU layout (executor/layout.py) on a real GPU: a bound executor
and a hybridized Gluon network give the same outputs, gradients and moving statistics
with the layout on and off, cuDNN and the NHWC batch-norm kernels take every
channels-last call (no adapter falls back with a warning), and the layout is really used. Skips without a GPU, CuPy or cuDNN."""
import warnings

import numpy as np
import pytest

import mxnet as mx

from bound_runs import assert_same_runs, bind_random, small_resnet, train_steps

if mx.context.num_gpus() == 0:
    pytest.skip("no GPU", allow_module_level=True)
cp = pytest.importorskip("cupy")
from mxnet.backend import cudnn  # noqa: E402

if not cudnn.available():
    pytest.skip(f"cuDNN unavailable: {cudnn.load_error()}", allow_module_level=True)

GPU = mx.gpu(0)


@pytest.fixture(autouse=True)
def _strict_fp32(monkeypatch):
    """float32 tolerances: convolutions in strict fp32 on both sides; the adapters'
    once-per-process fallback warnings fresh, so a fallback here is seen."""
    monkeypatch.setenv("NVIDIA_TF32_OVERRIDE", "0")
    from mxnet.operator import kernels_cudnn
    monkeypatch.setattr(kernels_cudnn, "_WARNED", set())


def _run(monkeypatch, on, grad_req="write"):
    monkeypatch.setenv("MXNET_CUDNN_CHANNELS_LAST", "1" if on else "0")
    ex = bind_random(small_resnet(32, 10), GPU, (8, 3, 16, 16), grad_req, classes=10)
    with warnings.catch_warnings():
        warnings.filterwarnings("error", ".*fell back", RuntimeWarning)  # no fallback
        return ex, train_steps(ex)


@pytest.mark.parametrize("grad_req", ["write", "add"])
def test_executor_with_and_without_channels_last(monkeypatch, grad_req):
    ex_on, on = _run(monkeypatch, True, grad_req)
    ex_off, off = _run(monkeypatch, False, grad_req)
    assert ex_on._blocked and not ex_off._blocked
    assert_same_runs(on, off, rtol=1e-3, atol=1e-4)


def _gluon_step(monkeypatch, on, amp_dtype=None):
    monkeypatch.setenv("MXNET_CUDNN_CHANNELS_LAST", "1" if on else "0")
    mx.random.seed(0)
    net = mx.gluon.nn.HybridSequential()
    net.add(mx.gluon.nn.Conv2D(32, 3, padding=1), mx.gluon.nn.BatchNorm(),
            mx.gluon.nn.Activation("relu"), mx.gluon.nn.Conv2D(32, 3, padding=1),
            mx.gluon.nn.BatchNorm(), mx.gluon.nn.Activation("relu"),
            mx.gluon.nn.MaxPool2D(2), mx.gluon.nn.GlobalAvgPool2D(), mx.gluon.nn.Dense(10))
    net.initialize(mx.init.Xavier(), ctx=GPU)
    if amp_dtype is not None:
        net.cast(amp_dtype)
    net.hybridize(static_alloc=True, static_shape=True)
    x = mx.nd.array(np.random.RandomState(1).standard_normal((8, 3, 16, 16)), ctx=GPU,
                    dtype=amp_dtype or np.float32)
    with warnings.catch_warnings():
        warnings.filterwarnings("error", ".*fell back", RuntimeWarning)
        with mx.autograd.record():
            y = net(x)
        y.backward()
    # the gradients in parameter order (the two networks' names differ by a counter)
    params = [p for p in net.collect_params().values() if p.grad_req != "null"]
    return y.asnumpy().astype(np.float32), [
        (p.name, p.grad(GPU).asnumpy().astype(np.float32)) for p in params]


@pytest.mark.parametrize("dtype", [None, "float16"])
def test_hybridized_gluon_with_and_without_channels_last(monkeypatch, dtype):
    y_on, g_on = _gluon_step(monkeypatch, True, dtype)
    y_off, g_off = _gluon_step(monkeypatch, False, dtype)
    tol = 1e-3 if dtype is None else 3e-2
    np.testing.assert_allclose(y_on, y_off, rtol=tol, atol=tol)
    assert len(g_on) == len(g_off) == 10
    for (name, on), (_, off) in zip(g_on, g_off):
        assert on.shape == off.shape, name
        scale = max(1.0, float(np.abs(off).max()))
        np.testing.assert_allclose(on, off, rtol=tol, atol=tol * scale, err_msg=name)
