"""Storage-type inference for a bound graph (MXNet's FInferStorageType pass).

The executor computes every node densely; the storage type of each output is what
MXNet 1.9.1 would give, found by asking the operator's sparse kernel
(``operator.kernels_sparse``) what it returns for all-zero inputs of the bound shapes
and storage types (sparse inputs with no stored entries, dense ones as read-only zero
views), once at bind time. No kernel, or a kernel that declines: 'default'. An operator with an
``infer_storage(p, in_stypes, in_shapes, ctx)`` method states its output types itself
(a Python CustomOp, which also keeps the input types for its dense runs).
Heads with a sparse type are handed to the user as sparse arrays. A head whose node
reads only bound variables and dense values is recomputed after each forward by the
node's sparse kernel (``head_fillers``), so its stored entries are MXNet's (e.g. a
row_sparse sum keeps every row either operand stores, zero or not); any other sparse
head is cast from the dense result.
"""
import numpy as np

from ..operator import sparse_values as sv
from ..operator.kernels_sparse import SPARSE_FROM_DENSE, StorageError, lookup_sparse

__all__ = ["infer_stypes", "head_fillers"]


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
        infer = getattr(op, "infer_storage", None)
        if infer is not None:        # an operator that states its own (Custom)
            for k, st in enumerate(infer(node.params, in_st, [g.shapes[e] for e in ins],
                                         ctx)):
                stypes[g.row_ptr[nid] + k] = st
            continue
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
        except StorageError as e:  # storage types the operator refuses
            raise StorageError(f"Error in operator {node.name}: {e}") from None
        except Exception:          # a kernel that cannot run on the probe: dense
            res = NotImplemented
        if res is NotImplemented:
            continue
        for k, v in enumerate(res):
            stypes[g.row_ptr[nid] + k] = sv.stype_of(v)
    return stypes


def head_fillers(g, stypes, var_nd, ctx):
    """{head position: fn(vals) -> the head's sparse value, or NotImplemented} for the
    sparse heads whose node's inputs are bound variables or dense entries; ``vals`` is
    the executor's list of dense entry values after a forward."""
    fillers = {}
    for pos, e in enumerate(g.heads):
        nid = g.entry_node[e]
        op = g.nodes[nid].op
        if stypes[e] == "default" or op is None or lookup_sparse(op.name) is None:
            continue
        ins = list(g.node_inputs[nid])
        if any(stypes[i] != "default" and i not in var_nd for i in ins):
            continue        # a sparse intermediate: only its dense form exists
        fillers[pos] = _filler(lookup_sparse(op.name), g.nodes[nid].params, ins,
                               g.row_ptr[nid], e, var_nd, ctx)
    return fillers


def _filler(kernel, params, ins, first_out, e, var_nd, ctx):
    def fill(vals):
        # the forward that calls this already holds the variables for reading
        inputs = [var_nd[i]._chunk.data if i in var_nd and var_nd[i]._sparse
                  else vals[i] for i in ins]
        if not all(isinstance(v, (np.ndarray, sv.RowSparse, sv.CSR)) for v in inputs):
            return NotImplemented        # device arrays: the kernels are host code
        res = kernel(params, inputs, _Probe(ctx))
        return res if res is NotImplemented else res[e - first_out]
    return fill
