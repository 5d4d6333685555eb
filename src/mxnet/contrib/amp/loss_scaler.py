"""Dynamic loss scaling for mixed-precision training.

The loss is multiplied by ``loss_scale`` before backward so that small float16
gradients do not flush to zero; the trainer divides it out again. When any gradient
holds an inf or NaN the update is skipped and the scale halved; after
``_scale_seq_len`` clean steps in a row it doubles (up to ``_max_loss_scale``).
"""
import logging

import numpy as np

__all__ = ["LossScaler"]


class LossScaler:
    """The dynamic loss scale of one trainer (starts at 2**16)."""

    def __init__(self):
        self._loss_scale = 2.0 ** 16
        self._next_loss_scale = self._loss_scale
        self._max_loss_scale = 2.0 ** 24
        self._scale_seq_len = 2000
        self._unskipped = 0

    @property
    def loss_scale(self):
        """The scale the next ``amp.scale_loss`` multiplies the loss by."""
        return self._loss_scale

    @staticmethod
    def _all_finite(params):
        for param in params:
            if param.grad_req == "null" or param._data is None:
                continue
            for grad in param.list_grad():
                # one reduction per gradient; the sum is inf/nan iff an element is
                if not np.isfinite(float(grad.sum().asscalar())):
                    return False
        return True

    def has_overflow(self, params):
        """Check the gradients of ``params`` for inf/NaN, move the scale accordingly,
        and say whether this step's update must be skipped."""
        self._loss_scale = self._next_loss_scale
        overflow = not self._all_finite(params)
        if overflow:
            self._next_loss_scale = self._loss_scale / 2.0
            self._unskipped = 0
            logging.info("AMP: decreasing loss scale to %f", self._next_loss_scale)
        else:
            self._unskipped += 1
            if self._unskipped == self._scale_seq_len:
                self._unskipped = 0
                self._next_loss_scale = min(self._max_loss_scale, self._loss_scale * 2.0)
                logging.info("AMP: increasing loss scale to %f", self._next_loss_scale)
        self._loss_scale = self._next_loss_scale
        return overflow
