"""Bounding-box operators of MXNet 1.9.1's contrib namespace: ``box_nms`` (alias
``box_non_maximum_suppression``), ``box_iou``, ``box_encode``, ``box_decode`` and
``bipartite_matching``.

Boxes are (x1, y1, x2, y2) "corner" or (x, y, w, h) "center" rows; areas have no +1
term. Every loop here runs over NMS blocks or matching rounds, never over boxes.
"""
import numpy as np

from ...base import MXNetError
from ..params import Bool, Enum, Float, Int, Schema
from ..registry import Op, ShapeError, register
from ._boxes import greedy_nms, pairwise_iou, to_center, to_corner
from ._common import store, store_all

__all__ = ["BoxNMS", "BoxIOU", "BoxEncode", "BoxDecode", "BipartiteMatching"]

_FORMATS = ("center", "corner")


def _calc_dtype(dt):
    """float16 boxes are compared in float32 (IoU of half-precision boxes is too coarse)."""
    return np.dtype(np.float32) if np.dtype(dt) == np.float16 else np.dtype(dt)


@register
class BoxNMS(Op):
    """Non-maximum suppression over the last two axes (boxes, box fields) of ``data``.

    Per batch (all leading axes): rows whose score (field ``score_index``) is above
    ``valid_thresh`` and whose class (field ``id_index``, when >= 0) is not
    ``background_id`` are candidates; the ``topk`` best (all when -1) go through greedy
    NMS with IoU threshold ``overlap_thresh`` (within a class unless ``force_suppress``
    or ``id_index`` < 0). The output lists the kept rows by decreasing score, then rows
    of -1; coordinates (4 fields from ``coord_start``) are converted from ``in_format``
    to ``out_format``. The gradient of each kept row flows back to its input row."""
    name = "_contrib_box_nms"
    named_inputs = False
    aliases = ("_contrib_box_non_maximum_suppression",)
    writes_outputs = True
    params = Schema(overlap_thresh=Float(0.5), valid_thresh=Float(0.0), topk=Int(-1),
                    coord_start=Int(2), score_index=Int(1), id_index=Int(-1),
                    background_id=Int(-1), force_suppress=Bool(False),
                    in_format=Enum(_FORMATS, "corner"), out_format=Enum(_FORMATS, "corner"))
    backward_uses = ("out_grad", "out_data")

    def outputs(self, p):
        return ["output0", "output1"]     # MXNet's names; output1: source row indices

    def num_visible_outputs(self, p):
        return 1

    def _check(self, p, shape):
        shape = tuple(shape)
        if len(shape) < 2:
            raise ShapeError(f"box_nms: data must have at least 2 dimensions (..., "
                             f"num_box, box_width), got shape {shape}")
        width = shape[-1]
        need = max(p.coord_start + 4, p.score_index + 1, p.id_index + 1, 5)
        if width < 5 or width < need:
            raise ShapeError(f"box_nms: the last dimension must hold the score and 4 "
                             f"coordinates ({need} fields with coord_start="
                             f"{p.coord_start}, score_index={p.score_index}, id_index="
                             f"{p.id_index}), got {width}")
        for nm in ("coord_start", "score_index"):
            if getattr(p, nm) < 0:
                raise MXNetError(f"box_nms: {nm} must be >= 0, got {getattr(p, nm)}")

    def infer_shape(self, p, in_shapes):
        d = in_shapes[0]
        if d is None:
            return [None], [None, None], []
        self._check(p, d)
        return [tuple(d)], [tuple(d), tuple(d[:-1])], []

    def infer_type(self, p, in_types):
        return [in_types[0]], [in_types[0], np.dtype(np.int64)], []

    def forward(self, ctx, p, inputs, aux, out=None):
        xp = ctx.xp
        data = inputs[0]
        self._check(p, data.shape)
        N, K = data.shape[-2:]
        x = data.reshape(-1, N, K)
        B = x.shape[0]
        ct = _calc_dtype(x.dtype)
        score = x[..., p.score_index].astype(ct)
        valid = score > ct.type(p.valid_thresh)
        ids = None
        if p.id_index >= 0:
            ids = x[..., p.id_index]
            valid &= ids != p.background_id      # -1 included: such rows are dropped
        key = xp.where(valid, score, -xp.inf)
        order = xp.argsort(-key, axis=1, kind="stable")
        count = valid.sum(axis=1)
        if p.topk > 0:
            count = xp.minimum(count, p.topk)
        cs = p.coord_start
        boxes = x[..., cs:cs + 4].astype(ct)
        if p.in_format == "center":
            boxes = to_corner(xp, boxes)
        class_aware = ids is not None and not p.force_suppress
        src = xp.full((B, N), -1, dtype=np.int64)
        for b in range(B):
            n = int(count[b])
            if n == 0:
                continue
            cand = order[b, :n]
            keep = greedy_nms(xp, boxes[b, cand], xp.ones(n, dtype=bool),
                              ids[b, cand] if class_aware else None, p.overlap_thresh)
            kept = cand[keep]
            src[b, :kept.size] = kept
        has = src >= 0
        rows = xp.take_along_axis(x, xp.maximum(src, 0)[..., None], axis=1)
        if p.in_format != p.out_format:
            conv = to_center if p.out_format == "center" else to_corner
            rows = rows.copy()
            rows[..., cs:cs + 4] = conv(xp, rows[..., cs:cs + 4])
        result = xp.where(has[..., None], rows, x.dtype.type(-1))
        return [store(out, 0, result.reshape(data.shape)),
                store(out, 1, src.reshape(data.shape[:-1]))]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux, in_grad=None):
        xp = ctx.xp
        shape = ctx.in_shapes[0]
        N, K = shape[-2:]
        g = out_grads[0].reshape(-1, N, K)
        src = outputs[1].reshape(-1, N)
        B = g.shape[0]
        dx = xp.zeros((B, N + 1, K), g.dtype)
        # Rows of -1 scatter into a spare slot N that is dropped afterwards.
        target = xp.where(src >= 0, src, N)
        xp.put_along_axis(dx, target[..., None], g, axis=1)
        return [store(in_grad, 0, dx[:, :N].reshape(shape))]


@register
class BoxIOU(Op):
    """Intersection over union of every box of ``lhs`` (..., 4) with every box of
    ``rhs`` (..., 4): shape lhs.shape[:-1] + rhs.shape[:-1]. Boxes without area on
    both sides give NaN (0/0), as in MXNet."""
    name = "_contrib_box_iou"
    writes_outputs = True
    params = Schema(format=Enum(_FORMATS, "corner"))
    zero_grad = True

    def arguments(self, p):
        return ["lhs", "rhs"]

    def infer_shape(self, p, in_shapes):
        a, b = in_shapes
        for nm, s in (("lhs", a), ("rhs", b)):
            if s is not None and (len(s) < 1 or s[-1] != 4):
                raise ShapeError(f"box_iou: {nm} must have 4 coordinates in its last "
                                 f"dimension, got shape {tuple(s)}")
        if a is None or b is None:
            return [a, b], [None], []
        return [tuple(a), tuple(b)], [tuple(a[:-1]) + tuple(b[:-1])], []

    def forward(self, ctx, p, inputs, aux, out=None):
        xp = ctx.xp
        a, b = inputs
        self.infer_shape(p, [a.shape, b.shape])
        ct = _calc_dtype(a.dtype)
        fa, fb = a.reshape(-1, 4).astype(ct), b.reshape(-1, 4).astype(ct)
        if p.format == "center":
            fa, fb = to_corner(xp, fa), to_corner(xp, fb)
        iou = pairwise_iou(xp, fa, fb).astype(a.dtype)
        return [store(out, 0, iou.reshape(a.shape[:-1] + b.shape[:-1]))]


@register
class BoxEncode(Op):
    """Regression targets of matched anchors: for each anchor whose ``samples`` entry
    is positive (> 0.5), the reference box ``refs[b, matches]`` relative to the
    anchor (both corner boxes), ((dx/w, dy/h, log(w'/w), log(h'/h)) - means) / stds.
    Outputs the targets and a mask of 1 for positive anchors (0 elsewhere, targets 0)."""
    name = "_contrib_box_encode"
    writes_outputs = True
    params = Schema()
    zero_grad = True

    def arguments(self, p):
        return ["samples", "matches", "anchors", "refs", "means", "stds"]

    def outputs(self, p):
        return ["output0", "output1"]

    def infer_shape(self, p, in_shapes):
        s, m, a, r, mu, sd = in_shapes
        if a is not None and (len(a) != 3 or a[2] != 4):
            raise ShapeError(f"box_encode: anchors must have shape (batch, num_anchors, 4), "
                             f"got {tuple(a)}")
        if r is not None and (len(r) != 3 or r[2] != 4):
            raise ShapeError(f"box_encode: refs must have shape (batch, num_refs, 4), got "
                             f"{tuple(r)}")
        for nm, v in (("means", mu), ("stds", sd)):
            if v is not None and tuple(v) != (4,):
                raise ShapeError(f"box_encode: {nm} must have shape (4,), got {tuple(v)}")
        base = tuple(s) if s is not None else tuple(m) if m is not None else \
            tuple(a[:2]) if a is not None else None
        for nm, v in (("samples", s), ("matches", m)):
            if v is not None and base is not None and tuple(v) != base:
                raise ShapeError(f"box_encode: {nm} must have shape {base}, got {tuple(v)}")
        if base is None:
            return list(in_shapes), [None, None], []
        o = base + (4,)
        return [base, base, o, r if r is None else tuple(r), (4,), (4,)], [o, o], []

    def infer_type(self, p, in_types):
        t = next((x for x in in_types if x is not None), None)
        return [t if x is None else x for x in in_types], [in_types[2] or t] * 2, []

    def forward(self, ctx, p, inputs, aux, out=None):
        xp = ctx.xp
        samples, matches, anchors, refs, means, stds = inputs
        self.infer_shape(p, [x.shape for x in inputs])
        dt = anchors.dtype
        idx = xp.clip(matches.astype(np.int64), 0, refs.shape[1] - 1)
        g = xp.take_along_axis(refs, idx[..., None], axis=1).astype(dt)
        ac, gc = to_center(xp, anchors), to_center(xp, g)
        with np.errstate(divide="ignore", invalid="ignore"):
            t = xp.stack([(gc[..., 0] - ac[..., 0]) / ac[..., 2],
                          (gc[..., 1] - ac[..., 1]) / ac[..., 3],
                          xp.log(gc[..., 2] / ac[..., 2]),
                          xp.log(gc[..., 3] / ac[..., 3])], axis=-1)
            t = (t - means.astype(dt)) / stds.astype(dt)
        pos = (samples > 0.5)[..., None]
        targets = xp.where(pos, t, 0).astype(dt)
        mask = xp.broadcast_to(pos, targets.shape).astype(dt)
        return store_all(out, [targets, mask])


@register
class BoxDecode(Op):
    """Decodes regression outputs ``data`` (B, N, 4) against ``anchors`` (1 or B, N, 4;
    center boxes unless ``format='corner'``) into corner boxes: center moves by
    (data0*std0*w, data1*std1*h), size scales by exp(data*std) (the exponent capped at
    ``clip`` when clip > 0)."""
    name = "_contrib_box_decode"
    writes_outputs = True
    params = Schema(std0=Float(1.0), std1=Float(1.0), std2=Float(1.0), std3=Float(1.0),
                    clip=Float(-1.0), format=Enum(_FORMATS, "center"))
    zero_grad = True

    def arguments(self, p):
        return ["data", "anchors"]

    def infer_shape(self, p, in_shapes):
        d, a = in_shapes
        if d is not None and (len(d) != 3 or d[2] != 4):
            raise ShapeError(f"box_decode: data must have shape (batch, num_anchors, 4), "
                             f"got {tuple(d)}")
        if a is not None and (len(a) != 3 or a[2] != 4):
            raise ShapeError(f"box_decode: anchors must have shape (1 or batch, "
                             f"num_anchors, 4), got {tuple(a)}")
        if d is not None and a is not None and (a[1] != d[1] or a[0] not in (1, d[0])):
            raise ShapeError(f"box_decode: anchors {tuple(a)} do not match data {tuple(d)}")
        return [d and tuple(d), a and tuple(a)], [d and tuple(d)], []

    def forward(self, ctx, p, inputs, aux, out=None):
        xp = ctx.xp
        data, anchors = inputs
        self.infer_shape(p, [data.shape, anchors.shape])
        dt = data.dtype.type
        a = anchors.astype(data.dtype)
        if p.format == "corner":
            a = to_center(xp, a)
        ax, ay, aw, ah = a[..., 0], a[..., 1], a[..., 2], a[..., 3]
        ox = data[..., 0] * dt(p.std0) * aw + ax
        oy = data[..., 1] * dt(p.std1) * ah + ay
        dw = data[..., 2] * dt(p.std2)
        dh = data[..., 3] * dt(p.std3)
        if p.clip > 0:
            dw = xp.minimum(dw, dt(p.clip))
            dh = xp.minimum(dh, dt(p.clip))
        ow = xp.exp(dw) * aw / 2
        oh = xp.exp(dh) * ah / 2
        res = xp.stack([ox - ow, oy - oh, ox + ow, oy + oh], axis=-1).astype(data.dtype)
        return [store(out, 0, res)]


@register
class BipartiteMatching(Op):
    """Greedy bipartite matching of a score matrix ``data`` (..., N, M): repeatedly
    the best remaining pair (highest score, lowest with ``is_ascend``) whose row and
    column are both unmatched is matched, while its score is strictly beyond
    ``threshold``; with ``topk`` > 0 matching stops after topk + 1 pairs (MXNet
    1.9.1's count). Outputs the column matched
    to each row and the row matched to each column (-1: none), as floats."""
    name = "_contrib_bipartite_matching"
    named_inputs = False
    writes_outputs = True
    params = Schema(is_ascend=Bool(False), threshold=Float(), topk=Int(-1))
    zero_grad = True

    def outputs(self, p):
        return ["output0", "output1"]

    def infer_shape(self, p, in_shapes):
        d = in_shapes[0]
        if d is None:
            return [None], [None, None], []
        if len(d) < 2:
            raise ShapeError(f"bipartite_matching: data must have at least 2 dimensions "
                             f"(..., rows, cols), got {tuple(d)}")
        d = tuple(d)
        return [d], [d[:-1], d[:-2] + d[-1:]], []

    def forward(self, ctx, p, inputs, aux, out=None):
        xp = ctx.xp
        data = inputs[0]
        self.infer_shape(p, [data.shape])
        N, M = data.shape[-2:]
        x = data.reshape(-1, N, M).astype(np.float64)
        B = x.shape[0]
        # Ascending order is descending order of the negated scores.
        s = -x if p.is_ascend else x
        thr = -p.threshold if p.is_ascend else p.threshold
        row = xp.full((B, N), -1, np.int64)
        col = xp.full((B, M), -1, np.int64)
        active = xp.ones(B, bool)
        bi = xp.arange(B)
        # MXNet 1.9.1 stops only once the count of matches exceeds topk: topk + 1 pairs.
        rounds = min(N, M) if p.topk <= 0 else min(N, M, p.topk + 1)
        for _ in range(rounds):
            free = (row < 0)[:, :, None] & (col < 0)[:, None, :]
            masked = xp.where(free, s, -xp.inf).reshape(B, -1)
            best = masked.argmax(axis=1)
            val = masked[bi, best]
            active &= val > thr                 # a score equal to threshold fails
            if not bool(active.any()):
                break
            r, c = best // M, best % M
            rb, cb = bi[active], r[active]
            row[rb, cb] = c[active]
            col[rb, c[active]] = r[active]
        dt = data.dtype
        return store_all(out, [row.astype(dt).reshape(data.shape[:-1]),
                               col.astype(dt).reshape(data.shape[:-2] + (M,))])
