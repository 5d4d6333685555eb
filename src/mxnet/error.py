"""``mx.error``: MXNet 1.9.1's error classes and the registry that names them.

MXNet maps the type prefix of a backend message (``"InternalError: ..."``) to a Python
class through this registry. pymxnet raises its errors directly, so the registry only
records the classes (user code that registers its own error types keeps working), and
``InternalError`` marks a failure inside pymxnet itself rather than bad input.
"""
from .base import MXNetError

__all__ = ["MXNetError", "InternalError", "register_error", "register"]

_ERROR_TYPES = {}


def register_error(func_name=None, cls=None):
    """Register an error class under a name (its own ``__name__`` by default).

    Usable as ``@register_error``, ``@register_error("Name")`` or
    ``register_error("Name", cls)``; returns the class.
    """
    if callable(func_name) and cls is None:          # bare @register_error
        cls, func_name = func_name, func_name.__name__

    def do_register(klass):
        _ERROR_TYPES[func_name or klass.__name__] = klass
        return klass

    return do_register(cls) if cls is not None else do_register


register = register_error


@register_error
class InternalError(MXNetError):
    """A failure inside the framework itself (a broken invariant), not the caller's input."""


for _builtin in (ValueError, TypeError, AttributeError, IndexError, NotImplementedError):
    register_error(_builtin.__name__, _builtin)
