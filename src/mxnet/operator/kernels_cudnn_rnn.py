"""The ``RNN`` operator on cuDNN (backend/cudnn/rnn.py), for the GPU kernel table.

Off unless ``MXNET_CUDNN_RNN=1`` (read once, at the first RNN call on a GPU): it has
not yet been measured on a device (the operator's own GPU path, one matmul and one
fused cell kernel per time step, runs otherwise). Covered calls: no
``use_sequence_length``, no ``projection_size``, no LSTM state clipping, no dropout
between stacked layers (``p`` > 0 with ``num_layers`` > 1), data, parameters and
states of one type among float16/32/64. bfloat16 calls, which the runner computes in
float32 and rounds back (operator/bfloat16.py), are declined: the rounding would
corrupt cuDNN's opaque reserve.

The decision depends only on the parameters and on the data, parameters and states
(their shapes, dtype and device), which forward and backward share, so a backward
always takes the path its forward took."""
import os

import numpy as np

from ..backend.cudnn import rnn as R
from ..backend.cudnn import descriptors as D
from ..backend.cudnn._runtime import runtime
from .kernels import OutputBuffers
from .kernels_cudnn import _guard, _need

__all__ = ["register_all", "enabled", "covered", "OPS"]

_state = {}
_ALIGN = 256        # what a fresh CuPy allocation gives; cuDNN's buffers get no less


def enabled():
    """MXNET_CUDNN_RNN=1 turns the cuDNN path on; read once, so that a forward and
    its backward cannot see two settings."""
    on = _state.get("enabled")
    if on is None:
        on = _state["enabled"] = os.environ.get("MXNET_CUDNN_RNN", "0").strip() == "1"
    return on


def covered(p, x, *others):
    """Whether the call's parameters and arrays (data, then the parameters and states)
    are within what cuDNN runs here."""
    dt = np.dtype(x.dtype)
    return (not p.use_sequence_length and p.projection_size is None
            and p.lstm_state_clip_min is None and p.mode in R.MODES
            and not (p.p > 0 and p.num_layers > 1)
            and x.ndim == 3 and dt in R.TYPES and min(x.shape) > 0
            and all(a.dtype == dt for a in others))


def _plan(ctx, p, inputs):
    """The cuDNN plan for this call, or None (the body runs)."""
    x = inputs[0]
    n_float = 4 if p.mode == "lstm" else 3
    if (not enabled() or getattr(ctx, "widened_from", None) is not None
            or not covered(p, x, *inputs[1:n_float])):
        return None
    from .nn.rnn import _Plan
    T, N, I = (int(v) for v in x.shape)
    mx_plan = _Plan(p, T, N, I)
    dtype = np.dtype(x.dtype)
    device_id = x.device.id
    rnn_key = (p.mode, mx_plan.L, mx_plan.D, I, mx_plan.H, dtype.str, device_id,
               D.conv_math_type(dtype))

    def make_weights():
        blocks = [(wo, ws[1], ho, hs[1], bo, bho) for (wo, ws, ho, hs, _), (bo, bho)
                  in zip(mx_plan.weights, mx_plan.biases)]
        return R.Weights(runtime(), device_id, p.mode, mx_plan.L, mx_plan.D == 2, I,
                         mx_plan.H, dtype, blocks)

    def make():
        weights = R.plan_for(rnn_key, make_weights)
        if weights is None:
            raise R.Refused(R.refusal(rnn_key))
        return R.Plan(runtime(), device_id, weights, mx_plan.L, mx_plan.D, T, N, I,
                      mx_plan.H, mx_plan.n_reserve * dtype.itemsize)
    return R.plan_for(rnn_key + (T, N), make)


def _ready(cp, a, dtype=None):
    """``a`` as cuDNN reads it: C-contiguous, of ``dtype`` where given, and starting on
    an aligned address (a view at an odd offset is copied)."""
    if a is None:
        return None
    if dtype is not None and a.dtype != dtype:
        a = a.astype(dtype)
    if not a.flags.c_contiguous or a.data.ptr % _ALIGN:
        a = cp.array(a, order="C", copy=True)
    return a


def _dest(cp, buffers, i, shape, dtype):
    """Output ``i``'s array to write: the given destination when it is aligned, else a
    fresh one that ``buffers.done()`` copies over."""
    a = buffers.get(i, shape, dtype)
    if a.data.ptr % _ALIGN:
        a = buffers.arrays[i] = cp.empty(shape, dtype)
    return a


def _op():
    from .registry import get_op
    return get_op("RNN")


@_guard
def rnn_forward(cp, ctx, p, inputs, aux, out=None):
    """RNN forward on cuDNN: output, the final states when ``state_outputs``, and
    cuDNN's reserve in the hidden ``reserve_space`` output."""
    plan = _plan(ctx, p, inputs)
    if plan is None:
        return NotImplemented
    _, oshapes, _ = _op().infer_shape(p, [a.shape for a in inputs])   # validates
    lstm = p.mode == "lstm"
    x, flat, hx = (_ready(cp, a) for a in inputs[:3])
    cx = _ready(cp, inputs[3]) if lstm else None
    o = OutputBuffers(cp, out, len(oshapes), inputs)
    dt = x.dtype
    y = _dest(cp, o, 0, oshapes[0], dt)
    hy = cy = None
    if p.state_outputs:
        hy = _dest(cp, o, 1, oshapes[1], dt)
        if lstm:
            cy = _dest(cp, o, 2, oshapes[2], dt)
    reserve = _dest(cp, o, len(oshapes) - 1, oshapes[-1], dt)
    R.forward(plan, x.device.id, x, flat, hx, cx, y, hy, cy, reserve)
    return o.done()


@_guard
def rnn_backward(cp, ctx, p, out_grads, inputs, outputs, aux, in_grad=None):
    """RNN backward on cuDNN from the forward's reserve: the gradients of data, the
    flat parameters and the initial states."""
    plan = _plan(ctx, p, inputs)
    if plan is None:
        return NotImplemented
    lstm = p.mode == "lstm"
    need = _need(ctx, len(inputs))
    x, flat, hx = (_ready(cp, a) for a in inputs[:3])
    cx = _ready(cp, inputs[3]) if lstm else None
    dt = x.dtype
    y = _ready(cp, outputs[0])
    # cuDNN's backward rewrites the reserve (an in/out argument), and a retained graph
    # may run this backward again: it works on a copy of the bytes cuDNN uses
    res = outputs[-1]
    if not res.flags.c_contiguous:
        res = cp.ascontiguousarray(res)
    reserve = res.view(cp.uint8)[:plan.reserve_bytes].copy()
    dy = _ready(cp, out_grads[0], dt)
    dhy = _ready(cp, out_grads[1], dt) if p.state_outputs else None
    dcy = _ready(cp, out_grads[2], dt) if (p.state_outputs and lstm) else None
    reads = [a for a in (x, flat, hx, cx, y, reserve, dy, dhy, dcy) if a is not None]
    g = OutputBuffers(cp, in_grad, len(inputs), reads)
    # cuDNN always writes dx; dhx and dcx only where wanted
    dx = _dest(cp, g, 0, x.shape, dt) if need[0] else cp.empty(x.shape, dt)
    dflat = _dest(cp, g, 1, flat.shape, dt) if need[1] else None
    dhx = _dest(cp, g, 2, hx.shape, dt) if need[2] else None
    dcx = _dest(cp, g, 3, cx.shape, dt) if (lstm and need[3]) else None
    R.backward(plan, x.device.id, x, flat, hx, cx, y, dy, dhy, dcy, reserve, dx, dhx,
               dcx, dflat)
    return g.done()


OPS = {"RNN": (rnn_forward, rnn_backward)}


def register_all(register_kernel, device="gpu"):
    """Register the RNN adapters for ``device``; returns the names registered."""
    for name, (fwd, bwd) in OPS.items():
        register_kernel(name, device, fwd)
        register_kernel(name, device, bwd, backward=True)
    return list(OPS)
