"""BatchNorm's channels-last kernels (backend/bn_channels_last.py): the sources compile
with nvcc (skipped without it); run on the host through the module's own launchers
(tests/cuda_on_host.HostKernels in place of raw_kernel, conftest's bn_kernels_on_host; skipped without g++) they give
MXNet's CPU BatchNorm (float32) and the float64 formulas (float16, bfloat16): batch
statistics, the moving-statistics rule, inference, gradients; float32 to float16
rounding equals NumPy's for every kind of value; on a GPU (skipped without one) the
launchers equal NumPy too."""
import ctypes
import types

import numpy as np
import pytest

import mxnet as mx
from mxnet.backend import bn_channels_last as B
from mxnet.backend.cuda_kernels import BITS_SOURCE
from mxnet.base import bfloat16

from cuda_on_host import build, compile_ptx, translation_unit

NP_CUPY = types.SimpleNamespace(zeros=np.zeros, empty=np.empty)
DTYPES = [np.dtype(d) for d in B.TYPES]
TOL = {np.dtype(np.float32): 1e-5, np.dtype(np.float16): 2e-3}
if bfloat16 is not None:
    TOL[np.dtype(bfloat16)] = 1.6e-2


def _all_sources():
    out = [B.source(k, d)[1] for k in B.KINDS for d in DTYPES]
    return out + [B.source(k)[1] for k in B.FLOAT_KINDS]


def test_sources_compile_with_nvcc(tmp_path):
    ptx = compile_ptx(tmp_path, translation_unit(_all_sources()))
    for k in B.KINDS:
        for d in DTYPES:
            assert B.source(k, d)[0] in ptx
    for k in B.FLOAT_KINDS:
        assert B.source(k)[0] in ptx


@pytest.fixture
def on_host(bn_kernels_on_host):
    return bn_kernels_on_host


def _nhwc(a):
    """A logical (N, C, H, W) view of NHWC-packed memory holding ``a``'s values."""
    return np.ascontiguousarray(a.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)


def _data(shape, dtype, seed=0, loc=0.0):
    rng = np.random.RandomState(seed)
    return _nhwc((rng.standard_normal(shape) * 1.5 + loc).astype(dtype))


def _vec(c, seed, lo=0.5):
    return (np.random.RandomState(seed).uniform(lo, 1.5, c)).astype(np.float32)


SHAPES = [(2, 8, 3, 5), (4, 64, 7, 7), (8, 16, 20, 20), (3, 6, 1, 9), (1, 2, 1, 1)]


def _reference_forward(x, gamma, beta, eps):
    x64 = x.astype(np.float64)
    mean, var = x64.mean(axis=(0, 2, 3)), x64.var(axis=(0, 2, 3))
    inv = 1 / np.sqrt(var + eps)
    y = (x64 - mean[:, None, None]) * (inv * gamma)[:, None, None] + beta[:, None, None]
    return y, mean, var, inv


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("shape", SHAPES)
def test_training_forward_equals_the_formulas(on_host, dtype, shape):
    c = shape[1]
    x, gamma, beta = _data(shape, dtype), _vec(c, 1), _vec(c, 2, -1)
    y = _nhwc(np.zeros(shape, dtype))
    mean, invstd = np.zeros(c, np.float32), np.zeros(c, np.float32)
    mm, mv = _vec(c, 3), _vec(c, 4)
    mm0, mv0 = mm.copy(), mv.copy()
    assert B.forward_training(NP_CUPY, x, y, gamma, beta, 1e-3, mean, invstd,
                              (mm, mv, 0.9))
    want, wmean, wvar, winv = _reference_forward(x, gamma, beta, 1e-3)
    np.testing.assert_allclose(mean, wmean, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(invstd, winv, rtol=1e-4)
    tol = TOL[dtype]
    np.testing.assert_allclose(y.astype(np.float64), want, rtol=tol, atol=tol * 4)
    np.testing.assert_allclose(mm, 0.9 * mm0 + 0.1 * wmean, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(mv, 0.9 * mv0 + 0.1 * wvar, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_relu_fused_into_the_normalize_pass(on_host, dtype):
    shape, c = (3, 8, 4, 5), 8
    x, gamma, beta = _data(shape, dtype), _vec(c, 1), _vec(c, 2, -1)
    y, y_relu = _nhwc(np.zeros(shape, dtype)), _nhwc(np.zeros(shape, dtype))
    stats = [np.zeros(c, np.float32) for _ in range(4)]
    assert B.forward_training(NP_CUPY, x, y, gamma, beta, 1e-3, *stats[:2])
    assert B.forward_training(NP_CUPY, x, y_relu, gamma, beta, 1e-3, *stats[2:],
                              relu=True)
    assert (y < 0).any()
    np.testing.assert_array_equal(y_relu, np.maximum(y, 0).astype(dtype))
    np.testing.assert_array_equal(stats[0], stats[2])
    # inference, and MXNet's relu on NaN (maximum(NaN, 0) is NaN)
    x = np.array(x)
    x[0, 1, 0, 0] = np.nan
    x = _nhwc(x)
    mm, mv = _vec(c, 3, -1), _vec(c, 4)
    y = _nhwc(np.zeros(shape, dtype))
    assert B.forward_inference(NP_CUPY, x, y, gamma, beta, mm, mv, 1e-3, *stats[:2],
                               relu=True)
    want = mx.nd.relu(mx.nd.BatchNorm(*[mx.nd.array(a.astype(np.float32))
                                        for a in (x, gamma, beta, mm, mv)],
                                      fix_gamma=False, eps=1e-3)).asnumpy()
    got = y.astype(np.float32)
    assert np.isnan(got[0, 1, 0, 0]) and np.isnan(want[0, 1, 0, 0])
    tol = TOL[dtype]
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * 4)


def test_float32_equals_mxnet_cpu_batchnorm_with_gradients(on_host):
    shape, c, eps = (4, 16, 5, 6), 16, 1e-3
    x, gamma, beta = _data(shape, np.float32), _vec(c, 1), _vec(c, 2, -1)
    dy = _data(shape, np.float32, seed=5)
    nds = [mx.nd.array(a) for a in (x, gamma, beta)]
    for a in nds:
        a.attach_grad()
    rm, rv = mx.nd.zeros(c), mx.nd.ones(c)
    with mx.autograd.record():
        out = mx.nd.BatchNorm(*nds, rm, rv, fix_gamma=False, eps=eps, momentum=0.9)
    out.backward(mx.nd.array(dy))
    y = _nhwc(np.zeros(shape, np.float32))
    mean, invstd = np.zeros(c, np.float32), np.zeros(c, np.float32)
    mm, mv = np.zeros(c, np.float32), np.ones(c, np.float32)
    assert B.forward_training(NP_CUPY, x, y, gamma, beta, eps, mean, invstd,
                              (mm, mv, 0.9))
    np.testing.assert_allclose(y, out.asnumpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(mm, rm.asnumpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(mv, rv.asnumpy(), rtol=1e-5, atol=1e-6)
    dx = _nhwc(np.zeros(shape, np.float32))
    dg, db = np.full(c, np.nan, np.float32), np.full(c, np.nan, np.float32)
    assert B.backward(NP_CUPY, x, dy, dx, gamma, mean, invstd, dg, db)
    np.testing.assert_allclose(dx, nds[0].grad.asnumpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(dg, nds[1].grad.asnumpy(), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(db, nds[2].grad.asnumpy(), rtol=1e-5, atol=1e-4)


def test_a_large_mean_keeps_the_variance(on_host):
    """Shifted sums: a mean 1000x the spread leaves float32 E[x^2] - E[x]^2 nothing."""
    shape = (8, 4, 16, 16)
    x = _data(shape, np.float32, loc=3000.0)
    y = _nhwc(np.zeros(shape, np.float32))
    mean, invstd = np.zeros(4, np.float32), np.zeros(4, np.float32)
    ones, zeros = np.ones(4, np.float32), np.zeros(4, np.float32)
    assert B.forward_training(NP_CUPY, x, y, ones, zeros, 1e-5, mean, invstd)
    _, wmean, _, winv = _reference_forward(x, ones, zeros, 1e-5)
    np.testing.assert_allclose(invstd, winv, rtol=1e-3)
    np.testing.assert_allclose(mean, wmean, rtol=1e-6)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("shape", [(2, 8, 3, 5), (8, 16, 20, 20), (3, 6, 1, 9)])
def test_backward_equals_the_formulas(on_host, dtype, shape):
    c = shape[1]
    m = shape[0] * shape[2] * shape[3]
    x, dy, gamma = _data(shape, dtype), _data(shape, dtype, seed=7), _vec(c, 1)
    _, wmean, _, winv = _reference_forward(x, gamma, gamma, 1e-3)
    mean, invstd = wmean.astype(np.float32), winv.astype(np.float32)
    dx = _nhwc(np.zeros(shape, dtype))
    dg, db = np.zeros(c, np.float32), np.zeros(c, np.float32)
    assert B.backward(NP_CUPY, x, dy, dx, gamma, mean, invstd, dg, db)
    x64, dy64 = x.astype(np.float64), dy.astype(np.float64)
    xh = (x64 - mean[:, None, None]) * invstd[:, None, None]
    wdb, wdg = dy64.sum(axis=(0, 2, 3)), (dy64 * xh).sum(axis=(0, 2, 3))
    wdx = (gamma * invstd)[:, None, None] / m * (m * dy64 - wdb[:, None, None] -
                                                 xh * wdg[:, None, None])
    tol = TOL[dtype]
    np.testing.assert_allclose(db, wdb, rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(dg, wdg, rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(dx.astype(np.float64), wdx, rtol=tol, atol=tol * 4)


def test_backward_without_the_data_gradient_writes_only_the_parameters(on_host):
    shape, c = (2, 8, 3, 5), 8
    x, dy, gamma = _data(shape, np.float32), _data(shape, np.float32, seed=7), _vec(c, 1)
    mean, invstd = np.zeros(c, np.float32), np.ones(c, np.float32)
    dg, db = np.zeros(c, np.float32), np.zeros(c, np.float32)
    assert B.backward(NP_CUPY, x, dy, None, gamma, mean, invstd, dg, db)
    np.testing.assert_allclose(db, dy.astype(np.float64).sum(axis=(0, 2, 3)), rtol=1e-5)
    assert [k.launches for k in on_host.kernels.values()]


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_inference_uses_the_moving_statistics(on_host, dtype):
    shape, c, eps = (3, 8, 4, 5), 8, 1e-3
    x, gamma, beta = _data(shape, dtype), _vec(c, 1), _vec(c, 2, -1)
    mm, mv = _vec(c, 3, -1), _vec(c, 4)
    y = _nhwc(np.zeros(shape, dtype))
    mean, invstd = np.zeros(c, np.float32), np.zeros(c, np.float32)
    assert B.forward_inference(NP_CUPY, x, y, gamma, beta, mm, mv, eps, mean, invstd)
    want = mx.nd.BatchNorm(*[mx.nd.array(a.astype(np.float32), dtype=np.float32)
                             for a in (x, gamma, beta, mm, mv)],
                           fix_gamma=False, eps=eps).asnumpy()
    tol = TOL[dtype]
    np.testing.assert_allclose(y.astype(np.float64), want, rtol=tol, atol=tol * 4)
    np.testing.assert_array_equal(mean, mm)
    np.testing.assert_allclose(invstd, 1 / np.sqrt(mv.astype(np.float64) + eps), rtol=1e-6)


def test_declines_what_it_does_not_take():
    f32 = np.zeros(4, np.float32)
    odd = _nhwc(np.zeros((2, 3, 2, 2), np.float32))
    plain = np.zeros((2, 4, 2, 2), np.float32)         # NCHW memory
    f64 = _nhwc(np.zeros((2, 4, 2, 2), np.float64))
    for x in (odd, plain, f64):
        y = np.zeros_like(x)
        assert B.forward_training(None, x, y, f32, f32, 1e-3, f32, f32) is False
    x = _nhwc(np.zeros((2, 4, 2, 2), np.float32))
    assert B.forward_training(None, x, plain, f32, f32, 1e-3, f32, f32) is False
    assert B.forward_training(None, x, _nhwc(np.zeros((2, 4, 2, 2), np.float32)),
                              f32.astype(np.float64), f32, 1e-3, f32, f32) is False
    assert B.usable(x, np.zeros((2, 4, 2, 2), np.float32)) is None
    shifted = np.zeros(2 * 4 * 2 * 2 + 1, np.float32)[1:].reshape(2, 2, 2, 4)
    assert shifted.ctypes.data % 8 and B.usable(shifted.transpose(0, 3, 1, 2)) is None
    assert [m.shape for m in B.usable(x, None)[:1]] == [(8, 4)]


def test_launch_shapes_cover_every_row_and_channel():
    for rows, pairs in [(1, 1), (196, 32), (802816, 32), (3136, 1024), (7, 3)]:
        gx, gy, threads, lanes, per = B.stats_shape(rows, pairs)
        assert gx * lanes >= pairs and gy * per >= rows and gy < 65536
        assert threads <= 256 and threads // lanes >= 1
    for n_pairs, pairs in [(1, 1), (6272, 32), (10 ** 9, 1024), (27, 3), (10 ** 7, 4099)]:
        blocks = B.elementwise_blocks(n_pairs, pairs)
        assert (blocks * 256) % pairs == 0
        assert blocks * 256 >= min(n_pairs, 4096 * 256)


# --- float32 -> float16 bits (mx_to_half in backend/cuda_kernels.py) -----------------------
@pytest.fixture(scope="module")
def to_half(tmp_path_factory):
    lib = build(tmp_path_factory.mktemp("tohalf"), BITS_SOURCE + """
extern "C" void emu_to_half(const float* s, unsigned short* out, long long n) {
    for (long long i = 0; i < n; ++i) out[i] = mx_to_half(s[i]);
}""")

    def run(values):
        v = np.ascontiguousarray(values, np.float32)
        out = np.zeros(v.shape, np.uint16)
        lib.emu_to_half(ctypes.c_void_p(v.ctypes.data), ctypes.c_void_p(out.ctypes.data),
                        ctypes.c_longlong(v.size))
        return out
    return run


def test_float_to_half_rounds_as_numpy(to_half):
    halves = np.arange(65536, dtype=np.uint16).view(np.float16)
    finite = halves[np.isfinite(halves)].astype(np.float32)
    with np.errstate(over="ignore"):      # 65504's successor is infinity
        up = np.nextafter(finite.astype(np.float16), np.float16(np.inf)).astype(np.float32)
        ties = ((finite.astype(np.float64) + up) / 2).astype(np.float32)   # midpoints
    rng = np.random.RandomState(0)
    samples = [finite, ties, np.nextafter(ties, np.float32(np.inf)),
               np.nextafter(ties, np.float32(-np.inf)),
               rng.randint(0, 2 ** 32, 200000, dtype=np.uint64).astype(np.uint32)
               .view(np.float32),
               np.array([65504, 65519.99, 65520, 1e30, -1e30, 2 ** -25, 2 ** -24,
                         3 * 2 ** -26, 2 ** -26, -0.0, np.inf, -np.inf], np.float32)]
    values = np.concatenate(samples)
    values = values[~np.isnan(values)]
    with np.errstate(over="ignore"):
        want = values.astype(np.float16).view(np.uint16)
    np.testing.assert_array_equal(to_half(values), want)
    nan = to_half(np.array([np.nan, -np.nan], np.float32)).view(np.float16)
    assert np.isnan(nan).all()


# --- on a GPU --------------------------------------------------------------------------------
@pytest.mark.skipif(mx.context.num_gpus() == 0, reason="no GPU")
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_on_gpu_equals_numpy(dtype):
    cp = pytest.importorskip("cupy")
    shape, c = (16, 64, 14, 14), 64
    xh, dyh = _data(shape, dtype), _data(shape, dtype, seed=7)
    gamma, beta = _vec(c, 1), _vec(c, 2, -1)

    def dev(a):
        return cp.asarray(np.ascontiguousarray(a.transpose(0, 2, 3, 1))).transpose(0, 3, 1, 2)
    x, dy = dev(xh), dev(dyh)
    y, dx = dev(np.zeros(shape, dtype)), dev(np.zeros(shape, dtype))
    mean, invstd = cp.zeros(c, cp.float32), cp.zeros(c, cp.float32)
    g, b = cp.asarray(gamma), cp.asarray(beta)
    assert B.forward_training(cp, x, y, g, b, 1e-3, mean, invstd)
    want, wmean, _, winv = _reference_forward(xh, gamma, beta, 1e-3)
    tol = TOL[dtype]
    np.testing.assert_allclose(cp.asnumpy(y).astype(np.float64), want, rtol=tol,
                               atol=tol * 4)
    np.testing.assert_allclose(cp.asnumpy(invstd), winv, rtol=1e-4)
    dg, db = cp.zeros(c, cp.float32), cp.zeros(c, cp.float32)
    assert B.backward(cp, x, dy, dx, g, mean, invstd, dg, db)
    np.testing.assert_allclose(cp.asnumpy(db), dyh.astype(np.float64).sum(axis=(0, 2, 3)),
                               rtol=1e-3, atol=1e-2)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("fix_gamma", [False, True])
def test_relu_backward_folded_into_the_backward(on_host, dtype, fix_gamma):
    """BatchNorm -> relu's backward in one: the kernels recompute the stored relu
    output's sign from x and the statistics, and give exactly what the relu's backward
    (dy where the stored output is positive, else 0) followed by the plain backward
    gives."""
    shape, c = (4, 8, 5, 6), 8
    x, dy = _data(shape, dtype), _data(shape, dtype, seed=7)
    gamma = np.ones(c, np.float32) if fix_gamma else _vec(c, 1)
    beta = (np.random.RandomState(2).standard_normal(c) * 0.5).astype(np.float32)
    y = _nhwc(np.zeros(shape, dtype))
    mean, invstd = np.zeros(c, np.float32), np.zeros(c, np.float32)
    assert B.forward_training(NP_CUPY, x, y, gamma, beta, 1e-3, mean, invstd, relu=True)
    y64 = y.astype(np.float64)
    assert (y64 == 0).mean() > 0.2 and (y64 > 0).mean() > 0.2
    masked = _nhwc(np.where(y64 > 0, dy.astype(np.float64), 0).astype(dtype))

    def grads(d, relu_beta):
        dx = _nhwc(np.zeros(shape, dtype))
        dg, db = np.zeros(c, np.float32), np.zeros(c, np.float32)
        assert B.backward(NP_CUPY, x, d, dx, gamma, mean, invstd, dg, db, relu_beta)
        return dx, dg, db
    want, got = grads(masked, None), grads(dy, beta)
    for w, g in zip(want, got):
        np.testing.assert_array_equal(g.astype(np.float64), w.astype(np.float64))


def test_relu_backward_fold_keeps_a_non_finite_gradient_where_relu_is_off(on_host):
    """An inf or NaN in the relu output's gradient where that output is 0 comes out
    NaN, as the unfused backward's g * (y > 0) gives it (an overflow under AMP's loss
    scaling must not vanish in the fold)."""
    shape, c = (2, 4, 3, 3), 4
    dtype = np.dtype(np.float32)
    x, dy = _data(shape, dtype), _data(shape, dtype, seed=3)
    gamma, beta = _vec(c, 1), np.zeros(c, np.float32)
    y = _nhwc(np.zeros(shape, dtype))
    mean, invstd = np.zeros(c, np.float32), np.zeros(c, np.float32)
    assert B.forward_training(NP_CUPY, x, y, gamma, beta, 1e-3, mean, invstd, relu=True)
    off = np.argwhere(y == 0)[0]
    dy[tuple(off)] = np.inf
    dx = _nhwc(np.zeros(shape, dtype))
    dg, db = np.zeros(c, np.float32), np.zeros(c, np.float32)
    assert B.backward(NP_CUPY, x, dy, dx, gamma, mean, invstd, dg, db, beta)
    with np.errstate(invalid="ignore"):
        unfused = dy * (y > 0)              # NaN at the inf: inf * 0
    assert np.isnan(unfused).any() and np.isnan(db[off[1]]) and np.isnan(dg[off[1]])
