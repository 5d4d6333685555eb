"""mx.np: MXNet's NumPy-compatible array API. Not implemented in pymxnet yet: the module
imports, every name in it raises NotImplementedError (see mxnet._missing)."""
from .._missing import missing_module_getattr

__getattr__ = missing_module_getattr("mxnet.numpy", "the NumPy-compatible array API (mx.np)")
