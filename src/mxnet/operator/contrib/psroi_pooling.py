"""``PSROIPooling`` (R-FCN position-sensitive region pooling, contrib), as in MXNet
1.9.1.

Each roi [batch_index, x1, y1, x2, y2] is rounded to whole pixels, scaled by
``spatial_scale`` (its far edge one pixel out) and split into pooled_size x pooled_size
bins (bin edges floor/ceil'd, clipped to the map). Output channel c of bin (i, j)
averages input channel (c * group_size + gi) * group_size + gj over the bin, where
(gi, gj) is the bin's cell in a group_size grid; an empty bin gives 0.

Bin sums come from an integral image (four lookups per bin); backward spreads each
bin's gradient evenly over its cells through a 2-D difference array.
"""
import numpy as np

from ..params import Float, Int, Schema
from ..registry import Op, ShapeError, register
from ._common import store

__all__ = ["PSROIPooling"]


def _round_half_away(xp, v):
    return xp.sign(v) * xp.floor(xp.abs(v) + 0.5)


@register
class PSROIPooling(Op):
    """Position-sensitive average pooling of ``data`` (batch, output_dim * group_size^2,
    height, width) over ``rois`` (num_rois, 5): (num_rois, output_dim, pooled_size,
    pooled_size). ``group_size`` 0 means pooled_size."""
    name = "_contrib_PSROIPooling"
    writes_outputs = True
    params = Schema(spatial_scale=Float(), output_dim=Int(low=1), pooled_size=Int(low=1),
                    group_size=Int(0))
    backward_uses = ("out_grad", "in_data")

    def arguments(self, p):
        return ["data", "rois"]

    def _group(self, p):
        return p.group_size if p.group_size > 0 else p.pooled_size

    def infer_shape(self, p, in_shapes):
        d, r = in_shapes
        if d is not None and len(d) != 4:
            raise ShapeError(f"PSROIPooling: data must be 4-D, got {tuple(d)}")
        if r is not None and (len(r) != 2 or r[1] != 5):
            raise ShapeError(f"PSROIPooling: rois must have shape (num_rois, 5), got "
                             f"{tuple(r)}")
        g = self._group(p)
        if d is not None and d[1] != p.output_dim * g * g:
            raise ShapeError(f"PSROIPooling: data has {d[1]} channels, expected output_dim "
                             f"x group_size^2 = {p.output_dim * g * g}")
        if r is None:
            return list(in_shapes), [None], []
        P = p.pooled_size
        return [d and tuple(d), tuple(r)], [(r[0], p.output_dim, P, P)], []

    def _bins(self, xp, p, shape, rois):
        """Per (roi, output channel, i, j): flat (batch, channel) plane index, bin
        edges hs, he, ws, we, and the bin area (0 for empty bins)."""
        B, C, H, W = shape
        P, G, OD = p.pooled_size, self._group(p), p.output_dim
        rois = rois.astype(np.float64)
        bidx = rois[:, 0].astype(np.int64)
        r = _round_half_away(xp, rois[:, 1:])
        x1, y1 = r[:, 0] * p.spatial_scale, r[:, 1] * p.spatial_scale
        x2, y2 = (r[:, 2] + 1) * p.spatial_scale, (r[:, 3] + 1) * p.spatial_scale
        rw, rh = xp.maximum(x2 - x1, 0.1), xp.maximum(y2 - y1, 0.1)
        k = xp.arange(P)
        hs = xp.clip(xp.floor(k[None] * (rh / P)[:, None] + y1[:, None]), 0, H).astype(np.int64)
        he = xp.clip(xp.ceil((k[None] + 1) * (rh / P)[:, None] + y1[:, None]), 0, H).astype(
            np.int64)
        ws = xp.clip(xp.floor(k[None] * (rw / P)[:, None] + x1[:, None]), 0, W).astype(np.int64)
        we = xp.clip(xp.ceil((k[None] + 1) * (rw / P)[:, None] + x1[:, None]), 0, W).astype(
            np.int64)
        g = xp.clip((k * G) // P, 0, G - 1)
        chan = (xp.arange(OD)[:, None, None] * G + g[None, :, None]) * G + g[None, None, :]
        plane = xp.clip(bidx, 0, B - 1)[:, None, None, None] * C + chan[None]   # (R,OD,P,P)
        hs, he = hs[:, None, :, None], he[:, None, :, None]
        ws, we = ws[:, None, None, :], we[:, None, None, :]
        area = xp.maximum(he - hs, 0) * xp.maximum(we - ws, 0)
        good = ((bidx >= 0) & (bidx < B))[:, None, None, None]
        area = xp.where(good, area, 0)
        shp = plane.shape
        return (plane, xp.broadcast_to(hs, shp), xp.broadcast_to(he, shp),
                xp.broadcast_to(ws, shp), xp.broadcast_to(we, shp), area)

    def forward(self, ctx, p, inputs, aux, out=None):
        xp = ctx.xp
        data, rois = inputs
        self.infer_shape(p, [data.shape, rois.shape])
        B, C, H, W = data.shape
        plane, hs, he, ws, we, area = self._bins(xp, p, data.shape, rois)
        integral = xp.zeros((B * C, H + 1, W + 1))
        integral[:, 1:, 1:] = data.reshape(B * C, H, W).astype(np.float64).cumsum(1).cumsum(2)
        total = (integral[plane, he, we] - integral[plane, hs, we] -
                 integral[plane, he, ws] + integral[plane, hs, ws])
        res = xp.where(area > 0, total / xp.maximum(area, 1), 0)
        return [store(out, 0, res.astype(data.dtype))]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux, in_grad=None):
        xp = ctx.xp
        data, rois = inputs
        B, C, H, W = data.shape
        plane, hs, he, ws, we, area = self._bins(xp, p, data.shape, rois)
        v = xp.where(area > 0, out_grads[0].astype(np.float64) / xp.maximum(area, 1), 0)
        diff = xp.zeros((B * C, H + 1, W + 1))
        stride = (H + 1) * (W + 1)
        for hh, ww, sign in ((hs, ws, 1), (hs, we, -1), (he, ws, -1), (he, we, 1)):
            flat = (plane * stride + hh * (W + 1) + ww).reshape(-1)
            xp.add.at(diff.reshape(-1), flat, (sign * v).reshape(-1))
        dx = diff.cumsum(1).cumsum(2)[:, :H, :W].reshape(B, C, H, W)
        need = ctx.need_grad or (True, True)
        return [store(in_grad, 0, dx.astype(data.dtype)),
                store(in_grad, 1, xp.zeros(rois.shape, rois.dtype)) if need[1] else None]
