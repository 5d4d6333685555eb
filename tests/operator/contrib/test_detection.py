"""box_nms, box_iou, box_encode, box_decode and bipartite_matching against hand-worked
cases and plain-loop references written from the operators' definitions."""
import numpy as np
import pytest

import mxnet as mx
from mxnet.base import MXNetError
from mxnet.test_utils import assert_almost_equal

nd = mx.nd


def iou(a, b):
    """IoU of two corner boxes, straight from the definition."""
    iw = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    ih = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = iw * ih
    area = lambda r: 0.0 if r[2] < r[0] or r[3] < r[1] else (r[2] - r[0]) * (r[3] - r[1])
    union = area(a) + area(b) - inter
    return inter / union if union > 0 else 0.0


def ref_nms(x, thresh, valid=0.0, topk=-1, cs=2, si=1, ii=-1, bg=-1, force=False):
    """One batch (N, K): the box-by-box greedy loop."""
    cand = [i for i in range(len(x)) if x[i, si] > valid and
            not (ii >= 0 and bg >= 0 and x[i, ii] == bg)]
    cand.sort(key=lambda i: -x[i, si])
    if topk > 0:
        cand = cand[:topk]
    kept = []
    for i in cand:
        ok = True
        for j in kept:
            same = ii < 0 or force or x[i, ii] == x[j, ii]
            if same and iou(x[j, cs:cs + 4], x[i, cs:cs + 4]) > thresh:
                ok = False
                break
        if ok:
            kept.append(i)
    out = -np.ones_like(x)
    out[:len(kept)] = x[kept]
    return out, kept


def random_boxes(rng, n, k=6):
    x = np.zeros((n, k), np.float32)
    x[:, 0] = rng.randint(0, 3, n)
    x[:, 1] = rng.uniform(0, 1, n)
    xy = rng.uniform(0, 10, (n, 2))
    x[:, 2:4] = xy
    x[:, 4:6] = xy + rng.uniform(1, 5, (n, 2))
    return x


def test_box_nms_hand_worked():
    # Box 1 (0.4) overlaps box 5 (0.9) of the same class fully; box 2 (0.3) lies
    # inside box 0 (0.5, IoU 0.16 > 0.1); box 4 has a score below valid_thresh.
    d = np.array([[0, 0.5, 0.1, 0.1, 0.2, 0.2], [1, 0.4, 0.1, 0.1, 0.2, 0.2],
                  [0, 0.3, 0.1, 0.1, 0.14, 0.14], [2, 0.6, 0.5, 0.5, 0.7, 0.8],
                  [0, 0.05, 0, 0, 1, 1], [1, 0.9, 0.1, 0.1, 0.2, 0.2]], np.float32)
    out = nd.contrib.box_nms(nd.array(d), overlap_thresh=0.1, id_index=0,
                             valid_thresh=0.1).asnumpy()
    assert_almost_equal(out[:3], d[[5, 3, 0]])
    assert (out[3:] == -1).all()
    # Class-blind: box 5 also removes box 0 and box 2.
    out = nd.contrib.box_nms(nd.array(d), overlap_thresh=0.1, valid_thresh=0.1).asnumpy()
    assert_almost_equal(out[:2], d[[5, 3]])
    assert (out[2:] == -1).all()


@pytest.mark.parametrize("kw", [{}, {"id_index": 0}, {"id_index": 0, "force_suppress": True},
                                {"id_index": 0, "background_id": 2, "topk": 7,
                                 "valid_thresh": 0.2},
                                {"overlap_thresh": 0.1}, {"overlap_thresh": 0.9}])
def test_box_nms_matches_loop_reference(kw):
    rng = np.random.RandomState(3)
    x = random_boxes(rng, 300)         # > one NMS block: exercises block hand-over
    out = nd.contrib.box_nms(nd.array(x[None]), **kw).asnumpy()[0]
    kw2 = dict(kw)
    ref, _ = ref_nms(x, kw2.pop("overlap_thresh", 0.5), valid=kw2.pop("valid_thresh", 0.0),
                     topk=kw2.pop("topk", -1), ii=kw2.pop("id_index", -1),
                     bg=kw2.pop("background_id", -1), force=kw2.pop("force_suppress", False))
    assert_almost_equal(out, ref)


def test_box_nms_formats_layout_and_batches():
    rng = np.random.RandomState(4)
    x = random_boxes(rng, 40)
    center = x.copy()
    center[:, 2:4] = (x[:, 2:4] + x[:, 4:6]) / 2
    center[:, 4:6] = x[:, 4:6] - x[:, 2:4]
    a = nd.contrib.box_nms(nd.array(x), overlap_thresh=0.3).asnumpy()
    b = nd.contrib.box_nms(nd.array(center), overlap_thresh=0.3, in_format="center",
                           out_format="corner").asnumpy()
    assert_almost_equal(a, b, atol=1e-5)
    c = nd.contrib.box_nms(nd.array(x), overlap_thresh=0.3, out_format="center").asnumpy()
    keep = a[:, 0] >= 0
    assert_almost_equal(c[keep, 2:4], (a[keep, 2:4] + a[keep, 4:6]) / 2, atol=1e-5)
    # Fields moved around: score last, coordinates first, id in the middle.
    perm = x[:, [2, 3, 4, 5, 0, 1]]
    p = nd.contrib.box_nms(nd.array(perm), coord_start=0, score_index=5, id_index=4,
                           overlap_thresh=0.3).asnumpy()
    ref, _ = ref_nms(perm, 0.3, cs=0, si=5, ii=4)
    assert_almost_equal(p, ref)
    # Leading batch axes are independent problems.
    xs = np.stack([random_boxes(rng, 20) for _ in range(6)]).reshape(2, 3, 20, 6)
    out = nd.contrib.box_nms(nd.array(xs), overlap_thresh=0.4).asnumpy()
    for i in range(2):
        for j in range(3):
            assert_almost_equal(out[i, j], ref_nms(xs[i, j], 0.4)[0])


def test_box_nms_alias_dtype_and_symbol():
    x = random_boxes(np.random.RandomState(5), 16).astype(np.float64)
    a = nd.contrib.box_non_maximum_suppression(nd.array(x, dtype="float64"))
    assert a.dtype == np.float64
    s = mx.sym.contrib.box_nms(mx.sym.var("data"), overlap_thresh=0.5)
    assert s.name.startswith("box_nms")
    assert s.infer_shape(data=(2, 16, 6))[1] == [(2, 16, 6)]
    out = s.bind(mx.cpu(), {"data": nd.array(x)}).forward()[0]
    assert_almost_equal(out.asnumpy(), a.asnumpy())


def test_box_nms_gradient_goes_to_kept_rows():
    x = random_boxes(np.random.RandomState(6), 30)
    _, kept = ref_nms(x, 0.3, ii=0)
    data = nd.array(x)
    data.attach_grad()
    head = np.random.RandomState(7).randn(30, 6).astype(np.float32)
    with mx.autograd.record():
        y = nd.contrib.box_nms(data, overlap_thresh=0.3, id_index=0)
    y.backward(nd.array(head))
    want = np.zeros_like(x)
    want[kept] = head[:len(kept)]
    assert_almost_equal(data.grad.asnumpy(), want)


def test_box_nms_errors():
    with pytest.raises(MXNetError, match="at least 2 dimensions"):
        nd.contrib.box_nms(nd.ones((5,)))
    with pytest.raises(MXNetError, match="last dimension"):
        nd.contrib.box_nms(nd.ones((3, 4)))
    with pytest.raises(MXNetError, match="in_format"):
        nd.contrib.box_nms(nd.ones((3, 6)), in_format="xyxy")
    with pytest.raises(MXNetError, match="unknown parameter"):
        nd.contrib.box_nms(nd.ones((3, 6)), thresh=0.3)


def test_box_iou_matches_definition():
    rng = np.random.RandomState(8)
    a = np.concatenate([rng.uniform(0, 5, (2, 3, 2)), rng.uniform(4, 9, (2, 3, 2))], -1)
    b = np.concatenate([rng.uniform(0, 5, (4, 2)), rng.uniform(4, 9, (4, 2))], -1)
    out = nd.contrib.box_iou(nd.array(a), nd.array(b)).asnumpy()
    assert out.shape == (2, 3, 4)
    ref = np.array([[[iou(a[i, j], b[k]) for k in range(4)] for j in range(3)]
                    for i in range(2)])
    assert_almost_equal(out, ref, atol=1e-6)
    ca = np.concatenate([(a[..., :2] + a[..., 2:]) / 2, a[..., 2:] - a[..., :2]], -1)
    cb = np.concatenate([(b[..., :2] + b[..., 2:]) / 2, b[..., 2:] - b[..., :2]], -1)
    assert_almost_equal(nd.contrib.box_iou(nd.array(ca), nd.array(cb),
                                           format="center").asnumpy(), ref, atol=1e-5)
    with pytest.raises(MXNetError, match="4 coordinates"):
        nd.contrib.box_iou(nd.ones((2, 3)), nd.ones((2, 4)))


def to_center(b):
    return np.concatenate([(b[..., :2] + b[..., 2:]) / 2, b[..., 2:] - b[..., :2]], -1)


def test_box_encode_formula_and_decode_round_trip():
    rng = np.random.RandomState(9)
    anchors = np.concatenate([rng.uniform(0, .5, (1, 5, 2)), rng.uniform(.5, 1, (1, 5, 2))],
                             -1).astype(np.float32)
    refs = np.concatenate([rng.uniform(0, .5, (1, 3, 2)), rng.uniform(.5, 1, (1, 3, 2))],
                          -1).astype(np.float32)
    samples = np.array([[1, 0, 1, -1, 1]], np.float32)
    matches = np.array([[2, 0, 1, 1, 0]], np.float32)
    means = np.array([0.0, 0.1, -0.1, 0.0], np.float32)
    stds = np.array([0.1, 0.1, 0.2, 0.2], np.float32)
    t, m = nd.contrib.box_encode(*map(nd.array, (samples, matches, anchors, refs, means,
                                                 stds)))
    a, g = to_center(anchors[0]), to_center(refs[0][matches[0].astype(int)])
    want = np.stack([(g[:, 0] - a[:, 0]) / a[:, 2], (g[:, 1] - a[:, 1]) / a[:, 3],
                     np.log(g[:, 2] / a[:, 2]), np.log(g[:, 3] / a[:, 3])], -1)
    want = (want - means) / stds * (samples[0] > 0.5)[:, None]
    assert_almost_equal(t.asnumpy()[0], want, atol=1e-5)
    assert_almost_equal(m.asnumpy()[0], np.repeat((samples[0] > 0.5)[:, None], 4, 1) * 1.0)
    # box_decode undoes the encoding (means 0): positives come back as their refs.
    t0, _ = nd.contrib.box_encode(*map(nd.array, (samples, matches, anchors, refs,
                                                  np.zeros(4, np.float32), stds)))
    dec = nd.contrib.box_decode(t0, nd.array(anchors), std0=0.1, std1=0.1, std2=0.2,
                                std3=0.2, format="corner").asnumpy()[0]
    pos = samples[0] > 0.5
    assert_almost_equal(dec[pos], refs[0][matches[0].astype(int)][pos], atol=1e-5)
    dec_c = nd.contrib.box_decode(t0, nd.array(to_center(anchors)), std0=0.1, std1=0.1,
                                  std2=0.2, std3=0.2).asnumpy()[0]
    assert_almost_equal(dec_c, dec, atol=1e-5)


def test_box_decode_clip_caps_the_exponent():
    d = nd.array([[[0, 0, 3.0, -3.0]]])
    anc = nd.array([[[0.5, 0.5, 0.2, 0.4]]])
    out = nd.contrib.box_decode(d, anc, clip=1.0).asnumpy()[0, 0]
    w, h = 0.2 * np.exp(1.0), 0.4 * np.exp(-3.0)
    assert_almost_equal(out, [0.5 - w / 2, 0.5 - h / 2, 0.5 + w / 2, 0.5 + h / 2], atol=1e-6)


def ref_matching(s, thresh, ascend=False, topk=-1):
    n, m = s.shape
    order = sorted(((s[i, j], i * m + j) for i in range(n) for j in range(m)),
                   key=lambda t: (t[0] if ascend else -t[0], t[1]))
    row, col, count = -np.ones(n), -np.ones(m), 0
    for v, k in order:
        i, j = divmod(k, m)
        if (v >= thresh) if ascend else (v <= thresh):
            break
        if row[i] < 0 and col[j] < 0:
            row[i], col[j] = j, i
            count += 1
            if topk > 0 and count > topk:
                break
    return row, col


@pytest.mark.parametrize("kw", [{"threshold": 0.3}, {"threshold": 0.7, "is_ascend": True},
                                {"threshold": 0.05, "topk": 2}])
def test_bipartite_matching_matches_greedy_loop(kw):
    rng = np.random.RandomState(10)
    s = rng.uniform(0, 1, (3, 6, 4)).astype(np.float32)
    row, col = nd.contrib.bipartite_matching(nd.array(s), **kw)
    assert row.shape == (3, 6) and col.shape == (3, 4)
    for b in range(3):
        r, c = ref_matching(s[b], kw["threshold"], kw.get("is_ascend", False),
                            kw.get("topk", -1))
        assert_almost_equal(row.asnumpy()[b], r)
        assert_almost_equal(col.asnumpy()[b], c)


def test_bipartite_matching_hand_worked():
    row, col = nd.contrib.bipartite_matching(nd.array([[0.5, 0.6], [0.1, 0.2], [0.3, 0.4]]),
                                             threshold=1e-12)
    assert row.asnumpy().tolist() == [1, -1, 0] and col.asnumpy().tolist() == [2, 0]


@pytest.mark.parametrize("background_id", [-1, -2, 0, 1])
def test_box_nms_drops_the_background_class_whatever_its_id(background_id):
    boxes = np.array([[0, 0.5, 0.1, 0.1, 0.2, 0.2], [-2, 0.4, 0.5, 0.5, 0.6, 0.6],
                      [1, 0.3, 0.1, 0.1, 0.14, 0.14], [-1, 0.6, 0.5, 0.5, 0.7, 0.8]])
    out = mx.nd.contrib.box_nms(mx.nd.array(boxes), id_index=0,
                                background_id=background_id, force_suppress=True).asnumpy()
    kept = out[out[:, 0] != -1] if background_id != -1 else out[out[:, 1] != -1]
    assert background_id not in kept[:, 0]
    # every other row's class survives (these boxes hardly overlap)
    others = sorted(c for c in boxes[:, 0] if c != background_id)
    assert sorted(out[out[:, 1] != -1][:, 0]) == others
