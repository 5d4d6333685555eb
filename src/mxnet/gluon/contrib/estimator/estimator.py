"""Estimator: ``fit``/``evaluate`` loops for a Gluon network, with the work of each
step delegated to event handlers and a BatchProcessor (see event_handler.py)."""
import copy
import logging
import sys
import warnings

from .... import initializer as init
from ....context import Context, cpu, gpu, num_gpus
from ....metric import Loss as metric_loss
from ...data import DataLoader
from ...loss import Loss as gluon_loss
from ...trainer import Trainer
from .batch_processor import BatchProcessor
from .event_handler import (BatchBegin, BatchEnd, EpochBegin, EpochEnd,
                            GradientUpdateHandler, LoggingHandler, MetricHandler,
                            StoppingHandler, TrainBegin, TrainEnd, ValidationHandler)
from .utils import check_handler_metric_ref, check_metrics, suggest_metric_for_loss

__all__ = ["Estimator"]


class _ContextError(AssertionError):
    """A context naming a device that does not exist (an AssertionError, as MXNet's)."""


class Estimator:
    """Train and evaluate a Gluon network.

    Parameters
    ----------
    net : gluon.Block
    loss : gluon.loss.Loss
    train_metrics : EvalMetric or list of EvalMetric, optional
        Renamed 'training <name>'. Default: a metric suited to the loss (Accuracy for
        softmax cross entropy) and the loss itself.
    val_metrics : EvalMetric or list, optional
        Default: copies of the training metrics named 'validation <name>'.
    initializer : Initializer, optional
        Used when the network has uninitialized parameters (default Uniform).
    trainer : gluon.Trainer, optional
        Default: SGD with learning rate 0.001 (with a warning).
    context : Context or list of Context, optional
        Default: every GPU, else the CPU.
    val_net, val_loss : optional
        The network and loss used for validation (default: net and loss).
    batch_processor : BatchProcessor, optional
        What is done per batch (fit_batch/evaluate_batch).
    """

    logger = None

    def __init__(self, net, loss, train_metrics=None, val_metrics=None, initializer=None,
                 trainer=None, context=None, val_net=None, val_loss=None,
                 batch_processor=None):
        self.net = net
        self.loss = self._check_loss(loss)
        self._train_metrics = check_metrics(train_metrics)
        self._val_metrics = check_metrics(val_metrics)
        self._add_default_training_metrics()
        self._add_validation_metrics()
        self.val_loss = self.loss if val_loss is None else self._check_loss(val_loss)
        self.val_net = self.net if val_net is None else val_net
        # A logger of its own (not registered globally), printing bare messages to the
        # stdout of the moment, as MXNet's does.
        self.logger = logging.Logger(name="Estimator", level=logging.INFO)
        self.logger.addHandler(logging.StreamHandler(sys.stdout))
        self.context = self._check_context(context)
        self._initialize(initializer)
        self.trainer = self._check_trainer(trainer)
        self.batch_processor = self._check_batch_processor(batch_processor)
        self.max_epoch = self.max_batch = None
        self.batch_axis = 0

    # ------------------------------------------------------------------ checks
    def _check_loss(self, loss):
        if not isinstance(loss, gluon_loss):
            raise ValueError(f"loss must be a Loss, refer to gluon.loss.Loss:{loss}")
        return loss

    def _check_context(self, context):
        if isinstance(context, Context):
            context = [context]
        if context is None:
            n = num_gpus()
            return [gpu(i) for i in range(n)] if n > 0 else [cpu()]
        if not isinstance(context, list) or not all(isinstance(c, Context)
                                                    for c in context):
            raise ValueError("context must be a Context or a list of Context, for example "
                             "mx.cpu() or [mx.gpu(0), mx.gpu(1)], refer to "
                             f"mxnet.Context:{context}")
        available = num_gpus()
        for c in context:
            if c.device_type == "gpu" and c.device_id >= available:
                raise _ContextError(
                    f"{c} is not available, please make sure your context is in one of: "
                    "mx.cpu(), " + ", ".join(f"mx.gpu({i})" for i in range(available)))
        return context

    def _check_batch_processor(self, batch_processor):
        if batch_processor is None:
            return BatchProcessor()
        if not (callable(getattr(batch_processor, "fit_batch", None))
                and callable(getattr(batch_processor, "evaluate_batch", None))):
            raise ValueError("Customized Batch Processor must contain fit_batch() and "
                             "evaluate_batch() methods")
        return batch_processor

    def _is_initialized(self):
        """Every parameter initialized or waiting for deferred initialization."""
        for param in self.net.collect_params().values():
            try:
                param.list_ctx()
            except RuntimeError:
                return False
        return True

    def _initialize(self, initializer):
        if not self._is_initialized():
            self.net.initialize(init=initializer or init.Uniform(), ctx=self.context)
        elif initializer is not None:
            warnings.warn("Network already fully initialized, skipping initialization. "
                          "You don't need to pass initializer if you already initialized "
                          "your net. You can use net.initialize(init=your_initializer, "
                          "force_reinit=True)to force re-initialize.")

    def _check_trainer(self, trainer):
        if trainer is None:
            warnings.warn("No trainer specified, default SGD optimizer with learning rate "
                          "0.001 is used.")
            return Trainer(self.net.collect_params(), "sgd", {"learning_rate": 0.001})
        if not isinstance(trainer, Trainer):
            raise ValueError(f"Trainer must be a Gluon Trainer instance, refer to "
                             f"gluon.Trainer:{trainer}")
        return trainer

    def _get_data_and_label(self, batch, ctx, batch_axis=0):
        return self.batch_processor._get_data_and_label(batch, ctx, batch_axis)

    # ----------------------------------------------------------------- metrics
    def _add_default_training_metrics(self):
        if not self._train_metrics:
            suggested = suggest_metric_for_loss(self.loss)
            if suggested is not None:
                self._train_metrics = [suggested]
            loss_name = self.loss.name.rstrip("1234567890")
            self._train_metrics.append(metric_loss(loss_name))
        for metric in self._train_metrics:
            metric.name = "training " + metric.name

    def _add_validation_metrics(self):
        if not self._val_metrics:
            self._val_metrics = [copy.deepcopy(m) for m in self._train_metrics]
            for metric in self._val_metrics:
                metric.name = metric.name.replace("training", "validation", 1)
        else:
            for metric in self._val_metrics:
                metric.name = "validation " + metric.name

    @property
    def train_metrics(self):
        return self._train_metrics

    @property
    def val_metrics(self):
        return self._val_metrics

    # ------------------------------------------------------------------ loops
    def evaluate(self, val_data, batch_axis=0, event_handlers=None):
        """Run the validation network over val_data (a DataLoader), updating
        val_metrics through the handlers (defaults: MetricHandler, LoggingHandler)."""
        if not isinstance(val_data, DataLoader):
            raise ValueError("Estimator only support input as Gluon DataLoader. "
                             "Alternatively, you can transform your DataIter or any "
                             "NDArray into Gluon DataLoader. Refer to gluon.data.DataLoader")
        handlers = self._prepare_default_validation_handlers(event_handlers)
        _, epoch_begin, batch_begin, batch_end, epoch_end, _ = \
            self._categorize_handlers(handlers)
        was_evaluating, self._evaluating = getattr(self, "_evaluating", False), True
        try:
            for handler in epoch_begin:
                handler.epoch_begin(self)
            for batch in val_data:
                for handler in batch_begin:
                    handler.batch_begin(self, batch=batch)
                _, label, pred, loss = self.batch_processor.evaluate_batch(self, batch,
                                                                           batch_axis)
                for handler in batch_end:
                    handler.batch_end(self, batch=batch, pred=pred, label=label, loss=loss)
            for handler in epoch_end:
                handler.epoch_end(self)
        finally:
            self._evaluating = was_evaluating

    def fit(self, train_data, val_data=None, epochs=None, event_handlers=None,
            batches=None, batch_axis=0):
        """Train on train_data (a DataLoader) for exactly one of ``epochs`` or
        ``batches``, validating on val_data after each epoch when given. Handlers
        are added to the defaults (gradient update, metrics, validation, stopping,
        logging) unless they replace one of the same kind."""
        if not isinstance(train_data, DataLoader):
            raise ValueError("Estimator only support input as Gluon DataLoader. "
                             "Alternatively, you can transform your DataIter or any "
                             "NDArray into Gluon DataLoader. Refer to gluon.data.dataloader")
        if val_data is not None and not isinstance(val_data, DataLoader):
            raise ValueError("Estimator only support input as Gluon DataLoader. "
                             "Alternatively, you can transform your DataIter or any "
                             "NDArray into Gluon DataLoader. Refer to gluon.data.DataLoader")
        if (epochs is None) == (batches is None):
            raise ValueError("Fit only support exactly one type of iteration, train by "
                             "number of epochs or number of batches.Please specify one and "
                             "only one of: epochs or batches.")
        self.max_epoch, self.max_batch = epochs, batches
        self.batch_axis = batch_axis
        try:
            self._batches_per_epoch = len(train_data)
        except TypeError:
            self._batches_per_epoch = None
        handlers = self._prepare_default_handlers(val_data, event_handlers)
        train_begin, epoch_begin, batch_begin, batch_end, epoch_end, train_end = \
            self._categorize_handlers(handlers)
        for handler in train_begin:
            handler.train_begin(self)
        while True:
            for handler in epoch_begin:
                handler.epoch_begin(self)
            stop = False
            for batch in train_data:
                for handler in batch_begin:
                    handler.batch_begin(self, batch=batch)
                _, label, pred, loss = self.batch_processor.fit_batch(self, batch,
                                                                      batch_axis)
                for handler in batch_end:
                    if handler.batch_end(self, batch=batch, pred=pred, label=label,
                                         loss=loss):
                        stop = True
                if stop:
                    break
            for handler in epoch_end:
                if handler.epoch_end(self):
                    stop = True
            if stop:
                break
        for handler in train_end:
            handler.train_end(self)

    # --------------------------------------------------------------- handlers
    def _prepare_default_handlers(self, val_data, event_handlers):
        handlers = _as_list(event_handlers)
        added = []
        if not any(isinstance(h, StoppingHandler) for h in handlers):
            added.append(StoppingHandler(self.max_epoch, self.max_batch))
        if not any(isinstance(h, GradientUpdateHandler) for h in handlers):
            added.append(GradientUpdateHandler())
        if not any(isinstance(h, MetricHandler) for h in handlers):
            added.append(MetricHandler(metrics=self.train_metrics))
        if val_data is not None and not any(isinstance(h, ValidationHandler)
                                            for h in handlers):
            added.append(ValidationHandler(val_data=val_data, eval_fn=self.evaluate))
        if not any(isinstance(h, LoggingHandler) for h in handlers):
            added.append(LoggingHandler(metrics=self.train_metrics))
        known = self.train_metrics + self.val_metrics
        for handler in handlers:
            check_handler_metric_ref(handler, known)
        handlers = handlers + added
        handlers.sort(key=lambda h: getattr(h, "priority", 0))
        return handlers

    def _prepare_default_validation_handlers(self, event_handlers):
        handlers = _as_list(event_handlers)
        added = []
        if not any(isinstance(h, MetricHandler) for h in handlers):
            added.append(MetricHandler(metrics=self.val_metrics))
        if not any(isinstance(h, LoggingHandler) for h in handlers):
            added.append(LoggingHandler(metrics=self.val_metrics))
        known = self.train_metrics + self.val_metrics
        for handler in handlers:
            check_handler_metric_ref(handler, known)
        handlers = handlers + added
        handlers.sort(key=lambda h: getattr(h, "priority", 0))
        return handlers

    def _categorize_handlers(self, event_handlers):
        """Split handlers into (train_begin, epoch_begin, batch_begin, batch_end,
        epoch_end, train_end) lists, each handler in every list it implements."""
        kinds = (TrainBegin, EpochBegin, BatchBegin, BatchEnd, EpochEnd, TrainEnd)
        return tuple([h for h in event_handlers if isinstance(h, k)] for k in kinds)


def _as_list(event_handlers):
    if event_handlers is None:
        return []
    if isinstance(event_handlers, (list, tuple)):
        return list(event_handlers)
    return [event_handlers]
