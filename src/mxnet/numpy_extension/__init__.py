"""mx.npx: MXNet's NumPy extension operators. Not implemented in pymxnet yet: the module
imports, every name in it raises NotImplementedError (see mxnet._missing)."""
from .._missing import missing_module_getattr

__getattr__ = missing_module_getattr("mxnet.numpy_extension",
                                     "the NumPy extension API (mx.npx)")
