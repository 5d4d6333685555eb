"""Small pieces the contrib operator families share."""
import numpy as np

from ..params import Field
from ..registry import store, store_all  # noqa: F401  (the contrib families' import)

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
