"""bind / simple_bind / reshape: turning caller arguments into an Executor.

``bind`` uses the caller's arrays as they are (two executors bound to the same
arrays share them); ``simple_bind`` infers every shape and dtype from the given
input shapes and allocates zero-filled arguments, gradients and auxiliary states.
"""
import numpy as np

from ..base import MXNetError, dtype_np
from ..context import Context
from ..ndarray.creation import zeros
from ..ndarray.ndarray import NDArray
from ..operator.registry import REQ_NULL
from .executor import Executor, _BindError
from .graph import Graph
from .infer import infer_shape_pass, infer_type_pass, is_complete, unknown_given_shape
from .placement import (check_array_context, check_group2ctx, place_nodes, spans_devices,
                        var_contexts)

__all__ = ["bind", "simple_bind", "reshape"]

_REQS = ("null", "write", "add")


def _arrays(values, names, what, allow_missing=False):
    """A list in names order from a list or a dict of NDArrays."""
    if values is None:
        values = {}
    if isinstance(values, dict):
        out = []
        for n in names:
            v = values.get(n)
            if v is None and not allow_missing:
                raise _BindError(f"key `{n}` is missing in `{what}`")
            out.append(v)
    elif isinstance(values, (list, tuple)):
        if len(values) != len(names):
            raise _BindError(f"Length of {what} does not match the number of arguments"
                             f" ({len(values)} given, {len(names)} needed: "
                             f"{', '.join(names)})")
        out = list(values)
    else:
        raise TypeError(f"Only accept list of NDArrays or dict of str to NDArray for {what}")
    for n, v in zip(names, out):
        if v is not None and not isinstance(v, NDArray):
            raise TypeError(f"Only accept list of NDArrays or dict of str to NDArray for "
                            f"{what} (got {type(v).__name__} for {n})")
    return out


def _grad_reqs(grad_req, names):
    if isinstance(grad_req, str):
        reqs = [grad_req] * len(names)
    elif isinstance(grad_req, (list, tuple)):
        if len(grad_req) != len(names):
            raise _BindError(f"grad_req list has {len(grad_req)} entries for "
                             f"{len(names)} arguments")
        reqs = list(grad_req)
    elif isinstance(grad_req, dict):
        reqs = [grad_req.get(n, REQ_NULL) for n in names]
    else:
        raise TypeError("grad_req must be a str, a list or a dict")
    for r in reqs:
        if r not in _REQS:
            raise _BindError("grad_req must be in {'null': 0, 'write': 1, 'add': 3}, "
                             f"got {r!r}")
    return reqs


def _executor(symbol, ctx, args, grads, reqs, aux, shared_exec=None, group2ctx=None,
              output_base=None, graph=None, placement=None, template=None):
    """An Executor, or a PlacedExecutor when group2ctx puts nodes on several devices
    (``graph``, ``placement``: the symbol's Graph and its nodes' placement when the
    caller made them already; ``template``: the symbol's BindTemplate, template.py)."""
    if group2ctx:
        graph = graph if graph is not None else Graph(symbol)
        if placement is None:
            placement = place_nodes(graph, ctx, group2ctx)
        if spans_devices(placement):
            from .placed import PlacedExecutor
            return PlacedExecutor(symbol, ctx, args, grads, reqs, aux, group2ctx,
                                  graph=graph, placed=placement)
    return Executor(symbol, ctx, args, grads, reqs, aux, shared_exec, group2ctx=group2ctx,
                    output_base=output_base, template=template)


def _check_ctx(ctx, group2ctx):
    if not isinstance(ctx, Context):
        raise TypeError(f"ctx must be a Context, got {type(ctx).__name__}")
    check_group2ctx(ctx, group2ctx)


def bind(symbol, ctx, args, args_grad=None, grad_req="write", aux_states=None,
         group2ctx=None, shared_exec=None, template=None):
    """``template``: a BindTemplate of ``symbol`` (template.py) to plan with."""
    _check_ctx(ctx, group2ctx)
    if template is not None:
        arg_names, aux_names = template.arg_names, template.aux_names
    else:
        arg_names = symbol.list_arguments()
        aux_names = symbol.list_auxiliary_states()
    args = _arrays(args, arg_names, "args")
    grads = _arrays(args_grad, arg_names, "args_grad", allow_missing=True) \
        if args_grad is not None else [None] * len(arg_names)
    if aux_states is None and aux_names:
        raise _BindError(f"bind: aux_states are required for {', '.join(aux_names)}")
    aux = _arrays(aux_states, aux_names, "aux_states")
    reqs = _grad_reqs(grad_req, arg_names)
    reqs = [r if g is not None else REQ_NULL for r, g in zip(reqs, grads)]
    graph = placement = placed = None
    if group2ctx:
        graph = Graph(symbol)
        placement = place_nodes(graph, ctx, group2ctx)
        placed = var_contexts(graph, placement)
    for name, a in list(zip(arg_names, args)) + list(zip(aux_names, aux)) + \
            [(n, g) for n, g in zip(arg_names, grads) if g is not None]:
        if placed is not None:
            check_array_context(name, a, placed[name])
        elif a.context != ctx:
            raise MXNetError(f"bind: array {name} is on {a.context}, the executor on {ctx}")
    for name, a, g in zip(arg_names, args, grads):
        if g is not None and tuple(g.shape) != tuple(a.shape):
            raise MXNetError(f"bind: gradient of {name} has shape {g.shape}, the argument "
                             f"{a.shape}")
    return _executor(symbol, ctx, args, grads, reqs, aux, shared_exec, group2ctx,
                     graph=graph, placement=placement, template=template)


def _infer_all(symbol, shapes, types):
    g = Graph(symbol)
    by_name = {g.nodes[i].name: g.entry(i) for i in g.arg_nodes + g.aux_nodes}
    for key in list(shapes) + list(types):
        # MXNet 1.9.1 skips keyword values that are no shape (a list of gradient
        # arrays passed as ``args_grad=``, None); a shape for a name the graph does not
        # have stays an error here, where MXNet dropped it silently
        if key not in by_name and (key in types or isinstance(shapes[key], tuple)):
            raise MXNetError(f"simple_bind: keyword argument name {key} not found. "
                             f"Candidate arguments: {', '.join(g.arg_names)}")
    shapes = {k: v for k, v in shapes.items() if k in by_name and not unknown_given_shape(v)}
    infer_shape_pass(g, {by_name[k]: v for k, v in shapes.items()})
    infer_type_pass(g, {by_name[k]: v for k, v in types.items()})
    return g


def simple_bind(symbol, ctx, grad_req="write", type_dict=None, stype_dict=None,
                group2ctx=None, shared_arg_names=None, shared_exec=None,
                shared_buffer=None, shapes=None):
    _check_ctx(ctx, group2ctx)
    shapes = dict(shapes or {})
    stype_dict = dict(stype_dict or {})
    for name, st in stype_dict.items():
        if st not in ("default", "row_sparse", "csr"):
            raise MXNetError(f"simple_bind: unknown storage type {st!r} for {name}")
    if type_dict is None:
        attrs = symbol.attr_dict()
        type_dict = {n: np.float32 for n in symbol.list_arguments()
                     if "__dtype__" not in attrs.get(n, {})}
    g = _infer_all(symbol, shapes, dict(type_dict))
    var_nodes = g.arg_nodes + g.aux_nodes
    missing = [g.nodes[i].name for i in var_nodes if not is_complete(g.shapes[g.entry(i)])]
    if missing:
        given = ", ".join(f"{k}: {v}" for k, v in shapes.items())
        raise MXNetError(f"simple_bind: cannot infer the shapes of {', '.join(missing)} "
                         f"from the given shapes ({given}); provide them as keyword "
                         "arguments")
    reqs = _grad_reqs(grad_req, g.arg_names)
    shared = set(shared_arg_names or ())
    placement = place_nodes(g, ctx, group2ctx)
    placed = var_contexts(g, placement)
    args, grads = [], []
    var_stypes = {g.nodes[nid].name: stype_dict.get(g.nodes[nid].name) or _STYPE_IDS.get(
        (g.nodes[nid].attrs or {}).get("__storage_type__"), "default") for nid in g.arg_nodes}
    sparse_grads = _sparse_grad_args(g, var_stypes)
    for nid, req in zip(g.arg_nodes, reqs):
        name, e = g.nodes[nid].name, g.entry(nid)
        shape, dtype = tuple(g.shapes[e]), _dtype(g.dtypes[e])
        arr = grad = None
        # storage types: stype_dict, else the variable's own (Variable(stype=...));
        # the weight of an Embedding with sparse_grad gets a row_sparse gradient
        st = var_stypes[name]
        if name in shared and shared_exec is not None and name in shared_exec.arg_dict:
            arr = _fit(shared_exec.arg_dict[name], shape, dtype)
            if req != REQ_NULL:
                grad = _fit(shared_exec.grad_dict.get(name), shape, dtype)
        elif shared_buffer is not None and name not in shared:
            # the buffer shares input arrays (data, labels, states) between executors;
            # parameters are shared through shared_exec instead
            arr = _fit(shared_buffer.get(name), shape, dtype)
            if arr is None:
                arr = shared_buffer[name] = zeros(shape, ctx, dtype, stype=st)
        if arr is None:
            arr = zeros(shape, placed[name], dtype, stype=st)
        if req != REQ_NULL and grad is None:
            grad = zeros(shape, placed[name], dtype,
                         stype="row_sparse" if name in sparse_grads else None)
        args.append(arr)
        grads.append(grad)
    aux = []
    for nid in g.aux_nodes:
        e = g.entry(nid)
        name = g.nodes[nid].name
        arr = None
        if shared_exec is not None and name in shared and name in shared_exec.aux_dict:
            arr = _fit(shared_exec.aux_dict[name], tuple(g.shapes[e]), _dtype(g.dtypes[e]))
        aux.append(arr if arr is not None else
                   zeros(tuple(g.shapes[e]), placed[name], _dtype(g.dtypes[e])))
    return _executor(symbol, ctx, args, grads, reqs, aux, shared_exec, group2ctx, graph=g,
                     placement=placement)


_STYPE_IDS = {"0": "default", "1": "row_sparse", "2": "csr"}


def _sparse_grad_args(g, var_stypes=None):
    """Names of the variables whose gradient MXNet infers row_sparse: the weight of
    an Embedding with sparse_grad=True (and of the contrib SparseEmbedding), and the
    right operand of ``dot(csr, rhs)`` (no transposes; MXNet's backward there is
    csr.T . out_grad, row_sparse). A variable used more than once gets a row_sparse
    gradient only when every use gives one, as MXNet's sum of the gradients is
    row_sparse only for row_sparse parts. ``var_stypes``: {variable name: storage
    type} of the bound arguments, for the csr test."""
    var_stypes = var_stypes or {}
    var_of = {g.entry(vid): g.nodes[vid].name for vid in g.arg_nodes}
    sparse_uses, uses = {}, {}
    for nid, node in enumerate(g.nodes):
        op = node.op
        if op is None:
            continue
        ins = g.node_inputs[nid]
        sparse_pos = ()
        if op.name == "_contrib_SparseEmbedding" or (
                op.name == "Embedding" and node.params.sparse_grad):
            sparse_pos = (1,)
        elif op.name == "dot" and len(ins) == 2 and \
                not node.params.transpose_a and not node.params.transpose_b and \
                var_stypes.get(var_of.get(ins[0])) == "csr":
            sparse_pos = (1,)
        for pos, e in enumerate(ins):
            name = var_of.get(e)
            if name is None:
                continue
            uses[name] = uses.get(name, 0) + 1
            if pos in sparse_pos:
                sparse_uses[name] = sparse_uses.get(name, 0) + 1
    for e in g.heads:           # a variable that is also an output: a dense part
        name = var_of.get(e)
        if name is not None:
            uses[name] = uses.get(name, 0) + 1
    return {n for n, k in sparse_uses.items() if k == uses[n]}


def _dtype(t):
    return np.dtype(np.float32) if t is None else dtype_np(t)


def _fit(arr, shape, dtype):
    """arr itself when it has shape/dtype, a view of its first elements when it is
    bigger, else None."""
    if arr is None or np.dtype(arr.dtype) != np.dtype(dtype):
        return None
    if tuple(arr.shape) == shape:
        return arr
    if int(np.prod(shape)) <= arr.size and not arr._sparse:   # sparse arrays: no views
        return arr._as_view(shape, 0)
    return None


def reshape(ex, partial_shaping, allow_up_sizing, kwargs):
    symbol, ctx = ex._symbol, ex._ctx
    g = _infer_all(symbol, kwargs, {})
    old = {n: a for n, a in zip(g.arg_names, ex.arg_arrays)}
    old.update({n: a for n, a in zip(g.aux_names, ex.aux_arrays)})
    var_nodes = g.arg_nodes + g.aux_nodes
    if any(not is_complete(g.shapes[g.entry(i)]) for i in var_nodes):
        fill = dict(kwargs)
        for i in var_nodes:
            name = g.nodes[i].name
            if name not in fill and not is_complete(g.shapes[g.entry(i)]):
                fill[name] = old[name].shape
        g = _infer_all(symbol, fill, {})

    def resize(name, arr, new_shape, specified, what):
        if arr is None or tuple(arr.shape) == new_shape:
            return arr
        if not (specified or partial_shaping):
            raise MXNetError(f"Shape of unspecified array {what}:{name} changed. This can "
                             "cause the new executor to not share parameters with the old "
                             "one. Please check for error in network. If this is intended, "
                             "set partial_shaping=True to suppress this warning.")
        if int(np.prod(new_shape)) > arr.size:
            if not allow_up_sizing:
                raise MXNetError(f"New shape of {what}: {name} is larger than original. "
                                 "First making a big executor and then down sizing it is "
                                 "more efficient than the reverse. If you really want to up "
                                 "size, set allow_up_sizing=True to enable allocation of "
                                 "new arrays.")
            return zeros(new_shape, arr.context, arr.dtype)
        return arr._as_view(new_shape, 0)

    args, grads = [], []
    for nid, a, gr in zip(g.arg_nodes, ex.arg_arrays, ex.grad_arrays):
        name, shape = g.nodes[nid].name, tuple(g.shapes[g.entry(nid)])
        args.append(resize(name, a, shape, name in kwargs, "arg"))
        grads.append(resize(name, gr, shape, name in kwargs, "arg"))
    aux = [resize(g.nodes[nid].name, a, tuple(g.shapes[g.entry(nid)]), False, "aux")
           for nid, a in zip(g.aux_nodes, ex.aux_arrays)]
    out_nd = getattr(ex, "_out_nd", {})
    new = _executor(symbol, ctx, args, grads, list(ex._grad_req), aux, ex, ex._group2ctx,
                    output_base=[out_nd.get(e) for e in ex._graph.heads])
    if ex._monitor is not None:
        new._set_monitor(ex._monitor, ex._monitor_all)
    return new
