"""mx.contrib.symbol (``mx.contrib.sym``): the contrib operators on Symbols, i.e. the
functions of ``mx.sym.contrib``."""
from ..symbol import contrib as _contrib


def __getattr__(name):
    try:
        return getattr(_contrib, name)
    except AttributeError:
        raise AttributeError(f"module 'mxnet.contrib.symbol' has no attribute {name!r} "
                             f"(no contrib operator of that name)") from None


def __dir__():
    return sorted(n for n in vars(_contrib) if not n.startswith("__"))
