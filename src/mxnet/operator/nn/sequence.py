"""Variable-length sequence operators: ``SequenceMask``, ``SequenceLast`` and
``SequenceReverse`` (MXNet 1.9.1).

``data`` has the sequence on ``axis`` (0, or 1 where supported) and the batch on the
other of the first two axes; ``sequence_length`` (batch,) is read only when
``use_sequence_length`` is true. As in MXNet, fractional lengths are truncated to
integers.
"""
import numpy as np

from ...base import MXNetError
from ..params import Bool, Float, Int, Schema
from ..registry import Op, ShapeError, register

__all__ = ["SequenceMask", "SequenceLast", "SequenceReverse"]


class _SequenceOp(Op):
    axes = (0, 1)                       # the sequence axes this operator supports
    backward_uses = ("out_grad", "in_data")

    def arguments(self, p):
        return ["data", "sequence_length"] if p.use_sequence_length else ["data"]

    def _out_shape(self, p, dshape):
        return dshape

    def _check(self, p, dshape):
        if p.axis not in self.axes:
            raise MXNetError(f"{self.name}: axis must be "
                             f"{' or '.join(map(str, self.axes))}, got {p.axis}")
        if len(dshape) < 2:
            raise ShapeError(f"{self.name}: data must have rank 2 or greater, got shape "
                             f"{tuple(dshape)}")

    def infer_shape(self, p, in_shapes):
        d = in_shapes[0]
        if d is None:
            return list(in_shapes), [None], []
        self._check(p, d)
        batch = d[1 - p.axis]
        full = [tuple(d)]
        if p.use_sequence_length:
            s = in_shapes[1]
            if s is not None and tuple(s) != (batch,):
                raise ShapeError(f"{self.name}: sequence_length must have shape ({batch},) "
                                 f"for data of shape {tuple(d)} and axis={p.axis}, got "
                                 f"{tuple(s)}")
            full.append((batch,))
        return full, [self._out_shape(p, tuple(d))], []

    def infer_type(self, p, in_types):
        t = in_types[0]
        return [t if x is None else x for x in in_types], [t], []

    def _index_lengths(self, xp, p, inputs, low):
        """Integer lengths (batch,), checked to lie in [low, sequence length]."""
        data = inputs[0]
        T = data.shape[p.axis]
        lens = inputs[1].reshape(-1).astype(np.int64)
        if lens.size and (int(lens.min()) < low or int(lens.max()) > T):
            raise MXNetError(f"{self.name}: sequence_length values must lie in [{low}, {T}] "
                             f"(the length of axis {p.axis} of data)")
        return lens

    def _zero_grads(self, ctx, inputs):
        """The gradient of sequence_length, which is zero (as MXNet writes it)."""
        if len(inputs) < 2 or not (ctx.need_grad is None or ctx.need_grad[1]):
            return []
        return [ctx.xp.zeros(inputs[1].shape, inputs[1].dtype)]


def _steps(xp, p, ndim, T):
    """Step indices shaped to broadcast against data along the sequence axis."""
    shape = [1] * ndim
    shape[p.axis] = T
    return xp.arange(T).reshape(shape)


def _per_batch(p, lens, ndim):
    shape = [1] * ndim
    shape[1 - p.axis] = lens.shape[0]
    return lens.reshape(shape)


@register
class SequenceMask(_SequenceOp):
    """Sets the steps of each sequence beyond its length to ``value``."""
    name = "SequenceMask"
    params = Schema(use_sequence_length=Bool(False), value=Float(0.0), axis=Int(0))

    def _keep(self, xp, p, inputs):
        data = inputs[0]
        lens = inputs[1].reshape(-1).astype(np.int64)
        return _steps(xp, p, data.ndim, data.shape[p.axis]) < _per_batch(p, lens, data.ndim)

    def forward(self, ctx, p, inputs, aux):
        self._check(p, inputs[0].shape)
        data = inputs[0]
        if not p.use_sequence_length:
            return [data.copy()]
        return [ctx.xp.where(self._keep(ctx.xp, p, inputs), data,
                             data.dtype.type(p.value))]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux):
        g = out_grads[0]
        if p.use_sequence_length:
            g = g * self._keep(ctx.xp, p, inputs)
        return [g] + self._zero_grads(ctx, inputs)


@register
class SequenceLast(_SequenceOp):
    """Takes the last valid step of each sequence: the output drops the sequence axis."""
    name = "SequenceLast"
    params = Schema(use_sequence_length=Bool(False), axis=Int(0))

    def _out_shape(self, p, dshape):
        return dshape[:p.axis] + dshape[p.axis + 1:]

    def _where(self, xp, p, inputs):
        data = inputs[0]
        B = data.shape[1 - p.axis]
        if p.use_sequence_length:
            last = self._index_lengths(xp, p, inputs, 1) - 1
        else:
            last = xp.full((B,), data.shape[p.axis] - 1, np.int64)
        b = xp.arange(B)
        return (last, b) if p.axis == 0 else (b, last)

    def forward(self, ctx, p, inputs, aux):
        self._check(p, inputs[0].shape)
        return [inputs[0][self._where(ctx.xp, p, inputs)]]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux):
        g = ctx.xp.zeros(ctx.in_shapes[0], out_grads[0].dtype)
        g[self._where(ctx.xp, p, inputs)] = out_grads[0]      # one step per example
        return [g] + self._zero_grads(ctx, inputs)


@register
class SequenceReverse(_SequenceOp):
    """Reverses the first length[b] steps of each sequence; later steps stay put."""
    name = "SequenceReverse"
    params = Schema(use_sequence_length=Bool(False), axis=Int(0))
    axes = (0,)

    def _reverse(self, xp, p, inputs, a):
        if not p.use_sequence_length:
            return a[::-1].copy()
        T, B = a.shape[:2]
        lens = self._index_lengths(xp, p, inputs, 0)
        t = xp.arange(T)[:, None]
        src = xp.where(t < lens[None, :], lens[None, :] - 1 - t, t)
        return a[src, xp.arange(B)[None, :]]

    def forward(self, ctx, p, inputs, aux):
        self._check(p, inputs[0].shape)
        return [self._reverse(ctx.xp, p, inputs, inputs[0])]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux):
        # the permutation is its own inverse
        return [self._reverse(ctx.xp, p, inputs, out_grads[0])] + \
            self._zero_grads(ctx, inputs)
