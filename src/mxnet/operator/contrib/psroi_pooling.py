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

from ..params import Bool, Float, Int, Schema
from ..registry import Op, ShapeError, register
from ._common import store

__all__ = ["PSROIPooling", "DeformablePSROIPooling"]


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


@register
class DeformablePSROIPooling(Op):
    """Deformable position-sensitive roi pooling (Deformable ConvNets): like
    PSROIPooling, but each bin is shifted by ``trans`` (num_rois, 2 * classes,
    part_size, part_size; x then y per class, scaled by ``trans_std`` and the roi size)
    and averages ``sample_per_part``^2 bilinear samples (samples more than half a pixel
    off the map are skipped). ``no_trans`` ignores trans. Outputs the pooled values and
    (hidden) the number of samples each bin used."""
    name = "_contrib_DeformablePSROIPooling"
    writes_outputs = True
    params = Schema(spatial_scale=Float(), output_dim=Int(low=1), group_size=Int(low=1),
                    pooled_size=Int(low=1), part_size=Int(0), sample_per_part=Int(1, low=1),
                    trans_std=Float(0.0), no_trans=Bool(False))
    backward_uses = ("out_grad", "in_data", "out_data")

    def arguments(self, p):
        return ["data", "rois"] if p.no_trans else ["data", "rois", "trans"]

    def outputs(self, p):
        return ["output", "top_count"]

    def num_visible_outputs(self, p):
        return 1

    def infer_shape(self, p, in_shapes):
        d, r = in_shapes[0], in_shapes[1]
        t = None if p.no_trans else in_shapes[2]
        if d is not None and len(d) != 4:
            raise ShapeError(f"DeformablePSROIPooling: data must be 4-D, got {tuple(d)}")
        if r is not None and (len(r) != 2 or r[1] != 5):
            raise ShapeError(f"DeformablePSROIPooling: rois must be (num_rois, 5), got "
                             f"{tuple(r)}")
        if t is not None and len(t) != 4:
            raise ShapeError(f"DeformablePSROIPooling: trans must be 4-D (num_rois, "
                             f"2 * classes, part_size, part_size), got {tuple(t)}")
        if d is not None and d[1] != p.output_dim * p.group_size ** 2:
            raise ShapeError(f"DeformablePSROIPooling: data has {d[1]} channels, expected "
                             f"output_dim x group_size^2 = {p.output_dim * p.group_size ** 2}")
        if r is None:
            return list(in_shapes), [None, None], []
        P = p.pooled_size
        out = (r[0], p.output_dim, P, P)
        shapes = [d and tuple(d), tuple(r)] + ([] if p.no_trans else [t and tuple(t)])
        return shapes, [out, out], []

    def _samples(self, xp, p, data, rois, trans):
        """Per sample (R, OD, P, P, S, S): 4 flat indices/weights into data, the
        validity mask, d(value)/d(w, h) factors, and the trans cell used per bin."""
        B, C, H, W = data.shape
        R, OD, P, G = rois.shape[0], p.output_dim, p.pooled_size, p.group_size
        S = p.sample_per_part
        part = p.part_size if p.part_size > 0 else P
        r = rois.astype(np.float64)
        bidx = xp.clip(r[:, 0].astype(np.int64), 0, B - 1)
        q = _round_half_away(xp, r[:, 1:])
        x1 = q[:, 0] * p.spatial_scale - 0.5
        y1 = q[:, 1] * p.spatial_scale - 0.5
        x2 = (q[:, 2] + 1) * p.spatial_scale - 0.5
        y2 = (q[:, 3] + 1) * p.spatial_scale - 0.5
        rw, rh = xp.maximum(x2 - x1, 0.1), xp.maximum(y2 - y1, 0.1)
        bw, bh = rw / P, rh / P
        k = xp.arange(P)
        part_idx = xp.floor(k / P * part).astype(np.int64)
        if p.no_trans or trans is None:
            tx = ty = xp.zeros((R, OD, P, P))
            cls = None
        else:
            n_cls = trans.shape[1] // 2
            per_cls = OD // n_cls
            cls = xp.arange(OD) // per_cls
            t = trans.astype(np.float64)
            tx = t[xp.arange(R)[:, None, None, None], (cls * 2)[None, :, None, None],
                   part_idx[None, None, :, None], part_idx[None, None, None, :]] * p.trans_std
            ty = t[xp.arange(R)[:, None, None, None], (cls * 2 + 1)[None, :, None, None],
                   part_idx[None, None, :, None], part_idx[None, None, None, :]] * p.trans_std
        e = (slice(None), None, None, None)
        wstart = k[None, None, None, :] * bw[e] + x1[e] + tx * rw[e]       # (R,OD,P,P)
        hstart = k[None, None, :, None] * bh[e] + y1[e] + ty * rh[e]
        s = xp.arange(S)
        w = wstart[..., None, None] + s[None, None, None, None, None, :] * (bw / S)[e][
            ..., None, None]
        h = hstart[..., None, None] + s[None, None, None, None, :, None] * (bh / S)[e][
            ..., None, None]
        valid = (w >= -0.5) & (w <= W - 0.5) & (h >= -0.5) & (h <= H - 0.5)
        w = xp.clip(w, 0.0, W - 1.0)
        h = xp.clip(h, 0.0, H - 1.0)
        g = xp.clip((k * G) // P, 0, G - 1)
        chan = (xp.arange(OD)[:, None, None] * G + g[None, :, None]) * G + g[None, None, :]
        plane = (bidx[:, None, None, None] * C + chan[None]) * (H * W)    # (R,OD,P,P)
        xa, xb = xp.floor(w), xp.ceil(w)
        ya, yb = xp.floor(h), xp.ceil(h)
        dx, dy = w - xa, h - ya
        xa, xb, ya, yb = (v.astype(np.int64) for v in (xa, xb, ya, yb))
        pl = plane[..., None, None]
        idx = xp.stack([pl + ya * W + xa, pl + yb * W + xa, pl + ya * W + xb,
                        pl + yb * W + xb], -1)
        wt = xp.stack([(1 - dx) * (1 - dy), (1 - dx) * dy, dx * (1 - dy), dx * dy], -1)
        return idx, wt * valid[..., None], valid, dx, dy, (tx, ty, rw, rh, cls, part_idx)

    def forward(self, ctx, p, inputs, aux, out=None):
        xp = ctx.xp
        data, rois = inputs[0], inputs[1]
        trans = None if p.no_trans else inputs[2]
        self.infer_shape(p, [a.shape for a in inputs])
        idx, wt, valid, _, _, _ = self._samples(xp, p, data, rois, trans)
        flat = data.reshape(-1).astype(np.float64)
        total = (flat[idx] * wt).sum(axis=(-3, -2, -1))
        count = valid.sum(axis=(-2, -1)).astype(np.float64)
        res = xp.where(count > 0, total / xp.maximum(count, 1), 0)
        return [store(out, 0, res.astype(data.dtype)), store(out, 1, count.astype(data.dtype))]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux, in_grad=None):
        xp = ctx.xp
        data, rois = inputs[0], inputs[1]
        trans = None if p.no_trans else inputs[2]
        idx, wt, valid, dx, dy, (tx, ty, rw, rh, cls, part_idx) = \
            self._samples(xp, p, data, rois, trans)
        count = outputs[1].astype(np.float64)
        g = xp.where(count > 0, out_grads[0].astype(np.float64) / xp.maximum(count, 1), 0)
        gs = g[..., None, None, None] * wt
        ddata = xp.bincount(idx.reshape(-1), weights=gs.reshape(-1),
                            minlength=data.size).reshape(data.shape)
        grads = [store(in_grad, 0, ddata.astype(data.dtype)),
                 store(in_grad, 1, xp.zeros(rois.shape, rois.dtype))]
        if trans is not None:
            flat = data.reshape(-1).astype(np.float64)
            v = flat[idx]                                    # (R,OD,P,P,S,S,4)
            v00, v01, v10, v11 = v[..., 0], v[..., 1], v[..., 2], v[..., 3]
            # d value / d w and d h of the bilinear sample (clamping ignored, as MXNet).
            dvdw = (v11 * dy + v10 * (1 - dy) - v01 * dy - v00 * (1 - dy)) * valid
            dvdh = (v11 * dx + v01 * (1 - dx) - v10 * dx - v00 * (1 - dx)) * valid
            e = (slice(None), None, None, None)
            gx = g * dvdw.sum(axis=(-2, -1)) * rw[e] * p.trans_std
            gy = g * dvdh.sum(axis=(-2, -1)) * rh[e] * p.trans_std
            dtrans = xp.zeros(trans.shape, np.float64)
            R, OD, P = g.shape[0], g.shape[1], g.shape[2]
            ri = xp.broadcast_to(xp.arange(R)[:, None, None, None], g.shape)
            ci = xp.broadcast_to(cls[None, :, None, None], g.shape)
            pi = xp.broadcast_to(part_idx[None, None, :, None], g.shape)
            pj = xp.broadcast_to(part_idx[None, None, None, :], g.shape)
            xp.add.at(dtrans, (ri, ci * 2, pi, pj), gx)
            xp.add.at(dtrans, (ri, ci * 2 + 1, pi, pj), gy)
            grads.append(store(in_grad, 2, dtrans.astype(trans.dtype)))
        return grads
