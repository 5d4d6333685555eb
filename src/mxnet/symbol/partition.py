"""Graph partitioning by operator names: MXNet 1.9.1's ``default`` and ``default_v2``
subgraph backends, whose operator names are set through its C API.

``_LIB.MXSetSubgraphPropertyOpNames(backend, n, names)`` (and ``...V2``) name the
operators a backend groups; ``MXRemoveSubgraphPropertyOpNames[V2]`` forget them;
``MXBuildSubgraphByOpNames(symbol handle, backend, n, names, out)`` partitions at once.
The first set applies to executors bound while ``MXNET_SUBGRAPH_BACKEND`` names the
backend, the V2 set to ``Symbol.optimize_for`` and ``hybridize(backend=...)``.

A partition groups the selected operator nodes into subgraphs, each replaced by one
``_CachedOp`` node (operator/subgraph_ops.py) computing exactly what its nodes did.
Nodes join the group of a selected node they read from, in graph order, unless that
would make a cycle (the group feeding itself through outside nodes); the rest start
groups of their own.
"""
import ctypes
import os

from ..base import MXNetError, _c_out, emulate_c_api, py_str
from ..operator.registry import get_op
from .graph import Node, topo_order
from .symbol import Symbol

__all__ = ["partition", "op_names_for", "partition_for_bind"]

BACKENDS = ("default", "default_v2")
_OP_NAMES = {}          # (backend, api version 1 or 2) -> set of operator names


def _value(arg):
    return arg.value if isinstance(arg, (ctypes.c_uint, ctypes.c_char_p, ctypes.c_void_p,
                                         ctypes.c_int)) else arg


def _names(n, names):
    return {py_str(names[i]) for i in range(int(_value(n)))}


def _backend(name):
    name = py_str(_value(name))
    if name not in BACKENDS:
        raise MXNetError(f"SubgraphProperty {name} is not found; pymxnet partitions by "
                         f"operator names for {', '.join(BACKENDS)}")
    return name


def _setter(version):
    def set_names(backend, n, names):
        _OP_NAMES[(_backend(backend), version)] = _names(n, names)
        return 0
    return set_names


def _remover(version):
    def remove(backend):
        _OP_NAMES.pop((_backend(backend), version), None)
        return 0
    return remove


emulate_c_api("MXSetSubgraphPropertyOpNames")(_setter(1))
emulate_c_api("MXSetSubgraphPropertyOpNamesV2")(_setter(2))
emulate_c_api("MXRemoveSubgraphPropertyOpNames")(_remover(1))
emulate_c_api("MXRemoveSubgraphPropertyOpNamesV2")(_remover(2))


@emulate_c_api("MXBuildSubgraphByOpNames")
def _build_by_op_names(handle, backend, n, names, out):
    _backend(backend)
    part = partition(Symbol.from_handle(handle), _names(n, names))
    _c_out(out).value = part.handle.value
    return 0


def op_names_for(backend, version):
    """The operator names set for ``backend`` through the API of ``version`` (1 or 2),
    else through the other one; None when neither set any."""
    names = _OP_NAMES.get((backend, version))
    return names if names is not None else _OP_NAMES.get((backend, 3 - version))


def partition_for_bind(symbol):
    """``symbol`` partitioned for the backend MXNET_SUBGRAPH_BACKEND names, when
    operator names are set for it (else itself)."""
    backend = os.environ.get("MXNET_SUBGRAPH_BACKEND")
    names = _OP_NAMES.get((backend, 1)) if backend in BACKENDS else None
    return partition(symbol, names) if names is not None else symbol


# ------------------------------------------------------------------ the partition
def _selected(node, names):
    return node.op is not None and (node.op.name in names or
                                    any(a in names for a in node.op.aliases))


def _groups(order, names):
    """Group id per selected node (id of the node), and the groups' node lists."""
    group, members, depends = {}, [], {}
    for node in order:
        ups = set()
        for src, _ in node.inputs:
            ups |= depends.get(id(src), set())
            if id(src) in group:
                ups.add(group[id(src)])
        depends[id(node)] = ups
        if not _selected(node, names):
            continue
        chosen = None
        for src, _ in node.inputs:
            g = group.get(id(src))
            if g is None:
                continue
            # joining g makes a cycle when another input reaches back to g
            if all(group.get(id(o)) == g or g not in depends.get(id(o), set())
                   for o, _ in node.inputs):
                chosen = g
                break
        if chosen is None:
            chosen = len(members)
            members.append([])
        group[id(node)] = chosen
        members[chosen].append(node)
    return group, members


def partition(symbol, names):
    """``symbol`` with each group of operators named in ``names`` replaced by a
    ``_CachedOp`` node holding that group as its subgraph."""
    order = topo_order(symbol._head_nodes())
    group, members = _groups(order, set(names))
    if not members:
        return symbol.__copy__()
    heads = {(id(n), k) for n, k in symbol._outputs}
    # every entry a group's nodes make that something outside the group reads
    used_outside = set()
    for node in order:
        for src, k in node.inputs:
            if id(src) in group and group.get(id(node)) != group[id(src)]:
                used_outside.add((id(src), k))
    made = {}           # id(old node) -> new node, or (cached node, output map)
    op = get_op("_CachedOp")

    def outer(entry):
        node, k = entry
        got = made[id(node)]
        if isinstance(got, tuple):
            cached, index = got
            return (cached, index[(id(node), k)])
        return (got, k)
    for unit in _unit_order(symbol, group, members):
        if isinstance(unit, int):           # a group: one _CachedOp node
            nodes = members[unit]
            sub, inputs, outputs = _subgraph(nodes, used_outside, heads)
            p = op.parse({"subgraph": sub.tojson()})
            cached = Node(op, _cached_name(), p, {"subgraph": p.given["subgraph"]}, {},
                          [outer(e) for e in inputs])
            index = {key: i for i, key in enumerate(outputs)}
            for member in nodes:
                made[id(member)] = (cached, index)
        elif unit.op is None:
            made[id(unit)] = unit
        else:
            new = unit.copy()
            new.inputs = [outer(e) for e in unit.inputs]
            made[id(unit)] = new
    return Symbol([outer(e) for e in symbol._outputs])


def _unit_order(symbol, group, members):
    """The graph's nodes and groups (a group as its id), inputs first: a group comes
    after everything its nodes read from outside it."""
    def unit(node):
        g = group.get(id(node))
        return node if g is None else g

    def key(u):
        return ("g", u) if isinstance(u, int) else ("n", id(u))

    def deps(u):
        if isinstance(u, int):
            return [unit(src) for m in members[u] for src, _ in m.inputs
                    if group.get(id(src)) != u]
        return [unit(src) for src, _ in u.inputs]
    order, seen = [], set()
    for head, _ in symbol._outputs:
        root = unit(head)
        if key(root) in seen:
            continue
        seen.add(key(root))
        stack = [(root, iter(deps(root)))]
        while stack:
            u, pending = stack[-1]
            for d in pending:
                if key(d) not in seen:
                    seen.add(key(d))
                    stack.append((d, iter(deps(d))))
                    break
            else:
                stack.pop()
                order.append(u)
    return order


def _cached_name():
    from ..name import NameManager
    return NameManager.current.get(None, "_cachedop")


def _subgraph(nodes, used_outside, heads):
    """(the group as a Symbol, the outside entries feeding its inputs in
    ``list_inputs()`` order, the keys (id(node), output) of its outputs in order)."""
    inside = {id(n) for n in nodes}
    copies, feeds = {}, {}

    def convert(entry):
        node, k = entry
        if id(node) in inside:
            return (copies[id(node)], k)
        key = (id(node), k)
        var = feeds.get(key)
        if var is None:
            name = node.name if node.op is None else node.output_names()[k]
            var = feeds[key] = (Node(None, name), entry)
        return (var[0], 0)
    for node in nodes:                  # (in graph order: inputs first)
        new = node.copy()
        new.inputs = [convert(e) for e in node.inputs]
        copies[id(node)] = new
    outputs = [(id(n), k) for n in nodes for k in range(n.num_outputs())
               if (id(n), k) in used_outside or (id(n), k) in heads]
    sub = Symbol([(copies[key[0]], key[1]) for key in outputs])
    by_var = {id(var): entry for var, entry in feeds.values()}
    inputs = [by_var[id(n)] for n in topo_order(sub._head_nodes()) if n.op is None]
    return sub, inputs, outputs
