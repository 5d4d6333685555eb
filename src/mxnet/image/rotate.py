"""imrotate / random_rotate: rotate CHW images (or NCHW batches) about their centre by
bilinear sampling (GridGenerator's normalised grid and BilinearSampler), zero outside
the source. ``zoom_in`` scales so no empty corner shows; ``zoom_out`` so the whole
rotated image fits."""
import random as _random

import numpy as np

from ..ndarray.ndarray import NDArray
from .. import ndarray as nd

__all__ = ["imrotate", "random_rotate"]


def _angles(rotation_degrees, batch):
    if isinstance(rotation_degrees, NDArray):
        if batch is None:
            raise TypeError("imrotate: a single image takes one rotation angle, not an "
                            "NDArray of angles")
        ang = rotation_degrees.asnumpy().astype(np.float64).reshape(-1)
        if ang.size != batch:
            raise ValueError(f"imrotate: {ang.size} angles for a batch of {batch}")
        return ang
    return np.full(batch or 1, float(rotation_degrees))


def imrotate(src, rotation_degrees, zoom_in=False, zoom_out=False):
    """Rotate ``src`` (C, H, W) or (N, C, H, W), float32, by ``rotation_degrees`` (a
    number, or an NDArray with one angle per batch image), in the sense of
    ``scipy.ndimage.rotate(hwc_image, angle, axes=(1, 0))``."""
    if zoom_in and zoom_out:
        raise ValueError("imrotate: zoom_in and zoom_out cannot both be set")
    if src.ndim not in (3, 4):
        raise ValueError(f"imrotate: expected a (C, H, W) image or an (N, C, H, W) batch, "
                         f"got shape {src.shape}")
    if np.dtype(src.dtype) != np.float32:
        raise TypeError("imrotate: only float32 images are supported")
    single = src.ndim == 3
    batch = None if single else src.shape[0]
    theta = np.deg2rad(_angles(rotation_degrees, batch))
    h, w = src.shape[-2:]
    cos, sin = np.cos(theta), np.sin(theta)
    # Output pixel offsets from the centre, in pixels, map to source offsets rotated
    # back by theta (and scaled by the zoom).
    scale = np.ones_like(theta)
    # the zoom compares the rotated image's bounding box with the full image size
    ew, eh = w, h
    span_w, span_h = np.abs(cos) * ew + np.abs(sin) * eh, np.abs(sin) * ew + np.abs(cos) * eh
    if zoom_in:
        scale = np.minimum(ew / span_w, eh / span_h)
    elif zoom_out:
        scale = np.maximum(span_w / ew, span_h / eh)
    # Affine map on normalised coordinates: [x_s, y_s] = A [x_t, y_t] + 0, where
    # pixel offsets are x * (w-1)/2 and y * (h-1)/2.
    rx, ry = (w - 1) / 2.0, (h - 1) / 2.0
    rx, ry = max(rx, 1e-12), max(ry, 1e-12)
    a = np.stack([scale * cos, -scale * sin * ry / rx, np.zeros_like(theta),
                  scale * sin * rx / ry, scale * cos, np.zeros_like(theta)], axis=1)
    data = src.expand_dims(0) if single else src
    grid = nd.GridGenerator(nd.array(a, ctx=src.context, dtype=src.dtype),
                            transform_type="affine", target_shape=(h, w))
    out = nd.BilinearSampler(data, grid)
    return out[0] if single else out


def random_rotate(src, angle_limits, zoom_in=False, zoom_out=False):
    """imrotate by angles drawn uniformly from ``angle_limits`` (low, high) degrees, one
    per image."""
    low, high = angle_limits
    if src.ndim == 3:
        return imrotate(src, _random.uniform(low, high), zoom_in, zoom_out)
    angles = nd.array([_random.uniform(low, high) for _ in range(src.shape[0])])
    return imrotate(src, angles, zoom_in, zoom_out)


