"""LayerNorm's GPU kernels (operator/kernels_gpu_layernorm.py): the sources compile with
nvcc; run on the host (tests/cuda_on_host.py, through the module's own launch code) the
forward and the three gradients equal the operator body computed in float64, for
float32, float16 and bfloat16, rows longer and shorter than a block, large offsets;
they honour need_grad and given destinations, decline what the body must do, and train
through the runner and autograd; on a GPU (skipped without one) nd.LayerNorm equals the
CPU."""
import numpy as np
import pytest

import mxnet as mx
from mxnet.operator import kernels_gpu_layernorm as LN
from mxnet.operator.registry import OpContext, get_op

from cuda_on_host import (
    assert_close_in_float64, check_layer_trains_like_the_body, check_need_grad_subsets,
    kernel_tolerances, kernels_of_module_on_host, refusing_raw_kernel,
    results_on_cpu_and_gpu, sources_ptx, widened)

OP = get_op("LayerNorm")
TOL = kernel_tolerances()


def test_sources_compile_with_nvcc(tmp_path):
    sources_ptx(tmp_path, (LN.source(k, dt) for k in LN.KINDS for dt in LN.TYPES))


@pytest.fixture
def kernels_on_host(monkeypatch, host_raw_kernels):
    """The kernels run on the host, for NumPy arrays."""
    return kernels_of_module_on_host(monkeypatch, LN, host_raw_kernels)


def _params(**kw):
    return OP.params.parse("LayerNorm", kw)


def _data(rng, shape, dtype, offset=0.0):
    x = rng.standard_normal(shape) * 2 + offset
    d = shape[-1]
    gamma = rng.uniform(0.5, 1.5, d)
    beta = rng.standard_normal(d)
    return [a.astype(dtype) for a in (x, gamma, beta)]




@pytest.mark.parametrize("shape", [(3, 5), (2, 3, 40), (4, 257), (1, 1000), (6, 1), (20, 7)])
@pytest.mark.parametrize("dtype", list(LN.TYPES), ids=lambda d: np.dtype(d).name)
def test_forward_and_gradients_equal_the_body_in_float64(kernels_on_host, shape, dtype):
    rng = np.random.RandomState(shape[-1])
    x, gamma, beta = _data(rng, shape, dtype)
    p = _params(eps=1e-5)
    octx = OpContext(np, mx.cpu(), is_train=True)
    got = LN.layer_norm_forward(octx, p, [x, gamma, beta], [])
    assert got is not NotImplemented
    want = OP.forward(octx, p, widened([x, gamma, beta]), [])
    for g, w in zip(got, want):
        assert g.dtype == np.dtype(dtype) and g.shape == w.shape
        assert_close_in_float64(g, w, dtype, scale=np.abs(w).max() + 1)

    dy = rng.standard_normal(shape).astype(dtype)
    bctx = OpContext(np, mx.cpu(), is_train=True, need_grad=[True, True, True],
                     in_shapes=[shape, gamma.shape, beta.shape])
    got_b = LN.layer_norm_backward(bctx, p, [dy], [x, gamma, beta], got, [])
    # the body from the same stored statistics, in float64
    want_b = OP.backward(bctx, p, widened([dy]), widened([x, gamma, beta]), widened(got),
                         [])
    rows = x.size // shape[-1]
    for g, w in zip(got_b, want_b):
        assert g.dtype == np.dtype(dtype) and g.shape == w.shape
        # the parameter gradients are sums over the rows
        summed = 1 if g is got_b[0] else rows
        assert_close_in_float64(g, w, dtype, scale=(np.abs(w).max() + 1) * summed)


@pytest.mark.parametrize("dtype", [np.float32, np.float16], ids=lambda d: np.dtype(d).name)
def test_a_large_offset_keeps_the_statistics_accurate(kernels_on_host, dtype):
    """Two passes over each row (mean, then squared deviations): no cancellation."""
    rng = np.random.RandomState(1)
    offset = 300.0 if dtype == np.float32 else 30.0
    x, gamma, beta = _data(rng, (4, 64), dtype, offset)
    p = _params(eps=1e-5)
    octx = OpContext(np, mx.cpu(), is_train=True)
    y, mean, std = LN.layer_norm_forward(octx, p, [x, gamma, beta], [])
    xw = x.astype(np.float64)
    np.testing.assert_allclose(std[:, 0], np.sqrt(xw.var(axis=1) + 1e-5),
                               rtol=10 * TOL[np.dtype(dtype)])
    want = OP.forward(octx, p, widened([x, gamma, beta]), [])[0]
    assert_close_in_float64(y, want, dtype, scale=5 * (np.abs(want).max() + 1))


def test_need_grad_and_given_destinations(kernels_on_host):
    rng = np.random.RandomState(2)
    x, gamma, beta = _data(rng, (5, 33), np.float32)
    p = _params()
    octx = OpContext(np, mx.cpu(), is_train=True)
    outs = [np.empty((5, 33), np.float32), np.empty((5, 1), np.float32),
            np.empty((5, 1), np.float32)]
    res = LN.layer_norm_forward(octx, p, [x, gamma, beta], [], out=outs)
    assert all(r is o for r, o in zip(res, outs))
    # out= naming the visible output only (mx.nd.LayerNorm(..., out=y))
    y = np.empty((5, 33), np.float32)
    only = LN.layer_norm_forward(octx, p, [x, gamma, beta], [], out=[y])
    assert only[0] is y and len(only) == 3
    for a, b in zip(only, res):
        np.testing.assert_array_equal(a, b)
    dy = rng.standard_normal((5, 33)).astype(np.float32)
    check_need_grad_subsets(LN.layer_norm_backward, p, dy, [x, gamma, beta], res,
                            ([True, False, False], [False, True, False],
                             [False, False, True], [False, True, True]))


def test_declines_what_the_body_computes(kernels_on_host):
    rng = np.random.RandomState(3)
    x, gamma, beta = _data(rng, (4, 6), np.float32)
    octx = OpContext(np, mx.cpu(), is_train=True)
    assert LN.layer_norm_forward(octx, _params(axis=0), [x, gamma[:4], beta[:4]], []) \
        is NotImplemented                                       # not the last axis
    assert LN.layer_norm_forward(octx, _params(), widened([x, gamma, beta]), []) \
        is NotImplemented                                       # float64
    assert LN.layer_norm_forward(octx, _params(), [x.T.copy().T, gamma, beta], []) \
        is NotImplemented                                       # not C-contiguous
    assert LN.layer_norm_forward(octx, _params(), [x, gamma.astype(np.float16), beta],
                                 []) is NotImplemented          # mixed dtypes
    assert LN.layer_norm_forward(octx, _params(axis=5), [x, gamma, beta], []) \
        is NotImplemented                                       # the body's error
    # axis=-1 and axis=ndim-1 are the same call
    assert LN.layer_norm_forward(octx, _params(axis=1), [x, gamma, beta], []) \
        is not NotImplemented


def test_a_source_the_compiler_refuses_leaves_the_call_to_the_body(kernels_on_host,
                                                                    monkeypatch):
    monkeypatch.setattr(LN, "raw_kernel", refusing_raw_kernel)
    octx = OpContext(np, mx.cpu(), is_train=True)
    args = _data(np.random.RandomState(4), (2, 8), np.float32)
    with pytest.warns(RuntimeWarning, match="did not compile"):
        assert LN.layer_norm_forward(octx, _params(), args, []) is NotImplemented
    assert LN.layer_norm_forward(octx, _params(), args, []) is NotImplemented  # no retry
    monkeypatch.setenv("MXNET_GPU_LAYERNORM_KERNEL", "0")
    monkeypatch.setattr(LN, "_REFUSED", set())
    assert LN.layer_norm_forward(octx, _params(), args, []) is NotImplemented


def test_trains_through_the_runner_and_autograd(kernels_on_host, monkeypatch):
    """Registered as CPU kernels here: a Gluon LayerNorm layer's output and gradients
    (data, gamma, beta) are the operator body's."""
    rng = np.random.RandomState(5)
    xh = rng.standard_normal((3, 4, 24)).astype(np.float32)
    head = rng.standard_normal((3, 4, 24)).astype(np.float32)

    def make(data):
        layer = mx.gluon.nn.LayerNorm(in_channels=24)
        layer.initialize(mx.init.Uniform(1.0))
        layer.gamma.set_data(mx.nd.array(np.linspace(0.5, 1.5, 24)))
        layer.beta.set_data(mx.nd.array(np.linspace(-1, 1, 24)))
        return layer
    check_layer_trains_like_the_body(monkeypatch, kernels_on_host, "LayerNorm",
                                     LN.layer_norm_forward, LN.layer_norm_backward, make,
                                     xh, head, 1e-5)


def test_launch_shapes():
    assert [LN.row_threads(d) for d in (1, 100, 128, 129, 768, 100000)] == \
        [32, 32, 32, 64, 256, 256]
    gx, slices, per = LN.param_slices(16384, 768)
    assert gx == 3 and slices * per >= 16384 and (slices - 1) * per < 16384
    assert LN.param_slices(5, 10) == (1, 1, 8)


@pytest.mark.skipif(mx.context.num_gpus() == 0, reason="needs a CUDA GPU")
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_gpu_layer_norm_equals_the_cpu(dtype):
    rng = np.random.RandomState(6)
    xh = rng.standard_normal((8, 16, 768)).astype(dtype)
    gh = rng.uniform(0.5, 1.5, 768).astype(dtype)
    bh = rng.standard_normal(768).astype(dtype)
    head = rng.standard_normal(xh.shape).astype(dtype)
    res = results_on_cpu_and_gpu(lambda *a: mx.nd.LayerNorm(*a, axis=-1, eps=1e-5),
                                 (xh, gh, bh), head, dtype)
    tol = TOL[np.dtype(dtype)]
    for a, b, rows in zip(res["cpu"], res["gpu"], (1, 1, 128, 128)):
        np.testing.assert_allclose(b.astype(np.float64), a.astype(np.float64),
                                   rtol=10 * tol, atol=10 * tol * rows)
