"""mx.mod.Module: training steps against a NumPy MLP with MXNet's SGD rule, data
parallelism, checkpoints (the MXNet 1.9.1 fixture), predict/score, reshape, input
gradients, fixed parameters, monitor, state machine errors."""
import logging
import os

import numpy as np
import pytest

import mxnet as mx
from mxnet.test_utils import assert_almost_equal

from common import fixture_path

N_IN, N_HID, N_OUT = 10, 16, 3


def mlp():
    data = mx.sym.var("data")
    fc1 = mx.sym.FullyConnected(data, num_hidden=N_HID, name="fc1")
    act = mx.sym.Activation(fc1, act_type="relu", name="relu1")
    fc2 = mx.sym.FullyConnected(act, num_hidden=N_OUT, name="fc2")
    return mx.sym.SoftmaxOutput(fc2, name="softmax")


def make_data(n=60, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.randn(n, N_IN).astype(np.float32)
    y = rng.randint(0, N_OUT, n).astype(np.float32)
    return X, y


def init_params(seed=1):
    rng = np.random.RandomState(seed)
    return {"fc1_weight": rng.randn(N_HID, N_IN).astype(np.float32) * 0.3,
            "fc1_bias": rng.randn(N_HID).astype(np.float32) * 0.1,
            "fc2_weight": rng.randn(N_OUT, N_HID).astype(np.float32) * 0.3,
            "fc2_bias": rng.randn(N_OUT).astype(np.float32) * 0.1}


def nd_params(params):
    return {k: mx.nd.array(v) for k, v in params.items()}


# ---- NumPy reference: forward, backward, MXNet's SGD-with-momentum rule ---------------
def np_forward(p, X):
    h = X @ p["fc1_weight"].T + p["fc1_bias"]
    a = np.maximum(h, 0)
    z = a @ p["fc2_weight"].T + p["fc2_bias"]
    e = np.exp(z - z.max(1, keepdims=True))
    return h, a, e / e.sum(1, keepdims=True)


def np_grads(p, X, y):
    h, a, prob = np_forward(p, X)
    dz = prob.copy()
    dz[np.arange(len(y)), y.astype(int)] -= 1          # SoftmaxOutput, normalization null
    da = dz @ p["fc2_weight"]
    dh = da * (h > 0)
    return {"fc2_weight": dz.T @ a, "fc2_bias": dz.sum(0),
            "fc1_weight": dh.T @ X, "fc1_bias": dh.sum(0)}


def np_sgd_train(p, X, y, batch, epochs, lr, momentum=0.0, wd=0.0):
    p = {k: v.astype(np.float64) for k, v in p.items()}
    mom = {k: np.zeros_like(v) for k, v in p.items()}
    for _ in range(epochs):
        for s in range(0, len(X), batch):
            g = np_grads(p, X[s:s + batch].astype(np.float64), y[s:s + batch])
            for k in p:
                # weight decay applies to *_weight only (wd_mult 0 for biases)
                w_d = wd if k.endswith("_weight") else 0.0
                mom[k] = momentum * mom[k] - lr * (g[k] / batch + w_d * p[k])
                p[k] = p[k] + mom[k]
    return p


def fitted_module(context=mx.cpu(), kvstore="local", epochs=2, batch=20, lr=0.3,
                  momentum=0.9, wd=0.01, **mod_kwargs):
    X, y = make_data()
    mod = mx.mod.Module(mlp(), context=context, **mod_kwargs)
    mod.fit(mx.io.NDArrayIter(X, y, batch), num_epoch=epochs, kvstore=kvstore,
            arg_params=nd_params(init_params()), optimizer="sgd",
            optimizer_params={"learning_rate": lr, "momentum": momentum, "wd": wd})
    return mod


def test_fit_matches_numpy_sgd():
    X, y = make_data()
    mod = fitted_module()
    ref = np_sgd_train(init_params(), X, y, 20, 2, 0.3, 0.9, 0.01)
    arg, aux = mod.get_params()
    assert aux == {}
    for k, v in ref.items():
        assert_almost_equal(arg[k].asnumpy(), v, rtol=1e-4, atol=1e-5)
        assert arg[k].context == mx.cpu()


def test_manual_steps_match_numpy():
    """forward/backward/update by hand, with an Optimizer object."""
    X, y = make_data(40)
    mod = mx.mod.Module(mlp())
    mod.bind(data_shapes=[("data", (20, N_IN))], label_shapes=[("softmax_label", (20,))])
    mod.init_params(arg_params=nd_params(init_params()))
    mod.init_optimizer(optimizer=mx.optimizer.SGD(learning_rate=0.1, rescale_grad=1 / 20.))
    for s in (0, 20):
        batch = mx.io.DataBatch([mx.nd.array(X[s:s + 20])], [mx.nd.array(y[s:s + 20])])
        mod.forward_backward(batch)
        mod.update()
    ref = np_sgd_train(init_params(), X, y, 20, 1, 0.1)
    for k, v in ref.items():
        assert_almost_equal(mod.get_params()[0][k].asnumpy(), v, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("kvstore,work_load", [("local", None), ("device", None),
                                               ("local", [1, 3])])
def test_data_parallel_matches_single_device(kvstore, work_load):
    X, y = make_data()
    mod = fitted_module(context=[mx.cpu(0), mx.cpu(1)], kvstore=kvstore,
                        work_load_list=work_load)
    assert mod._kvstore is not None and mod._update_on_kvstore
    ref = np_sgd_train(init_params(), X, y, 20, 2, 0.3, 0.9, 0.01)
    for k, v in ref.items():
        assert_almost_equal(mod.get_params()[0][k].asnumpy(), v, rtol=1e-4, atol=1e-5)
    # merged outputs cover the whole batch; unmerged ones are the devices' slices
    assert mod.get_outputs()[0].shape == (20, N_OUT)
    per_dev = mod.get_outputs(merge_multi_context=False)[0]
    sizes = [o.shape[0] for o in per_dev]
    assert sizes == ([10, 10] if work_load is None else [5, 15])
    assert [o.context for o in per_dev] == [mx.cpu(0), mx.cpu(1)]


def test_explicit_kvstore_on_one_device():
    """A KVStore object is used even with one device (updates run on the store)."""
    X, y = make_data()
    store = mx.kv.create("local")
    mod = fitted_module(kvstore=store)
    assert mod._kvstore is store and mod._update_on_kvstore
    ref = np_sgd_train(init_params(), X, y, 20, 2, 0.3, 0.9, 0.01)
    for k, v in ref.items():
        assert_almost_equal(mod.get_params()[0][k].asnumpy(), v, rtol=1e-4, atol=1e-5)


def test_presliced_batches_one_per_device():
    X, y = make_data(20)
    mod = mx.mod.Module(mlp(), context=[mx.cpu(0), mx.cpu(1)])
    mod.bind([("data", (20, N_IN))], [("softmax_label", (20,))], for_training=False)
    mod.init_params(arg_params=nd_params(init_params()))
    parts = [mx.io.DataBatch([mx.nd.array(X[s:s + 10])], [mx.nd.array(y[s:s + 10])])
             for s in (0, 10)]
    mod.forward(parts, is_train=False)
    prob = np_forward(init_params(), X)[2]
    assert_almost_equal(mod.get_outputs()[0].asnumpy(), prob, rtol=1e-5, atol=1e-6)
    metric = mx.metric.Accuracy()
    mod.update_metric(metric, [p.label for p in parts], pre_sliced=True)
    assert metric.get()[1] == pytest.approx(float((prob.argmax(1) == y).mean()))


def test_data_parallel_local_updates(monkeypatch):
    """MXNET_UPDATE_ON_KVSTORE=0: the store only sums, an updater per device runs."""
    monkeypatch.setenv("MXNET_UPDATE_ON_KVSTORE", "0")
    X, y = make_data()
    mod = fitted_module(context=[mx.cpu(0), mx.cpu(1)])
    assert mod._kvstore is not None and not mod._update_on_kvstore
    ref = np_sgd_train(init_params(), X, y, 20, 2, 0.3, 0.9, 0.01)
    for k, v in ref.items():
        assert_almost_equal(mod.get_params()[0][k].asnumpy(), v, rtol=1e-4, atol=1e-5)


def test_fit_logs_like_mxnet(caplog):
    X, y = make_data()
    mod = mx.mod.Module(mlp())
    with caplog.at_level(logging.INFO):
        mod.fit(mx.io.NDArrayIter(X, y, 20), eval_data=mx.io.NDArrayIter(X, y, 20),
                num_epoch=2, optimizer_params={"learning_rate": 0.1})
    msgs = [r.getMessage() for r in caplog.records]
    for epoch in (0, 1):
        assert any(m.startswith(f"Epoch[{epoch}] Train-accuracy=") for m in msgs)
        assert any(m.startswith(f"Epoch[{epoch}] Time cost=") for m in msgs)
        assert any(m.startswith(f"Epoch[{epoch}] Validation-accuracy=") for m in msgs)
    # validation accuracy equals score() with the final parameters
    _, _, prob = np_forward({k: v.asnumpy() for k, v in mod.get_params()[0].items()}, X)
    acc = float((prob.argmax(1) == y).mean())
    last = [m for m in msgs if m.startswith("Epoch[1] Validation-accuracy=")][0]
    assert abs(float(last.split("=")[1]) - acc) < 1e-6
    assert mod.score(mx.io.NDArrayIter(X, y, 20), "acc") == [("accuracy", pytest.approx(acc))]


def test_callbacks_receive_mxnet_arguments(tmp_path):
    X, y = make_data()
    seen_batches, seen_epochs = [], []

    def batch_cb(param):
        seen_batches.append((param.epoch, param.nbatch, param.eval_metric.get()[0]))

    def epoch_cb(epoch, symbol, arg, aux):
        seen_epochs.append((epoch, symbol.list_outputs(), sorted(arg)))
    mod = mx.mod.Module(mlp())
    prefix = str(tmp_path / "mlp")
    mod.fit(mx.io.NDArrayIter(X, y, 20), num_epoch=2, batch_end_callback=batch_cb,
            epoch_end_callback=[epoch_cb, mx.callback.do_checkpoint(prefix)])
    assert seen_batches == [(e, b, "accuracy") for e in (0, 1) for b in range(3)]
    assert seen_epochs == [(e, ["softmax_output"], sorted(init_params())) for e in (0, 1)]
    assert os.path.exists(prefix + "-symbol.json") and os.path.exists(prefix + "-0002.params")


def test_predict_pads_merges_and_iterates():
    X, y = make_data(50)
    mod = mx.mod.Module(mlp())
    mod.bind([("data", (20, N_IN))], [("softmax_label", (20,))], for_training=False)
    mod.init_params(arg_params=nd_params(init_params()))
    _, _, ref = np_forward(init_params(), X)
    it = mx.io.NDArrayIter(X, y, 20)                        # last batch padded by 10
    out = mod.predict(it)
    assert out.shape == (50, N_OUT)
    assert_almost_equal(out.asnumpy(), ref, rtol=1e-5, atol=1e-6)
    per_batch = mod.predict(it, merge_batches=False)
    assert [b[0].shape[0] for b in per_batch] == [20, 20, 10]
    assert isinstance(mod.predict(it, always_output_list=True), list)
    assert len(mod.predict(it, num_batch=1)) == 20
    rows = 0
    for outputs, nbatch, batch in mod.iter_predict(it):
        assert_almost_equal(outputs[0].asnumpy(), ref[rows:rows + outputs[0].shape[0]],
                            rtol=1e-5, atol=1e-6)
        rows += outputs[0].shape[0]
    assert rows == 50
    # a single array: one forward, first output
    assert_almost_equal(mod.predict(X[:20]).asnumpy(), ref[:20], rtol=1e-5, atol=1e-6)


def test_forward_reshapes_on_new_batch_size():
    X, y = make_data(7)
    mod = mx.mod.Module(mlp())
    mod.bind([("data", (20, N_IN))], [("softmax_label", (20,))], for_training=False)
    mod.init_params(arg_params=nd_params(init_params()))
    mod.forward(mx.io.DataBatch([mx.nd.array(X)], [mx.nd.array(y)]), is_train=False)
    assert mod.data_shapes[0].shape == (7, N_IN)
    assert mod.output_shapes == [("softmax_output", (7, N_OUT))]
    assert_almost_equal(mod.get_outputs()[0].asnumpy(), np_forward(init_params(), X)[2],
                        rtol=1e-5, atol=1e-6)
    # as in MXNet, a label whose shape is not given cannot follow the data's new shape
    bare = mx.mod.Module(mlp())
    with pytest.warns(UserWarning, match="label_shapes don't match"):
        bare.bind([("data", (20, N_IN))], for_training=False)
    bare.init_params()
    with pytest.raises(mx.MXNetError, match="softmax_label"), pytest.warns(UserWarning):
        bare.forward(mx.io.DataBatch([mx.nd.array(X)]), is_train=False)


def test_input_grads_and_out_grads():
    """A network without a loss: backward with out_grads; input gradient of FC."""
    rng = np.random.RandomState(3)
    W = rng.randn(4, 6).astype(np.float32)
    X = rng.randn(5, 6).astype(np.float32)
    G = rng.randn(5, 4).astype(np.float32)
    net = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=4, no_bias=True, name="fc")
    mod = mx.mod.Module(net, label_names=None)
    mod.bind([("data", (5, 6))], inputs_need_grad=True)
    mod.init_params(arg_params={"fc_weight": mx.nd.array(W)})
    mod.forward(mx.io.DataBatch([mx.nd.array(X)]), is_train=True)
    mod.backward([mx.nd.array(G)])
    assert_almost_equal(mod.get_input_grads()[0].asnumpy(), G @ W, rtol=1e-5, atol=1e-5)
    assert_almost_equal(mod._exec_group.grad_arrays[0][0].asnumpy(), G.T @ X,
                        rtol=1e-5, atol=1e-5)


def test_grad_req_add_accumulates():
    rng = np.random.RandomState(4)
    X = rng.randn(5, 6).astype(np.float32)
    G = rng.randn(5, 4).astype(np.float32)
    net = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=4, no_bias=True, name="fc")
    mod = mx.mod.Module(net, label_names=None)
    mod.bind([("data", (5, 6))], grad_req="add")
    mod.init_params()
    for _ in range(2):
        mod.forward(mx.io.DataBatch([mx.nd.array(X)]), is_train=True)
        mod.backward([mx.nd.array(G)])
    assert_almost_equal(mod._exec_group.grad_arrays[0][0].asnumpy(), 2 * G.T @ X,
                        rtol=1e-5, atol=1e-5)


def test_fixed_param_names_are_not_updated():
    X, y = make_data()
    mod = fitted_module(fixed_param_names=["fc1_weight", "fc1_bias"], momentum=0.0, wd=0.0)
    arg = mod.get_params()[0]
    p0 = init_params()
    assert_almost_equal(arg["fc1_weight"].asnumpy(), p0["fc1_weight"])
    assert not np.allclose(arg["fc2_weight"].asnumpy(), p0["fc2_weight"])


def test_fixture_checkpoint_predicts_mxnet_output():
    sym, arg, aux = mx.model.load_checkpoint(fixture_path("module", "lenet"), 1)
    assert sorted(aux) == ["bn1_moving_mean", "bn1_moving_var", "bn2_moving_mean",
                           "bn2_moving_var"]
    x = np.load(fixture_path("module", "input_batch.npy"))
    expected = np.load(fixture_path("module", "expected_prob.npy"))
    mod = mx.mod.Module(sym, context=mx.cpu())
    mod.bind([("data", x.shape)], [("softmax_label", (x.shape[0],))], for_training=False)
    mod.set_params(arg, aux)
    mod.forward(mx.io.DataBatch([mx.nd.array(x)]), is_train=False)
    prob = mod.get_outputs()[0].asnumpy()
    assert_almost_equal(prob, expected, rtol=1e-4, atol=1e-6)
    assert list(prob.argmax(1)) == [9, 2, 1, 1, 6, 1, 6, 6]
    # Module.load reaches the same through bind (params pushed at bind)
    mod2 = mx.mod.Module.load(fixture_path("module", "lenet"), 1)
    mod2.bind([("data", x.shape)], [("softmax_label", (x.shape[0],))], for_training=False)
    assert_almost_equal(mod2.predict(x).asnumpy(), expected, rtol=1e-4, atol=1e-6)


def test_checkpoint_with_optimizer_states_resumes_exactly(tmp_path):
    X, y = make_data()
    prefix = str(tmp_path / "mlp")
    opt_params = {"learning_rate": 0.2, "momentum": 0.9}
    straight = mx.mod.Module(mlp())
    straight.fit(mx.io.NDArrayIter(X, y, 20), num_epoch=2, optimizer_params=opt_params,
                 arg_params=nd_params(init_params()))
    first = mx.mod.Module(mlp())
    first.fit(mx.io.NDArrayIter(X, y, 20), num_epoch=1, optimizer_params=opt_params,
              arg_params=nd_params(init_params()))
    first.save_checkpoint(prefix, 1, save_optimizer_states=True)
    for suffix in ("-symbol.json", "-0001.params", "-0001.states"):
        assert os.path.exists(prefix + suffix)
    saved = mx.nd.load(prefix + "-0001.params")
    assert sorted(saved) == sorted("arg:" + k for k in init_params())
    resumed = mx.mod.Module.load(prefix, 1, load_optimizer_states=True)
    with pytest.warns(UserWarning, match="already initialized"):   # as MXNet warns
        resumed.fit(mx.io.NDArrayIter(X, y, 20), begin_epoch=1, num_epoch=2,
                    optimizer_params=opt_params)
    for k in init_params():
        assert_almost_equal(resumed.get_params()[0][k].asnumpy(),
                            straight.get_params()[0][k].asnumpy(), rtol=1e-5, atol=1e-6)


def test_save_load_params_and_set_params(tmp_path):
    mod = mx.mod.Module(mlp())
    mod.bind([("data", (4, N_IN))], [("softmax_label", (4,))])
    mod.init_params(arg_params=nd_params(init_params()))
    fname = str(tmp_path / "p.params")
    mod.save_params(fname)
    other = mx.mod.Module(mlp())
    other.bind([("data", (4, N_IN))], [("softmax_label", (4,))])
    other.init_params(initializer=mx.init.Zero())
    other.load_params(fname)
    for k, v in init_params().items():
        assert_almost_equal(other.get_params()[0][k].asnumpy(), v)
    with pytest.raises(RuntimeError, match="fc2_bias is not presented"):
        other.set_params({k: v for k, v in nd_params(init_params()).items()
                          if k != "fc2_bias"}, {})
    other.set_params({"fc2_bias": mx.nd.ones(N_OUT)}, {}, allow_missing=True)
    assert_almost_equal(other.get_params()[0]["fc2_bias"].asnumpy(), np.ones(N_OUT))


def test_init_params_uses_initializer_in_name_order():
    mx.random.seed(7)
    mod = mx.mod.Module(mlp())
    mod.bind([("data", (4, N_IN))], [("softmax_label", (4,))])
    mod.init_params(initializer=mx.init.Uniform(0.5))
    arg = mod.get_params()[0]
    assert np.all(arg["fc1_bias"].asnumpy() == 0)       # biases: zero
    w = arg["fc1_weight"].asnumpy()
    assert np.abs(w).max() <= 0.5 and w.std() > 0.1
    with pytest.warns(UserWarning, match="already initialized"):
        mod.init_params()


def test_state_machine_errors():
    mod = mx.mod.Module(mlp())
    batch = mx.io.DataBatch([mx.nd.zeros((4, N_IN))], [mx.nd.zeros(4)])
    with pytest.raises(AssertionError):
        mod.forward(batch)
    with pytest.raises(AssertionError):
        mod.init_params()
    mod.bind([("data", (4, N_IN))], [("softmax_label", (4,))])
    with pytest.raises(AssertionError):
        mod.init_optimizer()
    mod.init_params()
    with pytest.raises(AssertionError):
        mod.update()
    with pytest.raises(ValueError, match="data_names"):
        mx.mod.Module(mlp(), data_names=["x"])
    with pytest.raises(ValueError, match="don't match"):
        mx.mod.Module(mlp()).bind([("x", (4, N_IN))])
    with pytest.raises(AssertionError, match="number of epochs"):
        mx.mod.Module(mlp()).fit(mx.io.NDArrayIter(np.zeros((4, N_IN)), np.zeros(4), 2))


def test_properties():
    mod = mx.mod.Module(mlp())
    assert mod.data_names == ["data"] and mod.label_names == ["softmax_label"]
    assert mod.output_names == ["softmax_output"]
    mod.bind([("data", (4, N_IN))], [("softmax_label", (4,))])
    assert [(d.name, d.shape) for d in mod.data_shapes] == [("data", (4, N_IN))]
    assert [(d.name, d.shape) for d in mod.label_shapes] == [("softmax_label", (4,))]
    assert mod.output_shapes == [("softmax_output", (4, N_OUT))]
    assert mod.symbol.list_outputs() == ["softmax_output"]


def test_monitor_reports_output_statistics(caplog):
    X, y = make_data(20)
    mod = mx.mod.Module(mlp())
    mod.bind([("data", (20, N_IN))], [("softmax_label", (20,))])
    mod.init_params(arg_params=nd_params(init_params()))
    mon = mx.monitor.Monitor(1, pattern="fc1.*")
    mod.install_monitor(mon)
    mon.tic()
    mod.forward(mx.io.DataBatch([mx.nd.array(X)], [mx.nd.array(y)]), is_train=False)
    res = {name: float(value.split()[0]) for _, name, value in mon.toc()}
    h = X @ init_params()["fc1_weight"].T + init_params()["fc1_bias"]
    assert set(res) == {"fc1_output", "fc1_weight", "fc1_bias"}
    assert res["fc1_output"] == pytest.approx(np.sqrt((h ** 2).mean()), rel=1e-4)
    w = init_params()["fc1_weight"]
    assert res["fc1_weight"] == pytest.approx(np.sqrt((w ** 2).mean()), rel=1e-4)
    assert mon.toc() == []                     # nothing collected outside tic/toc


def test_reshape_and_rebind_keep_params():
    mod = mx.mod.Module(mlp())
    mod.bind([("data", (20, N_IN))], [("softmax_label", (20,))])
    mod.init_params(arg_params=nd_params(init_params()))
    mod.reshape([("data", (5, N_IN))], [("softmax_label", (5,))])
    X, _ = make_data(5)
    mod.forward(mx.io.DataBatch([mx.nd.array(X)]), is_train=False)
    assert_almost_equal(mod.get_outputs()[0].asnumpy(), np_forward(init_params(), X)[2],
                        rtol=1e-5, atol=1e-6)
    with pytest.warns(UserWarning, match="label_shapes don't match"):
        mod.bind([("data", (5, N_IN))], for_training=False, force_rebind=True)
    assert not mod.for_training
    mod.forward(mx.io.DataBatch([mx.nd.array(X)]), is_train=False)
    assert_almost_equal(mod.get_outputs()[0].asnumpy(), np_forward(init_params(), X)[2],
                        rtol=1e-5, atol=1e-6)


def test_state_names_hold_values_across_batches():
    net = mx.sym.var("data") * mx.sym.var("scale")          # shapes inferred equal
    mod = mx.mod.Module(net, label_names=None, state_names=["scale"])
    mod.bind([("data", (2, 3))], for_training=False)
    mod.init_params()
    mod.set_states(value=2.0)
    X = np.arange(6, dtype=np.float32).reshape(2, 3)
    mod.forward(mx.io.DataBatch([mx.nd.array(X)]), is_train=False)
    assert_almost_equal(mod.get_outputs()[0].asnumpy(), 2 * X)
    states = mod.get_states(merge_multi_context=False)
    assert len(states) == 1 and states[0][0].shape == (2, 3)
    mod.set_states(states=[[mx.nd.full((2, 3), 3.0)]])
    mod.forward(mx.io.DataBatch([mx.nd.array(X)]), is_train=False)
    assert_almost_equal(mod.get_outputs()[0].asnumpy(), 3 * X)


def test_group2ctxs_one_context_per_group_or_per_device():
    # a group's context may be one Context, a one-element list (both: every device)
    # or one per device; gradients come back on each group's context
    import numpy as np
    with mx.AttrScope(ctx_group="dev1"):
        a = mx.sym.var("a") * 2
    with mx.AttrScope(ctx_group="dev2"):
        c = a + mx.sym.var("b")
    shape = (2, 5)
    grads = []
    for g2c in ({"dev1": mx.cpu(1), "dev2": [mx.cpu(2)]},
                {"dev1": [mx.cpu(1), mx.cpu(3)], "dev2": [mx.cpu(2), mx.cpu(4)]}, None):
        mod = mx.mod.Module(c, context=[mx.cpu(0), mx.cpu(5)], data_names=["a", "b"],
                            label_names=None, group2ctxs=g2c)
        mod.bind(data_shapes=[("a", shape), ("b", shape)], inputs_need_grad=True)
        mod.init_params()
        mod.forward(mx.io.DataBatch(data=[mx.nd.ones(shape), mx.nd.ones(shape)]),
                    is_train=True)
        mod.backward([mx.nd.ones(shape)])
        grads.append([g.asnumpy() for g in mod.get_input_grads()])
    for got in grads[:2]:
        np.testing.assert_array_equal(got[0], np.full(shape, 2.0))
        np.testing.assert_array_equal(got[1], np.ones(shape))
        np.testing.assert_array_equal(got[0], grads[2][0])


def test_row_sparse_parameter_keeps_its_storage():
    """A Variable(stype='row_sparse') parameter is bound, kept on the CPU and
    initialised as row_sparse (csr data, dot(csr, w) model)."""
    x = mx.sym.var("data", stype="csr")
    v = mx.sym.var("v", shape=(20, 1), init=mx.init.Uniform(scale=0.1), stype="row_sparse")
    out = mx.sym.LinearRegressionOutput(mx.sym.dot(x, v), mx.sym.var("label"), name="out")
    mod = mx.mod.Module(out, data_names=["data"], label_names=["label"])
    mod.bind(data_shapes=[("data", (8, 20))], label_shapes=[("label", (8, 1))])
    mod.init_params()
    w = mod._arg_params["v"]
    assert w.stype == "row_sparse" and np.abs(w.asnumpy()).sum() > 0
    assert mod._exec_group.execs[0].arg_dict["data"].stype == "csr"
    arg, _ = mod.get_params()
    np.testing.assert_array_equal(arg["v"].asnumpy(), w.asnumpy())


def test_prelu_slopes_start_at_a_quarter():
    # MXNet gives PReLU's gamma variable an initializer attribute: Constant(0.25)
    sym = mx.sym.LeakyReLU(data=mx.sym.var("data"), act_type="prelu", name="leakyrelu0")
    assert sym.attr_dict()["leakyrelu0_gamma"]["__init__"] == '["Constant", {"value": 0.25}]'
    mod = mx.mod.Module(sym, label_names=None)
    mod.bind(data_shapes=[("data", (4, 5))])
    mod.init_params()
    np.testing.assert_array_equal(mod.get_params()[0]["leakyrelu0_gamma"].asnumpy(), 0.25)


def test_executor_group_shares_only_inputs_through_shared_data_arrays():
    from mxnet.module.executor_group import DataParallelExecutorGroup
    data = mx.sym.var("data")
    net = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(data, num_hidden=3, name="fc"),
                               name="softmax")
    params = ["fc_weight", "fc_bias"]
    kw = dict(contexts=[mx.cpu(0), mx.cpu(1)], workload=[1, 1],
              data_shapes=[("data", (4, 5))], label_shapes=[("softmax_label", (4,))],
              param_names=params, for_training=True, inputs_need_grad=False)
    first = DataParallelExecutorGroup(symbol=net, **kw)
    for shared in first.shared_data_arrays:
        assert sorted(shared) == ["data", "softmax_label"]
    second = DataParallelExecutorGroup(symbol=net, shared_group=first, **kw)
    for a, b in zip(first.execs, second.execs):
        for name in params:                  # parameters: shared through the executors
            assert mx.test_utils.same_array(a.arg_dict[name], b.arg_dict[name])
        assert mx.test_utils.same_array(a.arg_dict["data"], b.arg_dict["data"])
