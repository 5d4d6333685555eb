"""Sliding windows for the windowed operators (Convolution, Deconvolution, Pooling,
bilinear UpSampling): im2col / col2im over contiguous buffers, and the GEMM kernels of
convolution built on them. Every function takes ``xp`` (NumPy or CuPy) through the
operator context, so one body serves CPU and GPU.

The layout trick. The input (N, C, *spatial) is copied once into a padded buffer split
by stride phase::

    buf[phase, n, c, :]   the padded spatial data of one stride residue, flattened

(stride 1 has a single phase: the buffer is just the padded input). In that buffer every
kernel offset k reads, for every output position of every (n, c) at once, ONE slice
``buf[phase_k, :, :, shift_k : shift_k + L]``, where positions run over an *extended*
output grid whose inner rows are as wide as the buffer's rows. Convolution pads the last
dim only virtually and masks the reads that wrap into a neighbouring row, so for
same-padded convolutions the extended grid is exactly the output; otherwise the columns
past the output width are garbage, cropped from results and kept zero in gradients.
So im2col is one strided copy per stride phase and col2im one long-run add per kernel
offset: no per-pixel work, and memory moves in runs of a whole (n, c) plane instead of
one output row at a time, which is what makes NumPy's strided copies fast. Batches are
processed in chunks whose columns stay in cache between the copy and the GEMM.
"""
import functools
import itertools
import math

import numpy as np

from ...base import MXNetError
from ..params import Enum, Optional
from .channel_sums import channel_sum, row_sum

__all__ = ["Windows", "windows", "spatial_tuple", "check_layout", "conv_forward",
           "conv_backward", "pointwise", "OptEnum", "known", "DEFAULT_WORKSPACE_MB"]

DEFAULT_WORKSPACE_MB = 1024


def _prod(xs):
    return int(math.prod(xs))


class Windows:
    """The geometry of one windowed operator on one input size.

    ``in_size``: spatial input size; ``pad``: padding before each spatial dim (the
    padding after is whatever the output size needs); ``out_size``: number of window
    positions per dim (given, so 'full' pooling and deconvolution's adj/target_shape fit
    the same code).

    ``masked=False`` pads every dim physically with the fill value (what pooling needs:
    every read of padding sees the fill). ``masked=True`` (convolution) pads the last dim
    only virtually: rows are stored unpadded, a read past a row's end wraps into the
    neighbouring row, and ``mask`` zeroes those entries of the columns. Then the rows of
    the extended grid are exactly the output rows whenever the output is as wide as the
    input per stride (same-padded convolutions), so no garbage columns are computed.
    """

    def __init__(self, in_size, kernel, stride, dilate, pad, out_size, masked=False):
        self.in_size, self.kernel, self.stride = tuple(in_size), tuple(kernel), tuple(stride)
        self.dilate, self.pad, self.out_size = tuple(dilate), tuple(pad), tuple(out_size)
        nd = len(kernel)
        last = nd - 1
        # physical padding before each dim, and the extent of one phase per dim
        ppad = [0 if (masked and d == last) else pad[d] for d in range(nd)]
        q = []
        for d in range(nd):
            s, span = stride[d], (kernel[d] - 1) * dilate[d] + 1
            if ppad[d] != pad[d]:
                q.append(max(-(-in_size[d] // s), out_size[d]))
            else:
                need = max(pad[d] + in_size[d], (out_size[d] - 1) * s + span)
                q.append(-(-need // s))
        self.phase_shape = tuple(q)
        self.plane = _prod(q)
        self.nphase = _prod(stride)
        self.ext = (out_size[0],) + tuple(q[1:])  # the extended output grid
        self.L = _prod(self.ext)
        self.exact = self.ext == self.out_size   # no garbage columns
        flat = [_prod(q[d + 1:]) for d in range(nd)]
        raw = []
        for idx in itertools.product(*(range(k) for k in kernel)):
            phase = shift = 0
            for d, i in enumerate(idx):
                a = i * dilate[d] + ppad[d] - pad[d]    # read position relative to storage
                phase = phase * stride[d] + a % stride[d]
                shift += (a // stride[d]) * flat[d]
            raw.append((phase, shift))
        self.lead = max(0, -min(sh for _, sh in raw))   # room for reads before row 0
        self.offsets = tuple((ph, sh + self.lead) for ph, sh in raw)
        self.groups = self._phase_groups(ppad, flat)
        self.K = len(raw)
        self.buflen = max(self.lead + self.plane, self.L + max(sh for _, sh in self.offsets))
        # Where the input lands in each phase: (phase, phase-array slices, input slices).
        places = []
        for r in itertools.product(*(range(s) for s in stride)):
            dst, src, phase = [], [], 0
            for d, rd in enumerate(r):
                phase = phase * stride[d] + rd
                h0 = (rd - ppad[d]) % stride[d]
                cnt = len(range(h0, in_size[d], stride[d]))
                a0 = (h0 + ppad[d]) // stride[d]
                dst.append(slice(a0, a0 + cnt))
                src.append(slice(h0, None, stride[d]))
            if all(s.stop > s.start for s in dst):
                places.append((phase, (Ellipsis,) + tuple(dst), (Ellipsis,) + tuple(src)))
        self.places = tuple(places)
        # The stored plane is exactly the input: one phase, no physical padding.
        self.identity = self.nphase == 1 and self.phase_shape == self.in_size and \
            not any(ppad)
        # Masked reads: for each last-dim kernel index, the ranges of extended-grid
        # columns whose read falls outside the input row.
        masks = []
        if masked:
            s, d, p, w = stride[last], dilate[last], pad[last], in_size[last]
            for j in range(kernel[last]):
                a = j * d - p
                left = min(max(0, -(a // s)), q[last])          # ow*s + a < 0
                right = max(0, -(-(w - a) // s))                  # ow*s + a >= w
                ranges = []
                if left > 0:
                    ranges.append(slice(0, left))
                if right < q[last]:
                    ranges.append(slice(max(right, left), q[last]))
                if ranges:
                    masks.append((j, tuple(ranges)))
        self.masks = tuple(masks)

    def _phase_groups(self, ppad, flat):
        """The kernel offsets that read one stride phase form a strided sub-grid of the
        kernel whose reads are equally spaced too, so im2col copies each phase's offsets
        with ONE strided view: [(phase, kernel slices, first shift, shift steps)]."""
        per_dim = []
        for d, k in enumerate(self.kernel):
            s = self.stride[d]
            by_res = {}
            for i in range(k):
                a = i * self.dilate[d] + ppad[d] - self.pad[d]
                by_res.setdefault(a % s, []).append((i, a // s))
            per_dim.append(sorted(by_res.items()))
        groups = []
        for combo in itertools.product(*per_dim):
            phase, sl, first, steps = 0, [], self.lead, []
            for d, (res, members) in enumerate(combo):
                phase = phase * self.stride[d] + res
                (i0, q0), n = members[0], len(members)
                istep, qstep = (members[1][0] - i0, members[1][1] - q0) if n > 1 else (1, 0)
                sl.append(slice(i0, i0 + istep * n, istep))
                first += q0 * flat[d]
                steps.append(qstep * flat[d])
            groups.append((phase, tuple(sl), first, tuple(steps)))
        return tuple(groups)

    def mask(self, col):
        """Zero the column entries (C, K, n, L) whose reads fell outside the input."""
        if not self.masks:
            return col
        c, n = col.shape[0], col.shape[2]
        nd = len(self.kernel)
        v = col.reshape((c,) + self.kernel + (n,) + self.ext)
        for j, ranges in self.masks:
            for r in ranges:
                v[(slice(None),) * nd + (j,) + (slice(None),) * nd + (r,)] = 0
        return col

    # --- the padded, phase-split buffer ---------------------------------------------
    def buffer_shape(self, n, c):
        return (self.nphase, n, c, self.buflen)

    def _plane(self, buf, phase, n, c):
        lo = self.lead
        return buf[phase, :, :, lo:lo + self.plane].reshape((n, c) + self.phase_shape)

    def scatter(self, x, buf, fill=0):
        """Copy x (N, C, *in_size) into buf, padding with ``fill``."""
        n, c = x.shape[:2]
        if self.identity:
            lo, hi = self.lead, self.lead + self.plane
            buf[0, :, :, :lo] = fill
            buf[0, :, :, lo:hi] = x.reshape(n, c, self.plane)
            buf[0, :, :, hi:] = fill
            return buf
        buf.fill(fill)
        for phase, dst, src in self.places:
            self._plane(buf, phase, n, c)[dst] = x[src]
        return buf

    def gather(self, buf, out):
        """The inverse of scatter (for gradients): write buf's interior into out."""
        n, c = out.shape[:2]
        if self.identity:
            out.reshape(n, c, self.plane)[...] = buf[0, :, :, self.lead:self.lead + self.plane]
            return out
        for phase, dst, src in self.places:
            out[src] = self._plane(buf, phase, n, c)[dst]
        return out

    def window(self, buf, k, n0=None, n1=None):
        """Kernel offset k's view of buf over the extended grid: (N, C, L)."""
        phase, shift = self.offsets[k]
        return buf[phase, n0:n1, :, shift:shift + self.L]

    # --- columns ------------------------------------------------------------------------
    def im2col(self, xp, buf, col, n0, n1):
        """col (C, K, n1-n0, L) <- the windows of samples n0..n1 of buf: one strided
        copy per stride phase."""
        c, n = col.shape[0], n1 - n0
        col_k = col.reshape((c,) + self.kernel + (n, self.L))
        item = buf.itemsize
        st = buf.strides
        # NumPy's as_strided costs ~8 us a view (it goes through __array_interface__);
        # a view made directly on the contiguous buffer costs under 1 (and NumPy checks
        # that it stays inside the buffer)
        direct = xp is np and buf.flags.c_contiguous
        for phase, sl, first, steps in self.groups:
            dst = col_k[(slice(None),) + sl]
            strides = (st[2],) + tuple(q * item for q in steps) + (st[1], item)
            if direct:
                src = np.ndarray(dst.shape, buf.dtype, buf,
                                 phase * st[0] + n0 * st[1] + first * item, strides)
            else:
                src = xp.lib.stride_tricks.as_strided(buf[phase, n0:n1, :, first:],
                                                      dst.shape, strides)
            dst[...] = src
        return col

    def col2im(self, col, buf, n0, n1):
        """buf += the windows in col (C, K, n1-n0, L) (the adjoint of im2col)."""
        for k in range(self.K):
            view = self.window(buf, k, n0, n1)
            view += col[:, k].transpose(1, 0, 2)
        return buf

    # --- the extended output grid -------------------------------------------------
    def _crop(self):
        return tuple(slice(0, o) for o in self.out_size)

    def to_ext(self, y, dst, channel_major=True):
        """Copy y (n, F, *out_size) onto the extended grid with zero garbage columns:
        into dst (F, n, L) if channel_major else (n, F, L)."""
        n, f = y.shape[:2]
        lead = (f, n) if channel_major else (n, f)
        e = dst.reshape(lead + self.ext)
        for d in range(1, len(self.ext)):
            if self.ext[d] > self.out_size[d]:
                e[(slice(None),) * (2 + d) + (slice(self.out_size[d], None),)] = 0
        src = y.transpose((1, 0) + tuple(range(2, y.ndim))) if channel_major else y
        e[(slice(None), slice(None)) + self._crop()] = src
        return dst

    def from_ext(self, src, n, channel_major=True):
        """View of src (F, n, L) or (n, F, L) as (n, F, *out_size) (no copy)."""
        lead = (-1, n) if channel_major else (n, -1)
        e = src.reshape(lead + self.ext)[(slice(None), slice(None)) + self._crop()]
        return e.transpose((1, 0) + tuple(range(2, e.ndim))) if channel_major else e

    def gather_index(self, channels, batch=None):
        """(channels * K, prod(out_size)) int positions into one sample's flattened
        input (channels, *in_size) followed by one zero: the columns of im2col as a
        single gather, reads of the padding pointing at the zero (made once per
        channel count). With ``batch``: the positions of that many samples' columns in
        their inputs laid end to end, flattened (the scatter-add of the gradient)."""
        cache = self.__dict__.setdefault("_gather", {})
        if len(cache) > 8:          # (a few batch sizes at most: each up to 512 KB)
            cache.clear()
        if batch is not None:
            idx = cache.get((channels, batch))
            if idx is None:
                size = channels * _prod(self.in_size) + 1
                idx = cache[(channels, batch)] = (
                    self.gather_index(channels)[None] +
                    (np.arange(batch) * size)[:, None, None]).ravel()
            return idx
        idx = cache.get(channels)
        if idx is None:
            nd = len(self.kernel)
            plane = _prod(self.in_size)
            # per dim: input position of kernel tap t at output position o, (k_d, o_d)
            pos = [np.arange(k)[:, None] * dl + np.arange(o)[None, :] * st - pd
                   for k, o, st, dl, pd in zip(self.kernel, self.out_size, self.stride,
                                                self.dilate, self.pad)]
            flat = np.zeros((1,) * (2 * nd), np.int64)
            valid = np.ones((1,) * (2 * nd), bool)
            for d, pd_ in enumerate(pos):
                # axes: taps k_0..k_{nd-1}, then outputs o_0..o_{nd-1}
                shape = [1] * (2 * nd)
                shape[d], shape[nd + d] = pd_.shape
                pd_ = pd_.reshape(shape)
                flat = flat * self.in_size[d] + pd_
                valid = valid & (pd_ >= 0) & (pd_ < self.in_size[d])
            flat = np.where(valid, flat, -1).reshape(self.K, -1)
            chan = np.arange(channels)[:, None, None] * plane
            idx = np.where(flat[None] >= 0, chan + flat[None], channels * plane)
            idx = cache[channels] = np.ascontiguousarray(
                idx.reshape(channels * self.K, -1).astype(np.intp))
        return idx


@functools.lru_cache(maxsize=512)
def windows(in_size, kernel, stride, dilate, pad, out_size, masked=False):
    """The (cached) Windows for one geometry."""
    return Windows(in_size, kernel, stride, dilate, pad, out_size, masked)


# --- parameter helpers shared by the windowed operators ----------------------------------
def OptEnum(choices, default=None):
    """One of ``choices`` (None among them is dropped) or None."""
    return Optional(Enum(tuple(c for c in choices if c is not None)), default)


def known(shape):
    """True when shape is given and every dim is known (0 or None mark unknown dims)."""
    return shape is not None and all(d for d in shape)


def spatial_tuple(opname, name, value, nd, default, low=1):
    """A per-spatial-dim parameter: ``default`` repeated when not given, else a tuple of
    exactly nd values, each >= low."""
    if value is None or len(value) == 0:
        return (default,) * nd
    value = tuple(int(v) for v in value)
    if len(value) != nd:
        raise MXNetError(f"{opname}: {name} must have the same number of dimensions as "
                         f"kernel ({nd}), got {name}={value}")
    if any(v < low for v in value):
        raise MXNetError(f"{opname}: incorrect {name} {value}: every value must be >= {low}")
    return value


_LAYOUTS = {1: "NCW", 2: "NCHW", 3: "NCDHW"}


def check_groups(opname, num_filter, num_group, channels):
    """Filters and input channels must split evenly into num_group groups."""
    if num_group <= 0 or num_filter <= 0:
        raise MXNetError(f"{opname}: num_filter and num_group must be positive, got "
                         f"num_filter={num_filter}, num_group={num_group}")
    if num_filter % num_group:
        raise MXNetError(f"{opname}: num_filter ({num_filter}) must be divisible by "
                         f"num_group ({num_group})")
    if channels and channels % num_group:
        raise MXNetError(f"{opname}: input channels ({channels}) must be divisible by "
                         f"num_group ({num_group})")


def check_layout(opname, layout, nd):
    """Only channel-first layouts are implemented (as on MXNet's CPU)."""
    if layout is None:
        return
    if layout != _LAYOUTS.get(nd):
        if layout in _LAYOUTS.values():
            raise MXNetError(f"{opname}: layout {layout} does not match a {nd}-D "
                             f"{'kernel' if nd else 'input'} (expected {_LAYOUTS.get(nd)})")
        raise MXNetError(f"{opname}: layout {layout} is not supported (only NCW, NCHW and "
                         "NCDHW are; channel-last layouts were GPU-only in MXNet)")


# --- convolution kernels ---------------------------------------------------------------
# Column chunks of about this many bytes stay in cache between im2col and the GEMM
# that reads them (and between the GEMM and col2im); MXNet's ``workspace`` caps it.
CHUNK_BYTES = 4 << 20


def _chunk(n, per_sample_elems, itemsize, workspace_mb):
    """Samples per im2col chunk: about CHUNK_BYTES of columns, within the workspace."""
    budget = min(max(int(workspace_mb), 1) << 20, CHUNK_BYTES)
    return max(1, min(n, budget // max(per_sample_elems * itemsize, 1)))


def _gemm(xp, a, b, out, groups):
    """out = a @ b for each group: a (G, M, K), b (G, K, n), out (G, M, n); a plain
    2-D GEMM when there is one group."""
    if groups == 1:
        return xp.matmul(a[0], b[0], out=out[0])
    return xp.matmul(a, b, out=out)


def _conv_forward(ctx, win, x, weight, groups, bias=None, workspace=DEFAULT_WORKSPACE_MB,
                  out=None):
    """Grouped N-d convolution (cross-correlation): x (N, C, *in) with weight
    (F, C/groups, *kernel) -> (N, F, *out) [+ bias], by im2col and one GEMM per group
    per batch chunk; written into ``out`` when given."""
    xp = ctx.xp
    n, c = x.shape[:2]
    f = weight.shape[0]
    K, L = win.K, win.L
    dt = x.dtype
    if out is None:
        out = xp.empty((n, f) + win.out_size, dtype=dt)
    buf, free_buf = ctx.temp_space(win.buffer_shape(n, c), dt)
    try:
        win.scatter(x, buf)
        nb = _chunk(n, c * K * L + f * L, dt.itemsize, workspace)
        colflat, free_col = ctx.temp_space((c * K * nb * L,), dt)
        yflat, free_y = ctx.temp_space((f * nb * L,), dt)
        try:
            wmat = weight.reshape(groups, f // groups, -1)
            bshape = (1, f) + (1,) * len(win.out_size)
            for n0 in range(0, n, nb):
                m = min(nb, n - n0)
                col = colflat[:c * K * m * L].reshape(c, K, m, L)
                win.mask(win.im2col(xp, buf, col, n0, n0 + m))
                y = yflat[:f * m * L].reshape(f, m * L)
                _gemm(xp, wmat, col.reshape(groups, -1, m * L),
                      y.reshape(groups, -1, m * L), groups)
                res = win.from_ext(y, m)
                if bias is not None:
                    xp.add(res, bias.reshape(bshape), out=out[n0:n0 + m])
                else:
                    out[n0:n0 + m] = res
        finally:
            free_y()
            free_col()
    finally:
        free_buf()
    return out


def _conv_backward(ctx, win, dy, x, weight, groups, need_data=True, need_weight=True,
                   need_bias=False, in_shape=None, workspace=DEFAULT_WORKSPACE_MB,
                   dx_out=None):
    """Gradients of conv_forward: (dx, dweight, dbias), each None when not needed;
    dx is written into ``dx_out`` when given.

    dy (N, F, *out); x (N, C, *in) is read only for dweight; in_shape gives x's shape
    when x is None. dx = col2im(W^T dy), dweight = dy im2col(x)^T, dbias = sum of dy.
    """
    xp = ctx.xp
    n, f = dy.shape[:2]
    in_shape = tuple(x.shape) if x is not None else tuple(in_shape)
    c = in_shape[1]
    K, L = win.K, win.L
    dt = dy.dtype
    cg = c // groups
    nb = _chunk(n, c * K * L + f * L, dt.itemsize, workspace)
    frees = []
    try:
        colflat, fr = ctx.temp_space((c * K * nb * L,), dt)
        frees.append(fr)
        dyflat, fr = ctx.temp_space((f * nb * L,), dt)
        frees.append(fr)
        if need_weight:
            xbuf, fr = ctx.temp_space(win.buffer_shape(n, c), dt)
            frees.append(fr)
            win.scatter(x, xbuf)
            dwt = xp.empty((groups, cg * K, f // groups), dtype=dt)
            part = None
        if need_data:
            dbuf, fr = ctx.temp_space(win.buffer_shape(n, c), dt)
            frees.append(fr)
            dbuf.fill(0)
            wt = weight.reshape(groups, f // groups, cg * K).transpose(0, 2, 1)
        db = xp.zeros((f,), dtype=dt) if need_bias else None
        for n0 in range(0, n, nb):
            m = min(nb, n - n0)
            dye = dyflat[:f * m * L].reshape(f, m * L)
            win.to_ext(dy[n0:n0 + m], dye)
            if need_bias:       # garbage columns are zero; rows are contiguous
                db += row_sum(xp, dye)
            dyg = dye.reshape(groups, f // groups, m * L)
            col = colflat[:c * K * m * L].reshape(c, K, m, L)
            colg = col.reshape(groups, cg * K, m * L)
            if need_weight:
                win.mask(win.im2col(xp, xbuf, col, n0, n0 + m))
                # dweight^T = col dy^T: the long output side first suits BLAS better
                if n0 == 0:
                    _gemm(xp, colg, dyg.transpose(0, 2, 1), dwt, groups)
                else:
                    if part is None:
                        part = xp.empty_like(dwt)
                    _gemm(xp, colg, dyg.transpose(0, 2, 1), part, groups)
                    dwt += part
            if need_data:
                _gemm(xp, wt, dyg, colg, groups)
                win.col2im(win.mask(col), dbuf, n0, n0 + m)
        dx = None
        if need_data:
            dx = win.gather(dbuf, xp.empty(in_shape, dtype=dt) if dx_out is None else dx_out)
        dweight = None
        if need_weight:
            dweight = xp.ascontiguousarray(dwt.transpose(0, 2, 1)).reshape(
                weight.shape if weight is not None else (f, cg) + win.kernel)
    finally:
        for fr in frees:
            fr()
    return dx, dweight, db


# --- pointwise (1x1, unpadded) convolution ---------------------------------------------
# A kernel of one tap without padding reads each output position's input position only
# (every stride-th one): the convolution is one batched GEMM of the weight with the
# (subsampled) input, with no padded buffer and no columns. ResNet's bottlenecks and
# shortcuts, Inception's and NiN's 1x1 layers are such convolutions.

def pointwise(kernel, pad):
    """Whether a convolution of this kernel and padding is pointwise (one GEMM here;
    oneDNN's adapter gives such calls their own break-even)."""
    return all(k == 1 for k in kernel) and not any(pad or ())


def _pointwise(win):
    return pointwise(win.kernel, win.pad)


def _subsampled(x, win):
    """x at the positions the output reads: every stride-th one per spatial dim."""
    if all(s == 1 for s in win.stride):
        return x
    return x[(slice(None), slice(None)) + tuple(slice(None, None, s) for s in win.stride)]


def _pointwise_forward(xp, win, x, weight, groups, bias, out):
    n, c = x.shape[:2]
    f = weight.shape[0]
    L = _prod(win.out_size)
    xs = _subsampled(x, win).reshape(n, groups, c // groups, L)   # a copy when strided
    return _per_sample_gemm(xp, win, weight, xs, groups, bias, out)


def _per_sample_gemm(xp, win, weight, cols, groups, bias, out):
    """out (n, F, *out_size) = weight (per group) @ cols (n, G, C/G * K, L) [+ bias]:
    one batched GEMM into ``out`` (allocated when None; through a copy when it is not
    contiguous)."""
    n, f = cols.shape[0], weight.shape[0]
    if out is None:
        out = xp.empty((n, f) + win.out_size, dtype=cols.dtype)
    dst = out if out.flags.c_contiguous else xp.empty(out.shape, dtype=out.dtype)
    xp.matmul(weight.reshape(groups, f // groups, -1), cols,
              out=dst.reshape(n, groups, f // groups, cols.shape[3]))
    if bias is not None:
        dst += bias.reshape((1, f) + (1,) * len(win.out_size))
    if dst is not out:
        out[...] = dst
    return out


def _pointwise_backward(xp, win, dy, x, weight, groups, need_data, need_weight, need_bias,
                        in_shape, dx_out):
    n, f = dy.shape[:2]
    c = in_shape[1]
    cg, fg = c // groups, f // groups
    L = _prod(win.out_size)
    dyg = dy.reshape(n, groups, fg, L)
    dx = dweight = db = None
    if need_data:
        dxs = xp.matmul(weight.reshape(groups, fg, cg).transpose(0, 2, 1), dyg)
        dxs = dxs.reshape((n, c) + win.out_size)
        dx = xp.empty(in_shape, dtype=dy.dtype) if dx_out is None else dx_out
        read = _subsampled(dx, win)
        if read is not dx:
            dx[...] = 0             # positions the stride skips
        read[...] = dxs
    if need_weight:
        # one GEMM over every sample: (G, F/G, n*L) x (G, n*L, C/G)
        dyt = dyg.transpose(1, 2, 0, 3).reshape(groups, fg, n * L)
        xst = _subsampled(x, win).reshape(n, groups, cg, L).transpose(1, 0, 3, 2) \
            .reshape(groups, n * L, cg)
        dweight = xp.matmul(dyt, xst).reshape(weight.shape if weight is not None else
                                              (f, cg) + win.kernel)
    if need_bias:
        db = channel_sum(xp, dy.reshape(n, f, L))
    return dx, dweight, db


# --- the data gradient of a stride-1 convolution as a convolution ----------------------
# With stride 1, dx is the correlation of dy, padded by dilate*(kernel-1) - pad, with the
# weight flipped in space and its input and output channels swapped: the forward path's
# strided copies and one GEMM, where col2im makes one add per kernel offset.

def _correlation_windows(win, channels, filters):
    """The windows of dx = correlate(dy, flipped weight), or None where col2im is the
    better way: a strided convolution, one padded beyond its dilated kernel, or one
    whose input is much larger than its output (a kernel as large as the image), where
    the correlation's columns (filters x kernel x input positions) would outgrow
    col2im's (channels x kernel x output positions) and its GEMM the input/output
    ratio more work."""
    if any(s != 1 for s in win.stride):
        return None
    pad = tuple(d * (k - 1) - p for k, d, p in zip(win.kernel, win.dilate, win.pad))
    if any(p < 0 for p in pad):
        return None
    corr = windows(win.out_size, win.kernel, win.stride, win.dilate, pad, win.in_size, True)
    if corr.L > 2 * win.L or filters * corr.L > 2 * channels * win.L:
        return None
    return corr


def _flipped(xp, weight, groups):
    """(F, C/g, *k) -> (C, F/g, *k): each group's channels swapped, the kernel flipped."""
    f, cg = weight.shape[:2]
    k = tuple(weight.shape[2:])
    w = weight.reshape((groups, f // groups, cg) + k).swapaxes(1, 2)
    w = w[(Ellipsis,) + (slice(None, None, -1),) * len(k)]
    return xp.ascontiguousarray(w).reshape((groups * cg, f // groups) + k)


# --- small convolutions: im2col as one gather ------------------------------------------
# For few column entries, the phase-split buffer's fixed costs (the padded copy,
# per-phase copies, masks, the crop of the extended grid: ~10 NumPy calls) outweigh the
# copies themselves. One gather of precomputed positions and one GEMM over every
# sample's columns at once (AVX2 EPYC, 1 thread, best of 7): (2, 4, 8, 8) 3x3 -> 4,
# 4.6k entries: 80 us against 30; (2, 32, 2, 2) -> 32: 60 against 31; the 7x7 stride-2
# stem at (2, 3, 32, 32), 75k: 184 against 166; (1, 64, 14, 14) -> 64, 113k: 259
# against 403 (the gather's scattered reads lose from there). Tiny feature maps (the
# late stages of a CNN on small images, any CNN at batch 1-2) are such calls.
GATHER_MAX_COLUMNS = 1 << 16


def _gather_forward(win, x, weight, groups, bias, out):
    cols = _columns(win, x)                         # (n, C*K, L)
    n, _, L = cols.shape
    return _per_sample_gemm(np, win, weight, cols.reshape(n, groups, -1, L), groups, bias,
                            out)


def _columns(win, x):
    """im2col of every sample by the gather: (n, C*K, L)."""
    n = x.shape[0]
    ext = np.empty((n, x[0].size + 1), x.dtype)
    ext[:, :-1] = x.reshape(n, -1)
    ext[:, -1] = 0
    return ext.take(win.gather_index(x.shape[1]), axis=1)


def _gather_backward(win, dy, x, weight, groups, need_data, need_weight, need_bias,
                     in_shape, dx_out):
    """Gradients of _gather_forward: dweight from the gathered columns (one GEMM per
    sample), dx as the gather's adjoint, a scatter-add of W^T dy (one bincount)."""
    n, f = dy.shape[:2]
    c = in_shape[1]
    cg, fg = c // groups, f // groups
    L = _prod(win.out_size)
    dt = dy.dtype
    dyg = dy.reshape(n, groups, fg, L)
    dx = dweight = db = None
    if need_weight:
        cols = _columns(win, x).reshape(n, groups, cg * win.K, L)
        dweight = np.matmul(dyg, cols.transpose(0, 1, 3, 2)).sum(axis=0, dtype=dt) \
            .reshape(weight.shape if weight is not None else (f, cg) + win.kernel)
    if need_data:
        dcols = np.matmul(weight.reshape(groups, fg, cg * win.K).transpose(0, 2, 1), dyg)
        size = _prod(in_shape[1:]) + 1          # a sample's positions and the zero
        sums = np.bincount(win.gather_index(c, n), weights=dcols.ravel(),
                           minlength=n * size)
        dx = np.empty(in_shape, dt) if dx_out is None else dx_out
        dx[...] = sums.reshape(n, size)[:, :-1].reshape(in_shape)
    if need_bias:
        db = channel_sum(np, dy.reshape(n, f, L))
    return dx, dweight, db


def _gathers(ctx, win, n, c):
    return ctx.xp is np and n * c * win.K * _prod(win.out_size) <= GATHER_MAX_COLUMNS


def conv_forward(ctx, win, x, weight, groups, bias=None, workspace=DEFAULT_WORKSPACE_MB,
                 out=None):
    """Grouped N-d convolution (see _conv_forward); a device kernel may split it."""
    if _pointwise(win):
        return _pointwise_forward(ctx.xp, win, x, weight, groups, bias, out)
    if _gathers(ctx, win, x.shape[0], x.shape[1]):
        return _gather_forward(win, x, weight, groups, bias, out)
    return _conv_forward(ctx, win, x, weight, groups, bias, workspace, out)


def conv_backward(ctx, win, dy, x, weight, groups, need_data=True, need_weight=True,
                  need_bias=False, in_shape=None, workspace=DEFAULT_WORKSPACE_MB,
                  dx_out=None):
    """Gradients of conv_forward (see _conv_backward)."""
    x_shape = tuple(x.shape) if x is not None else tuple(in_shape)
    if _pointwise(win):
        return _pointwise_backward(ctx.xp, win, dy, x, weight, groups, need_data,
                                   need_weight, need_bias, x_shape, dx_out)
    if _gathers(ctx, win, x_shape[0], x_shape[1]):
        return _gather_backward(win, dy, x, weight, groups, need_data, need_weight,
                                need_bias, x_shape, dx_out)
    corr = _correlation_windows(win, x_shape[1], dy.shape[1]) if need_data else None
    if corr is None:
        return _conv_backward(ctx, win, dy, x, weight, groups, need_data, need_weight,
                              need_bias, in_shape, workspace, dx_out)
    dx = _conv_forward(ctx, corr, dy, _flipped(ctx.xp, weight, groups), groups,
                       workspace=workspace, out=dx_out)
    dw = db = None
    if need_weight or need_bias:
        _, dw, db = _conv_backward(ctx, win, dy, x, weight, groups, False, need_weight,
                                   need_bias, in_shape, workspace)
    return dx, dw, db
