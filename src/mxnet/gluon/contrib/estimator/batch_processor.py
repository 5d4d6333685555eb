"""BatchProcessor: what the Estimator does with one batch (split it over the
contexts, run the network and the loss, backpropagate). Subclass it and override
``fit_batch``/``evaluate_batch`` to change a training step without rewriting fit."""
from .... import autograd
from ...utils import split_and_load

__all__ = ["BatchProcessor"]


class BatchProcessor:
    """The default per-batch work of ``Estimator.fit`` and ``Estimator.evaluate``."""

    def __init__(self):
        pass

    def _get_data_and_label(self, batch, ctx, batch_axis=0):
        """Split a (data, label) batch along batch_axis over the context list."""
        data = split_and_load(batch[0], ctx_list=ctx, batch_axis=batch_axis)
        label = split_and_load(batch[1], ctx_list=ctx, batch_axis=batch_axis)
        return data, label

    def evaluate_batch(self, estimator, val_batch, batch_axis=0):
        """Run the validation network and loss on one batch.

        Returns (data, label, pred, loss), lists with one entry per context."""
        data, label = self._get_data_and_label(val_batch, estimator.context, batch_axis)
        pred = [estimator.val_net(x) for x in data]
        loss = [estimator.val_loss(y_hat, y) for y_hat, y in zip(pred, label)]
        return data, label, pred, loss

    def fit_batch(self, estimator, train_batch, batch_axis=0):
        """Forward and backward on one batch, recording for autograd (the trainer
        step is GradientUpdateHandler's).

        Returns (data, label, pred, loss), lists with one entry per context."""
        data, label = self._get_data_and_label(train_batch, estimator.context, batch_axis)
        with autograd.record():
            pred = [estimator.net(x) for x in data]
            loss = [estimator.loss(y_hat, y) for y_hat, y in zip(pred, label)]
        for l in loss:
            l.backward()
        return data, label, pred, loss
