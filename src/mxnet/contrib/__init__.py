"""mx.contrib: experimental parts of MXNet 1.9.1.

``mx.contrib.ndarray`` / ``nd`` and ``mx.contrib.symbol`` / ``sym`` are the contrib
operators (the same functions as ``mx.nd.contrib`` and ``mx.sym.contrib``);
``mx.contrib.autograd`` is the pre-1.0 autograd interface; ``mx.contrib.text``
(vocabularies and token embeddings) and ``mx.contrib.io`` (DataLoaderIter) are
imported with it, as in MXNet. Other subpackages (quantization, amp, onnx,
svrg_optimization, ...) are imported on first use when this pymxnet has them; a
missing one is an ImportError naming it.
"""
import importlib

from . import autograd  # noqa: F401
from . import ndarray  # noqa: F401
from . import ndarray as nd  # noqa: F401
from . import symbol  # noqa: F401
from . import symbol as sym  # noqa: F401
from . import text  # noqa: F401
from . import io  # noqa: F401

_ALIASES = {"quant": "quantization"}


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    target = _ALIASES.get(name, name)
    try:
        module = importlib.import_module(f"{__name__}.{target}")
    except ModuleNotFoundError as err:
        if err.name != f"{__name__}.{target}":
            raise
        raise AttributeError(f"module 'mxnet.contrib' has no attribute {name!r} "
                             f"(mxnet.contrib.{target} is not part of this pymxnet)") from None
    globals()[name] = module
    return module
