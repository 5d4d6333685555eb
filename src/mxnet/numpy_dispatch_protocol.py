"""``mxnet.numpy_dispatch_protocol``: the names of MXNet 1.9.1's module of that name
(the functions and ufuncs mx.np serves through NumPy's dispatch protocols); the
protocols themselves live in ``mxnet.numpy.dispatch``."""
from .numpy.dispatch import (_NUMPY_ARRAY_FUNCTION_LIST, _NUMPY_ARRAY_UFUNC_LIST,  # noqa: F401
                             with_array_function_protocol, with_array_ufunc_protocol)

__all__ = ["with_array_function_protocol", "with_array_ufunc_protocol"]
