"""mx.image functions: decode, read, resize and crop images held as (H, W, C) NDArrays.

Images are uint8 NDArrays in (height, width, channels) layout, RGB by default, as
MXNet's OpenCV-backed functions give them. Decoding uses Pillow; resizing is NumPy
with OpenCV's geometry (see ``mxnet.backend.image_resize``). Randomness (random crops) comes
from Python's ``random`` module, as in MXNet.
"""
import math
import os
import random as _random

import numpy as np

from ..base import MXNetError, numeric_types
from ..util import is_np_array
from ..context import cpu
from ..ndarray.ndarray import NDArray, from_data
from ..backend import image_codec as codec
from ..backend.image_resize import get_interp_method, resize as _np_resize

__all__ = ["imread", "imdecode", "imresize", "scale_down", "resize_short", "fixed_crop",
           "random_crop", "center_crop", "color_normalize", "random_size_crop",
           "as_numpy", "as_nd"]


def as_numpy(src):
    """A numpy view or copy of an NDArray or array-like image."""
    return src.asnumpy() if isinstance(src, NDArray) else np.asarray(src)


def as_nd(arr, ctx=None):
    """Wraps a numpy array (copied when it is a view) as an NDArray, or as an
    ``mx.np.ndarray`` under ``npx.set_np()`` (MXNet's image functions then return
    NumPy-semantics arrays)."""
    arr = np.ascontiguousarray(arr)
    if arr.base is not None:
        arr = arr.copy()
    out = from_data(arr, ctx or cpu())
    return out.as_np_ndarray() if is_np_array() else out


def _write_out(result, out):
    if out is None:
        return result
    if not isinstance(out, NDArray):
        raise MXNetError(f"out must be an NDArray, got {type(out).__name__}")
    if out.shape != result.shape:
        raise MXNetError(f"out has shape {out.shape}, the result has shape {result.shape}")
    out[:] = result
    return out


def imdecode(buf, flag=1, to_rgb=True, out=None):
    """Decodes an image (JPEG, PNG, ...) from bytes to an (H, W, C) uint8 NDArray.

    Parameters
    ----------
    buf : bytes, bytearray, numpy uint8 array or NDArray
    flag : int, default 1
        1: color (3 channels); 0: grayscale (1 channel).
    to_rgb : bool, default True
        RGB channel order (else BGR, as OpenCV).
    out : NDArray, optional
    """
    if flag < 0:
        raise MXNetError(f"imdecode: value {flag} for parameter flag should be greater "
                         "equal to 0 (0: grayscale, 1: color)")
    if isinstance(buf, NDArray):
        buf = buf.asnumpy().astype(np.uint8).tobytes()
    elif isinstance(buf, np.ndarray):
        buf = buf.astype(np.uint8, copy=False).tobytes()
    elif not isinstance(buf, (bytes, bytearray, memoryview)):
        raise MXNetError(f"imdecode: buf must be bytes, a numpy array or an NDArray, got "
                         f"{type(buf).__name__}")
    return _write_out(as_nd(codec.decode(buf, flag=1 if flag > 0 else 0,
                                         to_rgb=bool(to_rgb))), out)


def imread(filename, flag=1, to_rgb=True, out=None):
    """Reads an image file into an (H, W, C) uint8 NDArray (see ``imdecode``)."""
    try:
        with open(os.fspath(filename), "rb") as f:
            buf = f.read()
    except OSError as err:
        raise MXNetError(f"imread: cannot open {filename!r}: {err.strerror}") from None
    return imdecode(buf, flag, to_rgb, out)


def imresize(src, w, h, interp=1, out=None):
    """Resizes an (H, W, C) image to width ``w`` and height ``h``.

    ``interp``: 0 nearest, 1 bilinear, 2 bicubic, 3 area, 4 Lanczos, 9 auto,
    10 random (OpenCV's codes, as MXNet uses them).
    """
    arr = as_numpy(src)
    return _write_out(as_nd(_np_resize(arr, w, h, interp)), out)


def scale_down(src_size, size):
    """Shrinks a crop size (w, h) to fit in an image of size ``src_size`` (w, h),
    keeping the crop's aspect ratio."""
    w, h = size
    sw, sh = src_size
    if sh < h:
        w, h = float(w * sh) / h, sh
    if sw < w:
        w, h = sw, float(h * sw) / w
    return int(w), int(h)


def resize_short(src, size, interp=2):
    """Resizes so that the shorter edge is ``size`` pixels, keeping the aspect ratio."""
    h, w = src.shape[:2]
    if h > w:
        new_h, new_w = size * h // w, size
    else:
        new_h, new_w = size, size * w // h
    return imresize(src, new_w, new_h, interp=get_interp_method(interp, (h, w, new_h, new_w)))


def fixed_crop(src, x0, y0, w, h, size=None, interp=2):
    """Crops the region (x0, y0, w, h), then resizes it to ``size`` (w, h) if given."""
    arr = as_numpy(src)
    if x0 < 0 or y0 < 0 or w <= 0 or h <= 0 or y0 + h > arr.shape[0] or x0 + w > arr.shape[1]:
        raise MXNetError(f"fixed_crop: region (x0={x0}, y0={y0}, w={w}, h={h}) is not "
                         f"inside the image of size {arr.shape[1]}x{arr.shape[0]}")
    crop = arr[y0:y0 + h, x0:x0 + w]
    if size is not None and (w, h) != tuple(size):
        method = get_interp_method(interp, (h, w, size[1], size[0]))
        crop = _np_resize(crop, size[0], size[1], method)
    return as_nd(crop)


def random_crop(src, size, interp=2):
    """Crops a random region of size ``size`` (w, h) (scaled down to fit), resized to
    ``size``. Returns (cropped image, (x0, y0, w, h))."""
    h, w = src.shape[:2]
    new_w, new_h = scale_down((w, h), size)
    x0 = _random.randint(0, w - new_w)
    y0 = _random.randint(0, h - new_h)
    return fixed_crop(src, x0, y0, new_w, new_h, size, interp), (x0, y0, new_w, new_h)


def center_crop(src, size, interp=2):
    """Crops the centre region of size ``size`` (w, h) (scaled down to fit), resized to
    ``size``. Returns (cropped image, (x0, y0, w, h))."""
    h, w = src.shape[:2]
    new_w, new_h = scale_down((w, h), size)
    x0 = int((w - new_w) / 2)
    y0 = int((h - new_h) / 2)
    return fixed_crop(src, x0, y0, new_w, new_h, size, interp), (x0, y0, new_w, new_h)


def color_normalize(src, mean, std=None):
    """Subtracts ``mean`` and divides by ``std`` (per channel), in place on ``src`` as
    in MXNet, and returns it."""
    if mean is not None:
        src -= mean
    if std is not None:
        src /= std
    return src


def random_size_crop(src, size, area, ratio, interp=2, **kwargs):
    """Crops a random region covering a random fraction ``area`` (a number = minimum,
    or (min, max)) of the image with a random aspect ratio in ``ratio`` (min, max),
    resized to ``size`` (w, h); falls back to a centre crop after 10 tries.
    Returns (cropped image, (x0, y0, w, h))."""
    h, w = src.shape[:2]
    if "min_area" in kwargs:
        area = kwargs.pop("min_area")
    if kwargs:
        raise MXNetError(f"random_size_crop: unexpected arguments {sorted(kwargs)}")
    if isinstance(area, numeric_types):
        area = (area, 1.0)
    for _ in range(10):
        target = _random.uniform(area[0], area[1]) * h * w
        aspect = math.exp(_random.uniform(math.log(ratio[0]), math.log(ratio[1])))
        new_w = int(round(math.sqrt(target * aspect)))
        new_h = int(round(math.sqrt(target / aspect)))
        if 0 < new_w <= w and 0 < new_h <= h:
            x0 = _random.randint(0, w - new_w)
            y0 = _random.randint(0, h - new_h)
            return (fixed_crop(src, x0, y0, new_w, new_h, size, interp),
                    (x0, y0, new_w, new_h))
    return center_crop(src, size, interp)
