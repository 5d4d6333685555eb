"""Gluon Estimator (``mx.gluon.contrib.estimator``): a training loop for Gluon
networks, driven by event handlers (logging, checkpoints, early stopping, validation,
metrics, gradient updates), with the per-batch work in a replaceable BatchProcessor.

    est = Estimator(net, loss=gluon.loss.SoftmaxCrossEntropyLoss(), trainer=trainer)
    est.fit(train_loader, val_data=val_loader, epochs=5)
"""
from .batch_processor import BatchProcessor
from .estimator import Estimator
from .event_handler import (BatchBegin, BatchEnd, CheckpointHandler, EarlyStoppingHandler,
                            EpochBegin, EpochEnd, GradientUpdateHandler, LoggingHandler,
                            MetricHandler, StoppingHandler, TrainBegin, TrainEnd,
                            ValidationHandler)
from . import batch_processor, estimator, event_handler, utils  # noqa: F401

__all__ = ["Estimator", "BatchProcessor", "TrainBegin", "TrainEnd", "EpochBegin",
           "EpochEnd", "BatchBegin", "BatchEnd", "StoppingHandler", "MetricHandler",
           "ValidationHandler", "LoggingHandler", "CheckpointHandler",
           "EarlyStoppingHandler", "GradientUpdateHandler"]
