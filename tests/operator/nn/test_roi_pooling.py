"""ROIPooling against a NumPy reference written with plain loops over rois and bins,
numeric gradients, and MXNet 1.9.1's documented example."""
import math

import numpy as np
import pytest

import mxnet as mx
from mxnet.base import MXNetError
from mxnet.test_utils import assert_almost_equal, check_numeric_gradient

nd = mx.nd


def c_round(v):
    return math.floor(v + 0.5) if v >= 0 else -math.floor(-v + 0.5)


def ref_roi_pool(data, rois, pooled, scale):
    B, C, H, W = data.shape
    PH, PW = pooled
    out = np.zeros((len(rois), C, PH, PW))
    for r, roi in enumerate(rois):
        b = int(roi[0])
        if not 0 <= b < B:
            continue
        x1, y1, x2, y2 = (c_round(v * np.float32(scale)) for v in roi[1:])
        bh = max(y2 - y1 + 1, 1) / PH
        bw = max(x2 - x1 + 1, 1) / PW
        for ph in range(PH):
            h0 = min(max(math.floor(ph * bh) + y1, 0), H)
            h1 = min(max(math.ceil((ph + 1) * bh) + y1, 0), H)
            for pw in range(PW):
                w0 = min(max(math.floor(pw * bw) + x1, 0), W)
                w1 = min(max(math.ceil((pw + 1) * bw) + x1, 0), W)
                if h1 > h0 and w1 > w0:
                    out[r, :, ph, pw] = data[b, :, h0:h1, w0:w1].max(axis=(1, 2))
    return out


def test_documented_example():
    x = nd.arange(48).reshape((1, 1, 8, 6))
    y = nd.array([[0, 0, 0, 4, 4]])
    assert nd.ROIPooling(x, y, (2, 2), 1.0).asnumpy().ravel().tolist() == [14, 16, 26, 28]
    assert nd.ROIPooling(x, y, (2, 2), 0.7).asnumpy().ravel().tolist() == [7, 9, 19, 21]


ROIS = np.array([[0, 0.5, 1.5, 2.5, 5.5], [1, -3, -2, 30, 40], [1, 2.5, 3.5, 2.5, 3.5],
                 [2, 0, 0, 2, 2], [-1, 0, 0, 2, 2], [0, 4, 4, 1, 1], [1, 1, 0, 6, 3]],
                dtype=np.float32)


@pytest.mark.parametrize("pooled,scale", [((3, 2), 1.0), ((2, 2), 0.5), ((1, 3), 0.8)])
def test_forward_matches_reference(pooled, scale):
    data = np.random.RandomState(1).randn(2, 3, 6, 7).astype(np.float32)
    out = nd.ROIPooling(nd.array(data), nd.array(ROIS), pooled_size=pooled,
                        spatial_scale=scale)
    assert out.shape == (len(ROIS), 3) + pooled
    assert_almost_equal(out.asnumpy(), ref_roi_pool(data, ROIS, pooled, scale))


def test_gradient():
    # distinct values so no bin has a tie within the finite-difference step
    data = np.random.RandomState(2).permutation(2 * 2 * 6 * 7).reshape(2, 2, 6, 7) * 0.01
    rois = nd.array(ROIS)
    check_numeric_gradient(lambda d: nd.ROIPooling(d, rois, pooled_size=(3, 2),
                                                   spatial_scale=1.0),
                           [data], numeric_eps=1e-4, rtol=1e-4, atol=1e-6)


def test_gradient_accumulates_on_shared_maxima():
    x = nd.arange(48).reshape((1, 1, 8, 6))
    x.attach_grad()
    rois = nd.array([[0, 0, 0, 4, 4], [0, 0, 0, 4, 4]])
    rois.attach_grad()
    with mx.autograd.record():
        y = nd.ROIPooling(x, rois, pooled_size=(2, 2), spatial_scale=1.0)
    y.backward(nd.ones(y.shape))
    g = x.grad.asnumpy().ravel()
    assert {int(i): float(g[i]) for i in np.nonzero(g)[0]} == {14: 2, 16: 2, 26: 2, 28: 2}
    assert (rois.grad.asnumpy() == 0).all()


def test_float64():
    data = np.random.RandomState(3).randn(2, 3, 6, 7)
    out = nd.ROIPooling(nd.array(data, dtype="float64"), nd.array(ROIS, dtype="float64"),
                        pooled_size=(2, 3), spatial_scale=1.0)
    assert out.dtype == np.float64
    assert_almost_equal(out.asnumpy(), ref_roi_pool(data, ROIS, (2, 3), 1.0))


def test_bad_input():
    x = nd.ones((1, 2, 5, 5))
    with pytest.raises(MXNetError, match="rois"):
        nd.ROIPooling(x, nd.ones((2, 4)), pooled_size=(2, 2), spatial_scale=1.0)
    with pytest.raises(MXNetError, match="4-D"):
        nd.ROIPooling(nd.ones((2, 5, 5)), nd.ones((2, 5)), pooled_size=(2, 2),
                      spatial_scale=1.0)
    with pytest.raises(MXNetError, match="pooled_size"):
        nd.ROIPooling(x, nd.ones((2, 5)), pooled_size=(2,), spatial_scale=1.0)
    with pytest.raises(MXNetError, match="spatial_scale"):
        nd.ROIPooling(x, nd.ones((2, 5)), pooled_size=(2, 2))


@pytest.mark.parametrize("scale", [-1.0, 1.5, 2.0])
def test_spatial_scale_must_lie_in_0_1(scale):
    # MXNet 1.9.1: "value 2 for Parameter spatial_scale exceed bound [0,1]" (oracle), for
    # ROIPooling and contrib.ROIAlign alike
    x, rois = nd.ones((1, 1, 4, 4)), nd.array([[0, 0, 0, 1, 1]])
    with pytest.raises(MXNetError, match="spatial_scale"):
        nd.ROIPooling(x, rois, pooled_size=(2, 2), spatial_scale=scale)
    with pytest.raises(MXNetError, match="spatial_scale"):
        nd.contrib.ROIAlign(x, rois, pooled_size=(2, 2), spatial_scale=scale)
    for ok in (0.0, 1.0):
        assert nd.ROIPooling(x, rois, pooled_size=(2, 2), spatial_scale=ok).shape == \
            (1, 1, 2, 2)
