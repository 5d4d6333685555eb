"""Common-subexpression elimination for bound graphs (MXNET_ELIMINATE_COMMON_EXPR).

Two operator nodes that apply the same operator, with the same parameters and
attributes, to the same input entries compute the same values: the executor keeps the
first and points every reader of the second at it. Operators whose result is not a
function of their inputs alone are never merged: those drawing random numbers or
holding state (a 'random' or 'temp' resource, CustomOp), as in MXNet, where any
resource request rules a node out. When merging makes two of the graph's outputs the
same entry, the later one reads it through a ``_copy`` node, so every output keeps its
own array.

The pass returns a new Symbol; the caller's symbol and its nodes are left as they were.
"""
from ..base import env_int
from ..operator.registry import get_op
from .graph import topo_order

__all__ = ["eliminate_common_expr", "enabled"]

# Operators whose outputs depend on more than their inputs and attributes: Custom
# (state in Python), the control-flow nodes (their subgraphs, which attributes omit).
_STATEFUL = frozenset({"Custom", "_foreach", "_while_loop", "_cond"})


def enabled():
    """MXNET_ELIMINATE_COMMON_EXPR (default 1, as in MXNet 1.9.1)."""
    return env_int("MXNET_ELIMINATE_COMMON_EXPR", 1) != 0


def _mergeable(node):
    op = node.op
    # Nodes without inputs (creation ops) are left alone, as in MXNet.
    return (op is not None and node.inputs and not op.resources
            and op.name not in _STATEFUL)


def _signature(node, inputs):
    attrs = tuple(sorted(node.all_attrs().items()))
    return node.op.name, attrs, tuple((id(n), k) for n, k in inputs)


def eliminate_common_expr(symbol):
    """``symbol`` with duplicate computations merged (see the module docstring); the
    symbol itself when nothing merges."""
    # the symbol's own classes (the executor layer does not import the front end)
    Symbol, Node = type(symbol), None
    heads = list(symbol._outputs)
    mapping, first, merged = {}, {}, False
    for node in topo_order([n for n, _ in heads]):
        if node.op is None:
            mapping[id(node)] = node
            continue
        inputs = [(mapping[id(n)], k) for n, k in node.inputs]
        key = _signature(node, inputs) if _mergeable(node) else None
        if key is not None and key in first:
            mapping[id(node)] = first[key]
            merged = True
            continue
        new = node
        if any(a is not b for (a, _), (b, _) in zip(inputs, node.inputs)):
            new = node.copy()
            new.inputs = inputs
        mapping[id(node)] = new
        if key is not None:
            first[key] = new
    if not merged:
        return symbol
    outputs, seen_new, seen_old, copy_op = [], set(), set(), get_op("_copy")
    for n, k in heads:
        entry = (mapping[id(n)], k)
        new_id, old_id = (id(entry[0]), k), (id(n), k)
        if new_id in seen_new and old_id not in seen_old:   # made equal by merging
            Node = Node or type(entry[0])
            copy = Node(copy_op, f"{entry[0].name}_{k}_copy", copy_op._default_params(),
                        inputs=[entry])
            entry = (copy, 0)
        seen_new.add(new_id)
        seen_old.add(old_id)
        outputs.append(entry)
    return Symbol(outputs)
