"""Storage-type inference for a bound graph (MXNet's FInferStorageType pass).

The executor computes every node densely; the storage type of each output is what
MXNet 1.9.1 would give, found by asking the operator's sparse kernel
(``operator.kernels_sparse``) what it returns for all-zero inputs of the bound shapes
and storage types (sparse inputs with no stored entries, dense ones as read-only zero
views), once at bind time. No kernel, or a kernel that declines: 'default'.
Heads with a sparse type are handed to the user as sparse arrays, cast from the dense
result after each forward.
"""
import numpy as np

from ..operator import sparse_values as sv
from ..operator.kernels_sparse import SPARSE_FROM_DENSE, lookup_sparse

__all__ = ["infer_stypes"]


class _Probe:
    """The call information a kernel may ask for (no outputs given, inference mode)."""
    __slots__ = ("ctx", "inputs", "out", "is_train")

    def __init__(self, ctx):
        self.ctx, self.inputs, self.out, self.is_train = ctx, None, None, False

    def out_stype(self, i, default):
        return default


def infer_stypes(g, var_stypes, ctx):
    """A storage type per entry of graph ``g`` ({entry: stype} for the variables)."""
    stypes = ["default"] * g.num_entries
    for e, st in var_stypes.items():
        stypes[e] = st
    probe = _Probe(ctx)
    for nid, node in enumerate(g.nodes):
        op = node.op
        if op is None:
            continue
        ins = g.node_inputs[nid]
        in_st = [stypes[e] for e in ins]
        if all(s == "default" for s in in_st) and op.name not in SPARSE_FROM_DENSE:
            continue
        kernel = lookup_sparse(op.name)
        if kernel is None:
            continue
        vals = [sv.empty_value(s, g.shapes[e], g.dtypes[e]) if s != "default" else
                np.broadcast_to(np.zeros((), g.dtypes[e]), g.shapes[e]) for s, e in
                zip(in_st, ins)]
        try:
            res = kernel(node.params, vals, probe)
        except Exception:          # a kernel that cannot run on the probe: dense
            res = NotImplemented
        if res is NotImplemented:
            continue
        for k, v in enumerate(res):
            stypes[g.row_ptr[nid] + k] = sv.stype_of(v)
    return stypes
