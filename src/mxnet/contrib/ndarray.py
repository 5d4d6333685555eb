"""mx.contrib.ndarray (``mx.contrib.nd``): the contrib operators on NDArrays, i.e. the
functions of ``mx.nd.contrib``."""
from ..ndarray import contrib as _contrib


def __getattr__(name):
    try:
        return getattr(_contrib, name)
    except AttributeError:
        raise AttributeError(f"module 'mxnet.contrib.ndarray' has no attribute {name!r} "
                             f"(no contrib operator of that name)") from None


def __dir__():
    return sorted(n for n in vars(_contrib) if not n.startswith("__"))
