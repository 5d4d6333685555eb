"""Faster R-CNN's region proposal operators (contrib): ``Proposal`` (one image) and
``MultiProposal`` (a batch), as in MXNet 1.9.1.

Boxes here count pixels (width = x2 - x1 + 1), as in the original R-CNN code. For every
feature-map cell and every anchor shape (ratios x scales around a base square of
``feature_stride`` pixels) the predicted deltas move the anchor; boxes are clipped to
the image, boxes smaller than ``rpn_min_size * im_scale`` and cells outside the image
get score -1, the ``rpn_pre_nms_top_n`` best go through NMS at ``threshold`` and the
first ``rpn_post_nms_top_n`` survivors are output (repeated cyclically when fewer
survive).
"""
import numpy as np

from ...base import MXNetError
from ..params import Bool, Float, Int, Schema
from ..registry import Op, ShapeError, register
from ._boxes import greedy_nms
from ._common import FloatTuple, store_all

__all__ = ["Proposal", "MultiProposal", "generate_anchors"]


def _round_half_up(v):
    return np.floor(v + 0.5)


def generate_anchors(stride, ratios, scales):
    """(len(ratios) * len(scales), 4) anchors around the base square [0, stride-1]^2:
    for each ratio (h/w, area kept), for each scale."""
    base = float(stride)
    ctr = 0.5 * (base - 1)
    out = []
    for r in ratios:
        ws = _round_half_up(np.sqrt(base * base / r))
        hs = _round_half_up(ws * r)
        for s in scales:
            w, h = ws * s, hs * s
            out.append([ctr - 0.5 * (w - 1), ctr - 0.5 * (h - 1),
                        ctr + 0.5 * (w - 1), ctr + 0.5 * (h - 1)])
    return np.array(out)


class _ProposalBase(Op):
    writes_outputs = True
    params = Schema(rpn_pre_nms_top_n=Int(6000), rpn_post_nms_top_n=Int(300),
                    threshold=Float(0.7), rpn_min_size=Int(16),
                    scales=FloatTuple((4.0, 8.0, 16.0, 32.0)),
                    ratios=FloatTuple((0.5, 1.0, 2.0)), feature_stride=Int(16),
                    output_score=Bool(False), iou_loss=Bool(False))
    zero_grad = True
    batch_one = False

    def arguments(self, p):
        return ["cls_prob", "bbox_pred", "im_info"]

    def outputs(self, p):
        return ["output", "score"]

    def num_visible_outputs(self, p):
        return 2 if p.output_score else 1

    def infer_shape(self, p, in_shapes):
        c, b, i = in_shapes
        if c is None:
            return list(in_shapes), [None, None], []
        if len(c) != 4:
            raise ShapeError(f"{self.name}: cls_prob must be (batch, 2*anchors, height, "
                             f"width), got {tuple(c)}")
        B, A2, H, W = c
        A = len(p.ratios) * len(p.scales)
        if A2 != 2 * A:
            raise ShapeError(f"{self.name}: cls_prob has {A2} channels, expected 2 x "
                             f"{A} anchors (ratios x scales)")
        if self.batch_one and B != 1:
            raise ShapeError(f"{self.name}: only a batch of 1 is supported (got {B}); use "
                             "MultiProposal")
        if b is not None and tuple(b) != (B, 4 * A, H, W):
            raise ShapeError(f"{self.name}: bbox_pred must be {(B, 4 * A, H, W)}, got "
                             f"{tuple(b)}")
        if i is not None and (len(i) != 2 or i[0] != B or i[1] < 3):
            raise ShapeError(f"{self.name}: im_info must be ({B}, 3), got {tuple(i)}")
        n = B * p.rpn_post_nms_top_n
        return [tuple(c), (B, 4 * A, H, W), (B, 3)], [(n, 5), (n, 1)], []

    def _one(self, xp, p, scores, deltas, info, anchors):
        """Proposals of one image: (post, 4) boxes and (post,) scores."""
        A4, H, W = deltas.shape
        A = A4 // 4
        stride = p.feature_stride
        shift_x = xp.arange(W) * stride
        shift_y = xp.arange(H) * stride
        # Cell-major order (h, w, anchor), MXNet's enumeration.
        shifts = xp.stack([xp.broadcast_to(shift_x[None, :], (H, W)),
                           xp.broadcast_to(shift_y[:, None], (H, W))], -1)
        shifts = xp.concatenate([shifts, shifts], -1).reshape(H, W, 1, 4)
        boxes = (anchors[None, None] + shifts).reshape(-1, 4)
        d = deltas.reshape(A, 4, H, W).transpose(2, 3, 0, 1).reshape(-1, 4)
        score = scores[A:].transpose(1, 2, 0).reshape(-1).copy()
        im_h, im_w, im_scale = float(info[0]), float(info[1]), float(info[2])
        if p.iou_loss:
            pred = boxes + d
        else:
            w = boxes[:, 2] - boxes[:, 0] + 1
            h = boxes[:, 3] - boxes[:, 1] + 1
            cx = boxes[:, 0] + 0.5 * (w - 1)
            cy = boxes[:, 1] + 0.5 * (h - 1)
            pcx, pcy = d[:, 0] * w + cx, d[:, 1] * h + cy
            pw, ph = xp.exp(d[:, 2]) * w, xp.exp(d[:, 3]) * h
            pred = xp.stack([pcx - 0.5 * (pw - 1), pcy - 0.5 * (ph - 1),
                             pcx + 0.5 * (pw - 1), pcy + 0.5 * (ph - 1)], -1)
        lim = xp.asarray([im_w - 1, im_h - 1, im_w - 1, im_h - 1])
        pred = xp.clip(pred, 0, lim)
        real_h, real_w = int(im_h / stride), int(im_w / stride)
        hh = xp.broadcast_to(xp.arange(H)[:, None, None], (H, W, A)).reshape(-1)
        ww = xp.broadcast_to(xp.arange(W)[None, :, None], (H, W, A)).reshape(-1)
        score[(hh >= real_h) | (ww >= real_w)] = -1
        min_size = p.rpn_min_size * im_scale
        small = ((pred[:, 2] - pred[:, 0] + 1) < min_size) | \
            ((pred[:, 3] - pred[:, 1] + 1) < min_size)
        # Too-small boxes are widened by min_size/2 each side and scored -1.
        pred = xp.where(small[:, None], pred + xp.asarray([-1, -1, 1, 1]) * (min_size / 2),
                        pred)
        score[small] = -1
        n = score.shape[0]
        pre = min(p.rpn_pre_nms_top_n, n) if p.rpn_pre_nms_top_n > 0 else n
        post = min(p.rpn_post_nms_top_n, pre)
        order = xp.argsort(-score, kind="stable")[:pre]
        cand, cs = pred[order], score[order]
        keep = xp.nonzero(greedy_nms(xp, cand, xp.ones(pre, bool), None, p.threshold,
                                     plus_one=1.0))[0][:post]
        pick = keep[xp.arange(p.rpn_post_nms_top_n) % keep.shape[0]]
        return cand[pick], cs[pick]

    def forward(self, ctx, p, inputs, aux, out=None):
        xp = ctx.xp
        cls, bbox, info = inputs
        self.infer_shape(p, [x.shape for x in inputs])
        if p.rpn_post_nms_top_n < 1:
            raise MXNetError(f"{self.name}: rpn_post_nms_top_n must be >= 1")
        dt = cls.dtype
        anchors = xp.asarray(generate_anchors(p.feature_stride, p.ratios, p.scales))
        rois, scores = [], []
        info = info.astype(np.float64)
        for b in range(cls.shape[0]):
            boxes, sc = self._one(xp, p, cls[b].astype(np.float64),
                                  bbox[b].astype(np.float64), info[b], anchors)
            rois.append(xp.concatenate([xp.full((boxes.shape[0], 1), b, np.float64), boxes],
                                       -1))
            scores.append(sc[:, None])
        return store_all(out, [xp.concatenate(rois).astype(dt),
                               xp.concatenate(scores).astype(dt)])


@register
class Proposal(_ProposalBase):
    """Region proposals for one image: (rpn_post_nms_top_n, 5) rows [0, x1, y1, x2, y2]
    (and their scores with ``output_score``)."""
    name = "_contrib_Proposal"
    batch_one = True


@register
class MultiProposal(_ProposalBase):
    """Region proposals for a batch: (batch * rpn_post_nms_top_n, 5) rows
    [image index, x1, y1, x2, y2] (and scores with ``output_score``)."""
    name = "_contrib_MultiProposal"
