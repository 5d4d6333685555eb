"""mx.notebook.callback: args_wrapper, PandasLogger driven by Module.fit (with pandas),
and the clear errors of the parts pymxnet does not provide."""
import numpy as np
import pytest

import mxnet as mx
from mxnet.notebook import callback as nbcb


class _Collector:
    def __init__(self, tag):
        self.tag = tag

    def callback_args(self):
        return {"batch_end_callback": self.tag + "-batch",
                "epoch_end_callback": self.tag + "-epoch"}


def test_args_wrapper_gathers_each_keyword_into_a_list():
    out = nbcb.args_wrapper(_Collector("a"), _Collector("b"))
    assert out == {"batch_end_callback": ["a-batch", "b-batch"],
                   "epoch_end_callback": ["a-epoch", "b-epoch"]}
    assert nbcb.args_wrapper() == {}
    base = [1, 2]
    nbcb._extend(base, [1, 2, 3, 4])
    assert base == [1, 2, 3, 4]


def test_notebook_is_reached_from_mxnet():
    assert mx.notebook.callback is nbcb
    assert mx.notebook.bokeh is not None


def test_pandas_logger_without_pandas_names_it(monkeypatch):
    monkeypatch.setattr(nbcb, "pd", nbcb.Pandas_Failed_To_Import)
    with pytest.raises(ImportError, match="pandas"):
        nbcb.PandasLogger(batch_size=4)


@pytest.mark.parametrize("make", [lambda: nbcb.LiveLearningCurve("accuracy"),
                                  lambda: nbcb.LiveTimeSeries(),
                                  lambda: nbcb.LiveBokehChart(None, "accuracy")])
def test_live_bokeh_charts_say_what_is_missing(make):
    try:
        import bokeh  # noqa: F401
        expected = NotImplementedError
    except ImportError:
        expected = ImportError
    with pytest.raises(expected, match="bokeh"):
        make()


def test_pandas_logger_records_a_module_fit():
    pytest.importorskip("pandas")
    rs = np.random.RandomState(0)
    x = rs.normal(size=(40, 3)).astype(np.float32)
    y = (x.sum(axis=1) > 0).astype(np.float32)
    train = mx.io.NDArrayIter(x, y, batch_size=4)
    val = mx.io.NDArrayIter(x[:20], y[:20], batch_size=4)
    net = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=2),
                               name="softmax")
    mod = mx.mod.Module(net)
    logger = nbcb.PandasLogger(batch_size=4, frequent=5)
    mod.fit(train, eval_data=val, num_epoch=2, optimizer_params={"learning_rate": 0.1},
            **logger.callback_args())
    # 10 batches per epoch, numbered 0..9: a row at batches 0 and 5 of each epoch
    assert list(logger.train_df["minibatch_count"]) == [0, 5, 0, 5]
    assert list(logger.train_df["epoch"]) == [0, 0, 1, 1]
    assert {"accuracy", "batches_per_sec", "records_per_sec", "elapsed"} <= \
        set(logger.train_df.columns)
    assert len(logger.eval_df) == 2 and len(logger.epoch_df) == 2
    assert set(logger.all_dataframes) == {"train", "eval", "epoch"}
    # the last evaluation row is the validation accuracy of the trained module
    val.reset()
    score = dict(mod.score(val, "acc"))["accuracy"]
    assert logger.eval_df["accuracy"].iloc[-1] == pytest.approx(score)
    assert (logger.train_df["records_per_sec"] ==
            logger.train_df["batches_per_sec"] * 4).all()
