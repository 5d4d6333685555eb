"""mx.gluon.contrib.data.sampler: ``IntervalSampler``, defined in gluon.data.sampler."""
from ...data.sampler import IntervalSampler  # noqa: F401

__all__ = ["IntervalSampler"]
