"""NumPy kernels of MXNet's image operators (``mx.nd.image.*`` in MXNet 1.9.1), used by
the vision transforms on NDArrays.

Images are (H, W, C) or batches (N, H, W, C), except ``normalize`` which takes the
(C, H, W) / (N, C, H, W) tensors that ``to_tensor`` makes. Colour operators follow
MXNet: float images stay float, integer images are truncated and saturated back to
their dtype; the grey level is the luma 0.299 R + 0.587 G + 0.114 B.
"""

import numpy as np

from ....base import MXNetError
from ....backend.image_resize import resize as _resize

__all__ = ["to_tensor", "normalize", "resize", "flip", "adjust_brightness",
           "adjust_contrast", "adjust_saturation", "adjust_hue", "adjust_lighting"]

_LUMA = np.array([0.299, 0.587, 0.114], dtype=np.float32)
# AlexNet's PCA of ImageNet RGB pixels (MXNet's random_lighting constants).
_EIGVAL = np.array([55.46, 4.794, 1.148], dtype=np.float32)
_EIGVEC = np.array([[-0.5675, 0.7192, 0.4009],
                    [-0.5808, -0.0045, -0.8140],
                    [-0.5836, -0.6948, 0.4203]], dtype=np.float32)


def _check_image(x, op, channels=None):
    if x.ndim not in (3, 4):
        raise MXNetError(f"{op}: expected an image (H, W, C) or a batch (N, H, W, C), "
                         f"got shape {x.shape}")
    if channels is not None and x.shape[-1] != channels:
        raise MXNetError(f"{op}: expected {channels} channels (RGB) in the last axis, "
                         f"got shape {x.shape}")


def _back_to(out, dtype):
    """Float results keep float; integer images are truncated and saturated."""
    dtype = np.dtype(dtype)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        out = np.clip(out, info.min, info.max)
    return out.astype(dtype, copy=False)


def to_tensor(x):
    """(H, W, C) or (N, H, W, C) in [0, 255] -> float32 (C, H, W) / (N, C, H, W) in
    [0, 1]."""
    _check_image(x, "to_tensor")
    axes = (2, 0, 1) if x.ndim == 3 else (0, 3, 1, 2)
    out = np.ascontiguousarray(x.transpose(axes), dtype=np.float32)
    out /= np.float32(255.0)    # a true division, as MXNet's kernel: x * (1/255) is 1 ulp off
    return out


def normalize(x, mean, std):
    """(x - mean) / std per channel of a (C, H, W) or (N, C, H, W) tensor."""
    if x.ndim not in (3, 4):
        raise MXNetError(f"normalize: expected a tensor (C, H, W) or (N, C, H, W), got "
                         f"shape {x.shape}")
    nch = x.shape[-3]
    mean = np.asarray(mean, dtype=np.float32).reshape(-1)
    std = np.asarray(std, dtype=np.float32).reshape(-1)
    for name, v in (("mean", mean), ("std", std)):
        if v.size not in (1, nch):
            raise MXNetError(f"normalize: {name} has {v.size} values for an input with "
                             f"{nch} channels (shape {x.shape}); give 1 or {nch}")
    if np.any(std == 0):
        raise MXNetError("normalize: std must not contain zeros")
    shape = (-1, 1, 1)
    out = (x.astype(np.float32, copy=False) - mean.reshape(shape)) / std.reshape(shape)
    return out.astype(x.dtype if x.dtype.kind == "f" else np.float32, copy=False)


def resize_size(h, w, size, keep_ratio):
    """The (height, width) that ``resize`` produces for an (h, w) image."""
    if isinstance(size, (tuple, list)):
        if len(size) != 2:
            raise MXNetError(f"resize: size must be an int or (width, height), got {size}")
        return int(size[1]), int(size[0])
    size = int(size)
    if not keep_ratio:
        return size, size
    if h > w:     # the short side becomes size
        return int(h * size / w), size
    return size, int(w * size / h)


def resize(x, size, keep_ratio=False, interp=1):
    """Resizes (H, W, C) or (N, H, W, C) images; ``size`` is an int or (w, h)."""
    _check_image(x, "resize")
    h, w = x.shape[-3:-1]
    new_h, new_w = resize_size(h, w, size, keep_ratio)
    if x.ndim == 3:
        return _resize(x, new_w, new_h, interp)
    return np.stack([_resize(img, new_w, new_h, interp) for img in x])


def flip(x, axis_from_end):
    """Reverses an image axis counted from the end (2: height, 1: width... of HWC)."""
    _check_image(x, "flip")
    return np.ascontiguousarray(np.flip(x, axis=x.ndim - 1 - axis_from_end))


def _luma(x):
    return np.tensordot(x.astype(np.float32, copy=False), _LUMA, axes=([x.ndim - 1], [0]))


def adjust_brightness(x, alpha):
    """x * alpha."""
    _check_image(x, "adjust_brightness")
    return _back_to(x.astype(np.float32) * np.float32(alpha), x.dtype)


def adjust_contrast(x, alpha):
    """Blends each image with its mean grey level: x * alpha + mean(grey) * (1 - alpha)."""
    _check_image(x, "adjust_contrast", 3)
    grey = _luma(x).mean(axis=(-2, -1), keepdims=True)[..., None]
    out = x.astype(np.float32) * np.float32(alpha) + grey * np.float32(1 - alpha)
    return _back_to(out, x.dtype)


def adjust_saturation(x, alpha):
    """Blends each pixel with its grey level: x * alpha + grey * (1 - alpha)."""
    _check_image(x, "adjust_saturation", 3)
    grey = _luma(x)[..., None]
    out = x.astype(np.float32) * np.float32(alpha) + grey * np.float32(1 - alpha)
    return _back_to(out, x.dtype)


def _rgb_to_hls(rgb):
    """Vectorised colorsys.rgb_to_hls over the last axis (values in [0, 1])."""
    r, g, b = rgb[..., 0], rgb[..., 1], rgb[..., 2]
    maxc = rgb.max(-1)
    minc = rgb.min(-1)
    light = (maxc + minc) / 2
    delta = maxc - minc
    grey = delta == 0
    safe = np.where(grey, 1, delta)
    denom = np.where(light <= 0.5, maxc + minc, 2.0 - maxc - minc)
    sat = np.where(grey, 0, delta / np.where(grey, 1, denom))
    rc, gc, bc = (maxc - r) / safe, (maxc - g) / safe, (maxc - b) / safe
    hue = np.where(r == maxc, bc - gc, np.where(g == maxc, 2.0 + rc - bc, 4.0 + gc - rc))
    hue = np.where(grey, 0, (hue / 6.0) % 1.0)
    return hue, light, sat


def _hls_to_rgb(hue, light, sat):
    m2 = np.where(light <= 0.5, light * (1.0 + sat), light + sat - light * sat)
    m1 = 2.0 * light - m2

    def channel(h):
        h = h % 1.0
        return np.where(h < 1 / 6, m1 + (m2 - m1) * h * 6.0,
                        np.where(h < 0.5, m2,
                                 np.where(h < 2 / 3, m1 + (m2 - m1) * (2 / 3 - h) * 6.0,
                                          m1)))
    out = np.stack([channel(hue + 1 / 3), channel(hue), channel(hue - 1 / 3)], axis=-1)
    return np.where((sat == 0)[..., None], light[..., None], out)


def adjust_hue(x, alpha):
    """Rotates the hue (HLS colour space) by ``alpha - 1`` turns; alpha 1 keeps it."""
    _check_image(x, "adjust_hue", 3)
    if alpha == 1:
        return x.copy()
    hue, light, sat = _rgb_to_hls(x.astype(np.float64) / 255.0)
    out = _hls_to_rgb(hue + (alpha - 1), light, sat) * 255.0
    return _back_to(out.astype(np.float32), x.dtype)


def adjust_lighting(x, alpha):
    """AlexNet-style PCA lighting noise: adds eigvec @ (alpha * eigval) to each pixel."""
    _check_image(x, "adjust_lighting", 3)
    alpha = np.asarray(alpha, dtype=np.float32).reshape(-1)
    if alpha.size != 3:
        raise MXNetError(f"adjust_lighting: alpha must have 3 values, got {alpha.size}")
    rgb = _EIGVEC @ (alpha * _EIGVAL)
    return _back_to(x.astype(np.float32) + rgb, x.dtype)
