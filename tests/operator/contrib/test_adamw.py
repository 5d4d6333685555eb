"""adamw_update / mp_adamw_update against the AdamW rule written out in NumPy."""
import numpy as np
import pytest

import mxnet as mx
from mxnet.test_utils import assert_almost_equal

nd = mx.nd


def ref_adamw(w, g, m, v, rescale, lr, eta, b1=0.9, b2=0.999, eps=1e-8, wd=0.0, clip=-1):
    g = g * rescale
    if clip >= 0:
        g = np.clip(g, -clip, clip)
    m = b1 * m + (1 - b1) * g
    v = b2 * v + (1 - b2) * g * g
    return w - eta * (lr * m / (np.sqrt(v) + eps) + wd * w), m, v


@pytest.mark.parametrize("kw", [{}, {"wd": 0.1, "clip_gradient": 0.3},
                                {"beta1": 0.5, "beta2": 0.9, "epsilon": 1e-3}])
def test_adamw_update(kw):
    rng = np.random.RandomState(0)
    w, g = rng.randn(7), rng.randn(7)
    m, v = rng.randn(7) * 0.1, rng.uniform(0, 0.1, 7)
    W, M, V = (nd.array(a) for a in (w, m, v))
    nd.contrib.adamw_update(W, nd.array(g), M, V, rescale_grad=0.5, lr=0.1, eta=0.7,
                            out=W, **kw)
    rw, rm, rv = ref_adamw(w, g, m, v, 0.5, 0.1, 0.7, kw.get("beta1", 0.9),
                           kw.get("beta2", 0.999), kw.get("epsilon", 1e-8), kw.get("wd", 0),
                           kw.get("clip_gradient", -1))
    assert_almost_equal(W.asnumpy(), rw, rtol=1e-5, atol=1e-6)
    assert_almost_equal(M.asnumpy(), rm, rtol=1e-5, atol=1e-6)
    assert_almost_equal(V.asnumpy(), rv, rtol=1e-4, atol=1e-7)


@pytest.mark.parametrize("bad", [0.0, np.inf, np.nan])
def test_adamw_skips_step_for_bad_rescale(bad):
    W, M, V = nd.array([1.0, 2.0]), nd.zeros(2), nd.zeros(2)
    nd.contrib.adamw_update(W, nd.ones(2), M, V, rescale_grad=nd.array([bad]), lr=0.1,
                            eta=1.0, out=W)
    assert W.asnumpy().tolist() == [1, 2] and M.asnumpy().tolist() == [0, 0]


def test_mp_adamw_update_uses_float32_master():
    rng = np.random.RandomState(1)
    w, g = rng.randn(5).astype(np.float32), rng.randn(5).astype(np.float32)
    W16, W32 = nd.array(w, dtype="float16"), nd.array(w)
    M, V = nd.zeros(5), nd.zeros(5)
    out = nd.contrib.mp_adamw_update(W16, nd.array(g, dtype="float16"), M, V, W32,
                                     rescale_grad=1.0, lr=0.05, eta=1.0, wd=0.01, out=W16)
    rw, rm, _ = ref_adamw(w, g.astype(np.float16).astype(np.float32), 0, 0, 1.0, 0.05, 1.0,
                          wd=0.01)
    assert out.dtype == np.float16
    assert_almost_equal(W32.asnumpy(), rw, rtol=1e-5, atol=1e-6)
    assert_almost_equal(W16.asnumpy(), rw.astype(np.float16), rtol=1e-3, atol=1e-3)
    assert_almost_equal(M.asnumpy(), rm, rtol=1e-5)


def test_group_adagrad_update():
    rng = np.random.RandomState(2)
    w, g = rng.randn(4, 3), rng.randn(4, 3)
    W, H = nd.array(w), nd.zeros((4, 1))
    for _ in range(2):
        nd.contrib.group_adagrad_update(W, nd.array(g), H, lr=0.1, rescale_grad=2.0,
                                        clip_gradient=1.5, epsilon=1e-3, out=W)
    gg = np.clip(2 * g, -1.5, 1.5)
    h = np.zeros((4, 1))
    ref = w.copy()
    for _ in range(2):
        h += (gg * gg).mean(axis=1, keepdims=True)
        ref = ref - 0.1 * gg / np.sqrt(h + 1e-3)
    assert_almost_equal(H.asnumpy(), h, rtol=1e-5)
    assert_almost_equal(W.asnumpy(), ref, rtol=1e-5, atol=1e-6)


def test_backward_quadratic():
    from mxnet.test_utils import check_numeric_gradient
    rng = np.random.RandomState(3)
    g, x = rng.randn(5), rng.randn(5)
    out = nd.contrib.backward_quadratic(nd.array(g), nd.array(x), a=0.5, b=-1.0, c=2.0)
    assert_almost_equal(out.asnumpy(), (g * (x - 1.0)).astype(np.float32), atol=1e-6)
    check_numeric_gradient(lambda a, b: nd.contrib.backward_quadratic(a, b, a=0.5, b=2.0),
                           [g, x], numeric_eps=1e-4, rtol=1e-4, atol=1e-6)
