"""Adapters from MXNet operators to the oneDNN kernels, for the operator kernel table.

``register_all(register_kernel)`` registers, for device 'cpu', a forward and a backward
function per operator with the operator contract's signatures::

    forward(ctx, p, inputs, aux, out=None) -> outputs
    backward(ctx, p, out_grads, inputs, outputs, aux, in_grad=None) -> gradients

They write into the ``out`` / ``in_grad`` arrays when given, and return ``NotImplemented``
for anything they do not cover (other dtypes than float32, layouts other than NC*,
temperature/length softmax, sum/lp pooling, ...), so the NumPy body runs instead. Input
validation stays with the operator: every adapter first calls its ``infer_shape``,
which raises MXNet's errors for bad shapes or parameters.

Max pooling's workspace (where each window's maximum was) is written by a training-mode
forward and kept for its backward in a small store keyed by where the output lies
(``_Workspaces``). Backward receives the forward's input and output, but an address
alone cannot tell whether an executor's memory plan, an in-place operator or the user
has since put other values there, or whether a later forward that did not go through
oneDNN wrote them: so an entry also keeps the output (a strided sample of it when
large) and a sample of the input, and backward uses the workspace only when both still
match, otherwise it recomputes the workspace by a training forward (one pooling
forward, about as long as the backward itself). This saves that recomputation in every
training step (0.2-0.5 ms per pooling layer of the SimpleCNN at batch 64).
"""
import collections
import contextlib
import math
import os
import threading

import numpy as np

from ..base import MXNetError, bfloat16
from . import bfloat16 as _bf16
from ..backend.onednn import kernels as K
from ..backend.onednn._runtime import try_runtime
from ..backend.onednn.primitive import NotSupported
from .kernels import OutputBuffers, output_shapes
from .nn.batch_norm import channel_view
from .nn.channel_sums import column_sum_wide
from .nn.im2col import pointwise

__all__ = ["register_all", "OPS", "conv_relu_forward", "fc_relu_forward", "MIN_WORK",
           "forced", "layout_agnostic", "blocked_capable"]

# --- when oneDNN pays ---------------------------------------------------------------------
# The cost rule. A oneDNN call costs a fixed ~12 us before any arithmetic (the ctypes
# calls that point its memory at the arrays, the plan lookup, execute and stream wait;
# measured on a 1000-element ReLU with one thread, where NumPy takes 0.9 us), plus the
# OpenMP team's fork/join with 2+ threads (another 10-30 us quiet, far more on a loaded
# machine, where a sleeping team member must be scheduled first). It pays only where
# its kernels save more than that over the NumPy body, which runs on one thread:
#   NumPy time ~ work / r_np;  oneDNN time ~ C + work / r_dnn;
#   oneDNN when work > C / (1/r_np - 1/r_dnn) = MIN_WORK.
# Measured crossovers (2-core AVX2/AVX-512 machine, OMP_NUM_THREADS=2, fwd and bwd):
# - FullyConnected (work = rows x in x out multiply-adds): alone, 100x784->128 (10M) is
#   1.4-2.4x faster on oneDNN (interleaved in one process, loaded machine), but inside a
#   training step it costs more than it saves: Module.fit of the 784-128-64-10 MLP, batch
#   100, quiet 2 cores, ran 81k samples/s with that layer on oneDNN against 103-109k with
#   it on NumPy (the OpenMP team's fork/join and spin-wait compete with the engine's
#   threads between calls). So the threshold sits above it, at 16M; 64x3136->128 (26M)
#   and 100x800->500 (40M) gain 1.3-2.5x; 100x128->64 (0.8M) and 128x128->10: NumPy 2-5x.
# - Activation relu (work = elements): NumPy wins below ~100k elements (100x128: 6 vs
#   36 us), oneDNN above (100x20x24x24: 697 vs 217 us fwd). tanh/sigmoid: on AVX-512
#   NumPy's SIMD tanh/exp is as fast per element as oneDNN's on one core; on an AVX2
#   EPYC, NumPy's tanh took 2.8 ns an element against oneDNN's 1.9 (2 threads) and its
#   backward 3x oneDNN's from 256k elements up (720/149 us fwd/bwd against 471/81), and
#   LeNet's Module step (tanh over 1.15M and 320k elements) ran ~6% faster with them
#   on oneDNN. So 256k.
# - softmax/log_softmax: NumPy below ~100k elements (100x10: 12 vs 61 us).
# - Convolution1x1 (a 1x1 kernel without padding): its NumPy body is one batched GEMM
#   with no im2col, while oneDNN reorders the data and result to and from its blocked
#   layout at every plain call: (2, 64, 8, 8) -> 16 channels (work 131k) took 46 us fwd
#   and 274 fwd+bwd on NumPy against 148 and 452 on oneDNN (1 thread); (8, 64, 16, 16)
#   -> 64 (8.4M): 280 / 1093 against 252 / 788. So 1M.
# - Pooling, BatchNorm, LRN: the NumPy bodies make several passes (windows, statistics),
#   so oneDNN wins from a few thousand elements; Convolution/Deconvolution (im2col +
#   GEMM) from tiny sizes.
# - LayerNorm (over the last axis): NumPy below ~32k elements ((128, 64): 44/61 us fwd/bwd
#   against 75/98), oneDNN above ((640, 256): 149/211 against 361/591; (2048, 512):
#   0.52/1.49 ms against 4.3/9.3), 1 thread.
# The table is per family; ``forced()`` sets every threshold to 0 (tests of the oneDNN
# path on small shapes), and MXNET_ONEDNN_MIN_WORK_SCALE scales them all (0: always
# oneDNN).
MIN_WORK = {
    "FullyConnected": 1 << 24,
    "Convolution": 1 << 16,
    "Convolution1x1": 1 << 20,
    "Deconvolution": 1 << 16,
    "Activation:relu": 1 << 17,
    "relu": 1 << 17,              # the relu operator: the same kernel as Activation:relu
    "Activation": 1 << 18,        # sigmoid, tanh
    "softmax": 1 << 17,
    "Pooling": 1 << 13,
    "BatchNorm": 1 << 13,
    "LayerNorm": 1 << 15,
    "LRN": 1 << 12,
}


def _scale():
    raw = os.environ.get("MXNET_ONEDNN_MIN_WORK_SCALE", "").strip()
    try:
        return float(raw) if raw else 1.0
    except ValueError:
        raise MXNetError(f"MXNET_ONEDNN_MIN_WORK_SCALE must be a number, got {raw!r}")


_FORCE = [0]
_SCALE = [None]


def _declined(family, work):
    """Whether the adapter leaves this call to the NumPy body: ``work`` below oneDNN's
    break-even for ``family``, or oneDNN off or missing. The library is looked for only
    for calls large enough, so a process whose calls are all small never loads it.
    Adapters ask it before anything else: most calls of a small model stop here, and
    they are made at every node of every step."""
    if not _FORCE[0]:
        scale = _SCALE[0]
        if scale is None:
            scale = _SCALE[0] = _scale()
        if work < MIN_WORK[family] * scale:
            return True
    return try_runtime() is None


@contextlib.contextmanager
def forced():
    """Within the block, every adapter uses oneDNN whatever the size (where it supports
    the case, even by its reference implementation): the tests run both paths on small
    shapes."""
    from ..backend.onednn import primitive
    _FORCE[0] += 1
    primitive.ALLOW_REFERENCE[0] += 1
    try:
        yield
    finally:
        _FORCE[0] -= 1
        primitive.ALLOW_REFERENCE[0] -= 1



def _op(name):
    from .registry import get_op
    return get_op(name)


_F32 = np.dtype(np.float32)
_F16 = np.dtype(np.float16)


def _f32(*arrays):
    for a in arrays:
        if a is not None and (not isinstance(a, np.ndarray) or a.dtype != _F32):
            return False
    return True


def _lp_dtype(*arrays):
    """The one dtype of a convolution/inner-product call's NumPy arrays when it is
    float32 or bfloat16 (the types those primitives take here), else None."""
    dt = None
    for a in arrays:
        if a is None:
            continue
        if not isinstance(a, np.ndarray) or (dt is not None and a.dtype != dt):
            return None
        dt = a.dtype
    return dt if dt == _F32 or dt == bfloat16 else None


def _c(a):
    return None if a is None else np.ascontiguousarray(a)


def _flags(ctx, part):
    """The executor's layout flags for one part of the call (forward: 0 inputs, 1
    outputs; backward: 0 output gradients, 1 inputs, 2 outputs, 3 input gradients),
    or None when every array is plain (see executor/layout.py)."""
    lay = ctx.layout
    return None if lay is None else lay[part]


def _mark(a, flags, i):
    """``a`` as a BlockedView when the layout flags say its memory is blocked."""
    if flags is not None and a is not None and flags[i]:
        return K.blocked_view(a)
    return a


def _Out(given, n, inputs, dtype=np.float32):
    """Destination arrays (NumPy, float32 unless said) of a oneDNN call: see
    OutputBuffers."""
    return OutputBuffers(np, given, n, inputs, dtype)


def _need(ctx, n):
    need = getattr(ctx, "need_grad", None)
    return list(need) if need is not None else [True] * n


def _layout_ok(p):
    return getattr(p, "layout", None) in (None, "NCW", "NCHW", "NCDHW")


def _spatial(v, nd, default):
    v = tuple(v) if v else ()
    return v if len(v) == nd else (default,) * nd


def _guard(fn):
    """A kernel that meets an unsupported case falls back to the NumPy body (every
    adapter first asks ``_declined``, which also covers oneDNN being off or missing)."""
    def wrapped(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except NotSupported:
            return NotImplemented
    wrapped.__name__ = fn.__name__
    wrapped.__doc__ = fn.__doc__
    return wrapped


# --- Convolution ---------------------------------------------------------------------------
def _conv_work(inputs):
    """Multiply-adds of a convolution-like call, by the input's spatial size."""
    return _conv_work_of(inputs[0].shape, inputs[1].shape)


def _conv_work_of(x_shape, w_shape):
    return math.prod(w_shape) * math.prod(x_shape[2:]) * x_shape[0]


def _conv_family(p):
    """The break-even family of a Convolution call: a pointwise one (1x1 kernel, no
    padding: the NumPy body's one-GEMM case) has its own (see MIN_WORK)."""
    return "Convolution1x1" if pointwise(p.kernel, p.pad) else "Convolution"


def _conv_geo(p, x_shape, out_spatial):
    nd = len(p.kernel)
    stride = _spatial(p.stride, nd, 1)
    dilate = _spatial(p.dilate, nd, 1)
    pad = _spatial(p.pad, nd, 0)
    pad_r = tuple((o - 1) * s + (k - 1) * d + 1 - n - pl for o, s, k, d, n, pl in
                  zip(out_spatial, stride, p.kernel, dilate, x_shape[2:], pad))
    return stride, dilate, pad, pad_r


@_guard
def conv_forward(ctx, p, inputs, aux, out=None, relu=False):
    """Convolution forward on oneDNN (``relu``: followed by a fused ReLU)."""
    if _declined(_conv_family(p), _conv_work(inputs)):
        return NotImplemented
    dt = _lp_dtype(*inputs)
    if not _layout_ok(p) or dt is None:
        return NotImplemented
    (oshape,) = output_shapes(_op("Convolution"), p, [a.shape for a in inputs])
    x, w = _c(inputs[0]), _c(inputs[1])
    b = None if p.no_bias else _c(inputs[2]).reshape(-1)
    geo = _conv_geo(p, x.shape, oshape[2:])
    o = _Out(out, 1, inputs, dt)
    fin, fout = _flags(ctx, 0), _flags(ctx, 1)
    K.conv_forward(_mark(x, fin, 0), w, b, _mark(o.get(0, oshape), fout, 0), *geo,
                   groups=p.num_group, relu=relu)
    return o.done()


def conv_relu_forward(ctx, p, inputs, aux, out=None):
    """Convolution (params p) then Activation(relu) as one primitive, for a graph pass
    that fuses the pair: the output is the ReLU's. Its backward is ``act_backward``
    (relu, from this output) followed by ``conv_backward``."""
    return conv_forward(ctx, p, inputs, aux, out, relu=True)


@_guard
def conv_affine_forward(ctx, p, x, w, y, scale, shift, relu=False, residual=None):
    """y = conv(x, w) * scale + shift per output channel [+ residual] [then ReLU] as one
    primitive: a Convolution (params p, its bias left out) with an inference BatchNorm
    folded into it (executor/bn_fold.py). The residual lies apart from y, in y's layout.
    NotImplemented where oneDNN declines the call."""
    if _declined(_conv_family(p), _conv_work_of(x.shape, w.shape)):
        return NotImplemented
    if not _layout_ok(p) or _lp_dtype(x, w, y, residual) != _F32 or not _f32(scale, shift):
        return NotImplemented
    geo = _conv_geo(p, x.shape, y.shape[2:])
    fin, fout = _flags(ctx, 0), _flags(ctx, 1)
    xc, wc, yb = _mark(_c(x), fin, 0), _c(w), _mark(y, fout, 0)
    if residual is not None:
        try:
            K.conv_forward(xc, wc, None, yb, *geo, groups=p.num_group, relu=relu,
                           scale=scale, shift=shift, residual=_mark(_c(residual), fout, 0))
            return y
        except NotSupported:
            # oneDNN's optimised convolutions take a whole-tensor operand in their own
            # (blocked) layout: otherwise the sum and the ReLU follow in place (on the
            # raw buffers: the residual has y's layout)
            pass
    K.conv_forward(xc, wc, None, yb, *geo, groups=p.num_group, scale=scale, shift=shift,
                   relu=relu and residual is None)
    if residual is not None:
        y += residual
        if relu:
            np.maximum(y, 0, out=y)
    return y


def _few_input_channels(p, x_shape):
    """Whether a convolution's input has so few channels (a grayscale or two-channel
    image: a network's first layer) that oneDNN's weight gradient, which pads them to a
    whole channel block (8x the arithmetic for one channel on AVX2), is slower than the
    NumPy body's im2col GEMM. Measured (AVX2, 2 threads, weights only): LeNet's
    (100, 1, 28, 28) 5x5 -> 20: 7-10 ms oneDNN, 2.8-3.2 NumPy; (64, 1, 28, 28) 3x3 -> 32:
    4.1-4.4 against 1.8-2.1; (64, 2, 28, 28) -> 32: 4.4 against 3.0; three channels
    turn it round ((64, 3, 32, 32) -> 32: 3.6 against 5.8)."""
    return p.num_group == 1 and x_shape[1] <= 2


def _conv_family_backward(family, ctx, p, out_grads, inputs, in_grad, geo_of, bwd_data,
                          bwd_weights, bwd_both=None):
    """Data, weight and bias gradients of Convolution or Deconvolution (``geo_of(x,
    dy)``: the primitive's geometry; ``bwd_data``/``bwd_weights``: its kernels;
    ``bwd_both``: both in one call, used when both are wanted)."""
    n = 2 if p.no_bias else 3
    dy, x, w = out_grads[0], inputs[0], inputs[1]
    conv = family == "Convolution"
    if _declined(_conv_family(p) if conv else family, _conv_work(inputs)):
        return NotImplemented
    dt = _lp_dtype(dy, x, w)
    if not _layout_ok(p) or dt is None:
        return NotImplemented
    need = _need(ctx, n)
    if conv and not need[0] and _few_input_channels(p, x.shape):
        return NotImplemented
    dy, x, w = _c(dy), _c(x), _c(w)
    geo = geo_of(x, dy)
    g = _Out(in_grad, n, [dy, x, w], dt)
    need_b = n == 3 and need[2]
    both = bwd_both is not None and need[0] and need[1]
    fdy, fx, fdx = _flags(ctx, 0), _flags(ctx, 1), _flags(ctx, 3)
    dy, x = _mark(dy, fdy, 0), _mark(x, fx, 0)
    if both:
        bwd_both(dy, x, w, _mark(g.get(0, x.shape), fdx, 0), g.get(1, w.shape),
                 g.get(2, (p.num_filter,)) if need_b else None, *geo, groups=p.num_group)
    elif need[0]:
        bwd_data(dy, w, _mark(g.get(0, x.shape), fdx, 0), *geo, groups=p.num_group)
    if (need[1] or need_b) and not both:
        dw = g.get(1, w.shape) if need[1] else np.empty(w.shape, dt)
        db = g.get(2, (p.num_filter,)) if need_b else None
        bwd_weights(x, dy, dw, db, *geo, groups=p.num_group)
    res = g.done()
    if n == 3 and res[2] is not None and inputs[2] is not None:
        res[2] = res[2].reshape(inputs[2].shape)
    return res


@_guard
def conv_backward(ctx, p, out_grads, inputs, outputs, aux, in_grad=None):
    """Convolution's data, weight and bias gradients on oneDNN."""
    return _conv_family_backward("Convolution", ctx, p, out_grads, inputs, in_grad,
                                 lambda x, dy: _conv_geo(p, x.shape, dy.shape[2:]),
                                 K.conv_backward_data, K.conv_backward_weights,
                                 K.conv_backward)


# --- Deconvolution -------------------------------------------------------------------------
def _deconv_geo(p, x_shape):
    from .nn.deconvolution import deconv_geometry
    kernel, stride, dilate, pad, out = deconv_geometry(p, tuple(x_shape))
    pad_r = tuple(s * (n - 1) + (k - 1) * d + 1 - pl - o for s, n, k, d, pl, o in
                  zip(stride, x_shape[2:], kernel, dilate, pad, out))
    return (stride, dilate, pad, pad_r), out


# oneDNN's deconvolution slows down with the kernel's size far faster than the NumPy
# body's block path (nn/deconvolution.py, large strides: one GEMM per batch chunk), so
# calls with a stride product from these on are left to it. Measured (2 threads,
# fwd / bwd ms, oneDNN against blocks): 2-D K=16 s=8 (8,21,28,28) 17.2/38.7 against
# 20.1/26.8, (8,64,28,28) 57.9/166.5 against 91.8/154.3, depthwise 8.3/24.4 against
# 10.2/13.7; K=32 s=16 (8,21,14,14) 54.2/48.4 against 17.7/25.8, depthwise 9.0/25.9
# against 10.8/18.0; FCN's K=64 s=32 (32,21,10,15) 1306/510 against 194/359; K=12 s=6
# 6.6/18.1 against 11.7/17.3.
_DECONV_BLOCKS_FWD = 256
_DECONV_BLOCKS_BWD = 64


def _deconv_blocks(p, x_shape, min_stride):
    """Whether the NumPy body computes this Deconvolution by blocks and its stride
    product reaches ``min_stride``."""
    from .nn.deconvolution import deconv_geometry, use_blocks
    kernel, stride, dilate, _, _ = deconv_geometry(p, tuple(x_shape))
    return math.prod(stride) >= min_stride and use_blocks(kernel, stride, dilate)


@_guard
def deconv_forward(ctx, p, inputs, aux, out=None):
    """Deconvolution forward on oneDNN."""
    if _declined("Deconvolution", _conv_work(inputs)) or not _layout_ok(p) or not _f32(*inputs):
        return NotImplemented
    if _deconv_blocks(p, inputs[0].shape, _DECONV_BLOCKS_FWD):
        return NotImplemented
    (oshape,) = output_shapes(_op("Deconvolution"), p, [a.shape for a in inputs])
    x, w = _c(inputs[0]), _c(inputs[1])
    b = None if p.no_bias else _c(inputs[2]).reshape(-1)
    geo, _ = _deconv_geo(p, x.shape)
    o = _Out(out, 1, inputs)
    K.deconv_forward(x, w, b, o.get(0, oshape), *geo, groups=p.num_group)
    return o.done()


@_guard
def deconv_backward(ctx, p, out_grads, inputs, outputs, aux, in_grad=None):
    """Deconvolution's gradients on oneDNN."""
    if _deconv_blocks(p, inputs[0].shape, _DECONV_BLOCKS_BWD):
        return NotImplemented
    return _conv_family_backward("Deconvolution", ctx, p, out_grads, inputs, in_grad,
                                 lambda x, dy: _deconv_geo(p, x.shape)[0],
                                 K.deconv_backward_data, K.deconv_backward_weights)


# --- Pooling -------------------------------------------------------------------------------
def _pool_plan(p, x_shape, y_shape):
    """(alg, kernel, stride, pad_l, pad_r) for oneDNN, or None when MXNet's semantics
    differ from what oneDNN computes for this case."""
    if not _layout_ok(p) or p.pool_type not in ("max", "avg") or len(x_shape) not in (3, 4,
                                                                                      5) \
            or p.pooling_convention == "same":      # its pad is not per-dimension
        return None
    nd = len(x_shape) - 2
    spatial = tuple(x_shape[2:])
    out = tuple(y_shape[2:])
    if p.global_pool:
        kernel, stride, pad = spatial, (1,) * nd, (0,) * nd
    else:
        kernel = tuple(p.kernel)
        stride, pad = _spatial(p.stride, nd, 1), _spatial(p.pad, nd, 0)
    pad_r = []
    for k, s, pl, n, o in zip(kernel, stride, pad, spatial, out):
        # Every window must hold an input element (MXNet gives the lowest value or 0 for
        # an empty window; oneDNN would not match).
        if any(j * s - pl >= n or j * s - pl + k <= 0 for j in range(o)):
            return None
        pr = (o - 1) * s + k - n - pl
        # avg with padding counted: MXNet clips windows at the end of the padded input,
        # oneDNN counts the whole kernel, so windows must not reach past it.
        if p.pool_type == "avg" and p.count_include_pad is not False and pr > pl:
            return None
        pad_r.append(pr)
    if p.pool_type == "max":
        alg = "max"
    else:
        alg = "avg_exclude" if p.count_include_pad is False else "avg_include"
    return alg, kernel, stride, pad, tuple(pad_r)


class _Workspaces:
    """Max pooling's workspaces (where each window's maximum was) kept from training
    forwards for their backward, keyed by where the output lies (see the module
    docstring). An entry holds the workspace, the input's address and a copy (or, for
    large outputs, an evenly strided sample) of the output and of the input as they
    were; backward uses the workspace only when the output and input it is given still
    lie there and hold those values, otherwise it recomputes it. A few recent entries
    are kept (one per pooling layer of a network in flight), at most MAX_BYTES of
    workspace in all."""

    MAX = 32
    MAX_BYTES = 1 << 28
    SAMPLE = 1 << 14        # output elements compared: all up to 4x this many, else a sample

    def __init__(self):
        self.entries = collections.OrderedDict()
        self.nbytes = 0
        self.lock = threading.Lock()

    @staticmethod
    def _key(x, y, plan):
        return (y.ctypes.data, y.shape, x.shape, plan)

    @classmethod
    def _sample(cls, a, n):
        flat = a.reshape(-1)
        step = 1 if flat.size <= 4 * n else flat.size // n
        return flat[::step].copy()

    def put(self, x, y, plan, ws):
        entry = (ws, x.ctypes.data, self._sample(y, self.SAMPLE),
                 self._sample(x, self.SAMPLE // 4))
        if ws.nbytes > self.MAX_BYTES:
            return
        with self.lock:
            key = self._key(x, y, plan)
            old = self.entries.pop(key, None)
            self.nbytes -= 0 if old is None else old[0].nbytes
            self.entries[key] = entry
            self.nbytes += ws.nbytes
            while len(self.entries) > self.MAX or self.nbytes > self.MAX_BYTES:
                self.nbytes -= self.entries.popitem(last=False)[1][0].nbytes

    def get(self, x, y, plan):
        with self.lock:
            entry = self.entries.get(self._key(x, y, plan))
        if entry is None:
            return None
        ws, xptr, ys, xs = entry
        if xptr != x.ctypes.data or not (
                np.array_equal(ys, self._sample(y, self.SAMPLE))
                and np.array_equal(xs, self._sample(x, self.SAMPLE // 4))):
            return None
        return ws

    def clear(self):
        with self.lock:
            self.entries.clear()
            self.nbytes = 0


_POOL_WS = _Workspaces()


@_guard
def pool_forward(ctx, p, inputs, aux, out=None):
    """Pooling forward (max, avg) on oneDNN; a training-mode max pooling keeps its
    workspace for the backward."""
    x = inputs[0]
    if _declined("Pooling", x.size):
        return NotImplemented
    dt = _lp_dtype(x)
    if dt is None:
        return NotImplemented
    (oshape,) = output_shapes(_op("Pooling"), p, [x.shape])[:1]
    plan = _pool_plan(p, x.shape, oshape)
    if plan is None:
        return NotImplemented
    x = _c(x)
    o = _Out(out, 1, inputs, dt)
    y = o.get(0, oshape)
    xm, ym = _mark(x, _flags(ctx, 0), 0), _mark(y, _flags(ctx, 1), 0)
    ws = K.pool_workspace(xm, ym, *plan) if ctx.is_train and plan[0] == "max" else None
    if ws is None:
        K.pool_forward(xm, ym, *plan)
        return o.done()
    K.pool_forward_training(xm, ym, ws, *plan)
    res = o.done()
    _POOL_WS.put(x, res[0], plan, ws)
    return res


@_guard
def pool_backward(ctx, p, out_grads, inputs, outputs, aux, in_grad=None):
    """Pooling backward on oneDNN (max: with the forward's workspace when it is still
    valid, else a recomputed one)."""
    dy, x = out_grads[0], inputs[0]
    if _declined("Pooling", x.size):
        return NotImplemented
    dt = _lp_dtype(dy, x)
    if dt is None:
        return NotImplemented
    plan = _pool_plan(p, x.shape, dy.shape)
    if plan is None:
        return NotImplemented
    dy, x = _c(dy), _c(x)
    y = outputs[0] if outputs else None
    ws = None
    if plan[0] == "max" and isinstance(y, np.ndarray) and y.shape == dy.shape:
        ws = _POOL_WS.get(x, y, plan)
    g = _Out(in_grad, 1, [dy, x], dt)
    K.pool_backward(_mark(x, _flags(ctx, 1), 0), _mark(dy, _flags(ctx, 0), 0),
                    _mark(g.get(0, x.shape), _flags(ctx, 3), 0), *plan, ws=ws)
    return g.done()


# --- BatchNorm -------------------------------------------------------------------------------
def _bn_view(p, x):
    """x as (before, C, after): oneDNN normalises axis 1 of a 3-D tensor."""
    return channel_view(x.shape, p.axis % x.ndim)


@_guard
def bn_forward(ctx, p, inputs, aux, out=None):
    """BatchNorm forward on oneDNN (training statistics or moving statistics)."""
    x, gamma, beta = inputs
    mm, mv = aux
    if _declined("BatchNorm", x.size):
        return NotImplemented
    # data float32 or bfloat16; gamma, beta and the statistics float32 (as MXNet keeps
    # them for bfloat16 data)
    dt = _lp_dtype(x)
    if dt is None or not _f32(gamma, beta, mm, mv):
        return NotImplemented
    op = _op("BatchNorm")
    op.infer_shape(p, [x.shape, gamma.shape, beta.shape, mm.shape, mv.shape])
    c = gamma.shape[0]
    v3 = _bn_view(p, x)
    xc = _mark(_c(x), _flags(ctx, 0), 0).reshape(v3)
    scale = np.ones(c, np.float32) if p.fix_gamma else _c(gamma)
    shift = _c(beta)
    o = _Out(out, 3, inputs + list(aux))
    y = _mark(o.get(0, x.shape, dt), _flags(ctx, 1), 0)
    mean, invstd = o.get(1, (c,)), o.get(2, (c,))
    training = bool(ctx.is_train and not p.use_global_stats)
    if training:
        var = np.empty(c, np.float32)
        K.bn_forward(xc, scale, shift, y.reshape(v3), mean, var, p.eps, True)
        m = np.float32(p.momentum)
        mm *= m
        mm += (1 - m) * mean
        mv *= m
        mv += (1 - m) * var
    else:
        mean[...] = mm
        var = _c(mv)
        K.bn_forward(xc, scale, shift, y.reshape(v3), mean, var, p.eps, False)
    np.divide(1.0, np.sqrt(var + np.float32(p.eps)), out=invstd)
    return o.done()


@_guard
def bn_backward(ctx, p, out_grads, inputs, outputs, aux, in_grad=None):
    """BatchNorm backward on oneDNN from the statistics the forward used."""
    dy, x, gamma = out_grads[0], inputs[0], inputs[1]
    mean, invstd = outputs[1], outputs[2]
    if _declined("BatchNorm", x.size):
        return NotImplemented
    dt = _lp_dtype(dy, x)
    if dt is None or not _f32(gamma, mean, invstd):
        return NotImplemented
    need = _need(ctx, 3)
    c = mean.shape[0]
    v3 = _bn_view(p, x)
    # The forward kept 1/sqrt(var + eps); oneDNN wants var (it adds eps back).
    var = (1.0 / np.square(invstd.astype(np.float64)) - p.eps).astype(np.float32)
    scale = np.ones(c, np.float32) if p.fix_gamma else _c(gamma)
    g = _Out(in_grad, 3, [dy, x, gamma])
    dx = g.get(0, x.shape, dt) if need[0] else np.empty(x.shape, dt)
    dgamma = g.get(1, (c,)) if need[1] else np.empty(c, np.float32)
    dbeta = g.get(2, (c,)) if need[2] else np.empty(c, np.float32)
    K.bn_backward(_mark(_c(x), _flags(ctx, 1), 0).reshape(v3),
                  _mark(_c(dy), _flags(ctx, 0), 0).reshape(v3), _c(mean), var, scale,
                  _mark(dx, _flags(ctx, 3), 0).reshape(v3) if need[0] else dx.reshape(v3),
                  dgamma, dbeta, p.eps, bool(p.use_global_stats))
    if p.fix_gamma:
        dgamma[...] = 0
    res = g.done()
    return [r if nd else None for r, nd in zip(res, need)]


# --- LayerNorm ---------------------------------------------------------------------------------
def _ln_rows(p, x):
    """d (the normalised length) when oneDNN takes this LayerNorm call: over the last
    axis (the transformer case; its primitive normalises the innermost dimension only),
    large enough; else None."""
    if x.ndim == 0 or _declined("LayerNorm", x.size) or p.axis % x.ndim != x.ndim - 1:
        return None
    return x.shape[-1]


@_guard
def ln_forward(ctx, p, inputs, aux, out=None):
    """LayerNorm forward on oneDNN; the hidden std output is sqrt(variance + eps)."""
    x, gamma, beta = inputs
    if not _f32(x, gamma, beta) or x.ndim == 0 or not -x.ndim <= p.axis < x.ndim:
        return NotImplemented
    output_shapes(_op("LayerNorm"), p, [a.shape for a in inputs])   # the body's checks
    d = _ln_rows(p, x)
    if d is None:
        return NotImplemented
    x = _c(x)
    stat = x.shape[:-1] + (1,)
    o = _Out(out, 3, inputs)
    y, mean, std = o.get(0, x.shape), o.get(1, stat), o.get(2, stat)
    var = np.empty(x.size // d, np.float32)
    K.ln_forward(x.reshape(-1, d), _c(gamma), _c(beta), y.reshape(-1, d), mean.reshape(-1),
                 var, p.eps)
    var += np.float32(p.eps)
    np.sqrt(var, out=std.reshape(-1))
    return o.done()


_LN_BLOCK_ELEMENTS = 1 << 19


@_guard
def ln_backward(ctx, p, out_grads, inputs, outputs, aux, in_grad=None):
    """LayerNorm backward on oneDNN from the forward's mean and std."""
    dy, (x, gamma, beta) = out_grads[0], inputs
    mean, std = outputs[1], outputs[2]
    if not _f32(dy, x, gamma, beta, mean, std) or x.ndim == 0 or \
            not -x.ndim <= p.axis < x.ndim:
        return NotImplemented
    d = _ln_rows(p, x)
    if d is None:
        return NotImplemented
    # oneDNN wants the variance (it adds eps back); never below 0 from rounding
    var = np.square(_c(std).reshape(-1))
    var -= np.float32(p.eps)
    np.maximum(var, 0, out=var)
    need = _need(ctx, 3)
    g = _Out(in_grad, 3, [dy, x, gamma])
    dx = g.get(0, x.shape) if need[0] else np.empty(x.shape, np.float32)
    x2, dy2 = _c(x).reshape(-1, d), _c(dy).reshape(-1, d)
    mean, gamma = _c(mean).reshape(-1), _c(gamma)
    # oneDNN's own gamma and beta gradients sum over the rows in float32 (~1e-4 off over
    # 4096 rows): they are computed here instead, from the normalised data it gives,
    # as float64-accurate column sums (channel_sums.column_sum_wide)
    part = np.empty((2, d), np.float32)
    K.ln_backward(x2, dy2, mean, var, gamma, _c(beta), dx.reshape(-1, d), part[0], part[1],
                  p.eps)
    if need[1]:
        # block by block through a cache-sized buffer (a full-size one costs its page
        # faults at every call)
        rows = max(1, _LN_BLOCK_ELEMENTS // d)
        buf = np.empty((min(rows, x2.shape[0]), d), np.float32)
        total = np.zeros(d, np.float64)
        for r0 in range(0, x2.shape[0], rows):
            r1 = min(r0 + rows, x2.shape[0])
            xhat = K.ln_normalize(x2[r0:r1], mean[r0:r1], var[r0:r1], buf[:r1 - r0], p.eps)
            total += column_sum_wide(np.multiply(dy2[r0:r1], xhat, out=xhat))
        g.get(1, (d,))[...] = total
    if need[2]:
        g.get(2, (d,))[...] = column_sum_wide(dy2)
    res = g.done()
    return [r if nd else None for r, nd in zip(res, need)]


# --- FullyConnected ----------------------------------------------------------------------------
def _fc_rows(p, shape):
    if p.flatten:
        return shape[0], int(np.prod(shape[1:], dtype=np.int64))
    return int(np.prod(shape[:-1], dtype=np.int64)), shape[-1]


@_guard
def fc_forward(ctx, p, inputs, aux, out=None, relu=False):
    """FullyConnected forward on oneDNN (inner product; ``relu``: fused ReLU after)."""
    if _declined("FullyConnected", inputs[0].size * p.num_hidden):
        return NotImplemented
    dt = _lp_dtype(*inputs)
    if dt is None:
        return NotImplemented
    (oshape,) = output_shapes(_op("FullyConnected"), p, [a.shape for a in inputs])
    x = _c(inputs[0]).reshape(_fc_rows(p, inputs[0].shape))
    w = _c(inputs[1])
    b = None if p.no_bias else _c(inputs[2]).reshape(-1)
    o = _Out(out, 1, inputs, dt)
    y = o.get(0, oshape)
    K.fc_forward(x, w, b, y.reshape(x.shape[0], p.num_hidden), relu=relu)
    return o.done()


def fc_relu_forward(ctx, p, inputs, aux, out=None):
    """FullyConnected then Activation(relu) as one primitive (see conv_relu_forward)."""
    return fc_forward(ctx, p, inputs, aux, out, relu=True)


@_guard
def fc_backward(ctx, p, out_grads, inputs, outputs, aux, in_grad=None):
    """FullyConnected gradients on oneDNN."""
    n = 2 if p.no_bias else 3
    dy, x, w = out_grads[0], inputs[0], inputs[1]
    if _declined("FullyConnected", x.size * p.num_hidden):
        return NotImplemented
    dt = _lp_dtype(dy, x, w)
    if dt is None:
        return NotImplemented
    need = _need(ctx, n)
    rows = _fc_rows(p, x.shape)
    x2, w = _c(x).reshape(rows), _c(w)
    dy2 = _c(dy).reshape(rows[0], -1)
    g = _Out(in_grad, n, [dy, x, w], dt)
    if need[0]:
        K.fc_backward_data(dy2, w, g.get(0, x.shape).reshape(rows))
    need_b = n == 3 and need[2]
    if need[1] or need_b:
        dw = g.get(1, w.shape) if need[1] else np.empty(w.shape, dt)
        bshape = inputs[2].shape if n == 3 and inputs[2] is not None else (p.num_hidden,)
        db = g.get(2, bshape) if need_b else None
        K.fc_backward_weights(x2, dy2, dw, None if db is None else db.reshape(-1))
    return g.done()


# --- softmax / log_softmax -------------------------------------------------------------------
def _softmax_ok(p, x):
    return (not _declined("softmax", x.size) and _f32(x) and not p.use_length
            and p.temperature in (None, 1.0)
            and (p.dtype is None or np.dtype(p.dtype) == x.dtype) and x.ndim >= 1)


def _innermost(shape, axis):
    """Whether softmax over ``axis`` runs along contiguous rows (every later dimension
    is 1). oneDNN's softmax over an outer axis, e.g. the class axis 1 of an NCHW
    segmentation map, is 50-100x slower than the NumPy body on the same data, so those
    calls are left to it."""
    return all(d == 1 for d in shape[axis + 1:])


def _softmax_pair(log):
    @_guard
    def forward(ctx, p, inputs, aux, out=None):
        x = inputs[0]
        if not _softmax_ok(p, x):
            return NotImplemented
        from .nn.softmax import check_axis
        axis = check_axis("log_softmax" if log else "softmax", p.axis, x.ndim)
        if not _innermost(x.shape, axis):
            return NotImplemented
        x = _c(x)
        o = _Out(out, 1, [x])
        K.softmax_forward(x, o.get(0, x.shape), axis, log)
        return o.done()

    @_guard
    def backward(ctx, p, out_grads, inputs, outputs, aux, in_grad=None):
        dy, y = out_grads[0], outputs[0]
        if not _softmax_ok(p, y) or not _f32(dy):
            return NotImplemented
        axis = p.axis % y.ndim
        if not _innermost(y.shape, axis):
            return NotImplemented
        dy, y = _c(dy), _c(y)
        g = _Out(in_grad, 1, [dy, y])
        K.softmax_backward(dy, y, g.get(0, y.shape), axis, log)
        return g.done()
    forward.__name__ = "log_softmax_forward" if log else "softmax_forward"
    backward.__name__ = "log_softmax_backward" if log else "softmax_backward"
    return forward, backward


# --- Activation ---------------------------------------------------------------------------------
def _act_family(p):
    return "Activation:relu" if p.act_type == "relu" else "Activation"


@_guard
def act_forward(ctx, p, inputs, aux, out=None):
    """Activation relu/sigmoid/tanh on oneDNN (in place when out is the input)."""
    x = inputs[0]
    if _declined(_act_family(p), x.size):
        return NotImplemented
    dt = _lp_dtype(x)
    if p.act_type not in K.ELTWISE or dt is None:
        return NotImplemented
    x = _c(x)
    o = _Out(out, 1, [x], dt)
    K.eltwise_forward(x, o.get(0, x.shape, allow_alias=x), p.act_type)
    return o.done()


@_guard
def act_backward(ctx, p, out_grads, inputs, outputs, aux, in_grad=None):
    """Activation gradients from the output (relu, sigmoid, tanh)."""
    dy, y = out_grads[0], outputs[0]
    if _declined(_act_family(p), y.size):
        return NotImplemented
    dt = _lp_dtype(dy, y)
    if p.act_type not in ("relu", "sigmoid", "tanh") or dt is None:
        return NotImplemented
    dy, y = _c(dy), _c(y)
    g = _Out(in_grad, 1, [dy, y], dt)
    # oneDNN's eltwise backward may write over diff_dst (in place)
    K.eltwise_backward(dy, y, g.get(0, y.shape, allow_alias=dy), p.act_type)
    return g.done()


# --- relu (the elementwise operator) -------------------------------------------------------
def _has_nan(a):
    """Whether a holds a NaN: one read-only pass (np.min propagates NaN), a fraction of
    an eltwise call. oneDNN's ReLU maps NaN to 0 in both directions, MXNet's relu
    operator keeps NaN (forward) and gives a NaN gradient there (backward), so such
    calls stay with the NumPy body. bfloat16 is checked on its bits: ml_dtypes'
    reductions are scalar loops (np.min of 3M bfloat16 values takes ~25 ms)."""
    if a.dtype == bfloat16:
        return bool(np.any((a.view(np.uint16) & 0x7FFF) > 0x7F80))
    return math.isnan(np.min(a))


@_guard
def relu_forward(ctx, p, inputs, aux, out=None):
    """relu on oneDNN (in place when out is the input); NaN inputs go to NumPy."""
    x = inputs[0]
    if _declined("relu", x.size):
        return NotImplemented
    dt = _lp_dtype(x)
    if dt is None or _has_nan(x):
        return NotImplemented
    x = _c(x)
    o = _Out(out, 1, [x], dt)
    K.eltwise_forward(x, o.get(0, x.shape, allow_alias=x), "relu")
    return o.done()


@_guard
def relu_backward(ctx, p, out_grads, inputs, outputs, aux, in_grad=None):
    """relu's gradient from its output: dy where y > 0, else 0 (NaN outputs: NumPy)."""
    dy, y = out_grads[0], outputs[0]
    if _declined("relu", y.size):
        return NotImplemented
    dt = _lp_dtype(dy, y)
    if dt is None or _has_nan(y):
        return NotImplemented
    dy, y = _c(dy), _c(y)
    g = _Out(in_grad, 1, [dy, y], dt)
    K.eltwise_backward(dy, y, g.get(0, y.shape, allow_alias=dy), "relu")   # in place too
    return g.done()


# --- LRN ------------------------------------------------------------------------------------------
@_guard
def lrn_forward(ctx, p, inputs, aux, out=None):
    """LRN on oneDNN (odd nsize); the hidden output tmp_norm = knorm + alpha/nsize * the
    window sum of x^2, computed as an average pooling of x^2 across channels."""
    x = inputs[0]
    if _declined("LRN", x.size) or not _f32(x) or p.nsize % 2 == 0:
        return NotImplemented
    _op("LRN").infer_shape(p, [x.shape])
    x = _c(x)
    o = _Out(out, 2, [x])
    y, norm = o.get(0, x.shape), o.get(1, x.shape)
    K.lrn_forward(x, y, p.nsize, p.alpha, p.beta, p.knorm)
    n, c = x.shape[:2]
    half = (p.nsize - 1) // 2
    sq = np.square(x).reshape(n, 1, c, -1)
    K.pool_forward(sq, norm.reshape(sq.shape), "avg_include", (p.nsize, 1), (1, 1),
                   (half, 0), (half, 0))
    norm *= np.float32(p.alpha)
    norm += np.float32(p.knorm)
    return o.done()


@_guard
def lrn_backward(ctx, p, out_grads, inputs, outputs, aux, in_grad=None):
    """LRN gradient on oneDNN."""
    dy, x = out_grads[0], inputs[0]
    if _declined("LRN", x.size) or not _f32(dy, x) or p.nsize % 2 == 0:
        return NotImplemented
    dy, x = _c(dy), _c(x)
    g = _Out(in_grad, 1, [dy, x])
    K.lrn_backward(x, dy, g.get(0, x.shape), p.nsize, p.alpha, p.beta, p.knorm)
    return g.done()


# --- what the executor's layout pass may hand these kernels blocked -------------------------
# Elementwise operators whose arrays all have one shape: their bodies (NumPy and
# oneDNN's eltwise alike) compute the same thing whatever order the elements lie in,
# so they pass a blocked layout through (all operands blocked or none).
_AGNOSTIC_ADD = ("elemwise_add", "_plus", "_Plus", "broadcast_add", "_add", "add_n",
                 "ElementWiseSum", "_grad_add")


def layout_agnostic(name, p, in_shapes, out_shapes):
    """Whether operator ``name`` computes the same on blocked as on plain arrays."""
    if len(out_shapes) != 1:
        return False
    if name == "relu" or (name == "Activation" and p.act_type in
                          ("relu", "sigmoid", "tanh", "softrelu", "softsign")):
        return True
    if name in _AGNOSTIC_ADD:
        return all(tuple(s) == tuple(out_shapes[0]) for s in in_shapes)
    return False


def blocked_capable(name, p, in_shapes, out_shapes):
    """(inputs, outputs): the positions of the arguments and outputs the oneDNN kernels
    of operator ``name`` read or write in the channel-blocked layout, forward and
    backward alike (an input's gradient has its layout), or None when they do not run
    this call on oneDNN (off, below break-even, unsupported)."""
    if not in_shapes or len(in_shapes[0]) not in (3, 4, 5):
        return None
    x = in_shapes[0]
    size = math.prod(x)
    if name == "Convolution":
        if not _layout_ok(p) or _declined(_conv_family(p), _conv_work_of(x, in_shapes[1])):
            return None
        return (0,), (0,)
    if name == "Pooling":
        if _declined("Pooling", size) or _pool_plan(p, x, out_shapes[0]) is None:
            return None
        return (0,), (0,)
    if name == "BatchNorm":
        if p.axis % len(x) != 1 or _declined("BatchNorm", size):
            return None
        return (0,), (0,)
    return None


_SOFTMAX = _softmax_pair(False)
_LOG_SOFTMAX = _softmax_pair(True)

# The adapters that take bfloat16 arrays (oneDNN's bf16 primitives; where the processor
# lacks them, creating the primitive fails and the runner computes in float32).
for _fn in (conv_forward, conv_relu_forward, conv_backward, fc_forward, fc_relu_forward,
            fc_backward, pool_forward, pool_backward, bn_forward, bn_backward, act_forward,
            act_backward, relu_forward, relu_backward):
    _fn.bfloat16 = True

OPS = {
    "Convolution": (conv_forward, conv_backward),
    "Deconvolution": (deconv_forward, deconv_backward),
    "Pooling": (pool_forward, pool_backward),
    "BatchNorm": (bn_forward, bn_backward),
    "LayerNorm": (ln_forward, ln_backward),
    "FullyConnected": (fc_forward, fc_backward),
    "softmax": _SOFTMAX,
    "log_softmax": _LOG_SOFTMAX,
    "Activation": (act_forward, act_backward),
    "relu": (relu_forward, relu_backward),
    "LRN": (lrn_forward, lrn_backward),
}


def _chain(first, second):
    """first, and second where first returns NotImplemented — unless the call has
    blocked arrays (``OpContext.layout``), which only the oneDNN adapters read: the
    executor then runs the operator on plain copies (executor/prepared.py); or
    bfloat16 or float16 arrays, which only oneDNN's adapters take fast: the runner then
    computes the call in float32 (operator/bfloat16.py)."""
    def kernel(*args, **kwargs):
        res = first(*args, **kwargs)
        if res is NotImplemented and args[0].layout is None:
            lists = [a for a in args[2:] if isinstance(a, list)]
            if not (_bf16.involved(*lists) or _bf16.involved(*lists, low=_F16)):
                return second(*args, **kwargs)
        return res
    kernel.__name__ = first.__name__
    kernel.__doc__ = first.__doc__
    kernel.fallback = second
    kernel.bfloat16 = getattr(first, "bfloat16", False)
    return kernel


def register_all(register_kernel, lookup_kernel=None, device="cpu"):
    """Register every adapter with ``register_kernel(op_name, device, fn,
    backward=False)``. With ``lookup_kernel(op_name, device, backward)``, a kernel
    already registered for the operator (e.g. a NumPy-specific CPU kernel) becomes the
    adapter's fallback, before the operator's own body.

    Nothing is loaded here: libdnnl loads on the first adapter call (about 0.1-0.3 s),
    and when it is off (MXNET_MKLDNN_ENABLED=0) or missing every adapter returns
    NotImplemented, so the fallbacks run. Returns the names registered."""
    for name, pair in OPS.items():
        for backward, fn in zip((False, True), pair):
            prev = lookup_kernel(name, device, backward) if lookup_kernel else None
            register_kernel(name, device, fn if prev is None else _chain(fn, prev),
                            backward=backward)
    from .kernels import register_fusion
    for first, fused in FUSED.items():
        register_fusion(first, "Activation", device, fused, _relu_after)
        register_fusion(first, "relu", device, fused)
    return list(OPS)


def _relu_after(p_first, p_act):
    return p_act.act_type == "relu"


# Producer -> its forward with a fused ReLU, for the executor's fusion pass (a ReLU,
# Activation(act_type='relu') or relu, that alone reads the producer's output). The
# pair's backward needs no change: ReLU's backward reads only its output, the
# producer's only its inputs.
FUSED = {"Convolution": conv_relu_forward, "FullyConnected": fc_relu_forward}
