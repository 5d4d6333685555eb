"""Callbacks for ``model.fit`` / ``Module.fit`` in notebooks.

``PandasLogger`` records statistics into three pandas DataFrames: ``train`` (every
``frequent`` training batches: the training metrics, batches and records per second,
elapsed time, minibatch count, epoch), ``eval`` (the evaluation metrics each time
evaluation ends) and ``epoch`` (elapsed and per-epoch time). ``callback_args()`` gives
the keyword arguments that install it in ``fit``; ``args_wrapper(*loggers)`` merges
several objects' arguments into lists.

The live bokeh charts of MXNet (``LiveBokehChart``, ``LiveLearningCurve``,
``LiveTimeSeries``) are not implemented: constructing one raises ImportError naming
bokeh when bokeh is missing, NotImplementedError when it is installed.
"""
import datetime
import time
from collections import defaultdict

__all__ = ["PandasLogger", "LiveBokehChart", "LiveLearningCurve", "LiveTimeSeries",
           "args_wrapper"]


class Pandas_Failed_To_Import:  # noqa: N801  (MXNet's name)
    """Stands for the pandas module when it is not installed."""


try:
    import pandas as pd
except ImportError:
    pd = Pandas_Failed_To_Import


def _pandas(what):
    if pd is Pandas_Failed_To_Import:
        raise ImportError(f"mx.notebook.callback.{what} needs pandas, which is not "
                          "installed (pip install pandas)")
    return pd


def _add_new_columns(dataframe, metrics):
    """Add a column to ``dataframe`` for each key of ``metrics`` it does not have."""
    for name in set(metrics) - set(dataframe.columns):
        dataframe[name] = None


def _extend(baseData, newData):  # noqa: N803  (MXNet's argument names)
    """Append to list ``baseData`` the items of ``newData`` past its length (baseData
    being a prefix of newData)."""
    baseData.extend(newData[len(baseData):])


def args_wrapper(*args):
    """``fit`` keyword arguments for several callback objects: each object's
    ``callback_args()`` entries gathered into one list per keyword."""
    out = defaultdict(list)
    for callback in args:
        for key, fn in callback.callback_args().items():
            out[key].append(fn)
    return dict(out)


class PandasLogger:
    """Log training statistics into pandas DataFrames (``train_df``, ``eval_df``,
    ``epoch_df``).

    Parameters
    ----------
    batch_size : int
        Records per batch (for the records-per-second column).
    frequent : int, default 50
        Training batches between two rows of ``train_df``.
    """

    def __init__(self, batch_size, frequent=50):
        pandas = _pandas("PandasLogger")
        self.batch_size = batch_size
        self.frequent = frequent
        self._dataframes = {name: pandas.DataFrame() for name in ("train", "eval", "epoch")}
        self.last_time = time.time()
        self.start_time = datetime.datetime.now()
        self.last_epoch_time = datetime.datetime.now()

    @property
    def train_df(self):
        """Training metrics, one row every ``frequent`` batches."""
        return self._dataframes["train"]

    @property
    def eval_df(self):
        """Evaluation metrics, one row per evaluation."""
        return self._dataframes["eval"]

    @property
    def epoch_df(self):
        """Timing per epoch."""
        return self._dataframes["epoch"]

    @property
    def all_dataframes(self):
        """The three DataFrames by name: 'train', 'eval', 'epoch'."""
        return self._dataframes

    def elapsed(self):
        """Time since this logger was made (a ``datetime.timedelta``)."""
        return datetime.datetime.now() - self.start_time

    def append_metrics(self, metrics, df_name):
        """Append the dict ``metrics`` as a row of DataFrame ``df_name``, adding
        columns for names it has not seen."""
        frame = self._dataframes[df_name]
        _add_new_columns(frame, metrics)
        frame.loc[len(frame)] = metrics

    def train_cb(self, param):
        """``batch_end_callback``: a row of ``train_df`` every ``frequent`` batches."""
        if param.nbatch % self.frequent == 0:
            self._process_batch(param, "train")

    def eval_cb(self, param):
        """``eval_end_callback``: a row of ``eval_df``."""
        self._process_batch(param, "eval")

    def _process_batch(self, param, df_name):
        # The metric's current values, then it restarts (the next row covers the next
        # `frequent` batches), with the speed since the previous row.
        now = time.time()
        metrics = {}
        if param.eval_metric is not None:
            metrics = dict(param.eval_metric.get_name_value())
            param.eval_metric.reset()
        try:
            speed = self.frequent / (now - self.last_time)
        except ZeroDivisionError:
            speed = float("inf")
        metrics["batches_per_sec"] = speed
        metrics["records_per_sec"] = speed * self.batch_size
        metrics["elapsed"] = self.elapsed()
        metrics["minibatch_count"] = param.nbatch
        metrics["epoch"] = param.epoch
        self.append_metrics(metrics, df_name)
        self.last_time = now

    def epoch_cb(self, *args):
        """``epoch_end_callback`` (its arguments are not used): a row of ``epoch_df``
        with the elapsed time and this epoch's duration."""
        now = datetime.datetime.now()
        metrics = {"elapsed": self.elapsed(), "epoch_time": now - self.last_epoch_time}
        self.last_epoch_time = now
        self.append_metrics(metrics, "epoch")

    def callback_args(self):
        """Keyword arguments installing this logger in ``fit``:
        ``model.fit(train, eval_data=val, **logger.callback_args())``."""
        return {"batch_end_callback": self.train_cb, "eval_end_callback": self.eval_cb,
                "epoch_end_callback": self.epoch_cb}


def _no_live_charts(what):
    try:
        import bokeh  # noqa: F401
    except ImportError:
        raise ImportError(f"mx.notebook.callback.{what} draws with bokeh, which is not "
                          "installed (pip install bokeh)") from None
    raise NotImplementedError(f"mx.notebook.callback.{what}: live bokeh charts are not "
                              "implemented in pymxnet; log with PandasLogger and plot "
                              "its DataFrames instead")


class LiveBokehChart:
    """Base of MXNet's live bokeh charts (not implemented in pymxnet: see the module
    docstring)."""

    def __init__(self, pandas_logger, metric_name, display_freq=10, batch_size=None,
                 frequent=50):
        _no_live_charts(type(self).__name__)


class LiveLearningCurve(LiveBokehChart):
    """MXNet's live training/validation curve (not implemented in pymxnet)."""

    def __init__(self, metric_name, display_freq=10, frequent=50):
        _no_live_charts(type(self).__name__)


class LiveTimeSeries(LiveBokehChart):
    """MXNet's live elapsed-time plot (not implemented in pymxnet)."""

    def __init__(self, **fig_params):
        _no_live_charts(type(self).__name__)
