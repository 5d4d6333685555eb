"""Image encoding and decoding with Pillow, in OpenCV's conventions (what MXNet used):
HxWxC uint8 arrays, BGR channel order unless RGB is asked for, grayscale via flag 0.

Pillow is optional: pymxnet imports without it and only these functions need it.
"""
import io

import numpy as np

from ..base import MXNetError

__all__ = ["decode", "encode", "require_pillow"]

_PIL = None


def require_pillow():
    """The PIL.Image module, or an MXNetError saying how to get it."""
    global _PIL
    if _PIL is None:
        try:
            from PIL import Image
        except ImportError:
            raise MXNetError("image decoding/encoding needs Pillow, which is not "
                             "installed: pip install pillow (or pymxnet[image])") from None
        _PIL = Image
    return _PIL


def _to_uint8(arr):
    # 16/32-bit grayscale PNGs: OpenCV's 8-bit reads keep the high byte.
    if arr.dtype == np.uint8:
        return arr
    if arr.dtype.kind in "iu":
        return (np.clip(arr, 0, 65535).astype(np.uint16) >> 8).astype(np.uint8)
    return np.clip(arr * 255 if arr.max() <= 1 else arr, 0, 255).astype(np.uint8)


def decode(buf, flag=1, to_rgb=True, squeeze_gray=False):
    """Decodes an encoded image (JPEG, PNG, ...) into a numpy array.

    flag 1: 3 channels (RGB if ``to_rgb`` else BGR); flag 0: grayscale, shape (H, W, 1)
    or (H, W) with ``squeeze_gray``; flag -1: the stored channels unchanged (gray 2-D,
    color BGR(A)/RGB(A), 16-bit kept as uint16).
    """
    Image = require_pillow()
    try:
        img = Image.open(io.BytesIO(bytes(buf)))
        if flag == 0 and img.format == "JPEG":
            # libjpeg decodes the luminance directly, as OpenCV's grayscale read does
            # (converting decoded RGB to gray differs by a few levels)
            img.draft("L", img.size)
        img.load()
    except Exception as err:  # Pillow raises many types for bad data
        raise MXNetError(f"imdecode: decoding failed, invalid image data "
                         f"({len(buf)} bytes): {err}") from None
    mode = img.mode
    if flag == 0:
        if mode not in ("L", "I;16", "I;16B", "I;16L", "I"):
            img = img.convert("L")
        arr = _to_uint8(np.asarray(img))
        return arr if squeeze_gray else arr[:, :, None]
    if flag < 0:
        if mode in ("L", "I;16", "I;16B", "I;16L", "I"):
            arr = np.asarray(img)
            return arr.astype(np.uint16) if arr.dtype != np.uint8 else arr
        alpha = mode in ("RGBA", "LA", "PA") or (mode == "P" and "transparency" in img.info)
        arr = np.asarray(img.convert("RGBA" if alpha else "RGB"))
        if to_rgb:
            return arr
        return np.ascontiguousarray(arr[:, :, [2, 1, 0, 3] if alpha else [2, 1, 0]])
    if mode in ("I;16", "I;16B", "I;16L", "I"):
        arr = _to_uint8(np.asarray(img))
        return np.repeat(arr[:, :, None], 3, axis=2)
    arr = np.asarray(img if mode == "RGB" else img.convert("RGB"))
    return arr if to_rgb else np.ascontiguousarray(arr[:, :, ::-1])


_FORMATS = {".jpg": "JPEG", ".jpeg": "JPEG", ".png": "PNG", ".bmp": "BMP",
            ".tif": "TIFF", ".tiff": "TIFF", ".webp": "WEBP"}


def encode(img, img_fmt=".jpg", quality=95, from_bgr=True):
    """Encodes an (H, W) or (H, W, C) uint8 array; ``from_bgr`` says its channels are
    in OpenCV's BGR(A) order. ``quality`` is the JPEG quality or PNG compression level."""
    Image = require_pillow()
    fmt = _FORMATS.get(str(img_fmt).lower())
    if fmt is None:
        raise MXNetError(f"pack_img: unsupported image format {img_fmt!r}; "
                         f"use one of {sorted(_FORMATS)}")
    arr = np.asarray(img)
    if arr.ndim == 3 and arr.shape[2] == 1:
        arr = arr[:, :, 0]
    if arr.ndim not in (2, 3) or (arr.ndim == 3 and arr.shape[2] not in (3, 4)):
        raise MXNetError(f"pack_img: image must be HxW or HxWx3/4, got shape {arr.shape}")
    if arr.dtype != np.uint8:
        arr = np.clip(arr, 0, 255).astype(np.uint8)
    if from_bgr and arr.ndim == 3:
        arr = arr[:, :, [2, 1, 0, 3][:arr.shape[2]]]
    pil = Image.fromarray(np.ascontiguousarray(arr))
    options = {}
    if fmt == "JPEG":
        if pil.mode == "RGBA":
            pil = pil.convert("RGB")
        options["quality"] = int(quality)
    elif fmt == "PNG":
        options["compress_level"] = int(quality) if 0 <= int(quality) <= 9 else 3
    out = io.BytesIO()
    pil.save(out, format=fmt, **options)
    return out.getvalue()
