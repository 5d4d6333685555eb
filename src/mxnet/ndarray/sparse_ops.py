"""The operator functions of ``mx.nd.sparse``: the registry's operators (the same
functions as ``mx.nd``; a sparse input takes the sparse path in
``ndarray.sparse_dispatch``) under MXNet's sparse-module names, plus ``retain``,
``add``/``subtract``/``multiply``/``divide`` and the sparse ``adagrad_update``."""
from ..base import numeric_types
from .ndarray import NDArray

from ..operator.kernels_sparse import SPARSE_MODULE_OPS as OP_NAMES

__all__ = list(OP_NAMES) + ["retain", "gs_retain", "adagrad_update", "add", "subtract",
                            "multiply", "divide"]


def _install(namespace):
    from .. import ndarray as nd
    for name in OP_NAMES:
        namespace[name] = getattr(nd.op, name)


_install(globals())


def retain(data=None, indices=None, out=None, name=None, **kwargs):
    """The rows of row_sparse ``data`` whose ids are in ``indices`` (others dropped)."""
    from .dispatch import invoke_by_name
    if kwargs:
        from ..base import MXNetError
        raise MXNetError(f"retain got unexpected arguments {sorted(kwargs)}")
    return invoke_by_name("_sparse_retain", [data, indices], {}, out=out)


gs_retain = retain


def adagrad_update(weight=None, grad=None, history=None, out=None, name=None, **kwargs):
    """AdaGrad update (MXNet's _sparse_adagrad_update); lazy for row_sparse grads."""
    from .dispatch import invoke_by_name
    return invoke_by_name("_sparse_adagrad_update", [weight, grad, history], kwargs, out=out)


def _ufunc(lhs, rhs, same_shape, broadcast, scalar, rscalar):
    """MXNet's sparse ufunc rule: same-shape arrays use the elemwise operator (which
    keeps sparse storage), others broadcast; numbers use the scalar operators."""
    from .dispatch import invoke_by_name
    if isinstance(lhs, numeric_types) and isinstance(rhs, numeric_types):
        raise TypeError("at least one operand must be an NDArray")
    if isinstance(rhs, numeric_types):
        return invoke_by_name(scalar, [lhs], {"scalar": float(rhs)})
    if isinstance(lhs, numeric_types):
        return invoke_by_name(rscalar, [rhs], {"scalar": float(lhs)})
    if not isinstance(lhs, NDArray) or not isinstance(rhs, NDArray):
        raise TypeError(f"type {type(lhs).__name__}/{type(rhs).__name__} not supported")
    name = same_shape if lhs.shape == rhs.shape else broadcast
    return invoke_by_name(name, [lhs, rhs], {})


def add(lhs, rhs):
    """lhs + rhs, elementwise with broadcasting (csr + csr stays csr)."""
    return _ufunc(lhs, rhs, "elemwise_add", "broadcast_add", "_plus_scalar", "_plus_scalar")


def subtract(lhs, rhs):
    """lhs - rhs, elementwise with broadcasting."""
    return _ufunc(lhs, rhs, "elemwise_sub", "broadcast_sub", "_minus_scalar",
                  "_rminus_scalar")


def multiply(lhs, rhs):
    """lhs * rhs, elementwise with broadcasting (sparse * dense keeps the pattern)."""
    return _ufunc(lhs, rhs, "elemwise_mul", "broadcast_mul", "_mul_scalar", "_mul_scalar")


def divide(lhs, rhs):
    """lhs / rhs, elementwise with broadcasting."""
    return _ufunc(lhs, rhs, "elemwise_div", "broadcast_div", "_div_scalar", "_rdiv_scalar")
