"""``mx.nd.np`` (``mxnet.ndarray.numpy``, installed by ``mxnet/__init__``): the imperative function namespace behind ``mx.np`` (MXNet 1.9.1's
``mxnet.ndarray.numpy``). It holds the very functions ``mx.np`` exposes (one front end
each over the operator registry), so ``F.np.sum`` in a HybridBlock run imperatively is
``mx.np.sum``; ``linalg`` and ``random`` are ``mx.np.linalg`` and ``mx.np.random``.
"""
from .. import numpy as _mnp
from . import linalg, random  # noqa: F401

# MXNet 1.9.1's mx.nd.np names (its imperative functions; the host-computed fallback
# functions and the dtype constants live only in mx.np)
__all__ = sorted(
    "abs absolute add all amax amin any append arange arccos arccosh arcsin arcsinh arctan "
    "arctan2 arctanh argmax argmin argsort around array_split atleast_1d atleast_2d "
    "atleast_3d average bincount bitwise_and bitwise_not bitwise_or bitwise_xor blackman "
    "broadcast_to cbrt ceil clip column_stack concatenate copy copysign cos cosh cumsum "
    "deg2rad degrees delete diag diag_indices_from diagflat diagonal diff divide dot "
    "dsplit dstack ediff1d einsum empty_like equal exp expand_dims expm1 eye fabs fix flip "
    "fliplr flipud floor full full_like greater greater_equal hamming hanning histogram "
    "hsplit hstack hypot identity indices inner insert invert isfinite isinf isnan "
    "isneginf isposinf lcm ldexp less less_equal linspace log log10 log1p log2 logical_not "
    "logspace matmul max maximum may_share_memory mean min minimum mod moveaxis multiply "
    "nan_to_num negative nonzero not_equal ones ones_like outer pad percentile polyval "
    "power prod product quantile rad2deg radians ravel reciprocal remainder repeat reshape "
    "resize rint roll rot90 round round_ row_stack shape shares_memory sign sin sinh "
    "sometrue sort split sqrt square squeeze stack std subtract sum swapaxes take tan tanh "
    "tensordot tile trace transpose tril true_divide trunc unique unravel_index var vdot "
    "vsplit vstack where zeros zeros_like".split())

globals().update({_n: getattr(_mnp, _n) for _n in __all__})


def __getattr__(name):
    # the rest of mx.np (array, ndarray, fallback functions...) is reachable here too
    if name.startswith("__"):
        raise AttributeError(name)
    return getattr(_mnp, name)
