"""``mx.autograd.get_symbol(x)``: the recorded computation that produced x, as a Symbol.

Names follow MXNet: operator nodes ``node_<k>``; leaves, counted together in graph
order, ``var<k>`` for marked variables and ``null<k>`` for arrays that were not on
the tape (constants, auxiliary states).
"""
from ..base import MXNetError
from .graph import Node, topo_order
from .symbol import Symbol
from ..tape import Node as TapeNode

__all__ = ["symbol_from_tape"]


def symbol_from_tape(x):
    entry = getattr(x, "_ag", None)
    if entry is None:
        raise MXNetError("autograd.get_symbol: the array was not computed under "
                         "autograd.record() from variables marked with attach_grad()")
    made = {}                  # id(tape node) -> graph Node
    marked = set()             # ids of the graph Nodes standing for marked variables
    stack = [entry[0]]
    while stack:
        cur = stack[-1]
        if id(cur) in made:
            stack.pop()
            continue
        if not isinstance(cur, TapeNode):           # a marked variable
            node = made[id(cur)] = Node(None, "")
            marked.add(id(node))
            stack.pop()
            continue
        pending = [p[0] for p in cur.parents if p is not None and id(p[0]) not in made]
        if pending:
            stack.extend(pending)
            continue
        stack.pop()
        if cur.op.params is None:
            raise MXNetError("autograd.get_symbol: the graph contains an autograd.Function, "
                             "which has no symbolic form")
        inputs = [(made[id(par[0])], par[1]) if par is not None else (Node(None, ""), 0)
                  for par in cur.parents]
        inputs += [(Node(None, ""), 0) for _ in cur.aux or ()]
        given = dict(getattr(cur.p, "given", {}) or {})
        made[id(cur)] = Node(cur.op, "", cur.p, given, {}, inputs)
    head = made[id(entry[0])]
    n_leaf = n_op = 0
    for node in topo_order([head]):
        if node.op is None:
            node.name = f"{'var' if id(node) in marked else 'null'}{n_leaf}"
            n_leaf += 1
        else:
            node.name = f"node_{n_op}"
            n_op += 1
    return Symbol([(head, entry[1])])
