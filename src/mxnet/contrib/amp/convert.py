"""The offline AMP graph pass: copy a float32 Symbol, inserting cast nodes.

Walks the graph in topological order tracking each entry's dtype (data inputs are
float32; parameters float32 unless their ``__dtype__`` says otherwise). Before each
operator node its inputs are cast as its list says: to the target dtype, to
float32, or (widest-type ops) to the widest known input type. A cast is only
inserted where the input's type differs (or is unknown) and is shared: one
``<entry>_amp_cast_<dtype>`` node per (entry, dtype). Widest-type ops whose input
types are unknown get one ``amp_multicast`` node. Node names and the resulting op
sequence follow MXNet 1.9.1's pass.
"""
import numpy as np

from ...base import DTYPE_TO_FLAG, FLAG_TO_DTYPE, MXNetError
from ...operator.registry import get_op

__all__ = ["convert_graph"]


def _is_float(t):
    return t is not None and np.dtype(t).kind == "f"


def _infer_out_types(node, in_types):
    """The node's output dtypes from its (argument) input dtypes; None where unknown."""
    n_out = node.num_outputs()
    try:
        _, outs, _ = node.op.infer_type(node.params, list(in_types[:node.num_args()]))
    except Exception:               # an operator that cannot say: types stay unknown
        return [None] * n_out
    outs = [None if t is None else np.dtype(t) for t in (outs or [])]
    return (outs + [None] * n_out)[:n_out]


def convert_graph(sym, policy, excluded, data_names, cast_optional_params):
    """The converted copy of ``sym`` (see the module docstring)."""
    from ...symbol import Symbol
    from ...symbol.graph import Node, topo_order

    target = policy.target
    f32 = np.dtype(np.float32)
    cast_op, multicast_op = get_op("amp_cast"), get_op("amp_multicast")
    inputs = sym.list_inputs()
    if data_names is None:
        attrs = sym.attr_dict()
        data_names = [n for n in inputs if "__dtype__" not in attrs.get(n, {})]
    data_names = set(data_names)

    new_of = {}          # id(old node) -> new node
    dtype_of = {}        # (id(new node), index) -> dtype or None
    casts = {}           # (id(new node), index, dtype name) -> cast node
    cast_users = {}      # id(cast node) -> number of consumers
    params = []          # new parameter variable nodes

    def cast(entry, dtype):
        node, idx = entry
        key = (id(node), idx, dtype.name)
        made = casts.get(key)
        if made is None:
            out_name = node.output_names()[idx]
            p = cast_op.parse({"dtype": dtype.name})
            made = Node(cast_op, f"{out_name}_amp_cast_{dtype.name}", p,
                        {"dtype": dtype.name}, {}, [entry])
            casts[key] = made
            dtype_of[(id(made), 0)] = dtype
            cast_users[id(made)] = 0
        cast_users[id(made)] += 1
        return (made, 0)

    def cast_to(entries, dtype):
        out = []
        for e in entries:
            t = dtype_of.get((id(e[0]), e[1]))
            if t is None or (_is_float(t) and t != dtype):
                out.append(cast(e, dtype))
            else:
                out.append(e)
        return out

    for old in topo_order(sym._head_nodes()):
        if old.op is None:
            new = old.copy()
            if old.name not in data_names:
                new.attrs = dict(new.attrs)
                new.attrs.setdefault("__dtype__", str(DTYPE_TO_FLAG[f32]))
                params.append(new)
                dt = np.dtype(FLAG_TO_DTYPE[int(new.attrs["__dtype__"])])
            else:
                dt = f32
            new_of[id(old)] = new
            dtype_of[(id(new), 0)] = dt
            continue
        ins = [(new_of[id(n)], i) for n, i in old.inputs]
        n_args = old.num_args()
        args, aux = ins[:n_args], ins[n_args:]
        kind = "fp32" if old.name in excluded else policy.kind(old.op.name, old.given)
        if kind == "lp16":
            args = cast_to(args, target)
        elif kind == "fp32":
            args = cast_to(args, f32)
        elif kind == "widest":
            types = [dtype_of.get((id(n), i)) for n, i in args]
            if any(t is None for t in types):
                mc_in = [e for e, t in zip(args, types) if t is None or _is_float(t)]
                if len(mc_in) > 1:
                    p = multicast_op.parse({"num_outputs": len(mc_in)})
                    mc = Node(multicast_op, f"{old.name}_amp_multicast", p,
                              {"num_outputs": len(mc_in)}, {}, mc_in)
                    for k in range(len(mc_in)):
                        dtype_of[(id(mc), k)] = None
                    pos = iter(range(len(mc_in)))
                    args = [(mc, next(pos)) if (t is None or _is_float(t)) else e
                            for e, t in zip(args, types)]
            else:
                floats = [t for t in types if _is_float(t)]
                if len(set(floats)) > 1:
                    args = cast_to(args, max(floats, key=lambda t: t.itemsize))
        new = Node(old.op, old.name, old.params, dict(old.given), dict(old.attrs), args + aux)
        new_of[id(old)] = new
        in_types = [dtype_of.get((id(n), i)) for n, i in args + aux]
        for k, t in enumerate(_infer_out_types(new, in_types)):
            dtype_of[(id(new), k)] = t

    heads = [(new_of[id(n)], i) for n, i in sym._outputs]
    if cast_optional_params:
        _store_params_in_target(heads, params, casts, cast_users, target)
    return Symbol(heads)


def _store_params_in_target(heads, params, casts, cast_users, target):
    """Parameters whose only consumers are target-dtype casts are stored in the target
    dtype: the casts go and their consumers read the parameter directly."""
    from ...symbol.graph import topo_order
    order = topo_order([n for n, _ in heads])
    users = {}
    for node in order:
        for src, _ in node.inputs:
            users.setdefault(id(src), []).append(node)
    cast_ids = {id(c) for c in casts.values()}
    for var in params:
        consumers = users.get(id(var), [])
        if not consumers or not all(id(c) in cast_ids and c.given.get("dtype") == target.name
                                    for c in consumers):
            continue
        var.attrs["__dtype__"] = str(DTYPE_TO_FLAG[target])
        for c in consumers:
            for node in users.get(id(c), []):
                node.inputs = [(var, 0) if src is c else (src, k) for src, k in node.inputs]
    if any(n is None for n, _ in heads):
        raise MXNetError("AMP conversion lost a graph output")
