"""The mx.image augmenter classes, against the properties that define them."""
import json

import numpy as np
import pytest

import mxnet as mx
from mxnet import image

RNG = np.random.RandomState(0)
IMG = mx.nd.array(RNG.uniform(0, 255, (8, 10, 3)).astype(np.float32))
GRAY = np.array([0.299, 0.587, 0.114])


def test_base_classes_dump_and_are_abstract():
    aug = image.Augmenter(size=(3, 4))
    assert json.loads(aug.dumps()) == ["augmenter", {"size": [3, 4]}]
    with pytest.raises(NotImplementedError):
        aug(IMG)
    det = image.DetAugmenter(p=0.5)
    assert json.loads(det.dumps()) == ["detaugmenter", {"p": 0.5}]
    with pytest.raises(NotImplementedError):
        det(IMG, np.zeros((1, 5)))


def test_random_crops_are_windows_of_the_source():
    out = image.RandomCropAug((4, 3))(IMG).asnumpy()
    assert out.shape == (3, 4, 3)
    src = IMG.asnumpy()
    assert any(np.array_equal(src[y:y + 3, x:x + 4], out)
               for y in range(6) for x in range(7))
    out = image.RandomSizedCropAug((5, 5), 0.3, (0.75, 1.33))(IMG)
    assert out.shape == (5, 5, 3)


def test_random_order_applies_every_augmenter():
    out = image.RandomOrderAug([image.ForceResizeAug((4, 4)),
                                image.CastAug("float64")])(IMG)
    assert out.shape == (4, 4, 3) and out.dtype == np.float64


def test_jitters_keep_what_they_must():
    src = IMG.asnumpy()
    np.testing.assert_allclose(image.ContrastJitterAug(0)(IMG).asnumpy(), src, rtol=1e-6)
    # contrast blends with the mean gray level: that mean is unchanged
    out = image.ContrastJitterAug(0.5)(IMG).asnumpy()
    assert (out * GRAY).sum(axis=2).mean() == pytest.approx((src * GRAY).sum(axis=2).mean(),
                                                            rel=1e-4)
    # hue rotates the chroma plane of YIQ: every pixel keeps its luma
    out = image.HueJitterAug(0.4)(IMG).asnumpy()
    np.testing.assert_allclose((out * GRAY).sum(axis=2), (src * GRAY).sum(axis=2),
                               rtol=2e-2, atol=1.0)
    np.testing.assert_allclose(image.ColorJitterAug(0, 0, 0)(IMG).asnumpy(), src, rtol=1e-6)
    # lighting adds one PCA-based offset per channel, the same at every pixel
    eigval = np.array([55.46, 4.794, 1.148])
    eigvec = np.array([[-0.5675, 0.7192, 0.4009], [-0.5808, -0.0045, -0.8140],
                       [-0.5836, -0.6948, 0.4203]])
    np.testing.assert_allclose(image.LightingAug(0, eigval, eigvec)(IMG).asnumpy(), src,
                               rtol=1e-6)
    diff = image.LightingAug(0.1, eigval, eigvec)(IMG).asnumpy() - src
    np.testing.assert_allclose(diff, np.broadcast_to(diff[0, 0], diff.shape), atol=1e-3)
