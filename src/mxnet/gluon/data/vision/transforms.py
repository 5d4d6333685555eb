"""Image transforms as Gluon Blocks, for ``Dataset.transform_first`` and friends.

They take (H, W, C) images (most also (N, H, W, C) batches) as NDArrays, like MXNet's.
HybridBlock transforms compute on NDArrays with the NumPy kernels in ``_image_ops``;
run on Symbols (hybridized) they need MXNet's ``_image_*`` operators, which pymxnet
does not register yet, so that raises an MXNetError saying so. Random transforms draw
their factors from ``mx.random`` (so ``mx.random.seed`` replays them); the crops use
Python's ``random``, as MXNet's image functions do.
"""
import random as _pyrandom

import numpy as np

from .... import ndarray as nd
from ....base import MXNetError, numeric_types
from ....image import image as _image
from ....image import rotate as _rotate
from ....ndarray import NDArray
from ....util import is_np_array  # noqa: F401  (as MXNet's module exposes it)
from ...block import Block, HybridBlock
from ...nn import HybridSequential, Sequential
from . import _image_ops as ops

__all__ = ["Compose", "Cast", "ToTensor", "Normalize", "Resize",
           "CenterCrop", "RandomResizedCrop", "CropResize", "RandomFlipLeftRight",
           "RandomFlipTopBottom", "RandomBrightness", "RandomContrast",
           "RandomSaturation", "RandomHue", "RandomColorJitter", "RandomLighting",
           "RandomApply", "Rotate", "RandomRotation"]


def _apply(block, x, kernel, *args):
    """Runs a NumPy kernel on an NDArray image; Symbols need a registered operator."""
    if not isinstance(x, NDArray):
        raise MXNetError(f"transforms.{type(block).__name__} cannot be hybridized or run "
                         "on Symbols in pymxnet: MXNet's _image_* operators are not "
                         "registered; call it on NDArrays")
    out = kernel(x.asnumpy(), *args)
    return _image.as_nd(out, x.context) if x.context.device_type.startswith("cpu") \
        else nd.array(out, ctx=x.context, dtype=out.dtype)


def _uniform(low, high):
    return float(nd.random.uniform(low, high, shape=(1,)).asscalar())


def _factor_range(name, value):
    if value < 0:
        raise MXNetError(f"transforms: {name} must be non-negative, got {value}")
    return max(0.0, 1.0 - value), 1.0 + value


class Compose(Sequential):
    """Sequentially composes multiple transforms.

    Parameters
    ----------
    transforms : list of transform Blocks
        The list of transforms to be composed.
    """

    def __init__(self, transforms):
        super().__init__()
        transforms = list(transforms) + [None]
        hybrid = []
        for t in transforms:
            if isinstance(t, HybridBlock):
                hybrid.append(t)
                continue
            if len(hybrid) == 1:
                self.add(hybrid[0])
            elif len(hybrid) > 1:
                # MXNet hybridizes these runs; here they stay imperative because the
                # transforms compute with NumPy kernels and image shapes vary per sample.
                block = HybridSequential()
                for h in hybrid:
                    block.add(h)
                self.add(block)
            hybrid = []
            if t is not None:
                self.add(t)


class Cast(HybridBlock):
    """Cast inputs to a specific data type (default float32)."""

    def __init__(self, dtype="float32"):
        super().__init__()
        self._dtype = dtype

    def hybrid_forward(self, F, x):
        return F.cast(x, self._dtype)


class ToTensor(HybridBlock):
    """Converts an image (H, W, C) or batch (N, H, W, C) with values in [0, 255] to a
    float32 tensor (C, H, W) / (N, C, H, W) with values in [0, 1)."""

    def hybrid_forward(self, F, x):
        return _apply(self, x, ops.to_tensor)


class Normalize(HybridBlock):
    """Normalizes a tensor (C, H, W) or (N, C, H, W) with per-channel ``mean`` and
    ``std``: ``out[c] = (x[c] - mean[c]) / std[c]``.

    Parameters
    ----------
    mean : float or tuple of floats
        The mean values (one, or one per channel).
    std : float or tuple of floats
        The standard deviation values (one, or one per channel).
    """

    def __init__(self, mean=0.0, std=1.0):
        super().__init__()
        self._mean = mean
        self._std = std

    def hybrid_forward(self, F, x):
        return _apply(self, x, ops.normalize, self._mean, self._std)


class Resize(HybridBlock):
    """Resize an image (H, W, C) or batch (N, H, W, C) to the given size.

    Parameters
    ----------
    size : int or tuple of (W, H)
        Size of output image.
    keep_ratio : bool
        With an int ``size``: resize the shorter side to ``size`` and keep the aspect
        ratio.
    interpolation : int
        OpenCV interpolation code (0 nearest, 1 bilinear, 2 bicubic, 3 area,
        4 lanczos).
    """

    def __init__(self, size, keep_ratio=False, interpolation=1):
        super().__init__()
        self._keep = keep_ratio
        self._size = size
        self._interpolation = interpolation

    def hybrid_forward(self, F, x):
        return _apply(self, x, ops.resize, self._size, self._keep, self._interpolation)


def _wh(size):
    if isinstance(size, numeric_types):
        return (int(size), int(size))
    return tuple(size)


class CenterCrop(Block):
    """Crops the centre of an image (H, W, C) to ``size`` (int or (W, H)), scaling the
    crop down to fit and resizing it to ``size``."""

    def __init__(self, size, interpolation=1):
        super().__init__()
        self._args = (_wh(size), interpolation)

    def forward(self, x):
        return _image.center_crop(x, *self._args)[0]


class RandomResizedCrop(Block):
    """Crops a random area (fraction in ``scale``) and aspect ratio (in ``ratio``) of an
    image (H, W, C) and resizes it to ``size`` (int or (W, H)); falls back to a centre
    crop when 10 tries find no fitting region.

    Parameters
    ----------
    size : int or tuple of (W, H)
        Size of the final output.
    scale : tuple of two floats
        Range of the crop's area as a fraction of the image's.
    ratio : tuple of two floats
        Range of the crop's aspect ratio (width / height).
    interpolation : int
        Interpolation method for resizing.
    """

    def __init__(self, size, scale=(0.08, 1.0), ratio=(3.0 / 4.0, 4.0 / 3.0),
                 interpolation=1):
        super().__init__()
        self._args = (_wh(size), scale, ratio, interpolation)

    def forward(self, x):
        return _image.random_size_crop(x, *self._args)[0]


class CropResize(HybridBlock):
    """Crops the region (x, y, width, height) of an image (H, W, C) or batch
    (N, H, W, C), then resizes it to ``size`` (int or (W, H)) if given."""

    def __init__(self, x, y, width, height, size=None, interpolation=None):
        super().__init__()
        self._x, self._y, self._width, self._height = x, y, width, height
        self._size = size
        self._interpolation = 1 if interpolation is None else interpolation

    def _crop(self, img):
        h, w = img.shape[-3:-1]
        sizes = () if self._size is None else (
            (self._size,) if isinstance(self._size, int) else tuple(self._size))
        if any(s <= 0 for s in sizes):
            raise MXNetError(f"CropResize: output size {self._size} must be positive")
        if self._x < 0 or self._y < 0 or self._width <= 0 or self._height <= 0 or \
                self._x + self._width > w or self._y + self._height > h:
            raise MXNetError(f"CropResize: region (x={self._x}, y={self._y}, "
                             f"width={self._width}, height={self._height}) is outside the "
                             f"{w}x{h} image")
        out = img[..., self._y:self._y + self._height, self._x:self._x + self._width, :]
        if self._size is not None:
            out = ops.resize(np.ascontiguousarray(out), self._size, False,
                             self._interpolation)
        return np.ascontiguousarray(out)

    def hybrid_forward(self, F, x):
        return _apply(self, x, self._crop)


class RandomFlipLeftRight(HybridBlock):
    """Randomly flip the input image left to right with a probability of 0.5."""

    def hybrid_forward(self, F, x):
        if _uniform(0, 1) < 0.5:
            return _apply(self, x, ops.flip, 1)
        return _apply(self, x, np.copy)


class RandomFlipTopBottom(HybridBlock):
    """Randomly flip the input image top to bottom with a probability of 0.5."""

    def hybrid_forward(self, F, x):
        if _uniform(0, 1) < 0.5:
            return _apply(self, x, ops.flip, 2)
        return _apply(self, x, np.copy)


class _RandomFactor(HybridBlock):
    """Scales an image property by a factor drawn from [max(0, 1-v), 1+v]."""
    _kernel = None
    _what = None

    def __init__(self, value):
        super().__init__()
        self._args = _factor_range(self._what, value)

    def hybrid_forward(self, F, x):
        return _apply(self, x, type(self)._kernel, _uniform(*self._args))


class RandomBrightness(_RandomFactor):
    """Multiplies the image by a factor drawn from [max(0, 1 - brightness),
    1 + brightness]."""
    _kernel = staticmethod(ops.adjust_brightness)
    _what = "brightness"


class RandomContrast(_RandomFactor):
    """Blends the image with its mean grey level by a factor drawn from
    [max(0, 1 - contrast), 1 + contrast]."""
    _kernel = staticmethod(ops.adjust_contrast)
    _what = "contrast"


class RandomSaturation(_RandomFactor):
    """Blends each pixel with its grey level by a factor drawn from
    [max(0, 1 - saturation), 1 + saturation]."""
    _kernel = staticmethod(ops.adjust_saturation)
    _what = "saturation"


class RandomHue(_RandomFactor):
    """Rotates the hue by ``alpha - 1`` turns, alpha drawn from
    [max(0, 1 - hue), 1 + hue]."""
    _kernel = staticmethod(ops.adjust_hue)
    _what = "hue"


class RandomColorJitter(HybridBlock):
    """Randomly jitters brightness, contrast, saturation and hue (each by a factor as
    in RandomBrightness etc.; zero leaves a property alone), in a random order.

    Parameters
    ----------
    brightness, contrast, saturation, hue : float
        How much to jitter each property.
    """

    def __init__(self, brightness=0, contrast=0, saturation=0, hue=0):
        super().__init__()
        self._jitters = [(kernel, _factor_range(name, v)) for kernel, name, v in (
            (ops.adjust_brightness, "brightness", brightness),
            (ops.adjust_contrast, "contrast", contrast),
            (ops.adjust_saturation, "saturation", saturation),
            (ops.adjust_hue, "hue", hue)) if v > 0]

    def _jitter(self, img):
        order = nd.random.shuffle(nd.arange(len(self._jitters))).asnumpy().astype(int) \
            if self._jitters else []
        for i in order:
            kernel, (low, high) = self._jitters[i]
            img = kernel(img, _uniform(low, high))
        return img

    def hybrid_forward(self, F, x):
        return _apply(self, x, self._jitter)


class RandomLighting(HybridBlock):
    """AlexNet-style PCA-based lighting noise with strength drawn from
    N(0, ``alpha``) per principal component."""

    def __init__(self, alpha):
        super().__init__()
        self._alpha = alpha

    def hybrid_forward(self, F, x):
        alpha = nd.random.normal(0, self._alpha, shape=(3,)).asnumpy()
        return _apply(self, x, ops.adjust_lighting, alpha)


class RandomApply(Sequential):
    """Applies ``transforms`` with probability ``p``."""

    def __init__(self, transforms, p=0.5):
        super().__init__()
        self.transforms = transforms
        self.p = p

    def forward(self, x, *args):
        if self.p < _pyrandom.random():
            return x if not args else (x,) + args
        return self.transforms(x, *args)


class Rotate(Block):
    """Rotates (C, H, W) float32 images or (N, C, H, W) batches by ``rotation_degrees``
    about their centre (``mx.image.imrotate``: bilinear, zero outside the source);
    ``zoom_in``/``zoom_out`` scale so no empty corner shows / the whole image fits."""

    def __init__(self, rotation_degrees, zoom_in=False, zoom_out=False):
        super().__init__()
        self._args = (rotation_degrees, zoom_in, zoom_out)

    def forward(self, x):
        if np.dtype(x.dtype) != np.float32:
            raise TypeError("transforms.Rotate: only float32 images are supported, got "
                            f"{np.dtype(x.dtype).name}")
        return _rotate.imrotate(x, *self._args)


class RandomRotation(Block):
    """With probability ``rotate_with_proba``, rotates (C, H, W) float32 images or
    (N, C, H, W) batches by angles drawn uniformly from ``angle_limits`` (low, high)
    degrees, one per image (``mx.image.random_rotate``); otherwise returns the input."""

    def __init__(self, angle_limits, zoom_in=False, zoom_out=False, rotate_with_proba=1.0):
        super().__init__()
        lower, upper = angle_limits
        if lower >= upper:
            raise ValueError("transforms.RandomRotation: angle_limits must be (low, high) "
                             f"with low < high, got {angle_limits}")
        if not 0.0 <= rotate_with_proba <= 1.0:
            raise ValueError("transforms.RandomRotation: rotate_with_proba must be in "
                             f"[0, 1], got {rotate_with_proba}")
        self._args = (angle_limits, zoom_in, zoom_out)
        self._rotate_with_proba = rotate_with_proba

    def forward(self, x):
        if np.dtype(x.dtype) != np.float32:
            raise TypeError("transforms.RandomRotation: only float32 images are "
                            f"supported, got {np.dtype(x.dtype).name}")
        if self._rotate_with_proba < 1 and _pyrandom.random() > self._rotate_with_proba:
            return x
        return _rotate.random_rotate(x, *self._args)
