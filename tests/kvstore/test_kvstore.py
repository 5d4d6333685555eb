"""The local/device KVStore: init/push/pull semantics, aggregation, updaters,
optimizer states, gradient compression and errors."""
import numpy as np
import pytest

import mxnet as mx
from mxnet.base import MXNetError
from mxnet.test_utils import assert_almost_equal

SHAPE = (4, 3)


def full(v, shape=SHAPE, ctx=None):
    return mx.nd.array(np.full(shape, v, dtype=np.float32), ctx=ctx)


def pulled(kv, key, shape=SHAPE):
    out = mx.nd.zeros(shape)
    kv.pull(key, out=out)
    return out.asnumpy()


@pytest.mark.parametrize("kv_type", ["local", "device"])
def test_properties(kv_type):
    kv = mx.kv.create(kv_type)
    assert kv.type == kv_type and kv.rank == 0 and kv.num_workers == 1
    assert kv.is_capable(mx.kv.KVStoreBase.OPTIMIZER)
    assert isinstance(kv, mx.kv.KVStoreBase)
    kv._barrier()
    with pytest.raises(ValueError):
        kv.is_capable("teleport")


@pytest.mark.parametrize("key", [3, "w"])
@pytest.mark.parametrize("kv_type", ["local", "device"])
def test_init_push_pull(kv_type, key):
    kv = mx.kv.create(kv_type)
    kv.init(key, full(1.0))
    assert (pulled(kv, key) == 1.0).all()
    # a list of values for one key is summed (one value per device)
    kv.push(key, [full(2.0), full(3.0), full(4.0)])
    assert (pulled(kv, key) == 9.0).all()
    # without an updater a push replaces the stored value
    kv.push(key, full(7.0))
    assert (pulled(kv, key) == 7.0).all()
    outs = [mx.nd.zeros(SHAPE) for _ in range(3)]
    kv.pull(key, out=outs)
    assert all((o.asnumpy() == 7.0).all() for o in outs)


def test_lists_of_keys():
    kv = mx.kv.create()
    kv.init([5, 7], [full(1.0), full(2.0, (2,))])
    kv.push([5, 7], [[full(1.0), full(1.0)], full(4.0, (2,))])
    a, b1, b2 = mx.nd.zeros(SHAPE), mx.nd.zeros(2), mx.nd.zeros(2)
    kv.pull([5, 7], out=[a, [b1, b2]])
    assert (a.asnumpy() == 2.0).all()
    assert (b1.asnumpy() == 4.0).all() and (b2.asnumpy() == 4.0).all()


def test_pushpull_and_broadcast():
    kv = mx.kv.create()
    kv.init(0, mx.nd.zeros(2))
    out = mx.nd.zeros(2)
    kv.pushpull(0, [full(1.0, (2,)), full(2.0, (2,))], out=out)
    assert (out.asnumpy() == 3.0).all()
    vals = [full(1.0, (2,)), full(5.0, (2,))]
    kv.pushpull(0, vals)                      # no out: the sum goes back into value
    assert all((v.asnumpy() == 6.0).all() for v in vals)
    outs = [mx.nd.zeros(3), mx.nd.zeros(3)]
    kv.broadcast(9, full(4.0, (3,)), out=outs)
    assert all((o.asnumpy() == 4.0).all() for o in outs)


def test_updater_runs_on_the_store():
    kv = mx.kv.create()
    seen = []

    def updater(key, grad, stored):
        seen.append((key, grad.asnumpy().copy()))
        stored[:] = stored.asnumpy() + 2 * grad.asnumpy()

    kv._set_updater(updater)
    kv.init("w", full(1.0))
    kv.push("w", [full(1.0), full(0.5)])
    assert seen[0][0] == "w" and (seen[0][1] == 1.5).all()
    assert (pulled(kv, "w") == 4.0).all()


@pytest.mark.parametrize("kv_type", ["local", "device"])
def test_set_optimizer_updates_stored_weights(kv_type):
    kv = mx.kv.create(kv_type)
    kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.1, momentum=0.9, rescale_grad=0.5))
    rng = np.random.default_rng(0)
    w0 = rng.standard_normal(SHAPE).astype(np.float32)
    kv.init(0, mx.nd.array(w0))
    ref_w, mom = w0.astype(np.float64), np.zeros(SHAPE)
    for _ in range(3):
        g1, g2 = (rng.standard_normal(SHAPE).astype(np.float32) for _ in range(2))
        kv.push(0, [mx.nd.array(g1), mx.nd.array(g2)])
        mom = 0.9 * mom - 0.1 * 0.5 * (g1.astype(np.float64) + g2)
        ref_w = ref_w + mom
        assert_almost_equal(pulled(kv, 0), ref_w, rtol=1e-5, atol=1e-6)


def test_optimizer_states_save_load(tmp_path):
    def make():
        kv = mx.kv.create()
        kv.set_optimizer(mx.optimizer.Adam(learning_rate=0.1))
        return kv
    rng = np.random.default_rng(1)
    grads = [rng.standard_normal(3).astype(np.float32) for _ in range(4)]
    kv1 = make()
    kv1.init(0, mx.nd.ones(3))
    for g in grads[:2]:
        kv1.push(0, mx.nd.array(g))
    fname = str(tmp_path / "states")
    kv1.save_optimizer_states(fname, dump_optimizer=True)
    kv2 = make()
    kv2.init(0, mx.nd.array(pulled(kv1, 0, (3,))))
    kv2.load_optimizer_states(fname)
    for g in grads[2:]:
        kv1.push(0, mx.nd.array(g))
        kv2.push(0, mx.nd.array(g))
    assert_almost_equal(pulled(kv1, 0, (3,)), pulled(kv2, 0, (3,)))
    with pytest.raises(AssertionError):
        mx.kv.create().save_optimizer_states(fname)


def test_row_sparse_pull_refuses_dense_out():
    """MXNet 1.9.1 refuses a dense out (its check: row_sparse storage expected)."""
    kv = mx.kv.create()
    kv.init("emb", mx.nd.ones((4, 3)))
    out = mx.nd.full((4, 3), -1.0)
    with pytest.raises(mx.MXNetError, match="row_sparse"):
        kv.row_sparse_pull("emb", out=out, row_ids=mx.nd.array([2, 0]))
    assert (out.asnumpy() == -1).all()         # untouched


def test_gradient_compression_2bit():
    kv = mx.kv.create("device")
    kv.set_gradient_compression({"type": "2bit", "threshold": 0.5})
    kv.init(0, mx.nd.zeros(4))
    g = np.array([0.3, 0.6, -0.7, 0.1], dtype=np.float32)
    residual = [np.zeros(4), np.zeros(4)]
    for _ in range(3):
        kv.push(0, [mx.nd.array(g), mx.nd.array(g)])
        total = np.zeros(4)
        for r in residual:             # per-device residual with error feedback
            r += g
            sent = np.where(r >= 0.5, 0.5, np.where(r <= -0.5, -0.5, 0.0))
            r -= sent
            total += sent
        assert_almost_equal(pulled(kv, 0, (4,)), total)


def test_gradient_compression_errors():
    with pytest.raises(MXNetError, match="not supported for this type"):
        mx.kv.create("local").set_gradient_compression({"type": "2bit"})
    kv = mx.kv.create("device")
    with pytest.raises(MXNetError, match="Unknown type"):
        kv.set_gradient_compression({"type": "1bit"})
    with pytest.raises(MXNetError, match="type"):
        kv.set_gradient_compression({"threshold": 1.0})
    with pytest.raises(MXNetError, match="threshold"):
        kv.set_gradient_compression({"type": "2bit", "threshold": 0})


def test_errors():
    kv = mx.kv.create()
    kv.init(1, full(1.0))
    with pytest.raises(MXNetError, match="duplicate init"):
        kv.init(1, full(1.0))
    with pytest.raises(MXNetError, match="has not been inited"):
        kv.pull(2, out=mx.nd.zeros(SHAPE))
    with pytest.raises(MXNetError, match="has not been inited"):
        kv.push(2, full(1.0))
    with pytest.raises(MXNetError, match="shape"):
        kv.push(1, mx.nd.ones(3))
    with pytest.raises(MXNetError, match="shape"):
        kv.pull(1, out=mx.nd.zeros(3))
    with pytest.raises(MXNetError, match="Mixed key types"):
        kv.init("name", full(1.0))
    with pytest.raises(AssertionError):
        kv.pull(1)
    with pytest.raises(AssertionError, match="inconsistent"):
        mx.kv.create().init([1, "a"], [full(1.0), full(1.0)])
    with pytest.raises(TypeError):
        mx.kv.create(3)


def test_other_types():
    assert mx.kv.create("LOCAL").type == "local"
    assert mx.kv.create("local_allreduce_device").type == "local_allreduce_device"
    store = mx.kv.create("teststore")
    assert store.type == "teststore" and not store.is_capable("optimizer")
    vals = [full(1.0, (2,)), full(2.0, (2,))]
    store.pushpull(0, vals)
    assert all((v.asnumpy() == 3.0).all() for v in vals)
    assert mx.kvstore.create is mx.kv.create


def test_pull_skips_sparse_outputs_unless_told_not_to():
    kv = mx.kv.create("local")
    kv.init(3, mx.nd.ones((2, 2)))
    rsp = (mx.nd.ones((2, 2)) * 2).tostype("row_sparse")
    dense = mx.nd.zeros((2, 2))
    with pytest.warns(UserWarning, match="sparse"):
        kv.pull(3, out=[rsp, dense])
    np.testing.assert_array_equal(rsp.asnumpy(), 2)       # left alone
    np.testing.assert_array_equal(dense.asnumpy(), 1)
    with pytest.warns(UserWarning):
        kv.pushpull(3, rsp)                                # pushpull pulls the same way
    kv.pull(3, out=rsp, ignore_sparse=False)
    assert rsp.stype == "row_sparse"
    np.testing.assert_array_equal(rsp.asnumpy(), kv._stored(3).asnumpy())


def test_pull_is_not_recorded_by_autograd():
    kv = mx.kv.create("local")
    kv.init(0, mx.nd.ones((3,)) * 5)
    w = mx.nd.zeros((3,))
    w.attach_grad()
    with mx.autograd.record():
        kv.pull(0, out=w)               # a store's copy: w stays a marked variable
        y = (w * w).sum()
    y.backward()
    np.testing.assert_array_equal(w.grad.asnumpy(), 10)
