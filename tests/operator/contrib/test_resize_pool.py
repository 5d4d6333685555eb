"""AdaptiveAvgPooling2D and BilinearResize2D against loops from their definitions, and
numeric gradients."""
import math

import numpy as np
import pytest

import mxnet as mx
from mxnet.base import MXNetError
from mxnet.test_utils import assert_almost_equal, check_numeric_gradient

nd = mx.nd


def ref_adaptive(x, oh, ow):
    N, C, H, W = x.shape
    out = np.zeros((N, C, oh, ow))
    for i in range(oh):
        h0, h1 = (i * H) // oh, math.ceil((i + 1) * H / oh)
        for j in range(ow):
            w0, w1 = (j * W) // ow, math.ceil((j + 1) * W / ow)
            out[:, :, i, j] = x[:, :, h0:h1, w0:w1].mean(axis=(2, 3))
    return out


@pytest.mark.parametrize("size,hw", [((), (1, 1)), (3, (3, 3)), ((2, 5), (2, 5)),
                                     ((9, 4), (9, 4))])
def test_adaptive_avg_pooling(size, hw):
    x = np.random.RandomState(0).randn(2, 3, 7, 6).astype(np.float32)
    kw = {} if size == () else {"output_size": size}
    out = nd.contrib.AdaptiveAvgPooling2D(nd.array(x), **kw)
    assert_almost_equal(out.asnumpy(), ref_adaptive(x, *hw), atol=1e-5)
    check_numeric_gradient(lambda d: nd.contrib.AdaptiveAvgPooling2D(d, **kw),
                           [x[:1, :2].astype(np.float64)], numeric_eps=1e-4, rtol=1e-3,
                           atol=1e-6)


def ref_resize(x, oh, ow, align):
    N, C, H, W = x.shape

    def src(i, n_in, n_out):
        if n_out == 1:
            return 0.0
        if align:
            return i * (n_in - 1) / (n_out - 1)
        return max((i + 0.5) * n_in / n_out - 0.5, 0.0)
    out = np.zeros((N, C, oh, ow))
    for i in range(oh):
        y = src(i, H, oh)
        y0 = min(int(y), H - 1)
        y1 = min(y0 + 1, H - 1)
        ly = y - y0
        for j in range(ow):
            xx = src(j, W, ow)
            x0 = min(int(xx), W - 1)
            x1 = min(x0 + 1, W - 1)
            lx = xx - x0
            out[:, :, i, j] = ((1 - ly) * (1 - lx) * x[:, :, y0, x0] +
                               (1 - ly) * lx * x[:, :, y0, x1] +
                               ly * (1 - lx) * x[:, :, y1, x0] + ly * lx * x[:, :, y1, x1])
    return out


@pytest.mark.parametrize("kw,hw", [({"height": 10, "width": 4}, (10, 4)),
                                   ({"height": 5, "width": 13, "align_corners": False},
                                    (5, 13)),
                                   ({"scale_height": 0.7, "scale_width": 1.6}, (4, 9)),
                                   ({"mode": "odd_scale", "scale_height": 2.0,
                                     "scale_width": 0.5}, (13, 3)),
                                   ({"mode": "to_even_up"}, (8, 6)),
                                   ({"mode": "to_even_down"}, (6, 6)),
                                   ({"mode": "to_odd_up"}, (7, 7)),
                                   ({"mode": "to_odd_down"}, (7, 5))])
def test_bilinear_resize(kw, hw):
    x = np.random.RandomState(1).randn(2, 3, 7, 6).astype(np.float32)
    out = nd.contrib.BilinearResize2D(nd.array(x), **kw)
    assert out.shape == (2, 3) + hw
    assert_almost_equal(out.asnumpy(), ref_resize(x, *hw, kw.get("align_corners", True)),
                        atol=1e-5)
    check_numeric_gradient(lambda d: nd.contrib.BilinearResize2D(d, **kw),
                           [x[:1, :1].astype(np.float64)], numeric_eps=1e-4, rtol=1e-3,
                           atol=1e-6)


def test_bilinear_like_mode_and_symbol():
    x = np.random.RandomState(2).randn(1, 2, 5, 5).astype(np.float32)
    like = nd.zeros((3, 1, 8, 3))
    out = nd.contrib.BilinearResize2D(nd.array(x), like, mode="like")
    assert out.shape == (1, 2, 8, 3)
    assert_almost_equal(out.asnumpy(), ref_resize(x, 8, 3, True), atol=1e-5)
    s = mx.sym.contrib.BilinearResize2D(mx.sym.var("a"), mx.sym.var("b"), mode="like")
    assert s.list_arguments() == ["a", "b"]
    assert s.infer_shape(a=(1, 2, 5, 5), b=(3, 1, 8, 3))[1] == [(1, 2, 8, 3)]
    assert mx.sym.contrib.BilinearResize2D(mx.sym.var("a"), height=2).list_arguments() == ["a"]


def test_errors():
    with pytest.raises(MXNetError, match="4-D"):
        nd.contrib.BilinearResize2D(nd.zeros((1, 3, 4)), height=2, width=2)
    with pytest.raises(MXNetError, match="together"):
        nd.contrib.BilinearResize2D(nd.zeros((1, 1, 4, 4)), scale_height=0.5)
    with pytest.raises(MXNetError, match="mode"):
        nd.contrib.BilinearResize2D(nd.zeros((1, 1, 4, 4)), mode="nearest")
    with pytest.raises(MXNetError, match="4-D"):
        nd.contrib.AdaptiveAvgPooling2D(nd.zeros((4, 4)))
