"""mx.sym.sparse: the symbolic functions of operators with sparse implementations (the
registry's functions, as in mx.sym) plus ``retain`` and the sparse ``adagrad_update``.
Storage types of a bound graph's arrays are set with ``simple_bind(stype_dict=...)``
and ``Variable(stype=...)``; ``grad_stype`` on a variable gives sparse gradients."""
from ..operator.kernels_sparse import SPARSE_MODULE_OPS as OP_NAMES

__all__ = list(OP_NAMES) + ["retain", "adagrad_update"]


def _install(namespace):
    from . import op
    for name in OP_NAMES:
        namespace[name] = getattr(op, name)
    namespace["retain"] = getattr(op, "_sparse_retain")
    namespace["adagrad_update"] = getattr(op, "_sparse_adagrad_update")


_install(globals())
