"""``DeformableConvolution`` (DCN v1) and ``ModulatedDeformableConvolution`` (DCN v2),
2-D (NCHW), as in MXNet 1.9.1.

Each kernel tap (kh, kw) of output cell (oh, ow) reads the input at
(oh*stride - pad + kh*dilate + dy, ow*stride - pad + kw*dilate + dx), the (dy, dx) pair
coming from ``offset`` (batch, deformable_groups * 2 * kh*kw, out_h, out_w; y before x per
tap), bilinearly interpolated (DCN v2: corners outside the map count as zero; DCN v1,
MXNet's CPU kernel: samples outside [0, size) give zero and a sample in the last
row/column is clamped onto it); DCN v2 multiplies each sample by
``mask`` (batch, deformable_groups * kh*kw, out_h, out_w). The sampled columns then go
through an ordinary grouped matrix product with ``weight``.

Everything is vectorised: the four bilinear corners of every sample are gathered for all
channels at once, and backward scatters with one bincount per corner.
"""
import numpy as np

from ...base import MXNetError
from ..params import Bool, Enum, Int, Schema, Shape
from ..registry import Op, ShapeError, register
from ._common import store

__all__ = ["DeformableConvolution", "ModulatedDeformableConvolution"]


def _pair(v, default, n=2):
    return tuple(v) if len(v) else (default,) * n


class _DeformableBase(Op):
    writes_outputs = True
    backward_uses = ("out_grad", "in_data")
    modulated = False

    def arguments(self, p):
        names = ["data", "offset"] + (["mask"] if self.modulated else []) + ["weight"]
        return names + ([] if p.no_bias else ["bias"])

    def _geometry(self, p, d):
        if len(p.kernel) != 2:
            raise MXNetError(f"{self.name}: only 2-D kernels are supported, got kernel "
                             f"{p.kernel}")
        if p.layout not in (None, "NCHW"):
            raise MXNetError(f"{self.name}: layout {p.layout} is not supported (NCHW only)")
        if len(d) != 4:
            raise ShapeError(f"{self.name}: data must be 4-D (batch, channel, height, "
                             f"width), got {tuple(d)}")
        kh, kw = p.kernel
        sh, sw = _pair(p.stride, 1)
        dh, dw = _pair(p.dilate, 1)
        ph, pw = _pair(p.pad, 0)
        oh = (d[2] + 2 * ph - (dh * (kh - 1) + 1)) // sh + 1
        ow = (d[3] + 2 * pw - (dw * (kw - 1) + 1)) // sw + 1
        if oh <= 0 or ow <= 0:
            raise ShapeError(f"{self.name}: kernel {p.kernel} (dilate {(dh, dw)}) larger "
                             f"than the padded input {tuple(d[2:])}")
        C, G, DG = d[1], p.num_group, p.num_deformable_group
        if C % G or p.num_filter % G:
            raise ShapeError(f"{self.name}: channels {C} and num_filter {p.num_filter} "
                             f"must be multiples of num_group {G}")
        if C % DG:
            raise ShapeError(f"{self.name}: channels {C} must be a multiple of "
                             f"num_deformable_group {DG}")
        return (kh, kw), (sh, sw), (dh, dw), (ph, pw), (oh, ow)

    def infer_shape(self, p, in_shapes):
        d = in_shapes[0]
        n_in = len(self.arguments(p))
        if d is None:
            return list(in_shapes), [None], []
        (kh, kw), _, _, _, (oh, ow) = self._geometry(p, d)
        N, C = d[0], d[1]
        K, DG = kh * kw, p.num_deformable_group
        want = [tuple(d), (N, DG * 2 * K, oh, ow)]
        if self.modulated:
            want.append((N, DG * K, oh, ow))
        want.append((p.num_filter, C // p.num_group, kh, kw))
        if not p.no_bias:
            want.append((p.num_filter,))
        names = self.arguments(p)
        for nm, s, w in zip(names, in_shapes, want):
            if s is not None and tuple(s) != w:
                raise ShapeError(f"{self.name}: {nm} must have shape {w}, got {tuple(s)}")
        assert len(want) == n_in
        return want, [(N, p.num_filter, oh, ow)], []

    # --- sampling ---------------------------------------------------------------------
    def _samples(self, xp, p, data, offset):
        """Corner flat indices (N, DG, K, L, 4) into H*W with their weights (returned
        twice: forward and backward use the same ones), and the derivatives of the
        weights with respect to the sample's y and x."""
        N, C, H, W = data.shape
        (kh, kw), (sh, sw), (dh, dw), (ph, pw), (oh, ow) = self._geometry(p, data.shape)
        K, L, DG = kh * kw, oh * ow, p.num_deformable_group
        ct = offset.dtype
        off = offset.reshape(N, DG, K, 2, L).astype(ct)
        ky = (xp.arange(kh) * dh).repeat(kw)                       # (K,)
        kx = xp.tile(xp.arange(kw) * dw, kh)
        by = (xp.arange(oh) * sh - ph).repeat(ow)                  # (L,)
        bx = xp.tile(xp.arange(ow) * sw - pw, oh)
        y = (ky[:, None] + by[None, :]).astype(ct) + off[:, :, :, 0]   # (N, DG, K, L)
        x = (kx[:, None] + bx[None, :]).astype(ct) + off[:, :, :, 1]
        if self.modulated:
            inside = (y > -1) & (x > -1) & (y < H) & (x < W)
        else:
            # DCN v1 (MXNet's CPU kernel) samples only inside the map.
            inside = (y >= 0) & (x >= 0) & (y < H) & (x < W)
        y0, x0 = xp.floor(y), xp.floor(x)
        ly, lx = y - y0, x - x0
        y0, x0 = y0.astype(np.int64), x0.astype(np.int64)
        corners = [(y0, x0), (y0, x0 + 1), (y0 + 1, x0), (y0 + 1, x0 + 1)]
        wy = [1 - ly, 1 - ly, ly, ly]
        wx = [1 - lx, lx, 1 - lx, lx]
        dwy = [-1.0, -1.0, 1.0, 1.0]
        dwx = [-1.0, 1.0, -1.0, 1.0]
        idx, wt, gy, gx = [], [], [], []
        for (cy, cx), a, b, da, db in zip(corners, wy, wx, dwy, dwx):
            ok = inside & (cy >= 0) & (cy < H) & (cx >= 0) & (cx < W)
            idx.append(xp.where(ok, cy * W + cx, 0))
            wt.append(xp.where(ok, a * b, 0))
            gy.append(xp.where(ok, da * b, 0))
            gx.append(xp.where(ok, a * db, 0))
        idx, wt = xp.stack(idx, -1), xp.stack(wt, -1)
        fwd_idx, fwd_wt = idx, wt
        if not self.modulated:
            # v1 (MXNet's CPU kernel) clamps a sample in the last row/column onto it;
            # its gradients are those of that clamped interpolation.
            cy = xp.minimum(y0, H - 1)
            cx = xp.minimum(x0, W - 1)
            ey, ex = y0 >= H - 1, x0 >= W - 1
            ly2, lx2 = xp.where(ey, 0, ly), xp.where(ex, 0, lx)
            y1, x1 = xp.where(ey, H - 1, y0 + 1), xp.where(ex, W - 1, x0 + 1)
            fwd_idx = xp.stack([cy * W + cx, cy * W + x1, y1 * W + cx, y1 * W + x1], -1)
            fwd_wt = xp.stack([(1 - ly2) * (1 - lx2), (1 - ly2) * lx2, ly2 * (1 - lx2),
                               ly2 * lx2], -1) * inside[..., None]
            fwd_idx = xp.where(inside[..., None], fwd_idx, 0)
            # Offset gradient: the derivative of that clamped interpolation.
            ok = inside[..., None]
            gy = xp.stack([-(1 - lx2), -lx2, 1 - lx2, lx2], -1) * (ok & ~ey[..., None])
            gx = xp.stack([-(1 - ly2), 1 - ly2, -ly2, ly2], -1) * (ok & ~ex[..., None])
            return fwd_idx, fwd_wt, fwd_idx, fwd_wt, gy, gx, (kh, kw), (oh, ow)
        return (fwd_idx, fwd_wt, idx, wt, xp.stack(gy, -1), xp.stack(gx, -1), (kh, kw),
                (oh, ow))

    def _corner_values(self, xp, data, idx, DG):
        """(N, DG, cg, K, L, 4) input values at the corners."""
        N, C, H, W = data.shape
        cg = C // DG
        flat = data.reshape(N, DG, cg, H * W)
        K, L = idx.shape[2], idx.shape[3]
        ii = idx.reshape(N, DG, 1, K * L * 4)
        v = xp.take_along_axis(flat, xp.broadcast_to(ii, (N, DG, cg, K * L * 4)), axis=3)
        return v.reshape(N, DG, cg, K, L, 4)

    def _split_inputs(self, p, inputs):
        data, offset = inputs[0], inputs[1]
        i = 2
        mask = None
        if self.modulated:
            mask, i = inputs[2], 3
        weight = inputs[i]
        bias = None if p.no_bias else inputs[i + 1]
        return data, offset, mask, weight, bias

    def forward(self, ctx, p, inputs, aux, out=None):
        xp = ctx.xp
        self.infer_shape(p, [a.shape for a in inputs])
        data, offset, mask, weight, bias = self._split_inputs(p, inputs)
        N, C, H, W = data.shape
        DG, G = p.num_deformable_group, p.num_group
        idx, wt, _, _, _, _, (kh, kw), (oh, ow) = self._samples(xp, p, data, offset)
        K, L = kh * kw, oh * ow
        vals = self._corner_values(xp, data, idx, DG)
        col = (vals * wt[:, :, None]).sum(-1)                       # (N, DG, cg, K, L)
        if mask is not None:
            col = col * mask.reshape(N, DG, 1, K, L)
        col = col.reshape(N, G, (C // G) * K, L)
        w = weight.reshape(G, p.num_filter // G, (C // G) * K)
        y = xp.matmul(w[None], col).reshape(N, p.num_filter, oh, ow)
        if bias is not None:
            y = y + bias.reshape(1, -1, 1, 1)
        return [store(out, 0, y.astype(data.dtype, copy=False))]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux, in_grad=None):
        xp = ctx.xp
        data, offset, mask, weight, bias = self._split_inputs(p, inputs)
        N, C, H, W = data.shape
        DG, G, O = p.num_deformable_group, p.num_group, p.num_filter
        cg = C // DG
        fidx, fwt, idx, wt, gy, gx, (kh, kw), (oh, ow) = self._samples(xp, p, data, offset)
        K, L = kh * kw, oh * ow
        sampled = (self._corner_values(xp, data, fidx, DG) * fwt[:, :, None]).sum(-1)
        vals = self._corner_values(xp, data, idx, DG)               # (N,DG,cg,K,L,4)
        m = 1.0 if mask is None else mask.reshape(N, DG, 1, K, L)
        g = out_grads[0].reshape(N, G, O // G, L)
        w = weight.reshape(G, O // G, (C // G) * K)
        dcol = xp.matmul(w.transpose(0, 2, 1)[None], g).reshape(N, DG, cg, K, L)
        col = (sampled * m).reshape(N, G, (C // G) * K, L)
        dweight = xp.matmul(g, col.transpose(0, 1, 3, 2)).sum(0).reshape(weight.shape)
        dsamp = dcol * m
        # Input: each corner receives dsamp * its weight.
        base = (xp.arange(N)[:, None, None] * C +
                (xp.arange(DG)[:, None] * cg + xp.arange(cg)[None, :])[None]) * (H * W)
        # The input gradient follows the forward's (clamped) weights.
        flat = base[:, :, :, None, None, None] + fidx[:, :, None]       # (N,DG,cg,K,L,4)
        contrib = dsamp[..., None] * fwt[:, :, None]
        ddata = xp.bincount(flat.reshape(-1), weights=contrib.reshape(-1).astype(np.float64),
                            minlength=N * C * H * W).reshape(data.shape)
        dy = (dsamp * (vals * gy[:, :, None]).sum(-1)).sum(2)       # (N,DG,K,L)
        dx = (dsamp * (vals * gx[:, :, None]).sum(-1)).sum(2)
        doffset = xp.stack([dy, dx], axis=3).reshape(offset.shape)
        grads = [store(in_grad, 0, ddata.astype(data.dtype)),
                 store(in_grad, 1, doffset.astype(offset.dtype))]
        i = 2
        if mask is not None:
            dmask = (dcol * sampled).sum(2).reshape(mask.shape)
            grads.append(store(in_grad, 2, dmask.astype(mask.dtype)))
            i = 3
        grads.append(store(in_grad, i, dweight.astype(weight.dtype)))
        if bias is not None:
            grads.append(store(in_grad, i + 1, out_grads[0].sum(axis=(0, 2, 3))
                               .astype(bias.dtype)))
        return grads


_COMMON = dict(kernel=Shape(), stride=Shape(()), dilate=Shape(()), pad=Shape(()),
               num_filter=Int(low=1), num_group=Int(1, low=1),
               num_deformable_group=Int(1, low=1), workspace=Int(1024, low=0),
               no_bias=Bool(False))
_LAYOUTS = (None, "NCDHW", "NCHW", "NCW")


@register
class DeformableConvolution(_DeformableBase):
    """Deformable convolution (DCN v1): a convolution whose kernel taps are displaced by
    learned per-position offsets."""
    name = "_contrib_DeformableConvolution"
    params = Schema(**_COMMON, layout=Enum(_LAYOUTS, None))


@register
class ModulatedDeformableConvolution(_DeformableBase):
    """Modulated deformable convolution (DCN v2): offsets plus a per-tap ``mask``."""
    name = "_contrib_ModulatedDeformableConvolution"
    modulated = True
    params = Schema(**_COMMON, im2col_step=Int(64, low=0), layout=Enum(_LAYOUTS, None))
