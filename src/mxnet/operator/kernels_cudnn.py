"""Adapters from MXNet operators to the cuDNN kernels, for the operator kernel table
(device 'gpu').

``register_all(register_kernel)`` registers a forward and a backward function per
operator with the operator contract's signatures::

    forward(ctx, p, inputs, aux, out=None) -> outputs
    backward(ctx, p, out_grads, inputs, outputs, aux, in_grad=None) -> gradients

They write into the ``out`` / ``in_grad`` arrays when those are C-contiguous CuPy arrays
of the right shape and dtype that do not overlap an input (else into fresh arrays,
copied over at the end), and return ``NotImplemented`` for what they do not cover, so
the operator's CuPy body runs: ``cudnn_off=True``, layouts other than NC*, dtypes other
than float16/32/64, sum/lp pooling, pooling windows cuDNN's symmetric padding cannot
express, BatchNorm on an axis other than 1 or with ``use_global_stats`` in backward,
softmax with a temperature, length or dtype change, activations other than
relu/sigmoid/tanh; and, with one RuntimeWarning, any call cuDNN itself rejects
(a CudnnError). Gradient ``req='add'`` is applied by the runner (these kernels get
None for such destinations), except for the convolutions' backward, marked
``accumulates``: in a prepared executor they receive 'add' destinations and add into
them with cuDNN's beta = 1. Input validation stays with the operator: each adapter
first calls its ``infer_shape``.

Channels-last: in a GPU executor, the layout pass (executor/layout.py) may hand
Convolution, BatchNorm and Pooling 4-D arrays whose memory holds NHWC (``ctx.layout``
flags them; ``channels_last_capable`` says which positions). These adapters then run
cuDNN on NHWC views: data, outputs and gradients as logical (N, C, H, W) views with
NHWC strides, the filter as a KRSC copy (its gradient transposed back into the KCRS
weight gradient); a plain array in such a call is transposed into a channels-last
temporary (and a plain destination written back from one). BatchNorm on such arrays
runs pymxnet's NHWC kernels (backend/bn_channels_last.py) rather than cuDNN's legacy
NHWC batch norm, which ran generic kernels ~30x slower on an H100.

Nothing loads at import: libcudnn loads on the first GPU call; when it (or CuPy) is
missing, one RuntimeWarning says so and every adapter returns NotImplemented.

Convolution math (MXNet 1.9.1's policy with cuDNN >= 8): float16 uses tensor cores,
float32 cuDNN's DEFAULT_MATH, which allows TF32 on sm_80+ GPUs (as PyTorch's default);
NVIDIA_TF32_OVERRIDE=0 or MXNET_CUDA_ALLOW_TENSOR_CORE=0 give strict fp32 (see
``backend.cudnn.descriptors.conv_math_type``).
"""
import math
import os
import warnings

import numpy as np

from ..base import bfloat16
from ..backend import bn_channels_last as NHWC
from ..backend.cudnn import kernels as K
from ..backend.cudnn._lib import BN_MIN_EPSILON, CudnnError
from ..backend.cudnn._runtime import try_runtime
from ..backend.cudnn.descriptors import NotSupported
from .kernels import OutputBuffers, output_shapes
from .kernels_onednn import _chain, _flags

__all__ = ["register_all", "register_fusions", "OPS"]

_FLOATS = (np.dtype(np.float16), bfloat16, np.dtype(np.float32), np.dtype(np.float64))


def _op(name):
    from .registry import get_op
    return get_op(name)


def _need(ctx, n):
    need = getattr(ctx, "need_grad", None)
    return list(need) if need is not None else [True] * n


def _spatial(v, nd, default):
    v = tuple(v) if v else ()
    return v if len(v) == nd else (default,) * nd


def _layout_ok(p):
    return getattr(p, "layout", None) in (None, "NCW", "NCHW", "NCDHW") and \
        not getattr(p, "cudnn_off", False)


def _same_float(*arrays):
    arrs = [a for a in arrays if a is not None]
    return bool(arrs) and arrs[0].dtype in _FLOATS and all(a.dtype == arrs[0].dtype
                                                            for a in arrs)


_WARNED = set()


def _warn_once(name, err):
    key = (name, err.status)
    if key not in _WARNED:
        _WARNED.add(key)
        warnings.warn(f"pymxnet: {name} fell back to the CuPy body: {err}", RuntimeWarning,
                      stacklevel=4)


def _guard(fn):
    """Fall back to the CuPy body when cuDNN is missing, for arrays that are not CuPy
    arrays, and for cases the kernels do not cover (NotSupported). The body runs on the
    device of the first array argument."""
    def wrapped(ctx, p, *arrays_and_rest, **kwargs):
        first = next((a for a in _first_arrays(arrays_and_rest) if a is not None), None)
        if not type(first).__module__.startswith("cupy"):
            return NotImplemented       # checked before loading anything
        rt = try_runtime()
        if rt is None or not isinstance(first, rt.cupy.ndarray):
            return NotImplemented
        cp = rt.cupy
        try:
            with first.device:
                return fn(cp, ctx, p, *arrays_and_rest, **kwargs)
        except NotSupported:
            return NotImplemented
        except CudnnError as err:
            # a configuration this cuDNN rejects: the CuPy body computes it instead
            # (it rewrites every output), with one warning per operator and status
            _warn_once(fn.__name__, err)
            return NotImplemented
    wrapped.__name__ = fn.__name__
    wrapped.__doc__ = fn.__doc__
    return wrapped


# --- channels-last (the executor's GPU layout, executor/layout.py) ---------------------
def _flag(flags, i):
    return flags is not None and i < len(flags) and bool(flags[i])


def _same_bytes(shape):
    """Whether NCHW and NHWC order the elements of ``shape`` alike (one channel or one
    spatial position)."""
    return shape[1] == 1 or shape[2] * shape[3] == 1


def _nhwc_view(mem):
    """The logical (N, C, H, W) view of a C-contiguous array whose bytes are NHWC."""
    n, c, h, w = mem.shape
    return mem.reshape(n, h, w, c).transpose(0, 3, 1, 2)


def _cl_in(cp, a, is_cl):
    """Input ``a`` (channels-last bytes when ``is_cl``, else plain NCHW) as a logical
    view with NHWC strides; a plain one is transposed into a temporary."""
    if is_cl or _same_bytes(a.shape):
        return _nhwc_view(cp.ascontiguousarray(a))
    return cp.ascontiguousarray(a.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)


class _ClDest:
    """Where a channels-last call writes destination ``mem`` (from an OutputBuffers;
    ``acc``: add into it): ``view`` (logical, NHWC strides) and ``accumulate`` (cuDNN's
    beta = 1 into it). A destination holding channels-last bytes (``is_cl``, or one
    whose two layouts are the same bytes) is written directly; a plain one gets a
    channels-last temporary that ``finish()`` writes (or adds) into it. A filter
    gradient is such a plain destination: KRSC is NHWC's order of (K, C, R, S)."""

    def __init__(self, cp, mem, acc, is_cl):
        self.mem, self.back, self.add = mem, False, acc
        if is_cl or _same_bytes(mem.shape):
            self.view, self.accumulate = _nhwc_view(mem), acc
        else:
            n, c, h, w = mem.shape
            self.view = cp.empty((n, h, w, c), mem.dtype).transpose(0, 3, 1, 2)
            self.accumulate, self.back = False, True

    def finish(self):
        if self.back:
            if self.add:
                self.mem += self.view
            else:
                self.mem[...] = self.view


def channels_last_capable(name, p, in_shapes, out_shapes):
    """(inputs, outputs): the positions of operator ``name``'s arguments and outputs
    these adapters take channels-last, forward and backward alike (an input's gradient
    has its layout), or None (for the executor's GPU layout pass)."""
    if not in_shapes or len(in_shapes[0]) != 4 or getattr(p, "cudnn_off", False):
        return None
    x = tuple(in_shapes[0])
    if name == "Convolution":
        # grouped (depthwise) convolutions stay NCHW: cuDNN's legacy API has few NHWC
        # algorithms for them, and a refusal would send every call through plain copies
        return ((0,), (0,)) if _layout_ok(p) and len(p.kernel) == 2 and \
            p.num_group == 1 else None
    if name == "BatchNorm":
        return ((0,), (0,)) if p.axis % 4 == 1 and p.eps >= BN_MIN_EPSILON else None
    if name == "Pooling":
        try:
            _pool_geometry(p, x, tuple(out_shapes[0]))
        except NotSupported:
            return None
        return (0,), (0,)
    return None


def _first_arrays(args):
    for a in args:
        if isinstance(a, (list, tuple)) and a:
            return a
    return ()


def _c(cp, a):
    return None if a is None else cp.ascontiguousarray(a)


def _tune(p):
    return p.cudnn_tune if p.cudnn_tune is not None else K.default_tune()


def _as_2d(shape):
    """A 1-D convolution's (N, C, W) as cuDNN's (N, C, 1, W)."""
    return tuple(shape[:2]) + (1,) + tuple(shape[2:])


def _geo(p, nd, x_shape, w_shape, y_shape, pad, stride, dilate, dtype, nhwc=False):
    """cuDNN geometry; 1-D problems become 2-D ones with a unit height. ``nhwc``: the
    arrays lie channels-last (see ``K.geometry``)."""
    if nd == 1:
        x_shape, w_shape, y_shape = _as_2d(x_shape), _as_2d(w_shape), _as_2d(y_shape)
        pad, stride, dilate = (0,) + tuple(pad), (1,) + tuple(stride), (1,) + tuple(dilate)
    g = K.geometry(x_shape, w_shape, y_shape, pad, stride, dilate, p.num_group, dtype,
                   nhwc)
    return g, x_shape, w_shape, y_shape


# --- Convolution -------------------------------------------------------------------------
def _conv_setup(p, x_shape, w_shape, y_shape, dtype, nhwc=False):
    nd = len(p.kernel)
    stride = _spatial(p.stride, nd, 1)
    dilate = _spatial(p.dilate, nd, 1)
    pad = _spatial(p.pad, nd, 0)
    return _geo(p, nd, x_shape, w_shape, y_shape, pad, stride, dilate, dtype, nhwc)


@_guard
def conv_forward(cp, ctx, p, inputs, aux, out=None):
    """Convolution forward on cuDNN."""
    if not _layout_ok(p) or not _same_float(*inputs):
        return NotImplemented
    (oshape,) = output_shapes(_op("Convolution"), p, [a.shape for a in inputs])
    fin, fout = _flags(ctx, 0), _flags(ctx, 1)
    if (_flag(fin, 0) or _flag(fout, 0)) and len(oshape) == 4:
        return _conv_forward_cl(cp, p, inputs, out, oshape, _flag(fin, 0), _flag(fout, 0))
    x, w = _c(cp, inputs[0]), _c(cp, inputs[1])
    g, xs, ws, ys = _conv_setup(p, x.shape, w.shape, oshape, x.dtype)
    o = OutputBuffers(cp, out, 1, inputs)
    y = o.get(0, oshape, x.dtype)
    K.conv_forward(g, x.reshape(xs), w.reshape(ws), y.reshape(ys), _tune(p), p.workspace)
    if not p.no_bias:
        K.add_bias(y.reshape(ys), _c(cp, inputs[2]).reshape(-1))
    return o.done()


def _conv_forward_cl(cp, p, inputs, out, oshape, x_cl, y_cl):
    """Convolution forward with channels-last data (see the module docstring)."""
    x = _cl_in(cp, inputs[0], x_cl)
    wt = _cl_in(cp, inputs[1], False)          # the filter as a KRSC copy
    g = _conv_setup(p, x.shape, wt.shape, oshape, x.dtype, nhwc=True)[0]
    o = OutputBuffers(cp, out, 1, inputs)
    y = _ClDest(cp, o.get(0, oshape, x.dtype), False, y_cl)
    K.conv_forward(g, x, wt, y.view, _tune(p), p.workspace)
    if not p.no_bias:
        K.add_bias(y.view, _c(cp, inputs[2]).reshape(-1))
    y.finish()
    return o.done()


def _adds(ctx, in_grad, n):
    """Per gradient: whether its destination was handed over with req 'add' (see
    ``accumulates``)."""
    req = getattr(ctx, "req", None) or ()
    return [in_grad is not None and i < len(req) and req[i] == "add"
            and in_grad[i] is not None for i in range(n)]


def _grads(cp, p, ctx, in_grad, dy, x, w, bias_shape):
    """(buffers, [(dx, acc), (dw, acc), (db, acc)]) with None for gradients nobody
    needs; ``acc``: add into the array (its destination's req is 'add')."""
    n = 2 if p.no_bias else 3
    need = _need(ctx, n)
    adds = _adds(ctx, in_grad, n)
    g = OutputBuffers(cp, in_grad, n, [dy, x, w])
    shapes = [(x.shape, x.dtype), (w.shape, w.dtype), (bias_shape, dy.dtype)]
    res = []
    for i in range(3):
        if i >= n or not need[i]:
            res.append(None)
        elif adds[i]:
            res.append(g.get_accumulating(i, *shapes[i]))
        else:
            res.append((g.get(i, *shapes[i]), False))
    return g, res


@_guard
def conv_backward(cp, ctx, p, out_grads, inputs, outputs, aux, in_grad=None):
    """Convolution's data, weight and bias gradients on cuDNN."""
    dy, x, w = out_grads[0], inputs[0], inputs[1]
    if not _layout_ok(p) or not _same_float(dy, x, w):
        return NotImplemented
    if ctx.layout is not None and x.ndim == 4:
        return _conv_backward_cl(cp, ctx, p, out_grads, inputs, in_grad)
    dy, x, w = _c(cp, dy), _c(cp, x), _c(cp, w)
    geo, xs, ws, ys = _conv_setup(p, x.shape, w.shape, dy.shape, x.dtype)
    bshape = inputs[2].shape if not p.no_bias and inputs[2] is not None else (p.num_filter,)
    g, (dx, dw, db) = _grads(cp, p, ctx, in_grad, dy, x, w, bshape)
    tune = _tune(p)
    if dx is not None:
        K.conv_backward_data(geo, w.reshape(ws), dy.reshape(ys), dx[0].reshape(xs), tune,
                             p.workspace, accumulate=dx[1])
    if dw is not None:
        K.conv_backward_filter(geo, x.reshape(xs), dy.reshape(ys), dw[0].reshape(ws), tune,
                               p.workspace, accumulate=dw[1])
    if db is not None:
        K.conv_backward_bias(dy.reshape(ys), db[0].reshape(-1), accumulate=db[1])
    return g.done()


def _conv_backward_cl(cp, ctx, p, out_grads, inputs, in_grad):
    """Convolution's gradients with channels-last data: dy, x and dx as NHWC views,
    the weight gradient computed KRSC into its (plain) destination."""
    fog, fin, ftg = _flags(ctx, 0), _flags(ctx, 1), _flags(ctx, 3)
    w = inputs[1]
    dy = _cl_in(cp, out_grads[0], _flag(fog, 0))
    x = _cl_in(cp, inputs[0], _flag(fin, 0))
    wt = _cl_in(cp, w, False)                  # the filter as a KRSC copy
    geo = _conv_setup(p, x.shape, wt.shape, dy.shape, x.dtype, nhwc=True)[0]
    bshape = inputs[2].shape if not p.no_bias and inputs[2] is not None else (p.num_filter,)
    g, (dx, dw, db) = _grads(cp, p, ctx, in_grad, out_grads[0], inputs[0], w, bshape)
    tune = _tune(p)
    if dx is not None:
        d = _ClDest(cp, *dx, _flag(ftg, 0))
        K.conv_backward_data(geo, wt, dy, d.view, tune, p.workspace, accumulate=d.accumulate)
        d.finish()
    if dw is not None:
        d = _ClDest(cp, *dw, False)
        K.conv_backward_filter(geo, x, dy, d.view, tune, p.workspace,
                               accumulate=d.accumulate)
        d.finish()
    if db is not None:
        K.conv_backward_bias(dy, db[0].reshape(-1), accumulate=db[1])
    return g.done()


# --- Deconvolution -------------------------------------------------------------------------
def _deconv_setup(p, x_shape, w_shape, dtype):
    """Deconvolution as the data gradient of a convolution from its output (shape
    ``out_shape``) to the deconvolution's input."""
    from .nn.deconvolution import deconv_geometry
    kernel, stride, dilate, pad, out = deconv_geometry(p, tuple(x_shape))
    out_shape = (x_shape[0], p.num_filter) + tuple(out)
    g, cs, ws, ds = _geo(p, len(kernel), out_shape, w_shape, x_shape, pad, stride,
                         dilate, dtype)
    return g, out_shape, cs, ws, ds


@_guard
def deconv_forward(cp, ctx, p, inputs, aux, out=None):
    """Deconvolution forward on cuDNN (a convolution's backward-data)."""
    if not _layout_ok(p) or not _same_float(*inputs):
        return NotImplemented
    _op("Deconvolution").infer_shape(p, [a.shape for a in inputs])
    x, w = _c(cp, inputs[0]), _c(cp, inputs[1])
    g, oshape, cs, ws, ds = _deconv_setup(p, x.shape, w.shape, x.dtype)
    o = OutputBuffers(cp, out, 1, inputs)
    y = o.get(0, oshape, x.dtype)
    K.conv_backward_data(g, w.reshape(ws), x.reshape(ds), y.reshape(cs), _tune(p),
                         p.workspace)
    if not p.no_bias:
        K.add_bias(y.reshape(cs), _c(cp, inputs[2]).reshape(-1))
    return o.done()


@_guard
def deconv_backward(cp, ctx, p, out_grads, inputs, outputs, aux, in_grad=None):
    """Deconvolution's gradients on cuDNN (forward and backward-filter of the
    convolution it transposes)."""
    dy, x, w = out_grads[0], inputs[0], inputs[1]
    if not _layout_ok(p) or not _same_float(dy, x, w):
        return NotImplemented
    dy, x, w = _c(cp, dy), _c(cp, x), _c(cp, w)
    geo, _, cs, ws, ds = _deconv_setup(p, x.shape, w.shape, x.dtype)
    bshape = inputs[2].shape if not p.no_bias and inputs[2] is not None else (p.num_filter,)
    g, (dx, dw, db) = _grads(cp, p, ctx, in_grad, dy, x, w, bshape)
    tune = _tune(p)
    if dx is not None:
        K.conv_forward(geo, dy.reshape(cs), w.reshape(ws), dx[0].reshape(ds), tune,
                       p.workspace, accumulate=dx[1])
    if dw is not None:
        K.conv_backward_filter(geo, dy.reshape(cs), x.reshape(ds), dw[0].reshape(ws), tune,
                               p.workspace, accumulate=dw[1])
    if db is not None:
        K.conv_backward_bias(dy.reshape(cs), db[0].reshape(-1), accumulate=db[1])
    return g.done()


# --- Pooling -------------------------------------------------------------------------------
def _pool_descs(p, x_shape, y_shape, dtype, nhwc=False):
    """cuDNN descriptors for MXNet's pooling, or NotSupported where cuDNN's symmetric
    padding and floor rule would not give MXNet's windows and divisors. ``nhwc``: x
    and y lie channels-last."""
    args = _pool_geometry(p, x_shape, y_shape)
    return K.pool_descriptor(*args, dtype, nhwc)


def _pool_geometry(p, x_shape, y_shape):
    """(x shape, y shape, mode, window, pad, stride) as cuDNN sees the pooling, or
    NotSupported (see _pool_descs)."""
    if not _layout_ok(p) or p.pool_type not in ("max", "avg"):
        raise NotSupported("pooling type/layout")
    nd = len(x_shape) - 2
    spatial, out = tuple(x_shape[2:]), tuple(y_shape[2:])
    if p.global_pool:
        kernel, stride, pad = spatial, (1,) * nd, (0,) * nd
    else:
        kernel = tuple(p.kernel)
        stride, pad = _spatial(p.stride, nd, 1), _spatial(p.pad, nd, 0)
    for k, s, pl, n, o in zip(kernel, stride, pad, spatial, out):
        # every window holds an input element (an empty one has MXNet-specific values)
        if any(j * s - pl >= n or j * s - pl + k <= 0 for j in range(o)):
            raise NotSupported("pooling window outside the input")
        # cuDNN pads symmetrically: the windows must end inside input + right pad
        if (o - 1) * s + k - n - pl > pl:
            raise NotSupported("pooling needs asymmetric padding")
    if p.pool_type == "max":
        mode = 0
    else:
        mode = 2 if p.count_include_pad is False else 1
    xs, ys = tuple(x_shape), tuple(y_shape)
    if nd == 1:
        xs, ys = _as_2d(xs), _as_2d(ys)
        kernel, stride, pad = (1,) + kernel, (1,) + stride, (0,) + pad
    return xs, ys, mode, kernel, pad, stride


@_guard
def pool_forward(cp, ctx, p, inputs, aux, out=None):
    """Pooling forward (max, avg) on cuDNN."""
    x = inputs[0]
    if not _same_float(x):
        return NotImplemented
    (oshape,) = output_shapes(_op("Pooling"), p, [x.shape])[:1]
    fin, fout = _flags(ctx, 0), _flags(ctx, 1)
    if (_flag(fin, 0) or _flag(fout, 0)) and x.ndim == 4:
        descs = _pool_descs(p, x.shape, oshape, x.dtype, nhwc=True)
        xv = _cl_in(cp, x, _flag(fin, 0))
        o = OutputBuffers(cp, out, 1, inputs)
        y = _ClDest(cp, o.get(0, oshape, x.dtype), False, _flag(fout, 0))
        K.pool_forward(descs, xv, y.view)
        y.finish()
        return o.done()
    descs = _pool_descs(p, x.shape, oshape, x.dtype)
    x = _c(cp, x)
    o = OutputBuffers(cp, out, 1, inputs)
    K.pool_forward(descs, x, o.get(0, oshape, x.dtype))
    return o.done()


@_guard
def pool_backward(cp, ctx, p, out_grads, inputs, outputs, aux, in_grad=None):
    """Pooling backward on cuDNN (from x, y and dy)."""
    dy, x, y = out_grads[0], inputs[0], outputs[0]
    if not _same_float(dy, x, y):
        return NotImplemented
    if ctx.layout is not None and x.ndim == 4:
        fog, fin, fout, ftg = (_flags(ctx, i) for i in range(4))
        descs = _pool_descs(p, x.shape, y.shape, x.dtype, nhwc=True)
        dyv, xv = _cl_in(cp, dy, _flag(fog, 0)), _cl_in(cp, x, _flag(fin, 0))
        yv = _cl_in(cp, y, _flag(fout, 0))
        g = OutputBuffers(cp, in_grad, 1, [dy, x, y])
        dx = _ClDest(cp, g.get(0, x.shape, x.dtype), False, _flag(ftg, 0))
        K.pool_backward(descs, xv, yv, dyv, dx.view)
        dx.finish()
        return g.done()
    descs = _pool_descs(p, x.shape, y.shape, x.dtype)
    dy, x, y = _c(cp, dy), _c(cp, x), _c(cp, y)
    g = OutputBuffers(cp, in_grad, 1, [dy, x, y])
    K.pool_backward(descs, x, y, dy, g.get(0, x.shape, x.dtype))
    return g.done()


# --- BatchNorm -------------------------------------------------------------------------------
_MOVING = {}


def _moving_update(cp, dtype):
    """One fused kernel for MXNet's moving-statistics rule (the biased variance comes
    back from cuDNN's saved inverse standard deviation)."""
    k = _MOVING.get(dtype)
    if k is None:
        k = _MOVING[dtype] = cp.ElementwiseKernel(
            "T mean, T invstd, T m, float64 eps", "T mm, T mv",
            "double var = 1.0 / ((double)invstd * (double)invstd) - eps;"
            "mm = mm * m + (T(1) - m) * mean;"
            "mv = mv * m + (T(1) - m) * (T)var;",
            "mxnet_bn_moving_update")
    return k


_ONES = {}


def _ones(cp, c, dtype):
    """A read-only vector of c ones on the current device (fix_gamma's scale), made
    once per (device, length, dtype) instead of a fill kernel per call."""
    key = (cp.cuda.Device().id, int(c), np.dtype(dtype).str)
    a = _ONES.get(key)
    if a is None:
        a = _ONES[key] = cp.ones(c, dtype)
    return a


def _own_channels_last_bn():
    """Whether channels-last BatchNorm runs pymxnet's kernels (backend/bn_channels_last.py;
    cuDNN's legacy NHWC batch norm is ~30x slower); MXNET_CUDNN_BN_CHANNELS_LAST=1 gives
    it to cuDNN instead (for comparison)."""
    return os.environ.get("MXNET_CUDNN_BN_CHANNELS_LAST", "0").strip() != "1"


def _bn_check(p, x, params):
    """(N, C, L, 1) shape for cuDNN, or NotSupported."""
    if getattr(p, "cudnn_off", False) or x.ndim < 2 or p.axis % x.ndim != 1:
        raise NotSupported("BatchNorm axis")
    if x.dtype not in _FLOATS or p.eps < BN_MIN_EPSILON:
        raise NotSupported("BatchNorm dtype/eps")
    pt = np.dtype(np.float64) if x.dtype == np.float64 else np.dtype(np.float32)
    if any(a.dtype != pt for a in params):
        raise NotSupported("BatchNorm parameter dtype")
    rest = math.prod(x.shape[2:])
    return (x.shape[0], x.shape[1], rest, 1), pt


@_guard
def bn_forward(cp, ctx, p, inputs, aux, out=None):
    """BatchNorm forward on cuDNN: batch statistics in training (moving statistics
    updated with MXNet's momentum rule and the biased variance), else the moving ones."""
    return _bn_forward(cp, ctx, p, inputs, aux, out)


@_guard
def bn_relu_forward(cp, ctx, p, inputs, aux, out=None):
    """BatchNorm -> relu as one pass (the fusion table's GPU entry): ``out`` = [the
    relu's output, BatchNorm's mean, invstd]; the normalised values go through MXNet's
    relu before they are stored, so the pre-relu output is never written (its
    backward reads only the relu's output and the statistics). Channels-last data on
    pymxnet's kernels only; otherwise NotImplemented, and the two run apart."""
    return _bn_forward(cp, ctx, p, inputs, aux, out, relu=True)


bn_relu_forward.producer_outputs = True     # it writes BatchNorm's mean and invstd too


def _bn_forward(cp, ctx, p, inputs, aux, out=None, relu=False):
    x, gamma, beta = inputs
    mm, mv = aux
    _op("BatchNorm").infer_shape(p, [x.shape, gamma.shape, beta.shape, mm.shape, mv.shape])
    shape4, pt = _bn_check(p, x, (gamma, beta, mm, mv))
    c = x.shape[1]
    fin, fout = _flags(ctx, 0), _flags(ctx, 1)
    cl = (_flag(fin, 0) or _flag(fout, 0)) and x.ndim == 4
    if cl:          # channels-last: cuDNN's NHWC batch norm on NHWC views
        xc, shape4 = _cl_in(cp, x, _flag(fin, 0)), x.shape
    else:
        xc = _c(cp, x)
    scale = _ones(cp, c, pt) if p.fix_gamma else _c(cp, gamma)
    shift = _c(cp, beta)
    o = OutputBuffers(cp, out, 3, inputs + list(aux))
    yd = _ClDest(cp, o.get(0, x.shape, x.dtype), False, _flag(fout, 0)) if cl else None
    y = yd.view if cl else o.get(0, x.shape, x.dtype)
    mean, invstd = o.get(1, (c,), pt), o.get(2, (c,), pt)
    training = ctx.is_train and not p.use_global_stats
    if training and not (mm.flags.c_contiguous and mv.flags.c_contiguous):
        raise NotSupported("non-contiguous moving statistics")
    if cl and _own_channels_last_bn() and (
            NHWC.forward_training(cp, xc, y, scale, shift, p.eps, mean, invstd,
                                  (mm, mv, p.momentum), relu) if training else
            NHWC.forward_inference(cp, xc, y, scale, shift, _c(cp, mm), _c(cp, mv), p.eps,
                                   mean, invstd, relu)):
        pass                # pymxnet's NHWC kernels took it
    elif relu:              # (nothing written yet)
        raise NotSupported("BatchNorm -> relu fused on channels-last data only")
    elif training:
        K.bn_forward_training(xc.reshape(shape4), y.reshape(shape4), scale, shift, p.eps,
                              mean, invstd)
        _moving_update(cp, pt)(mean, invstd, pt.type(p.momentum), float(p.eps), mm, mv)
    else:
        mmc, mvc = _c(cp, mm), _c(cp, mv)
        K.bn_forward_inference(xc.reshape(shape4), y.reshape(shape4), scale, shift, mmc,
                               mvc, p.eps)
        mean[...] = mmc
        cp.divide(1.0, cp.sqrt(mvc + pt.type(p.eps)), out=invstd)
    if cl:
        yd.finish()
    return o.done()


@_guard
def bn_backward(cp, ctx, p, out_grads, inputs, outputs, aux, in_grad=None):
    """BatchNorm backward on cuDNN from the statistics the forward used (the training
    formula; use_global_stats keeps the CuPy body)."""
    return _bn_backward(cp, ctx, p, out_grads, inputs, outputs, in_grad)


@_guard
def bn_relu_backward(cp, ctx, p, out_grads, inputs, outputs, aux, in_grad=None):
    """BatchNorm -> relu's backward as BatchNorm's (executor/backward_fusion.py):
    ``out_grads[0]`` is the relu output's gradient; pymxnet's channels-last kernels
    mask it where the relu output (recomputed from x, the statistics and beta) is not
    positive. Anything else: NotImplemented, and the relu's and BatchNorm's backward
    run apart."""
    return _bn_backward(cp, ctx, p, out_grads, inputs, outputs, in_grad, relu=True)


def _bn_backward(cp, ctx, p, out_grads, inputs, outputs, in_grad, relu=False):
    dy, x, gamma = out_grads[0], inputs[0], inputs[1]
    mean, invstd = outputs[1], outputs[2]
    if p.use_global_stats or dy.dtype != x.dtype:
        return NotImplemented
    cl = ctx.layout is not None and x.ndim == 4
    if relu and not (cl and _own_channels_last_bn()):
        return NotImplemented
    shape4, pt = _bn_check(p, x, (gamma, mean, invstd))
    need = _need(ctx, 3)
    c = x.shape[1]
    scale = _ones(cp, c, pt) if p.fix_gamma else _c(cp, gamma)
    g = OutputBuffers(cp, in_grad, 3, [dy, x, gamma])
    if cl:
        # channels-last: x, dy and dx as NHWC views
        fog, fin, ftg = _flags(ctx, 0), _flags(ctx, 1), _flags(ctx, 3)
        xv, dyv = _cl_in(cp, x, _flag(fin, 0)), _cl_in(cp, dy, _flag(fog, 0))
        dxd = _ClDest(cp, g.get(0, x.shape, x.dtype), False, _flag(ftg, 0)) \
            if need[0] else None
        dxv = dxd.view if need[0] else None
    else:
        xv, dyv = _c(cp, x).reshape(shape4), _c(cp, dy).reshape(shape4)
        dxd = None
        dxv = (g.get(0, x.shape, x.dtype) if need[0] else
               cp.empty(x.shape, x.dtype)).reshape(shape4)
    dgamma = g.get(1, (c,), pt) if need[1] else cp.empty(c, pt)
    dbeta = g.get(2, (c,), pt) if need[2] else cp.empty(c, pt)
    mean, invstd = _c(cp, mean), _c(cp, invstd)
    if relu:
        if inputs[2] is None or not NHWC.backward(cp, xv, dyv, dxv, scale, mean, invstd,
                                                  dgamma, dbeta, _c(cp, inputs[2])):
            return NotImplemented       # nothing written: the two run apart
    elif not (cl and _own_channels_last_bn() and
              NHWC.backward(cp, xv, dyv, dxv, scale, mean, invstd, dgamma, dbeta)):
        if dxv is None:         # cuDNN writes dx always: a temporary nobody reads
            dxv = cp.empty_like(xv)
        K.bn_backward(xv, dyv, dxv, scale, dgamma, dbeta, p.eps, mean, invstd)
    if dxd is not None:
        dxd.finish()
    if p.fix_gamma:
        dgamma[...] = 0
    res = g.done()
    return [r if nd else None for r, nd in zip(res, need)]


# --- softmax / log_softmax -------------------------------------------------------------------
def _softmax_ok(p, x):
    return (x.dtype in _FLOATS and not p.use_length and p.temperature in (None, 1.0)
            and (p.dtype is None or np.dtype(p.dtype) == x.dtype) and x.ndim >= 1)


def _softmax_pair(log):
    name = "log_softmax" if log else "softmax"

    @_guard
    def forward(cp, ctx, p, inputs, aux, out=None):
        x = inputs[0]
        if not _softmax_ok(p, x):
            return NotImplemented
        from .nn.softmax import check_axis
        axis = check_axis(name, p.axis, x.ndim)
        x = _c(cp, x)
        o = OutputBuffers(cp, out, 1, [x])
        K.softmax_forward(x, o.get(0, x.shape, x.dtype, allow_alias=x), axis, log)
        return o.done()

    @_guard
    def backward(cp, ctx, p, out_grads, inputs, outputs, aux, in_grad=None):
        dy, y = out_grads[0], outputs[0]
        if not _softmax_ok(p, y) or dy.dtype != y.dtype:
            return NotImplemented
        axis = p.axis % y.ndim
        dy, y = _c(cp, dy), _c(cp, y)
        g = OutputBuffers(cp, in_grad, 1, [dy, y])
        K.softmax_backward(y, dy, g.get(0, y.shape, y.dtype), axis, log)
        return g.done()
    forward.__name__ = f"{name}_forward"
    backward.__name__ = f"{name}_backward"
    return forward, backward


# --- Activation ---------------------------------------------------------------------------------
_ACTS = ("relu", "sigmoid", "tanh")


@_guard
def act_forward(cp, ctx, p, inputs, aux, out=None):
    """Activation relu/sigmoid/tanh on cuDNN (in place when out is the input)."""
    x = inputs[0]
    if p.act_type not in _ACTS or not _same_float(x):
        return NotImplemented
    x = _c(cp, x)
    o = OutputBuffers(cp, out, 1, [x])
    K.act_forward(x, o.get(0, x.shape, x.dtype, allow_alias=x), p.act_type)
    return o.done()


@_guard
def act_backward(cp, ctx, p, out_grads, inputs, outputs, aux, in_grad=None):
    """Activation gradients from the output."""
    dy, y = out_grads[0], outputs[0]
    if p.act_type not in _ACTS or not _same_float(dy, y):
        return NotImplemented
    dy, y = _c(cp, dy), _c(cp, y)
    g = OutputBuffers(cp, in_grad, 1, [dy, y])
    # cuDNN allows dx == dy (identical descriptors): an in-place plan costs no copy
    K.act_backward(y, dy, g.get(0, y.shape, y.dtype, allow_alias=dy), p.act_type)
    return g.done()


OPS = {
    "Convolution": (conv_forward, conv_backward),
    "Deconvolution": (deconv_forward, deconv_backward),
    "Pooling": (pool_forward, pool_backward),
    "BatchNorm": (bn_forward, bn_backward),
    "softmax": _softmax_pair(False),
    "log_softmax": _softmax_pair(True),
    "Activation": (act_forward, act_backward),
}


# Backward kernels that add into destinations whose req is 'add' (``accumulates``: the
# executor hands them those destinations too, see operator/kernels.py): a convolution's
# data gradient summed over a ResNet block's two branches costs no extra pass.
for _fn in (conv_backward, deconv_backward):
    _fn.accumulates = True

# Adapters given bfloat16 arrays (cuDNN's BFLOAT16 data type, float32 compute; BatchNorm
# with float32 parameters and statistics); the others' bfloat16 calls run in float32.
# A configuration this cuDNN refuses for bfloat16 declines (one warning) and runs in
# float32 too.
for _fn in (conv_forward, conv_backward, pool_forward, pool_backward, bn_forward,
            bn_backward, act_forward, act_backward, bn_relu_forward, bn_relu_backward):
    _fn.bfloat16 = True


def _is_relu(p_act):
    """The ``relu`` operator (no parameters given) or Activation(act_type='relu')."""
    return p_act is None or getattr(p_act, "act_type", "relu") == "relu"


def _bn_relu_on(p_bn, p_act=None):
    """Whether executors fuse this BatchNorm -> relu (MXNET_GPU_BN_RELU_FUSION=0: never,
    for comparison)."""
    return os.environ.get("MXNET_GPU_BN_RELU_FUSION", "1").strip() != "0" and \
        _is_relu(p_act)


def _bn_relu_backward_on(p_bn, p_act=None):
    """Whether executors fold this pair's relu backward into BatchNorm's
    (MXNET_GPU_BN_RELU_BACKWARD_FUSION=1; off by default until a device run has
    measured it)."""
    return os.environ.get("MXNET_GPU_BN_RELU_BACKWARD_FUSION", "0").strip() == "1" and \
        not p_bn.use_global_stats and _is_relu(p_act)


def register_fusions(register_fusion, device="gpu", register_backward_fusion=None):
    """Register BatchNorm -> relu (the ``relu`` operator and Activation(relu)) as
    ``bn_relu_forward`` for ``device``, and (with ``register_backward_fusion``) its
    backward as ``bn_relu_backward``."""
    for second in ("relu", "Activation"):
        register_fusion("BatchNorm", second, device, bn_relu_forward, _bn_relu_on)
        if register_backward_fusion is not None:
            register_backward_fusion("BatchNorm", second, device, bn_relu_backward,
                                     _bn_relu_backward_on)
    return ["BatchNorm"]


def register_all(register_kernel, lookup_kernel=None, device="gpu"):
    """Register every adapter for ``device`` ('gpu'). A kernel already registered for
    the operator becomes the adapter's fallback (and then the pair does not take 'add'
    destinations: the fallback would overwrite them). Loads nothing (see the module
    docstring). Returns the names registered."""
    for name, pair in OPS.items():
        for backward, fn in zip((False, True), pair):
            prev = lookup_kernel(name, device, backward) if lookup_kernel else None
            register_kernel(name, device, fn if prev is None else _chain(fn, prev),
                            backward=backward)
    return list(OPS)

