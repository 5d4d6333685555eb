"""``quantized_rnn``: an LSTM over uint8 data quantized by ``quantize_asym``.

The data is dequantized with its scale and shift ((q - shift) / scale); the input and
recurrent weight matrices are quantized to int8 per output row (scale 127 / max|row|,
rounded half to even) and back, as oneDNN's int8 LSTM quantizes them per channel; the
biases stay float; then the float RNN operator runs. Outputs are float32, as MXNet's.
MXNet 1.9.1 supports only mode='lstm' here (on CPU, through oneDNN), and so does
pymxnet. (oneDNN also requantizes the hidden state each step with the data's scale and
shift; pymxnet keeps it in float32, which is closer to the float LSTM.)
"""
import numpy as np

from ...base import MXNetError
from ..nn.rnn import RNN, _Plan
from ..registry import Op, ShapeError, register
from ._common import store_all

__all__ = ["QuantizedRNN"]

_F32 = np.dtype(np.float32)


def _fake_quantize_rows(xp, w):
    """w quantized to int8 per row (symmetric, scale 127 / max|row|) and back."""
    r = xp.abs(w).max(axis=1, keepdims=True)
    safe = xp.where(r > 0, r, 1)
    return xp.rint(w * (127.0 / safe)) * (safe / 127.0)


@register
class QuantizedRNN(Op):
    """LSTM (RNN's parameters, mode='lstm' only) on uint8 ``data`` with its float32
    ``data_scale`` and ``data_shift``; float ``parameters`` and states."""
    name = "_contrib_quantized_rnn"
    writes_outputs = True
    backward_uses = ()
    params = RNN.params

    def _check(self, p):
        if p.mode != "lstm":
            raise MXNetError(f"quantized_rnn: only mode='lstm' is supported (as in MXNet "
                             f"1.9.1 on CPU), got mode={p.mode!r}")
        if p.use_sequence_length:
            raise NotImplementedError("quantized_rnn: use_sequence_length is not "
                                      "implemented")

    def arguments(self, p):
        return ["data", "parameters", "state", "state_cell", "data_scale", "data_shift"]

    def outputs(self, p):
        return RNN().outputs(p)[:-1]          # no reserve space: inference only

    def infer_shape(self, p, in_shapes):
        self._check(p)
        for nm, s in zip(("data_scale", "data_shift"), in_shapes[4:6]):
            if s is not None and tuple(s) != (1,):
                raise ShapeError(f"quantized_rnn: {nm} must have shape (1,), got {tuple(s)}")
        ins, outs, _ = RNN().infer_shape(p, list(in_shapes[:4]))
        return list(ins) + [(1,), (1,)], outs[:-1], []

    def infer_type(self, p, in_types):
        t = in_types[0]
        if t is not None and np.dtype(t) != np.uint8:
            raise MXNetError(f"quantized_rnn: data must be uint8 (from quantize_asym), got "
                             f"{np.dtype(t).name}")
        return [np.dtype(np.uint8)] + [_F32] * 5, [_F32] * len(self.outputs(p)), []

    def forward(self, ctx, p, inputs, aux, out=None):
        xp = ctx.xp
        self._check(p)
        data, flat, h0, c0, scale, shift = inputs
        self.infer_type(p, [data.dtype])
        s, b = float(scale.reshape(-1)[0]), float(shift.reshape(-1)[0])
        x = ((data.astype(np.float32) - np.float32(b)) / np.float32(s)).astype(np.float32)
        T, N, I = x.shape
        plan = _Plan(p, T, N, I)
        flat = flat.astype(np.float32).copy()
        for k in range(plan.L * plan.D):
            wx, wh = plan.params_of(flat, k)[:2]      # views into the copy
            wx[...] = _fake_quantize_rows(xp, wx)
            wh[...] = _fake_quantize_rows(xp, wh)
        was_train = ctx.is_train
        try:
            ctx.is_train = False
            res = RNN().forward(ctx, p, [x, flat, h0.astype(np.float32),
                                         c0.astype(np.float32)], [])
        finally:
            ctx.is_train = was_train
        return store_all(out, list(res[:-1]))
