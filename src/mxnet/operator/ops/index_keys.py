"""Index keys as the ``_getitem``/``_setitem`` operators store them: a tuple of
ints, slices, Ellipsis/None, NumPy arrays and ``IndexArg`` placeholders for index
arrays passed as extra operator inputs (the NDArray front end builds the template)."""
import numpy as np

__all__ = ["IndexArg", "resolve_key"]


class IndexArg:
    """Placeholder in a normalised key for the i-th NDArray index input."""
    __slots__ = ("i",)

    def __init__(self, i):
        self.i = i

    def __eq__(self, other):
        return isinstance(other, IndexArg) and other.i == self.i

    def __hash__(self):
        return hash(("IndexArg", self.i))

    def __repr__(self):
        return f"IndexArg({self.i})"


def resolve_key(template, index_data):
    """The key with each placeholder replaced by its index array (as int64)."""
    out = []
    for k in template:
        if isinstance(k, IndexArg):
            out.append(index_data[k.i].astype(np.int64, copy=False))
        elif isinstance(k, np.ndarray) and k.dtype.kind == "f":
            out.append(k.astype(np.int64))
        else:
            out.append(k)
    return tuple(out)
