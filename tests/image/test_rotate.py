"""imrotate / random_rotate against scipy.ndimage.rotate (bilinear, zero outside),
batches, zoom modes and argument errors."""
import numpy as np
import pytest

import mxnet as mx

ndimage = pytest.importorskip("scipy.ndimage")


def _ramp():
    xlin = np.linspace(0, 0.5, 30)[:, None]
    ylin = np.linspace(0, 0.5, 60)[None, :]
    return (xlin + ylin)[:, :, None]


@pytest.mark.parametrize("angle", [6, -20, 45])
def test_imrotate_matches_scipy(angle):
    img = _ramp()
    out = mx.image.imrotate(mx.nd.array(img.transpose(2, 0, 1)), angle).asnumpy()
    ref = ndimage.rotate(img, angle, axes=(1, 0), reshape=False, order=1, mode="constant",
                         prefilter=False)
    np.testing.assert_allclose(out.transpose(1, 2, 0)[8:22, 18:42], ref[8:22, 18:42],
                               atol=1e-5)


def test_imrotate_batch_and_zoom():
    img = mx.nd.array(np.random.RandomState(0).uniform(size=(2, 3, 30, 60)))
    angles = mx.nd.array([6, -6])
    out = mx.image.imrotate(img, angles)
    single = mx.image.imrotate(img[1], -6)
    np.testing.assert_allclose(out[1].asnumpy(), single.asnumpy(), atol=1e-6)
    ones = mx.nd.ones((1, 30, 60))
    zin = mx.image.imrotate(ones, 30, zoom_in=True).asnumpy()
    assert zin[:, 1:-1, 1:-1].min() > 0.99            # no empty corner inside the border
    zout = mx.image.imrotate(ones, 30, zoom_out=True).asnumpy()
    plain = mx.image.imrotate(ones, 30).asnumpy()
    assert zout.sum() < plain.sum()                    # the whole image shrinks inside
    with pytest.raises(ValueError):
        mx.image.imrotate(ones, 30, zoom_in=True, zoom_out=True)
    with pytest.raises(TypeError):
        mx.image.imrotate(ones, mx.nd.array([1, 2]))


def test_random_rotate_shapes():
    img = mx.nd.random.uniform(shape=(3, 30, 60))
    assert mx.image.random_rotate(img, (-5, 5)).shape == (3, 30, 60)
    batch = mx.nd.stack(img, img)
    assert mx.image.random_rotate(batch, (-5, 5)).shape == (2, 3, 30, 60)


@pytest.mark.parametrize("zoom", ["zoom_in", "zoom_out"])
def test_imrotate_zoom_scale_matches_affine_reference(zoom):
    # MXNet scales the sampling grid by the ratio of the full image size (w, h) to the
    # rotated image's bounding box (w|cos|+h|sin|, h|cos|+w|sin|): the smaller ratio
    # for zoom_in, the larger inverse ratio for zoom_out.
    h, w, angle = 30, 60, 30.0
    img = _ramp()[:, :, 0]
    th = np.deg2rad(angle)
    c, s = abs(np.cos(th)), abs(np.sin(th))
    bw, bh = w * c + h * s, h * c + w * s
    scale = min(w / bw, h / bh) if zoom == "zoom_in" else max(bw / w, bh / h)
    mat = scale * np.array([[np.cos(th), np.sin(th)], [-np.sin(th), np.cos(th)]])
    centre = np.array([(h - 1) / 2.0, (w - 1) / 2.0])
    ref = ndimage.affine_transform(img, mat, offset=centre - mat @ centre, order=1,
                                   mode="constant", cval=0.0, prefilter=False)
    out = mx.image.imrotate(mx.nd.array(img[None]), angle, **{zoom: True}).asnumpy()[0]
    # the centre, away from where the sampling leaves the source (edges blend differently)
    np.testing.assert_allclose(out[11:19, 24:36], ref[11:19, 24:36], atol=1e-5)
