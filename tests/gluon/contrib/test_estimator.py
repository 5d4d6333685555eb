"""gluon.contrib.estimator: fit trains exactly as the hand-written Gluon loop does,
evaluate computes the metrics over the data, and the handlers checkpoint, resume,
stop early and log as MXNet 1.9.1's do. The networks live on the CPU, so each
estimator is given ``context=mx.cpu()`` (by default it takes gpu(0) where there is one)."""
import io
import os
import warnings

import numpy as np
import pytest

import mxnet as mx
from mxnet import autograd, gluon
from mxnet.gluon.contrib.estimator import (BatchEnd, BatchProcessor, CheckpointHandler,
                                           EarlyStoppingHandler, Estimator,
                                           LoggingHandler, TrainBegin)


def _data(n=24, batch=8):
    rng = np.random.RandomState(1)
    x = rng.uniform(-1, 1, (n, 5)).astype(np.float32)
    y = (rng.uniform(0, 3, n)).astype(np.int64).astype(np.float32)
    ds = gluon.data.ArrayDataset(mx.nd.array(x), mx.nd.array(y))
    return gluon.data.DataLoader(ds, batch_size=batch), x, y


def _net(seed=3):
    mx.random.seed(seed)
    net = gluon.nn.Sequential()
    net.add(gluon.nn.Dense(8, activation="relu", in_units=5), gluon.nn.Dense(3, in_units=8))
    net.initialize(mx.init.Xavier())
    return net


def _quiet(est):
    est.logger.handlers[0].stream = io.StringIO()
    return est


def test_fit_equals_manual_loop():
    loader, _, _ = _data()
    loss = gluon.loss.SoftmaxCrossEntropyLoss()
    net_a, net_b = _net(), _net()
    trainer_a = gluon.Trainer(net_a.collect_params(), "sgd", {"learning_rate": 0.1})
    est = _quiet(Estimator(net_a, context=mx.cpu(), loss=loss, trainer=trainer_a))
    est.fit(loader, epochs=2)

    trainer_b = gluon.Trainer(net_b.collect_params(), "sgd", {"learning_rate": 0.1})
    for _ in range(2):
        for x, y in loader:
            with autograd.record():
                l = loss(net_b(x), y)
            l.backward()
            trainer_b.step(x.shape[0])
    for pa, pb in zip(net_a.collect_params().values(), net_b.collect_params().values()):
        np.testing.assert_allclose(pa.data().asnumpy(), pb.data().asnumpy(), rtol=1e-5,
                                   atol=1e-6)


def test_default_metrics_and_evaluate():
    loader, x, y = _data()
    net = _net()
    loss = gluon.loss.SoftmaxCrossEntropyLoss()
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        est = _quiet(Estimator(net, context=mx.cpu(), loss=loss))
    assert any("No trainer specified" in str(m.message) for m in w)
    assert [m.name for m in est.train_metrics] == ["training accuracy",
                                                   "training softmaxcrossentropyloss"]
    assert [m.name for m in est.val_metrics] == ["validation accuracy",
                                                 "validation softmaxcrossentropyloss"]
    est.evaluate(loader)
    logits = net(mx.nd.array(x)).asnumpy()
    acc = float(np.mean(logits.argmax(1) == y))
    shifted = logits - logits.max(1, keepdims=True)
    ce = -(shifted - np.log(np.exp(shifted).sum(1, keepdims=True)))[np.arange(len(y)),
                                                                     y.astype(int)]
    assert est.val_metrics[0].get()[1] == pytest.approx(acc)
    assert est.val_metrics[1].get()[1] == pytest.approx(float(ce.mean()), rel=1e-5)


def test_bad_arguments():
    net = _net()
    loss = gluon.loss.L2Loss()
    with pytest.raises(ValueError):
        Estimator(net, loss="mse")
    with pytest.raises(ValueError):
        Estimator(net, loss=loss, train_metrics="acc")
    with pytest.raises(ValueError):
        Estimator(net, loss=loss, context="cpu")
    with pytest.raises(AssertionError):
        Estimator(net, loss=loss, context=[mx.gpu(mx.context.num_gpus())])
    est = _quiet(Estimator(net, context=mx.cpu(), loss=loss,
                           trainer=gluon.Trainer(net.collect_params(), "sgd")))
    loader, _, _ = _data()
    with pytest.raises(ValueError):
        est.fit([mx.nd.ones((2, 5))], epochs=1)
    with pytest.raises(ValueError):
        est.fit(loader, epochs=1, batches=2)
    with pytest.raises(ValueError):
        est.fit(loader)
    with pytest.raises(ValueError):   # a metric the estimator does not update
        est.fit(loader, epochs=1, event_handlers=[LoggingHandler(metrics=[mx.metric.MAE()])])
    with pytest.raises(ValueError):
        LoggingHandler(log_interval="often")


def test_handler_order_and_categories():
    net = _net()
    est = _quiet(Estimator(net, context=mx.cpu(), loss=gluon.loss.L2Loss(),
                           trainer=gluon.Trainer(net.collect_params(), "sgd")))
    early = EarlyStoppingHandler(monitor=est.train_metrics[0], mode="min")
    handlers = est._prepare_default_handlers(None, [early])
    kinds = [type(h).__name__ for h in handlers]
    assert kinds == ["GradientUpdateHandler", "MetricHandler", "EarlyStoppingHandler",
                     "StoppingHandler", "LoggingHandler"]
    train_begin = est._categorize_handlers(handlers)[0]
    assert [type(h).__name__ for h in train_begin] == ["EarlyStoppingHandler",
                                                       "StoppingHandler", "LoggingHandler"]


def test_batches_and_logging_lines():
    loader, _, _ = _data(n=40, batch=8)     # 5 batches per epoch
    net = _net()
    acc = mx.metric.Accuracy()
    est = Estimator(net, context=mx.cpu(), loss=gluon.loss.SoftmaxCrossEntropyLoss(),
                    train_metrics=acc, trainer=gluon.Trainer(net.collect_params(), "sgd"))
    out = io.StringIO()
    est.logger.handlers[0].stream = out
    seen = []

    class Count(TrainBegin, BatchEnd):
        def train_begin(self, estimator, *a, **k):
            seen.clear()

        def batch_end(self, estimator, *a, **k):
            seen.append(k["batch"][0].shape[0])

    est.fit(loader, batches=7, event_handlers=[LoggingHandler(log_interval=2,
                                                              metrics=[acc]), Count()])
    assert len(seen) == 7
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("Training begin: using optimizer SGD")
    assert lines[1] == "Train for 7 batches."
    batch_lines = [l for l in lines if l.startswith("[Epoch") and "[Batch" in l]
    # batches 0, 2, 4 of epoch 0 and 0 of epoch 1 (batch index restarts each epoch)
    assert [l.split("]")[1] for l in batch_lines] == ["[Batch 0", "[Batch 2", "[Batch 4",
                                                      "[Batch 0"]
    assert "[Samples 48]" in batch_lines[-1]


def test_checkpoint_and_resume(tmp_path):
    loader, _, _ = _data(n=16, batch=8)     # 2 batches per epoch
    net = _net()
    acc = mx.metric.Accuracy()
    est = _quiet(Estimator(net, context=mx.cpu(), loss=gluon.loss.SoftmaxCrossEntropyLoss(),
                           train_metrics=acc,
                           trainer=gluon.Trainer(net.collect_params(), "sgd")))
    ck = CheckpointHandler(str(tmp_path), model_prefix="m", monitor=acc, save_best=True,
                           max_checkpoints=2)
    est.fit(loader, epochs=3, event_handlers=[ck])
    files = sorted(os.listdir(tmp_path))
    assert "m-epoch1batch4.params" in files and "m-epoch2batch6.states" in files
    assert "m-epoch0batch2.params" not in files          # only the last two are kept
    assert "m-best.params" in files
    saved = mx.nd.load(str(tmp_path / "m-epoch2batch6.params"))
    for name, p in net._collect_params_with_prefix().items():
        np.testing.assert_array_equal(saved[name].asnumpy(), p.data().asnumpy())

    net2 = _net(seed=9)
    est2 = _quiet(Estimator(net2, context=mx.cpu(),
                            loss=gluon.loss.SoftmaxCrossEntropyLoss(),
                            train_metrics=mx.metric.Accuracy(),
                            trainer=gluon.Trainer(net2.collect_params(), "sgd")))
    ck2 = CheckpointHandler(str(tmp_path), model_prefix="m", max_checkpoints=2,
                            resume_from_checkpoint=True)
    est2.fit(loader, epochs=5, event_handlers=[ck2])
    assert est2.max_epoch == 2
    assert os.path.isfile(tmp_path / "m-epoch4batch10.params")


def test_early_stopping_on_a_flat_metric():
    loader, _, _ = _data()
    net = _net()
    loss_metric = mx.metric.Loss()
    est = _quiet(Estimator(net, context=mx.cpu(), loss=gluon.loss.SoftmaxCrossEntropyLoss(),
                           train_metrics=loss_metric,
                           trainer=gluon.Trainer(net.collect_params(), "sgd",
                                                 {"learning_rate": 0.0})))
    early = EarlyStoppingHandler(monitor=loss_metric, patience=1, mode="min")
    est.fit(loader, epochs=10, event_handlers=[early])
    # learning rate 0: the loss never improves, so training stops after epoch 1
    assert early.stopped_epoch == 1 and early.current_epoch == 2


def test_custom_batch_processor():
    class Halved(BatchProcessor):
        def fit_batch(self, estimator, batch, batch_axis=0):
            calls.append(batch[0].shape[0])
            return super().fit_batch(estimator, batch, batch_axis)
    calls = []
    loader, _, _ = _data()
    net = _net()
    est = _quiet(Estimator(net, context=mx.cpu(), loss=gluon.loss.SoftmaxCrossEntropyLoss(),
                           trainer=gluon.Trainer(net.collect_params(), "sgd"),
                           batch_processor=Halved()))
    est.fit(loader, epochs=1)
    assert calls == [8, 8, 8]
    with pytest.raises(ValueError):
        Estimator(net, loss=gluon.loss.L2Loss(), batch_processor=object())


def test_progress_bar(capsys):
    loader, _, _ = _data(n=24, batch=8)
    net = _net()
    est = _quiet(Estimator(net, context=mx.cpu(), loss=gluon.loss.SoftmaxCrossEntropyLoss(),
                           trainer=gluon.Trainer(net.collect_params(), "sgd")))
    est.fit(loader, epochs=1, event_handlers=[LoggingHandler(metrics=est.train_metrics,
                                                             progress_bar=True)])
    # not a terminal here: mxnet._progress prints plain lines (tqdm draws on a terminal)
    lines = [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("[Epoch 0]:")]
    assert [ln.split()[2] for ln in lines] == ["1/3", "2/3", "3/3"]
    assert "samples/s=" in lines[-1] and "training accuracy" in lines[-1]
