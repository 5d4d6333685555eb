"""mx.image: decoding, OpenCV-geometry resizing, crops, augmenters and ImageIter,
against references written here (loops over output pixels on tiny images, NumPy
slices, Pillow encodings of known arrays)."""
import io
import json
import math
import os
import random
import subprocess
import sys

import numpy as np
import pytest

import mxnet as mx
from mxnet import recordio
from mxnet.base import MXNetError

Image = pytest.importorskip("PIL.Image")


def png(arr):
    out = io.BytesIO()
    Image.fromarray(arr).save(out, format="PNG")
    return out.getvalue()


@pytest.fixture
def rgb():
    return np.random.RandomState(1).randint(0, 256, (7, 10, 3)).astype(np.uint8)


# --- references -----------------------------------------------------------------------
def ref_taps(n_in, n_out, method):
    """Per output pixel: list of (source index, weight), OpenCV's geometry."""
    scale = n_in / n_out
    rows = []
    for d in range(n_out):
        if method == 0:
            rows.append([(min(int(math.floor(d * scale)), n_in - 1), 1.0)])
            continue
        s = (d + 0.5) * scale - 0.5
        base = math.floor(s)
        f = s - base
        if method == 1:
            if base < 0:
                base, f = 0, 0.0
            if base >= n_in - 1:
                base, f = n_in - 1, 0.0
            rows.append([(base, 1 - f), (min(base + 1, n_in - 1), f)])
        else:   # bicubic, a = -0.75
            def w(x, a=-0.75):
                x = abs(x)
                if x <= 1:
                    return (a + 2) * x ** 3 - (a + 3) * x ** 2 + 1
                if x < 2:
                    return a * x ** 3 - 5 * a * x ** 2 + 8 * a * x - 4 * a
                return 0.0
            taps = [(min(max(base + k, 0), n_in - 1), w(f - k)) for k in (-1, 0, 1, 2)]
            total = sum(t[1] for t in taps)
            rows.append([(i, wt / total) for i, wt in taps])
    return rows


def ref_resize(img, w, h, method):
    img = img.astype(np.float64)
    tmp = np.zeros((h, img.shape[1], img.shape[2]))
    for y, taps in enumerate(ref_taps(img.shape[0], h, method)):
        for i, wt in taps:
            tmp[y] += wt * img[i]
    out = np.zeros((h, w, img.shape[2]))
    for x, taps in enumerate(ref_taps(img.shape[1], w, method)):
        for i, wt in taps:
            out[:, x] += wt * tmp[:, i]
    return out


# --- decoding -----------------------------------------------------------------------------
def test_imdecode(rgb, tmp_path):
    buf = png(rgb)
    a = mx.image.imdecode(buf)
    assert a.shape == (7, 10, 3) and a.dtype == np.uint8
    np.testing.assert_array_equal(a.asnumpy(), rgb)
    np.testing.assert_array_equal(mx.image.imdecode(buf, to_rgb=0).asnumpy(),
                                  rgb[:, :, ::-1])
    np.testing.assert_array_equal(mx.image.imdecode(np.frombuffer(buf, np.uint8)).asnumpy(),
                                  rgb)
    g = mx.image.imdecode(buf, flag=0).asnumpy()
    assert g.shape == (7, 10, 1)
    assert np.abs(g[:, :, 0] - rgb @ [0.299, 0.587, 0.114]).max() <= 1
    gray = rgb[:, :, 0]
    np.testing.assert_array_equal(mx.image.imdecode(png(gray)).asnumpy(),
                                  np.repeat(gray[:, :, None], 3, 2))
    rgba = np.concatenate([rgb, np.full((7, 10, 1), 9, np.uint8)], 2)
    np.testing.assert_array_equal(mx.image.imdecode(png(rgba)).asnumpy(), rgb)
    (tmp_path / "x.png").write_bytes(buf)
    np.testing.assert_array_equal(mx.image.imread(str(tmp_path / "x.png")).asnumpy(), rgb)
    out = mx.nd.zeros((7, 10, 3), dtype="uint8")
    mx.image.imdecode(buf, out=out)
    np.testing.assert_array_equal(out.asnumpy(), rgb)


def test_decode_errors(tmp_path):
    with pytest.raises(MXNetError, match="invalid image"):
        mx.image.imdecode(b"garbage")
    with pytest.raises(MXNetError, match="flag"):
        mx.image.imdecode(png(np.zeros((2, 2, 3), np.uint8)), flag=-1)
    with pytest.raises(MXNetError, match="cannot open"):
        mx.image.imread(str(tmp_path / "none.png"))


def test_pillow_is_optional():
    code = ("import sys; sys.modules['PIL'] = None\n"
            "import mxnet as mx\n"
            "from mxnet.base import MXNetError\n"
            "assert mx.recordio.unpack(mx.recordio.pack((0, 1.0, 2, 3), b'x'))[1] == b'x'\n"
            "try:\n"
            "    mx.image.imdecode(b'abc')\n"
            "except MXNetError as e:\n"
            "    assert 'Pillow' in str(e), e\n"
            "else:\n"
            "    raise SystemExit('no error')\n")
    src = os.path.join(os.path.dirname(mx.__file__), "..")
    env = dict(os.environ, PYTHONPATH=os.path.abspath(src))
    run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 0, run.stderr


# --- resizing ---------------------------------------------------------------------------
@pytest.mark.parametrize("interp", [0, 1, 2])
@pytest.mark.parametrize("size", [(5, 3), (17, 11), (4, 9), (10, 7)])
def test_imresize_matches_reference(rgb, interp, size):
    w, h = size
    ref = ref_resize(rgb, w, h, interp)
    out = mx.image.imresize(mx.nd.array(rgb, dtype="uint8"), w, h, interp=interp)
    assert out.shape == (h, w, 3) and out.dtype == np.uint8
    # uint8 bilinear and bicubic round as OpenCV's fixed point does (within 1 of the
    # exact value; test_uint8_resizing_is_mxnets checks their bits against MXNet's)
    tol = 1 if interp in (1, 2) else 0.5 + 1e-3
    assert np.abs(out.asnumpy() - np.clip(ref, 0, 255)).max() <= tol
    outf = mx.image.imresize(mx.nd.array(rgb), w, h, interp=interp).asnumpy()
    assert outf.dtype == np.float32
    np.testing.assert_allclose(outf, ref, rtol=0, atol=1e-3)


def test_area_downscale_is_block_mean(rgb):
    img = np.random.RandomState(2).rand(8, 12, 3).astype(np.float32) * 255
    out = mx.image.imresize(mx.nd.array(img), 6, 4, interp=3).asnumpy()
    ref = img.reshape(4, 2, 6, 2, 3).mean(axis=(1, 3))
    np.testing.assert_allclose(out, ref, rtol=1e-5)
    out = mx.image.imresize(mx.nd.array(img), 4, 4, interp=3).asnumpy()   # 3x horiz.
    np.testing.assert_allclose(out, img.reshape(4, 2, 4, 3, 3).mean(axis=(1, 3)),
                               rtol=1e-5)
    with pytest.raises(MXNetError, match="interpolation"):
        mx.image.imresize(mx.nd.array(img), 4, 4, interp=7)
    with pytest.raises(MXNetError, match="positive"):
        mx.image.imresize(mx.nd.array(img), 0, 4)


def test_resize_short_and_scale_down(rgb):
    a = mx.nd.array(rgb, dtype="uint8")
    assert mx.image.resize_short(a, 3).shape == (3, 4, 3)       # 10 * 3 // 7 = 4
    assert mx.image.resize_short(a, 14).shape == (14, 20, 3)
    tall = mx.nd.array(rgb.transpose(1, 0, 2), dtype="uint8")
    assert mx.image.resize_short(tall, 3).shape == (4, 3, 3)
    assert mx.image.scale_down((640, 480), (720, 120)) == (640, 106)
    assert mx.image.scale_down((360, 1000), (480, 500)) == (360, 375)
    assert mx.image.scale_down((10, 7), (20, 3)) == (10, 1)


def test_crops(rgb):
    a = mx.nd.array(rgb, dtype="uint8")
    out, rect = mx.image.center_crop(a, (4, 3))
    assert rect == (3, 2, 4, 3)
    np.testing.assert_array_equal(out.asnumpy(), rgb[2:5, 3:7])
    out, rect = mx.image.center_crop(a, (20, 20))
    assert rect == (1, 0, 7, 7) and out.shape == (20, 20, 3)
    np.testing.assert_array_equal(mx.image.fixed_crop(a, 1, 2, 3, 4).asnumpy(),
                                  rgb[2:6, 1:4])
    resized = mx.image.fixed_crop(a, 1, 2, 3, 4, size=(6, 5)).asnumpy()
    ref = np.clip(ref_resize(rgb[2:6, 1:4], 6, 5, 2), 0, 255)
    assert np.abs(resized - ref).max() <= 1      # OpenCV's fixed-point rounding (bicubic)
    random.seed(3)
    for _ in range(5):
        out, (x0, y0, w, h) = mx.image.random_crop(a, (4, 3))
        assert (w, h) == (4, 3) and 0 <= x0 <= 6 and 0 <= y0 <= 4
        np.testing.assert_array_equal(out.asnumpy(), rgb[y0:y0 + 3, x0:x0 + 4])
    random.seed(3)
    out, (x0, y0, w, h) = mx.image.random_size_crop(a, (4, 3), 0.3, (0.75, 1.33))
    assert out.shape == (3, 4, 3) and x0 + w <= 10 and y0 + h <= 7
    with pytest.raises(MXNetError, match="inside"):
        mx.image.fixed_crop(a, 8, 0, 5, 2)


def test_functions_return_np_arrays_under_set_np(rgb, tmp_path):
    # MXNet 1.9.1 under npx.set_np(): imread, imresize and the crops give
    # mxnet.numpy.ndarray (checked with the real library); legacy NDArray otherwise
    (tmp_path / "x.png").write_bytes(png(rgb))
    with mx.util.np_array(True):
        img = mx.image.imread(str(tmp_path / "x.png"))
        outs = [img, mx.image.imdecode(png(rgb)), mx.image.imresize(img, 4, 3),
                mx.image.resize_short(img, 5), mx.image.fixed_crop(img, 1, 2, 3, 4),
                mx.image.center_crop(img, (4, 3))[0], mx.image.random_crop(img, (4, 3))[0]]
        assert mx.image.is_np_array()
    for out in outs:
        assert isinstance(out, mx.np.ndarray), type(out)
    np.testing.assert_array_equal(outs[0].asnumpy(), rgb)
    np.testing.assert_array_equal(outs[4].asnumpy(), rgb[2:6, 1:4])
    legacy = mx.image.imread(str(tmp_path / "x.png"))
    assert not mx.image.is_np_array()
    assert type(legacy) is mx.nd.NDArray


def test_color_normalize_in_place(rgb):
    a = mx.nd.array(rgb)
    mean, std = np.array([1, 2, 3], np.float32), np.array([2, 4, 8], np.float32)
    out = mx.image.color_normalize(a, mx.nd.array(mean), mx.nd.array(std))
    np.testing.assert_allclose(out.asnumpy(), (rgb - mean) / std, rtol=1e-6)
    np.testing.assert_allclose(a.asnumpy(), (rgb - mean) / std, rtol=1e-6)


# --- augmenters -------------------------------------------------------------------------
def test_create_augmenter_list():
    augs = mx.image.CreateAugmenter((3, 4, 5), resize=6, rand_crop=True, rand_mirror=True,
                                    mean=True, std=True)
    names = [json.loads(a.dumps())[0] for a in augs]
    assert names == ["resizeaug", "randomcropaug", "horizontalflipaug", "castaug",
                     "colornormalizeaug"]
    assert json.loads(augs[1].dumps())[1] == {"size": [5, 4], "interp": 2}
    np.testing.assert_allclose(json.loads(augs[-1].dumps())[1]["mean"],
                               [123.68, 116.28, 103.53], rtol=1e-6)
    assert [type(a).__name__ for a in mx.image.CreateAugmenter((3, 4, 5))] == \
        ["CenterCropAug", "CastAug"]
    with pytest.raises(MXNetError):
        mx.image.CreateAugmenter((3, 4, 5), mean=np.array([1.0, 2.0]))


def test_augmenters(rgb):
    a = mx.nd.array(rgb, dtype="uint8")
    np.testing.assert_array_equal(mx.image.HorizontalFlipAug(1.0)(a).asnumpy(),
                                  rgb[:, ::-1])
    assert mx.image.HorizontalFlipAug(0.0)(a) is a
    assert mx.image.CastAug()(a).dtype == np.float32
    f = mx.image.CastAug()(a)
    np.testing.assert_allclose(
        mx.image.ColorNormalizeAug(np.array([1, 2, 3]), np.array([2, 2, 2]))(f).asnumpy(),
        (rgb - [1, 2, 3]) / 2, rtol=1e-6)
    assert mx.image.ForceResizeAug((7, 5))(a).shape == (5, 7, 3)
    assert mx.image.ResizeAug(14)(a).shape == (14, 20, 3)
    assert mx.image.CenterCropAug((4, 3))(a).shape == (3, 4, 3)
    random.seed(7)
    alpha = 1.0 + random.uniform(-0.3, 0.3)
    random.seed(7)
    np.testing.assert_allclose(mx.image.BrightnessJitterAug(0.3)(f).asnumpy(),
                               rgb * alpha, rtol=1e-5)
    random.seed(7)
    sat = mx.image.SaturationJitterAug(0.3)(f).asnumpy()
    gray = rgb @ np.array([0.299, 0.587, 0.114])
    np.testing.assert_allclose(sat, rgb * alpha + gray[..., None] * (1 - alpha),
                               rtol=1e-4, atol=1e-3)
    g = mx.image.RandomGrayAug(1.0)(f).asnumpy()
    np.testing.assert_allclose(g[..., 0], rgb @ [0.21, 0.72, 0.07], rtol=1e-5)
    seq = mx.image.SequentialAug([mx.image.HorizontalFlipAug(1.0),
                                  mx.image.HorizontalFlipAug(1.0)])
    np.testing.assert_array_equal(seq(a).asnumpy(), rgb)


# --- ImageIter ----------------------------------------------------------------------------
@pytest.fixture
def image_set(tmp_path):
    rng = np.random.RandomState(0)
    sizes = [(8, 10), (10, 8), (12, 12), (9, 11), (8, 8), (16, 12), (10, 10)]
    imgs = [rng.randint(0, 256, s + (3,)).astype(np.uint8) for s in sizes]
    w = recordio.MXIndexedRecordIO(str(tmp_path / "a.idx"), str(tmp_path / "a.rec"), "w")
    lines = []
    for i, img in enumerate(imgs):
        w.write_idx(i, recordio.pack_img((0, float(i), i, 0), img[:, :, ::-1],
                                         img_fmt=".png"))
        (tmp_path / f"im{i}.png").write_bytes(png(img))
        lines.append(f"{i}\t{i}\t{i + 0.5}\tim{i}.png")
    w.close()
    (tmp_path / "a.lst").write_text("\n".join(lines) + "\n")
    return tmp_path, imgs


def center(img, h, w):
    y0, x0 = (img.shape[0] - h) // 2, (img.shape[1] - w) // 2
    return img[y0:y0 + h, x0:x0 + w].transpose(2, 0, 1).astype(np.float32)


def test_image_iter_rec(image_set):
    root, imgs = image_set
    it = mx.image.ImageIter(3, (3, 8, 8), path_imgrec=str(root / "a.rec"))
    assert it.provide_data == [("data", (3, 3, 8, 8))]
    assert it.provide_label == [("softmax_label", (3,))]
    for _ in range(2):
        got = list(it)
        assert [b.pad for b in got] == [0, 0, 2]
        ids = [0, 1, 2, 3, 4, 5, 6, 0, 1]
        data = np.concatenate([b.data[0].asnumpy() for b in got])
        labels = np.concatenate([b.label[0].asnumpy() for b in got])
        np.testing.assert_array_equal(labels, ids)
        for k, i in enumerate(ids):
            np.testing.assert_array_equal(data[k], center(imgs[i], 8, 8))
        it.reset()


def test_image_iter_batches_are_np_arrays_under_set_np(image_set):
    # MXNet 1.9.1 under npx.set_np(): ImageIter (and ImageDetIter) batches hold
    # mxnet.numpy.ndarray data and labels (checked with the real library)
    root, imgs = image_set
    with mx.util.np_array(True):
        b = mx.image.ImageIter(2, (3, 8, 8), path_imgrec=str(root / "a.rec")).next()
    assert isinstance(b.data[0], mx.np.ndarray) and isinstance(b.label[0], mx.np.ndarray)
    np.testing.assert_array_equal(b.data[0].asnumpy()[1], center(imgs[1], 8, 8))
    np.testing.assert_array_equal(b.label[0].asnumpy(), [0, 1])
    b = mx.image.ImageIter(2, (3, 8, 8), path_imgrec=str(root / "a.rec")).next()
    assert type(b.data[0]) is mx.nd.NDArray and type(b.label[0]) is mx.nd.NDArray


def test_image_iter_list_and_modes(image_set):
    root, imgs = image_set
    it = mx.image.ImageIter(2, (3, 8, 8), path_imglist=str(root / "a.lst"),
                            path_root=str(root), label_width=2)
    assert it.provide_label == [("softmax_label", (2, 2))]
    b = it.next()
    np.testing.assert_array_equal(b.label[0].asnumpy(), [[0, 0.5], [1, 1.5]])
    np.testing.assert_array_equal(b.data[0].asnumpy()[1], center(imgs[1], 8, 8))
    it = mx.image.ImageIter(2, (3, 8, 8), imglist=[[5.0, "im0.png"], [6.0, "im2.png"]],
                            path_root=str(root))
    b = it.next()
    assert it.seq == ["1", "2"]
    np.testing.assert_array_equal(b.label[0].asnumpy(), [5, 6])
    np.testing.assert_array_equal(b.data[0].asnumpy()[1], center(imgs[2], 8, 8))
    it = mx.image.ImageIter(3, (3, 8, 8), path_imgrec=str(root / "a.rec"),
                            last_batch_handle="roll_over")
    labels = []
    for _ in range(2):
        labels.append([(b.label[0].asnumpy().tolist(), b.pad) for b in it])
        it.reset()
    assert labels[0] == [([0, 1, 2], 0), ([3, 4, 5], 0)]
    assert labels[1] == [([6, 0, 1], 1), ([2, 3, 4], 0)]
    it = mx.image.ImageIter(3, (3, 8, 8), path_imgrec=str(root / "a.rec"),
                            last_batch_handle="discard")
    assert [b.label[0].asnumpy().tolist() for b in it] == [[0, 1, 2], [3, 4, 5]]


def test_image_iter_shuffle_and_augment(image_set):
    root, imgs = image_set
    random.seed(0)
    it = mx.image.ImageIter(7, (3, 6, 6), path_imgrec=str(root / "a.rec"),
                            path_imgidx=str(root / "a.idx"), shuffle=True,
                            rand_mirror=True, mean=np.array([10, 20, 30]))
    b = it.next()
    labels = b.label[0].asnumpy().astype(int)
    assert sorted(labels.tolist()) == list(range(7))
    for k, i in enumerate(labels):
        plain = center(imgs[i], 6, 6) - np.array([10, 20, 30])[:, None, None]
        got = b.data[0].asnumpy()[k]
        assert (got == plain).all() or (got == plain[:, :, ::-1]).all()


def test_image_iter_errors(image_set):
    root, _ = image_set
    with pytest.raises(MXNetError, match="length 3"):
        mx.image.ImageIter(2, (8, 8), path_imgrec=str(root / "a.rec"))
    with pytest.raises(MXNetError, match="3 channels"):
        mx.image.ImageIter(2, (1, 8, 8), path_imgrec=str(root / "a.rec"))
    with pytest.raises(MXNetError, match="path_imgrec"):
        mx.image.ImageIter(2, (3, 8, 8))
    with pytest.raises(MXNetError, match="dtype"):
        mx.image.ImageIter(2, (3, 8, 8), path_imgrec=str(root / "a.rec"), dtype="float16")
    it = mx.image.ImageIter(2, (3, 8, 8), path_imgrec=str(root / "a.rec"), label_width=2)
    with pytest.raises(MXNetError, match="label"):
        it.next()


def test_copy_make_border(rgb):
    a = mx.nd.array(rgb, dtype="uint8")
    out = mx.image.copyMakeBorder(a, 1, 2, 3, 0, type=0, value=7).asnumpy()
    assert out.shape == (10, 13, 3) and (out[0] == 7).all()
    np.testing.assert_array_equal(out[1:8, 3:], rgb)
    for cv_type, mode in [(1, "edge"), (2, "symmetric"), (3, "wrap"), (4, "reflect")]:
        np.testing.assert_array_equal(
            mx.image.copyMakeBorder(a, 2, 1, 1, 2, type=cv_type).asnumpy(),
            np.pad(rgb, ((2, 1), (1, 2), (0, 0)), mode=mode))
    with pytest.raises(TypeError):            # imrotate needs a float image
        mx.image.imrotate(a.transpose((2, 0, 1)), 30)


@pytest.mark.parametrize("interp, key", [(1, "imresize"), (2, "bicubic")])
def test_uint8_resizing_is_mxnets(interp, key):
    """Bilinear and bicubic resizing of uint8 images give MXNet 1.9.1's pixels exactly
    (OpenCV's fixed-point arithmetic): imresize, and nd.image.resize
    (transforms.Resize) for bilinear, 48 images of 1, 3 and 4 channels, halved, doubled
    and resized to random sizes (tests/fixtures/mxnet-1.9.1/image, written by the real
    MXNet)."""
    from common import fixture_path
    from mxnet.backend.image_resize import resize
    cases = np.load(fixture_path("image", "resize_uint8.npz"))
    for k in range(48):
        img, want = cases[f"in_{k}"], cases[f"{key}_{k}"]
        h, w = want.shape[:2]
        got = mx.image.imresize(mx.nd.array(img, dtype="uint8"), w, h, interp=interp)
        np.testing.assert_array_equal(got.asnumpy(), want, err_msg=f"{key} case {k}")
        if interp == 1:
            got = mx.nd.image.resize(mx.nd.array(img, dtype="uint8"), (w, h))
            np.testing.assert_array_equal(got.asnumpy(), cases[f"image_resize_{k}"],
                                          err_msg=f"nd.image.resize case {k}")
        if img.shape[2] == 1:           # a 2-D image resizes as its one channel
            np.testing.assert_array_equal(resize(img[:, :, 0], w, h, interp),
                                          want[:, :, 0])
        if h > 2 and w > 2:             # a window of the result is that crop of it
            np.testing.assert_array_equal(
                resize(img, w, h, interp, window=(1, 1, w - 2, h - 2)),
                want[1:h - 1, 1:w - 1])
