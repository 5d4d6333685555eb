"""mx.callback: what the callbacks log and when they checkpoint."""
import logging
from collections import namedtuple

import pytest

import mxnet as mx
from mxnet import callback

# mx.model defines BatchEndParam in MXNet; a stand-in keeps this test independent of it.
BatchEndParam = getattr(mx.model, "BatchEndParam", None) or \
    namedtuple("BatchEndParams", ["epoch", "nbatch", "eval_metric", "locals"])


def acc_metric(correct, total):
    m = mx.metric.Accuracy()
    m.update([mx.nd.array([1] * total)], [mx.nd.array([1] * correct + [0] * (total - correct))])
    return m


@pytest.fixture
def clock(monkeypatch):
    """A fake time.time advancing by 2 seconds per call."""
    t = [100.0]

    def fake():
        t[0] += 2.0
        return t[0]
    monkeypatch.setattr(callback.time, "time", fake)
    return t


def test_speedometer_auto_reset(caplog, clock):
    speed = callback.Speedometer(batch_size=10, frequent=2)
    metric = acc_metric(3, 4)
    with caplog.at_level(logging.INFO):
        for nbatch in range(5):
            speed(BatchEndParam(epoch=1, nbatch=nbatch, eval_metric=metric, locals=None))
    lines = [r.getMessage() for r in caplog.records]
    # first call starts the clock; reports at batches 2 and 4, each over 2 s of 2 batches
    assert lines[0] == "Epoch[1] Batch [0-2]\tSpeed: 10.00 samples/sec\taccuracy=0.750000"
    # auto_reset cleared the local sums after the first report
    assert lines[1] == "Epoch[1] Batch [2-4]\tSpeed: 10.00 samples/sec\taccuracy=nan"
    assert len(lines) == 2


def test_speedometer_without_reset_and_without_metric(caplog, clock):
    speed = callback.Speedometer(batch_size=4, frequent=1, auto_reset=False)
    metric = acc_metric(1, 2)
    with caplog.at_level(logging.INFO):
        speed(BatchEndParam(0, 0, metric, None))
        speed(BatchEndParam(0, 1, metric, None))
        speed(BatchEndParam(0, 2, None, None))
    lines = [r.getMessage() for r in caplog.records]
    assert lines[0] == "Epoch[0] Batch [0-1]\tSpeed: 2.00 samples/sec\taccuracy=0.500000"
    assert lines[1] == "Iter[0] Batch [2]\tSpeed: 2.00 samples/sec"


def test_speedometer_restarts_each_epoch(caplog, clock):
    speed = callback.Speedometer(batch_size=1, frequent=1)
    with caplog.at_level(logging.INFO):
        speed(BatchEndParam(0, 5, None, None))
        speed(BatchEndParam(1, 0, None, None))     # nbatch went back: re-initialise
    assert caplog.records == []


def test_progress_bar(caplog):
    bar = callback.ProgressBar(total=4, length=8)
    with caplog.at_level(logging.INFO):
        bar(BatchEndParam(0, 1, None, None))
        bar(BatchEndParam(0, 3, None, None))
    assert [r.getMessage() for r in caplog.records] == ["[==------] 25%\r",
                                                        "[======--] 75%\r"]


def test_log_train_metric(caplog):
    cb = callback.log_train_metric(period=2, auto_reset=True)
    metric = acc_metric(1, 4)
    with caplog.at_level(logging.INFO):
        cb(BatchEndParam(3, 1, metric, None))       # not a multiple of the period
        cb(BatchEndParam(3, 2, metric, None))
    assert [r.getMessage() for r in caplog.records] == ["Iter[3] Batch[2] Train-accuracy=0.250000"]
    assert metric.num_inst == 0 and metric.global_num_inst == 4


def test_log_validation_metrics(caplog):
    with caplog.at_level(logging.INFO):
        callback.LogValidationMetricsCallback()(BatchEndParam(2, 0, acc_metric(3, 4), None))
        callback.LogValidationMetricsCallback()(BatchEndParam(2, 0, None, None))
    assert [r.getMessage() for r in caplog.records] == ["Epoch[2] Validation-accuracy=0.750000"]


def test_do_checkpoint_writes_every_period(tmp_path):
    prefix = str(tmp_path / "net")
    net = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=2, name="fc")
    arg = {"fc_weight": mx.nd.ones((2, 3)), "fc_bias": mx.nd.zeros((2,))}
    cb = callback.do_checkpoint(prefix, period=2)
    for epoch in range(4):
        cb(epoch, net, arg, {})
    saved = sorted(p.name for p in tmp_path.iterdir())
    assert saved == ["net-0002.params", "net-0004.params", "net-symbol.json"]
    sym, arg2, aux2 = mx.model.load_checkpoint(prefix, 4)
    assert sym.list_arguments() == net.list_arguments() and aux2 == {}
    assert {k: v.asnumpy().tolist() for k, v in arg2.items()} == \
        {k: v.asnumpy().tolist() for k, v in arg.items()}


def test_module_checkpoint():
    class FakeModule:
        def __init__(self):
            self.saved = []

        def save_checkpoint(self, prefix, epoch, save_optimizer_states):
            self.saved.append((prefix, epoch, save_optimizer_states))

    mod = FakeModule()
    cb = callback.module_checkpoint(mod, "p", period=0, save_optimizer_states=True)
    cb(0)
    cb(1)
    assert mod.saved == [("p", 1, True), ("p", 2, True)]


def test_progress_bar_uses_tqdm_on_a_terminal(monkeypatch, caplog):
    """With stderr on a terminal the bar is a tqdm bar per epoch (no log lines)."""
    import io
    import sys
    pytest.importorskip("tqdm")

    class Tty(io.StringIO):
        def isatty(self):
            return True
    term = Tty()
    monkeypatch.setattr(sys, "stderr", term)
    bar = callback.ProgressBar(total=4, length=8)
    with caplog.at_level(logging.INFO):
        for nbatch in (1, 2, 4):
            bar(BatchEndParam(0, nbatch, acc_metric(3, 4), None))
        bar(BatchEndParam(1, 1, None, None))             # a new epoch starts a new bar
    assert caplog.records == []
    text = term.getvalue()
    assert "Epoch[0]" in text and "4/4" in text and "accuracy=0.75" in text
    assert "Epoch[1]" in text
