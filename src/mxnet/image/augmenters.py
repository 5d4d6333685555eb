"""Image augmenters (callables on (H, W, C) NDArrays) and CreateAugmenter."""
import json
import random as _random

import numpy as np

from ..base import MXNetError
from ..ndarray.ndarray import NDArray
from .image import (as_nd, as_numpy, center_crop, color_normalize, random_crop,
                    random_size_crop, resize_short)
from ..backend.image_resize import resize as _np_resize

__all__ = ["Augmenter", "SequentialAug", "RandomOrderAug", "ResizeAug", "ForceResizeAug",
           "RandomCropAug", "RandomSizedCropAug", "CenterCropAug", "HorizontalFlipAug",
           "CastAug", "ColorNormalizeAug", "BrightnessJitterAug", "ContrastJitterAug",
           "SaturationJitterAug", "ColorJitterAug", "LightingAug", "RandomGrayAug",
           "HueJitterAug", "CreateAugmenter"]

_GRAY = np.array([0.299, 0.587, 0.114], dtype=np.float32)
_LUMINOSITY = np.array([0.21, 0.72, 0.07], dtype=np.float32)  # RandomGrayAug's weights


def _jsonable(v):
    if isinstance(v, NDArray):
        return v.asnumpy().tolist()
    if isinstance(v, np.ndarray):
        return v.tolist()
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    return v


class Augmenter:
    """Base class of image augmenters: ``aug(src) -> augmented src``.

    The keyword arguments given to ``__init__`` are kept for ``dumps()``.
    """

    def __init__(self, **kwargs):
        self._kwargs = {k: _jsonable(v) for k, v in kwargs.items()}

    def dumps(self):
        """A JSON string naming the augmenter and its arguments."""
        return json.dumps([self.__class__.__name__.lower(), self._kwargs])

    def __call__(self, src):
        raise NotImplementedError(f"{type(self).__name__} must implement __call__")


class SequentialAug(Augmenter):
    """Applies a list of augmenters in order."""

    def __init__(self, ts):
        super().__init__()
        self.ts = ts

    def dumps(self):
        return [self.__class__.__name__.lower(), [t.dumps() for t in self.ts]]

    def __call__(self, src):
        for aug in self.ts:
            src = aug(src)
        return src


class RandomOrderAug(SequentialAug):
    """Applies a list of augmenters in a random order."""

    def __call__(self, src):
        order = list(self.ts)
        _random.shuffle(order)
        for aug in order:
            src = aug(src)
        return src


class ResizeAug(Augmenter):
    """Resizes the shorter edge to ``size``."""

    def __init__(self, size, interp=2):
        super().__init__(size=size, interp=interp)
        self.size, self.interp = size, interp

    def __call__(self, src):
        return resize_short(src, self.size, self.interp)


class ForceResizeAug(Augmenter):
    """Resizes to exactly ``size`` (w, h), ignoring the aspect ratio."""

    def __init__(self, size, interp=2):
        super().__init__(size=size, interp=interp)
        self.size, self.interp = size, interp

    def __call__(self, src):
        return as_nd(_np_resize(as_numpy(src), self.size[0], self.size[1], self.interp))


class RandomCropAug(Augmenter):
    """Crops a random ``size`` (w, h) region."""

    def __init__(self, size, interp=2):
        super().__init__(size=size, interp=interp)
        self.size, self.interp = size, interp

    def __call__(self, src):
        return random_crop(src, self.size, self.interp)[0]


class RandomSizedCropAug(Augmenter):
    """Crops a region of random area and aspect ratio, resized to ``size``."""

    def __init__(self, size, area, ratio, interp=2, **kwargs):
        super().__init__(size=size, area=area, ratio=ratio, interp=interp)
        self.size, self.area, self.ratio, self.interp = size, area, ratio, interp
        if "min_area" in kwargs:
            self.area = kwargs.pop("min_area")
        if kwargs:
            raise MXNetError(f"RandomSizedCropAug: unexpected arguments {sorted(kwargs)}")

    def __call__(self, src):
        return random_size_crop(src, self.size, self.area, self.ratio, self.interp)[0]


class CenterCropAug(Augmenter):
    """Crops the centre ``size`` (w, h) region."""

    def __init__(self, size, interp=2):
        super().__init__(size=size, interp=interp)
        self.size, self.interp = size, interp

    def __call__(self, src):
        return center_crop(src, self.size, self.interp)[0]


class HorizontalFlipAug(Augmenter):
    """Mirrors left-right with probability ``p``."""

    def __init__(self, p):
        super().__init__(p=p)
        self.p = p

    def __call__(self, src):
        if _random.random() < self.p:
            return as_nd(as_numpy(src)[:, ::-1])
        return src


class CastAug(Augmenter):
    """Casts to ``typ`` (float32 by default)."""

    def __init__(self, typ="float32"):
        super().__init__(type=typ)
        self.typ = typ

    def __call__(self, src):
        return src.astype(self.typ)


class ColorNormalizeAug(Augmenter):
    """Subtracts ``mean`` and divides by ``std`` per channel."""

    def __init__(self, mean, std):
        super().__init__(mean=mean, std=std)
        # NDArrays, as MXNet keeps them: a pickled augmenter list then loads in MXNet too
        self.mean = None if mean is None else _float32_nd(mean)
        self.std = None if std is None else _float32_nd(std)

    def __call__(self, src):
        arr = as_numpy(src).astype(np.float32)
        return as_nd(color_normalize(arr, None if self.mean is None else self.mean.asnumpy(),
                                     None if self.std is None else self.std.asnumpy()))


def _float32_nd(v):
    return v if isinstance(v, NDArray) else \
        as_nd(np.asarray(as_numpy(v), np.float32))


class BrightnessJitterAug(Augmenter):
    """Scales pixel values by 1 + U(-brightness, brightness)."""

    def __init__(self, brightness):
        super().__init__(brightness=brightness)
        self.brightness = brightness

    def __call__(self, src):
        alpha = 1.0 + _random.uniform(-self.brightness, self.brightness)
        return as_nd(as_numpy(src).astype(np.float32) * np.float32(alpha))


class ContrastJitterAug(Augmenter):
    """Blends with the mean gray level: x * a + mean_gray * (1 - a),
    a = 1 + U(-contrast, contrast)."""

    def __init__(self, contrast):
        super().__init__(contrast=contrast)
        self.contrast = contrast

    def __call__(self, src):
        alpha = np.float32(1.0 + _random.uniform(-self.contrast, self.contrast))
        arr = as_numpy(src).astype(np.float32)
        gray = (arr @ _GRAY).mean() * (1 - alpha)
        return as_nd(arr * alpha + np.float32(gray))


class SaturationJitterAug(Augmenter):
    """Blends with the per-pixel gray image: x * a + gray * (1 - a),
    a = 1 + U(-saturation, saturation)."""

    def __init__(self, saturation):
        super().__init__(saturation=saturation)
        self.saturation = saturation

    def __call__(self, src):
        alpha = np.float32(1.0 + _random.uniform(-self.saturation, self.saturation))
        arr = as_numpy(src).astype(np.float32)
        gray = (arr @ _GRAY)[..., None] * (1 - alpha)
        return as_nd(arr * alpha + gray)


class HueJitterAug(Augmenter):
    """Rotates hue by U(-hue, hue) * 180 degrees (in YIQ space)."""

    def __init__(self, hue):
        super().__init__(hue=hue)
        self.hue = hue
        self.tyiq = np.array([[0.299, 0.587, 0.114], [0.596, -0.274, -0.321],
                              [0.211, -0.523, 0.311]], dtype=np.float32)
        # The usual rounded YIQ->RGB matrix (not the exact inverse), as MXNet uses.
        self.ityiq = np.array([[1.0, 0.956, 0.621], [1.0, -0.272, -0.647],
                               [1.0, -1.107, 1.705]], dtype=np.float32)

    def __call__(self, src):
        alpha = _random.uniform(-self.hue, self.hue)
        u, w = np.cos(alpha * np.pi), np.sin(alpha * np.pi)
        rot = np.array([[1, 0, 0], [0, u, -w], [0, w, u]], dtype=np.float32)
        t = self.ityiq @ rot @ self.tyiq
        return as_nd(as_numpy(src).astype(np.float32) @ t.T)


class ColorJitterAug(RandomOrderAug):
    """Brightness, contrast and saturation jitter in a random order."""

    def __init__(self, brightness, contrast, saturation):
        ts = []
        if brightness > 0:
            ts.append(BrightnessJitterAug(brightness))
        if contrast > 0:
            ts.append(ContrastJitterAug(contrast))
        if saturation > 0:
            ts.append(SaturationJitterAug(saturation))
        super().__init__(ts)


class LightingAug(Augmenter):
    """AlexNet-style PCA lighting noise with standard deviation ``alphastd``."""

    def __init__(self, alphastd, eigval, eigvec):
        super().__init__(alphastd=alphastd, eigval=eigval, eigvec=eigvec)
        self.alphastd = alphastd
        self.eigval = np.asarray(eigval, dtype=np.float32)
        self.eigvec = np.asarray(eigvec, dtype=np.float32)

    def __call__(self, src):
        alpha = np.random.normal(0, self.alphastd, size=(3,)).astype(np.float32)
        rgb = self.eigvec @ (alpha * self.eigval)
        return as_nd(as_numpy(src).astype(np.float32) + rgb)


class RandomGrayAug(Augmenter):
    """Converts to gray (3 equal channels) with probability ``p``."""

    def __init__(self, p):
        super().__init__(p=p)
        self.p = p

    def __call__(self, src):
        if _random.random() < self.p:
            arr = as_numpy(src).astype(np.float32)
            gray = arr @ _LUMINOSITY
            return as_nd(np.repeat(gray[..., None], 3, axis=-1))
        return src


_IMAGENET_MEAN = np.array([123.68, 116.28, 103.53])
_IMAGENET_STD = np.array([58.395, 57.12, 57.375])
_IMAGENET_EIGVAL = np.array([55.46, 4.794, 1.148])
_IMAGENET_EIGVEC = np.array([[-0.5675, 0.7192, 0.4009],
                             [-0.5808, -0.0045, -0.8140],
                             [-0.5836, -0.6948, 0.4203]])


def CreateAugmenter(data_shape, resize=0, rand_crop=False, rand_resize=False,
                    rand_mirror=False, mean=None, std=None, brightness=0, contrast=0,
                    saturation=0, hue=0, pca_noise=0, rand_gray=0, inter_method=2):
    """The standard augmenter list for images of shape ``data_shape`` (C, H, W).

    Order: resize the shorter edge (``resize`` > 0); crop (random-sized with
    ``rand_resize``, random with ``rand_crop``, else centre); mirror (``rand_mirror``);
    cast to float32; color jitter; hue; PCA lighting (``pca_noise``); random gray;
    normalise by ``mean``/``std`` (True picks ImageNet's values).
    """
    auglist = []
    if resize > 0:
        auglist.append(ResizeAug(resize, inter_method))
    crop_size = (data_shape[2], data_shape[1])
    if rand_resize:
        if not rand_crop:
            raise MXNetError("CreateAugmenter: rand_resize needs rand_crop=True")
        auglist.append(RandomSizedCropAug(crop_size, 0.08, (3.0 / 4.0, 4.0 / 3.0),
                                          inter_method))
    elif rand_crop:
        auglist.append(RandomCropAug(crop_size, inter_method))
    else:
        auglist.append(CenterCropAug(crop_size, inter_method))
    if rand_mirror:
        auglist.append(HorizontalFlipAug(0.5))
    auglist.append(CastAug())
    if brightness or contrast or saturation:
        auglist.append(ColorJitterAug(brightness, contrast, saturation))
    if hue:
        auglist.append(HueJitterAug(hue))
    if pca_noise > 0:
        auglist.append(LightingAug(pca_noise, _IMAGENET_EIGVAL, _IMAGENET_EIGVEC))
    if rand_gray > 0:
        auglist.append(RandomGrayAug(rand_gray))
    if mean is True:
        mean = _IMAGENET_MEAN.astype(np.float32)
    elif mean is not None:
        if np.asarray(as_numpy(mean)).shape[0] not in (1, 3):
            raise MXNetError(f"CreateAugmenter: mean needs 1 or 3 values, got {mean!r}")
    if std is True:
        std = _IMAGENET_STD.astype(np.float32)
    elif std is not None:
        if np.asarray(as_numpy(std)).shape[0] not in (1, 3):
            raise MXNetError(f"CreateAugmenter: std needs 1 or 3 values, got {std!r}")
    if mean is not None or std is not None:
        auglist.append(ColorNormalizeAug(mean, std))
    return auglist
