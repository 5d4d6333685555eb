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


def test_multi_adamw_equals_per_tensor_updates():
    rng = np.random.RandomState(4)
    ws = [rng.randn(3, 2), rng.randn(4)]
    gs = [rng.randn(3, 2), rng.randn(4)]
    W = [nd.array(a) for a in ws]
    M, V = [nd.zeros(a.shape) for a in ws], [nd.zeros(a.shape) for a in ws]
    nd.contrib.multi_adamw_update(W, [nd.array(g) for g in gs], M, V, rescale_grad=0.5,
                                  lrs=[0.1, 0.2], wds=[0.01, 0.0], etas=[1.0, 0.5], out=W)
    for i, (lr, wd, eta) in enumerate([(0.1, 0.01, 1.0), (0.2, 0.0, 0.5)]):
        rw, rm, _ = ref_adamw(ws[i], gs[i], 0, 0, 0.5, lr, eta, wd=wd)
        # float32 arithmetic (1 - beta2 in float32, as MXNet) against a float64 rule
        assert_almost_equal(W[i].asnumpy(), rw, rtol=1e-4, atol=1e-5)
        assert_almost_equal(M[i].asnumpy(), rm, rtol=1e-5, atol=1e-6)


def ref_lamb(w, g, m, v, t, lr, wd, b1=0.9, b2=0.999, eps=1e-6, lower=-1, upper=-1):
    m = b1 * m + (1 - b1) * g
    v = b2 * v + (1 - b2) * g * g
    mh, vh = m / (1 - b1 ** t), v / (1 - b2 ** t)
    d = mh / (np.sqrt(vh) + eps) + wd * w
    r1, r2 = np.linalg.norm(w), np.linalg.norm(d)
    if lower > 0:
        r1 = max(r1, lower)
    if upper > 0:
        r1 = min(r1, upper)
    ratio = r1 / r2 if r1 > 0 and r2 > 0 else 1.0
    return w - lr * ratio * d, m, v


def test_multi_lamb_update_matches_reference():
    rng = np.random.RandomState(5)
    ws = [rng.randn(3, 2), rng.randn(4)]
    gs = [rng.randn(3, 2), rng.randn(4)]
    W = [nd.array(a) for a in ws]
    M, V = [nd.zeros(a.shape) for a in ws], [nd.zeros(a.shape) for a in ws]
    state = [(ws[i], np.zeros_like(ws[i]), np.zeros_like(ws[i])) for i in range(2)]
    for step in (1, 2):
        nd.contrib.multi_lamb_update(W, [nd.array(g) for g in gs], M, V,
                                     step_count=[step, step], lrs=[0.1, 0.2],
                                     wds=[0.01, 0.1], out=W, upper_bound=5.0)
        state = [ref_lamb(*state[i][:1], gs[i], *state[i][1:], step, [0.1, 0.2][i],
                          [0.01, 0.1][i], upper=5.0) for i in range(2)]
    for i in range(2):
        assert_almost_equal(W[i].asnumpy(), state[i][0], rtol=1e-4, atol=1e-5)


def test_multi_mp_updates_use_float32_masters():
    rng = np.random.RandomState(6)
    ws = [rng.randn(3, 2).astype(np.float32), rng.randn(4).astype(np.float32)]
    gs = [rng.randn(3, 2).astype(np.float32), rng.randn(4).astype(np.float32)]
    for kind in ("adamw", "lamb"):
        W16 = [nd.array(a, dtype="float16") for a in ws]
        W32 = [nd.array(a) for a in ws]
        M, V = [nd.zeros(a.shape) for a in ws], [nd.zeros(a.shape) for a in ws]
        G16 = [nd.array(g, dtype="float16") for g in gs]
        if kind == "adamw":
            nd.contrib.multi_mp_adamw_update(W16, G16, M, V, W32, rescale_grad=1.0,
                                             lrs=[0.1, 0.2], wds=[0.0, 0.0],
                                             etas=[1.0, 1.0], out=W16)
        else:
            nd.contrib.multi_mp_lamb_update(W16, G16, M, V, W32, step_count=[1, 1],
                                            lrs=[0.1, 0.2], wds=[0.0, 0.0], out=W16)
        for i, lr in enumerate([0.1, 0.2]):
            g = gs[i].astype(np.float16).astype(np.float64)
            if kind == "adamw":
                ref = ref_adamw(ws[i], g, 0, 0, 1.0, lr, 1.0)[0]
            else:
                ref = ref_lamb(ws[i].astype(np.float64), g, 0, 0, 1, lr, 0.0)[0]
            assert W16[i].dtype == np.float16
            assert_almost_equal(W32[i].asnumpy(), ref, rtol=1e-4, atol=1e-5)
            assert_almost_equal(W16[i].asnumpy(), ref.astype(np.float16), rtol=2e-3,
                                atol=2e-3)
