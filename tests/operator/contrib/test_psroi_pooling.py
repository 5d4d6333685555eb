"""PSROIPooling against a per-bin loop from its definition, and numeric gradients."""
import math

import numpy as np
import pytest

import mxnet as mx
from mxnet.base import MXNetError
from mxnet.test_utils import assert_almost_equal, check_numeric_gradient

nd = mx.nd


def c_round(v):
    return math.floor(v + 0.5) if v >= 0 else -math.floor(-v + 0.5)


def ref_psroi(data, rois, scale, od, P, G):
    B, C, H, W = data.shape
    out = np.zeros((len(rois), od, P, P))
    for n, roi in enumerate(rois):
        b = int(roi[0])
        x1, y1 = c_round(roi[1]) * scale, c_round(roi[2]) * scale
        x2, y2 = (c_round(roi[3]) + 1) * scale, (c_round(roi[4]) + 1) * scale
        rw, rh = max(x2 - x1, 0.1), max(y2 - y1, 0.1)
        for c in range(od):
            for i in range(P):
                hs = min(max(math.floor(i * rh / P + y1), 0), H)
                he = min(max(math.ceil((i + 1) * rh / P + y1), 0), H)
                for j in range(P):
                    ws = min(max(math.floor(j * rw / P + x1), 0), W)
                    we = min(max(math.ceil((j + 1) * rw / P + x1), 0), W)
                    gi, gj = min(i * G // P, G - 1), min(j * G // P, G - 1)
                    ch = (c * G + gi) * G + gj
                    if he > hs and we > ws:
                        out[n, c, i, j] = data[b, ch, hs:he, ws:we].mean()
    return out


ROIS = np.array([[0, 0.4, 1.2, 4.6, 5.3], [1, 2, 2, 2, 2], [0, -1, -1, 9, 9],
                 [1, 3.5, 0.5, 8.5, 7.5]], np.float32)


@pytest.mark.parametrize("scale,od,P,G", [(1.0, 2, 3, 3), (0.7, 2, 2, 3), (0.5, 3, 2, 2)])
def test_forward_matches_loop(scale, od, P, G):
    data = np.random.RandomState(0).randn(2, od * G * G, 8, 9).astype(np.float32)
    kw = dict(spatial_scale=scale, output_dim=od, pooled_size=P)
    if G != P:
        kw["group_size"] = G
    out = nd.contrib.PSROIPooling(nd.array(data), nd.array(ROIS), **kw)
    assert_almost_equal(out.asnumpy(), ref_psroi(data, ROIS, scale, od, P, G), atol=1e-5)


def test_numeric_gradient_and_errors():
    data = np.random.RandomState(1).randn(1, 8, 5, 6)
    rois = np.array([[0, 0.6, 1.2, 3.7, 4.1], [0, 2, 0, 5, 3]])
    check_numeric_gradient(
        lambda d, r: nd.contrib.PSROIPooling(d, r, spatial_scale=1.0, output_dim=2,
                                             pooled_size=2), [data, rois], grad_nodes=[0],
        numeric_eps=1e-4, rtol=1e-3, atol=1e-6)
    with pytest.raises(MXNetError, match="channels"):
        nd.contrib.PSROIPooling(nd.zeros((1, 7, 4, 4)), nd.zeros((1, 5)), spatial_scale=1.0,
                                output_dim=2, pooled_size=2)


def test_deformable_psroi_without_trans_is_sampled_psroi():
    # One sample per part at the bin's top-left corner (+ the -0.5 pixel shift): with
    # integer-aligned rois and scale 1 that is the pixel value itself.
    data = np.random.RandomState(2).randn(1, 2 * 2 * 2, 6, 6).astype(np.float32)
    rois = np.array([[0, 1, 1, 4, 4]], np.float32)   # 4x4 pixels -> 2x2 bins of 2x2
    out = nd.contrib.DeformablePSROIPooling(nd.array(data), nd.array(rois), spatial_scale=1.0,
                                            output_dim=2, group_size=2, pooled_size=2,
                                            no_trans=True).asnumpy()
    for c in range(2):
        for i in range(2):
            for j in range(2):
                ch = (c * 2 + i) * 2 + j
                y, x = 1 + 2 * i - 0.5, 1 + 2 * j - 0.5
                y0, x0 = int(np.floor(y)), int(np.floor(x))
                want = data[0, ch, y0:y0 + 2, x0:x0 + 2].mean()   # bilinear at the centre
                assert abs(out[0, c, i, j] - want) < 1e-5


def test_deformable_psroi_numeric_gradient():
    rng = np.random.RandomState(3)
    data = rng.randn(1, 8, 6, 7)
    rois = np.array([[0, 0.6, 1.2, 4.7, 5.1]])
    trans = rng.uniform(-0.3, 0.3, (1, 2, 2, 2))
    check_numeric_gradient(
        lambda d, r, t: nd.contrib.DeformablePSROIPooling(d, r, t, spatial_scale=1.0,
                                                          output_dim=2, group_size=2,
                                                          pooled_size=2, trans_std=0.1,
                                                          sample_per_part=2),
        [data, rois, trans], grad_nodes=[0, 2], numeric_eps=1e-5, rtol=1e-3, atol=1e-5)
