"""``mx.library.load``: MXNet's loader for compiled extension libraries.

MXNet 1.9.1 loads a C++ shared library that registers custom operators, graph passes
and partitioners through its C ABI. pymxnet has no C ABI for such libraries to call, so
``load`` checks the path as MXNet does and then says plainly that it cannot load it;
Python custom operators (``mx.operator.CustomOp``) and subgraph backends
(``mx.subgraph``) are the supported ways to extend pymxnet.
"""
import os

from .base import MXNetError

__all__ = ["load"]


def load(path, verbose=True):
    """Load an MXNet extension library (``lib*.so``) — not possible in pymxnet.

    Raises
    ------
    MXNetError
        Always: the path does not exist, is not a shared library, or (a real one)
        cannot be loaded because pymxnet does not implement MXNet's C extension ABI.
    """
    if not os.path.exists(path):
        raise MXNetError(f"load path {path} does NOT exist")
    if not os.path.isabs(path):
        raise MXNetError(f"load path {path} is not an absolute path")
    if os.path.splitext(path)[1] not in (".so", ".dll", ".dylib"):
        raise MXNetError(f"load path {path} is NOT a library file")
    raise MXNetError(
        f"cannot load extension library {path}: pymxnet does not implement MXNet's C "
        "extension ABI (lib_api.h). Write custom operators with mx.operator.CustomOp "
        "and partitioners with mx.subgraph instead.")
