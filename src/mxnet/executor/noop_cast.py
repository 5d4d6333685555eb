"""Bypass the AMP casts that change nothing: amp_cast / amp_multicast outputs whose
inferred dtype is their input's.

AMP (contrib.amp) puts an amp_cast in front of every input of an operator it runs in
low precision, because which inputs already are in that precision is known only once
the bound graph's types are inferred. MXNet's memory planner lets such a cast's output
share its input's memory (amp_cast is an in-place identity there), so it costs nothing.
Here every planned entry has its own buffer, and a convolution keeps its input for
backward: for ResNet-50 in bfloat16 each convolution input was held twice (the
activation, read by its own backward, and the identical cast), ~16 MB per sample of
~67, plus a copy kernel each way per cast. The pass points every reader of a no-op
cast at the cast's input instead; the gradient of such a cast is the identity as well.
Casts that are graph outputs stay (the output arrays and names are the caller's).

The pass returns a new Symbol; the caller's symbol and its nodes are left as they were.
"""
from .graph import topo_order

__all__ = ["bypass_noop_casts"]

_CASTS = ("amp_cast", "amp_multicast")


def _noop_outputs(graph):
    """{(id(node), k)} of the cast outputs that some node reads and whose dtype is
    their input's (``graph``: types inferred)."""
    heads = set(graph.heads)
    noop = set()
    for nid, node in enumerate(graph.nodes):
        if node.op is None or node.op.name not in _CASTS:
            continue
        ins = graph.node_inputs[nid]
        for k in range(node.num_outputs()):
            e = graph.entry(nid, k)
            src = ins[0] if node.op.name == "amp_cast" else ins[k]
            same = graph.dtypes[e] == graph.dtypes[src] and \
                graph.shapes[e] == graph.shapes[src]
            # read as an argument only: a variable in an auxiliary-state slot would
            # turn from an argument of the graph into an auxiliary state
            as_args = all(j < graph.num_args[u] for u, j in graph.users[e])
            if same and graph.users[e] and as_args and e not in heads:
                noop.add((id(node), k))
    return noop


def bypass_noop_casts(symbol, graph):
    """``symbol`` with the readers of no-op casts reading the casts' inputs (see the
    module docstring); ``graph`` is ``Graph(symbol)`` with shapes and dtypes inferred.
    Returns the symbol itself when no cast is a no-op."""
    noop = _noop_outputs(graph)
    if not noop:
        return symbol
    mapping, alias = {}, {}

    def resolve(n, k):
        return alias.get((id(n), k)) or (mapping[id(n)], k)

    for node in topo_order([n for n, _ in symbol._outputs]):
        if node.op is None:
            mapping[id(node)] = node
            continue
        inputs = [resolve(n, k) for n, k in node.inputs]
        for k in range(node.num_outputs()):
            if (id(node), k) in noop:
                alias[(id(node), k)] = inputs[0 if node.op.name == "amp_cast" else k]
        new = node
        if any(a is not b or i != j for (a, i), (b, j) in zip(inputs, node.inputs)):
            new = node.copy()
            new.inputs = inputs
        mapping[id(node)] = new
    out = type(symbol)([resolve(n, k) for n, k in symbol._outputs])
    if out.list_arguments() != symbol.list_arguments() or \
            out.list_auxiliary_states() != symbol.list_auxiliary_states():
        return symbol       # the bound arrays follow the symbol's own lists
    return out
