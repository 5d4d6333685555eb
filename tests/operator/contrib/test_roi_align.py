"""ROIAlign against a per-sample bilinear loop written from its definition, numeric
gradients, position-sensitive mode and errors."""
import math

import numpy as np
import pytest

import mxnet as mx
from mxnet.base import MXNetError
from mxnet.test_utils import assert_almost_equal, check_numeric_gradient

nd = mx.nd


def bilinear(img, y, x):
    H, W = img.shape[-2:]
    if y < -1 or y > H or x < -1 or x > W:
        return 0 * img[..., 0, 0]
    y, x = max(y, 0), max(x, 0)
    y0, x0 = int(y), int(x)
    if y0 >= H - 1:
        y0 = y1 = H - 1
        y = y0
    else:
        y1 = y0 + 1
    if x0 >= W - 1:
        x0 = x1 = W - 1
        x = x0
    else:
        x1 = x0 + 1
    ly, lx = y - y0, x - x0
    return ((1 - ly) * (1 - lx) * img[..., y0, x0] + (1 - ly) * lx * img[..., y0, x1] +
            ly * (1 - lx) * img[..., y1, x0] + ly * lx * img[..., y1, x1])


def ref_roi_align(data, rois, pooled, scale, ratio=-1, aligned=False):
    PH, PW = pooled
    out = np.zeros((len(rois), data.shape[1], PH, PW))
    for r, roi in enumerate(rois):
        b = int(roi[0])
        if b < 0:
            continue
        off = 0.5 if aligned else 0.0
        x1, y1, x2, y2 = (v * scale - off for v in roi[1:])
        rw, rh = x2 - x1, y2 - y1
        if not aligned:
            rw, rh = max(rw, 1.0), max(rh, 1.0)
        bh, bw = rh / PH, rw / PW
        gh = ratio if ratio > 0 else max(math.ceil(rh / PH), 1)
        gw = ratio if ratio > 0 else max(math.ceil(rw / PW), 1)
        for ph in range(PH):
            for pw in range(PW):
                acc = 0
                for iy in range(gh):
                    y = y1 + ph * bh + (iy + 0.5) * bh / gh
                    for ix in range(gw):
                        x = x1 + pw * bw + (ix + 0.5) * bw / gw
                        acc = acc + bilinear(data[b], y, x)
                out[r, :, ph, pw] = acc / (gh * gw)
    return out


ROIS = np.array([[0, 0.5, 1.0, 6.3, 7.7], [1, -3, -2, 30, 40], [1, 2.5, 3.5, 2.6, 3.6],
                 [0, 8, 6, 10.9, 8.9], [-1, 0, 0, 2, 2]], np.float32)


@pytest.mark.parametrize("kw", [{"pooled_size": (2, 3), "spatial_scale": 1.0},
                                {"pooled_size": (3, 3), "spatial_scale": 0.6,
                                 "sample_ratio": 2},
                                {"pooled_size": (2, 2), "spatial_scale": 0.9,
                                 "aligned": True}])
def test_forward_matches_loop(kw):
    data = np.random.RandomState(0).randn(2, 3, 9, 11).astype(np.float32)
    out = nd.contrib.ROIAlign(nd.array(data), nd.array(ROIS), **kw).asnumpy()
    ref = ref_roi_align(data, ROIS, kw["pooled_size"], kw["spatial_scale"],
                        kw.get("sample_ratio", -1), kw.get("aligned", False))
    assert_almost_equal(out, ref, rtol=1e-4, atol=1e-5)
    assert (out[4] == 0).all()          # negative batch index


def test_position_sensitive():
    data = np.random.RandomState(1).randn(1, 8, 6, 6).astype(np.float32)
    rois = np.array([[0, 1, 1, 5, 4]], np.float32)
    out = nd.contrib.ROIAlign(nd.array(data), nd.array(rois), pooled_size=(2, 2),
                              spatial_scale=1.0, position_sensitive=True).asnumpy()
    full = ref_roi_align(data, rois, (2, 2), 1.0)
    assert out.shape == (1, 2, 2, 2)
    for c in range(2):
        for i in range(2):
            for j in range(2):
                assert_almost_equal(out[0, c, i, j], full[0, (c * 2 + i) * 2 + j, i, j],
                                    atol=1e-5)


def test_numeric_gradient():
    rng = np.random.RandomState(2)
    data = rng.randn(1, 2, 5, 6)
    rois = np.array([[0, 0.3, 0.7, 4.1, 3.6], [0, 1.2, 0.2, 3.3, 4.8]])
    check_numeric_gradient(
        lambda d, r: nd.contrib.ROIAlign(d, r, pooled_size=(2, 2), spatial_scale=1.0,
                                         sample_ratio=2), [data, rois], grad_nodes=[0],
        numeric_eps=1e-4, rtol=1e-3, atol=1e-5)


def test_errors_and_symbol():
    with pytest.raises(MXNetError, match="rois"):
        nd.contrib.ROIAlign(nd.zeros((1, 2, 4, 4)), nd.zeros((3, 4)), pooled_size=(2, 2),
                            spatial_scale=1.0)
    with pytest.raises(MXNetError, match="multiple of"):
        nd.contrib.ROIAlign(nd.zeros((1, 6, 4, 4)), nd.zeros((3, 5)), pooled_size=(2, 2),
                            spatial_scale=1.0, position_sensitive=True)
    with pytest.raises(MXNetError, match="pooled_size"):
        nd.contrib.ROIAlign(nd.zeros((1, 2, 4, 4)), nd.zeros((3, 5)), spatial_scale=1.0)
    s = mx.sym.contrib.ROIAlign(mx.sym.var("d"), mx.sym.var("r"), pooled_size=(2, 3),
                                spatial_scale=0.5)
    assert s.infer_shape(d=(2, 4, 8, 8), r=(7, 5))[1] == [(7, 4, 2, 3)]


def ref_rroi_align(data, rois, pooled, scale, ratio=-1):
    PH, PW = pooled
    out = np.zeros((len(rois), data.shape[1], PH, PW))
    for r, (b, cx, cy, w, h, ang) in enumerate(rois):
        cx, cy, w, h = cx * scale, cy * scale, max(w * scale, 1.0), max(h * scale, 1.0)
        t = math.radians(ang)
        gh = ratio if ratio > 0 else max(math.ceil(h / PH), 1)
        gw = ratio if ratio > 0 else max(math.ceil(w / PW), 1)
        for ph in range(PH):
            for pw in range(PW):
                acc = 0
                for iy in range(gh):
                    yy = -h / 2 + ph * h / PH + (iy + 0.5) * h / PH / gh
                    for ix in range(gw):
                        xx = -w / 2 + pw * w / PW + (ix + 0.5) * w / PW / gw
                        x = xx * math.cos(t) + yy * math.sin(t) + cx
                        y = yy * math.cos(t) - xx * math.sin(t) + cy
                        acc = acc + bilinear(data[int(b)], y, x)
                out[r, :, ph, pw] = acc / (gh * gw)
    return out


@pytest.mark.parametrize("kw", [{"pooled_size": (2, 2), "spatial_scale": 1.0},
                                {"pooled_size": (3, 2), "spatial_scale": 0.8,
                                 "sampling_ratio": 2}])
def test_rroi_align_matches_loop(kw):
    data = np.random.RandomState(3).randn(2, 3, 7, 8).astype(np.float32)
    rois = np.array([[0, 2.5, 2, 3, 2, 0], [1, 3, 2.5, 4, 2, 90], [1, 4, 3.5, 6, 5, -45],
                     [0, 7, 6, 5, 3, 120]], np.float32)
    out = nd.contrib.RROIAlign(nd.array(data), nd.array(rois), **kw).asnumpy()
    ref = ref_rroi_align(data, rois, kw["pooled_size"], kw["spatial_scale"],
                         kw.get("sampling_ratio", -1))
    assert_almost_equal(out, ref, rtol=1e-4, atol=1e-5)
    with pytest.raises(MXNetError, match="num_rois, 6"):
        nd.contrib.RROIAlign(nd.array(data), nd.zeros((2, 5)), **kw)
