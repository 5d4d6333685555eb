"""The ``RNN`` operator on cuDNN (backend/cudnn/rnn.py), for the GPU kernel table.

Off unless ``MXNET_CUDNN_RNN=1``: it has not yet been measured on a device (the
operator's own GPU path, one matmul and one fused cell kernel per time step, runs
otherwise). Covered calls: no ``use_sequence_length``, no ``projection_size``, no LSTM
state clipping, no dropout between stacked layers (``p`` > 0 with ``num_layers`` > 1),
float16/32/64 (bfloat16 calls reach RNN as float32). The decision depends only on the
parameters, shapes, dtype and device, so backward always takes the path its forward
took; the forward always keeps cuDNN's reserve, since a backward may follow a forward
run outside training (``autograd.record(train_mode=False)``, an executor's backward
after ``forward(is_train=False)``)."""
import os

import numpy as np

from ..backend.cudnn import rnn as R
from ..backend.cudnn import descriptors as D
from ..backend.cudnn._runtime import runtime
from .kernels_cudnn import _Out, _c, _guard, _need

__all__ = ["register_all", "enabled", "covered", "OPS"]


def enabled():
    """MXNET_CUDNN_RNN=1 turns the cuDNN path on."""
    return os.environ.get("MXNET_CUDNN_RNN", "0").strip() == "1"


def covered(p, x):
    """Whether the call's parameters and data are within what cuDNN runs here."""
    return (not p.use_sequence_length and p.projection_size is None
            and p.lstm_state_clip_min is None and p.mode in R.MODES
            and not (p.p > 0 and p.num_layers > 1)
            and x.ndim == 3 and np.dtype(x.dtype) in R.TYPES and min(x.shape) > 0)


def _plan(cp, p, x):
    """The cuDNN plan for this call, or None (the body runs)."""
    if not enabled() or not covered(p, x):
        return None
    from .nn.rnn import _Plan
    T, N, I = (int(v) for v in x.shape)
    mx_plan = _Plan(p, T, N, I)
    dtype = np.dtype(x.dtype)
    device_id = x.device.id
    key = (p.mode, mx_plan.L, mx_plan.D, T, N, I, mx_plan.H, dtype.str, device_id,
           D.conv_math_type(dtype))

    def make():
        blocks = [(wo, ws[1], ho, hs[1], bo, bho) for (wo, ws, ho, hs, _), (bo, bho)
                  in zip(mx_plan.weights, mx_plan.biases)]
        return R.Plan(runtime(), device_id, p.mode, mx_plan.L, mx_plan.D == 2, T, N, I,
                      mx_plan.H, dtype, blocks, mx_plan.n_reserve * dtype.itemsize)
    return R.plan_for(key, make)


def _aligned(a):
    """Whether ``a`` starts where a fresh allocation would (256 bytes): the reserve is
    opaque cuDNN data, and a memory plan may place the hidden output at any offset."""
    return a.data.ptr % 256 == 0


def _op():
    from .registry import get_op
    return get_op("RNN")


@_guard
def rnn_forward(cp, ctx, p, inputs, aux, out=None):
    """RNN forward on cuDNN: output, the final states when ``state_outputs``, and
    cuDNN's reserve in the hidden ``reserve_space`` output."""
    x = inputs[0]
    plan = _plan(cp, p, x)
    if plan is None:
        return NotImplemented
    _, oshapes, _ = _op().infer_shape(p, [a.shape for a in inputs])   # validates
    lstm = p.mode == "lstm"
    x, flat, hx = _c(cp, x), _c(cp, inputs[1]), _c(cp, inputs[2])
    cx = _c(cp, inputs[3]) if lstm else None
    o = _Out(cp, out, len(oshapes), inputs)
    dt = x.dtype
    y = o.get(0, oshapes[0], dt)
    hy = cy = None
    if p.state_outputs:
        hy = o.get(1, oshapes[1], dt)
        if lstm:
            cy = o.get(2, oshapes[2], dt)
    reserve = o.get(len(oshapes) - 1, oshapes[-1], dt)
    work = reserve if _aligned(reserve) else cp.empty_like(reserve)
    R.forward(plan, x.device.id, x, flat, hx, cx, y, hy, cy, work, True)
    if work is not reserve:
        reserve[...] = work
    return o.done()


@_guard
def rnn_backward(cp, ctx, p, out_grads, inputs, outputs, aux, in_grad=None):
    """RNN backward on cuDNN from the forward's reserve: the gradients of data, the
    flat parameters and the initial states."""
    x = inputs[0]
    plan = _plan(cp, p, x)
    if plan is None:
        return NotImplemented
    lstm = p.mode == "lstm"
    need = _need(ctx, len(inputs))
    x, flat, hx = _c(cp, x), _c(cp, inputs[1]), _c(cp, inputs[2])
    cx = _c(cp, inputs[3]) if lstm else None
    y, reserve = _c(cp, outputs[0]), outputs[-1]
    if not _aligned(reserve):
        reserve = reserve.copy()        # cuDNN's reserve wants its own alignment
    dy = _c(cp, out_grads[0])
    dhy = _c(cp, out_grads[1]) if p.state_outputs else None
    dcy = _c(cp, out_grads[2]) if (p.state_outputs and lstm) else None
    reads = [a for a in (x, flat, hx, cx, y, reserve, dy, dhy, dcy) if a is not None]
    g = _Out(cp, in_grad, len(inputs), reads)
    dt = x.dtype
    # cuDNN writes dx, dhx and dcx whether or not they are wanted
    dx = g.get(0, x.shape, dt) if need[0] else cp.empty(x.shape, dt)
    dflat = g.get(1, flat.shape, dt) if need[1] else None
    dhx = g.get(2, hx.shape, dt) if need[2] else cp.empty(hx.shape, dt)
    dcx = None
    if lstm:
        dcx = g.get(3, cx.shape, dt) if need[3] else cp.empty(cx.shape, dt)
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
