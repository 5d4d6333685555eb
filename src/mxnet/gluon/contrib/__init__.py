"""mx.gluon.contrib: where MXNet 1.9.1 keeps some layers and samplers that pymxnet
defines in gluon.nn and gluon.data (one class each, reachable by both paths)."""
from . import cnn  # noqa: F401
from . import nn  # noqa: F401
from . import data  # noqa: F401
from . import estimator  # noqa: F401
from . import rnn  # noqa: F401

__all__ = ["cnn", "nn", "data", "estimator", "rnn"]
