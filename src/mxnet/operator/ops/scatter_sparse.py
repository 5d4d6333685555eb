"""MXNet's ``_scatter_*`` operators (``_scatter_elemwise_div``, ``_scatter_plus_scalar``,
``_scatter_minus_scalar``).

On dense arrays they are ``elemwise_div``, ``_plus_scalar`` and ``_minus_scalar``. With a
sparse left operand MXNet 1.9.1 computes only the entries that operand stores and keeps
its storage type (the rest stay unstored zeros); that rule is the sparse kernel in
``operator.kernels_sparse``. The classes here only give the dense forms their own names.
"""
from ..registry import get_op, register
from . import elemwise_binary  # noqa: F401  (the dense operators they derive from)

__all__ = []

_VARIANTS = {
    "_scatter_elemwise_div": ("elemwise_div",
                              "lhs / rhs; a row_sparse lhs gives a row_sparse result over "
                              "lhs's stored rows only, any other storage a dense result."),
    "_scatter_plus_scalar": ("_plus_scalar",
                             "data + scalar on the entries a sparse ``data`` stores (the "
                             "unstored zeros stay zero); on a dense array, _plus_scalar."),
    "_scatter_minus_scalar": ("_minus_scalar",
                              "data - scalar on the entries a sparse ``data`` stores (the "
                              "unstored zeros stay zero); on a dense array, _minus_scalar."),
}

for _name, (_base, _doc) in _VARIANTS.items():
    _cls = type(get_op(_base))
    register(type(_name, (_cls,), {"name": _name, "aliases": (), "__doc__": _doc,
                                   "doc": _doc}))
