"""``mx.contrib.tensorboard``: write training metrics as TensorBoard scalars.

``LogMetricsCallback`` is a batch- or epoch-end callback for ``Module.fit`` (and
``mx.model``): every call logs each ``eval_metric`` value as a scalar at the current
epoch. MXNet 1.9.1 writes through ``mxboard``; that package needs the real MXNet, so
pymxnet also accepts the same ``SummaryWriter`` interface from ``tensorboardX`` or
``torch.utils.tensorboard``, whichever is installed first in that order.
"""
import importlib

__all__ = ["LogMetricsCallback"]

_WRITER_MODULES = ("mxboard", "tensorboardX", "torch.utils.tensorboard")


def _summary_writer_class():
    for name in _WRITER_MODULES:
        try:
            return importlib.import_module(name).SummaryWriter
        except ImportError:
            continue
    raise ImportError("LogMetricsCallback needs a TensorBoard SummaryWriter: install "
                      "tensorboardX (pip install tensorboardX), mxboard or torch")


class LogMetricsCallback:
    """Log ``param.eval_metric``'s values to TensorBoard event files in ``logging_dir``.

    Parameters
    ----------
    logging_dir : str
        Directory the event files are written to (``tensorboard --logdir`` it).
    prefix : str, optional
        Written before each metric name as ``'<prefix>-<name>'`` (e.g. ``'train'``).
    """

    def __init__(self, logging_dir, prefix=None):
        self.prefix = prefix
        self.summary_writer = _summary_writer_class()(logging_dir)

    def __call__(self, param):
        if param.eval_metric is None:
            return
        for name, value in param.eval_metric.get_name_value():
            if self.prefix is not None:
                name = f"{self.prefix}-{name}"
            self.summary_writer.add_scalar(name, value, global_step=param.epoch)
