"""Small pieces the contrib operator families share."""
import numpy as np

from ..params import Field

__all__ = ["FloatTuple", "store", "store_all"]


class FloatTuple(Field):
    """A tuple of floats (MXNet's ``tuple of <float>``); a number becomes a 1-tuple."""
    kind = "tuple of float"

    def convert(self, v):
        if isinstance(v, (int, float, np.number)):
            return (float(v),)
        if v is None:
            raise ValueError("None is not a tuple of floats")
        return tuple(float(x) for x in v)


def store(out, i, value):
    """Output i of an operator following the write-into-outputs contract: copied into
    ``out[i]`` when the caller gave a preallocated array there, else value itself."""
    if out is None or out[i] is None:
        return value
    dst = out[i]
    dst[...] = value
    return dst


def store_all(out, values):
    """``store`` for every output."""
    return [store(out, i, v) for i, v in enumerate(values)]
