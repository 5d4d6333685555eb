"""SSD's anchor operators (contrib): ``MultiBoxPrior``, ``MultiBoxDetection`` and
``MultiBoxTarget``, as in MXNet 1.9.1. Anchors are corner boxes in [0, 1] image units.
"""
import numpy as np

from ...base import MXNetError
from ..params import Bool, Float, Int, Schema
from ..registry import Op, ShapeError, register
from ._boxes import greedy_nms, pairwise_iou
from ._common import FloatTuple, store, store_all

__all__ = ["MultiBoxPrior", "MultiBoxDetection", "MultiBoxTarget"]

_VARIANCES = (0.1, 0.1, 0.2, 0.2)


@register
class MultiBoxPrior(Op):
    """Anchor boxes for every cell of a feature map (batch, channel, height, width):
    (1, height*width*k, 4) with k = len(sizes) + len(ratios) - 1 per cell: each size
    with the first ratio, then the first size with each other ratio. A box of size s
    and ratio r is s*H/W*sqrt(r) wide and s/sqrt(r) high, centred on
    ((col + offsets[1]) * steps[1], (row + offsets[0]) * steps[0]) (steps default
    1/W, 1/H); ``clip`` clamps coordinates to [0, 1]."""
    name = "_contrib_MultiBoxPrior"
    writes_outputs = True
    params = Schema(sizes=FloatTuple((1.0,)), ratios=FloatTuple((1.0,)), clip=Bool(False),
                    steps=FloatTuple((-1.0, -1.0)), offsets=FloatTuple((0.5, 0.5)))
    zero_grad = True

    def check_params(self, p):
        if len(p.steps) != 2 or len(p.offsets) != 2:
            raise MXNetError("MultiBoxPrior: steps and offsets must have 2 values (y, x)")
        if not p.sizes or not p.ratios:
            raise MXNetError("MultiBoxPrior: sizes and ratios must not be empty")
        if any(s <= 0 for s in p.sizes) or any(r <= 0 for r in p.ratios):
            raise MXNetError(f"MultiBoxPrior: sizes {p.sizes} and ratios {p.ratios} must be "
                             "positive")

    def infer_shape(self, p, in_shapes):
        d = in_shapes[0]
        if d is None:
            return [None], [None], []
        if len(d) != 4:
            raise ShapeError(f"MultiBoxPrior: data must be 4-D (batch, channel, height, "
                             f"width), got shape {tuple(d)}")
        k = len(p.sizes) + len(p.ratios) - 1
        return [tuple(d)], [(1, d[2] * d[3] * k, 4)], []

    def forward(self, ctx, p, inputs, aux, out=None):
        xp = ctx.xp
        d = inputs[0]
        _, (oshape,), _ = self.infer_shape(p, [d.shape])
        H, W = d.shape[2], d.shape[3]
        dt = d.dtype
        step_y = p.steps[0] if p.steps[0] > 0 else 1.0 / H
        step_x = p.steps[1] if p.steps[1] > 0 else 1.0 / W
        # MXNet computes in float32: half widths/heights per anchor kind.
        sz = [(s, p.ratios[0]) for s in p.sizes] + [(p.sizes[0], r) for r in p.ratios[1:]]
        f = np.float32
        hw = np.array([f(s) * f(H) / f(W) * f(np.sqrt(f(r))) / f(2) for s, r in sz], f)
        hh = np.array([f(s) / f(np.sqrt(f(r))) / f(2) for s, r in sz], f)
        cy = (np.arange(H, dtype=f) + f(p.offsets[0])) * f(step_y)
        cx = (np.arange(W, dtype=f) + f(p.offsets[1])) * f(step_x)
        cy = np.broadcast_to(cy[:, None, None], (H, W, len(sz)))
        cx = np.broadcast_to(cx[None, :, None], (H, W, len(sz)))
        boxes = np.stack([cx - hw, cy - hh, cx + hw, cy + hh], axis=-1)
        if p.clip:
            boxes = np.clip(boxes, 0, 1)
        res = xp.asarray(boxes.reshape(oshape)).astype(dt)
        return [store(out, 0, res)]


def _decode(xp, loc, anchors, var, clip):
    """SSD box decoding: loc (B, N, 4) offsets against corner anchors (N, 4)."""
    aw = anchors[:, 2] - anchors[:, 0]
    ah = anchors[:, 3] - anchors[:, 1]
    ax = (anchors[:, 0] + anchors[:, 2]) / 2
    ay = (anchors[:, 1] + anchors[:, 3]) / 2
    ox = loc[..., 0] * var[0] * aw + ax
    oy = loc[..., 1] * var[1] * ah + ay
    ow = xp.exp(loc[..., 2] * var[2]) * aw / 2
    oh = xp.exp(loc[..., 3] * var[3]) * ah / 2
    box = xp.stack([ox - ow, oy - oh, ox + ow, oy + oh], axis=-1)
    return xp.clip(box, 0, 1) if clip else box


@register
class MultiBoxDetection(Op):
    """SSD detections from class probabilities (B, classes, N), location offsets
    (B, N*4) and anchors (1, N, 4): (B, N, 6) rows [class, score, x1, y1, x2, y2].

    Each anchor takes its best class other than class 0 (the background; MXNet 1.9.1
    accepts ``background_id`` but always uses class 0), reported as id - 1; anchors
    scoring below ``threshold`` are dropped. The valid rows, by decreasing score
    (the first ``nms_topk`` when > 0; later valid rows keep their anchor-order place,
    as MXNet 1.9.1 leaves them), go through greedy NMS at IoU >= ``nms_threshold``
    within a class (any class with ``force_suppress``); suppressed rows get class -1
    and keep their score and box. Rows past the valid ones are all -1."""
    name = "_contrib_MultiBoxDetection"
    writes_outputs = True
    params = Schema(clip=Bool(True), threshold=Float(0.01), background_id=Int(0),
                    nms_threshold=Float(0.5), force_suppress=Bool(False),
                    variances=FloatTuple(_VARIANCES), nms_topk=Int(-1))
    zero_grad = True

    def arguments(self, p):
        return ["cls_prob", "loc_pred", "anchor"]

    def infer_shape(self, p, in_shapes):
        if len(p.variances) != 4:
            raise MXNetError(f"MultiBoxDetection: variances must have 4 values, got "
                             f"{p.variances}")
        c, l, a = in_shapes
        if c is not None and len(c) != 3:
            raise ShapeError(f"MultiBoxDetection: cls_prob must be (batch, classes, "
                             f"anchors), got {tuple(c)}")
        if a is not None and (len(a) != 3 or a[0] != 1 or a[2] != 4):
            raise ShapeError(f"MultiBoxDetection: anchor must be (1, anchors, 4), got "
                             f"{tuple(a)}")
        if c is None:
            return list(in_shapes), [None], []
        B, _, N = c
        if a is not None and a[1] != N:
            raise ShapeError(f"MultiBoxDetection: {a[1]} anchors but cls_prob has {N}")
        if l is not None and tuple(l) != (B, N * 4):
            raise ShapeError(f"MultiBoxDetection: loc_pred must be {(B, N * 4)}, got "
                             f"{tuple(l)}")
        return [tuple(c), (B, N * 4), (1, N, 4)], [(B, N, 6)], []

    def forward(self, ctx, p, inputs, aux, out=None):
        xp = ctx.xp
        cls, loc, anchor = inputs
        self.infer_shape(p, [x.shape for x in inputs])
        B, C, N = cls.shape
        dt = cls.dtype
        ct = np.float32 if dt == np.float16 else dt.type
        # MXNet 1.9.1 treats class 0 as the background whatever background_id says.
        prob = cls.astype(ct)[:, 1:]
        best = prob.argmax(axis=1)                                  # (B, N), first max
        score = xp.take_along_axis(prob, best[:, None], axis=1)[:, 0]
        valid = score >= ct(p.threshold)
        best = best + 1
        boxes = _decode(xp, loc.astype(ct).reshape(B, N, 4), anchor[0].astype(ct),
                        [ct(v) for v in p.variances], p.clip)
        rows = xp.concatenate([(best - 1).astype(ct)[..., None], score[..., None], boxes],
                              axis=-1)                              # (B, N, 6)
        res = xp.full((B, N, 6), -1, ct)
        for b in range(B):
            vidx = xp.nonzero(valid[b])[0]                          # anchor order
            n = int(vidx.size)
            if n == 0:
                continue
            compact = rows[b, vidx]
            order = xp.argsort(-compact[:, 1], kind="stable")
            keep_n = min(n, p.nms_topk) if p.nms_topk > 0 else n
            table = compact.copy()
            table[:keep_n] = compact[order[:keep_n]]
            top = table[:keep_n]
            ids = None if p.force_suppress else top[:, 0]
            kept = greedy_nms(xp, top[:, 2:6], xp.ones(keep_n, dtype=bool), ids,
                              p.nms_threshold, inclusive=True)
            table[:keep_n, 0] = xp.where(kept, top[:, 0], -1)
            table[keep_n:, 0] = -1
            res[b, :n] = table
        return [store(out, 0, res.astype(dt))]


@register
class MultiBoxTarget(Op):
    """SSD training targets for anchors (1, N, 4) given labels (B, M, 5+) rows
    [class, x1, y1, x2, y2] (a row of class -1 ends an image's labels) and class
    predictions (B, classes, N).

    Matching: each label first takes the free anchor it overlaps most (greedily, best
    pair first, while the IoU is above 1e-6); every other anchor whose best IoU exceeds
    ``overlap_threshold`` takes that label. Matched anchors get class label + 1,
    location targets ((dx/w, dy/h) / variances[:2], log(size ratio) / variances[2:])
    and a location mask of 1. Without negative mining (``negative_mining_ratio`` <= 0)
    every other anchor gets class 0. With it, the int(positives * ratio) unmatched
    anchors with best IoU below ``negative_mining_thresh`` and the lowest background
    probability (softmax of cls_pred) get 0 and the rest ``ignore_label``
    (``minimum_negative_samples`` is accepted and, as in MXNet 1.9.1, has no effect).
    Outputs (loc_target (B, N*4), loc_mask (B, N*4), cls_target (B, N))."""
    name = "_contrib_MultiBoxTarget"
    writes_outputs = True
    params = Schema(overlap_threshold=Float(0.5), ignore_label=Float(-1.0),
                    negative_mining_ratio=Float(-1.0), negative_mining_thresh=Float(0.5),
                    minimum_negative_samples=Int(0), variances=FloatTuple(_VARIANCES))
    zero_grad = True

    def arguments(self, p):
        return ["anchor", "label", "cls_pred"]

    def outputs(self, p):
        return ["loc_target", "loc_mask", "cls_target"]

    def infer_shape(self, p, in_shapes):
        if len(p.variances) != 4:
            raise MXNetError(f"MultiBoxTarget: variances must have 4 values, got "
                             f"{p.variances}")
        a, l, c = in_shapes
        if a is not None and (len(a) != 3 or a[0] != 1 or a[2] != 4):
            raise ShapeError(f"MultiBoxTarget: anchor must be (1, anchors, 4), got "
                             f"{tuple(a)}")
        if l is not None and (len(l) != 3 or l[2] < 5):
            raise ShapeError(f"MultiBoxTarget: label must be (batch, labels, >=5), got "
                             f"{tuple(l)}")
        if c is not None and len(c) != 3:
            raise ShapeError(f"MultiBoxTarget: cls_pred must be (batch, classes, anchors), "
                             f"got {tuple(c)}")
        if a is None or c is None:
            return list(in_shapes), [None, None, None], []
        B, N = c[0], a[1]
        if c[2] != N:
            raise ShapeError(f"MultiBoxTarget: cls_pred has {c[2]} anchors, anchor has {N}")
        if l is not None and l[0] != B:
            raise ShapeError(f"MultiBoxTarget: label batch {l[0]} vs cls_pred batch {B}")
        return [tuple(a), l and tuple(l), tuple(c)], [(B, N * 4), (B, N * 4), (B, N)], []

    def _match(self, xp, anchors, gt, p):
        """(N,) index of the matched label per anchor (-1: none) and best IoU (N,)."""
        N, G = anchors.shape[0], gt.shape[0]
        match = xp.full(N, -1, np.int64)
        if G == 0:
            return match, xp.zeros(N)
        iou = pairwise_iou(xp, anchors, gt[:, 1:5], zero_if_empty=True)      # (N, G)
        free_a = xp.ones(N, bool)
        free_g = xp.ones(G, bool)
        for _ in range(min(N, G)):
            m = xp.where(free_a[:, None] & free_g[None, :], iou, -1.0)
            k = int(m.argmax())
            i, j = divmod(k, G)
            if float(m[i, j]) <= 1e-6:
                break
            match[i] = j
            free_a[i] = False
            free_g[j] = False
        best = iou.max(axis=1)
        if p.overlap_threshold > 0:
            extra = free_a & (best > p.overlap_threshold)
            match = xp.where(extra, iou.argmax(axis=1), match)
        return match, best

    def forward(self, ctx, p, inputs, aux, out=None):
        xp = ctx.xp
        anchor, label, cls_pred = inputs
        self.infer_shape(p, [x.shape for x in inputs])
        dt = cls_pred.dtype
        B, C, N = cls_pred.shape
        anchors = anchor[0].astype(np.float64)
        var = p.variances
        aw = anchors[:, 2] - anchors[:, 0]
        ah = anchors[:, 3] - anchors[:, 1]
        ax = (anchors[:, 0] + anchors[:, 2]) / 2
        ay = (anchors[:, 1] + anchors[:, 3]) / 2
        loc_t = xp.zeros((B, N, 4))
        loc_m = xp.zeros((B, N, 4))
        cls_t = xp.zeros((B, N))
        for b in range(B):
            lab = label[b].astype(np.float64)
            ends = xp.nonzero(lab[:, 0] == -1)[0]
            gt = lab[:int(ends[0])] if ends.size else lab
            match, best = self._match(xp, anchors, gt, p)
            pos = match >= 0
            g = gt[xp.maximum(match, 0)] if gt.shape[0] else xp.zeros((N, 5))
            gw, gh = g[:, 3] - g[:, 1], g[:, 4] - g[:, 2]
            gx, gy = (g[:, 1] + g[:, 3]) / 2, (g[:, 2] + g[:, 4]) / 2
            with np.errstate(divide="ignore", invalid="ignore"):
                t = xp.stack([(gx - ax) / aw / var[0], (gy - ay) / ah / var[1],
                              xp.log(gw / aw) / var[2], xp.log(gh / ah) / var[3]], -1)
            loc_t[b] = xp.where(pos[:, None], t, 0)
            loc_m[b] = pos[:, None]
            cls = xp.where(pos, g[:, 0] + 1, 0.0)
            if p.negative_mining_ratio > 0:
                cand = ~pos & (best < p.negative_mining_thresh)
                n_neg = min(int(int(pos.sum()) * p.negative_mining_ratio), int(cand.sum()))
                logits = cls_pred[b].astype(np.float64)
                e = xp.exp(logits - logits.max(axis=0))
                p_bg = e[0] / e.sum(axis=0)
                order = xp.argsort(xp.where(cand, p_bg, xp.inf), kind="stable")
                neg = xp.zeros(N, bool)
                neg[order[:n_neg]] = True
                cls = xp.where(pos, cls, xp.where(neg, 0.0, p.ignore_label))
            cls_t[b] = cls
        return store_all(out, [loc_t.reshape(B, N * 4).astype(dt),
                               loc_m.reshape(B, N * 4).astype(dt), cls_t.astype(dt)])
