"""Learning-rate schedules (MXNet 1.9.1's ``mx.lr_scheduler``).

A scheduler is called with the number of updates done so far and returns the learning
rate. Every scheduler can warm up first: for ``num_update < warmup_steps`` the lr goes
from ``warmup_begin_lr`` to ``base_lr`` linearly (``warmup_mode='linear'``) or stays at
``warmup_begin_lr`` (``'constant'``).
"""
import logging
from math import cos, pi

__all__ = ["LRScheduler", "FactorScheduler", "MultiFactorScheduler", "PolyScheduler",
           "CosineScheduler"]


class LRScheduler:
    """Base class: the warm-up part. Subclasses implement ``__call__(num_update)``.

    Parameters
    ----------
    base_lr : float, default 0.01
        The lr after warm-up.
    warmup_steps : int, default 0
        Number of warm-up updates.
    warmup_begin_lr : float, default 0
        The lr at update 0.
    warmup_mode : {'linear', 'constant'}, default 'linear'
    """

    def __init__(self, base_lr=0.01, warmup_steps=0, warmup_begin_lr=0, warmup_mode="linear"):
        self.base_lr = base_lr
        if not isinstance(warmup_steps, int):
            raise AssertionError("warmup_steps must be an int")
        self.warmup_steps = warmup_steps
        self.warmup_final_lr = base_lr
        self.warmup_begin_lr = warmup_begin_lr
        if self.warmup_begin_lr > self.warmup_final_lr:
            raise ValueError("Base lr has to be higher than warmup_begin_lr")
        if self.warmup_steps < 0:
            raise ValueError("Warmup steps has to be positive or 0")
        if warmup_mode not in ("linear", "constant"):
            raise ValueError("Supports only linear and constant modes of warmup")
        self.warmup_mode = warmup_mode

    def get_warmup_lr(self, num_update):
        """The lr during warm-up (num_update < warmup_steps)."""
        if num_update >= self.warmup_steps:
            raise AssertionError("get_warmup_lr is only for num_update < warmup_steps")
        if self.warmup_mode == "constant":
            return self.warmup_begin_lr
        frac = float(num_update) / float(self.warmup_steps)
        return self.warmup_begin_lr + (self.warmup_final_lr - self.warmup_begin_lr) * frac

    def __call__(self, num_update):
        """The learning rate after num_update updates."""
        raise NotImplementedError("must override this")


class FactorScheduler(LRScheduler):
    """Multiply the lr by ``factor`` every ``step`` updates, not going below
    ``stop_factor_lr``: ``lr = base_lr * factor ** floor((num_update - 1) / step)``.

    Parameters
    ----------
    step : int
        Updates between two decays (>= 1).
    factor : float, default 1
        Decay factor (<= 1).
    stop_factor_lr : float, default 1e-8
        The lr never goes below this.
    """

    def __init__(self, step, factor=1, stop_factor_lr=1e-8, base_lr=0.01, warmup_steps=0,
                 warmup_begin_lr=0, warmup_mode="linear"):
        super().__init__(base_lr, warmup_steps, warmup_begin_lr, warmup_mode)
        if step < 1:
            raise ValueError("Schedule step must be greater or equal than 1 round")
        if factor > 1.0:
            raise ValueError("Factor must be no more than 1 to make lr reduce")
        self.step = step
        self.factor = factor
        self.stop_factor_lr = stop_factor_lr
        self.count = 0

    def __call__(self, num_update):
        if num_update < self.warmup_steps:
            return self.get_warmup_lr(num_update)
        # Stateful, as in MXNet: base_lr decays as num_update passes count + step.
        while num_update > self.count + self.step:
            self.count += self.step
            self.base_lr *= self.factor
            if self.base_lr < self.stop_factor_lr:
                self.base_lr = self.stop_factor_lr
                logging.info("Update[%d]: now learning rate arrived at %0.5e, will not "
                             "change in the future", num_update, self.base_lr)
            else:
                logging.info("Update[%d]: Change learning rate to %0.5e",
                             num_update, self.base_lr)
        return self.base_lr


class MultiFactorScheduler(LRScheduler):
    """Multiply the lr by ``factor`` once num_update passes each entry of ``step``.

    Parameters
    ----------
    step : list of int
        Increasing update counts at which the lr decays.
    factor : float, default 1
    """

    def __init__(self, step, factor=1, base_lr=0.01, warmup_steps=0, warmup_begin_lr=0,
                 warmup_mode="linear"):
        super().__init__(base_lr, warmup_steps, warmup_begin_lr, warmup_mode)
        if not isinstance(step, list) or len(step) < 1:
            raise AssertionError("step must be a non-empty list of ints")
        for i, s in enumerate(step):
            if i and s <= step[i - 1]:
                raise ValueError("Schedule step must be an increasing integer list")
            if s < 1:
                raise ValueError("Schedule step must be greater or equal than 1 round")
        if factor > 1.0:
            raise ValueError("Factor must be no more than 1 to make lr reduce")
        self.step = step
        self.cur_step_ind = 0
        self.factor = factor
        self.count = 0

    def __call__(self, num_update):
        if num_update < self.warmup_steps:
            return self.get_warmup_lr(num_update)
        while self.cur_step_ind < len(self.step) and num_update > self.step[self.cur_step_ind]:
            self.count = self.step[self.cur_step_ind]
            self.cur_step_ind += 1
            self.base_lr *= self.factor
            logging.info("Update[%d]: Change learning rate to %0.5e", num_update, self.base_lr)
        return self.base_lr


class _DecayToFinal(LRScheduler):
    """From base_lr (after warm-up) to final_lr at update ``max_update``:
    ``final_lr + (base_lr - final_lr) * self._curve(frac)``, frac going from 0 to 1
    over the updates after warm-up; the lr stays at final_lr afterwards."""

    def __init__(self, max_update, base_lr, final_lr, warmup_steps, warmup_begin_lr,
                 warmup_mode):
        super().__init__(base_lr, warmup_steps, warmup_begin_lr, warmup_mode)
        if not isinstance(max_update, int):
            raise AssertionError("max_update must be an int")
        if max_update < 1:
            raise ValueError("maximum number of updates must be strictly positive")
        self.base_lr_orig = base_lr
        self.max_update = max_update
        self.final_lr = final_lr
        self.max_steps = self.max_update - self.warmup_steps

    def _curve(self, frac):
        raise NotImplementedError

    def __call__(self, num_update):
        if num_update < self.warmup_steps:
            return self.get_warmup_lr(num_update)
        if num_update <= self.max_update:
            frac = (num_update - self.warmup_steps) / self.max_steps
            self.base_lr = self.final_lr + (self.base_lr_orig - self.final_lr) * \
                self._curve(frac)
        return self.base_lr


class PolyScheduler(_DecayToFinal):
    """Polynomial decay to ``final_lr`` at ``max_update``:
    ``final_lr + (base_lr - final_lr) * (1 - nup / max_nup) ** pwr`` with nup counted
    from the end of warm-up.

    Parameters
    ----------
    max_update : int
        The update count at which the lr reaches final_lr (>= 1).
    pwr : float, default 2
    final_lr : float, default 0
    """

    def __init__(self, max_update, base_lr=0.01, pwr=2, final_lr=0, warmup_steps=0,
                 warmup_begin_lr=0, warmup_mode="linear"):
        super().__init__(max_update, base_lr, final_lr, warmup_steps, warmup_begin_lr,
                         warmup_mode)
        self.power = pwr

    def _curve(self, frac):
        return pow(1 - frac, self.power)


class CosineScheduler(_DecayToFinal):
    """Cosine decay to ``final_lr`` at ``max_update``:
    ``final_lr + (base_lr - final_lr) * (1 + cos(pi * nup / max_nup)) / 2``.

    Parameters
    ----------
    max_update : int
        The update count at which the lr reaches final_lr (>= 1).
    final_lr : float, default 0
    """

    def __init__(self, max_update, base_lr=0.01, final_lr=0, warmup_steps=0,
                 warmup_begin_lr=0, warmup_mode="linear"):
        super().__init__(max_update, base_lr, final_lr, warmup_steps, warmup_begin_lr,
                         warmup_mode)

    def _curve(self, frac):
        return (1 + cos(pi * frac)) / 2
