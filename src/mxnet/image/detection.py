"""Object-detection data: augmenters that move the boxes with the image
(``DetAugmenter`` and friends, ``CreateDetAugmenter``) and ``ImageDetIter``.

Labels are float arrays of shape (objects, width >= 5): class id, then xmin, ymin,
xmax, ymax normalised to [0, 1] by the image's width and height, then any extra
columns. A detection augmenter is called as ``aug(src, label) -> (src, label)``.

Raw labels (in a .lst file or a record) are flat: header width A >= 2, object width
B >= 5, A - 2 more header values, then the objects, B values each. ``ImageDetIter``
batches labels as (batch, max objects, B), padded with -1.
"""
import json
import math
import random as _random

import numpy as np

from ..base import MXNetError
from ..ndarray.ndarray import NDArray
from .augmenters import (Augmenter, CastAug, ColorJitterAug, ColorNormalizeAug,
                         ForceResizeAug, HueJitterAug, LightingAug, RandomGrayAug, ResizeAug,
                         _IMAGENET_EIGVAL, _IMAGENET_EIGVEC, _IMAGENET_MEAN, _IMAGENET_STD,
                         _jsonable)
from .image import as_nd, as_numpy, fixed_crop
from .image_iter import ImageIter

__all__ = ["DetAugmenter", "DetBorrowAug", "DetRandomSelectAug", "DetHorizontalFlipAug",
           "DetRandomCropAug", "DetRandomPadAug", "CreateDetAugmenter",
           "CreateMultiRandCropAugmenter", "ImageDetIter"]


class DetAugmenter:
    """Base class of detection augmenters: ``aug(src, label) -> (src, label)``. The
    keyword arguments given to ``__init__`` are kept for ``dumps()``."""

    def __init__(self, **kwargs):
        self._kwargs = {k: _jsonable(v) for k, v in kwargs.items()}

    def dumps(self):
        """A JSON string naming the augmenter and its arguments."""
        return json.dumps([type(self).__name__.lower(), self._kwargs])

    def __call__(self, src, label):
        raise NotImplementedError(f"{type(self).__name__} must implement __call__")


class DetBorrowAug(DetAugmenter):
    """Apply an image-only augmenter; the boxes do not change."""

    def __init__(self, augmenter):
        if not isinstance(augmenter, Augmenter):
            raise TypeError(f"DetBorrowAug: expected an image Augmenter, got "
                            f"{type(augmenter).__name__}")
        super().__init__(augmenter=augmenter.dumps())
        self.augmenter = augmenter

    def dumps(self):
        return [type(self).__name__.lower(), self.augmenter.dumps()]

    def __call__(self, src, label):
        return self.augmenter(src), label


class DetRandomSelectAug(DetAugmenter):
    """Apply one augmenter picked at random from ``aug_list``, or (probability
    ``skip_prob``) none."""

    def __init__(self, aug_list, skip_prob=0):
        super().__init__(skip_prob=skip_prob)
        if not isinstance(aug_list, (list, tuple)):
            aug_list = [aug_list]
        for aug in aug_list:
            if not isinstance(aug, DetAugmenter):
                raise TypeError("DetRandomSelectAug: every augmenter must be a "
                                f"DetAugmenter, got {type(aug).__name__}")
        if not aug_list:
            skip_prob = 1
        self.aug_list = list(aug_list)
        self.skip_prob = skip_prob

    def dumps(self):
        return [type(self).__name__.lower(), [a.dumps() for a in self.aug_list]]

    def __call__(self, src, label):
        if _random.random() < self.skip_prob:
            return src, label
        return _random.choice(self.aug_list)(src, label)


class DetHorizontalFlipAug(DetAugmenter):
    """Mirror image and boxes left-right with probability ``p``."""

    def __init__(self, p):
        super().__init__(p=p)
        self.p = p

    def __call__(self, src, label):
        if _random.random() < self.p:
            src = as_nd(np.ascontiguousarray(as_numpy(src)[:, ::-1]))
            label = np.array(label, copy=True)
            label[:, [1, 3]] = 1.0 - label[:, [3, 1]]
        return src, label


def _pair(value, name):
    if isinstance(value, (list, tuple)):
        if len(value) != 2:
            raise ValueError(f"{name} must be a number or a (low, high) pair, got {value!r}")
        return float(value[0]), float(value[1])
    return float(value), float(value)


def _box_areas(boxes):
    """Areas of (n, 4) xmin, ymin, xmax, ymax boxes (0 when empty)."""
    return np.maximum(0, boxes[:, 2] - boxes[:, 0]) * np.maximum(0, boxes[:, 3] - boxes[:, 1])


def _proposal_size(height, width, ratio_range, area_range, grow):
    """A random (w, h) of aspect w/h in ratio_range and area (relative to the image) in
    area_range, or None. ``grow``: the region may exceed the image (padding)."""
    ratio = _random.uniform(*ratio_range)
    if ratio <= 0:
        return None
    area = _random.uniform(*area_range) * height * width
    h = int(round(math.sqrt(area / ratio)))
    w = int(round(h * ratio))
    if h < 1 or w < 1:
        return None
    if grow:
        if h < height or w < width:
            return None
    elif h > height or w > width:
        return None
    return w, h


class DetRandomCropAug(DetAugmenter):
    """Crop a random region (aspect ratio and relative area drawn from the ranges)
    that covers more than ``min_object_covered`` of every box it touches; boxes keep
    their clipped part when it is more than ``min_eject_coverage`` of the box, and are
    dropped otherwise. After ``max_attempts`` failures the input is returned."""

    def __init__(self, min_object_covered=0.1, aspect_ratio_range=(0.75, 1.33),
                 area_range=(0.05, 1.0), min_eject_coverage=0.3, max_attempts=50):
        aspect_ratio_range = _pair(aspect_ratio_range, "aspect_ratio_range")
        area_range = _pair(area_range, "area_range")
        super().__init__(min_object_covered=min_object_covered,
                         aspect_ratio_range=aspect_ratio_range, area_range=area_range,
                         min_eject_coverage=min_eject_coverage, max_attempts=max_attempts)
        self.min_object_covered = min_object_covered
        self.min_eject_coverage = min_eject_coverage
        self.max_attempts = max_attempts
        self.aspect_ratio_range = aspect_ratio_range
        self.area_range = (area_range[0], min(area_range[1], 1.0))
        self.enabled = (0 < area_range[1] and area_range[0] <= area_range[1] and
                        0 < aspect_ratio_range[0] <= aspect_ratio_range[1])

    def __call__(self, src, label):
        h, w = as_numpy(src).shape[:2]
        found = self._propose(np.asarray(label, dtype=np.float64), h, w)
        if found is None:
            return src, label
        x, y, cw, ch, new_label = found
        return fixed_crop(src, x, y, cw, ch, None), new_label.astype(np.asarray(label).dtype)

    def _propose(self, label, height, width):
        if not self.enabled or height <= 0 or width <= 0:
            return None
        boxes = label[:, 1:5]
        areas = _box_areas(boxes)
        for _ in range(self.max_attempts):
            size = _proposal_size(height, width, self.aspect_ratio_range, self.area_range,
                                  grow=False)
            if size is None:
                continue
            cw, ch = size
            if cw * ch < 2:
                continue
            x = _random.randint(0, width - cw)
            y = _random.randint(0, height - ch)
            crop = np.array([x / width, y / height, (x + cw) / width, (y + ch) / height])
            inter = np.concatenate([np.maximum(boxes[:, :2], crop[:2]),
                                    np.minimum(boxes[:, 2:], crop[2:])], axis=1)
            with np.errstate(divide="ignore", invalid="ignore"):
                cover = np.where(areas > 0, _box_areas(inter) / areas, 0)
            touched = cover[cover > 0]
            if touched.size == 0 or touched.min() <= self.min_object_covered:
                continue
            out = label.copy()
            span = crop[2:] - crop[:2]
            out[:, 1:5] = np.clip((inter - np.tile(crop[:2], 2)) / np.tile(span, 2), 0, 1)
            keep = (cover > self.min_eject_coverage) & (out[:, 3] > out[:, 1]) & \
                (out[:, 4] > out[:, 2])
            if keep.any():
                return x, y, cw, ch, out[keep]
        return None


class DetRandomPadAug(DetAugmenter):
    """Place the image at a random spot of a larger canvas (aspect ratio and relative
    area >= 1 drawn from the ranges) filled with ``pad_val``; boxes shrink to match."""

    def __init__(self, aspect_ratio_range=(0.75, 1.33), area_range=(1.0, 3.0),
                 max_attempts=50, pad_val=(128, 128, 128)):
        aspect_ratio_range = _pair(aspect_ratio_range, "aspect_ratio_range")
        area_range = _pair(area_range, "area_range")
        if not isinstance(pad_val, (list, tuple)):
            pad_val = (pad_val,)
        super().__init__(aspect_ratio_range=aspect_ratio_range, area_range=area_range,
                         max_attempts=max_attempts, pad_val=pad_val)
        self.aspect_ratio_range = aspect_ratio_range
        self.area_range = area_range
        self.max_attempts = max_attempts
        self.pad_val = pad_val
        self.enabled = (area_range[1] > 1.0 and area_range[0] <= area_range[1] and
                        0 < aspect_ratio_range[0] <= aspect_ratio_range[1])

    def __call__(self, src, label):
        img = as_numpy(src)
        height, width = img.shape[:2]
        if not self.enabled:
            return src, label
        for _ in range(self.max_attempts):
            size = _proposal_size(height, width, self.aspect_ratio_range,
                                  (max(1.0, self.area_range[0]), self.area_range[1]),
                                  grow=True)
            if size is None:
                continue
            pw, ph = size
            x = _random.randint(0, pw - width)
            y = _random.randint(0, ph - height)
            canvas = np.empty((ph, pw) + img.shape[2:], img.dtype)
            canvas[...] = np.asarray(self.pad_val, dtype=img.dtype)[:img.shape[-1]] \
                if img.ndim == 3 else self.pad_val[0]
            canvas[y:y + height, x:x + width] = img
            out = np.array(label, dtype=np.float64, copy=True)
            out[:, [1, 3]] = (out[:, [1, 3]] * width + x) / pw
            out[:, [2, 4]] = (out[:, [2, 4]] * height + y) / ph
            return as_nd(canvas), out.astype(np.asarray(label).dtype)
        return src, label


def CreateMultiRandCropAugmenter(min_object_covered=0.1, aspect_ratio_range=(0.75, 1.33),
                                 area_range=(0.05, 1.0), min_eject_coverage=0.3,
                                 max_attempts=50, skip_prob=0):
    """A DetRandomSelectAug over several DetRandomCropAug: each argument may be a list
    (one value per crop augmenter; single values are shared)."""
    def listed(v, pairs=False):
        if pairs:
            return v if isinstance(v, list) else [v]
        return list(v) if isinstance(v, (list, tuple)) else [v]
    covered = listed(min_object_covered)
    ratios = listed(aspect_ratio_range, pairs=True)
    areas = listed(area_range, pairs=True)
    ejects = listed(min_eject_coverage)
    attempts = listed(max_attempts)
    n = max(len(covered), len(ratios), len(areas), len(ejects), len(attempts))

    def pick(values, i):
        if len(values) not in (1, n):
            raise ValueError("CreateMultiRandCropAugmenter: list arguments must have the "
                             "same length")
        return values[i if len(values) == n else 0]
    augs = [DetRandomCropAug(pick(covered, i), pick(ratios, i), pick(areas, i),
                             pick(ejects, i), pick(attempts, i)) for i in range(n)]
    return DetRandomSelectAug(augs, skip_prob=skip_prob)


def CreateDetAugmenter(data_shape, resize=0, rand_crop=0, rand_pad=0, rand_gray=0,
                       rand_mirror=False, mean=None, std=None, brightness=0, contrast=0,
                       saturation=0, pca_noise=0, hue=0, inter_method=2,
                       min_object_covered=0.1, aspect_ratio_range=(0.75, 1.33),
                       area_range=(0.05, 3.0), min_eject_coverage=0.3, max_attempts=50,
                       pad_val=(127, 127, 127)):
    """The standard detection augmenter list for images of shape ``data_shape``
    (C, H, W): resize the shorter edge (``resize``), random crop (probability
    ``rand_crop``, area up to 1 of ``area_range``), mirror, random pad (probability
    ``rand_pad``, area from 1 of ``area_range``), force-resize to data_shape, cast to
    float32, colour jitter, hue, PCA lighting, random gray, normalise."""
    auglist = []
    if resize > 0:
        auglist.append(DetBorrowAug(ResizeAug(resize, inter_method)))
    area_range = _pair(area_range, "area_range")
    if rand_crop > 0:
        crop_area = (area_range[0], min(1.0, area_range[1]))
        auglist.append(CreateMultiRandCropAugmenter(min_object_covered, aspect_ratio_range,
                                                    crop_area, min_eject_coverage,
                                                    max_attempts, skip_prob=1 - rand_crop))
    if rand_mirror:           # MXNet's order: crop, mirror, pad, force-resize, cast
        auglist.append(DetHorizontalFlipAug(0.5))
    if rand_pad > 0:
        pad = DetRandomPadAug(aspect_ratio_range, (1.0, max(1.0, area_range[1])),
                              max_attempts, pad_val)
        auglist.append(DetRandomSelectAug([pad], 1 - rand_pad))
    auglist.append(DetBorrowAug(ForceResizeAug((data_shape[2], data_shape[1]),
                                               inter_method)))
    auglist.append(DetBorrowAug(CastAug()))
    if brightness or contrast or saturation:
        auglist.append(DetBorrowAug(ColorJitterAug(brightness, contrast, saturation)))
    if hue:
        auglist.append(DetBorrowAug(HueJitterAug(hue)))
    if pca_noise > 0:
        auglist.append(DetBorrowAug(LightingAug(pca_noise, _IMAGENET_EIGVAL,
                                                _IMAGENET_EIGVEC)))
    if rand_gray > 0:
        auglist.append(DetBorrowAug(RandomGrayAug(rand_gray)))
    if mean is True:
        mean = _IMAGENET_MEAN.astype(np.float32)
    if std is True:
        std = _IMAGENET_STD.astype(np.float32)
    if mean is not None or std is not None:
        auglist.append(DetBorrowAug(ColorNormalizeAug(mean, std)))
    return auglist


class ImageDetIter(ImageIter):
    """ImageIter for object detection: raw labels are parsed into (objects, width)
    boxes (see the module docstring), augmenters see (image, label) pairs, and label
    batches are (batch, max objects, width) padded with -1, ``max objects`` taken over
    the whole data set (``reshape`` / ``sync_label_shape`` can enlarge it)."""

    def __init__(self, batch_size, data_shape, path_imgrec=None, path_imglist=None,
                 path_root=None, path_imgidx=None, shuffle=False, part_index=0,
                 num_parts=1, aug_list=None, imglist=None, data_name="data",
                 label_name="label", last_batch_handle="pad", **kwargs):
        super().__init__(batch_size=batch_size, data_shape=data_shape,
                         path_imgrec=path_imgrec, path_imglist=path_imglist,
                         path_root=path_root, path_imgidx=path_imgidx, shuffle=shuffle,
                         part_index=part_index, num_parts=num_parts, aug_list=[],
                         imglist=imglist, data_name=data_name, label_name=label_name,
                         last_batch_handle=last_batch_handle)
        self.auglist = CreateDetAugmenter(data_shape, **kwargs) if aug_list is None \
            else aug_list
        self.label_shape = self._estimate_label_shape()
        self.provide_label = [(label_name, (batch_size,) + self.label_shape)]

    def _parse_label(self, label):
        """Boxes (objects, width) of a raw label; degenerate boxes are dropped."""
        raw = np.asarray(label.asnumpy() if isinstance(label, NDArray) else label,
                         dtype=np.float32).ravel()
        if raw.size < 7:
            raise RuntimeError(f"ImageDetIter: label of {raw.size} values is too short "
                               "(header width, object width, then objects)")
        header, width = int(raw[0]), int(raw[1])
        if header < 2 or width < 5 or (raw.size - header) % width:
            raise RuntimeError(f"ImageDetIter: a label of {raw.size} values does not "
                               f"split into a header of {header} and objects of {width}")
        out = raw[header:].reshape(-1, width)
        out = out[(out[:, 3] > out[:, 1]) & (out[:, 4] > out[:, 2])]
        if out.shape[0] < 1:
            raise RuntimeError("ImageDetIter: a sample has no valid box")
        return out

    def _check_valid_label(self, label):
        """Boxes must be (objects >= 1, width >= 5) with a valid one."""
        if label.ndim != 2 or label.shape[1] < 5:
            raise RuntimeError(f"ImageDetIter: labels must be (objects, >= 5), got "
                               f"{label.shape}")
        ok = (label[:, 0] >= 0) & (label[:, 3] > label[:, 1]) & (label[:, 4] > label[:, 2])
        if not ok.any():
            raise RuntimeError("ImageDetIter: no valid box left in a label")

    def _estimate_label_shape(self):
        counts, width = 0, None
        for key in self._keys:
            lab = self._parse_label(self._sample(key)[0])
            counts = max(counts, lab.shape[0])
            width = lab.shape[1]
        if width is None:
            raise MXNetError("ImageDetIter: the data set is empty")
        return (counts, width)

    def check_label_shape(self, label_shape):
        """A new label shape may hold more objects, not fewer, of the same width."""
        if len(label_shape) != 2:
            raise ValueError("label_shape should have length 2")
        if label_shape[0] < self.label_shape[0]:
            raise ValueError(f"label_shape can only grow: {self.label_shape[0]} objects "
                             f"now, {label_shape[0]} asked")
        if label_shape[1] != self.label_shape[1]:
            raise ValueError(f"label_shape object width inconsistent: "
                             f"{self.label_shape[1]} vs {label_shape[1]}")

    def reshape(self, data_shape=None, label_shape=None):
        """Change the batches' image shape and/or label shape."""
        if data_shape is not None:
            self.check_data_shape(data_shape)
            self.data_shape = tuple(data_shape)
            self.provide_data = [(self.provide_data[0][0],
                                  (self.batch_size,) + self.data_shape)]
        if label_shape is not None:
            self.check_label_shape(label_shape)
            self.label_shape = tuple(label_shape)
            self.provide_label = [(self.provide_label[0][0],
                                   (self.batch_size,) + self.label_shape)]

    def sync_label_shape(self, it, verbose=False):
        """Give this iterator and ``it`` the same (larger) label shape; returns ``it``."""
        if self.label_shape[1] != it.label_shape[1]:
            raise MXNetError("sync_label_shape: object widths differ")
        most = max(self.label_shape[0], it.label_shape[0])
        if most > self.label_shape[0]:
            self.reshape(None, (most, self.label_shape[1]))
        if most > it.label_shape[0]:
            it.reshape(None, (most, it.label_shape[1]))
        return it

    def augmentation_transform(self, data, label):  # pylint: disable=arguments-differ
        """Applies the detection augmenters in order."""
        for aug in self.auglist:
            data, label = aug(data, label)
        return data, label

    def _batchify(self, ids):
        data = np.zeros((len(ids),) + self.data_shape, dtype=np.float32)
        label = np.full((len(ids),) + self.label_shape, -1.0, dtype=np.float32)
        for slot, i in enumerate(ids):
            key = self._keys[i]
            raw, payload = self._sample(key)
            boxes = self._parse_label(raw)
            img = self.imdecode(payload)
            self.check_valid_image(img)
            img, boxes = self.augmentation_transform(img, boxes)
            self._check_valid_label(boxes)
            arr = as_numpy(img) if isinstance(img, NDArray) else np.asarray(img)
            chw = self.postprocess_data(arr)
            if chw.shape != self.data_shape:
                raise MXNetError(f"ImageDetIter: image {key!r} is {chw.shape} after "
                                 f"augmentation, data_shape is {self.data_shape}")
            data[slot] = chw
            n = min(boxes.shape[0], self.label_shape[0])
            label[slot, :n] = boxes[:n]
        return data, label

    def draw_next(self, *args, **kwargs):
        raise NotImplementedError("ImageDetIter.draw_next needs OpenCV windows, which "
                                  "pymxnet does not use")

