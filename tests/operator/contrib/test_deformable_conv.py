"""DeformableConvolution / ModulatedDeformableConvolution: zero offsets give the
ordinary convolution, a hand-worked bilinear tap, numeric gradients (DCN v2 has no CPU
kernel in MXNet 1.9.1 to compare with; DCN v1 is also compared with MXNet fixtures)."""
import numpy as np
import pytest

import mxnet as mx
from mxnet.base import MXNetError
from mxnet.test_utils import assert_almost_equal, check_numeric_gradient

nd = mx.nd


def test_zero_offsets_equal_convolution():
    rng = np.random.RandomState(0)
    x, w, b = rng.randn(2, 4, 6, 7), rng.randn(6, 2, 3, 3), rng.randn(6)
    kw = dict(kernel=(3, 3), num_filter=6, pad=(1, 1), stride=(2, 1), num_group=2)
    ref = nd.Convolution(nd.array(x), nd.array(w), nd.array(b), **kw).asnumpy()
    off = nd.zeros((2, 18) + ref.shape[2:])
    out = nd.contrib.DeformableConvolution(nd.array(x), off, nd.array(w), nd.array(b), **kw)
    assert_almost_equal(out.asnumpy(), ref, atol=1e-5)
    mask = nd.ones((2, 9) + ref.shape[2:])
    out = nd.contrib.ModulatedDeformableConvolution(nd.array(x), off, mask, nd.array(w),
                                                    nd.array(b), **kw)
    assert_almost_equal(out.asnumpy(), ref, atol=1e-5)


def test_one_tap_bilinear_and_mask():
    x = np.arange(25, dtype=np.float32).reshape(1, 1, 5, 5) ** 1.5
    w = np.zeros((1, 1, 3, 3), np.float32)
    w[0, 0, 0, 0] = 1                     # only tap (0, 0)
    off = np.zeros((1, 18, 3, 3), np.float32)
    off[0, 0], off[0, 1] = 0.25, 0.5      # dy, dx of tap 0
    mask = np.full((1, 9, 3, 3), 0.5, np.float32)
    out = nd.contrib.ModulatedDeformableConvolution(
        nd.array(x), nd.array(off), nd.array(mask), nd.array(w), kernel=(3, 3),
        num_filter=1, no_bias=True).asnumpy()[0, 0]
    img = x[0, 0]
    for i in range(3):
        for j in range(3):
            want = (0.75 * 0.5 * img[i, j] + 0.75 * 0.5 * img[i, j + 1] +
                    0.25 * 0.5 * img[i + 1, j] + 0.25 * 0.5 * img[i + 1, j + 1])
            assert abs(out[i, j] - 0.5 * want) < 1e-3


@pytest.mark.parametrize("modulated", [False, True])
def test_numeric_gradient(modulated):
    rng = np.random.RandomState(1)
    x = rng.randn(1, 2, 5, 5)
    w = rng.randn(2, 2, 2, 2)
    off = rng.uniform(-0.4, 0.4, (1, 8, 4, 4))     # keeps samples off pixel edges
    off = np.where(np.abs(off - np.round(off)) < 0.05, off + 0.1, off)
    if modulated:
        m = rng.uniform(0.2, 1, (1, 4, 4, 4))
        fn = lambda a, o, mm, ww: nd.contrib.ModulatedDeformableConvolution(  # noqa: E731
            a, o, mm, ww, kernel=(2, 2), num_filter=2, no_bias=True)
        args = [x, off, m, w]
    else:
        fn = lambda a, o, ww: nd.contrib.DeformableConvolution(  # noqa: E731
            a, o, ww, kernel=(2, 2), num_filter=2, no_bias=True)
        args = [x, off, w]
    check_numeric_gradient(fn, args, numeric_eps=1e-5, rtol=1e-3, atol=1e-5)


def test_errors_and_symbol():
    with pytest.raises(MXNetError, match="offset"):
        nd.contrib.DeformableConvolution(nd.zeros((1, 2, 5, 5)), nd.zeros((1, 9, 3, 3)),
                                         nd.zeros((2, 2, 3, 3)), nd.zeros(2), kernel=(3, 3),
                                         num_filter=2)
    s = mx.sym.contrib.ModulatedDeformableConvolution(mx.sym.var("d"), mx.sym.var("o"),
                                                      mx.sym.var("m"), kernel=(3, 3),
                                                      num_filter=4)
    assert s.list_arguments()[3:] == [s.name + "_weight", s.name + "_bias"]
