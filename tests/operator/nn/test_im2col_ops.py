"""im2col / col2im against a loop over windows, and each other's adjoint."""
import numpy as np
import pytest

import mxnet as mx
from opcheck import Case, check

rs = np.random.RandomState(16)


def ref_im2col(x, kernel, stride, dilate, pad):
    n, c, h, w = x.shape
    xp = np.pad(x, [(0, 0), (0, 0), (pad[0],) * 2, (pad[1],) * 2])
    oh = (h + 2 * pad[0] - dilate[0] * (kernel[0] - 1) - 1) // stride[0] + 1
    ow = (w + 2 * pad[1] - dilate[1] * (kernel[1] - 1) - 1) // stride[1] + 1
    out = np.zeros((n, c, kernel[0], kernel[1], oh, ow), x.dtype)
    for i in range(oh):
        for j in range(ow):
            for a in range(kernel[0]):
                for b in range(kernel[1]):
                    out[:, :, a, b, i, j] = xp[:, :, i * stride[0] + a * dilate[0],
                                               j * stride[1] + b * dilate[1]]
    return out.reshape(n, c * kernel[0] * kernel[1], oh * ow)


@pytest.mark.parametrize("kernel,stride,dilate,pad", [((2, 2), (1, 2), (1, 1), (1, 0)),
                                                      ((3, 2), (2, 1), (1, 2), (1, 1))])
def test_im2col(kernel, stride, dilate, pad):
    x = rs.uniform(-1, 1, (2, 2, 5, 6))
    kw = dict(kernel=kernel, stride=stride, dilate=dilate, pad=pad)
    check(Case("im2col", lambda a: ref_im2col(a, kernel, stride, dilate, pad), kwargs=kw,
               ref_kwargs=False, inputs=[x], dtypes=(np.float16, np.float32, np.float64)))


def test_col2im_is_adjoint_of_im2col():
    kw = dict(kernel=(3, 2), stride=(2, 1), dilate=(1, 2), pad=(1, 1))
    x = rs.uniform(-1, 1, (2, 2, 5, 6))
    cols = ref_im2col(x, (3, 2), (2, 1), (1, 2), (1, 1))
    c = rs.uniform(-1, 1, cols.shape)
    back = mx.nd.col2im(mx.nd.array(c, dtype="float64"), output_size=(5, 6), **kw).asnumpy()
    # <im2col(x), c> == <x, col2im(c)>
    assert np.sum(cols * c) == pytest.approx(np.sum(x * back), rel=1e-10)
    check(Case("col2im",
               lambda a: ref_col2im(a, (2, 2, 5, 6), (3, 2), (2, 1), (1, 2), (1, 1)),
               kwargs=dict(output_size=(5, 6), **kw), ref_kwargs=False, inputs=[c]))


def ref_col2im(col, shape, kernel, stride, dilate, pad):
    """Sum every column entry back into its pixel, one window at a time."""
    n, c, h, w = shape
    img = np.zeros((n, c, h + 2 * pad[0], w + 2 * pad[1]), col.dtype)
    oh = (h + 2 * pad[0] - dilate[0] * (kernel[0] - 1) - 1) // stride[0] + 1
    ow = (w + 2 * pad[1] - dilate[1] * (kernel[1] - 1) - 1) // stride[1] + 1
    cols = col.reshape(n, c, kernel[0], kernel[1], oh, ow)
    for i in range(oh):
        for j in range(ow):
            for a in range(kernel[0]):
                for b in range(kernel[1]):
                    img[:, :, i * stride[0] + a * dilate[0],
                        j * stride[1] + b * dilate[1]] += cols[:, :, a, b, i, j]
    return img[:, :, pad[0]:pad[0] + h, pad[1]:pad[1] + w]


@pytest.mark.parametrize("kw", [dict(kernel=(2, 0)), dict(kernel=(2, 2), stride=(0, 1)),
                                dict(kernel=(2, 2), dilate=(1, 0))])
def test_zero_window_sizes_are_errors(kw):
    # MXNet 1.9.1 refuses them ("incorrect kernel size: [2,0]", oracle); im2col gave an
    # empty (1, 0, 15) result before, col2im a ZeroDivisionError
    with pytest.raises(mx.base.MXNetError):
        mx.nd.im2col(mx.nd.ones((1, 1, 4, 4)), **kw).wait_to_read()
    with pytest.raises(mx.base.MXNetError):
        mx.nd.col2im(mx.nd.ones((1, 4, 9)), output_size=(4, 4), **kw).wait_to_read()
