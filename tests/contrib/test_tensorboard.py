"""mx.contrib.tensorboard.LogMetricsCallback writes each metric value as a scalar."""
import sys
import types

import numpy as np
import pytest

import mxnet as mx
from mxnet.contrib import tensorboard


class _RecordingWriter:
    def __init__(self, logdir):
        self.logdir = logdir
        self.scalars = []

    def add_scalar(self, tag, value, global_step=None):
        self.scalars.append((tag, value, global_step))


@pytest.fixture
def writer_module(monkeypatch):
    for name in tensorboard._WRITER_MODULES:
        monkeypatch.setitem(sys.modules, name, None)    # None: import raises ImportError
    fake = types.ModuleType("tensorboardX")
    fake.SummaryWriter = _RecordingWriter
    monkeypatch.setitem(sys.modules, "tensorboardX", fake)
    return fake


def test_logs_fit_metrics_per_epoch(writer_module, tmp_path):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((20, 3)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.float32)
    net = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=2),
                               name="softmax")
    mod = mx.mod.Module(net)
    cb = tensorboard.LogMetricsCallback(str(tmp_path), prefix="train")
    metric = mx.metric.Accuracy()
    seen = []

    def record(param):
        seen.append((param.epoch, metric.get()[1]))
        cb(param)

    mod.fit(mx.io.NDArrayIter(x, y, batch_size=10), num_epoch=2, eval_metric=metric,
            batch_end_callback=record)
    assert cb.summary_writer.logdir == str(tmp_path)
    assert cb.summary_writer.scalars == [("train-accuracy", acc, epoch) for epoch, acc in seen]


def test_no_writer_installed_says_what_to_install(monkeypatch):
    for name in tensorboard._WRITER_MODULES:
        monkeypatch.setitem(sys.modules, name, None)
    with pytest.raises(ImportError, match="tensorboardX"):
        tensorboard.LogMetricsCallback("/tmp/unused")
