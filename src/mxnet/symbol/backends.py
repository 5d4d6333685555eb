"""Subgraph backends (``Symbol.optimize_for``, ``get_backend_symbol``, Gluon's
``hybridize(backend=...)`` / ``optimize_for``).

MXNet 1.9.1's CPU wheel registers the oneDNN backends ``MKLDNN`` and
``MKLDNN_QUANTIZE``, which rewrite a graph into fused ``_sg_mkldnn_*`` nodes for
oneDNN. pymxnet's executor applies its oneDNN kernels and fusions to every graph it
binds on a CPU (executor/fusion.py, executor/bias_fold.py), so for these backends the
graph is left as it is: the symbol computes the same outputs, without MXNet's
``_sg_mkldnn_*`` node names. ``default`` and ``default_v2`` group the operators named
through MXNet's C API (``_LIB.MXSetSubgraphPropertyOpNamesV2``, emulated) into
``_CachedOp`` nodes (symbol/partition.py). Any other name is not a backend:
``optimize_for`` warns and leaves the graph unchanged, as MXNet 1.9.1 logs "cannot be
found" and goes on, and ``get_backend_symbol`` raises, as MXNet's does.
"""
import warnings

from ..base import MXNetError

__all__ = ["check_backend", "partitioned", "ONEDNN_BACKENDS"]

ONEDNN_BACKENDS = ("MKLDNN", "MKLDNN_QUANTIZE")
_C_API_BACKENDS = ("default", "default_v2")


def check_backend(backend, what, strict=False):
    """Whether ``backend`` applies: True for the oneDNN backends and for
    ``default``/``default_v2`` once operator names are set for them (MXNetError
    before); for an unknown name MXNetError with ``strict`` (get_backend_symbol), else
    a warning and False."""
    if not isinstance(backend, str):
        raise MXNetError(f"{what}: backend must be a string, got {type(backend).__name__}")
    if backend in ONEDNN_BACKENDS:
        return True
    if backend in _C_API_BACKENDS:
        from .partition import op_names_for
        if op_names_for(backend, 2) is None:
            raise MXNetError(f"{what}: backend {backend!r} partitions by operator names, "
                             "and none are set: set them with _LIB."
                             "MXSetSubgraphPropertyOpNamesV2 (symbol/partition.py)")
        return True
    if strict:
        raise MXNetError(f"{what}: SubgraphProperty {backend} is not found; the backends "
                         f"are {', '.join(ONEDNN_BACKENDS)}")
    warnings.warn(f"{what}: backend {backend!r} cannot be found (the backends are "
                  f"{', '.join(ONEDNN_BACKENDS)}); the graph is left unchanged",
                  stacklevel=3)
    return False


def partitioned(symbol, backend, version=2):
    """``symbol`` as ``backend`` partitions it: a copy for the oneDNN backends and
    unknown names; grouped into _CachedOp nodes for ``default``/``default_v2``."""
    if backend in _C_API_BACKENDS:
        from .partition import op_names_for, partition
        return partition(symbol, op_names_for(backend, version) or ())
    return symbol.__copy__()
