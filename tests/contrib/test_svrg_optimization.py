"""mx.contrib.svrg_optimization: SVRGModule's updates against the SVRG rule
w -= lr * (g_i(w) - g_i(w_snapshot) + mu) worked out by hand with NumPy on a linear
model, and _SVRGOptimizer's routing of KVStore keys."""
import numpy as np
import pytest

import mxnet as mx
from mxnet.contrib.svrg_optimization.svrg_module import SVRGModule
from mxnet.contrib.svrg_optimization.svrg_optimizer import _SVRGOptimizer

W0 = np.array([[0.5, -0.3]], dtype=np.float32)
B0 = np.array([0.1], dtype=np.float32)


def _data(n, seed=0):
    rng = np.random.RandomState(seed)
    x = rng.uniform(-1, 1, (n, 2)).astype(np.float32)
    y = (x @ np.array([1.5, -2.0]) + 0.5).astype(np.float32)
    return x, y


def _module(x, y, batch_size, context=mx.cpu(), update_freq=2, kvstore=None, lr=0.1,
            **kwargs):
    it = mx.io.NDArrayIter(x, y, batch_size=batch_size, shuffle=False,
                           label_name="lin_reg_label")
    data = mx.sym.Variable("data")
    net = mx.sym.LinearRegressionOutput(mx.sym.FullyConnected(data, name="fc1", num_hidden=1),
                                        mx.sym.Variable("lin_reg_label"), name="lro")
    mod = SVRGModule(net, data_names=["data"], label_names=["lin_reg_label"],
                     context=context, update_freq=update_freq, **kwargs)
    mod.bind(it.provide_data, it.provide_label)
    mod.init_params(arg_params={"fc1_weight": mx.nd.array(W0), "fc1_bias": mx.nd.array(B0)})
    mod.init_optimizer(kvstore=kvstore, optimizer="sgd",
                       optimizer_params=(("learning_rate", lr),))
    return it, mod


def _batch_grad(w, b, x, y):
    """Gradient of 1/2 * sum((x.w + b - y)^2) over the rows of x (what
    LinearRegressionOutput back-propagates for a batch, before rescale_grad)."""
    r = x @ w[0] + b[0] - y
    return (r @ x)[None, :], np.array([r.sum()], dtype=np.float32)


def _params(mod):
    arg, _ = mod.get_params()
    return arg["fc1_weight"].asnumpy(), arg["fc1_bias"].asnumpy()


def test_update_full_grads_is_mean_batch_gradient_at_snapshot():
    x, y = _data(12)
    it, mod = _module(x, y, batch_size=4)
    mod.update_full_grads(it)
    grads = [_batch_grad(W0, B0, x[i:i + 4], y[i:i + 4]) for i in range(0, 12, 4)]
    mu_w = np.mean([g[0] for g in grads], axis=0)
    mu_b = np.mean([g[1] for g in grads], axis=0)
    np.testing.assert_allclose(mod._param_dict[0]["fc1_weight"].asnumpy(), mu_w, rtol=1e-5)
    np.testing.assert_allclose(mod._param_dict[0]["fc1_bias"].asnumpy(), mu_b, rtol=1e-5)


def test_update_full_grads_discounts_padding():
    # 10 examples in batches of 4: the last batch holds 2 real examples and 2 padding
    # ones (NDArrayIter wraps around to the first examples)
    x, y = _data(10)
    it, mod = _module(x, y, batch_size=4)
    mod.update_full_grads(it)
    xs = np.concatenate([x, x[:2]])
    ys = np.concatenate([y, y[:2]])
    total = sum(_batch_grad(W0, B0, xs[i:i + 4], ys[i:i + 4])[0] for i in range(0, 12, 4))
    np.testing.assert_allclose(mod._param_dict[0]["fc1_weight"].asnumpy(),
                               total / (3 - 2 / 4), rtol=1e-5)


def test_svrg_steps_follow_the_svrg_rule():
    x, y = _data(12)
    lr, bs = 0.1, 4
    it, mod = _module(x, y, batch_size=bs, lr=lr)
    mod.update_full_grads(it)
    batches = [(x[i:i + bs], y[i:i + bs]) for i in range(0, 12, bs)]
    mu = [np.mean([_batch_grad(W0, B0, xb, yb)[k] for xb, yb in batches], axis=0)
          for k in range(2)]
    w, b = W0.copy(), B0.copy()
    it.reset()
    for batch, (xb, yb) in zip(it, batches):
        mod.forward_backward(batch)
        mod.update()
        g_cur = _batch_grad(w, b, xb, yb)
        g_snap = _batch_grad(W0, B0, xb, yb)
        # rescale_grad is 1/batch_size, as for a plain Module
        w = w - lr / bs * (g_cur[0] - g_snap[0] + mu[0])
        b = b - lr / bs * (g_cur[1] - g_snap[1] + mu[1])
        got_w, got_b = _params(mod)
        np.testing.assert_allclose(got_w, w, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(got_b, b, rtol=1e-5, atol=1e-6)
    # the steps moved the weights, so the later steps used g_i(w) != g_i(w_snapshot)
    assert np.abs(w - W0).max() > 1e-2


def test_new_snapshot_recomputes_full_gradient_from_scratch():
    x, y = _data(12)
    it, mod = _module(x, y, batch_size=4)
    mod.update_full_grads(it)
    it.reset()
    for batch in it:
        mod.forward_backward(batch)
        mod.update()
    w, b = _params(mod)
    mod.update_full_grads(it)
    expected = np.mean([_batch_grad(w, b, x[i:i + 4], y[i:i + 4])[0]
                        for i in range(0, 12, 4)], axis=0)
    np.testing.assert_allclose(mod._param_dict[0]["fc1_weight"].asnumpy(), expected,
                               rtol=1e-5, atol=1e-6)
    snap, _ = mod._mod_aux.get_params()
    np.testing.assert_allclose(snap["fc1_weight"].asnumpy(), w)


def test_plain_forward_leaves_gradients_uncorrected():
    x, y = _data(8)
    it, mod = _module(x, y, batch_size=4)
    mod.update_full_grads(it)
    it.reset()
    batch = next(it)
    mod.forward(batch)           # not a training forward: no snapshot pass
    mod.backward()
    expected = _batch_grad(W0, B0, x[:4], y[:4])[0]
    np.testing.assert_allclose(mod._exec_group.grad_arrays[0][0].asnumpy(), expected,
                               rtol=1e-5)


@pytest.mark.parametrize("context,kvstore", [
    (mx.cpu(), "local"),                         # one device: no store
    (mx.cpu(), "kv"),                            # a store that runs the optimizer
    ([mx.cpu(0), mx.cpu(1)], "local"),           # full gradients summed over devices
])
def test_devices_and_kvstore_give_the_same_training(context, kvstore):
    x, y = _data(16)

    def train(context, kvstore):
        if kvstore == "kv":
            kvstore = mx.kv.create("local")
        it, mod = _module(x, y, batch_size=8, context=context, kvstore=kvstore)
        for epoch in range(3):
            if epoch % mod.update_freq == 0:
                mod.update_full_grads(it)
            it.reset()
            for batch in it:
                mod.forward_backward(batch)
                mod.update()
        return _params(mod), mod

    (w_ref, b_ref), _ = train(mx.cpu(), None)
    (w, b), mod = train(context, kvstore)
    if kvstore == "kv":
        assert mod._update_on_kvstore
    np.testing.assert_allclose(w, w_ref, rtol=1e-5)
    np.testing.assert_allclose(b, b_ref, rtol=1e-5)
    assert np.abs(w_ref - W0).max() > 1e-2


def test_fit_lowers_the_loss_and_refreshes_every_update_freq_epochs(monkeypatch):
    x, y = _data(64)
    it = mx.io.NDArrayIter(x, y, batch_size=16, shuffle=False, label_name="lin_reg_label")
    data = mx.sym.Variable("data")
    net = mx.sym.LinearRegressionOutput(mx.sym.FullyConnected(data, name="fc1", num_hidden=1),
                                        mx.sym.Variable("lin_reg_label"), name="lro")
    mod = SVRGModule(net, data_names=["data"], label_names=["lin_reg_label"], update_freq=3)
    refreshed = []
    real = SVRGModule.update_full_grads

    def spy(self, train_data):
        refreshed.append(len(refreshed))
        return real(self, train_data)
    monkeypatch.setattr(SVRGModule, "update_full_grads", spy)

    before = np.mean(y ** 2)                     # the loss of the all-zero model
    mod.fit(it, eval_metric="mse", optimizer="sgd", num_epoch=7, initializer=mx.init.Zero(),
            optimizer_params=(("learning_rate", 0.2),))
    after = mod.score(it, "mse")[0][1]
    assert len(refreshed) == 3                   # epochs 0, 3 and 6
    assert after < before / 50, (before, after)


def test_fixed_parameters_stay_fixed():
    x, y = _data(8)
    it, mod = _module(x, y, batch_size=4, fixed_param_names=["fc1_bias"])
    mod.update_full_grads(it)
    it.reset()
    for batch in it:
        mod.forward_backward(batch)
        mod.update()
    w, b = _params(mod)
    np.testing.assert_array_equal(b, B0)
    assert np.abs(w - W0).max() > 1e-3


@pytest.mark.parametrize("freq", [None, 0, -1, 2.0, True])
def test_update_freq_must_be_a_positive_int(freq):
    net = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=1)
    with pytest.raises(TypeError, match="update_freq") as info:
        SVRGModule(net, label_names=None, update_freq=freq)
    assert isinstance(info.value, mx.MXNetError)


def test_update_full_grads_needs_the_optimizer():
    x, y = _data(8)
    it = mx.io.NDArrayIter(x, y, batch_size=4, label_name="lin_reg_label")
    net = mx.sym.LinearRegressionOutput(
        mx.sym.FullyConnected(mx.sym.Variable("data"), name="fc1", num_hidden=1),
        mx.sym.Variable("lin_reg_label"))
    mod = SVRGModule(net, label_names=["lin_reg_label"], update_freq=1)
    mod.bind(it.provide_data, it.provide_label)
    mod.init_params()
    with pytest.raises(mx.MXNetError, match="init_optimizer"):
        mod.update_full_grads(it)


def test_optimizer_routes_full_keys_to_assignment():
    opt = _SVRGOptimizer(default_optimizer="sgd", learning_rate=0.5, momentum=0.9,
                         param_idx2name={0: "w", 1: "w_full"})
    assert opt.default_opt.momentum == 0.9 and opt.default_opt.lr == 0.5
    kv = mx.kv.create("local")
    kv.set_optimizer(opt)
    for key in ("fullyconnected0_weight", "fullyconnected0_weight_full"):
        kv.init(key, mx.nd.array([1.0, 2.0]))
        kv.push(key, mx.nd.array([4.0, 4.0]))
    out = mx.nd.zeros(2)
    kv.pull("fullyconnected0_weight", out=out)
    # SGD on a model parameter (whose name merely starts with 'full')
    np.testing.assert_allclose(out.asnumpy(), [1 - 0.5 * 4, 2 - 0.5 * 4])
    kv.pull("fullyconnected0_weight_full", out=out)
    np.testing.assert_allclose(out.asnumpy(), [4.0, 4.0])       # assigned


def test_optimizer_rejects_a_non_optimizer_default():
    with pytest.raises(TypeError, match="default_optimizer"):
        _SVRGOptimizer(default_optimizer=3)
