"""Event handlers for the Estimator.

A handler subclasses one or more of TrainBegin, TrainEnd, EpochBegin, EpochEnd,
BatchBegin, BatchEnd and implements the matching methods, each called as
``method(estimator, *args, **kwargs)`` (batch_end also gets batch=, pred=, label=,
loss=). A batch_end or epoch_end returning True stops training. Handlers run in
increasing ``priority`` (default 0): gradient update (-2000), metrics and validation
(-1000), user handlers, logging (last).
"""
import logging
import os
import sys
import time
import warnings

import numpy as np

from ....metric import CompositeEvalMetric, EvalMetric, Loss as metric_loss
from .utils import check_metrics
from ...._progress import progress_bar
from ...block import HybridBlock

__all__ = ["TrainBegin", "TrainEnd", "EpochBegin", "EpochEnd", "BatchBegin", "BatchEnd",
           "StoppingHandler", "MetricHandler", "ValidationHandler", "LoggingHandler",
           "CheckpointHandler", "EarlyStoppingHandler", "GradientUpdateHandler"]


class EventHandler:
    """Common base of the six event interfaces."""


class TrainBegin(EventHandler):
    def train_begin(self, estimator, *args, **kwargs):
        pass


class TrainEnd(EventHandler):
    def train_end(self, estimator, *args, **kwargs):
        pass


class EpochBegin(EventHandler):
    def epoch_begin(self, estimator, *args, **kwargs):
        pass


class EpochEnd(EventHandler):
    def epoch_end(self, estimator, *args, **kwargs):
        return False


class BatchBegin(EventHandler):
    def batch_begin(self, estimator, *args, **kwargs):
        pass


class BatchEnd(EventHandler):
    def batch_end(self, estimator, *args, **kwargs):
        return False


class StoppingHandler(TrainBegin, BatchEnd, EpochEnd):
    """Stop after max_epoch epochs or max_batch batches (the estimator adds one from
    fit's epochs/batches, read at train_begin)."""

    def __init__(self, max_epoch=None, max_batch=None):
        self.max_epoch = max_epoch
        self.max_batch = max_batch
        self.current_batch = 0
        self.current_epoch = 0
        self.stop_training = False

    def train_begin(self, estimator, *args, **kwargs):
        self.max_epoch = estimator.max_epoch
        self.max_batch = estimator.max_batch
        self.current_batch = 0
        self.current_epoch = 0

    def batch_end(self, estimator, *args, **kwargs):
        self.current_batch += 1
        if self.current_batch == self.max_batch:
            self.stop_training = True
        return self.stop_training

    def epoch_end(self, estimator, *args, **kwargs):
        self.current_epoch += 1
        if self.current_epoch == self.max_epoch:
            self.stop_training = True
        return self.stop_training


class MetricHandler(EpochBegin, BatchEnd):
    """Reset metrics at each epoch and update them after each batch (Loss metrics
    from the loss, the others from label and prediction)."""

    def __init__(self, metrics, priority=-1000):
        self.metrics = check_metrics(metrics)
        self.priority = priority

    def epoch_begin(self, estimator, *args, **kwargs):
        for metric in self.metrics:
            metric.reset()

    def batch_end(self, estimator, *args, **kwargs):
        pred, label, loss = kwargs["pred"], kwargs["label"], kwargs["loss"]
        for metric in self.metrics:
            if isinstance(metric, metric_loss):
                metric.update(0, loss)
            else:
                metric.update(label, pred)


class ValidationHandler(TrainBegin, BatchEnd, EpochEnd):
    """Run ``eval_fn(val_data=..., batch_axis=..., event_handlers=...)`` every
    epoch_period epochs and/or every batch_period batches."""

    def __init__(self, val_data, eval_fn, epoch_period=1, batch_period=None,
                 priority=-1000, event_handlers=None):
        self.val_data = val_data
        self.eval_fn = eval_fn
        self.epoch_period = epoch_period
        self.batch_period = batch_period
        self.current_batch = 0
        self.current_epoch = 0
        self.priority = priority
        self.event_handlers = event_handlers

    def train_begin(self, estimator, *args, **kwargs):
        self.current_batch = 0
        self.current_epoch = 0

    def _evaluate(self, estimator):
        self.eval_fn(val_data=self.val_data, batch_axis=estimator.batch_axis,
                     event_handlers=self.event_handlers)

    def batch_end(self, estimator, *args, **kwargs):
        self.current_batch += 1
        if self.batch_period and self.current_batch % self.batch_period == 0:
            self._evaluate(estimator)

    def epoch_end(self, estimator, *args, **kwargs):
        self.current_epoch += 1
        if self.epoch_period and self.current_epoch % self.epoch_period == 0:
            self._evaluate(estimator)


def _metric_text(metrics):
    parts = []
    for metric in metrics:
        names, values = metric.get()
        if not isinstance(names, list):
            names, values = [names], [values]
        parts += [f"{n}: {v:.4f}" for n, v in zip(names, values)]
    return ", ".join(parts)


class LoggingHandler(TrainBegin, TrainEnd, EpochBegin, EpochEnd, BatchBegin, BatchEnd):
    """Log progress through ``estimator.logger``: training begin/end, each epoch's
    time and metrics, and with an integer log_interval every log_interval-th batch.

    progress_bar (pymxnet addition, keyword only): draw a one-line progress bar of the
    current epoch on stderr; default: when log_interval is 'epoch' and stderr is a
    terminal.
    """

    def __init__(self, log_interval="epoch", metrics=None, priority=np.inf, *,
                 progress_bar=None):
        if not isinstance(log_interval, int) and log_interval != "epoch":
            raise ValueError("log_interval must be either an integer or string 'epoch'")
        self.metrics = check_metrics(metrics)
        self.batch_index = 0
        self.current_epoch = 0
        self.processed_samples = 0
        self.priority = priority
        self.log_interval = log_interval
        self.log_interval_time = 0
        self.progress_bar = progress_bar
        self._bar = None
        self.train_start = self.epoch_start = self.batch_start = time.time()

    def _is_training(self, estimator):
        known = estimator.train_metrics
        return any(any(m is k for k in known) for m in self.metrics) or \
            not self.metrics and not getattr(estimator, "_evaluating", False)

    def _bar_on(self):
        if self.progress_bar is not None:
            return bool(self.progress_bar)
        return self.log_interval == "epoch" and sys.stderr.isatty()

    def train_begin(self, estimator, *args, **kwargs):
        self.train_start = time.time()
        trainer = estimator.trainer
        estimator.logger.info("Training begin: using optimizer %s with current learning "
                              "rate %.4f ", type(trainer.optimizer).__name__,
                              trainer.learning_rate)
        if estimator.max_epoch:
            estimator.logger.info("Train for %d epochs.", estimator.max_epoch)
        else:
            estimator.logger.info("Train for %d batches.", estimator.max_batch)
        self.current_epoch = 0
        self.batch_index = 0
        self.processed_samples = 0
        self.log_interval_time = 0

    def train_end(self, estimator, *args, **kwargs):
        elapsed = time.time() - self.train_start
        msg = (f"Train finished using total {int(elapsed)}s with {self.current_epoch} "
               f"epochs. ")
        estimator.logger.info(msg + _metric_text(self.metrics))

    def batch_begin(self, estimator, *args, **kwargs):
        if isinstance(self.log_interval, int):
            self.batch_start = time.time()

    def batch_end(self, estimator, *args, **kwargs):
        batch = kwargs.get("batch")
        if batch is not None:
            axis = getattr(estimator, "batch_axis", 0)
            self.processed_samples += batch[0].shape[axis]
        if isinstance(self.log_interval, int):
            self.log_interval_time += time.time() - self.batch_start
            if self.log_interval > 0 and self.batch_index % self.log_interval == 0:
                msg = (f"[Epoch {self.current_epoch}][Batch {self.batch_index}]"
                       f"[Samples {self.processed_samples}] ")
                msg += f"time/interval: {self.log_interval_time:.3f}s "
                self.log_interval_time = 0
                estimator.logger.info(msg + _metric_text(self.metrics))
        elif self._bar_on():
            self._draw_bar(estimator)
        self.batch_index += 1

    def _draw_bar(self, estimator):
        """Advance this epoch's progress bar (tqdm on a terminal, plain lines otherwise:
        mxnet._progress), opened on the epoch's first batch."""
        if self._bar is None:
            self._bar = progress_bar(total=getattr(estimator, "_batches_per_epoch", None),
                                     desc=f"[Epoch {self.current_epoch}]", unit="batch",
                                     file=sys.stderr)
        rate = self.processed_samples / max(time.time() - self.epoch_start, 1e-9)
        self._bar.set_postfix({"samples/s": f"{rate:.0f}",
                               "metrics": _metric_text(self.metrics).strip()})
        self._bar.update(1)

    def epoch_begin(self, estimator, *args, **kwargs):
        self.epoch_start = time.time()
        if self._is_training(estimator):
            estimator.logger.info("[Epoch %d] Begin, current learning rate: %.4f",
                                  self.current_epoch, estimator.trainer.learning_rate)
        else:
            estimator.logger.info("Validation Begin")

    def epoch_end(self, estimator, *args, **kwargs):
        if self._bar is not None:
            self._bar.close()
            self._bar = None
        elapsed = time.time() - self.epoch_start
        msg = f"[Epoch {self.current_epoch}] Finished in {elapsed:.3f}s, "
        estimator.logger.info(msg + _metric_text(self.metrics))
        self.current_epoch += 1
        self.batch_index = 0


def _monitor_op(handler_name, monitor, mode):
    """np.greater or np.less for 'max'/'min'; 'auto' picks greater for accuracy/F1
    style metrics, less otherwise."""
    if mode not in ("auto", "min", "max"):
        warnings.warn(f"{handler_name} mode {mode} is unknown, fallback to auto mode. "
                      f"{handler_name} will use max mode for f1 and accuracy metric "
                      "comparison and use min mode otherwise", RuntimeWarning)
        mode = "auto"
    if mode == "min":
        return np.less
    if mode == "max":
        return np.greater
    name = monitor.get()[0]
    if isinstance(name, list):
        name = name[0]
    if "acc" in name or "f1" in name:
        warnings.warn(f"`greater` operator will be used to determine if {name} has "
                      "improved. Please specify `mode='min'` to use the `less` operator. "
                      "Specify `mode='max' to disable this warning.`")
        return np.greater
    warnings.warn(f"`less` operator will be used to determine if {name} has improved. "
                  "Please specify `mode='max'` to use the `greater` operator. Specify "
                  "`mode='min' to disable this warning.`")
    return np.less


class CheckpointHandler(TrainBegin, BatchEnd, EpochEnd):
    """Save parameters (``<prefix>-epoch<E>batch<B>.params``) and trainer states
    (``.states``) every epoch_period epochs / batch_period batches, keeping the last
    max_checkpoints; the symbol (``<prefix>-symbol.json``) for hybridized networks;
    with save_best the best by ``monitor`` as ``<prefix>-best.*``.
    resume_from_checkpoint loads the latest checkpoint in model_dir at train_begin
    and trains only the epochs/batches left.
    """

    def __init__(self, model_dir, model_prefix="model", monitor=None, verbose=0,
                 save_best=False, mode="auto", epoch_period=1, batch_period=None,
                 max_checkpoints=5, resume_from_checkpoint=False):
        self.monitor = monitor
        self.verbose = verbose
        os.makedirs(model_dir, exist_ok=True)
        self.model_dir = model_dir
        self.model_prefix = model_prefix
        self.save_best = save_best
        if self.save_best and not isinstance(self.monitor, EvalMetric):
            raise ValueError("To save best model only, please provide one of the metric "
                             "objects from estimator.train_metrics and "
                             "estimator.val_metrics as monitor.")
        self.epoch_period = epoch_period
        self.batch_period = batch_period
        self.current_batch = 0
        self.current_epoch = 0
        self.max_checkpoints = max_checkpoints
        self.resume_from_checkpoint = resume_from_checkpoint
        self.saved_checkpoints = []
        if self.save_best:
            self.monitor_op = _monitor_op("CheckpointHandler", monitor, mode)

    def train_begin(self, estimator, *args, **kwargs):
        self.current_epoch = 0
        self.current_batch = 0
        if self.save_best:
            self.best = np.inf if self.monitor_op is np.less else -np.inf
        if self.resume_from_checkpoint:
            self._resume_from_checkpoint(estimator)

    def batch_end(self, estimator, *args, **kwargs):
        # checkpoints are named by the 0-based index of the batch just finished
        if self.batch_period and (self.current_batch + 1) % self.batch_period == 0:
            self._save_checkpoint(estimator)
        self.current_batch += 1

    def epoch_end(self, estimator, *args, **kwargs):
        if self.epoch_period and (self.current_epoch + 1) % self.epoch_period == 0:
            self._save_checkpoint(estimator)
        self.current_epoch += 1

    def _save_checkpoint(self, estimator):
        prefix = f"{self.model_prefix}-epoch{self.current_epoch}batch{self.current_batch}"
        self._save_symbol(estimator)
        self._save_params_and_trainer(estimator, prefix)
        if self.verbose > 0:
            estimator.logger.info("[Epoch %d] CheckpointHandler: trained total %d batches, "
                                  "saving model at %s with prefix: %s", self.current_epoch,
                                  self.current_batch + 1, self.model_dir, prefix)
        self.saved_checkpoints.append(prefix)
        while len(self.saved_checkpoints) > self.max_checkpoints:
            old = self.saved_checkpoints.pop(0)
            for ext in (".params", ".states"):
                path = os.path.join(self.model_dir, old + ext)
                if os.path.exists(path):
                    os.remove(path)
        if self.save_best:
            name, value = self.monitor.get()
            if np.isnan(value):
                warnings.warn(f"{type(self).__name__}: {name} is not updated, make sure "
                              "you pass one of the metric objects from "
                              "estimator.train_metrics and estimator.val_metrics as "
                              "monitor", RuntimeWarning)
            elif self.monitor_op(value, self.best):
                prefix = self.model_prefix + "-best"
                self._save_params_and_trainer(estimator, prefix)
                if self.verbose > 0:
                    estimator.logger.info("[Epoch %d] CheckpointHandler: %s improved from "
                                          "%0.5f to %0.5f, updating best model at %s with "
                                          "prefix: %s", self.current_epoch, name,
                                          self.best, value, self.model_dir, prefix)
                self.best = value
            elif self.verbose > 0:
                estimator.logger.info("[Epoch %d] CheckpointHandler: %s did not improve "
                                      "from %0.5f, skipping updating best model",
                                      self.current_batch, name, self.best)

    def _save_symbol(self, estimator):
        net = estimator.net
        graph = getattr(net, "_cached_graph", ())
        if isinstance(net, HybridBlock) and graph:
            graph[1].save(os.path.join(self.model_dir, self.model_prefix + "-symbol.json"))
        else:
            logging.getLogger(__name__).debug(
                "CheckpointHandler: the network is not a hybridized HybridBlock that has "
                "run, so no symbol file is saved")

    def _save_params_and_trainer(self, estimator, file_prefix):
        estimator.net.save_parameters(os.path.join(self.model_dir, file_prefix + ".params"))
        estimator.trainer.save_states(os.path.join(self.model_dir, file_prefix + ".states"))

    def _resume_from_checkpoint(self, estimator):
        prefix = self.model_prefix + "-epoch"
        epoch = self._find_max_iteration(self.model_dir, prefix, "-epoch", "batch")
        if epoch is None:
            estimator.logger.info("CheckpointHandler: no checkpoint to resume from in %s; "
                                  "training from scratch", self.model_dir)
            return
        prefix = f"{self.model_prefix}-epoch{epoch}batch"
        batch = self._find_max_iteration(self.model_dir, prefix, "batch", ".params")
        if estimator.max_epoch:
            if epoch >= estimator.max_epoch - 1:
                raise ValueError(f"{type(self).__name__}: the checkpoint already trained "
                                 f"{epoch + 1} epochs, no less than max_epoch "
                                 f"{estimator.max_epoch}; nothing is left to train")
            estimator.max_epoch -= epoch + 1
        if estimator.max_batch:
            if batch >= estimator.max_batch - 1:
                raise ValueError(f"{type(self).__name__}: the checkpoint already trained "
                                 f"{batch} batches, no less than max_batch "
                                 f"{estimator.max_batch}; nothing is left to train")
            estimator.max_batch -= batch
        name = os.path.join(self.model_dir, f"{self.model_prefix}-epoch{epoch}batch{batch}")
        estimator.net.load_parameters(name + ".params", ctx=estimator.context)
        estimator.trainer.load_states(name + ".states")
        estimator.logger.warning("CheckpointHandler: resumed from checkpoint %s.params "
                                 "(trained %d epochs, %d batches)", name, epoch + 1, batch)
        self.current_epoch = epoch + 1
        self.current_batch = batch

    def _find_max_iteration(self, dir, prefix, start, end, saved_checkpoints=None):
        """The largest integer between start and end in names of files in dir that
        begin with prefix (None when none does)."""
        best = None
        for fname in os.listdir(dir):
            if not fname.startswith(prefix) or (saved_checkpoints is not None and
                                               fname not in saved_checkpoints):
                continue
            rest = fname[fname.index(start) + len(start):] if start in fname else ""
            digits = rest.split(end)[0] if end in rest else ""
            if digits.isdigit():
                best = int(digits) if best is None else max(best, int(digits))
        return best


class EarlyStoppingHandler(TrainBegin, EpochEnd, TrainEnd):
    """Stop when ``monitor`` has not improved by more than min_delta for patience
    epochs (mode 'min', 'max' or 'auto'); baseline: a value it must beat."""

    def __init__(self, monitor, min_delta=0, patience=0, mode="auto", baseline=None):
        if not isinstance(monitor, EvalMetric):
            raise ValueError("Please provide one of the metric objects from "
                             "estimator.train_metrics and estimator.val_metrics as monitor.")
        if isinstance(monitor, CompositeEvalMetric):
            raise ValueError("CompositeEvalMetric is not supported for EarlyStoppingHandler, "
                             "please specify a simple metric instead.")
        self.monitor = monitor
        self.baseline = baseline
        self.patience = patience
        self.min_delta = min_delta
        self.wait = 0
        self.stopped_epoch = 0
        self.current_epoch = 0
        self.stop_training = False
        self.monitor_op = _monitor_op("EarlyStopping", monitor, mode)
        if self.monitor_op is np.less:
            self.min_delta *= -1

    def train_begin(self, estimator, *args, **kwargs):
        self.wait = 0
        self.stopped_epoch = 0
        self.current_epoch = 0
        self.stop_training = False
        if self.baseline is not None:
            self.best = self.baseline
        else:
            self.best = np.inf if self.monitor_op is np.less else -np.inf

    def epoch_end(self, estimator, *args, **kwargs):
        name, value = self.monitor.get()
        if np.isnan(value):
            warnings.warn(f"{type(self).__name__}: {name} is not updated, make sure you "
                          "pass one of the metric objects from estimator.train_metrics "
                          "and estimator.val_metrics as monitor.", RuntimeWarning)
        elif self.monitor_op(value - self.min_delta, self.best):
            self.best = value
            self.wait = 0
        else:
            self.wait += 1
            if self.wait >= self.patience:
                self.stopped_epoch = self.current_epoch
                self.stop_training = True
        self.current_epoch += 1
        return self.stop_training

    def train_end(self, estimator, *args, **kwargs):
        if self.stopped_epoch > 0:
            estimator.logger.info("[Epoch %d] EarlyStoppingHanlder: early stopping due to "
                                  "%s not improving", self.stopped_epoch,
                                  self.monitor.get()[0])


class GradientUpdateHandler(BatchEnd):
    """Apply the gradients: ``trainer.step(batch size)`` after each batch."""

    def __init__(self, priority=-2000):
        self.priority = priority

    def batch_end(self, estimator, *args, **kwargs):
        loss = kwargs["loss"]
        if not isinstance(loss, list):
            loss = [loss]
        batch_size = sum(l.shape[0] for l in loss)
        estimator.trainer.step(batch_size)
