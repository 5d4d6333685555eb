"""all_finite, multi_all_finite, multi_sum_sq, reset_arrays, multi_lars and the
multi_*sgd* updates against per-weight references."""
import numpy as np
import pytest

import mxnet as mx
from mxnet.base import MXNetError

nd = mx.nd
rs = np.random.RandomState(9)


def test_all_finite():
    assert nd.all_finite(nd.array([1.0, 2.0])).asnumpy().tolist() == [1.0]
    assert nd.all_finite(nd.array([1.0, np.inf])).asnumpy().tolist() == [0.0]
    assert nd.multi_all_finite(nd.array([1.0]), nd.array([np.nan]),
                               num_arrays=2).asnumpy().tolist() == [0.0]
    assert nd.multi_all_finite(nd.array([1.0]), nd.array([2.0]),
                               num_arrays=2).dtype == np.float32


def test_multi_sum_sq():
    a, b = rs.normal(size=5), rs.normal(size=(2, 3))
    out = nd.multi_sum_sq(nd.array(a), nd.array(b), num_arrays=2)
    np.testing.assert_allclose(out.asnumpy(), [np.sum(a ** 2), np.sum(b ** 2)], rtol=1e-5)
    with pytest.raises(MXNetError):
        nd.multi_sum_sq(nd.array(a), num_arrays=2)


def test_reset_arrays():
    a, b = nd.ones((2,)), nd.ones((3, 2))
    nd.reset_arrays(a, b, num_arrays=2)
    assert a.asnumpy().sum() == 0 and b.asnumpy().sum() == 0


def test_multi_lars():
    lrs, wsq, gsq, wds = [0.1, 0.2, 0.3], [4.0, 0.0, 1.0], [9.0, 1.0, 0.0], [0.01, 0.0, 0.0]
    out = nd.multi_lars(nd.array(lrs), nd.array(wsq), nd.array(gsq), nd.array(wds), eta=0.5,
                        eps=0.1, rescale_grad=2.0).asnumpy()
    expect = [0.1 * 0.5 * 2 / (3 * 2 + 0.01 * 2 + 0.1), 0.2, 0.3]
    np.testing.assert_allclose(out, expect, rtol=1e-6)


def _sgd_ref(w, g, lr, wd, rescale=1.0, clip=-1.0, mom=None, momentum=0.0):
    g = g * rescale
    if clip >= 0:
        g = np.clip(g, -clip, clip)
    if mom is None:
        return w * (1 - lr * wd) - lr * g, None
    mom = momentum * mom - lr * (g + wd * w)
    return w + mom, mom


@pytest.mark.parametrize("name", ["multi_sgd_update", "multi_sgd_mom_update",
                                  "preloaded_multi_sgd_update",
                                  "preloaded_multi_sgd_mom_update"])
def test_multi_sgd(name):
    preloaded, momentum = name.startswith("preloaded"), "mom" in name
    shapes = [(3,), (2, 2)]
    ws = [rs.normal(size=s).astype(np.float32) for s in shapes]
    gs = [rs.normal(size=s).astype(np.float32) for s in shapes]
    ms = [rs.normal(size=s).astype(np.float32) for s in shapes]
    lrs, wds = (0.1, 0.2), (0.01, 0.0)
    args, nd_ms = [], []
    for w, g, m in zip(ws, gs, ms):
        args += [nd.array(w), nd.array(g)]
        if momentum:
            nd_ms.append(nd.array(m))
            args.append(nd_ms[-1])
    kw = dict(rescale_grad=0.5, clip_gradient=0.3, num_weights=2)
    if momentum:
        kw["momentum"] = 0.9
    if preloaded:
        args += [nd.array(lrs), nd.array(wds)]
    else:
        kw.update(lrs=lrs, wds=wds)
    outs = getattr(nd, name)(*args, **kw)
    for i in range(2):
        w, m = _sgd_ref(ws[i], gs[i], lrs[i], wds[i], 0.5, 0.3,
                        ms[i] if momentum else None, 0.9)
        np.testing.assert_allclose(outs[i].asnumpy(), w, rtol=1e-5, atol=1e-6)
        if momentum:
            np.testing.assert_allclose(nd_ms[i].asnumpy(), m, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("momentum", [False, True])
def test_multi_mp_sgd(momentum):
    w32 = rs.normal(size=4).astype(np.float32)
    g = rs.normal(size=4).astype(np.float16)
    m = rs.normal(size=4).astype(np.float32)
    weight = nd.array(w32, dtype="float16")
    master = nd.array(w32)
    args = [weight, nd.array(g, dtype="float16")]
    mom = nd.array(m)
    if momentum:
        args.append(mom)
    args.append(master)
    kw = dict(lrs=(0.5,), wds=(0.1,), num_weights=1)
    if momentum:
        kw["momentum"] = 0.9
    name = "multi_mp_sgd_mom_update" if momentum else "multi_mp_sgd_update"
    getattr(nd, name)(*args, out=weight, **kw)
    check_mp(w32, g, m, momentum, weight, master)


def check_mp(w32, g, m, momentum, weight, master):
    want, _ = _sgd_ref(w32, g.astype(np.float32), 0.5, 0.1, mom=m if momentum else None,
                       momentum=0.9)
    np.testing.assert_allclose(master.asnumpy(), want, rtol=1e-5, atol=1e-6)
    assert weight.dtype == np.float16
    np.testing.assert_allclose(weight.asnumpy(), want.astype(np.float16), rtol=1e-3)


@pytest.mark.parametrize("name", ["preloaded_multi_mp_sgd_update",
                                  "preloaded_multi_mp_sgd_mom_update"])
def test_preloaded_multi_mp_sgd(name):
    momentum = "mom" in name
    w32 = rs.normal(size=4).astype(np.float32)
    g = rs.normal(size=4).astype(np.float16)
    m = rs.normal(size=4).astype(np.float32)
    weight, master = nd.array(w32, dtype="float16"), nd.array(w32)
    args = [weight, nd.array(g, dtype="float16")] + ([nd.array(m)] if momentum else []) + \
        [master, nd.array([0.5]), nd.array([0.1])]
    kw = {"momentum": 0.9} if momentum else {}
    getattr(nd, name)(*args, out=weight, num_weights=1, **kw)
    check_mp(w32, g, m, momentum, weight, master)


def test_multi_sgd_checks_counts():
    with pytest.raises(MXNetError):
        nd.multi_sgd_update(nd.ones(2), nd.ones(2), lrs=(0.1, 0.2), wds=(0.0, 0.0),
                            num_weights=2)
