"""Dynamic loss scaling for mixed-precision training.

The loss is multiplied by ``loss_scale`` before backward so that small float16
gradients do not flush to zero; the trainer divides it out again. When any gradient
holds an inf or NaN the update is skipped and the scale halved; after
``_scale_seq_len`` clean steps in a row it doubles (up to ``_max_loss_scale``).
"""
import logging

import numpy as np

__all__ = ["LossScaler"]

_CHUNK = 200        # arrays per multi_all_finite call, as MXNet's LossScaler chunks them
_CHECKED_TYPES = (np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64))


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
        """Whether every gradient of ``params`` is finite: one multi_all_finite flag per
        device (over chunks of _CHUNK arrays), so the host waits once per device, not
        once per gradient."""
        from ... import ndarray as nd
        by_device = {}
        for param in params:
            if param.grad_req == "null" or param._data is None:
                continue
            for grad in param.list_grad():
                if grad.stype != "default":
                    grad = grad.data            # a sparse gradient's stored values
                if grad.dtype not in _CHECKED_TYPES:
                    grad = grad.astype(np.float32)
                by_device.setdefault(grad.context, []).append(grad)
        flags = []
        for grads in by_device.values():
            flag = None
            for start in range(0, len(grads), _CHUNK):
                chunk = grads[start:start + _CHUNK]
                if flag is None:
                    flag = nd.multi_all_finite(*chunk, num_arrays=len(chunk))
                else:
                    nd.multi_all_finite(*chunk, num_arrays=len(chunk), init_output=False,
                                        out=flag)
            flags.append(flag)
        return all(flag.asscalar() == 1.0 for flag in flags)

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
