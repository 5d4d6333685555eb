"""What the operator layer borrows from the front ends above it: operators written in
Python (``operator.custom``) hand their callbacks NDArrays, and the legacy NumpyOp /
NDArrayOp instances build Symbols. The front ends install these functions when they
are imported (``provide``), so the operator layer imports none of them and the layers
stay one-way.

Installed names: ``wrap_array(data, ctx)`` (an NDArray over a device array),
``failed_array(shape, dtype, ctx, error)`` (an NDArray whose read raises error),
``is_array(v)``, ``wrap_value(value, ctx)`` and ``value_of(arr)`` (an NDArray over
a dense or sparse value, and back), ``ndarray_class`` (the NDArray class itself,
which ``mx.operator`` exposes as MXNet's module does), ``create_symbol(op, inputs,
params, name, attr, hint)`` and ``is_symbol(v)``.
"""
from ..base import MXNetError

__all__ = ["provide", "need"]

_HOOKS = {}


def provide(**functions):
    """Install front-end functions by name (each front end calls this at import)."""
    _HOOKS.update(functions)


def need(name):
    """The installed front-end function ``name``."""
    fn = _HOOKS.get(name)
    if fn is None:
        raise MXNetError(f"operator layer: front-end function {name!r} is not installed "
                         "(import mxnet, not mxnet.operator alone)")
    return fn
