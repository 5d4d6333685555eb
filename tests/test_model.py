"""mx.model: checkpoints (format and round trip), the KVStore decision, and the
legacy FeedForward estimator against a NumPy softmax-regression reference."""
import logging
import os
import warnings

import numpy as np
import pytest

import mxnet as mx
from mxnet.test_utils import assert_almost_equal

N_IN, N_OUT = 6, 3


def softmax_net():
    fc = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=N_OUT, name="fc")
    return mx.sym.SoftmaxOutput(fc, name="softmax")


def data(n=40, seed=0):
    centers = np.random.RandomState(42).randn(N_OUT, N_IN) * 2
    rng = np.random.RandomState(seed)
    y = rng.randint(0, N_OUT, n)
    X = (centers[y] + rng.randn(n, N_IN)).astype(np.float32)
    return X, y.astype(np.float32)


def np_softmax_sgd(W, b, X, y, batch, epochs, lr):
    W, b = W.astype(np.float64), b.astype(np.float64)
    for _ in range(epochs):
        for s in range(0, len(X), batch):
            xb, yb = X[s:s + batch], y[s:s + batch]
            z = xb @ W.T + b
            p = np.exp(z - z.max(1, keepdims=True))
            p /= p.sum(1, keepdims=True)
            p[np.arange(len(yb)), yb.astype(int)] -= 1
            W = W - lr * p.T @ xb / batch
            b = b - lr * p.sum(0) / batch
    return W, b


def feedforward(**kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return mx.model.FeedForward(softmax_net(), **kwargs)


# ---- checkpoints ----------------------------------------------------------------------------
def test_checkpoint_format_and_round_trip(tmp_path, caplog):
    net = mx.sym.BatchNorm(mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=4, name="fc"),
                           name="bn")
    rng = np.random.RandomState(0)
    arg = {"fc_weight": mx.nd.array(rng.randn(4, 3)), "fc_bias": mx.nd.array(rng.randn(4)),
           "bn_gamma": mx.nd.ones(4), "bn_beta": mx.nd.zeros(4)}
    aux = {"bn_moving_mean": mx.nd.array(rng.randn(4)), "bn_moving_var": mx.nd.ones(4)}
    prefix = str(tmp_path / "net")
    with caplog.at_level(logging.INFO):
        mx.model.save_checkpoint(prefix, 7, net, arg, aux)
    assert any('Saved checkpoint to "%s-0007.params"' % prefix in r.getMessage()
               for r in caplog.records)
    raw = mx.nd.load(prefix + "-0007.params")
    assert list(raw) == ["arg:" + k for k in arg] + ["aux:" + k for k in aux]
    sym, arg2, aux2 = mx.model.load_checkpoint(prefix, 7)
    assert sym.list_arguments() == net.list_arguments()
    assert sym.list_auxiliary_states() == ["bn_moving_mean", "bn_moving_var"]
    for src, dst in ((arg, arg2), (aux, aux2)):
        assert sorted(src) == sorted(dst)
        for k in src:
            assert_almost_equal(dst[k].asnumpy(), src[k].asnumpy())
    assert mx.model.load_params(prefix, 7)[1].keys() == aux.keys()


def test_load_params_of_empty_file_warns(tmp_path, caplog):
    prefix = str(tmp_path / "empty")
    mx.nd.save(prefix + "-0001.params", {})
    with caplog.at_level(logging.WARNING):
        assert mx.model.load_params(prefix, 1) == ({}, {})
    assert any("is empty" in r.getMessage() for r in caplog.records)


def test_batch_end_param_fields():
    p = mx.model.BatchEndParam(epoch=1, nbatch=2, eval_metric=None, locals={})
    assert p._fields == ("epoch", "nbatch", "eval_metric", "locals")
    assert type(p).__name__ == "BatchEndParams"


# ---- the kvstore decision ------------------------------------------------------------------
def test_create_kvstore_rules(monkeypatch):
    small = {"w": mx.nd.zeros((10, 10))}
    assert mx.model._create_kvstore("local", 1, small) == (None, False)
    kv, on_kv = mx.model._create_kvstore("local", 2, small)
    assert kv.type == "local" and on_kv
    store = mx.kv.create("device")
    assert mx.model._create_kvstore(store, 1, small) == (store, True)
    assert mx.model._create_kvstore(None, 4, small) == (None, False)
    big = {"w": mx.nd.zeros((1024 * 1024 * 16 + 1,))}
    kv, on_kv = mx.model._create_kvstore("local", 2, big)
    assert kv is not None and not on_kv
    monkeypatch.setenv("MXNET_UPDATE_ON_KVSTORE", "0")
    assert not mx.model._create_kvstore("local", 2, small)[1]
    with pytest.raises(TypeError):
        mx.model._create_kvstore(3, 2, small)


# ---- FeedForward ------------------------------------------------------------------------------
def test_feedforward_fit_matches_numpy_sgd(caplog):
    X, y = data()
    rng = np.random.RandomState(1)
    W = rng.randn(N_OUT, N_IN).astype(np.float32) * 0.1
    b = np.zeros(N_OUT, np.float32)
    model = feedforward(num_epoch=2, learning_rate=0.2,
                        arg_params={"fc_weight": mx.nd.array(W), "fc_bias": mx.nd.array(b)})
    with caplog.at_level(logging.INFO):
        # an eval iterator with another batch size: the executors are reshaped
        model.fit(X=mx.io.NDArrayIter(X, y, 10),
                  eval_data=mx.io.NDArrayIter(X, y, 8), logger=logging.getLogger("ff"))
    refW, refb = np_softmax_sgd(W, b, X, y, 10, 2, 0.2)
    assert_almost_equal(model.arg_params["fc_weight"].asnumpy(), refW, rtol=1e-4, atol=1e-5)
    assert_almost_equal(model.arg_params["fc_bias"].asnumpy(), refb, rtol=1e-4, atol=1e-5)
    msgs = [r.getMessage() for r in caplog.records]
    assert any(m.startswith("Epoch[1] Time cost=") for m in msgs)
    assert any(m.startswith("Epoch[1] Validation-accuracy=") for m in msgs)
    # predict/score with the trained weights, against NumPy
    z = X @ refW.T + refb
    prob = np.exp(z - z.max(1, keepdims=True))
    prob /= prob.sum(1, keepdims=True)
    out = model.predict(X)
    assert isinstance(out, np.ndarray) and out.shape == (len(X), N_OUT)
    assert_almost_equal(out, prob, rtol=1e-4, atol=1e-5)
    acc = float((prob.argmax(1) == y).mean())
    assert model.score(mx.io.NDArrayIter(X, y, 10)) == pytest.approx(acc)
    out, d, lab = model.predict(mx.io.NDArrayIter(X, y, 15), return_data=True)
    assert out.shape == (40, N_OUT) and d.shape == (40, N_IN) and lab.shape == (40,)


def test_feedforward_numpy_inputs_and_save_load(tmp_path):
    X, y = data(120)
    Xv, yv = data(60, seed=5)
    model = feedforward(num_epoch=3, numpy_batch_size=20, learning_rate=0.2,
                        initializer=mx.init.Xavier())
    seen = []
    with warnings.catch_warnings():    # FeedForward initialises by name (legacy path)
        warnings.simplefilter("ignore", DeprecationWarning)
        model.fit(X, y, eval_data=(Xv, yv),
                  batch_end_callback=lambda p: seen.append((p.epoch, p.nbatch)))
    assert seen[:2] == [(0, 1), (0, 2)]          # FeedForward counts batches from 1
    assert model.score(mx.io.NDArrayIter(Xv, yv, 20)) > 0.6
    prefix = str(tmp_path / "ff")
    model.save(prefix)
    assert os.path.exists(prefix + "-0003.params")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        loaded = mx.model.FeedForward.load(prefix, 3)
    assert loaded.begin_epoch == 3
    assert_almost_equal(loaded.predict(Xv), model.predict(Xv), rtol=1e-6, atol=1e-7)
    with pytest.raises(ValueError, match="y must be specified"):
        model.fit(X)


def test_feedforward_epoch_size_and_create():
    X, y = data(40)
    counts = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        model = mx.model.FeedForward.create(
            softmax_net(), mx.io.NDArrayIter(X, y, 10), num_epoch=2, epoch_size=3,
            learning_rate=0.1, batch_end_callback=lambda p: counts.append(p.epoch))
    assert counts == [0, 0, 0, 1, 1, 1]
    assert model.arg_params["fc_weight"].shape == (N_OUT, N_IN)


def test_feedforward_base_estimator():
    # MXNet derives FeedForward from BASE_ESTIMATOR (scikit-learn's base when present)
    assert issubclass(mx.model.FeedForward, mx.model.BASE_ESTIMATOR)
