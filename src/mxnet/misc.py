"""``mx.misc``: the learning-rate schedulers of MXNet's oldest training API.

Superseded by ``mx.lr_scheduler`` and kept for scripts that still import them. Unlike
``mx.lr_scheduler.FactorScheduler`` these are pure functions of the iteration count.
"""
import logging

__all__ = ["LearningRateScheduler", "FactorScheduler"]


class LearningRateScheduler:
    """Base class: ``scheduler(iteration)`` returns the learning rate to use then.

    ``base_lr`` is set by the optimizer (0.01 until then).
    """

    def __init__(self):
        self.base_lr = 0.01

    def __call__(self, iteration):
        raise NotImplementedError("a LearningRateScheduler must implement __call__")


class FactorScheduler(LearningRateScheduler):
    """``base_lr * factor ** (iteration // step)``: the rate shrinks by ``factor`` every
    ``step`` iterations.

    Parameters
    ----------
    step : int
        Iterations between two reductions (at least 1).
    factor : float
        What the rate is multiplied by at each reduction (below 1).
    """

    def __init__(self, step, factor=0.1):
        super().__init__()
        if step < 1:
            raise ValueError("Schedule step must be greater or equal than 1 round")
        if factor >= 1.0:
            raise ValueError("Factor must be less than 1 to make lr reduce")
        self.step = step
        self.factor = factor
        self.old_lr = self.base_lr
        self.init = False

    def __call__(self, iteration):
        if not self.init:
            self.init = True
            self.old_lr = self.base_lr
        lr = self.base_lr * self.factor ** (iteration // self.step)
        if lr != self.old_lr:
            self.old_lr = lr
            logging.info("At Iteration [%d]: Switch to new learning rate %.5f", iteration, lr)
        return lr
