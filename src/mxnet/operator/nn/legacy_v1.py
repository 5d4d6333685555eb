"""MXNet's first-generation layer operators kept for old symbol files: BatchNorm_v1,
Convolution_v1 and Pooling_v1. Each computes what its current namesake computes; they
differ only in the parameters they accept (the v1 lists are shorter)."""
from ..params import Enum, Schema
from ..registry import register
from .batch_norm import BatchNorm
from .convolution import Convolution
from .pooling import Pooling
from ..dtypes import F16_32_64, F32_64, restrict_dtypes


class _NarrowSchema(Schema):
    """Accepts only the v1 parameter list, then fills the current operator's other
    parameters with their defaults so the shared implementation finds them."""

    def __init__(self, base, **fields):
        super().__init__(**fields)
        self._rest = {k: f for k, f in base.fields.items() if k not in fields}

    def extend(self, **fields):
        raise TypeError("a v1 schema cannot be extended")

    def parse(self, opname, kwargs):
        p = super().parse(opname, kwargs)
        for k, f in self._rest.items():
            if k not in p:
                p[k] = f.default
        return p


def _narrow(base, names, **overrides):
    fields = {n: base.params.fields[n] for n in names}
    fields.update(overrides)
    return _NarrowSchema(base.params, **fields)


@register
class BatchNormV1(BatchNorm):
    """BatchNorm over axis 1 (the v1 operator: no axis, cudnn or calibration
    parameters)."""
    name = "BatchNorm_v1"
    params = _narrow(BatchNorm, ("eps", "momentum", "fix_gamma", "use_global_stats",
                                 "output_mean_var"))


@register
@restrict_dtypes(F32_64)
class ConvolutionV1(Convolution):
    """Convolution (the v1 operator takes the same parameters)."""
    name = "Convolution_v1"
    params = _narrow(Convolution, tuple(Convolution.params.fields))


@register
@restrict_dtypes(F16_32_64)
class PoolingV1(Pooling):
    """Max, average or sum pooling (the v1 operator: no lp pooling, no 'same'
    convention, no layout)."""
    name = "Pooling_v1"
    params = _narrow(Pooling, ("kernel", "pool_type", "global_pool", "pooling_convention",
                               "stride", "pad"),
                     pool_type=Enum(("avg", "max", "sum"), "max"),
                     pooling_convention=Enum(("full", "valid"), "valid"))
