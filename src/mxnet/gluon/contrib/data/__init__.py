"""mx.gluon.contrib.data: the samplers MXNet 1.9.1 places here (``sampler``, defined in
gluon.data) and the WikiText language-model datasets (``text``)."""
from . import sampler  # noqa: F401
from . import text  # noqa: F401
from .sampler import IntervalSampler  # noqa: F401

__all__ = ["sampler", "text", "IntervalSampler"]
