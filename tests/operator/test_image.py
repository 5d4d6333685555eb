"""mx.nd.image / mx.sym.image operators: exact references for the deterministic ones,
the defining formulas (with the drawn factor recovered) for the random ones."""
import numpy as np
import pytest

import mxnet as mx
from mxnet.base import MXNetError
from opcheck import Case, check

nd = mx.nd
rs = np.random.RandomState(11)


def hwc(*shape):
    return rs.randint(0, 256, shape).astype(np.uint8)


@pytest.mark.parametrize("shape", [(4, 5, 3), (2, 4, 5, 3)])
def test_to_tensor(shape):
    x = hwc(*shape)
    out = nd.image.to_tensor(nd.array(x, dtype="uint8"))
    assert out.dtype == np.float32
    np.testing.assert_allclose(out.asnumpy(), np.moveaxis(x, -1, -3) / 255.0, rtol=1e-6)
    s = mx.sym.image.to_tensor(mx.sym.var("x")).eval(x=nd.array(x, dtype="uint8"))[0]
    np.testing.assert_allclose(s.asnumpy(), out.asnumpy())


@pytest.mark.parametrize("shape", [(3, 4, 5), (2, 3, 4, 5)])
def test_normalize(shape):
    x = rs.uniform(0, 1, shape)
    mean, std = (0.1, 0.2, 0.3), (1.0, 2.0, 4.0)
    m, s = np.reshape(mean, (3, 1, 1)), np.reshape(std, (3, 1, 1))
    check(Case("image.normalize", lambda a: (a - m.astype(a.dtype)) / s.astype(a.dtype),
               kwargs={"mean": mean, "std": std}, ref_kwargs=False, inputs=[x]))


def test_normalize_scalar_mean_std():
    out = nd.image.normalize(nd.ones((2, 3, 2, 2)), mean=0.5, std=2)
    np.testing.assert_allclose(out.asnumpy(), np.full((2, 3, 2, 2), 0.25))


def test_resize_shapes_and_opencv_nearest():
    x = hwc(4, 6, 3)
    assert nd.image.resize(nd.array(x, dtype="uint8"), size=(3, 2)).shape == (2, 3, 3)
    assert nd.image.resize(nd.array(x, dtype="uint8"), size=5, keep_ratio=True).shape == \
        (5, 7, 3)
    assert nd.image.resize(nd.array(x, dtype="uint8"), size=5).shape == (5, 5, 3)
    near = nd.image.resize(nd.array(x, dtype="uint8"), size=(3, 2), interp=0).asnumpy()
    np.testing.assert_array_equal(near, x[::2, ::2])
    batch = nd.image.resize(nd.array(np.stack([x, x]), dtype="uint8"), size=(3, 2), interp=0)
    assert batch.shape == (2, 2, 3, 3)


def test_crop():
    x = rs.uniform(size=(5, 6, 3))
    check(Case("image.crop", lambda a: a[1:4, 2:4],
               kwargs={"x": 2, "y": 1, "width": 2, "height": 3}, ref_kwargs=False,
               inputs=[x]))
    with pytest.raises(MXNetError):
        nd.image.crop(nd.array(x), x=5, y=0, width=2, height=2)


@pytest.mark.parametrize("name,axis", [("flip_left_right", 1), ("flip_top_bottom", 0)])
def test_flips(name, axis):
    x = rs.uniform(size=(3, 4, 3))
    check(Case(f"image.{name}", lambda a: np.flip(a, axis), inputs=[x],
               dtypes=(np.float16, np.float32, np.float64)))


def test_random_flip_is_identity_or_flip():
    x = hwc(3, 4, 3)
    seen = set()
    for _ in range(20):
        y = nd.image.random_flip_left_right(nd.array(x, dtype="uint8")).asnumpy()
        assert np.array_equal(y, x) or np.array_equal(y, x[:, ::-1])
        seen.add(np.array_equal(y, x))
    assert seen == {True, False}


_EIGVAL = np.array([55.46, 4.794, 1.148])
_EIGVEC = np.array([[-0.5675, 0.7192, 0.4009], [-0.5808, -0.0045, -0.8140],
                    [-0.5836, -0.6948, 0.4203]])


def test_adjust_lighting():
    x = rs.uniform(0, 255, (2, 3, 3))
    alpha = (0.1, 0.2, 0.3)
    check(Case("image.adjust_lighting",
               lambda a: a + (_EIGVEC @ (np.array(alpha) * _EIGVAL)).astype(a.dtype),
               kwargs={"alpha": alpha}, ref_kwargs=False, inputs=[x], grad=False))


def test_random_brightness_scales_uniformly():
    x = rs.uniform(1, 255, (4, 4, 3))
    y = nd.image.random_brightness(nd.array(x), min_factor=0.5, max_factor=1.5).asnumpy()
    factor = y / x.astype(np.float32)
    assert 0.5 <= factor.mean() <= 1.5
    np.testing.assert_allclose(factor, factor.mean(), rtol=1e-5)


def test_random_saturation_formula():
    x = rs.uniform(0, 255, (4, 4, 3))
    y = nd.image.random_saturation(nd.array(x, dtype="float64"), min_factor=0.3,
                                   max_factor=0.7).asnumpy()
    gray = (x @ np.array([0.299, 0.587, 0.114]))[..., None]
    # y = a x + (1 - a) gray: recover a from one pixel, check every pixel
    a = (y[0, 0, 0] - gray[0, 0, 0]) / (x[0, 0, 0] - gray[0, 0, 0])
    assert 0.3 <= a <= 0.7
    np.testing.assert_allclose(y, a * x + (1 - a) * gray, rtol=1e-8)


def test_random_contrast_formula():
    x = rs.uniform(0, 255, (4, 4, 3))
    y = nd.image.random_contrast(nd.array(x, dtype="float64"), min_factor=0.3,
                                 max_factor=0.7).asnumpy()
    mean_gray = (x @ np.array([0.299, 0.587, 0.114])).mean()
    a = (y[0, 0, 0] - mean_gray) / (x[0, 0, 0] - mean_gray)
    assert 0.3 <= a <= 0.7
    np.testing.assert_allclose(y, a * x + (1 - a) * mean_gray, rtol=1e-8)


def test_random_ops_keep_shape_dtype():
    x = nd.array(hwc(2, 4, 4, 3), dtype="uint8")
    for fn, kw in ((nd.image.random_hue, dict(min_factor=-0.1, max_factor=0.1)),
                   (nd.image.random_color_jitter,
                    dict(brightness=0.1, contrast=0.1, saturation=0.1, hue=0.1)),
                   (nd.image.random_lighting, dict(alpha_std=0.1)),
                   (nd.image.random_flip_top_bottom, {})):
        y = fn(x, **kw)
        assert y.shape == x.shape and y.dtype == np.uint8


def test_hue_zero_rotation_is_near_identity():
    x = rs.uniform(0, 255, (3, 3, 3))
    y = nd.image.random_hue(nd.array(x, dtype="float64"), min_factor=0.0,
                            max_factor=0.0).asnumpy()
    # the rounded YIQ inverse is close to, not exactly, the inverse
    np.testing.assert_allclose(y, x, atol=1.0)
