"""MultiBoxPrior and MultiBoxDetection against loops written from their definitions."""
import math

import numpy as np
import pytest

import mxnet as mx
from mxnet.base import MXNetError
from mxnet.test_utils import assert_almost_equal

nd = mx.nd


def ref_prior(H, W, sizes, ratios, steps=(-1, -1), offsets=(0.5, 0.5), clip=False):
    sy = steps[0] if steps[0] > 0 else 1 / H
    sx = steps[1] if steps[1] > 0 else 1 / W
    out = []
    for i in range(H):
        for j in range(W):
            cy, cx = (i + offsets[0]) * sy, (j + offsets[1]) * sx
            kinds = [(s, ratios[0]) for s in sizes] + [(sizes[0], r) for r in ratios[1:]]
            for s, r in kinds:
                w = s * H / W * math.sqrt(r) / 2
                h = s / math.sqrt(r) / 2
                out.append([cx - w, cy - h, cx + w, cy + h])
    out = np.array(out)[None]
    return np.clip(out, 0, 1) if clip else out


@pytest.mark.parametrize("kw", [{}, {"sizes": (0.5, 0.25), "ratios": (1, 2, 0.5)},
                                {"sizes": (0.3,), "ratios": (2, 3), "steps": (0.1, 0.2),
                                 "offsets": (0.3, 0.8), "clip": True}])
def test_multibox_prior(kw):
    x = nd.zeros((2, 3, 4, 6))
    out = nd.contrib.MultiBoxPrior(x, **kw)
    assert_almost_equal(out.asnumpy(), ref_prior(4, 6, kw.get("sizes", (1.0,)),
                                                 kw.get("ratios", (1.0,)),
                                                 kw.get("steps", (-1, -1)),
                                                 kw.get("offsets", (0.5, 0.5)),
                                                 kw.get("clip", False)), atol=1e-6)
    s = mx.sym.contrib.MultiBoxPrior(mx.sym.var("data"), **kw)
    assert s.infer_shape(data=(2, 3, 4, 6))[1] == [out.shape]


def test_multibox_prior_errors():
    with pytest.raises(MXNetError, match="4-D"):
        nd.contrib.MultiBoxPrior(nd.zeros((2, 3, 4)))
    with pytest.raises(MXNetError, match="positive"):
        nd.contrib.MultiBoxPrior(nd.zeros((1, 1, 2, 2)), sizes=(-0.5,))


def overlap(a, b):
    iw = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    ih = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    i = iw * ih
    u = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - i
    return i / u if u > 0 else 0.0


def ref_detection(prob, loc, anchors, threshold=0.01, nms=0.5, force=False,
                  var=(0.1, 0.1, 0.2, 0.2), clip=True):
    """One image, no nms_topk: the per-anchor loop."""
    C, N = prob.shape
    rows = []
    for i in range(N):
        j = 1 + int(np.argmax(prob[1:, i]))
        score = prob[j, i]
        if score < threshold:
            continue
        a = anchors[i]
        aw, ah = a[2] - a[0], a[3] - a[1]
        ax, ay = (a[0] + a[2]) / 2, (a[1] + a[3]) / 2
        p = loc[4 * i:4 * i + 4]
        ox, oy = p[0] * var[0] * aw + ax, p[1] * var[1] * ah + ay
        ow, oh = math.exp(p[2] * var[2]) * aw / 2, math.exp(p[3] * var[3]) * ah / 2
        box = [ox - ow, oy - oh, ox + ow, oy + oh]
        if clip:
            box = [min(max(v, 0), 1) for v in box]
        rows.append([j - 1, score] + box)
    rows.sort(key=lambda r: -r[1])
    for i in range(len(rows)):
        if rows[i][0] < 0:
            continue
        for k in range(i + 1, len(rows)):
            if rows[k][0] >= 0 and (force or rows[k][0] == rows[i][0]) and \
                    overlap(rows[i][2:], rows[k][2:]) >= nms:
                rows[k][0] = -1
    out = -np.ones((N, 6))
    if rows:
        out[:len(rows)] = rows
    return out


@pytest.mark.parametrize("kw", [{}, {"force_suppress": True, "nms_threshold": 0.3},
                                {"threshold": 0.3, "clip": False}])
def test_multibox_detection_matches_loop(kw):
    rng = np.random.RandomState(0)
    N, C = 30, 4
    ctr = rng.uniform(0.1, 0.9, (N, 2))
    wh = rng.uniform(0.05, 0.4, (N, 2))
    anc = np.concatenate([ctr - wh / 2, ctr + wh / 2], -1).astype(np.float32)
    logits = rng.randn(2, C, N) * 2
    prob = (np.exp(logits) / np.exp(logits).sum(1, keepdims=True)).astype(np.float32)
    loc = (rng.randn(2, N * 4) * 0.5).astype(np.float32)
    out = nd.contrib.MultiBoxDetection(nd.array(prob), nd.array(loc), nd.array(anc[None]),
                                       **kw).asnumpy()
    for b in range(2):
        ref = ref_detection(prob[b], loc[b], anc, kw.get("threshold", 0.01),
                            kw.get("nms_threshold", 0.5), kw.get("force_suppress", False),
                            clip=kw.get("clip", True))
        assert_almost_equal(out[b], ref, atol=1e-5)


def test_multibox_detection_shape_errors():
    with pytest.raises(MXNetError, match="anchor"):
        nd.contrib.MultiBoxDetection(nd.zeros((1, 3, 4)), nd.zeros((1, 16)),
                                     nd.zeros((1, 5, 4)))
    with pytest.raises(MXNetError, match="loc_pred"):
        nd.contrib.MultiBoxDetection(nd.zeros((1, 3, 4)), nd.zeros((1, 12)),
                                     nd.zeros((1, 4, 4)))
