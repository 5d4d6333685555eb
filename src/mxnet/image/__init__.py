"""mx.image: image decoding, resizing, cropping, augmenters and ImageIter.

Decoding and encoding need Pillow (``pip install pillow``); everything else is NumPy.
"""
from ..util import is_np_array as _util_is_np_array
from .image import (imread, imdecode, imresize, scale_down, resize_short,  # noqa: F401
                    fixed_crop, random_crop, center_crop, color_normalize,
                    random_size_crop)
from .augmenters import (Augmenter, SequentialAug, RandomOrderAug, ResizeAug,  # noqa: F401
                         ForceResizeAug, RandomCropAug, RandomSizedCropAug, CenterCropAug,
                         HorizontalFlipAug, CastAug, ColorNormalizeAug,
                         BrightnessJitterAug, ContrastJitterAug, SaturationJitterAug,
                         ColorJitterAug, LightingAug, RandomGrayAug, HueJitterAug,
                         CreateAugmenter)
from .image_iter import ImageIter  # noqa: F401
from .border import copyMakeBorder  # noqa: F401
from .rotate import imrotate, random_rotate  # noqa: F401
from .detection import (DetAugmenter, DetBorrowAug, DetRandomSelectAug,  # noqa: F401
                        DetHorizontalFlipAug, DetRandomCropAug, DetRandomPadAug,
                        CreateDetAugmenter, CreateMultiRandCropAugmenter, ImageDetIter)

from ..base import pickled_as as _pickled_as

# MXNet 1.9.1 defines the augmenters and ImageIter in mxnet.image.image
_pickled_as(__name__ + ".image",
            (Augmenter, SequentialAug, RandomOrderAug, ResizeAug, ForceResizeAug,
             RandomCropAug, RandomSizedCropAug, CenterCropAug, HorizontalFlipAug, CastAug,
             ColorNormalizeAug, BrightnessJitterAug, ContrastJitterAug,
             SaturationJitterAug, ColorJitterAug, LightingAug, RandomGrayAug, HueJitterAug,
             ImageIter))


def is_np_array():
    """Whether NumPy-array semantics are on (``npx.set_np()``): image functions then
    return ``mx.np.ndarray``."""
    return _util_is_np_array()
