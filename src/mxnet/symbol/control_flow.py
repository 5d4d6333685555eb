"""Symbolic control flow of ``mx.sym.contrib``: foreach, while_loop and cond.

Each calls the user's Python functions once, on placeholder variables, inside an
``AttrScope`` that marks every node they create with ``__subgraph_name__`` (``foreach0``,
``while_loop_cond0``, ``foreach0$foreach0`` for a loop inside a loop, ...; counted in
``AttrScope._subgraph_names``). The marked nodes
reachable from the functions' results form the subgraph; anything else the results
reach is cut off and becomes an input of the subgraph: an outside variable stays
itself, an outside operator output becomes a variable named after that output
(``_plus0_output``). A result that is a variable, comes from outside, or repeats an
earlier result is passed through a copy (``identity0``) so every subgraph output is
an operator output of its own. The subgraphs then go into one ``_foreach`` /
``_while_loop`` / ``_cond`` node (operator/control_flow.py) whose inputs feed them.

Results are laid out as MXNet 1.9.1 lays them out: a single Symbol where the caller
gave or returned one, else (nested) lists.
"""
from ..attribute import AttrScope
from ..base import MXNetError
from ..ndarray.control_flow import flatten, iteration_limit, regroup
from ..operator.control_flow import with_subgraphs
from ..operator.registry import get_op
from .create import Variable, create_symbol
from .graph import Node, topo_order
from .symbol import Symbol

__all__ = ["foreach", "while_loop", "cond"]


class SubgraphError(MXNetError, AssertionError):
    """A control-flow subgraph that cannot be built (MXNet raises AssertionError)."""


# ------------------------------------------------------------------ structures
def _single_outputs(obj):
    """obj with every multi-output Symbol replaced by the list of its outputs."""
    if isinstance(obj, Symbol) and len(obj._outputs) != 1:
        return [Symbol([e]) for e in obj._outputs]
    if isinstance(obj, (list, tuple)):
        return [_single_outputs(v) for v in obj]
    return obj


def _flatten(obj, what):
    return flatten(_single_outputs(obj), what, lambda v: isinstance(v, Symbol), "a Symbol")


def _scope_name(key):
    """The next subgraph name for ``key``: ``key`` + how many came before; inside
    another subgraph, whose name prefixes it (``foreach0$foreach0``)."""
    outer = AttrScope.current.get(None).get("__subgraph_name__")
    if outer:
        key = f"{outer}${key}"
    n = AttrScope._subgraph_names[key]
    AttrScope._subgraph_names[key] += 1
    return f"{key}{n}"


def _placeholder(sym):
    """The variable standing for ``sym`` inside a subgraph: ``<node name>-<output>``."""
    node, idx = sym._outputs[0]
    return Variable(f"{node.name}-{idx}")


def _call(fn, grouped, fmt):
    """fn(*loop_vars) as while_loop calls its functions (one argument for a single
    loop variable)."""
    return fn(grouped) if fmt == 0 else fn(*grouped)


# ------------------------------------------------------------------ the cut
def _outputs_of_scope(heads, scope):
    """The heads' entries, each passed through a copy unless it is an operator output
    made in ``scope`` that no earlier head repeats."""
    seen, entries = set(), []
    copy = get_op("_copy")
    for sym in heads:
        entry = sym._outputs[0]
        node, idx = entry
        key = (id(node), idx)
        if node.op is None or node.attrs.get("__subgraph_name__") != scope or key in seen:
            with AttrScope(__subgraph_name__=scope):
                entry = create_symbol(copy, [Symbol([entry])], hint="identity")._outputs[0]
            key = (id(entry[0]), 0)
        seen.add(key)
        entries.append(entry)
    return entries


def _inside_order(entries, inside):
    """The ``inside`` nodes the entries reach through inside nodes, inputs first."""
    order, seen = [], set()
    for root, _ in entries:
        if not inside(root) or id(root) in seen:
            continue
        seen.add(id(root))
        stack = [(root, iter(root.inputs))]
        while stack:
            node, pending = stack[-1]
            for src, _ in pending:
                if inside(src) and id(src) not in seen:
                    seen.add(id(src))
                    stack.append((src, iter(src.inputs)))
                    break
            else:
                stack.pop()
                order.append(node)
    return order


def _cut(heads, scope, placeholders=()):
    """(subgraph Symbol, its input variable nodes in ``list_inputs()`` order, the
    outside entry each input stands for: None for the ``placeholders`` (Symbols))."""
    placeholders = {id(v._outputs[0][0]) for v in placeholders}
    entries = _outputs_of_scope(heads, scope)

    def inside(node):
        return node.op is not None and node.attrs.get("__subgraph_name__") == scope
    copies, cut_vars, outside = {}, {}, {}

    def convert(entry):
        node, idx = entry
        if node.op is None:
            if id(node) not in placeholders:
                outside[id(node)] = (node, 0)
            return entry
        if inside(node):
            return (copies[id(node)], idx)
        key = (id(node), idx)
        var = cut_vars.get(key)
        if var is None:
            var = cut_vars[key] = Node(None, node.output_names()[idx])
            outside[id(var)] = entry
        return (var, 0)
    for node in _inside_order(entries, inside):
        new = node.copy()
        new.inputs = [convert(e) for e in node.inputs]
        copies[id(node)] = new
    sub = Symbol([convert(e) for e in entries])
    inputs = [n for n in topo_order(sub._head_nodes()) if n.op is None]
    names = [n.name for n in inputs]
    if len(set(names)) != len(names):
        raise SubgraphError(f"The inputs of the subgraph don't have unique names: {names}")
    return sub, inputs, [outside.get(id(n)) for n in inputs]


def _node(op_name, inputs, params, subgraphs):
    """The control-flow node over ``inputs`` (Symbols) holding ``subgraphs``; its
    output Symbols."""
    op = get_op(op_name)
    given = {k: str(list(v)) if isinstance(v, (list, tuple)) else str(v)
             for k, v in params.items()}
    p = with_subgraphs(op, op.parse(given), subgraphs)
    sym = create_symbol(op, list(inputs), params=p, given=given, hint=op_name)
    node = sym._outputs[0][0] if sym._outputs else None
    return [Symbol([(node, i)]) for i in range(p.num_outputs)]


def _union(subgraph_inputs, placeholder_index):
    """The node inputs feeding several subgraphs, each input once, in order of first
    use: (sources, per subgraph the node input of each of its inputs). A source is
    the outside entry an input stands for, or ``placeholder_index(node)`` (an int)
    for a placeholder variable."""
    sources, index, locs = [], {}, []
    for nodes, outside in subgraph_inputs:
        mine = []
        for node, entry in zip(nodes, outside):
            source = entry if entry is not None else placeholder_index(node)
            key = (id(entry[0]), entry[1]) if entry is not None else source
            if key not in index:
                index[key] = len(sources)
                sources.append(source)
            mine.append(index[key])
        locs.append(mine)
    return sources, locs


# ------------------------------------------------------------------ the functions
def foreach(body, data, init_states, name="foreach"):
    """Run ``body(data_slice, states) -> (outputs, new_states)`` over axis 0 of
    ``data`` as one graph node (``_foreach``). ``data`` and ``init_states`` are
    Symbols or nested lists of them; returns (the step outputs stacked along a new
    axis 0, the final states), laid out as the body's outputs and ``init_states``."""
    flat_data, data_fmt = _flatten(data, "foreach: data")
    flat_states, state_fmt = _flatten(init_states, "foreach: init_states")
    scope = _scope_name(name)
    with AttrScope(__subgraph_name__=scope):
        data_vars = [_placeholder(s) for s in flat_data]
        state_vars = [_placeholder(s) for s in flat_states]
        res = body(regroup(data_vars, data_fmt), regroup(state_vars, state_fmt))
        if not isinstance(res, (list, tuple)) or len(res) != 2:
            raise MXNetError("foreach: body must return (outputs, new_states)")
        flat_out, out_fmt = _flatten([] if res[0] is None else res[0],
                                     "foreach: body outputs")
        flat_new, _ = _flatten(res[1], "foreach: body states")
    if len(flat_new) != len(flat_states):
        raise MXNetError(f"foreach: body returned {len(flat_new)} states, init_states "
                         f"has {len(flat_states)}")
    sub, inputs, outside = _cut(flat_out + flat_new, scope, data_vars + state_vars)
    where = {id(n): i for i, n in enumerate(inputs)}

    def locs(placeholders, what):
        nodes = [v._outputs[0][0] for v in placeholders]
        if any(id(n) not in where for n in nodes):
            raise SubgraphError(f"the {what} arrays have to be used in the loop body")
        return [where[id(n)] for n in nodes]
    data_locs = locs(data_vars, "data")
    state_locs = locs(state_vars, "state")
    taken = set(data_locs) | set(state_locs)
    remain_locs = [i for i in range(len(inputs)) if i not in taken]
    node_inputs = flat_data + flat_states + [Symbol([outside[i]]) for i in remain_locs]
    n_out = len(flat_out)
    outs = _node("_foreach", node_inputs, {
        "num_args": len(node_inputs) + 1, "num_outputs": n_out + len(flat_states),
        "num_out_data": n_out, "in_state_locs": state_locs, "in_data_locs": data_locs,
        "remain_locs": remain_locs}, [sub])
    return regroup(outs[:n_out], out_fmt), regroup(outs[n_out:], state_fmt)


def while_loop(cond, func, loop_vars, max_iterations=None, name="while_loop"):
    """Run ``func(*loop_vars) -> (outputs, new_loop_vars)`` while ``cond(*loop_vars)``
    holds, at most ``max_iterations`` times, as one graph node (``_while_loop``).
    Returns (the step outputs stacked into ``max_iterations`` rows, zero after the
    last step; the final loop variables laid out as ``loop_vars``)."""
    max_iterations = iteration_limit(max_iterations)
    flat_vars, var_fmt = _flatten(loop_vars, "while_loop: loop_vars")
    placeholders = {}

    def make_vars():
        made = [_placeholder(s) for s in flat_vars]
        for k, v in enumerate(made):
            placeholders[id(v._outputs[0][0])] = k
        return made
    cond_scope = _scope_name(name + "_cond")
    with AttrScope(__subgraph_name__=cond_scope):
        cond_vars = make_vars()
        pred, _ = _flatten(_call(cond, regroup(cond_vars, var_fmt), var_fmt),
                           "while_loop: cond output")
    if len(pred) != 1:
        raise MXNetError(f"while_loop: cond must return one Symbol, got {len(pred)}")
    cond_g, cond_inputs, cond_outside = _cut(pred, cond_scope, cond_vars)
    func_scope = _scope_name(name + "_func")
    with AttrScope(__subgraph_name__=func_scope):
        func_vars = make_vars()
        res = _call(func, regroup(func_vars, var_fmt), var_fmt)
        if not isinstance(res, (list, tuple)) or len(res) != 2:
            raise MXNetError("while_loop: func must return (outputs, new_loop_vars)")
        flat_out, out_fmt = _flatten([] if res[0] is None else res[0],
                                     "while_loop: func outputs")
        flat_new, _ = _flatten(res[1], "while_loop: func's new loop_vars")
    if len(flat_new) != len(flat_vars):
        raise ValueError(f"The number of loop_vars should be consistent during the "
                         f"loop: func returned {len(flat_new)}, loop_vars has "
                         f"{len(flat_vars)}")
    func_g, func_inputs, func_outside = _cut(flat_out + flat_new, func_scope, func_vars)
    where = {id(n): i for i, n in enumerate(func_inputs)}
    var_locs = []
    for k, v in enumerate(func_vars):
        pos = where.get(id(v._outputs[0][0]))
        if pos is None:
            raise ValueError(f"The {k}-th loop_var doesn't involve into the computation")
        var_locs.append(pos)
    sources, (cond_locs, func_locs) = _union(
        [(cond_inputs, cond_outside), (func_inputs, func_outside)],
        lambda node: placeholders[id(node)])
    node_inputs = [flat_vars[src] if isinstance(src, int) else Symbol([src])
                   for src in sources]
    n_out = len(flat_out)
    outs = _node("_while_loop", node_inputs, {
        "num_args": len(node_inputs) + 2, "num_outputs": n_out + len(flat_vars),
        "num_out_data": n_out, "max_iterations": max_iterations,
        "cond_input_locs": cond_locs, "func_input_locs": func_locs,
        "func_var_locs": var_locs}, [cond_g, func_g])
    return regroup(outs[:n_out], out_fmt), regroup(outs[n_out:], var_fmt)


def cond(pred, then_func, else_func, name="cond"):
    """``then_func()`` if the scalar ``pred`` is non-zero, else ``else_func()``, as one
    graph node (``_cond``); both functions must return as many Symbols. Returns the
    outputs laid out as ``then_func``'s."""
    flat_pred, _ = _flatten(pred, "cond: pred")
    if len(flat_pred) != 1:
        raise MXNetError(f"cond: pred must be one Symbol, got {len(flat_pred)}")
    graphs, formats = [], []
    for suffix, fn in (("_pred", None), ("_then", then_func), ("_else", else_func)):
        scope = _scope_name(name + suffix)
        if fn is None:
            heads = flat_pred
        else:
            with AttrScope(__subgraph_name__=scope):
                heads, fmt = _flatten(fn(), f"cond: {suffix[1:]}_func output")
            formats.append(fmt)
        graphs.append(_cut(heads, scope))
    n_then, n_else = (len(g[0]._outputs) for g in graphs[1:])
    if n_then != n_else:
        raise ValueError(f"cond: then_func returns {n_then} outputs and else_func "
                         f"{n_else}; they must return as many")
    sources, locs = _union([(g[1], g[2]) for g in graphs], None)
    node_inputs = [Symbol([src]) for src in sources]
    outs = _node("_cond", node_inputs, {
        "num_args": len(node_inputs) + 3, "num_outputs": n_then,
        "cond_input_locs": locs[0], "then_input_locs": locs[1],
        "else_input_locs": locs[2]}, [g[0] for g in graphs])
    return regroup(outs, formats[0])
