"""mx.gluon: the imperative/hybrid neural-network API of MXNet 1.9.1.

``Block``/``HybridBlock``/``SymbolBlock`` (``block``), ``Parameter``/``Constant``/
``ParameterDict`` (``parameter``), ``Trainer`` (``trainer``), layers in ``nn``, losses
in ``loss``, helpers in ``utils``; ``data``, ``rnn`` and ``model_zoo`` are the
data-loading, recurrent and pretrained-model packages; ``contrib`` holds the names
MXNet 1.9.1 keeps under gluon.contrib.
"""
from .parameter import (Parameter, Constant, ParameterDict,  # noqa: F401
                        DeferredInitializationError, tensor_types)
from .block import Block, HybridBlock, SymbolBlock  # noqa: F401
from . import nn  # noqa: F401
from . import loss  # noqa: F401
from . import utils  # noqa: F401
from .trainer import Trainer  # noqa: F401
from . import parameter, block, trainer  # noqa: F401
from . import _cached_op  # noqa: F401,E402  (installs mx.nd.CachedOp)
from . import data  # noqa: F401
from . import rnn  # noqa: F401
from . import model_zoo  # noqa: F401
from . import contrib  # noqa: F401

__all__ = ["Block", "HybridBlock", "SymbolBlock", "Parameter", "Constant", "ParameterDict",
           "DeferredInitializationError", "Trainer", "nn", "loss", "utils", "data", "rnn",
           "model_zoo", "contrib", "tensor_types"]
