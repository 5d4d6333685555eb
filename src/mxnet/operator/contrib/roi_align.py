"""``ROIAlign`` (Mask R-CNN region pooling by bilinear sampling), as in MXNet 1.9.1.

Each roi [batch_index, x1, y1, x2, y2] is scaled by ``spatial_scale`` (and shifted by
-0.5 with ``aligned``), split into ``pooled_size`` bins, and each bin averages a grid of
bilinear samples (``sample_ratio`` per side, or ceil(bin size) when <= 0). Samples more
than one pixel outside the map count as 0. ``position_sensitive``: output channel c of
bin (i, j) reads input channel (c * ph + i) * pw + j (R-FCN style).

The sampling is expressed as (sample point, 4 corners) -> (flat pixel index, weight)
pairs computed for all rois and bins at once; the data is read channels-last, and each
pass over one (sample, corner) slot gathers one contiguous channel vector per bin;
backward sorts the same pairs by pixel and sums each pixel's run at once.
"""
import numpy as np

from ...base import MXNetError
from ..params import Bool, Float, Int, Schema, Shape
from ..registry import Op, ShapeError, register
from ._common import store

__all__ = ["ROIAlign", "RROIAlign"]

def _axis_samples(xp, start, size, n_bins, grid, limit, dt):
    """Per roi, bin and grid step along one axis: the two neighbouring pixel indices
    (R, n_bins, G, 2), their weights (same shape, 0 for samples off the map or steps
    beyond the roi's own grid size) and the grid size per roi (R,)."""
    gmax = int(grid.max()) if grid.size else 1
    bin_size = size / n_bins
    k = xp.arange(n_bins, dtype=dt)[None, :, None]
    s = xp.arange(gmax, dtype=dt)[None, None, :]
    g = grid.astype(dt)[:, None, None]
    pos = start[:, None, None] + k * bin_size[:, None, None] + \
        (s + 0.5) * bin_size[:, None, None] / g
    used = s < g
    outside = (pos < -1.0) | (pos > limit)
    pos = xp.maximum(pos, 0)
    lo = xp.floor(pos).astype(np.int64)
    at_end = lo >= limit - 1
    lo = xp.where(at_end, limit - 1, lo)
    hi = xp.where(at_end, limit - 1, lo + 1)
    pos = xp.where(at_end, lo.astype(dt), pos)
    frac = pos - lo
    w = xp.stack([1 - frac, frac], axis=-1)
    w = xp.where((used & ~outside)[..., None], w, 0)
    return xp.stack([lo, hi], axis=-1), w


def _gather_sum(xp, hwc, idx, wt):
    """sum_s wt[:, s] * hwc[idx[:, s]]: (P, C) from a channels-last map (pixels, C) and
    (P, S) pixel indices/weights, one pass per slot (each gathers one contiguous channel
    vector per output position)."""
    res = xp.zeros((idx.shape[0], hwc.shape[1]), hwc.dtype)
    for s in range(idx.shape[1]):
        w = wt[:, s]
        if not bool(w.any()):
            continue
        res += w[:, None] * hwc[idx[:, s]]
    return res


# Scatter at most this many (pair, channel) products at once in backward.
_SCATTER_CHUNK = 1 << 22


def _scatter_sum(xp, n_pixels, idx, wt, g):
    """The transpose of _gather_sum: (n_pixels, C) with row idx[p, s] accumulating
    wt[p, s] * g[p]. Pairs are sorted by pixel once and each run of equal pixels is
    summed with one reduceat, in chunks (no per-element scatter-add)."""
    P, S = idx.shape
    C = g.shape[1]
    flat, w = idx.reshape(-1), wt.reshape(-1)
    live = xp.nonzero(w != 0)[0]
    order = live[xp.argsort(flat[live], kind="stable")]
    out = xp.zeros((n_pixels, C), g.dtype)
    step = max(1, _SCATTER_CHUNK // max(C, 1))
    for a in range(0, order.shape[0], step):
        o = order[a:a + step]
        f = flat[o]
        vals = w[o][:, None] * g[o // S]
        starts = xp.concatenate([xp.zeros(1, np.int64), xp.nonzero(f[1:] != f[:-1])[0] + 1])
        # Pixels are unique within a chunk, so the fancy += adds each run once.
        out[f[starts]] += xp.add.reduceat(vals, starts, axis=0)
    return out


def _point_pairs(xp, y, x, H, W):
    """Bilinear corners of arbitrary sample points (any shape): flat pixel indices
    and weights, shape + (4,), with ROIAlign's border rules."""
    outside = (y < -1.0) | (y > H) | (x < -1.0) | (x > W)
    y, x = xp.maximum(y, 0), xp.maximum(x, 0)
    y0, x0 = xp.floor(y).astype(np.int64), xp.floor(x).astype(np.int64)
    ey, ex = y0 >= H - 1, x0 >= W - 1
    y0, x0 = xp.where(ey, H - 1, y0), xp.where(ex, W - 1, x0)
    y1, x1 = xp.where(ey, H - 1, y0 + 1), xp.where(ex, W - 1, x0 + 1)
    ly = xp.where(ey, 0.0, y - y0)
    lx = xp.where(ex, 0.0, x - x0)
    idx = xp.stack([y0 * W + x0, y0 * W + x1, y1 * W + x0, y1 * W + x1], -1)
    wt = xp.stack([(1 - ly) * (1 - lx), (1 - ly) * lx, ly * (1 - lx), ly * lx], -1)
    return idx, xp.where(outside[..., None], 0.0, wt)


@register
class ROIAlign(Op):
    """Bilinear region pooling of ``data`` (batch, channel, height, width) over
    ``rois`` (num_rois, 5) into (num_rois, channel, ph, pw) (channel / (ph*pw) with
    ``position_sensitive``). Rois with a negative batch index give 0."""
    name = "_contrib_ROIAlign"
    writes_outputs = True
    params = Schema(pooled_size=Shape(), spatial_scale=Float(low=0.0, high=1.0),
                    sample_ratio=Int(-1), position_sensitive=Bool(False), aligned=Bool(False))
    backward_uses = ("out_grad", "in_data")

    def arguments(self, p):
        return ["data", "rois"]

    def infer_shape(self, p, in_shapes):
        if len(p.pooled_size) != 2:
            raise MXNetError(f"ROIAlign: pooled_size must have 2 values (h, w), got "
                             f"{p.pooled_size}")
        d, r = in_shapes
        if d is not None and len(d) != 4:
            raise ShapeError(f"ROIAlign: data must be 4-D (batch, channel, height, width), "
                             f"got shape {tuple(d)}")
        if r is not None and (len(r) != 2 or r[1] != 5):
            raise ShapeError(f"ROIAlign: rois must have shape (num_rois, 5), got {tuple(r)}")
        if d is None or r is None:
            return list(in_shapes), [None], []
        ph, pw = p.pooled_size
        c = d[1]
        if p.position_sensitive:
            if c % (ph * pw):
                raise ShapeError(f"ROIAlign: with position_sensitive the channels ({c}) "
                                 f"must be a multiple of ph*pw ({ph * pw})")
            c //= ph * pw
        return [tuple(d), tuple(r)], [(r[0], c, ph, pw)], []

    def _pairs(self, xp, p, shape, rois):
        """Flat pixel index (R, PH, PW, S) into a (B*H*W) map, weights (same shape) and
        the batch validity (R,)."""
        B, C, H, W = shape
        PH, PW = p.pooled_size
        dt = np.dtype(np.float64)
        rois = rois.astype(dt)
        bidx = rois[:, 0].astype(np.int64)
        off = 0.5 if p.aligned else 0.0
        x1, y1, x2, y2 = (rois[:, i] * p.spatial_scale - off for i in range(1, 5))
        rw, rh = x2 - x1, y2 - y1
        if not p.aligned:
            rw, rh = xp.maximum(rw, 1.0), xp.maximum(rh, 1.0)
        if p.sample_ratio > 0:
            gh = xp.full(rois.shape[0], p.sample_ratio, np.int64)
            gw = gh
        else:
            gh = xp.maximum(xp.ceil(rh / PH), 1).astype(np.int64)
            gw = xp.maximum(xp.ceil(rw / PW), 1).astype(np.int64)
        yi, yw = _axis_samples(xp, y1, rh, PH, gh, H, dt)     # (R, PH, GH, 2)
        xi, xw = _axis_samples(xp, x1, rw, PW, gw, W, dt)     # (R, PW, GW, 2)
        count = (gh * gw).astype(dt)
        good = (bidx >= 0) & (bidx < B)
        base = xp.where(good, bidx, 0) * (H * W)
        R = rois.shape[0]
        idx = base[:, None, None, None, None, None, None] + \
            yi[:, :, None, :, None, :, None] * W + xi[:, None, :, None, :, None, :]
        wt = yw[:, :, None, :, None, :, None] * xw[:, None, :, None, :, None, :]
        wt = wt / count[:, None, None, None, None, None, None]
        wt = wt * good[:, None, None, None, None, None, None]
        return idx.reshape(R, PH, PW, -1), wt.reshape(R, PH, PW, -1)

    def forward(self, ctx, p, inputs, aux, out=None):
        xp = ctx.xp
        data, rois = inputs
        _, (oshape,), _ = self.infer_shape(p, [data.shape, rois.shape])
        B, C, H, W = data.shape
        R, OC, PH, PW = oshape
        idx, wt = self._pairs(xp, p, data.shape, rois)
        ct = np.float32 if data.dtype == np.float16 else data.dtype
        # Contiguous channel vectors (a one-image transpose would otherwise stay a view).
        hwc = xp.ascontiguousarray(data.astype(ct, copy=False).transpose(0, 2, 3, 1))
        hwc = hwc.reshape(B * H * W, C)
        idx = idx.reshape(R * PH * PW, -1)
        wt = wt.reshape(R * PH * PW, -1).astype(ct)
        res = _gather_sum(xp, hwc, idx, wt).reshape(R, PH, PW, C)
        y = res.transpose(0, 3, 1, 2)                          # (R, C, PH, PW)
        if p.position_sensitive:
            c = xp.arange(OC)[:, None, None] * (PH * PW) + \
                xp.arange(PH)[None, :, None] * PW + xp.arange(PW)[None, None, :]
            y = xp.take_along_axis(y, xp.broadcast_to(c[None], (R, OC, PH, PW)), axis=1)
        return [store(out, 0, xp.ascontiguousarray(y).astype(data.dtype, copy=False))]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux, in_grad=None):
        xp = ctx.xp
        data, rois = inputs
        B, C, H, W = data.shape
        g = out_grads[0]
        R, OC, PH, PW = g.shape
        idx, wt = self._pairs(xp, p, data.shape, rois)
        ct = np.float32 if g.dtype == np.float16 else g.dtype
        if p.position_sensitive:
            full = xp.zeros((R, C, PH, PW), ct)
            c = xp.arange(OC)[:, None, None] * (PH * PW) + \
                xp.arange(PH)[None, :, None] * PW + xp.arange(PW)[None, None, :]
            xp.put_along_axis(full, xp.broadcast_to(c[None], g.shape), g.astype(ct), axis=1)
            g = full
        gl = g.astype(ct, copy=False).transpose(0, 2, 3, 1)     # (R, PH, PW, C)
        dx = _scatter_sum(xp, B * H * W, idx.reshape(R * PH * PW, -1),
                          wt.reshape(R * PH * PW, -1).astype(ct), gl.reshape(R * PH * PW, C))
        dx = dx.reshape(B, H, W, C).transpose(0, 3, 1, 2).astype(data.dtype)
        need = ctx.need_grad or (True, True)
        return [store(in_grad, 0, xp.ascontiguousarray(dx)),
                store(in_grad, 1, xp.zeros(rois.shape, rois.dtype)) if need[1] else None]


@register
class RROIAlign(Op):
    """ROIAlign over rotated rois (num_rois, 6) rows [batch_index, center_x, center_y,
    width, height, angle in degrees, counter-clockwise]: each bin averages bilinear
    samples taken on the roi's rotated grid (``sampling_ratio`` per side, or
    ceil(bin size) when <= 0). Sizes below one pixel count as one. Like MXNet 1.9.1,
    it has no gradient."""
    name = "_contrib_RROIAlign"
    writes_outputs = True
    params = Schema(pooled_size=Shape(), spatial_scale=Float(), sampling_ratio=Int(-1))

    def arguments(self, p):
        return ["data", "rois"]

    def infer_shape(self, p, in_shapes):
        if len(p.pooled_size) != 2:
            raise MXNetError(f"RROIAlign: pooled_size must have 2 values (h, w), got "
                             f"{p.pooled_size}")
        d, r = in_shapes
        if d is not None and len(d) != 4:
            raise ShapeError(f"RROIAlign: data must be 4-D, got shape {tuple(d)}")
        if r is not None and (len(r) != 2 or r[1] != 6):
            raise ShapeError(f"RROIAlign: rois must have shape (num_rois, 6), got "
                             f"{tuple(r)}")
        if d is None or r is None:
            return list(in_shapes), [None], []
        return [tuple(d), tuple(r)], [(r[0], d[1]) + tuple(p.pooled_size)], []

    def forward(self, ctx, p, inputs, aux, out=None):
        xp = ctx.xp
        data, rois = inputs
        _, (oshape,), _ = self.infer_shape(p, [data.shape, rois.shape])
        B, C, H, W = data.shape
        R, _, PH, PW = oshape
        r = rois.astype(np.float64)
        bidx = r[:, 0].astype(np.int64)
        cx, cy = r[:, 1] * p.spatial_scale, r[:, 2] * p.spatial_scale
        rw = xp.maximum(r[:, 3] * p.spatial_scale, 1.0)
        rh = xp.maximum(r[:, 4] * p.spatial_scale, 1.0)
        theta = r[:, 5] * (np.pi / 180.0)
        if p.sampling_ratio > 0:
            gh = xp.full(R, p.sampling_ratio, np.int64)
            gw = gh
        else:
            gh = xp.maximum(xp.ceil(rh / PH), 1).astype(np.int64)
            gw = xp.maximum(xp.ceil(rw / PW), 1).astype(np.int64)
        GH = int(gh.max()) if R else 1
        GW = int(gw.max()) if R else 1
        e = (slice(None),) + (None,) * 4                       # roi axis of (R,PH,PW,GH,GW)
        iy = xp.arange(GH)[None, None, None, :, None]
        ix = xp.arange(GW)[None, None, None, None, :]
        bh, bw = (rh / PH)[e], (rw / PW)[e]
        yy = -rh[e] / 2 + xp.arange(PH)[None, :, None, None, None] * bh + \
            (iy + 0.5) * bh / gh[e]
        xx = -rw[e] / 2 + xp.arange(PW)[None, None, :, None, None] * bw + \
            (ix + 0.5) * bw / gw[e]
        cos, sin = xp.cos(theta)[e], xp.sin(theta)[e]
        x = xx * cos + yy * sin + cx[e]
        y = yy * cos - xx * sin + cy[e]
        idx, wt = _point_pairs(xp, y, x, H, W)               # (R,PH,PW,GH,GW,4)
        used = (iy < gh[e]) & (ix < gw[e])
        good = (bidx >= 0) & (bidx < B)
        wt = wt * (used & good[e])[..., None] / (gh * gw).astype(np.float64)[e][..., None]
        idx = idx + (xp.where(good, bidx, 0) * (H * W))[e][..., None]
        ct = np.float32 if data.dtype == np.float16 else data.dtype
        hwc = xp.ascontiguousarray(data.astype(ct, copy=False).transpose(0, 2, 3, 1))
        res = _gather_sum(xp, hwc.reshape(B * H * W, C), idx.reshape(R * PH * PW, -1),
                          wt.reshape(R * PH * PW, -1).astype(ct))
        y = res.reshape(R, PH, PW, C).transpose(0, 3, 1, 2)
        return [store(out, 0, xp.ascontiguousarray(y).astype(data.dtype, copy=False))]
