"""Deconvolution (transposed convolution), 1-D/2-D/3-D, NCW/NCHW/NCDHW.

Its forward is the data gradient of the convolution that maps the deconvolution's
output back to its input, and its data gradient is that convolution's forward, so both
directions reuse the convolution kernels of im2col.py with the roles swapped. Large
strides (dilate 1, the last dim's stride 4 or more: FCN's upsamplers) run by blocks
instead, as one stride-1 GEMM over stride-sized blocks of the output (see
``use_blocks``).
"""
import functools
import itertools
import math

from ...base import MXNetError
from ..params import Bool, Int, Schema, Shape
from ..registry import Op, register
from .channel_sums import channel_sum
from .convolution import _LAYOUT, _TUNE, check_provided, same_dtype
from .im2col import (OptEnum, _gemm, check_groups, check_layout, conv_backward,
                     conv_forward, spatial_tuple, windows)

__all__ = ["Deconvolution", "deconv_geometry", "deconv_forward", "deconv_backward",
           "use_blocks"]


@functools.lru_cache(maxsize=1024)
def deconv_geometry(p, dshape, name="Deconvolution"):
    """Check parameters against the data shape: (kernel, stride, dilate, pad, out_size),
    with pad (and adj) derived from target_shape when it is set."""
    kernel = tuple(p.kernel)
    nd = len(kernel)
    if nd not in (1, 2, 3):
        raise MXNetError(f"{name}: kernel must have 1, 2 or 3 dimensions, got kernel={kernel}")
    if any(k <= 0 for k in kernel):
        raise MXNetError(f"{name}: kernel must be positive in every dimension, got {kernel}")
    check_layout(name, p.layout, nd)
    stride = spatial_tuple(name, "stride", p.stride, nd, 1)
    dilate = spatial_tuple(name, "dilate", p.dilate, nd, 1)
    pad = spatial_tuple(name, "pad", p.pad, nd, 0, low=0)
    adj = spatial_tuple(name, "adj", p.adj, nd, 0, low=0)
    target = tuple(p.target_shape) if p.target_shape else ()
    if target and len(target) != nd:
        raise MXNetError(f"{name}: target_shape must have {nd} dimensions, got {target}")
    use_target = any(target)
    if len(dshape) != nd + 2:
        raise MXNetError(f"{name}: input data should be {nd + 2}-D (batch, channel and {nd} "
                         f"spatial dims) for a {nd}-D kernel, got data of shape {dshape}")
    check_groups(name, p.num_filter, p.num_group, dshape[1])
    pads, out = [], []
    for d in range(nd):
        size = dshape[2 + d]
        span = (kernel[d] - 1) * dilate[d] + 1
        if not size:
            pads.append(pad[d])
            out.append(None)
            continue
        full = stride[d] * (size - 1) + span
        if use_target:
            if full < target[d]:
                raise MXNetError(f"{name}: too big target shape: target_shape[{d}] = "
                                 f"{target[d]} > {full}, the largest output possible")
            total = full - target[d]
            pd, ad = (total + 1) // 2, total % 2
        else:
            pd, ad = pad[d], adj[d]
        if ad >= stride[d]:
            raise MXNetError(f"{name}: adj must be smaller than stride, got adj={ad} "
                             f"and stride={stride[d]} in dim {d}"
                             + (f" (derived from target_shape={target})" if use_target else ""))
        o = full - 2 * pd + ad
        if o <= 0:
            raise MXNetError(f"{name}: pad {pad} is too large for data of shape {dshape}: "
                             f"the output would have size {o} in dim {d}")
        pads.append(pd)
        out.append(o)
    return kernel, stride, dilate, tuple(pads), tuple(out)


def deconv_windows(p, dshape, name="Deconvolution"):
    """The windows of the convolution that maps the deconvolution's output to its input."""
    kernel, stride, dilate, pad, out = deconv_geometry(p, tuple(dshape), name)
    return windows(out, kernel, stride, dilate, pad, tuple(dshape[2:]), True), out


def deconv_forward(ctx, win, out_size, x, weight, groups, bias=None, workspace=512):
    bl = _block_plan(win, x.shape)
    if bl is not None:
        return _block_forward(ctx, bl, x, weight, groups, bias, workspace)
    n = x.shape[0]
    f = weight.shape[1] * groups
    y, _, _ = conv_backward(ctx, win, x, None, weight, groups, need_data=True,
                            need_weight=False, in_shape=(n, f) + tuple(out_size),
                            workspace=workspace)
    if bias is not None:
        y += bias.reshape((1, f) + (1,) * len(out_size))
    return y


def deconv_backward(ctx, win, dy, x, weight, groups, need, workspace=512):
    """(dx, dweight, dbias) for need = (data, weight, bias) flags."""
    bl = None if x is None else _block_plan(win, x.shape)
    if bl is not None:
        return _block_backward(ctx, bl, dy, x, weight, groups, need, workspace)
    dx = conv_forward(ctx, win, dy, weight, groups, workspace=workspace) if need[0] else None
    dw = None
    if need[1]:
        _, dw, _ = conv_backward(ctx, win, x, dy, weight, groups, need_data=False,
                                 need_weight=True, workspace=workspace)
    db = channel_sum(ctx.xp, dy.reshape(dy.shape[:2] + (-1,))) if need[2] else None
    return dx, dw, db


# --- large strides: the block (sub-pixel) formulation ------------------------------------
# With stride s and kernel K per dim (dilate 1), split each output position t of the
# un-cropped output into a block b = t // s and a residue r = t % s, and each kernel
# index k into a = k // s, r = k % s (a < R = ceil(K/s)). Input position i writes
# t = i*s + k, i.e. block b = i + a and residue r. So
#     canvas[n, f, b, r] = sum over c, a of x[n, c, b - a] * W[c, f, a*s + r]
# is a stride-1 correlation with an R-wide kernel and F*s output channels: ONE GEMM
# (n*B, C*R) @ (C*R, F*s) per group, every output written once. The phase path instead
# copies its buffers once per stride phase (prod(stride) of them) and adds once per
# kernel offset (prod(kernel)), which dominates for FCN's upsampler (64x64 kernel,
# stride 32: 1024 phases, 4096 offsets). Block rows wholly inside the padding are
# never computed; kernel indices a*s + r >= K get zero weights.
# The canvas moves to and from the output in runs of the last dim's stride, so that
# stride must not be tiny: measured (2 threads, NumPy body, fwd+bwd), 2-D K=8 s=4
# 25.7 ms against the phase path's 36.4, K=4 s=4 12.7 vs 16.0, 1-D K=8 s=4 2.8 vs 3.7,
# K=16 s=8 39.6 vs 85.0, FCN's K=64 s=32 31 vs 508; but 2-D K=4 s=2 26.0 vs 38.1 and
# 3-D K=4 s=2 309 vs 197 (runs of 2), 2-D K=3 s=3 14.1 vs 13.0.
BLOCK_MIN_STRIDE = 4      # the last dim's stride from which the block path runs


def use_blocks(kernel, stride, dilate):
    """Whether Deconvolution with this geometry runs by blocks (see above): dilate 1
    and a last-dim stride of at least BLOCK_MIN_STRIDE."""
    return all(d == 1 for d in dilate) and stride[-1] >= BLOCK_MIN_STRIDE


class _Blocks:
    """The block geometry of one deconvolution: x spatial size ``in_size`` to the
    output ``out_size`` (pad cropped before each dim)."""

    def __init__(self, in_size, kernel, stride, pad, out_size):
        self.in_size, self.kernel, self.stride = in_size, kernel, stride
        self.out_size = out_size
        self.R = tuple(-(-k // s) for k, s in zip(kernel, stride))
        self.B, self.b0, tspan = [], [], []
        for s, p, o in zip(stride, pad, out_size):
            b0, b1 = p // s, -(-(p + o) // s)
            self.b0.append(b0)
            self.B.append(b1 - b0)
            tspan.append((p - b0 * s, p - b0 * s + o))   # output in the local canvas
        self.B = tuple(self.B)
        # x into the columns: per dim and kernel block a, (column block slice, x slice)
        self.places = []
        for d, (n, b0, B) in enumerate(zip(in_size, self.b0, self.B)):
            per = []
            for a in range(self.R[d]):
                lo, hi = max(0, a - b0), min(B, n + a - b0)
                per.append((slice(lo, hi), slice(lo + b0 - a, hi + b0 - a)) if lo < hi
                           else None)
            self.places.append(per)
        # canvas <-> output: per dim, pieces (block slice, residue slice, output slice,
        # blocks, residues) covering the output; runs of whole blocks are one piece
        self.pieces, self.edges = [], []
        for d, (s, (t0, t1)) in enumerate(zip(stride, tspan)):
            per, run = [], None
            for b in range(self.B[d]):
                lo, hi = max(t0, b * s) - b * s, min(t1, (b + 1) * s) - b * s
                if lo == 0 and hi == s:
                    run = [b, b + 1] if run is None else [run[0], b + 1]
                    continue
                if run is not None:
                    per.append(self._piece(run[0], run[1], 0, s, s, t0))
                    run = None
                if lo < hi:
                    per.append(self._piece(b, b + 1, lo, hi, s, t0))
            if run is not None:
                per.append(self._piece(run[0], run[1], 0, s, s, t0))
            self.pieces.append(per)
            # canvas entries outside the output (zero in the output gradient's canvas)
            last = (self.B[d] - 1) * s
            self.edges.append([(0, slice(0, t0))] * (t0 > 0) +
                              [(self.B[d] - 1, slice(t1 - last, s))] * (t1 < last + s))

    @staticmethod
    def _piece(b0, b1, r0, r1, s, t0):
        j0 = b0 * s + r0 - t0
        return (slice(b0, b1), slice(r0, r1), slice(j0, j0 + (b1 - b0 - 1) * s + r1 - r0),
                b1 - b0, r1 - r0)

    def per_sample(self, c, f):
        """Elements of the columns and the canvas per sample."""
        return math.prod(self.B) * (c * math.prod(self.R) + f * math.prod(self.stride))

    # --- weights -------------------------------------------------------------------------
    def _padded_shape(self, g, cg, fg):
        return (g, cg, fg) + tuple(x for r, s in zip(self.R, self.stride) for x in (r, s))

    def _wperm(self):
        nd = len(self.kernel)
        return (0, 1) + tuple(3 + 2 * d for d in range(nd)) + (2,) + \
            tuple(4 + 2 * d for d in range(nd))

    def weights(self, xp, w, groups):
        """W (C, Fg, *K) -> (G, Cg*prod(R), Fg*prod(stride)) block weights."""
        c, fg = w.shape[:2]
        kp = tuple(r * s for r, s in zip(self.R, self.stride))
        if kp != self.kernel:
            wp = xp.zeros((c, fg) + kp, dtype=w.dtype)
            wp[(slice(None), slice(None)) + tuple(slice(0, k) for k in self.kernel)] = w
            w = wp
        v = w.reshape(self._padded_shape(groups, c // groups, fg)).transpose(self._wperm())
        return xp.ascontiguousarray(v).reshape(groups, -1, fg * math.prod(self.stride))

    def weight_grad(self, xp, dwb, c, fg, groups):
        """The adjoint of ``weights``: (G, Cg*prod(R), Fg*prod(stride)) -> (C, Fg, *K)."""
        nd = len(self.kernel)
        cg = c // groups
        v = dwb.reshape((groups, cg) + self.R + (fg,) + self.stride)
        inv = [0] * (2 * nd + 3)
        for i, j in enumerate(self._wperm()):
            inv[j] = i
        v = xp.ascontiguousarray(v.transpose(inv)).reshape(
            (c, fg) + tuple(r * s for r, s in zip(self.R, self.stride)))
        return xp.ascontiguousarray(
            v[(slice(None), slice(None)) + tuple(slice(0, k) for k in self.kernel)])

    # --- data ----------------------------------------------------------------------------
    def _xview(self, x, groups):
        """x (m, C, *in) as (G, m, *in, Cg)."""
        m, c = x.shape[:2]
        nd = len(self.in_size)
        v = x.reshape((m, groups, c // groups) + self.in_size)
        return v.transpose((1, 0) + tuple(range(3, 3 + nd)) + (2,))

    def _pairs(self):
        """(columns index, x index) for every kernel block a that meets the input."""
        lead = (slice(None), slice(None))
        for a in itertools.product(*(range(r) for r in self.R)):
            pl = [self.places[d][ad] for d, ad in enumerate(a)]
            if not any(q is None for q in pl):
                yield (lead + tuple(q[0] for q in pl) + (slice(None),) + a,
                       lead + tuple(q[1] for q in pl))

    def im2col(self, x, col, groups):
        """col (G, m, *B, Cg, *R) <- the R-block windows of x (m, C, *in)."""
        col.fill(0)
        xv = self._xview(x, groups)
        for ci, xi in self._pairs():
            col[ci] = xv[xi]
        return col

    def col2im(self, col, dx, groups):
        """dx (m, C, *in) = the adjoint of im2col applied to col."""
        dx.fill(0)
        xv = self._xview(dx, groups)
        for ci, xi in self._pairs():
            xv[xi] += col[ci]
        return dx

    def _canvas(self, can, fg):
        """can (G, m, *B, Fg, *s) as (m, G, Fg, B1, s1, B2, s2, ...)."""
        nd = len(self.B)
        perm = (1, 0, 2 + nd) + tuple(x for d in range(nd) for x in (2 + d, 3 + nd + d))
        return can.transpose(perm)

    def _views(self, can, y, groups):
        """Pairs (canvas view, output view) covering the output y (m, F, *out)."""
        m, f = y.shape[:2]
        cv = self._canvas(can, f // groups)
        yv = y.reshape((m, groups, f // groups) + self.out_size)
        lead = (slice(None),) * 3
        for combo in itertools.product(*self.pieces):
            src = cv[lead + tuple(x for pc in combo for x in pc[:2])]
            dst = yv[lead + tuple(pc[2] for pc in combo)]
            dst = dst.reshape(dst.shape[:3] + tuple(x for pc in combo for x in pc[3:]))
            yield src, dst

    def to_output(self, xp, can, y, groups, bias=None):
        """y (m, F, *out) <- the output's part of the canvas [+ bias]."""
        b = None
        if bias is not None:
            b = bias.reshape((1, groups, -1) + (1,) * (2 * len(self.B)))
        for src, dst in self._views(can, y, groups):
            if b is None:
                dst[...] = src
            else:
                xp.add(src, b, out=dst)
        return y

    def from_output(self, dy, can, groups):
        """can (G, m, *B, Fg, *s) <- dy (m, F, *out), zero outside the output."""
        cv = self._canvas(can, dy.shape[1] // groups)
        nd = len(self.B)
        for d, edges in enumerate(self.edges):
            for b, r in edges:
                idx = [slice(None)] * (3 + 2 * nd)
                idx[3 + 2 * d], idx[4 + 2 * d] = b, r
                cv[tuple(idx)] = 0
        for src, dst in self._views(can, dy, groups):
            src[...] = dst
        return can


@functools.lru_cache(maxsize=256)
def _blocks(in_size, kernel, stride, pad, out_size):
    return _Blocks(in_size, kernel, stride, pad, out_size)


def _block_plan(win, x_shape):
    """The _Blocks of the deconvolution whose windows are ``win``, or None."""
    if not use_blocks(win.kernel, win.stride, win.dilate) or not all(x_shape):
        return None
    return _blocks(tuple(x_shape[2:]), win.kernel, win.stride, win.pad, win.in_size)


def _block_chunk(n, per_sample, itemsize, workspace):
    budget = min(max(int(workspace), 1), BLOCK_CHUNK_MB) << 20
    return max(1, min(n, budget // max(per_sample * itemsize, 1)))


BLOCK_CHUNK_MB = 64       # columns + canvas of one batch chunk


def _block_forward(ctx, bl, x, weight, groups, bias, workspace):
    xp = ctx.xp
    n, c = x.shape[:2]
    fg = weight.shape[1]
    f = fg * groups
    dt = x.dtype
    wb = bl.weights(xp, weight, groups)
    y = xp.empty((n, f) + bl.out_size, dtype=dt)
    nb = _block_chunk(n, bl.per_sample(c, f), dt.itemsize, workspace)
    pB, pR, ps = math.prod(bl.B), math.prod(bl.R), math.prod(bl.stride)
    colflat, free_col = ctx.temp_space((groups * nb * pB * (c // groups) * pR,), dt)
    canflat, free_can = ctx.temp_space((groups * nb * pB * fg * ps,), dt)
    try:
        for n0 in range(0, n, nb):
            m = min(nb, n - n0)
            col = colflat[:c * m * pB * pR].reshape(
                (groups, m) + bl.B + (c // groups,) + bl.R)
            bl.im2col(x[n0:n0 + m], col, groups)
            can = canflat[:f * m * pB * ps].reshape((groups, m) + bl.B + (fg,) + bl.stride)
            _gemm(xp, col.reshape(groups, m * pB, -1), wb, can.reshape(groups, m * pB, -1),
                  groups)
            bl.to_output(xp, can, y[n0:n0 + m], groups, bias)
    finally:
        free_can()
        free_col()
    return y


def _block_backward(ctx, bl, dy, x, weight, groups, need, workspace):
    xp = ctx.xp
    n, c = x.shape[:2]
    fg = weight.shape[1]
    f = fg * groups
    dt = dy.dtype
    pB, pR, ps = math.prod(bl.B), math.prod(bl.R), math.prod(bl.stride)
    wb = bl.weights(xp, weight, groups) if need[0] else None
    dx = xp.empty(x.shape, dtype=dt) if need[0] else None
    dwb = part = None
    nb = _block_chunk(n, bl.per_sample(c, f), dt.itemsize, workspace)
    colflat, free_col = ctx.temp_space((groups * nb * pB * (c // groups) * pR,), dt)
    canflat, free_can = ctx.temp_space((groups * nb * pB * fg * ps,), dt)
    try:
        for n0 in range(0, n, nb):
            m = min(nb, n - n0)
            can = canflat[:f * m * pB * ps].reshape((groups, m) + bl.B + (fg,) + bl.stride)
            bl.from_output(dy[n0:n0 + m], can, groups)
            canm = can.reshape(groups, m * pB, -1)
            col = colflat[:c * m * pB * pR].reshape(
                (groups, m) + bl.B + (c // groups,) + bl.R)
            colm = col.reshape(groups, m * pB, -1)
            if need[1]:
                bl.im2col(x[n0:n0 + m], col, groups)
                if dwb is None:
                    dwb = xp.empty((groups, colm.shape[2], canm.shape[2]), dtype=dt)
                    _gemm(xp, colm.transpose(0, 2, 1), canm, dwb, groups)
                else:
                    if part is None:
                        part = xp.empty_like(dwb)
                    _gemm(xp, colm.transpose(0, 2, 1), canm, part, groups)
                    dwb += part
            if need[0]:
                _gemm(xp, canm, wb.transpose(0, 2, 1), colm, groups)
                bl.col2im(col, dx[n0:n0 + m], groups)
    finally:
        free_can()
        free_col()
    dw = bl.weight_grad(xp, dwb, c, fg, groups) if need[1] else None
    db = channel_sum(ctx.xp, dy.reshape(dy.shape[:2] + (-1,))) if need[2] else None
    return dx, dw, db


@register
class Deconvolution(Op):
    """Compute N-d transposed convolution ("deconvolution") on (N, C, *spatial) inputs:
    the gradient of Convolution with the same kernel/stride/dilate/pad with respect to
    its input. weight is (C, num_filter/num_group, *kernel); the output size is
    stride*(in-1) + dilated kernel - 2*pad + adj, or target_shape when given (pad and
    adj are then derived from it). no_bias defaults to True."""
    name = "Deconvolution"
    float_only = True
    params = Schema(kernel=Shape(), stride=Shape(()), dilate=Shape(()), pad=Shape(()),
                    adj=Shape(()), target_shape=Shape(()), num_filter=Int(low=0),
                    num_group=Int(1, low=0), workspace=Int(512, low=0), no_bias=Bool(True),
                    cudnn_tune=OptEnum(_TUNE, None), cudnn_off=Bool(False),
                    layout=OptEnum(_LAYOUT, None))
    backward_uses = ("out_grad", "in_data")
    resources = ("temp",)

    def arguments(self, p):
        return ["data", "weight"] if p.no_bias else ["data", "weight", "bias"]

    def infer_shape(self, p, in_shapes):
        d = in_shapes[0]
        if d is None:
            return list(in_shapes), [None], []
        d = tuple(d)
        _, _, _, _, out = deconv_geometry(p, d)
        ins = [d]
        if d[1]:
            w = (d[1], p.num_filter // p.num_group) + tuple(p.kernel)
            check_provided(self.name, "weight", in_shapes[1], w)
            ins.append(w)
        else:
            ins.append(in_shapes[1])
        if not p.no_bias:
            check_provided(self.name, "bias", in_shapes[2], (p.num_filter,))
            ins.append((p.num_filter,))
        oshape = (d[0], p.num_filter) + out
        return ins, [None if any(x is None for x in out) else oshape], []

    def infer_type(self, p, in_types):
        t = same_dtype(self.name, self.arguments(p), in_types)
        return [t] * len(in_types), [t], []

    def forward(self, ctx, p, inputs, aux):
        same_dtype(self.name, self.arguments(p), [a.dtype for a in inputs])
        self.infer_shape(p, [a.shape for a in inputs])
        win, out = deconv_windows(p, inputs[0].shape)
        bias = None if p.no_bias else inputs[2]
        return [deconv_forward(ctx, win, out, inputs[0], inputs[1], p.num_group, bias,
                               p.workspace)]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux):
        need = list(ctx.need_grad or [True] * len(inputs)) + [False]
        win, _ = deconv_windows(p, inputs[0].shape)
        dx, dw, db = deconv_backward(ctx, win, out_grads[0], inputs[0], inputs[1],
                                     p.num_group, (need[0], need[1],
                                                   not p.no_bias and need[2]), p.workspace)
        return [dx, dw] if p.no_bias else [dx, dw, db]
