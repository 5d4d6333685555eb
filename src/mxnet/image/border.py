"""copyMakeBorder: pad an image with OpenCV's border types."""
import numpy as np

from ..base import MXNetError
from .image import as_nd, as_numpy

__all__ = ["copyMakeBorder"]

# OpenCV border types -> numpy.pad modes.
_MODES = {0: "constant", 1: "edge", 2: "symmetric", 3: "wrap", 4: "reflect"}


def copyMakeBorder(src, top, bot, left, right, type=0, value=0.0, values=None,
                   out=None):
    """Pads an (H, W, C) image: ``type`` is OpenCV's border type (0 constant with
    ``value``/``values``, 1 replicate, 2 reflect, 3 wrap, 4 reflect-101)."""
    if type not in _MODES:
        raise MXNetError(f"copyMakeBorder: unsupported border type {type}; expected one "
                         f"of {sorted(_MODES)}")
    arr = as_numpy(src)
    pads = ((top, bot), (left, right)) + ((0, 0),) * (arr.ndim - 2)
    if type == 0:
        if values:
            fill = np.asarray(values, dtype=arr.dtype).reshape(-1)
            result = np.empty((arr.shape[0] + top + bot, arr.shape[1] + left + right)
                              + arr.shape[2:], arr.dtype)
            result[...] = fill[:arr.shape[2]] if arr.ndim == 3 else fill[0]
            result[top:top + arr.shape[0], left:left + arr.shape[1]] = arr
        else:
            result = np.pad(arr, pads, mode="constant", constant_values=value)
    else:
        result = np.pad(arr, pads, mode=_MODES[type])
    result = as_nd(result)
    if out is not None:
        out[:] = result
        return out
    return result
