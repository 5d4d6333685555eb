"""vision.transforms against NumPy references written here."""
import colorsys

import numpy as np
import pytest

import mxnet as mx
from mxnet.base import MXNetError
from mxnet.gluon import nn
from mxnet.gluon.data.vision import transforms as T
from mxnet.test_utils import assert_almost_equal

LUMA = np.array([0.299, 0.587, 0.114])


def _img(h=6, w=9, c=3, seed=0, dtype=np.uint8):
    return np.random.RandomState(seed).randint(0, 256, (h, w, c)).astype(dtype)


def test_to_tensor_and_cast():
    x = _img()
    out = T.ToTensor()(mx.nd.array(x, dtype=np.uint8))
    assert out.dtype == np.float32 and out.shape == (3, 6, 9)
    assert_almost_equal(out.asnumpy(), x.transpose(2, 0, 1) / 255.0, rtol=1e-6, atol=1e-7)
    batch = np.stack([x, _img(seed=1)])
    out = T.ToTensor()(mx.nd.array(batch, dtype=np.uint8))
    assert_almost_equal(out.asnumpy(), batch.transpose(0, 3, 1, 2) / 255.0, rtol=1e-6,
                        atol=1e-7)
    assert T.Cast()(mx.nd.array(x, dtype=np.uint8)).dtype == np.float32
    assert T.Cast("float16")(mx.nd.array(x)).dtype == np.float16
    with pytest.raises(MXNetError):
        T.ToTensor()(mx.nd.ones((3, 4)))


def test_to_tensor_divides_exactly_by_255():
    # MXNet's kernel divides in float32: 254 -> 0.9960784316062927 (MXNet 1.9.1),
    # where multiplying by 1/255 gives 0.9960784912109375.
    x = np.arange(256, dtype=np.uint8).reshape(16, 16, 1)
    out = T.ToTensor()(mx.nd.array(x, dtype=np.uint8)).asnumpy()
    np.testing.assert_array_equal(out[0], x[:, :, 0].astype(np.float32) / np.float32(255))


def test_normalize():
    t = np.random.RandomState(2).rand(3, 4, 5).astype(np.float32)
    mean, std = (0.1, 0.2, 0.3), (0.5, 0.6, 0.7)
    out = T.Normalize(mean, std)(mx.nd.array(t))
    ref = (t - np.array(mean)[:, None, None]) / np.array(std)[:, None, None]
    assert_almost_equal(out.asnumpy(), ref, rtol=1e-5, atol=1e-6)
    out = T.Normalize(0.5, 0.25)(mx.nd.array(np.stack([t, t])))
    assert_almost_equal(out.asnumpy(), (np.stack([t, t]) - 0.5) / 0.25, rtol=1e-5, atol=1e-6)
    with pytest.raises(MXNetError, match="mean"):
        T.Normalize((0.5, 0.4), 0.25)(mx.nd.array(t))


def test_resize_shapes_and_nearest_values():
    x = mx.nd.array(_img(6, 9), dtype=np.uint8)
    # shapes as MXNet 1.9.1 gives them
    assert T.Resize(4)(x).shape == (4, 4, 3)
    assert T.Resize(4, keep_ratio=True)(x).shape == (4, 6, 3)
    assert T.Resize((5, 3))(x).shape == (3, 5, 3)
    assert T.Resize(4, keep_ratio=True)(mx.nd.array(_img(9, 6))).shape == (6, 4, 3)
    assert T.Resize(4)(mx.nd.stack(x, x)).shape == (2, 4, 4, 3)
    # nearest-neighbour doubling repeats every pixel twice along both axes
    small = _img(3, 4, seed=3)
    out = T.Resize((8, 6), interpolation=0)(mx.nd.array(small, dtype=np.uint8))
    np.testing.assert_array_equal(out.asnumpy(), small.repeat(2, 0).repeat(2, 1))
    assert out.dtype == np.uint8


def test_center_crop_and_crop_resize():
    x = _img(7, 10, seed=4)
    out = T.CenterCrop((4, 3))(mx.nd.array(x, dtype=np.uint8))
    x0, y0 = (10 - 4) // 2, (7 - 3) // 2
    np.testing.assert_array_equal(out.asnumpy(), x[y0:y0 + 3, x0:x0 + 4])
    assert T.CenterCrop(4)(mx.nd.array(x)).shape == (4, 4, 3)
    assert T.CenterCrop(20)(mx.nd.array(x)).shape == (20, 20, 3)   # scaled, then resized
    crop = T.CropResize(2, 1, 5, 4)(mx.nd.array(x, dtype=np.uint8))
    np.testing.assert_array_equal(crop.asnumpy(), x[1:5, 2:7])
    both = T.CropResize(2, 1, 5, 4)(mx.nd.array(np.stack([x, x]), dtype=np.uint8))
    np.testing.assert_array_equal(both.asnumpy()[1], x[1:5, 2:7])
    with pytest.raises(MXNetError):
        T.CropResize(8, 1, 5, 4)(mx.nd.array(x))


def test_random_resized_crop():
    x = mx.nd.array(_img(8, 8, seed=5), dtype=np.uint8)
    out = T.RandomResizedCrop(4)(x)
    assert out.shape == (4, 4, 3) and out.dtype == np.uint8
    # the whole image (area 1, square ratio) resized == Resize
    full = T.RandomResizedCrop((4, 4), scale=(1.0, 1.0), ratio=(1.0, 1.0))(x)
    np.testing.assert_array_equal(full.asnumpy(), T.Resize(4)(x).asnumpy())


def test_random_flips():
    x = _img(4, 5, seed=6)
    seen = {"lr": set(), "tb": set()}
    for _ in range(30):
        lr = T.RandomFlipLeftRight()(mx.nd.array(x, dtype=np.uint8)).asnumpy()
        tb = T.RandomFlipTopBottom()(mx.nd.array(x, dtype=np.uint8)).asnumpy()
        assert np.array_equal(lr, x) or np.array_equal(lr, x[:, ::-1])
        assert np.array_equal(tb, x) or np.array_equal(tb, x[::-1])
        seen["lr"].add(np.array_equal(lr, x))
        seen["tb"].add(np.array_equal(tb, x))
    assert seen == {"lr": {True, False}, "tb": {True, False}}


def _replay_uniform(seed, low, high):
    mx.random.seed(seed)
    return float(mx.nd.random.uniform(low, high, shape=(1,)).asscalar())


def test_random_brightness_contrast_saturation():
    x = _img(5, 6, seed=7).astype(np.float32)
    for seed in (1, 2):
        alpha = _replay_uniform(seed, 0.5, 1.5)
        mx.random.seed(seed)
        out = T.RandomBrightness(0.5)(mx.nd.array(x)).asnumpy()
        assert_almost_equal(out, x * alpha, rtol=1e-5, atol=1e-4)
        mx.random.seed(seed)   # integer images are truncated and saturated
        out8 = T.RandomBrightness(0.5)(mx.nd.array(x, dtype=np.uint8)).asnumpy()
        np.testing.assert_array_equal(out8, np.clip(np.float32(alpha) * x, 0, 255)
                                      .astype(np.uint8))

        alpha = _replay_uniform(seed, 0.7, 1.3)
        mx.random.seed(seed)
        out = T.RandomContrast(0.3)(mx.nd.array(x)).asnumpy()
        grey = (x @ LUMA).mean()
        assert_almost_equal(out, x * alpha + grey * (1 - alpha), rtol=1e-5, atol=1e-3)

        mx.random.seed(seed)
        out = T.RandomSaturation(0.3)(mx.nd.array(x)).asnumpy()
        grey = (x @ LUMA)[..., None]
        assert_almost_equal(out, x * alpha + grey * (1 - alpha), rtol=1e-5, atol=1e-3)


def test_random_hue_against_colorsys():
    x = _img(3, 4, seed=8).astype(np.float32)
    alpha = _replay_uniform(3, 0.8, 1.2)
    mx.random.seed(3)
    out = T.RandomHue(0.2)(mx.nd.array(x)).asnumpy()
    ref = np.empty_like(x)
    for i in range(3):
        for j in range(4):
            h, l, s = colorsys.rgb_to_hls(*(x[i, j] / 255.0))
            ref[i, j] = np.array(colorsys.hls_to_rgb((h + alpha - 1) % 1.0, l, s)) * 255
    assert_almost_equal(out, ref, rtol=1e-4, atol=1e-2)
    # MXNet 1.9.1: a hue factor of 0.8 on (172, 47, 117) gives (77, 47, 172)
    from mxnet.gluon.data.vision import _image_ops
    px = np.array([[[172, 47, 117]]], np.float32)
    assert_almost_equal(_image_ops.adjust_hue(px, 0.8), [[[77, 47, 172]]], atol=1e-3,
                        rtol=0)
    np.testing.assert_array_equal(T.RandomHue(0)(mx.nd.array(x)).asnumpy(), x)


def test_random_lighting():
    x = _img(3, 3, seed=9).astype(np.float32)
    mx.random.seed(4)
    alpha = mx.nd.random.normal(0, 0.1, shape=(3,)).asnumpy()
    mx.random.seed(4)
    out = T.RandomLighting(0.1)(mx.nd.array(x)).asnumpy()
    eigval = np.array([55.46, 4.794, 1.148])
    eigvec = np.array([[-0.5675, 0.7192, 0.4009], [-0.5808, -0.0045, -0.8140],
                       [-0.5836, -0.6948, 0.4203]])
    assert_almost_equal(out, x + eigvec @ (alpha * eigval), rtol=1e-5, atol=1e-4)
    # MXNet 1.9.1's adjust_lighting with alpha (0.1, 0.2, 0.3) adds these
    from mxnet.gluon.data.vision import _image_ops
    shift = _image_ops.adjust_lighting(np.zeros((1, 1, 3), np.float32), (0.1, 0.2, 0.3))
    assert_almost_equal(shift[0, 0], [-2.319717, -3.505772, -3.758072], atol=1e-4, rtol=0)


def test_color_jitter():
    x = mx.nd.array(_img(4, 4, seed=10), dtype=np.uint8)
    np.testing.assert_array_equal(T.RandomColorJitter()(x).asnumpy(), x.asnumpy())
    out = T.RandomColorJitter(0.2, 0.2, 0.2, 0.1)(x)
    assert out.shape == (4, 4, 3) and out.dtype == np.uint8


def test_compose_and_random_apply():
    x = mx.nd.array(_img(6, 9, seed=11), dtype=np.uint8)
    chain = T.Compose([T.Resize(4), T.ToTensor(), T.Normalize(0.1, 0.2)])
    assert len(chain) == 1 and isinstance(chain[0], nn.HybridSequential)
    ref = T.Normalize(0.1, 0.2)(T.ToTensor()(T.Resize(4)(x)))
    assert_almost_equal(chain(x).asnumpy(), ref.asnumpy())
    mixed = T.Compose([T.CenterCrop(4), T.ToTensor()])
    assert [type(b).__name__ for b in mixed._children.values()] == ["CenterCrop", "ToTensor"]
    assert mixed(x).shape == (3, 4, 4)
    never = T.RandomApply(T.Compose([T.RandomBrightness(0.5)]), p=0)
    np.testing.assert_array_equal(never(x).asnumpy(), x.asnumpy())
    always = T.RandomApply(T.Compose([T.Cast()]), p=1)
    assert always(x).dtype == np.float32


def _rot90_ccw_reference(img):
    # a quarter turn about the centre of a square CHW image, pixel for pixel
    return np.rot90(img, k=1, axes=(1, 2))


def test_rotate_quarter_turns_match_numpy():
    img = np.random.RandomState(3).uniform(size=(2, 5, 5)).astype(np.float32)
    out = T.Rotate(90.0)(mx.nd.array(img)).asnumpy()
    np.testing.assert_allclose(out, _rot90_ccw_reference(img), atol=1e-5)
    out = T.Rotate(180.0)(mx.nd.array(img[None])).asnumpy()[0]
    np.testing.assert_allclose(out, img[:, ::-1, ::-1], atol=1e-5)
    with pytest.raises(TypeError):
        T.Rotate(10.0)(mx.nd.ones((3, 4, 4), dtype="uint8"))


def test_random_rotation_probability_and_limits():
    with pytest.raises(ValueError):
        T.RandomRotation((-10, 10), rotate_with_proba=1.5)
    with pytest.raises(ValueError):
        T.RandomRotation((10, -10))
    img = mx.nd.array(np.random.RandomState(4).uniform(size=(3, 6, 8)))
    np.testing.assert_array_equal(T.RandomRotation((-90, 90), rotate_with_proba=0.0)(img)
                                  .asnumpy(), img.asnumpy())
    # a range of exactly one angle (as near as floats allow) is that rotation
    out = T.RandomRotation((90.0, 90.0 + 1e-9))(mx.nd.array(np.eye(5, dtype=np.float32)[None]))
    np.testing.assert_allclose(out.asnumpy(), _rot90_ccw_reference(np.eye(5)[None]),
                               atol=1e-5)
    assert T.RandomRotation((-5, 5))(mx.nd.ones((2, 3, 6, 8))).shape == (2, 3, 6, 8)
    with pytest.raises(TypeError):
        T.RandomRotation((-5, 5))(mx.nd.ones((3, 6, 8), dtype="uint8"))


def test_unsupported_paths_say_so():
    with pytest.raises(MXNetError, match="Symbol"):
        T.ToTensor()(mx.sym.var("x"))
