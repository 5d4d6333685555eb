"""``ROIPooling`` (Fast R-CNN region-of-interest max pooling), as in MXNet 1.9.1.

Each row of ``rois`` is [batch_index, x1, y1, x2, y2] in image coordinates; scaled by
``spatial_scale`` and rounded half away from zero, it selects a window of the feature
map that is split into ``pooled_size`` bins (bin edges floor/ceil'd, so neighbouring
bins may share a row or column), each max-pooled. Empty bins and rois whose batch
index is out of range give 0. The position of each maximum is a hidden output
("maxidx", a flat index into data, -1 for none) that backward scatters the gradient to.
"""
import numpy as np

from ...base import MXNetError
from ..params import Float, Schema, Shape
from ..registry import Op, ShapeError, register

__all__ = ["ROIPooling"]

# Gather at most this many elements at once; larger inputs go in chunks of rois.
_CHUNK_ELEMS = 1 << 24


def _round_half_away(xp, v):
    return xp.sign(v) * xp.floor(xp.abs(v) + 0.5)


def _bins(xp, start, extent, n_bins, limit, dt):
    """Bin [begin, end) (rois, n_bins), clipped to [0, limit], for windows starting at
    start with extent cells, in the rois' float type as MXNet computes them."""
    size = extent.astype(dt) / dt.type(n_bins)
    k = xp.arange(n_bins, dtype=dt)[None, :]
    begin = xp.floor(k * size[:, None]).astype(np.int64) + start[:, None]
    end = xp.ceil((k + 1) * size[:, None]).astype(np.int64) + start[:, None]
    return xp.clip(begin, 0, limit), xp.clip(end, 0, limit)


def _pool_chunk(xp, data, bidx, hs, he, ws, we):
    """Max and flat argmax for a chunk of rois: (R, C, PH, PW) each."""
    B, C, H, W = data.shape
    KH = max(int((he - hs).max()), 1)
    KW = max(int((we - ws).max()), 1)
    rows = hs[:, :, None] + xp.arange(KH)                       # (R, PH, KH)
    cols = ws[:, :, None] + xp.arange(KW)                       # (R, PW, KW)
    vrow, vcol = rows < he[:, :, None], cols < we[:, :, None]
    rows, cols = xp.minimum(rows, H - 1), xp.minimum(cols, W - 1)
    R, PH, PW = rows.shape[0], rows.shape[1], cols.shape[1]
    b = bidx[:, None, None, None, None]
    r = rows[:, :, :, None, None]
    c = cols[:, None, None, :, :]
    vals = data.transpose(0, 2, 3, 1)[b, r, c]                  # (R, PH, KH, PW, KW, C)
    valid = vrow[:, :, :, None, None] & vcol[:, None, None, :, :]
    vals = xp.where(valid[..., None], vals, -xp.inf)
    vals = vals.transpose(0, 5, 1, 3, 2, 4).reshape(R, C, PH, PW, KH * KW)
    arg = vals.argmax(axis=-1)
    out = xp.take_along_axis(vals, arg[..., None], axis=-1)[..., 0]
    ri = xp.arange(R)[:, None, None, None]
    h = rows[ri, xp.arange(PH)[None, None, :, None], arg // KW]
    w = cols[ri, xp.arange(PW)[None, None, None, :], arg % KW]
    flat = ((bidx[:, None, None, None] * C + xp.arange(C)[None, :, None, None]) * H + h) * W + w
    empty = ((he <= hs)[:, None, :, None]) | ((we <= ws)[:, None, None, :])
    return xp.where(empty, 0, out), xp.where(empty, -1, flat)


@register
class ROIPooling(Op):
    """Max-pools each region of interest of a 4-D feature map (batch, channel, height,
    width) into a fixed ``pooled_size`` (h, w); the output is (rois, channel, h, w)."""
    name = "ROIPooling"
    params = Schema(pooled_size=Shape(), spatial_scale=Float(low=0.0, high=1.0))
    backward_uses = ("out_grad", "out_data")

    def arguments(self, p):
        return ["data", "rois"]

    def outputs(self, p):
        return ["output", "maxidx"]

    def num_visible_outputs(self, p):
        return 1

    def infer_shape(self, p, in_shapes):
        if len(p.pooled_size) != 2:
            raise MXNetError(f"ROIPooling: pooled_size must have 2 dimensions (h, w), got "
                             f"{p.pooled_size}")
        d, r = in_shapes
        if d is not None and len(d) != 4:
            raise ShapeError(f"ROIPooling: data must be 4-D (batch, channel, height, width), "
                             f"got shape {tuple(d)}")
        if r is not None and (len(r) != 2 or r[1] != 5):
            raise ShapeError(f"ROIPooling: rois must have shape (num_rois, 5), got "
                             f"{tuple(r)}")
        if d is None or r is None:
            return list(in_shapes), [None, None], []
        out = (r[0], d[1]) + tuple(p.pooled_size)
        return [tuple(d), tuple(r)], [out, out], []

    def infer_type(self, p, in_types):
        t = in_types[0] if in_types[0] is not None else in_types[1]
        return [t, t], [t, np.dtype(np.int64)], []

    def forward(self, ctx, p, inputs, aux):
        xp = ctx.xp
        data, rois = inputs
        self.infer_shape(p, [data.shape, rois.shape])
        B, C, H, W = data.shape
        PH, PW = p.pooled_size
        R = rois.shape[0]
        dt = rois.dtype if rois.dtype.kind == "f" else np.dtype(np.float32)
        rois = rois.astype(dt, copy=False)
        bidx = rois[:, 0].astype(np.int64)
        box = _round_half_away(xp, rois[:, 1:] * dt.type(p.spatial_scale)).astype(np.int64)
        x1, y1, x2, y2 = box[:, 0], box[:, 1], box[:, 2], box[:, 3]
        hs, he = _bins(xp, y1, xp.maximum(y2 - y1 + 1, 1), PH, H, dt)
        ws, we = _bins(xp, x1, xp.maximum(x2 - x1 + 1, 1), PW, W, dt)
        good = (bidx >= 0) & (bidx < B)
        # A roi outside the batch pools nothing: give it empty bins.
        he = xp.where(good[:, None], he, hs)
        bidx = xp.where(good, bidx, 0)
        out = xp.empty((R, C, PH, PW), data.dtype)
        idx = xp.empty((R, C, PH, PW), np.int64)
        per_roi = C * PH * PW * max(int((he - hs).max()) if R else 1, 1) * \
            max(int((we - ws).max()) if R else 1, 1)
        step = max(1, _CHUNK_ELEMS // max(per_roi, 1))
        for s in range(0, R, step):
            sl = slice(s, s + step)
            out[sl], idx[sl] = _pool_chunk(xp, data, bidx[sl], hs[sl], he[sl], ws[sl],
                                           we[sl])
        return [out, idx]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux):
        xp = ctx.xp
        dshape, rshape = ctx.in_shapes
        g = out_grads[0]
        idx = outputs[1].reshape(-1)
        hit = idx >= 0
        size = int(np.prod(dshape))
        dx = xp.bincount(idx[hit], weights=g.reshape(-1)[hit].astype(np.float64),
                         minlength=size)
        need = ctx.need_grad or (True, True)
        drois = xp.zeros(rshape, g.dtype) if need[1] else None
        return [dx.astype(g.dtype).reshape(dshape), drois]
