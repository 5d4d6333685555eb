"""gluon.Trainer: updates against a NumPy SGD-with-momentum reference, data-parallel
training on two contexts through the KVStore, stale gradients, optimizer states."""
import numpy as np
import pytest

import mxnet as mx
from mxnet import autograd, gluon
from mxnet.gluon import nn
from mxnet.test_utils import assert_almost_equal

X = np.random.RandomState(5).rand(8, 3).astype(np.float32)
Y = np.random.RandomState(6).rand(8, 2).astype(np.float32)


def _dense(ctx=None, seed=0):
    net = nn.Dense(2, in_units=3)
    net.initialize(mx.init.Constant(0.0), ctx=ctx)
    w = np.random.RandomState(seed).uniform(-1, 1, (2, 3)).astype(np.float32)
    net.weight.set_data(mx.nd.array(w))
    return net


def _grads_np(w, b, x, y):
    """Gradients of sum(0.5 * (x w^T + b - y)^2)."""
    err = x @ w.T + b - y
    return err.T @ x, err.sum(0)


def _step(net, trainer, ctxs, batch=8):
    xs = gluon.utils.split_and_load(X, ctxs)
    ys = gluon.utils.split_and_load(Y, ctxs)
    with autograd.record():
        losses = [(0.5 * (net(x) - y) ** 2).sum() for x, y in zip(xs, ys)]
    autograd.backward(losses)
    trainer.step(batch)


def test_sgd_momentum_against_numpy():
    net = _dense()
    trainer = gluon.Trainer(net.collect_params(), "sgd",
                            {"learning_rate": 0.1, "momentum": 0.9, "wd": 0.01})
    w, b = net.weight.data().asnumpy().astype(np.float64), np.zeros(2)
    mw, mb = np.zeros_like(w), np.zeros_like(b)
    for _ in range(3):
        _step(net, trainer, [mx.cpu()])
        gw, gb = _grads_np(w, b, X, Y)
        mw = 0.9 * mw - 0.1 * (gw / 8 + 0.01 * w)
        mb = 0.9 * mb - 0.1 * (gb / 8 + 0.01 * b)
        w, b = w + mw, b + mb
    assert_almost_equal(net.weight.data().asnumpy(), w, rtol=1e-5, atol=1e-6)
    assert_almost_equal(net.bias.data().asnumpy(), b, rtol=1e-5, atol=1e-6)
    # parameters are indexed by sorted name, as in MXNet
    assert [p.name for p in trainer._params] == sorted(net.collect_params().keys())
    assert trainer._kvstore is None and trainer._update_on_kvstore is None


@pytest.mark.parametrize("kvstore,update_on_kvstore", [("device", None), ("device", False),
                                                       ("local", None), ("local", False)])
def test_two_contexts_match_one(kvstore, update_on_kvstore):
    ref = _dense()
    tref = gluon.Trainer(ref.collect_params(), "sgd", {"learning_rate": 0.1, "momentum": 0.5})
    ctxs = [mx.cpu(0), mx.cpu(1)]
    net = _dense(ctxs)
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1,
                                                          "momentum": 0.5},
                            kvstore=kvstore, update_on_kvstore=update_on_kvstore)
    for _ in range(3):
        _step(ref, tref, [mx.cpu()])
        _step(net, trainer, ctxs)
    # with a store, update_on_kvstore defaults to True (MXNet 1.9.1)
    assert trainer._kvstore.type == kvstore
    assert trainer._update_on_kvstore is (update_on_kvstore is not False)
    for ctx in ctxs:
        assert_almost_equal(net.weight.data(ctx).asnumpy(), ref.weight.data().asnumpy(),
                            rtol=1e-5, atol=1e-6)
        assert_almost_equal(net.bias.data(ctx).asnumpy(), ref.bias.data().asnumpy(),
                            rtol=1e-5, atol=1e-6)


def test_no_kvstore_updates_each_context_alone():
    ctxs = [mx.cpu(0), mx.cpu(1)]
    net = _dense(ctxs)
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1},
                            kvstore=None)
    _step(net, trainer, ctxs)
    w0 = np.random.RandomState(0).uniform(-1, 1, (2, 3)).astype(np.float32)
    for i, ctx in enumerate(ctxs):
        gw, _ = _grads_np(w0, np.zeros(2), X[4 * i:4 * i + 4], Y[4 * i:4 * i + 4])
        assert_almost_equal(net.weight.data(ctx).asnumpy(), w0 - 0.1 * gw / 8, rtol=1e-5,
                            atol=1e-6)


def test_allreduce_then_update_with_clipping():
    ctxs = [mx.cpu(0), mx.cpu(1)]
    net = _dense(ctxs)
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 1.0},
                            update_on_kvstore=False)
    xs, ys = gluon.utils.split_and_load(X, ctxs), gluon.utils.split_and_load(Y, ctxs)
    with autograd.record():
        losses = [(0.5 * (net(x) - y) ** 2).sum() for x, y in zip(xs, ys)]
    autograd.backward(losses)
    trainer.allreduce_grads()
    w0 = net.weight.data(ctxs[0]).asnumpy()
    gw, gb = _grads_np(w0, np.zeros(2), X, Y)
    for ctx in ctxs:
        assert_almost_equal(net.weight.grad(ctx).asnumpy(), gw, rtol=1e-5, atol=1e-5)
        norm = gluon.utils.clip_global_norm([net.weight.grad(ctx), net.bias.grad(ctx)], 0.5)
        assert abs(norm - np.sqrt((gw ** 2).sum() + (gb ** 2).sum())) < 1e-3
    trainer.update(8)
    scale = 0.5 / np.sqrt((gw ** 2).sum() + (gb ** 2).sum())
    assert_almost_equal(net.weight.data(ctxs[1]).asnumpy(), w0 - gw * scale / 8, rtol=1e-5,
                        atol=1e-6)
    on_kv = gluon.Trainer(_dense(ctxs).collect_params(), "sgd")
    with pytest.raises(AssertionError, match="allreduce_grads\\(\\) when parameters are "
                                             "updated on kvstore is not supported"):
        on_kv.allreduce_grads()


def test_stale_gradient_error_and_ignore():
    net = nn.HybridSequential()
    net.add(nn.Dense(2, in_units=3), nn.Dense(2, in_units=2))
    net.initialize()
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
    x = mx.nd.array(X)
    with autograd.record():
        y = net[0](x).sum()             # the second layer is not used
    y.backward()
    # MXNet 1.9.1's message (a UserWarning raised as an exception)
    with pytest.raises(UserWarning, match=f"Gradient of Parameter `{net[1].bias.name}` on "
                                          "context cpu\\(0\\) has not been updated by "
                                          "backward since last `step`. This could mean a bug "
                                          "in your model"):
        trainer.step(8)
    before = net[1].weight.data().asnumpy()
    w0 = net[0].weight.data().asnumpy()
    # the failed step already cleared the flags of the parameters it went through (as
    # MXNet 1.9.1 does), so run backward again
    with autograd.record():
        y = net[0](x).sum()
    y.backward()
    trainer.step(8, ignore_stale_grad=True)
    assert_almost_equal(net[1].weight.data().asnumpy(), before)
    assert not np.allclose(net[0].weight.data().asnumpy(), w0)
    with pytest.raises(UserWarning, match="has not been updated by backward"):
        trainer.step(8)                 # nothing is fresh any more


def test_learning_rate_mults_and_states(tmp_path):
    net = _dense()
    trainer = gluon.Trainer(net.collect_params(), "sgd",
                            {"learning_rate": 0.1, "momentum": 0.9})
    assert trainer.learning_rate == 0.1
    trainer.set_learning_rate(0.2)
    assert trainer.learning_rate == 0.2 and trainer.optimizer.lr == 0.2
    net.bias.lr_mult = 0.0                 # taken from the Parameter at update time
    _step(net, trainer, [mx.cpu()])
    assert_almost_equal(net.bias.data().asnumpy(), np.zeros(2))
    fname = str(tmp_path / "trainer.states")
    trainer.save_states(fname)
    # continuing with the original vs. a trainer that loaded the states
    twin = _dense()
    twin.weight.set_data(net.weight.data())
    t2 = gluon.Trainer(twin.collect_params(), "sgd", {"learning_rate": 0.5})
    t2.load_states(fname)
    assert t2.learning_rate == 0.2 and t2.optimizer.param_dict[1] is twin.weight
    twin.bias.lr_mult = 0.0
    _step(net, trainer, [mx.cpu()])
    _step(twin, t2, [mx.cpu()])
    assert_almost_equal(twin.weight.data().asnumpy(), net.weight.data().asnumpy(), rtol=1e-6)


def test_trainer_arguments():
    net = _dense()
    with pytest.raises(ValueError, match="First argument must be a list or dict of "
                                         "Parameters"):
        gluon.Trainer(net.weight, "sgd")
    with pytest.raises(ValueError, match="got list of"):
        gluon.Trainer([1, 2], "sgd")
    with pytest.raises(AssertionError, match="optimizer_params must be None"):
        gluon.Trainer(net.collect_params(), mx.optimizer.SGD(), {"learning_rate": 1})
    opt = mx.optimizer.Adam(learning_rate=0.01)
    t = gluon.Trainer([net.weight, net.bias], opt)
    assert t.optimizer is opt and opt.param_dict[0] is net.weight
    other = nn.Dense(2, in_units=3)
    other.initialize(ctx=mx.cpu(1))
    with pytest.raises(AssertionError, match="All Parameters must be initialized on the same "
                                             "set of contexts"):
        gluon.Trainer([net.weight, other.weight], "sgd")
    # the seed-003 pattern: Trainer on collect_params() with a learning rate
    t = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.01})
    _step(net, t, [mx.cpu()])
    assert isinstance(t.optimizer, mx.optimizer.SGD)


class _SparseEmbedThenDense(gluon.Block):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.embed_weight = self.params.get("embed_weight", stype="row_sparse",
                                                shape=(4, 3), grad_stype="row_sparse")
            self.dense0 = nn.Dense(2)           # deferred: initialised by the forward

    def forward(self, x):
        w = self.embed_weight.row_sparse_data(x)
        return self.dense0(mx.nd.Embedding(x, w, input_dim=4, output_dim=3,
                                           sparse_grad=True))


@pytest.mark.parametrize("n_ctx", [1, 2])
def test_deferred_layer_after_sparse_rows_trains_on_every_context(n_ctx):
    ctxs = [mx.cpu(i + 1) for i in range(n_ctx)]
    net = _SparseEmbedThenDense(prefix="net_")
    net.initialize(mx.init.One(), ctx=ctxs)
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 1})
    data = mx.nd.array([[0, 2], [1, 2]])
    with autograd.record():
        ys = [net(x) for x in gluon.utils.split_and_load(data, ctxs)]
    for y in ys:
        y.backward()
    trainer.step(1)                  # no stale gradient: every context's was written
    assert not trainer._params_to_init
    weight = net.embed_weight.row_sparse_data(mx.nd.arange(0, 4, ctx=ctxs[0])).asnumpy()
    # d(sum of dense outputs)/d(embedding row) = the two dense output rows' weights (1+1)
    # per use; rows 0 and 1 are used once, row 2 twice, row 3 never
    np.testing.assert_array_equal(weight[:, 0], [-1, -1, -3, 1])
