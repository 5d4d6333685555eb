"""Training callbacks (MXNet 1.9.1's ``mx.callback``).

Batch-end callbacks receive a ``BatchEndParam`` (``epoch``, ``nbatch``,
``eval_metric``, ``locals``; also ``mx.model.BatchEndParam``); epoch-end callbacks
receive ``(epoch, symbol, arg_params, aux_params)``. Everything reports through ``logging``.
"""
import logging
import math
import sys
import time
from collections import namedtuple

from .checkpoint import save_checkpoint
from ._progress import is_tty, _tqdm

__all__ = ["module_checkpoint", "do_checkpoint", "log_train_metric", "Speedometer",
           "ProgressBar", "LogValidationMetricsCallback"]

BatchEndParam = namedtuple("BatchEndParams", ["epoch", "nbatch", "eval_metric", "locals"])
BatchEndParam.__doc__ = ("What batch-end and eval-end callbacks receive: the epoch, the "
                         "batch number, the metric and the caller's locals().")


def module_checkpoint(mod, prefix, period=1, save_optimizer_states=False):
    """Epoch-end callback: ``mod.save_checkpoint(prefix, epoch + 1, ...)`` every
    ``period`` epochs."""
    period = int(max(1, period))

    def _callback(iter_no, sym=None, arg=None, aux=None):
        if (iter_no + 1) % period == 0:
            mod.save_checkpoint(prefix, iter_no + 1, save_optimizer_states)
    return _callback


def do_checkpoint(prefix, period=1):
    """Epoch-end callback: ``mx.model.save_checkpoint(prefix, epoch + 1, sym, arg,
    aux)`` every ``period`` epochs (writes ``prefix-symbol.json`` and
    ``prefix-%04d.params``)."""
    period = int(max(1, period))

    def _callback(iter_no, sym, arg, aux):
        if (iter_no + 1) % period == 0:
            save_checkpoint(prefix, iter_no + 1, sym, arg, aux)
    return _callback


def log_train_metric(period, auto_reset=False):
    """Batch-end callback: log the training metric every ``period`` batches."""
    def _callback(param):
        if param.nbatch % period == 0 and param.eval_metric is not None:
            for name, value in param.eval_metric.get_name_value():
                logging.info("Iter[%d] Batch[%d] Train-%s=%f", param.epoch, param.nbatch,
                             name, value)
            if auto_reset:
                param.eval_metric.reset_local()
    return _callback


class Speedometer:
    """Batch-end callback logging throughput (and the metric) every ``frequent``
    batches::

        Epoch[0] Batch [100-200]\\tSpeed: 1234.56 samples/sec\\taccuracy=0.912500

    Parameters
    ----------
    batch_size : int
    frequent : int, default 50
    auto_reset : bool, default True
        Reset the metric's local sums after each report (so each line covers the
        last ``frequent`` batches; otherwise the line says ``Batch [0-n]``).
    """

    def __init__(self, batch_size, frequent=50, auto_reset=True):
        self.batch_size = batch_size
        self.frequent = frequent
        self.init = False
        self.tic = 0
        self.last_count = 0
        self.auto_reset = auto_reset

    def __call__(self, param):
        count = param.nbatch
        if self.last_count > count:          # a new epoch started
            self.init = False
        self.last_count = count
        if not self.init:
            self.init = True
            self.tic = time.time()
            return
        if count % self.frequent != 0:
            return
        try:
            speed = self.frequent * self.batch_size / (time.time() - self.tic)
        except ZeroDivisionError:
            speed = float("inf")
        if param.eval_metric is not None:
            name_value = param.eval_metric.get_name_value()
            pairs = sum(name_value, ())
            fmt = "\t%s=%f" * len(name_value)
            if self.auto_reset:
                param.eval_metric.reset_local()
                logging.info("Epoch[%d] Batch [%d-%d]\tSpeed: %.2f samples/sec" + fmt,
                             param.epoch, count - self.frequent, count, speed, *pairs)
            else:
                logging.info("Epoch[%d] Batch [0-%d]\tSpeed: %.2f samples/sec" + fmt,
                             param.epoch, count, speed, *pairs)
        else:
            logging.info("Iter[%d] Batch [%d]\tSpeed: %.2f samples/sec",
                         param.epoch, count, speed)
        self.tic = time.time()


class ProgressBar:
    """Batch-end callback showing how far the epoch is.

    On a terminal (stderr is a TTY) with tqdm installed it draws a tqdm bar per epoch,
    with the metric's values; otherwise it logs MXNet's text bar of ``length``
    characters, ``[=====-----] 50%``, through logging (ending in a carriage return).

    Parameters
    ----------
    total : int
        Batches per epoch.
    length : int, default 80
    """

    def __init__(self, total, length=80):
        self.bar_len = length
        self.total = total
        self._bar = None
        self._epoch = None
        self._done = 0

    def _tqdm_bar(self, param):
        """The epoch's tqdm bar (a new one when the epoch changes), or None."""
        if self._bar is not None and param.epoch == self._epoch and param.nbatch >= self._done:
            return self._bar
        if self._bar is not None:
            self._bar.close()
            self._bar = None
        tqdm = _tqdm()
        if tqdm is None or not is_tty(sys.stderr):
            return None
        self._bar = tqdm(total=self.total, desc=f"Epoch[{param.epoch}]", unit="batch",
                         leave=True)
        self._epoch, self._done = param.epoch, 0
        return self._bar

    def __call__(self, param):
        count = param.nbatch
        bar = self._tqdm_bar(param)
        if bar is not None:
            if param.eval_metric is not None:
                bar.set_postfix(dict(param.eval_metric.get_name_value()), refresh=False)
            bar.update(max(count - self._done, 0))
            self._done = count
            if count >= self.total:
                bar.close()
                self._bar = None
            return
        filled = int(round(self.bar_len * count / float(self.total)))
        percents = math.ceil(100.0 * count / float(self.total))
        text = "=" * filled + "-" * (self.bar_len - filled)
        logging.info("[%s] %s%s\r", text, percents, "%")


class LogValidationMetricsCallback:
    """Eval-end callback logging each validation metric as
    ``Epoch[%d] Validation-<name>=<value>``."""

    def __call__(self, param):
        if not param.eval_metric:
            return
        for name, value in param.eval_metric.get_name_value():
            logging.info("Epoch[%d] Validation-%s=%f", param.epoch, name, value)

