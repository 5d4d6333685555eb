"""Detection augmenters and ImageDetIter: boxes must follow the pixels. Images hold one
bright rectangle whose box is the label; after each augmenter the label's box must
still frame the rectangle."""
import io
import random

import numpy as np
import pytest

import mxnet as mx
from mxnet.image import (CreateDetAugmenter, CreateMultiRandCropAugmenter, DetBorrowAug,
                         DetHorizontalFlipAug, DetRandomCropAug, DetRandomPadAug,
                         DetRandomSelectAug, ImageDetIter)

H, W = 40, 60


def scene(x0=15, y0=10, x1=45, y1=30):
    img = np.zeros((H, W, 3), np.uint8)
    img[y0:y1, x0:x1] = 200
    label = np.array([[1, x0 / W, y0 / H, x1 / W, y1 / H]], np.float32)
    return mx.nd.array(img, dtype="uint8"), label


def bright_box(img):
    """Normalised box around the bright pixels."""
    a = img.asnumpy()[..., 0] > 100
    ys, xs = np.nonzero(a)
    h, w = a.shape
    return np.array([xs.min() / w, ys.min() / h, (xs.max() + 1) / w, (ys.max() + 1) / h])


def test_horizontal_flip_moves_boxes():
    img, label = scene()
    out, lab = DetHorizontalFlipAug(1.0)(img, label)
    np.testing.assert_allclose(lab[0, 1:], bright_box(out), atol=1e-6)
    same, lab2 = DetHorizontalFlipAug(0.0)(img, label)
    assert same is img and np.array_equal(lab2, label)


def test_random_crop_keeps_boxes_on_pixels():
    random.seed(3)
    aug = DetRandomCropAug(min_object_covered=0.9, area_range=(0.3, 1.0),
                           min_eject_coverage=0.9)
    cropped = 0
    for _ in range(20):
        img, label = scene()
        out, lab = aug(img, label)
        if out.shape != img.shape:
            cropped += 1
        np.testing.assert_allclose(lab[0, 1:], bright_box(out), atol=1.0 / min(out.shape[:2]))
    assert cropped > 0


def test_random_pad_keeps_boxes_on_pixels():
    random.seed(4)
    aug = DetRandomPadAug(area_range=(1.5, 3.0), pad_val=(0, 0, 0))
    img, label = scene()
    out, lab = aug(img, label)
    assert out.shape[0] >= H and out.shape[1] >= W and out.shape != img.shape
    np.testing.assert_allclose(lab[0, 1:], bright_box(out), atol=1e-6)


def test_borrow_and_select():
    img, label = scene()
    out, lab = DetBorrowAug(mx.image.ForceResizeAug((30, 20)))(img, label)
    assert out.shape == (20, 30, 3) and lab is label
    sel = DetRandomSelectAug([DetHorizontalFlipAug(1.0)], skip_prob=1.0)
    assert sel(img, label)[0] is img
    multi = CreateMultiRandCropAugmenter(min_object_covered=[0.1, 0.5], skip_prob=0.0)
    assert len(multi.aug_list) == 2
    with pytest.raises(TypeError):
        DetBorrowAug(DetHorizontalFlipAug(0.5))


def test_create_det_augmenter_output_shape():
    random.seed(5)
    augs = CreateDetAugmenter((3, 32, 48), rand_crop=0.5, rand_pad=0.5, rand_mirror=True,
                              mean=True, std=True, brightness=0.1)
    img, label = scene()
    for aug in augs:
        img, label = aug(img, label)
    assert img.shape == (32, 48, 3) and img.dtype == np.float32
    assert label.shape[1] == 5 and (label[:, 3] > label[:, 1]).all()


def test_create_det_augmenter_order():
    # MXNet 1.9.1 lists: crop select, mirror, pad select, ForceResize, Cast, Normalize
    augs = CreateDetAugmenter((3, 32, 48), rand_crop=0.5, rand_pad=0.5, rand_mirror=True,
                              mean=True, std=True)
    names = [type(a).__name__ for a in augs]
    assert names == ["DetRandomSelectAug", "DetHorizontalFlipAug", "DetRandomSelectAug",
                     "DetBorrowAug", "DetBorrowAug", "DetBorrowAug"]
    assert type(augs[2].aug_list[0]).__name__ == "DetRandomPadAug"
    assert [type(a.augmenter).__name__ for a in augs[3:]] == \
        ["ForceResizeAug", "CastAug", "ColorNormalizeAug"]


def _png(img):
    pil = pytest.importorskip("PIL.Image")
    buf = io.BytesIO()
    pil.fromarray(img).save(buf, format="PNG")
    return buf.getvalue()


def test_image_det_iter(tmp_path):
    pytest.importorskip("PIL.Image")
    boxes = [[[0, 0.1, 0.1, 0.5, 0.5]],
             [[1, 0.2, 0.2, 0.6, 0.9], [2, 0.0, 0.0, 0.3, 0.3], [3, 0.5, 0.5, 0.4, 0.9]],
             [[4, 0.3, 0.3, 0.7, 0.7], [5, 0.1, 0.2, 0.3, 0.4]]]
    imglist = []
    for i, objs in enumerate(boxes):
        img = np.full((H, W, 3), 10 * i, np.uint8)
        path = tmp_path / f"{i}.png"
        path.write_bytes(_png(img))
        raw = [2, 5] + [v for o in objs for v in o]
        imglist.append([raw, path.name])
    it = ImageDetIter(2, (3, 20, 30), imglist=imglist, path_root=str(tmp_path))
    # the third object of image 1 is degenerate (xmax < xmin) and dropped
    assert it.label_shape == (2, 5)
    assert it.provide_label[0][1] == (2, 2, 5)
    b1 = it.next()
    data, label = b1.data[0].asnumpy(), b1.label[0].asnumpy()
    assert data.shape == (2, 3, 20, 30)
    np.testing.assert_allclose(data[1], 10.0)
    np.testing.assert_allclose(label[0, 0], boxes[0][0])
    np.testing.assert_allclose(label[0, 1], -1)
    np.testing.assert_allclose(label[1], np.array(boxes[1][:2]), rtol=1e-6)
    b2 = it.next()
    assert b2.pad == 1
    with pytest.raises(StopIteration):
        it.next()
    it.reshape(label_shape=(4, 5))
    it.reset()
    assert it.next().label[0].shape == (2, 4, 5)
    with pytest.raises(ValueError):
        it.reshape(label_shape=(1, 5))
    other = ImageDetIter(1, (3, 20, 30), imglist=imglist[:1], path_root=str(tmp_path))
    it.sync_label_shape(other)
    assert other.label_shape == (4, 5)


def test_image_det_iter_np_mode(tmp_path):
    # MXNet 1.9.1 under npx.set_np(): the batches are mxnet.numpy.ndarray, so
    # batch.data[0].transpose(0, 2, 3, 1) works as in NumPy
    (tmp_path / "0.png").write_bytes(_png(np.full((H, W, 3), 7, np.uint8)))
    imglist = [[[2, 5, 0, 0.1, 0.2, 0.5, 0.6], "0.png"]]
    with mx.util.np_array(True):
        b = ImageDetIter(1, (3, 20, 30), imglist=imglist, path_root=str(tmp_path)).next()
        assert isinstance(b.data[0], mx.np.ndarray) and isinstance(b.label[0], mx.np.ndarray)
        assert b.data[0].transpose(0, 2, 3, 1).shape == (1, 20, 30, 3)
    np.testing.assert_allclose(b.label[0].asnumpy()[0, 0], [0, 0.1, 0.2, 0.5, 0.6], rtol=1e-6)
    np.testing.assert_allclose(b.data[0].asnumpy(), 7.0)


def test_image_det_iter_rejects_bad_labels(tmp_path):
    pytest.importorskip("PIL.Image")
    (tmp_path / "a.png").write_bytes(_png(np.zeros((H, W, 3), np.uint8)))
    with pytest.raises(RuntimeError):
        ImageDetIter(1, (3, 20, 30), imglist=[[[2, 5, 0, 0.5, 0.5, 0.1, 0.1], "a.png"]],
                     path_root=str(tmp_path))
