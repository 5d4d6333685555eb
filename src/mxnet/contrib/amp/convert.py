"""The offline AMP graph pass: copy a float32 Symbol, inserting cast nodes.

Walks the graph in topological order tracking each entry's dtype (data inputs are
float32; parameters float32 unless their ``__dtype__`` says otherwise, -1 being
unknown). Before each
operator node its inputs are cast as its list says: to the target dtype, to
float32, or (widest-type ops) to the widest known input type. A cast is only
inserted where the input's type differs (or is unknown) and is shared: one
``<entry>_amp_cast_<dtype>`` node per (entry, dtype). Widest-type ops whose input
types are unknown get one ``amp_multicast`` node. Node names and the resulting op
sequence follow MXNet 1.9.1's pass.
"""
import numpy as np

from ...base import DTYPE_TO_FLAG, FLAG_TO_DTYPE, is_float_dtype
from ...operator.registry import get_op

__all__ = ["convert_graph"]


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
        return (made, 0)

    def cast_to(entries, dtype):
        out = []
        for e in entries:
            t = dtype_of.get((id(e[0]), e[1]))
            if t is None or (is_float_dtype(t) and t != dtype):
                out.append(cast(e, dtype))
            else:
                out.append(e)
        return out

    for old in topo_order(sym._head_nodes()):
        if old.op is None:
            new = old.copy()
            if old.name not in data_names:
                new.attrs = dict(new.attrs)
                params.append(new)
                # an untyped parameter is float32 in the float32 graph being converted;
                # its stored __dtype__ is decided by inference afterwards
                # (an explicit __dtype__ of -1 means unknown)
                dt = _var_dtype(new) if "__dtype__" in new.attrs else f32
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
                mc_in = [e for e, t in zip(args, types) if t is None or is_float_dtype(t)]
                if len(mc_in) > 1:
                    p = multicast_op.parse({"num_outputs": len(mc_in)})
                    first = mc_in[0][0].output_names()[mc_in[0][1]]
                    mc = Node(multicast_op, f"{first}_amp_multicast", p,
                              {"num_outputs": len(mc_in)}, {}, mc_in)
                    for k in range(len(mc_in)):
                        dtype_of[(id(mc), k)] = None
                    pos = iter(range(len(mc_in)))
                    args = [(mc, next(pos)) if (t is None or is_float_dtype(t)) else e
                            for e, t in zip(args, types)]
            else:
                floats = [t for t in types if is_float_dtype(t)]
                if len(set(floats)) > 1:
                    args = cast_to(args, max(floats, key=lambda t: t.itemsize))
        new = Node(old.op, old.name, old.params, dict(old.given), dict(old.attrs), args + aux)
        new_of[id(old)] = new
        in_types = [dtype_of.get((id(n), i)) for n, i in args + aux]
        for k, t in enumerate(_infer_out_types(new, in_types)):
            dtype_of[(id(new), k)] = t

    # graph outputs not known to be float32 are cast back to it (as MXNet does)
    heads = [(new_of[id(n)], i) for n, i in sym._outputs]
    heads = [e if dtype_of.get((id(e[0]), e[1])) == f32 or
             (dtype_of.get((id(e[0]), e[1])) is not None and
              not is_float_dtype(dtype_of[(id(e[0]), e[1])])) else cast(e, f32)
             for e in heads]
    _fix_param_dtypes(Symbol(heads), params, data_names)
    if cast_optional_params:
        _store_params_in_target(heads, params, casts, target)
    return Symbol(heads)


def _fix_param_dtypes(converted, params, data_names):
    """Every parameter gets a ``__dtype__``: the one it had, else the type the
    converted graph infers for it from float32 data (a parameter read by an op that
    now runs in float16 becomes float16), else float32."""
    untyped = [v for v in params if _var_dtype(v) is None]
    if not untyped:
        return
    known = {n: "float32" for n in converted.list_inputs() if n in data_names}
    try:
        arg_t, _, aux_t = converted.infer_type_partial(**known)
    except Exception:            # inference fails on this graph: keep float32
        arg_t, aux_t = None, None
    inferred = {}
    if arg_t is not None:
        inferred.update(zip(converted.list_arguments(), arg_t))
        inferred.update(zip(converted.list_auxiliary_states(), aux_t))
    for var in untyped:
        t = inferred.get(var.name)
        var.attrs["__dtype__"] = str(DTYPE_TO_FLAG[np.dtype(t) if t is not None else
                                                   np.dtype(np.float32)])


def _var_dtype(node):
    code = node.attrs.get("__dtype__")
    if code is None or int(code) < 0:
        return None
    return np.dtype(FLAG_TO_DTYPE[int(code)])


def _wants_target(consumer, target):
    """Would this consumer of a parameter read it in the target dtype anyway? An
    amp_cast to the target does; so does an amp_multicast of variables one of which
    is already stored in the target dtype."""
    name = consumer.op.name if consumer.op is not None else None
    if name == "amp_cast":
        return consumer.params.dtype == target.name
    if name == "amp_multicast":
        srcs = [src for src, _ in consumer.inputs]
        return all(src.op is None for src in srcs) and \
            any(_var_dtype(src) == target for src in srcs)
    return False


def _store_params_in_target(heads, params, casts, target):
    """Parameters whose every consumer reads them in the target dtype are stored in
    it; the casts this pass inserted after them go and their consumers read the
    parameter directly (casts already in the source graph stay, now no-ops)."""
    from ...symbol.graph import topo_order
    order = topo_order([n for n, _ in heads])
    users = {}
    for node in order:
        for src, _ in node.inputs:
            users.setdefault(id(src), []).append(node)
    inserted = {id(c) for c in casts.values()}
    for var in params:
        consumers = users.get(id(var), [])
        if not consumers or not all(_wants_target(c, target) for c in consumers):
            continue
        var.attrs["__dtype__"] = str(DTYPE_TO_FLAG[target])
        for c in consumers:
            if id(c) not in inserted:
                continue
            for node in users.get(id(c), []):
                node.inputs = [(var, 0) if src is c else (src, k) for src, k in node.inputs]
