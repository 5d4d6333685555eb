"""Pooling: max / avg / sum / lp pooling over 1-D, 2-D and 3-D windows (NCW/NCHW/NCDHW;
the channel-last layouts NWC/NHWC/NDHWC run as their channel-first twins on transposed
data).

Windows are read through the phase-split buffer of im2col.py: each kernel offset is one
long slice, so a pooling is K elementwise passes over output-sized arrays (K = kernel
size) and its backward K accumulating adds. Global pooling is a plain reduction.
"""
import functools
import itertools

import numpy as np

from ...base import MXNetError, is_float_dtype
from ..params import Bool, Enum, IntOrNone, Optional, Schema, Shape
from ..registry import Op, register
from .channel_last import FIRST as _FIRST, channel_first as _channel_first, \
    to_first as _to_first, to_last as _to_last
from .im2col import OptEnum, check_layout, spatial_tuple, windows

__all__ = ["Pooling"]

_LAYOUT = (None, "NCDHW", "NCHW", "NCW", "NDHWC", "NHWC", "NWC")


@functools.lru_cache(maxsize=1024)
def _geometry(p, dshape):
    """(kernel, stride, pad, out_size, is_global) for data of shape dshape."""
    name = "Pooling"
    if len(dshape) not in (3, 4, 5):
        raise MXNetError(f"{name}: input data should be 3-D (batch, channel, x), 4-D (batch, "
                         f"channel, y, x) or 5-D (batch, channel, d, y, x), got shape {dshape}")
    nd = len(dshape) - 2
    check_layout(name, p.layout, nd)
    spatial = tuple(dshape[2:])
    if p.global_pool:
        return spatial, (1,) * nd, (0,) * nd, (1,) * nd, True
    kernel = tuple(p.kernel)
    if len(kernel) != nd:
        raise MXNetError(f"{name}: a {len(kernel)}-D kernel {kernel} does not fit {nd}-D "
                         f"pooling of data with shape {dshape}" if kernel else
                         f"{name}: kernel is required unless global_pool=True")
    if any(k <= 0 for k in kernel):
        raise MXNetError(f"{name}: kernel must be positive in every dimension, got {kernel}")
    stride = spatial_tuple(name, "stride", p.stride, nd, 1)
    same = p.pooling_convention == "same"
    if same:
        # MXNet 1.9.1 has 'same' for 1-D data only, without padding: ceil(x / stride)
        # windows starting at 0, the last ones clipped at the end of the input
        if nd != 1:
            raise MXNetError(f"{name}: pooling_convention='same' supports 1-D pooling only "
                             f"(data of shape (batch, channel, x)), got shape {dshape}")
        if any(p.pad):
            raise MXNetError(f"{name}: pooling_convention='same' takes no pad, got "
                             f"pad={tuple(p.pad)}")
        pad = (0,)
    else:
        pad = spatial_tuple(name, "pad", p.pad, nd, 0, low=0)
    for d in range(nd):
        if pad[d] >= kernel[d]:
            # MXNet refuses windows that could lie wholly in the padding
            raise MXNetError(f"{name}: pad ({pad[d]}) must be smaller than kernel "
                             f"({kernel[d]}) in dim {d}")
    if p.pool_type == "lp" and p.p_value is None:
        raise MXNetError(f"{name}: p_value is required for pool_type='lp'")
    out = []
    for d in range(nd):
        size = spatial[d]
        if not size:
            out.append(None)
            continue
        if same:
            out.append(-(-size // stride[d]))
            continue
        if kernel[d] > size + 2 * pad[d]:
            raise MXNetError(f"{name}: kernel size ({kernel[d]}) exceeds input ({size} padded "
                             f"to {size + 2 * pad[d]}) in dim {d}")
        span = size + 2 * pad[d] - kernel[d]
        if p.pooling_convention == "full":
            out.append(-(-span // stride[d]) + 1)
        else:
            out.append(span // stride[d] + 1)
    out = tuple(out)
    if out == (1,) * nd and kernel == spatial and not any(pad):
        return kernel, stride, pad, out, True      # one window over everything
    return kernel, stride, pad, out, False


@functools.lru_cache(maxsize=256)
def _divisor(kernel, stride, pad, spatial, out, include_pad):
    """Per-output-position element counts of average pooling (MXNet's rule: windows are
    clipped at the end of the padded input; with include_pad=False also to the input)."""
    counts = []
    for k, s, p, n, o in zip(kernel, stride, pad, spatial, out):
        start = np.arange(o) * s - p
        end = np.minimum(start + k, n + p)
        if not include_pad:
            start, end = np.maximum(start, 0), np.minimum(end, n)
        counts.append(np.maximum(end - start, 1))
    div = counts[0]
    for c in counts[1:]:
        div = np.multiply.outer(div, c)
    return div


def _lowest(dtype):
    """What a max-pooling window with no input element gives (MXNet: the dtype's lowest
    finite value, not -inf)."""
    dtype = np.dtype(dtype)
    return np.finfo(dtype).min if dtype.kind == "f" else np.iinfo(dtype).min


# Samples per chunk of the padded-buffer paths: about this many bytes of buffer, so
# one chunk's buffer and its output-sized temporaries stay in L2 across the K passes.
_CHUNK_BYTES = 1024 << 10


def whole_batch(win, n, c, dtype):
    """Samples per pass of the padded-buffer paths: all of them (one launch per pass,
    what a GPU wants)."""
    return max(n, 1)


def cache_blocked(win, n, c, dtype):
    """Samples per pass on a CPU (the CPU kernel's primitive): few enough that one
    chunk's buffer and its temporaries stay in L2 across the K passes."""
    per = win.nphase * c * win.buflen * np.dtype(dtype).itemsize
    return max(1, min(n, _CHUNK_BYTES // max(per, 1)))


def _accumulates_wider(p, x, backward=False):
    """float16 sums (avg, sum, lp pooling and their gradients) accumulate in float32,
    as MXNet's kernels do (its AccType): in float16 a window's sum can round to exactly
    0 (lp's gradient divides by it) or overflow. So does max pooling's gradient, a sum
    of dy over the windows an element is the maximum of: in float16 it drifted about 1 %
    from the CPU's (whose float16 calls run in float32) where a 3-D window overlaps a
    hundred others (MXNet's test_pooling_versions on a GPU, cudnn_off)."""
    return x.dtype == np.float16 and (backward or p.pool_type != "max")


@register
class Pooling(Op):
    """Pool each channel's spatial windows: max, avg (with MXNet's count_include_pad
    rule), sum, or lp ((sum x^p)^(1/p), p_value 1, 2 or 3). pooling_convention 'valid'
    floors the output size, 'full' ceils it, 'same' (1-D only) gives ceil(x / stride)
    windows; global_pool pools the whole input
    (kernel/stride/pad are ignored). cudnn_off is accepted and has no effect on CPU."""
    name = "Pooling"
    float_only = True
    params = Schema(kernel=Shape(()), pool_type=Enum(("avg", "lp", "max", "sum"), "max"),
                    global_pool=Bool(False), cudnn_off=Bool(False),
                    pooling_convention=Enum(("full", "same", "valid"), "valid"),
                    stride=Shape(()), pad=Shape(()), p_value=IntOrNone(None),
                    count_include_pad=Optional(Bool()), layout=OptEnum(_LAYOUT, None))
    backward_uses = ("out_grad", "in_data", "out_data")
    resources = ("temp",)
    writes_outputs = True
    chunk = staticmethod(whole_batch)     # samples per pass (a CPU kernel swaps it)

    def infer_shape(self, p, in_shapes):
        d = in_shapes[0]
        if d is None:
            return [None], [None], []
        d = tuple(d)
        if p.layout in _FIRST and len(d) >= 3:
            _, (o,), _ = self.infer_shape(_channel_first(p), [d[:1] + d[-1:] + d[1:-1]])
            return [d], [None if o is None else o[:1] + o[2:] + o[1:2]], []
        _, _, _, out, _ = _geometry(p, d)
        if any(o is None for o in out):
            return [d], [None], []
        return [d], [d[:2] + out], []

    def infer_type(self, p, in_types):
        return [in_types[0]], [in_types[0]], []

    # --- forward ------------------------------------------------------------------------
    def forward(self, ctx, p, inputs, aux, out=None):
        if p.layout in _FIRST:      # fresh results: the runner writes them as req says
            xp = ctx.xp
            y = self.forward(ctx, _channel_first(p), [_to_first(xp, inputs[0])], aux)[0]
            return [_to_last(xp, y)]
        if _accumulates_wider(p, inputs[0]):
            y = self.forward(ctx, p, [inputs[0].astype(np.float32)], aux)[0]
            return [y.astype(np.float16)]
        dst = None if out is None else out[0]
        x = inputs[0]
        kernel, stride, pad, out, is_global = _geometry(p, tuple(x.shape))
        if p.pool_type == "lp" and p.p_value not in (1, 2, 3):
            raise MXNetError(f"Pooling: p_value must be 1, 2 or 3, got {p.p_value}")
        if is_global:
            return [self._global(ctx.xp, p, x)]
        win = windows(x.shape[2:], kernel, stride, (1,) * len(kernel), pad, out)
        if p.pool_type == "lp" and p.p_value != 1:
            x = x ** p.p_value
        if _direct(win):
            y = _reduce_views(ctx.xp, _views(win, x), p.pool_type == "max",
                              x.shape[:2] + out, x.dtype, dst)
            if p.pool_type == "avg":
                y /= win.K
            elif p.pool_type == "lp":
                y = _root(ctx.xp, y, p.p_value)
            return [y]
        fill = _lowest(x.dtype) if p.pool_type == "max" else 0
        acc = self._reduce_windows(ctx, win, x, fill, p.pool_type == "max")
        y = win.from_ext(acc, x.shape[0], channel_major=False)
        if p.pool_type == "avg":
            div = self._div(ctx.xp, p, kernel, stride, pad, x.shape, out, x.dtype)
            y = (y / div).astype(x.dtype, copy=False)
        elif p.pool_type == "lp":
            y = _root(ctx.xp, y, p.p_value)
        elif not win.exact:
            y = y.copy()            # acc is fresh; only a cropped view needs a copy
        return [y]

    def _reduce_windows(self, ctx, win, x, fill, is_max):
        """max or sum over the kernel windows, on the extended grid: (N, C, L). Done a
        few samples at a time so the padded buffer and the accumulator stay in cache
        across the K passes (about half the time of whole-batch passes on CPU)."""
        xp = ctx.xp
        n, c = x.shape[:2]
        acc = xp.empty((n, c, win.L), dtype=x.dtype)
        nb = self.chunk(win, n, c, x.dtype)
        buf, free = ctx.temp_space(win.buffer_shape(nb, c), x.dtype)
        op = xp.maximum if is_max else xp.add
        try:
            for n0 in range(0, n, nb):
                m = min(nb, n - n0)
                b = win.scatter(x[n0:n0 + m], buf[:, :m], fill)
                a = acc[n0:n0 + m]
                if win.K == 1:
                    a[...] = win.window(b, 0)
                    continue
                op(win.window(b, 0), win.window(b, 1), out=a)
                for k in range(2, win.K):
                    op(a, win.window(b, k), out=a)
        finally:
            free()
        return acc

    def _div(self, xp, p, kernel, stride, pad, shape, out, dtype):
        include = p.count_include_pad is None or p.count_include_pad
        div = _divisor(kernel, stride, pad, tuple(shape[2:]), out, include)
        return xp.asarray(div.astype(dtype if is_float_dtype(dtype) else np.float64))

    def _global(self, xp, p, x):
        n, c = x.shape[:2]
        flat = x.reshape(n, c, -1)
        nd = x.ndim - 2
        if p.pool_type == "max":
            y = flat.max(axis=2)
        elif p.pool_type == "lp" and p.p_value != 1:
            y = _root(xp, (flat ** p.p_value).sum(axis=2), p.p_value)
        else:
            y = flat.sum(axis=2)
            if p.pool_type == "avg":
                y = (y / flat.shape[2]).astype(x.dtype, copy=False)
        return y.reshape((n, c) + (1,) * nd)

    # --- backward -----------------------------------------------------------------------
    def backward(self, ctx, p, out_grads, inputs, outputs, aux, in_grad=None):
        xp = ctx.xp
        if p.layout in _FIRST:
            dx = self.backward(ctx, _channel_first(p), [_to_first(xp, out_grads[0])],
                               [_to_first(xp, inputs[0])], [_to_first(xp, outputs[0])], aux)
            return [_to_last(xp, dx[0])]
        x, y, dy = inputs[0], outputs[0], out_grads[0]
        if _accumulates_wider(p, x, backward=True):
            f32 = [a.astype(np.float32) for a in (dy, x, y)]
            dx = self.backward(ctx, p, f32[:1], f32[1:2], f32[2:], aux)[0]
            return [dx.astype(np.float16)]
        # dx is written while dy is still read: never into dy's own buffer ('inplace')
        dst = in_grad[0] if in_grad is not None and ctx.req[0] == "write" else None
        kernel, stride, pad, out, is_global = _geometry(p, tuple(x.shape))
        pt = p.pool_type
        if is_global:
            return [self._global_backward(xp, p, x, y, dy)]
        win = windows(x.shape[2:], kernel, stride, (1,) * len(kernel), pad, out)
        if pt == "max":
            return [self._max_backward(ctx, win, x, y, dy, dst)]
        if pt == "avg":
            dy = dy / self._div(xp, p, kernel, stride, pad, x.shape, out, dy.dtype)
        elif pt == "lp" and p.p_value != 1:
            # d/dx_i (sum x^p)^(1/p) = x_i^(p-1) / y^(p-1)
            dy = dy / y ** (p.p_value - 1)
        dx = self._spread(ctx, win, dy.astype(x.dtype, copy=False), x.shape, dst)
        if pt == "lp" and p.p_value != 1:
            dx *= x ** (p.p_value - 1)
        return [dx]

    def _on_ext(self, win, a, ext):
        """a (m, c, *out) on the extended grid (m, c, L): a view when the grid is exact,
        else copied into the first m rows of ext."""
        m, c = a.shape[:2]
        if win.exact:
            return a.reshape(m, c, win.L)
        return win.to_ext(a, ext[:m], channel_major=False)

    def _spread(self, ctx, win, g, shape, dx=None):
        """dx[i] = sum of g over the windows containing i (sum pooling's adjoint)."""
        xp = ctx.xp
        n, c = shape[:2]
        if _direct(win):
            dx = _grad_buffer(xp, win, shape, g.dtype, dx)
            for view in _views(win, dx):
                view[...] = g
            return dx
        nb = self.chunk(win, n, c, g.dtype)
        if dx is None:
            dx = xp.empty(shape, dtype=g.dtype)
        frees = []
        try:
            dbuf, fr = ctx.temp_space(win.buffer_shape(nb, c), g.dtype)
            frees.append(fr)
            ext = None
            if not win.exact:
                ext, fr = ctx.temp_space((nb, c, win.L), g.dtype)
                frees.append(fr)
            for n0 in range(0, n, nb):
                m = min(nb, n - n0)
                ge = self._on_ext(win, g[n0:n0 + m], ext)
                db = dbuf[:, :m]
                db.fill(0)
                for k in range(win.K):
                    view = win.window(db, k)
                    if _disjoint(win):
                        view[...] = ge
                    else:
                        view += ge
                win.gather(db, dx[n0:n0 + m])
        finally:
            for fr in frees:
                fr()
        return dx

    def _max_backward(self, ctx, win, x, y, dy, dx=None):
        """The gradient goes to the first maximum of each window (kernel order)."""
        xp = ctx.xp
        n, c = x.shape[:2]
        if _direct(win):
            dx = _grad_buffer(xp, win, x.shape, dy.dtype, dx)
            _first_max_grads(xp, _views(win, x), y, dy, _views(win, dx), None)
            return dx
        nb = self.chunk(win, n, c, x.dtype)
        if dx is None:
            dx = xp.empty(x.shape, dtype=dy.dtype)
        lowest = _lowest(x.dtype)
        frees = []

        def temp(shape, dtype):
            a, fr = ctx.temp_space(shape, dtype)
            frees.append(fr)
            return a
        try:
            buf = temp(win.buffer_shape(nb, c), x.dtype)
            dbuf = temp(win.buffer_shape(nb, c), dy.dtype)
            yext = gext = contrib = None
            if not win.exact:
                yext, gext = temp((nb, c, win.L), y.dtype), temp((nb, c, win.L), dy.dtype)
            if not _disjoint(win):
                contrib = temp((nb, c, win.L), dy.dtype)
            first_of_phase = _first_of_phase(win)
            for n0 in range(0, n, nb):
                m = min(nb, n - n0)
                b = win.scatter(x[n0:n0 + m], buf[:, :m], lowest)
                db = dbuf[:, :m]
                db.fill(0)
                _first_max_grads(xp, (win.window(b, k) for k in range(win.K)),
                                 self._on_ext(win, y[n0:n0 + m], yext),
                                 self._on_ext(win, dy[n0:n0 + m], gext),
                                 (win.window(db, k) for k in range(win.K)),
                                 None if contrib is None else contrib[:m], first_of_phase)
                win.gather(db, dx[n0:n0 + m])
        finally:
            for fr in frees:
                fr()
        return dx

    def _global_backward(self, xp, p, x, y, dy):
        n, c = x.shape[:2]
        flat = x.reshape(n, c, -1)
        g = dy.reshape(n, c, 1)
        pt = p.pool_type
        if pt == "max":
            first = flat.argmax(axis=2)[..., None]
            dx = (xp.arange(flat.shape[2]) == first) * g
        elif pt == "lp" and p.p_value != 1:
            dx = g / y.reshape(n, c, 1) ** (p.p_value - 1) * flat ** (p.p_value - 1)
        else:
            dx = xp.empty(flat.shape, dtype=dy.dtype)
            dx[...] = g / flat.shape[2] if pt == "avg" else g
        return dx.astype(dy.dtype, copy=False).reshape(x.shape)


def _first_of_phase(win):
    """The kernel offsets that are the first to touch their stride phase of the buffer:
    their gradient views hold only zeros yet, so they can be written, not accumulated."""
    seen, first = set(), set()
    for k, (phase, _) in enumerate(win.offsets):
        if phase not in seen:
            seen.add(phase)
            first.add(k)
    return frozenset(first)


def _first_max_grads(xp, windows_x, y, dy, windows_dx, contrib, write=frozenset()):
    """Give dy to the first maximum of each window, kernel offset by offset: windows_dx
    are written (contrib is None: disjoint windows, or k in write: the view still holds
    only zeros) or accumulated through contrib.
    Branch-free bool logic: masked (where=) loops are slow on irregular masks."""
    eq = xp.empty(y.shape, dtype=bool)
    first = xp.empty(y.shape, dtype=bool)
    taken = None
    for k, (wx, wd) in enumerate(zip(windows_x, windows_dx)):
        if taken is None:                       # the first offset takes every hit
            xp.equal(wx, y, out=first)
            taken = first.copy()
        else:
            xp.equal(wx, y, out=eq)
            xp.greater(eq, taken, out=first)    # a maximum no earlier offset took
            xp.logical_or(taken, eq, out=taken)
        if contrib is None or k in write:
            xp.multiply(dy, first, out=wd)
        else:
            xp.multiply(dy, first, out=contrib)
            wd += contrib


def _direct(win):
    """Windows that are disjoint and inside the unpadded input: they are plain strided
    views of it, no padded buffer needed."""
    return not any(win.pad) and _disjoint(win) and all(
        (o - 1) * s + k <= n for o, s, k, n in zip(win.out_size, win.stride, win.kernel,
                                                  win.in_size))


def _views(win, a):
    """The strided view of a (N, C, *in) that each kernel offset reads (direct case)."""
    for idx in itertools.product(*(range(k) for k in win.kernel)):
        yield a[(Ellipsis,) + tuple(slice(i, i + s * (o - 1) + 1, s) for i, s, o in
                                    zip(idx, win.stride, win.out_size))]


def _reduce_views(xp, views, is_max, shape, dtype, acc=None):
    if acc is None:
        acc = xp.empty(shape, dtype=dtype)
    views = list(views)
    op = xp.maximum if is_max else xp.add
    if len(views) == 1:
        acc[...] = views[0]
    else:
        op(views[0], views[1], out=acc)
    for v in views[2:]:
        op(acc, v, out=acc)
    return acc


def _grad_buffer(xp, win, shape, dtype, dx=None):
    """dx for the direct case (``dx`` when given): zeroed unless the windows tile the
    input exactly."""
    tiled = all(k == s and o * s == n for k, s, o, n in zip(win.kernel, win.stride,
                                                         win.out_size, win.in_size))
    if dx is None:
        return xp.empty(shape, dtype=dtype) if tiled else xp.zeros(shape, dtype=dtype)
    if not tiled:
        dx.fill(0)
    return dx


def _disjoint(win):
    """No input element lies in two windows."""
    return all(k <= s for k, s in zip(win.kernel, win.stride))


def _root(xp, s, p):
    if p == 1:
        return s.copy()
    if p == 2:
        return xp.sqrt(s)
    return xp.cbrt(s)
