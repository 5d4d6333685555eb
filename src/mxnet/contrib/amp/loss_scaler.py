"""Dynamic loss scaling for mixed-precision training.

The loss is multiplied by ``loss_scale`` before backward so that small float16
gradients do not flush to zero; the trainer divides it out again. When any gradient
holds an inf or NaN the update is skipped and the scale halved; after
``_scale_seq_len`` clean steps in a row it doubles (up to ``_max_loss_scale``).
"""
import logging
import threading

import numpy as np

__all__ = ["LossScaler", "Gate"]

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
        self._pending = None        # the Gate of a check not read back yet
        self._lock = threading.Lock()

    @property
    def loss_scale(self):
        """The scale the next ``amp.scale_loss`` multiplies the loss by (after the
        previous step's deferred check, if any, has been read)."""
        self._resolve()
        return self._loss_scale

    @staticmethod
    def _flags(params):
        """One multi_all_finite flag (1.0: every gradient finite) per device over the
        gradients of ``params`` (in chunks of _CHUNK arrays), not waited for."""
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
        return flags

    @classmethod
    def _all_finite(cls, params):
        """Whether every gradient of ``params`` is finite: the host waits once per
        device, not once per gradient."""
        return all(flag.asscalar() == 1.0 for flag in cls._flags(params))

    def has_overflow(self, params):
        """Check the gradients of ``params`` for inf/NaN, move the scale accordingly,
        and say whether this step's update must be skipped."""
        self._resolve()
        return self._record(not self._all_finite(params))

    def check_deferred(self, params, optimizer=None):
        """Start the check of ``params``' gradients without waiting for it: a Gate
        whose device flag the update kernels read (0: skip), or None when the
        gradients are not all on one device (then ``has_overflow``). The scale moves
        when the result is read: at the next ``loss_scale`` (``amp.scale_loss``), or
        when an update that cannot read the flag on the device asks ``Gate.skip()``.
        ``optimizer``: its update counts are put back if the step overflowed (as if
        it had not been applied, as the synchronous check leaves them)."""
        self._resolve()
        flags = self._flags(params)
        if len(flags) != 1:
            return None
        gate = Gate(self, flags[0], optimizer)
        self._pending = gate
        return gate

    def _resolve(self):
        """Read the pending deferred check, if any, and move the scale by it."""
        with self._lock:
            gate = self._pending
            if gate is None:
                return
            self._pending = None
            gate.overflow = self._record(not gate.read_finite())
            if gate.overflow:
                gate.restore_counts()

    def _record(self, overflow):
        """Move the scale for one checked step; returns ``overflow``."""
        self._loss_scale = self._next_loss_scale
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


class Gate:
    """One deferred finite check (``LossScaler.check_deferred``): ``flag``, the device
    flag (an NDArray: 1.0 finite, 0.0 overflow) that GPU update kernels read to skip
    the step with no host wait; ``skip()``, the answer on the host (waits for the
    flag; the scaler's bookkeeping happens once, whoever asks first)."""

    def __init__(self, scaler, flag, optimizer=None):
        self.scaler, self.flag, self.overflow = scaler, flag, None
        self._counts = None
        if optimizer is not None:       # the counts before this step's updates
            self._optimizer = optimizer
            self._counts = ({k: dict(v) for k, v in
                             optimizer._all_index_update_counts.items()},
                            optimizer.num_update)
        self._host = self._copy_started()

    def _copy_started(self):
        """On a GPU: the flag's device-to-host copy queued behind the check into pinned
        memory, and an event after it, so reading it waits for the check only (not for
        the work queued since, such as the next forward). None elsewhere."""
        from ... import engine
        from ...backend import cupy_or_none
        data = self.flag._chunk
        if data.num_pending or data.exception is not None:
            engine.get().wait_for_var(data)     # the check's kernel is queued
        arr = self.flag._chunk.data
        cp = cupy_or_none()
        if cp is None or not isinstance(arr, cp.ndarray):
            return None
        import cupyx
        with arr.device:
            host = cupyx.empty_pinned((1,), np.float32)
            stream = cp.cuda.get_current_stream()
            cp.cuda.runtime.memcpyAsync(host.ctypes.data, arr.data.ptr, 4,
                                        cp.cuda.runtime.memcpyDeviceToHost, stream.ptr)
            event = cp.cuda.Event(disable_timing=True)
            event.record(stream)
        return host, event

    def device_flag(self, xp):
        """The flag's device array, for kernels of array module ``xp`` (None when it
        lives elsewhere)."""
        arr = self.flag._chunk.data
        return arr if isinstance(arr, xp.ndarray) else None

    def read_finite(self):
        """Whether the checked gradients were all finite (waits for the check)."""
        if self._host is None:
            return float(self.flag.asscalar()) == 1.0
        host, event = self._host
        event.synchronize()
        return float(host[0]) == 1.0

    def skip(self):
        """Whether this step overflowed (its updates must not apply)."""
        if self.overflow is None:
            self.scaler._resolve()
        return bool(self.overflow)

    def restore_counts(self):
        """Put the optimizer's update counts back to before this (skipped) step."""
        if self._counts is None:
            return
        counts, num_update = self._counts
        opt = self._optimizer
        for dev, live in opt._all_index_update_counts.items():
            live.clear()
            live.update(counts.get(dev, {}))
        opt.num_update = num_update
