"""mx.gluon.nn: neural-network layers (MXNet 1.9.1's ``mx.gluon.nn``)."""
from ..block import Block, HybridBlock, SymbolBlock  # noqa: F401
from . import activations, basic_layers, conv_layers  # noqa: F401
from .activations import *  # noqa: F401,F403
from .basic_layers import *  # noqa: F401,F403
from .conv_layers import *  # noqa: F401,F403
