"""Metric helpers shared by the Estimator and its handlers."""
from ....metric import Accuracy, CompositeEvalMetric, EvalMetric
from ...loss import SoftmaxCrossEntropyLoss

__all__ = ["check_metrics", "suggest_metric_for_loss", "check_handler_metric_ref"]


def check_metrics(metrics):
    """metrics as a list of EvalMetric (a CompositeEvalMetric is unpacked); ValueError
    for anything else."""
    if isinstance(metrics, CompositeEvalMetric):
        metrics = [m for metric in metrics.metrics for m in check_metrics(metric)]
    elif isinstance(metrics, EvalMetric):
        metrics = [metrics]
    else:
        metrics = metrics or []
        if not all(isinstance(m, EvalMetric) for m in metrics):
            raise ValueError("metrics must be a Metric or a list of Metric, refer to "
                             f"mxnet.metric.EvalMetric: {metrics}")
    return list(metrics)


def suggest_metric_for_loss(loss):
    """The metric to track by default for a loss (Accuracy for softmax cross
    entropy), or None."""
    if isinstance(loss, SoftmaxCrossEntropyLoss):
        return Accuracy()
    return None


def check_handler_metric_ref(handler, known_metrics):
    """ValueError when a handler's metrics/monitor are not the estimator's own metric
    objects (the estimator would never update them)."""
    for attr in ("metrics", "monitor"):
        value = getattr(handler, attr, None)
        if value is None:
            continue
        for metric in (value if isinstance(value, (list, tuple)) else [value]):
            if not any(metric is k for k in known_metrics):
                raise ValueError(
                    f"Event handler {type(handler).__name__} refers to the metric "
                    f"{metric.name!r}, which is not one of the estimator's training or "
                    "validation metrics: use estimator.train_metrics / "
                    "estimator.val_metrics (or the metric objects given to the "
                    "Estimator) in event handlers.")
