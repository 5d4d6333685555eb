"""Image resampling in NumPy with OpenCV's geometry (what MXNet's imresize used).

Interpolation codes are OpenCV's: 0 nearest, 1 bilinear, 2 bicubic, 3 area, 4 Lanczos
(8 taps); 9 picks cubic for enlarging, area for shrinking, bilinear otherwise; 10 picks
one of 0-4 at random. Pixel centres sit at half-integers (source x = (dst x + 0.5) *
scale - 0.5) and borders replicate, as in cv::resize. Each axis is resampled separately
by gathering a few taps per output pixel (area downscaling uses an overlap matrix), so
results match OpenCV up to its fixed-point rounding (at most 1 for uint8). Bilinear and
bicubic resizing of uint8 images - what image pipelines do most - follow OpenCV's
fixed-point arithmetic, so they give MXNet 1.9.1's pixels exactly
(``_fixed_point_uint8``).
"""
import functools
import random as _pyrandom

import numpy as np

from ..base import MXNetError

__all__ = ["resize", "get_interp_method"]


def get_interp_method(interp, sizes=()):
    """Resolves the meta-methods 9 (auto) and 10 (random) to an OpenCV code 0-4.
    ``sizes`` is (src_h, src_w, dst_h, dst_w), needed for 9."""
    if interp == 9:
        if not sizes:
            return 2
        oh, ow, nh, nw = sizes
        if nh > oh and nw > ow:
            return 2
        if nh < oh and nw < ow:
            return 3
        return 1
    if interp == 10:
        return _pyrandom.randint(0, 4)
    if interp not in (0, 1, 2, 3, 4):
        raise MXNetError(f"imresize: unknown interpolation method {interp}; expected "
                         "0 (nearest), 1 (bilinear), 2 (bicubic), 3 (area), 4 (lanczos), "
                         "9 (auto) or 10 (random)")
    return interp


def _cubic(x, a=-0.75):
    x = np.abs(x)
    return np.where(x <= 1, ((a + 2) * x - (a + 3)) * x * x + 1,
                    np.where(x < 2, ((a * x - 5 * a) * x + 8 * a) * x - 4 * a, 0.0))


def _lanczos4(x):
    out = np.sinc(x) * np.sinc(x / 4)
    return np.where(np.abs(x) < 4, out, 0.0)


@functools.lru_cache(maxsize=256)
def _taps(n_in, n_out, method):
    """(indices, weights), each (n_out, K): source pixels and weights per output pixel."""
    scale = n_in / n_out
    dst = np.arange(n_out, dtype=np.float64)
    if method == 0:
        idx = np.minimum(np.floor(dst * scale).astype(np.int64), n_in - 1)
        return idx[:, None], None
    if method == 3:  # area, enlarging: linear-like weights with sharp steps
        base = np.floor(dst * scale)
        frac = (dst + 1) - (base + 1) / scale
        frac = np.where(frac <= 0, 0.0, frac - np.floor(frac))
        offsets, weights = np.array([0, 1]), np.stack([1 - frac, frac], axis=1)
    else:
        src = (dst + 0.5) * scale - 0.5
        base = np.floor(src)
        frac = src - base
        if method == 1:
            # OpenCV clamps the position itself at the borders, not just the taps
            low, high = base < 0, base >= n_in - 1
            frac = np.where(low | high, 0.0, frac)
            base = np.where(low, 0, np.where(high, n_in - 1, base))
            offsets = np.array([0, 1])
            weights = np.stack([1 - frac, frac], axis=1)
        else:
            offsets = np.arange(-1, 3) if method == 2 else np.arange(-3, 5)
            kernel = _cubic if method == 2 else _lanczos4
            weights = kernel(frac[:, None] - offsets[None, :])
            weights /= weights.sum(axis=1, keepdims=True)
    idx = np.clip(base.astype(np.int64)[:, None] + offsets[None, :], 0, n_in - 1)
    return idx, weights.astype(np.float32)


@functools.lru_cache(maxsize=64)
def _area_matrix(n_in, n_out):
    """(n_out, n_in) weights: the share of each source pixel in each output pixel."""
    scale = n_in / n_out
    lo = np.arange(n_out)[:, None] * scale
    hi = lo + scale
    j = np.arange(n_in)[None, :]
    overlap = np.clip(np.minimum(hi, j + 1) - np.maximum(lo, j), 0, None)
    return (overlap / scale).astype(np.float32)


def _resample_axis(img, n_out, axis, method, shrink_area=False, span=None):
    """Resamples one axis to ``n_out`` pixels; ``span`` = (first, count) limits the
    work to those output pixels (a crop of the result, computed exactly)."""
    n_in = img.shape[axis]
    lo, count = span if span is not None else (0, n_out)
    if n_in == n_out:
        return img if span is None else np.take(img, np.arange(lo, lo + count), axis)
    shape = [1] * img.ndim
    shape[axis] = count
    if shrink_area:
        mat = _area_matrix(n_in, n_out)[lo:lo + count]
        moved = np.moveaxis(img, axis, 0)
        out = (mat @ moved.reshape(n_in, -1)).reshape((count,) + moved.shape[1:])
        return np.moveaxis(out, 0, axis)
    idx, weights = _taps(n_in, n_out, method)
    idx = idx[lo:lo + count]
    if weights is None:
        return np.take(img, idx[:, 0], axis=axis)
    weights = weights[lo:lo + count]
    out = np.take(img, idx[:, 0], axis=axis)
    if idx.shape[1] == 2:
        # a + (b - a) * w: two gathers and no temporaries beyond them
        other = np.take(img, idx[:, 1], axis=axis)
        other -= out
        other *= weights[:, 1].reshape(shape)
        out += other
        return out
    out *= weights[:, 0].reshape(shape)
    tap = np.empty_like(out)
    for k in range(1, idx.shape[1]):
        np.take(img, idx[:, k], axis=axis, out=tap)
        tap *= weights[:, k].reshape(shape)
        out += tap
    return out


_COEF_SCALE = 2048       # OpenCV's INTER_RESIZE_COEF_SCALE: 11 fractional bits


def _cubic_weights(frac, a=-0.75):
    """OpenCV's four bicubic weights (interpolateCubic) of each fraction, in float32."""
    x = frac.astype(np.float32)
    one = np.float32(1)
    w0 = ((a * (x + one) - 5 * a) * (x + one) + 8 * a) * (x + one) - 4 * a
    w1 = ((a + 2) * x - (a + 3)) * x * x + one
    w2 = ((a + 2) * (one - x) - (a + 3)) * (one - x) * (one - x) + one
    return np.stack([w0, w1, w2, one - w0 - w1 - w2], axis=1).astype(np.float32)


@functools.lru_cache(maxsize=256)
def _fixed_point_taps(n_in, n_out, method, clamp):
    """(source pixels, weights), each (n_out, taps), as cv::resize computes them for
    uint8 bilinear (``method`` 1, 2 taps) or bicubic (2, 4 taps): positions in float32,
    weights rounded to 11 fractional bits, taps outside the image clipped to its border.
    ``clamp`` (bilinear along x): a position outside the image takes the border pixel
    alone; along y OpenCV keeps the computed weights - it treats the two axes
    differently, and its rounding shows the difference."""
    scale = 1.0 / (n_out / n_in)
    pos = ((np.arange(n_out) + 0.5) * scale - 0.5).astype(np.float32)
    first = np.floor(pos).astype(np.int64)
    frac = pos - first.astype(np.float32)
    if method == 1:
        if clamp:
            edge = (first < 0) | (first >= n_in - 1)
            frac[edge] = 0
            first = np.where(first < 0, 0, np.where(first >= n_in - 1, n_in - 1, first))
        weights = np.stack([np.float32(1) - frac, frac], axis=1)
        offsets = np.arange(2)
    else:
        weights = _cubic_weights(frac)
        offsets = np.arange(-1, 3)
    idx = np.clip(first[:, None] + offsets[None, :], 0, n_in - 1)
    return idx, np.rint(weights * np.float32(_COEF_SCALE)).astype(np.int32)


def _fixed_point_uint8(img, w, h, method, xspan, yspan):
    """cv::resize of a uint8 image with INTER_LINEAR (``method`` 1) or INTER_CUBIC (2),
    bit for bit: each row resampled along x in integers scaled by 2^11, then the rows
    blended as OpenCV's vectorised passes do - bilinear in integers,
    ``(((b0 * (r0 >> 4)) >> 16) + ((b1 * (r1 >> 4)) >> 16) + 2) >> 2``, bicubic in
    float32, ``rint((r0*b0 + r1*b1 + r2*b2 + r3*b3) / 2^22)`` (in integers for a row's
    last values, as OpenCV's scalar code does them). The image is handled as
    (H, W * C) rows (a 2-D gather of whole pixels is ~3x faster than one along the
    middle axis), and only the source rows the output reads are resampled."""
    def window(taps, span):
        return taps if span is None else tuple(t[span[0]:span[0] + span[1]] for t in taps)
    xi, xw = window(_fixed_point_taps(img.shape[1], w, method, True), xspan)
    yi, yw = window(_fixed_point_taps(img.shape[0], h, method, False), yspan)
    c = img.shape[2] if img.ndim == 3 else 1
    flat = img.reshape(img.shape[0], -1)
    if c > 1:                           # the taps of every channel of a pixel
        xi = (xi[:, None, :] * c + np.arange(c)[None, :, None]).reshape(-1, xi.shape[1])
        xw = np.repeat(xw, c, axis=0)
    used, back = np.unique(yi, return_inverse=True)
    if used.size < flat.shape[0]:
        flat = flat[used]
        yi = back.reshape(yi.shape)
    rows = np.take(flat, xi[:, 0], axis=1).astype(np.int32)
    rows *= xw[:, 0]
    for k in range(1, xi.shape[1]):
        tap = np.take(flat, xi[:, k], axis=1).astype(np.int32)
        tap *= xw[:, k]
        rows += tap
    if method == 1:
        rows >>= 4
        out = np.take(rows, yi[:, 0], axis=0)
        out *= yw[:, :1]
        out >>= 16
        below = np.take(rows, yi[:, 1], axis=0)
        below *= yw[:, 1:]
        below >>= 16
        out += below
        out += 2
        out >>= 2
    else:
        wide = rows.astype(np.float32)
        out = np.take(wide, yi[:, 0], axis=0)
        out *= yw[:, :1].astype(np.float32)
        for k in range(1, yi.shape[1]):
            tap = np.take(wide, yi[:, k], axis=0)
            tap *= yw[:, k:k + 1].astype(np.float32)
            out += tap
        out *= np.float32(1.0 / (_COEF_SCALE * _COEF_SCALE))
        out = np.rint(out)
        # the vectorised pass takes 8 values of a row at a time; the last (w * C) % 8
        # of each full row are blended by OpenCV's scalar code, in integers
        first = (w * c) // 8 * 8 - (xspan[0] * c if xspan else 0)
        if first < out.shape[1]:
            first = max(first, 0)
            tail = sum(np.take(rows[:, first:], yi[:, k], axis=0).astype(np.int64) *
                       yw[:, k:k + 1] for k in range(yi.shape[1]))
            out[:, first:] = (tail + (1 << 21)) >> 22
    shape = (yi.shape[0], out.shape[1] // c) + img.shape[2:]
    return np.clip(out, 0, 255).astype(np.uint8).reshape(shape)


def resize(img, w, h, interp=1, window=None):
    """Resizes an (H, W) or (H, W, C) numpy image to width ``w`` and height ``h``.
    The result has the input's dtype (integers rounded and saturated).

    ``window`` = (x0, y0, cw, ch) returns only that region of the resized image,
    computing no other output pixel (for resize-then-crop pipelines).
    """
    img = np.asarray(img)
    if img.ndim not in (2, 3):
        raise MXNetError(f"imresize: image must be (H, W) or (H, W, C), got shape "
                         f"{img.shape}")
    w, h = int(w), int(h)
    if w <= 0 or h <= 0:
        raise MXNetError(f"imresize: target size must be positive, got w={w}, h={h}")
    if img.shape[0] == 0 or img.shape[1] == 0:
        raise MXNetError(f"imresize: cannot resize an empty image of shape {img.shape}")
    method = get_interp_method(interp, (img.shape[0], img.shape[1], h, w))
    if window is None:
        xspan = yspan = None
    else:
        x0, y0, cw, ch = (int(v) for v in window)
        if x0 < 0 or y0 < 0 or cw <= 0 or ch <= 0 or x0 + cw > w or y0 + ch > h:
            raise MXNetError(f"imresize: window {window} is outside the {w}x{h} result")
        xspan, yspan = (x0, cw), (y0, ch)
    if (h, w) == img.shape[:2] and window is None:
        return img.copy()
    if method == 0:
        return _resample_axis(_resample_axis(img, h, 0, 0, span=yspan), w, 1, 0,
                              span=xspan)
    if method in (1, 2) and img.dtype == np.uint8:
        return _fixed_point_uint8(img, w, h, method, xspan, yspan)
    # OpenCV averages areas only when neither axis grows; otherwise INTER_AREA uses
    # its step-like linear weights on both axes.
    area = method == 3 and h <= img.shape[0] and w <= img.shape[1]
    work = img.astype(np.float32, copy=False)
    out = _resample_axis(work, h, 0, method, area, yspan)
    out = _resample_axis(out, w, 1, method, area, xspan)
    if out is work:
        out = out.copy()
    if img.dtype.kind in "iu":
        info = np.iinfo(img.dtype)
        out = np.clip(np.rint(out), info.min, info.max)
    return out.astype(img.dtype, copy=False)
