"""cuDNN computations over CuPy arrays, writing into given outputs.

The arrays are packed: C-contiguous, or channels-last (a logical (N, C, H, W) view of
NHWC memory, as the adapters in ``mxnet.operator.kernels_cudnn`` make for the
executor's GPU layout, executor/layout.py); descriptors follow each array's strides.

Each function takes the arrays (already of the shapes cuDNN should see: the adapters in
``mxnet.operator.kernels_cudnn`` reshape 1-D convolutions to 2-D, etc.) and runs on the
arrays' device and CuPy's current stream. Convolution algorithms are chosen once per
(geometry, dtype, math type, direction, tuning mode, workspace limit) and cached:

* ``tune='off'``: cuDNN's heuristic (``*_v7``), the first algorithm whose workspace
  fits the limit;
* ``'limited_workspace'``: the fastest measured (``Find*AlgorithmEx``, given the whole
  limit - 1024 MB by default - as scratch space) within the limit;
* ``'fastest'``: the fastest measured, whatever its workspace (searched with 4 GB).

The chosen algorithm runs with the math type cuDNN measured it with (a DEFAULT_MATH
search may pick a tensor-op algorithm and the reverse), as MXNet does.

Workspaces come from CuPy's memory pool, so they are reused between calls.
"""
import ctypes
import math
import os
import threading

import numpy as np

from ...base import bfloat16
from ..channel_sum import TYPES as CHANNEL_SUM_TYPES, channel_sum
from . import _lib as L
from . import descriptors as D
from . import graph_api
from ._runtime import runtime

__all__ = ["conv_forward", "conv_backward_data", "conv_backward_filter",
           "conv_backward_bias", "add_bias", "pool_forward", "pool_backward",
           "act_forward", "act_backward", "softmax_forward", "softmax_backward",
           "bn_forward_training", "bn_forward_inference", "bn_backward", "default_tune"]

_algos = {}
_algo_lock = threading.Lock()
_TUNES = {0: "off", 1: "limited_workspace", 2: "fastest"}
_FASTEST_CAP = 4 << 30


def default_tune():
    """cudnn_tune when the operator leaves it None: MXNET_CUDNN_AUTOTUNE_DEFAULT
    (0 off, 1 limited_workspace - the default, 2 fastest), as in MXNet."""
    try:
        v = int(os.environ.get("MXNET_CUDNN_AUTOTUNE_DEFAULT", "1"))
    except ValueError:
        v = 1
    return _TUNES.get(v, "limited_workspace")


def _ptr(a):
    return a.data.ptr


def _workspace(cp, nbytes):
    """A workspace buffer of nbytes (None, 0 for none)."""
    if nbytes == 0:
        return None, 0
    buf = cp.empty(int(nbytes), dtype=cp.uint8)
    return buf, buf.data.ptr


# --- convolution ---------------------------------------------------------------------
_DIRS = {
    # direction: (heuristic fn, find fn, workspace-size fn, algo count)
    "fwd": ("cudnnGetConvolutionForwardAlgorithm_v7",
            "cudnnFindConvolutionForwardAlgorithmEx",
            "cudnnGetConvolutionForwardWorkspaceSize", L.FWD_ALGO_COUNT),
    "bwd_data": ("cudnnGetConvolutionBackwardDataAlgorithm_v7",
                 "cudnnFindConvolutionBackwardDataAlgorithmEx",
                 "cudnnGetConvolutionBackwardDataWorkspaceSize", L.BWD_DATA_ALGO_COUNT),
    "bwd_filter": ("cudnnGetConvolutionBackwardFilterAlgorithm_v7",
                   "cudnnFindConvolutionBackwardFilterAlgorithmEx",
                   "cudnnGetConvolutionBackwardFilterWorkspaceSize",
                   L.BWD_FILTER_ALGO_COUNT),
}


class ConvGeometry:
    """Descriptors of one convolution: x (N, C, *s), w (K, C/g, *k), y (N, K, *o)."""

    def __init__(self, lib, x_shape, w_shape, y_shape, pad, stride, dilate, groups,
                 dtype, nhwc=False):
        self.lib = lib
        self.math = D.conv_math_type(dtype)
        self.strict = self.math == L.FMA_MATH
        self.nhwc = bool(nhwc)
        # channels-last: x and y as NHWC strides, the filter as KRSC memory
        self.x = D.tensor(lib, x_shape, dtype, D.nhwc_strides(x_shape) if nhwc else None)
        self.w = D.filter_(lib, w_shape, dtype, nhwc)
        self.y = D.tensor(lib, y_shape, dtype, D.nhwc_strides(y_shape) if nhwc else None)
        self._conv_args = (tuple(pad), tuple(stride), tuple(dilate), int(groups), dtype)
        self.conv = self.conv_desc(self.math)
        got = D.conv_output_dims(lib, self.conv, self.x, self.w, len(x_shape))
        if got != tuple(y_shape):
            raise D.NotSupported(f"cuDNN output shape {got} != {tuple(y_shape)}")
        self.key = (tuple(x_shape), tuple(w_shape), tuple(y_shape), tuple(pad),
                    tuple(stride), tuple(dilate), int(groups), np.dtype(dtype).str,
                    self.math, self.nhwc)
        self.dtype = np.dtype(dtype)
        self.algos = {}           # (direction, tune, limit) -> _choose's result

    def conv_desc(self, math):
        """The convolution descriptor with math type ``math`` (cached)."""
        pad, stride, dilate, groups, dtype = self._conv_args
        return D.convolution(self.lib, pad, stride, dilate, groups, dtype, math)


_geometries = {}


def geometry(x_shape, w_shape, y_shape, pad, stride, dilate, groups, dtype, nhwc=False):
    """ConvGeometry, made once per (shapes, parameters, dtype, math type, layout):
    building the descriptors and asking cuDNN for the output shape costs host time on
    every call otherwise. The math type is part of the key because the environment
    switches that choose it may change between calls. ``nhwc``: x, y and the filter
    lie channels-last in memory (x, y logical NCHW views with NHWC strides, the filter
    KRSC)."""
    key = (tuple(x_shape), tuple(w_shape), tuple(y_shape), tuple(pad), tuple(stride),
           tuple(dilate), groups, np.dtype(dtype).str, D.conv_math_type(dtype), bool(nhwc))
    g = _geometries.get(key)
    if g is None:
        rt = runtime()
        g = ConvGeometry(rt.lib, x_shape, w_shape, y_shape, pad, stride, dilate, groups,
                         dtype, nhwc)
        with _algo_lock:
            _geometries[key] = g
    return g


def _desc_args(direction, g, conv=None):
    """The descriptor arguments of the heuristic / workspace-size calls."""
    conv = g.conv if conv is None else conv
    if direction == "fwd":
        return (g.x, g.w, conv, g.y)
    if direction == "bwd_data":
        return (g.w, g.y, conv, g.x)
    return (g.x, g.y, conv, g.w)


def _heuristic(lib, h, direction, g):
    name, _, _, count = _DIRS[direction]
    perf = (L.AlgoPerf * count)()
    n = ctypes.c_int(0)
    L.check(lib, name, getattr(lib, name)(h, *_desc_args(direction, g), count,
                                          ctypes.byref(n), perf))
    return [perf[i] for i in range(n.value) if perf[i].status == L.STATUS_SUCCESS]


def _ws_size(lib, h, direction, g, algo, conv):
    name = _DIRS[direction][2]
    size = ctypes.c_size_t(0)
    L.check(lib, name, getattr(lib, name)(h, *_desc_args(direction, g, conv), int(algo),
                                          ctypes.byref(size)))
    return size.value


def _math_of(g, perf):
    """The math type to run ``perf``'s algorithm with: the one cuDNN reported for it (a
    search over a DEFAULT_MATH / TENSOR_OP_MATH descriptor may return algorithms of
    another math type, and the descriptor must say that type when they run), except in
    strict fp32, which stays FMA."""
    if g.strict:
        return L.FMA_MATH
    m = int(perf.mathType)
    return m if m in (L.DEFAULT_MATH, L.TENSOR_OP_MATH, L.TENSOR_OP_MATH_ALLOW_CONVERSION,
                      L.FMA_MATH) else g.math


def workspace_cap(tune, limit):
    """The most scratch space a ``cudnn_tune`` choice may take: the workspace limit,
    and for 'fastest' at least _FASTEST_CAP (MXNet lets 'fastest' ignore the limit;
    a cap keeps one algorithm from taking the device's memory)."""
    return max(limit, _FASTEST_CAP) if tune == "fastest" else limit


def _find_workspace(cp, cands, limit, tune):
    """(buffer, pointer, bytes) of the scratch space the measured search may use: the
    workspace limit ('fastest': at least _FASTEST_CAP), halved while the pool cannot
    give it, never below what the heuristic's cheapest candidate needs."""
    want = workspace_cap(tune, limit)
    floor = min(c.memory for c in cands)
    size = max(want, floor)
    while True:
        try:
            buf, ptr = _workspace(cp, size)
            return buf, ptr, size
        except cp.cuda.memory.OutOfMemoryError:
            if size <= floor:
                raise
            size = max(size // 2, floor)


def _wait_idle(cp):
    """Let the device finish its queued work before a measured search, so that the
    trial runs it times do not share the GPU with a training step's kernels still in
    flight."""
    cp.cuda.runtime.deviceSynchronize()


def _choose(rt, h, direction, g, tune, limit, ptrs, out=None):
    """(algo, workspace bytes, convolution descriptor) for this geometry and direction.
    ``ptrs``: the three data pointers in the Find call's order (its output gets
    overwritten); ``out``: the output array when its contents must survive (an
    accumulating call): the measured search then writes into a scratch copy."""
    short = (direction, tune, limit if tune != "fastest" else None)
    memo = getattr(g, "algos", None)       # per geometry: no long key to hash per call
    if memo is not None:
        hit = memo.get(short)
        if hit is not None:
            return hit
    key = g.key + short
    hit = _algos.get(key)
    if hit is not None:
        if memo is not None:
            memo[short] = hit
        return hit
    lib, cp = rt.lib, rt.cupy
    cands = _heuristic(lib, h, direction, g)
    if not cands:
        raise D.NotSupported(f"no cuDNN algorithm for {direction} {g.key}")
    if tune == "off":
        fits = [c for c in cands if c.memory <= limit] or [min(cands, key=lambda c: c.memory)]
        best = fits[0]
    else:
        # measured: every algorithm cuDNN has for this problem, run with as much scratch
        # space as the limit allows; results come back sorted by time
        ws, wsp, cap = _find_workspace(cp, cands, limit, tune)
        _, find, _, count = _DIRS[direction]
        _wait_idle(cp)
        perf = (L.AlgoPerf * count)()
        n = ctypes.c_int(0)
        a, b, c = ptrs
        scratch = None
        if out is not None:          # the search's trial runs must not clobber it
            scratch = cp.empty_like(out)
            c = scratch.data.ptr
        d0, d1, d2, d3 = _desc_args(direction, g)
        # Find*Ex order: (h, desc0, ptr0, desc1, ptr1, conv, desc3, ptr3, ...). Searched
        # twice, the first ranking dropped: with CUDA's lazy module loading an
        # algorithm's first run includes loading its kernels, so the first search
        # favours algorithms whose kernels an earlier layer happened to load (on an
        # H200 it ranked ResNet-50's first-step forward picks 1.2-2.2x slower than the
        # ones a repeated search picks)
        for _ in range(2):
            L.check(lib, find, getattr(lib, find)(h, d0, a, d1, b, d2, d3, c, count,
                                                  ctypes.byref(n), perf, wsp, cap))
        del ws, scratch
        ok = [perf[i] for i in range(n.value)
              if perf[i].status == L.STATUS_SUCCESS and perf[i].memory <= cap
              and (tune == "fastest" or perf[i].memory <= limit)
              and not (g.strict and int(perf[i].mathType) in (
                  L.TENSOR_OP_MATH, L.TENSOR_OP_MATH_ALLOW_CONVERSION))]
        ok.sort(key=lambda r: r.time)
        best = ok[0] if ok else cands[0]
    conv = g.conv_desc(_math_of(g, best))
    ws_bytes = max(int(best.memory), _ws_size(lib, h, direction, g, best.algo, conv))
    res = (int(best.algo), ws_bytes, conv)
    with _algo_lock:
        _algos[key] = res
    if memo is not None:
        memo[short] = res
    return res


def _limit(workspace_mb):
    return int(workspace_mb) << 20


# direction -> the cuDNN call; every one takes (handle, alpha, desc0, ptr0, desc1, ptr1,
# conv, algo, workspace, workspace bytes, beta, desc3, ptr3) with the descriptors of
# _desc_args and the data pointers in the same order (the last one is written)
_RUN = {"fwd": "cudnnConvolutionForward", "bwd_data": "cudnnConvolutionBackwardData",
        "bwd_filter": "cudnnConvolutionBackwardFilter"}


def _graph_api_on():
    """MXNET_CUDNN_GRAPH_API=1: convolutions through cached graph-API plans
    (backend/cudnn/graph_api.py); off by default until measured on a device."""
    return os.environ.get("MXNET_CUDNN_GRAPH_API", "0").strip() == "1"


def _conv_run(direction, g, a, b, c, tune, workspace_mb, accumulate=False):
    """Run one convolution direction: c = f(a, b) (``accumulate``: c += f(a, b)) with
    the chosen algorithm."""
    rt = runtime()
    h = rt.handle(c.device.id)
    ptrs = (_ptr(a), _ptr(b), _ptr(c))
    if _graph_api_on() and graph_api.aligned(ptrs):
        plan = graph_api.conv_plan(rt, h, direction, g, tune,
                                   workspace_cap(tune, _limit(workspace_mb)), ptrs, c,
                                   accumulate)
        if plan is not None:
            try:
                ws, wsp = _workspace(rt.cupy, plan.workspace)
            except MemoryError:     # CuPy's OutOfMemoryError: the legacy call this time
                pass
            else:
                try:
                    plan.run(h, ptrs, wsp)
                    return c
                except L.CudnnError:    # refused at run time: the legacy call from now on
                    plan.failed = True
                finally:
                    del ws              # back to the pool after the call is queued
    algo, ws_bytes, conv = _choose(rt, h, direction, g, tune, _limit(workspace_mb), ptrs,
                                   c if accumulate else None)
    one, zero = D.scalars(g.dtype)
    ws, wsp = _workspace(rt.cupy, ws_bytes)
    d0, d1, _, d3 = _desc_args(direction, g, conv)
    name = _RUN[direction]
    L.check(rt.lib, name, getattr(rt.lib, name)(h, one, d0, ptrs[0], d1, ptrs[1], conv,
                                                algo, wsp, ws_bytes,
                                                one if accumulate else zero, d3, ptrs[2]))
    del ws                      # back to the pool after the call is queued
    return c


def conv_forward(g, x, w, y, tune, workspace_mb, accumulate=False):
    """y = conv(x, w) (``accumulate``: y += conv(x, w))."""
    return _conv_run("fwd", g, x, w, y, tune, workspace_mb, accumulate)


def conv_backward_data(g, w, dy, dx, tune, workspace_mb, accumulate=False):
    """dx = the gradient of conv(x, w) with respect to x, for output gradient dy
    (``accumulate``: dx += it, cuDNN's beta = 1, free in the GEMM's epilogue)."""
    return _conv_run("bwd_data", g, w, dy, dx, tune, workspace_mb, accumulate)


def conv_backward_filter(g, x, dy, dw, tune, workspace_mb, accumulate=False):
    """dw = the gradient of conv(x, w) with respect to w (``accumulate``: dw += it)."""
    return _conv_run("bwd_filter", g, x, dy, dw, tune, workspace_mb, accumulate)


def _bias_desc(lib, c, ndim, dtype):
    return D.tensor(lib, (1, c) + (1,) * (ndim - 2), dtype)


def _channels_last_rows(dy):
    """A channels-last 4-D ``dy`` as its C-contiguous (N*H*W, C) matrix, else None."""
    if dy.ndim != 4 or dy.flags.c_contiguous or dy.dtype not in CHANNEL_SUM_TYPES:
        return None
    m = dy.transpose(0, 2, 3, 1)
    return m.reshape(-1, dy.shape[1]) if m.flags.c_contiguous else None


def _bias_sum_channels_last(m, db, accumulate):
    """The bias gradient of a channels-last convolution: column sums of its (N*H*W, C)
    output gradient in float32 (one coalesced kernel), rounded once into ``db``."""
    cp = runtime().cupy
    total = cp.zeros(m.shape[1], cp.float32)
    if not channel_sum(cp, m, total):
        total = m.astype(cp.float32).sum(axis=0)
    return _round_into(cp, total, db, accumulate)


def _round_into(cp, total, db, accumulate):
    """Write (``accumulate``: add) float32 sums ``total`` into ``db``, rounded once."""
    if accumulate:
        total += db.astype(cp.float32)
    db[...] = total.astype(db.dtype)
    return db


def conv_backward_bias(dy, db, accumulate=False):
    """db[c] = the sum of dy over every axis but 1 (dy: 4-D or 5-D, packed C order or
    channels-last; ``accumulate``: db[c] += it)."""
    rows = _channels_last_rows(dy)
    if rows is not None:
        return _bias_sum_channels_last(rows, db, accumulate)
    if dy.dtype == bfloat16:
        return _bias_sum_in_float32(dy, db, accumulate)
    rt = runtime()
    h = rt.handle(dy.device.id)
    one, zero = D.scalars(dy.dtype)
    L.check(rt.lib, "cudnnConvolutionBackwardBias",
            rt.lib.cudnnConvolutionBackwardBias(h, one, D.tensor_of(rt.lib, dy),
                                                _ptr(dy), one if accumulate else zero,
                                                _bias_desc(rt.lib, dy.shape[1], dy.ndim,
                                                           dy.dtype), _ptr(db)))
    return db


_BF16_SUM = []


def _bf16_sum(cp):
    """A CuPy reduction summing bfloat16 values in float32, reading the bfloat16 bits
    (a uint16 view: a bfloat16 is the top half of the float32 of the same value), so
    no float32 copy of the whole gradient is made first."""
    if not _BF16_SUM:
        _BF16_SUM.append(cp.ReductionKernel(
            "uint16 x", "float32 y", "__uint_as_float(((unsigned int)x) << 16)",
            "a + b", "y = a", "0", "mxnet_bf16_sum_f32", reduce_type="float"))
    return _BF16_SUM[0]


def _bias_sum_in_float32(dy, db, accumulate):
    """The bias gradient of a bfloat16 convolution: cuDNN 9's BackwardBias refuses
    bfloat16 (CUDNN_STATUS_NOT_SUPPORTED), and declining would send the whole
    convolution backward to float32. Summed by CuPy in float32 (as cuDNN accumulates)
    and rounded once into ``db``."""
    rt = runtime()
    axes = (0,) + tuple(range(2, dy.ndim))
    if dy.flags.c_contiguous:
        total = _bf16_sum(rt.cupy)(dy.view(rt.cupy.uint16), axis=axes)
    else:
        total = dy.astype(rt.cupy.float32).sum(axis=axes)
    return _round_into(rt.cupy, total, db, accumulate)


def add_bias(y, b):
    """y += b broadcast over axis 1 (y: 4-D or 5-D)."""
    rt = runtime()
    h = rt.handle(y.device.id)
    one, _ = D.scalars(y.dtype)
    L.check(rt.lib, "cudnnAddTensor",
            rt.lib.cudnnAddTensor(h, one, _bias_desc(rt.lib, y.shape[1], y.ndim, y.dtype),
                                  _ptr(b), one, D.tensor_of(rt.lib, y), _ptr(y)))
    return y


# --- pooling -----------------------------------------------------------------------------
_pool_descs = {}


def pool_descriptor(x_shape, y_shape, mode, window, pad, stride, dtype, nhwc=False):
    """(pooling, x, y descriptors), checking cuDNN's output shape against y_shape;
    made once per key (the shape check is a cuDNN call). ``nhwc``: x and y (and their
    gradients) lie channels-last."""
    key = (tuple(x_shape), tuple(y_shape), mode, tuple(window), tuple(pad),
           tuple(stride), np.dtype(dtype).str, bool(nhwc))
    hit = _pool_descs.get(key)
    if hit is not None:
        return hit
    lib = runtime().lib
    pd = D.pooling(lib, mode, window, pad, stride)
    xd = D.tensor(lib, x_shape, dtype, D.nhwc_strides(x_shape) if nhwc else None)
    got = D.pool_output_dims(lib, pd, xd, len(x_shape))
    if got != tuple(y_shape):
        raise D.NotSupported(f"cuDNN pooling output {got} != {tuple(y_shape)}")
    yd = D.tensor(lib, y_shape, dtype, D.nhwc_strides(y_shape) if nhwc else None)
    res = _pool_descs[key] = (pd, xd, yd)
    return res


def pool_forward(descs, x, y):
    rt = runtime()
    pd, xd, yd = descs
    one, zero = D.scalars(x.dtype)
    L.check(rt.lib, "cudnnPoolingForward",
            rt.lib.cudnnPoolingForward(rt.handle(x.device.id), pd, one, xd, _ptr(x), zero,
                                       yd, _ptr(y)))
    return y


def pool_backward(descs, x, y, dy, dx):
    rt = runtime()
    pd, xd, yd = descs
    one, zero = D.scalars(x.dtype)
    L.check(rt.lib, "cudnnPoolingBackward",
            rt.lib.cudnnPoolingBackward(rt.handle(x.device.id), pd, one, yd, _ptr(y), yd,
                                        _ptr(dy), xd, _ptr(x), zero, xd, _ptr(dx)))
    return dx


# --- activation ------------------------------------------------------------------------------
_ACT = {"relu": L.ACTIVATION_RELU, "sigmoid": L.ACTIVATION_SIGMOID,
        "tanh": L.ACTIVATION_TANH}


_descs = {}       # (kind, shape, dtype, ...) -> descriptors: no per-call key building


def _flat(lib, a):
    key = ("flat", a.size, a.dtype)
    d = _descs.get(key)
    if d is None:
        d = _descs[key] = D.tensor(lib, (1, 1, 1, a.size), a.dtype)
    return d


def act_forward(x, y, act_type):
    """y = act(x) (y may be x)."""
    rt = runtime()
    ad = D.activation(rt.lib, _ACT[act_type])
    td = _flat(rt.lib, x)
    one, zero = D.scalars(x.dtype)
    L.check(rt.lib, "cudnnActivationForward",
            rt.lib.cudnnActivationForward(rt.handle(x.device.id), ad, one, td, _ptr(x),
                                          zero, td, _ptr(y)))
    return y


def act_backward(y, dy, dx, act_type):
    """dx from the output y (relu: y > 0 exactly where x > 0, so y stands in for x)."""
    rt = runtime()
    ad = D.activation(rt.lib, _ACT[act_type])
    td = _flat(rt.lib, y)
    one, zero = D.scalars(y.dtype)
    L.check(rt.lib, "cudnnActivationBackward",
            rt.lib.cudnnActivationBackward(rt.handle(y.device.id), ad, one, td, _ptr(y),
                                           td, _ptr(dy), td, _ptr(y), zero, td, _ptr(dx)))
    return dx


# --- softmax ------------------------------------------------------------------------------------
SOFTMAX_CHANNEL_MAX = 64


def _softmax_desc(lib, a, axis):
    """(descriptor, mode): the array viewed as (outer, n, inner, 1). When the softmax
    axis is the innermost one (inner == 1, the classifier case) INSTANCE mode reduces
    each row of contiguous memory; CHANNEL mode over a (outer, n, 1, 1) view gives the
    same numbers but strides one thread per row through memory, which measured 20x
    slower than CuPy's own kernel on an H200 (7.5 ms vs 0.38 ms for 4096x1000). Other
    axes use CHANNEL mode only for short axes (at most SOFTMAX_CHANNEL_MAX, the
    per-pixel class scores of a segmentation net); its backward over long strided axes
    is known to be pathologically slow, so those raise NotSupported (CuPy body)."""
    key = ("softmax", a.shape, a.dtype, axis)
    hit = _descs.get(key)
    if hit is not None:
        return hit
    shape = a.shape
    outer = math.prod(shape[:axis])
    inner = math.prod(shape[axis + 1:])
    if inner > 1 and shape[axis] > SOFTMAX_CHANNEL_MAX:
        raise D.NotSupported("softmax over a long non-innermost axis")
    mode = L.SOFTMAX_MODE_INSTANCE if inner == 1 else L.SOFTMAX_MODE_CHANNEL
    res = _descs[key] = (D.tensor(lib, (outer, shape[axis], inner, 1), a.dtype), mode)
    return res


def softmax_forward(x, y, axis, log):
    """y = (log_)softmax(x) along ``axis``."""
    rt = runtime()
    td, mode = _softmax_desc(rt.lib, x, axis)
    one, zero = D.scalars(x.dtype)
    L.check(rt.lib, "cudnnSoftmaxForward",
            rt.lib.cudnnSoftmaxForward(rt.handle(x.device.id),
                                       L.SOFTMAX_LOG if log else L.SOFTMAX_ACCURATE,
                                       mode, one, td, _ptr(x), zero, td, _ptr(y)))
    return y


def softmax_backward(y, dy, dx, axis, log):
    rt = runtime()
    td, mode = _softmax_desc(rt.lib, y, axis)
    one, zero = D.scalars(y.dtype)
    L.check(rt.lib, "cudnnSoftmaxBackward",
            rt.lib.cudnnSoftmaxBackward(rt.handle(y.device.id),
                                        L.SOFTMAX_LOG if log else L.SOFTMAX_ACCURATE,
                                        mode, one, td, _ptr(y), td, _ptr(dy), zero, td,
                                        _ptr(dx)))
    return dx


# --- batch norm ------------------------------------------------------------------------------------
def _bn_descs(lib, x4, mode=L.BATCHNORM_SPATIAL):
    key = ("bn", x4.shape, x4.dtype, x4.strides, mode)
    hit = _descs.get(key)
    if hit is None:
        strides = D.strides_of(x4)
        xd = D.tensor(lib, x4.shape, x4.dtype, strides)
        hit = _descs[key] = (xd, D.bn_param(lib, xd, (tuple(x4.shape), strides,
                                                      np.dtype(x4.dtype).str), mode))
    return hit


_PERSISTENT_REFUSED = set()     # dtypes this cuDNN refused SPATIAL_PERSISTENT for


def bn_mode(x4):
    """cuDNN's batch-norm mode for training on ``x4``: SPATIAL_PERSISTENT for
    channels-last data (the mode PyTorch takes for channels-last training;
    MXNET_CUDNN_BN_PERSISTENT=0 turns it off, and a dtype cuDNN once refused it for
    keeps SPATIAL), else SPATIAL. Channels-last batch norm reaches cuDNN only with
    MXNET_CUDNN_BN_CHANNELS_LAST=1: through these legacy calls cuDNN 9 runs generic
    kernels on NHWC even in this mode (an H100, session 11), and pymxnet's own
    kernels (backend/bn_channels_last.py) take it by default."""
    if x4.flags.c_contiguous or x4.shape[1] == 1 or \
            np.dtype(x4.dtype) in _PERSISTENT_REFUSED or \
            os.environ.get("MXNET_CUDNN_BN_PERSISTENT", "1").strip() == "0":
        return L.BATCHNORM_SPATIAL
    return L.BATCHNORM_SPATIAL_PERSISTENT


def _bn_call(name, x4, call):
    """Run ``call(mode, xd, bd)`` (a training batch-norm call) in ``bn_mode``; when
    cuDNN refuses the persistent mode, remember that for the dtype and run SPATIAL,
    which takes any packed layout."""
    rt = runtime()
    mode = bn_mode(x4)
    xd, bd = _bn_descs(rt.lib, x4, mode)
    status = call(mode, xd, bd)
    if status != L.STATUS_SUCCESS and mode == L.BATCHNORM_SPATIAL_PERSISTENT:
        _PERSISTENT_REFUSED.add(np.dtype(x4.dtype))
        mode = L.BATCHNORM_SPATIAL
        xd, bd = _bn_descs(rt.lib, x4, mode)
        status = call(mode, xd, bd)
    L.check(rt.lib, name, status)


def bn_forward_training(x4, y4, scale, bias, eps, save_mean, save_invstd):
    """Batch statistics (written to save_mean / save_invstd = 1/sqrt(var + eps)) and
    the normalised y. x4: (N, C, L, 1), or a channels-last (N, C, H, W) view (y4 in
    the same layout). The moving statistics are left to the caller (cuDNN would fold
    in the unbiased variance; MXNet's rule uses the biased one)."""
    rt = runtime()
    one, zero = D.scalars(x4.dtype)
    _bn_call("cudnnBatchNormalizationForwardTraining", x4,
             lambda mode, xd, bd: rt.lib.cudnnBatchNormalizationForwardTraining(
                 rt.handle(x4.device.id), mode, one, zero, xd, _ptr(x4), xd, _ptr(y4),
                 bd, _ptr(scale), _ptr(bias), 0.0, None, None, float(eps),
                 _ptr(save_mean), _ptr(save_invstd)))
    return y4


def bn_forward_inference(x4, y4, scale, bias, mean, var, eps):
    rt = runtime()
    xd, bd = _bn_descs(rt.lib, x4)
    one, zero = D.scalars(x4.dtype)
    L.check(rt.lib, "cudnnBatchNormalizationForwardInference",
            rt.lib.cudnnBatchNormalizationForwardInference(
                rt.handle(x4.device.id), L.BATCHNORM_SPATIAL, one, zero, xd, _ptr(x4), xd,
                _ptr(y4), bd, _ptr(scale), _ptr(bias), _ptr(mean), _ptr(var), float(eps)))
    return y4


def bn_backward(x4, dy4, dx4, scale, dscale, dbias, eps, mean, invstd):
    """Training-formula gradients from the saved statistics (mean, invstd); dy4 and
    dx4 in x4's layout."""
    rt = runtime()
    one, zero = D.scalars(x4.dtype)
    _bn_call("cudnnBatchNormalizationBackward", x4,
             lambda mode, xd, bd: rt.lib.cudnnBatchNormalizationBackward(
                 rt.handle(x4.device.id), mode, one, zero, one, zero, xd, _ptr(x4), xd,
                 _ptr(dy4), xd, _ptr(dx4), bd, _ptr(scale), _ptr(dscale), _ptr(dbias),
                 float(eps), _ptr(mean), _ptr(invstd)))
    return dx4
