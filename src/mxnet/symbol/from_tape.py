"""``mx.autograd.get_symbol(x)``: the recorded computation that produced x, as a Symbol.

Names follow MXNet: operator nodes ``node_<k>``; leaves, counted together in graph
order, ``var<k>`` for marked variables and ``null<k>`` for arrays that were not on
the tape (constants, auxiliary states).
"""
from ..base import MXNetError
from .graph import Node, copy_graph, topo_order
from .symbol import Symbol
from ..tape import Node as TapeNode

__all__ = ["symbol_from_tape"]


def symbol_from_tape(x):
    entry = getattr(x, "_ag", None)
    if entry is None:
        raise MXNetError("autograd.get_symbol: the array was not computed under "
                         "autograd.record() from variables marked with attach_grad()")
    made = {}                  # id(tape node) -> its outputs' graph entries (node, index)
    marked = set()             # ids of the graph Nodes standing for marked variables
    stack = [entry[0]]
    while stack:
        cur = stack[-1]
        if id(cur) in made:
            stack.pop()
            continue
        if not isinstance(cur, TapeNode):           # a marked variable
            node = Node(None, "")
            made[id(cur)] = [(node, 0)]
            marked.add(id(node))
            stack.pop()
            continue
        pending = [p[0] for p in cur.parents if p is not None and id(p[0]) not in made]
        if pending:
            stack.extend(pending)
            continue
        stack.pop()
        inputs = [made[id(par[0])][par[1]] if par is not None else (Node(None, ""), 0)
                  for par in cur.parents]
        graph = getattr(cur.op, "graph", None)     # a hybridized block's run (CachedOp)
        if graph is not None:
            made[id(cur)] = _cached_graph_entries(cur.op, graph, inputs)
            continue
        if cur.op.params is None:
            raise MXNetError("autograd.get_symbol: the graph contains an autograd.Function, "
                             "which has no symbolic form")
        inputs += [(Node(None, ""), 0) for _ in cur.aux or ()]
        given = dict(getattr(cur.p, "given", {}) or {})
        node = Node(cur.op, "", cur.p, given, {}, inputs)
        made[id(cur)] = [(node, i) for i in range(node.num_outputs())]
    head = made[id(entry[0])][entry[1]]
    n_leaf = n_op = 0
    for node in topo_order([head[0]]):
        if node.op is None:
            node.name = f"{'var' if id(node) in marked else 'null'}{n_leaf}"
            n_leaf += 1
        else:
            node.name = f"node_{n_op}"
            n_op += 1
    return Symbol([head])


def _cached_graph_entries(op, graph, inputs):
    """The outputs of one CachedOp run: its operators spliced in when MXNet would have
    recorded them one by one (see ``CachedOp.inlined``), else one ``_CachedOp`` node.
    ``inputs`` stand for the graph's arguments; its auxiliary states were not on the
    tape and become fresh leaves."""
    sym = graph.symbol
    aux = [(Node(None, ""), 0) for _ in sym.list_auxiliary_states()]
    if not graph.inlined():
        node = Node(op, "", None, {}, {}, inputs + aux)
        return [(node, i) for i in range(len(sym.list_outputs()))]
    by_name = dict(zip(sym.list_arguments(), inputs))
    by_name.update(zip(sym.list_auxiliary_states(), aux))
    heads = [h for h, _ in sym._outputs]
    replace = {id(n): by_name[n.name] for n in topo_order(heads) if n.op is None}
    return copy_graph(list(sym._outputs), replace)
