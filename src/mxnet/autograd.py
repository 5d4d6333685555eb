"""Autograd: record imperative operations on a tape and differentiate them.

The tape itself (recording and training mode, the nodes operator calls append) is
``mxnet.tape``; ``backward()`` walks its nodes in reverse topological order.
"""
from ctypes import cast  # noqa: F401  (MXNet's mx.autograd exposes it)
import numpy as _np

from . import tape as _tape
from .base import MXNetError
from .tape import (Node, VarNode, _state, is_recording, is_training, mark_variables,  # noqa: F401
                   pause, predict_mode, record, set_recording, set_training, train_mode)
from .tape import record_call as _record
from .operator import runner
from .operator.registry import REQ_ADD, REQ_NULL, REQ_WRITE, Op
from .ndarray.ndarray import NDArray, from_data
from .backend import array_module, device_scope
from .ndarray.dispatch import store
from .symbol.from_tape import symbol_from_tape

__all__ = ["record", "pause", "train_mode", "predict_mode", "is_recording", "is_training",
           "set_recording", "set_training", "mark_variables", "backward", "grad",
           "Function", "get_symbol", "NDArray"]


def __getattr__(name):
    # MXNet's autograd module exposes NDArray (``from mxnet.autograd import *`` code
    # relies on it); imported on first use, the ndarray package imports this module
    if name == "NDArray":
        from .ndarray.ndarray import NDArray
        return NDArray
    raise AttributeError(f"module 'mxnet.autograd' has no attribute {name!r}")


def _topo_order(heads):
    """Nodes reachable from heads, each after all nodes that consume it. A freed node
    (its graph already differentiated without retain_graph) is an error as a head; met
    below a head it is a constant, as in MXNet, whose freed arrays record no history."""
    for h in heads:
        if isinstance(h[0], Node) and h[0].freed:
            raise MXNetError(
                "Cannot differentiate node because it was already differentiated and "
                "its graph freed. Pass retain_graph=True to backward() to "
                "differentiate the same graph twice.")
    order, seen = [], set()
    stack = [(h[0], False) for h in heads]
    while stack:
        node, done = stack.pop()
        if done:
            order.append(node)
            continue
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, Node) and node.freed:
            continue
        stack.append((node, True))
        if isinstance(node, Node):
            for par in node.parents:
                if par is not None and id(par[0]) not in seen:
                    stack.append((par[0], False))
    order.reverse()
    return order


def _heads_and_grads(heads, head_grads):
    if isinstance(heads, NDArray):
        heads = [heads]
        if head_grads is not None and not isinstance(head_grads, (list, tuple)):
            head_grads = [head_grads]
    heads = list(heads)
    if head_grads is None:
        head_grads = [None] * len(heads)
    if len(head_grads) != len(heads):
        raise MXNetError(f"backward: got {len(head_grads)} head gradients for "
                         f"{len(heads)} heads")
    for h, g in zip(heads, head_grads):
        if h._ag is None:
            raise MXNetError(
                "Cannot differentiate node because it is not in a computational graph. "
                "You need to set is_recording to true or use autograd.record() to save "
                "computational graphs for backward.")
        if g is not None and tuple(g.shape) != tuple(h.shape):
            raise MXNetError(f"backward: head gradient shape {tuple(g.shape)} does not match "
                             f"the head's shape {tuple(h.shape)}")
    return heads, head_grads


def _run_backward(heads, head_grads, retain_graph, train_mode, variables=None,
                  into_buffers=False):
    """Propagate gradients; returns {id(VarNode): (VarNode, array)}. ``into_buffers``
    (backward(), not grad()): a variable's gradient may be written straight into its
    gradient buffer (see _direct_grads); its result is then that buffer's array."""
    heads, head_grads = _heads_and_grads(heads, head_grads)
    grads = {}

    def accumulate(key, g):
        prev = grads.get(key)
        grads[key] = g if prev is None else _add(prev, g)

    for h, g in zip(heads, head_grads):
        # a head whose computation failed raises that failure here, once (a failed
        # intermediate has poisoned the head too), instead of each backward below
        # tripping over the bad values and the forward's error waiting for waitall
        h._read()
        if g is not None:
            data = g._read()
        else:
            with device_scope(h._ctx):
                data = _xp(h).ones(h.shape, h._dtype)
        accumulate((id(h._ag[0]), h._ag[1]), data)
    order = _topo_order([h._ag for h in heads])
    uses = _var_uses(order, heads) if into_buffers else None
    result = {}
    for node in order:
        if isinstance(node, VarNode):
            g = grads.get((id(node), 0))
            if g is not None:
                result[id(node)] = (node, g)
            continue
        ograds = [grads.pop((id(node), i), None) for i in range(node.n_out)]
        if all(g is None for g in ograds):
            continue
        with device_scope(node.ctx):    # its gradients are made (and summed) there
            _backward_node(node, ograds, accumulate, train_mode, uses)
        if not retain_graph:
            node.in_data = node.out_data = node.aux = None
            node.freed = True
    return result


def _xp(arr):
    """The array module of an NDArray's (or a tape node's) context."""
    return array_module(arr.ctx if isinstance(arr, Node) else arr._ctx)


def _var_uses(order, heads):
    """{id(VarNode): how many gradients it receives} in this backward pass."""
    uses = {}
    for node in order:
        if not isinstance(node, VarNode):
            for par in node.parents:
                if par is not None:
                    uses[id(par[0])] = uses.get(id(par[0]), 0) + 1
    for h in heads:
        uses[id(h._ag[0])] = uses.get(id(h._ag[0]), 0) + 1
    return uses


def _direct_grads(node, need, uses, arrays):
    """Destinations for the node's backward: the gradient buffer's own NumPy array for
    each wanted input that is a variable with grad_req 'write', receiving only this one
    gradient, whose buffer is a whole dense array of the input's shape and dtype and
    shares no memory with the backward's inputs (``arrays``). The operator then writes
    the gradient there (as MXNet does) instead of into a fresh array that backward()
    copies over the buffer: a copy and an allocation per gradient. A hybridized block's
    graph gets such buffers on any device (its executor writes the parameters'
    gradients into them, as MXNet's CachedOp). None when there is no such input."""
    dests = None
    # A hybridized block's graph (gluon/_cached_op._GraphOp) takes destinations on any
    # device, checking them against its own bound arrays (it saves no input values)
    whole_graph = getattr(node.op, "grads_into_buffers", False)
    for i, (par, wanted) in enumerate(zip(node.parents, need)):
        if not wanted or not isinstance(par[0], VarNode):
            continue
        var = par[0]
        buf = var.grad
        if var.grad_req != REQ_WRITE or uses.get(id(var)) != 1 or buf is None \
                or buf._sparse or buf._view is not None:
            continue
        if whole_graph:
            d = buf._chunk.data
            if d is not None and tuple(d.shape) == tuple(node.in_shapes[i]) and \
                    getattr(getattr(d, "flags", None), "writeable", True):
                buf.wait_to_write()
                if dests is None:
                    dests = [None] * len(node.parents)
                dests[i] = d
            continue
        if node.in_data is None:
            continue
        d, x = buf._chunk.data, node.in_data[i]
        if x is None or type(d) is not _np_ndarray or not d.flags.writeable \
                or d.shape != x.shape \
                or d.dtype != x._dtype or \
                any(a is not None and _np.may_share_memory(d, a) for a in arrays):
            continue
        buf.wait_to_write()
        if dests is None:
            dests = [None] * len(node.parents)
        dests[i] = d
    return dests


def _backward_node(node, ograds, accumulate, train_mode, uses=None):
    op = node.op
    need = [par is not None and _wants_grad(par) for par in node.parents]
    if not any(need):
        return
    # What each gradient goes into: a variable's grad_req ('add' accumulates), else
    # the tape's own sum ('write').
    req = [(par[0].grad_req if isinstance(par[0], VarNode) else REQ_WRITE) if w
           else REQ_NULL for par, w in zip(node.parents, need)]
    octx = runner.op_context(_xp(node), node.ctx, node.is_train if train_mode else False,
                             need, node.in_shapes, req)
    in_grads = NotImplemented if op.zero_grad or op.backward is None else \
        _sparse_backward(node, ograds, need)
    if in_grads is not NotImplemented:
        in_data = out_data = aux = None
    elif op.zero_grad or op.backward is None:
        in_data = out_data = aux = None
    else:
        in_data = [a._read() for a in node.in_data] if node.in_data is not None else \
            [None] * len(node.parents)
        out_data = [None if o is None else o._read() for o in node.out_data] \
            if node.out_data is not None else \
            [None] * node.n_out
        aux = [a._read() for a in node.aux] if node.aux else []
    if in_grads is NotImplemented:
        dests = None if uses is None or in_data is None else _direct_grads(
            node, need, uses, [*ograds, *in_data, *out_data, *aux])
        in_grads = runner.backward(op, octx, node.p, ograds, in_data, out_data, aux,
                                   in_grad=dests, req=None if dests is None else
                                   [REQ_WRITE if d is not None else REQ_NULL
                                    for d in dests],
                                   out_meta=node.out_meta,
                                   _on_device=True)   # the caller entered node.ctx's scope
    for par, g, wanted in zip(node.parents, in_grads, need):
        if wanted and g is not None:
            accumulate((id(par[0]), par[1]), g)


_np_ndarray = _np.ndarray


def _add(a, b):
    """Sum of two gradients; row_sparse values (sparse backward kernels) included."""
    if isinstance(a, _np_ndarray) and isinstance(b, _np_ndarray):
        return a + b
    device = getattr(a, "device", None)
    if device is not None and hasattr(device, "__enter__"):
        with device:            # a GPU gradient (one copied across devices, too)
            return _add_values(a, b)
    return _add_values(a, b)


def _add_values(a, b):
    from .operator.kernels_sparse import add_values
    return add_values(a, b)


def _sparse_backward(node, ograds, need):
    """Row_sparse gradients from the operator's sparse backward kernel, when one exists
    and a gradient goes straight into a sparse variable buffer; else NotImplemented."""
    op = node.op
    from .operator.kernels_sparse import lookup_sparse_backward
    fn = lookup_sparse_backward(op.name)
    if fn is None:
        return NotImplemented
    sparse_var = any(w and isinstance(par[0], VarNode) and getattr(par[0].grad, "_sparse",
                                                                    False)
                     for par, w in zip(node.parents, need))
    if not sparse_var or node.in_data is None or any(g is None for g in ograds):
        return NotImplemented
    from .ndarray.sparse import _value_of
    if any(a._ctx.device_typeid == 2 for a in node.in_data) or not all(
            isinstance(g, _np_ndarray) for g in ograds):
        return NotImplemented
    res = fn(node.p, ograds, [_value_of(a) for a in node.in_data], need, node.in_shapes)
    if res is NotImplemented:
        return res
    # only the parents that are sparse variables take the sparse value
    out = []
    for par, r, w in zip(node.parents, res, need):
        if r is not None and not (isinstance(par[0], VarNode) and par[0].grad._sparse):
            from .operator.sparse_values import todense
            r = todense(r)
        out.append(r if w else None)
    return out


def _wants_grad(entry):
    node = entry[0]
    return not (isinstance(node, VarNode) and node.grad_req == REQ_NULL)


def backward(heads, head_grads=None, retain_graph=False, train_mode=True):
    """Compute the gradients of heads with respect to marked variables, writing or
    adding them into each variable's gradient buffer as its grad_req says."""
    result = _run_backward(heads, head_grads, retain_graph, train_mode, into_buffers=True)
    for node, g in result.values():
        with device_scope(node.grad._ctx):      # written into the buffer's memory
            _into_buffer(node, g)


def _into_buffer(node, g):
    """Write or add a variable's gradient g into its buffer, as its grad_req says."""
    buf = node.grad
    node.fresh_grad = True
    if buf._sparse:          # a sparse gradient buffer (attach_grad(stype=...))
        if node.grad_req != REQ_NULL:
            from .ndarray.sparse_dispatch import grad_store
            buf.wait_to_write()
            grad_store(buf, g, node.grad_req == REQ_ADD)
    elif node.grad_req == REQ_ADD:
        buf.wait_to_write()
        buf._data[...] += g.astype(buf._dtype, copy=False)
    elif node.grad_req != REQ_NULL:
        buf.wait_to_write()
        _write_grad(buf, g)


def _write_grad(buf, g):
    """Write gradient g over the gradient buffer buf. A copy (pass-through gradients
    such as add's or identity's may be the very array of a head gradient or of another
    variable's gradient), made into buf's own memory where it can be: a chunk's array
    is its own (dispatch's rule), and writing it in place spares a fresh allocation
    and its page faults every step."""
    d = buf._chunk.data
    if g is d:              # written there by the operator (_direct_grads)
        return
    if d is not None and d.__class__ is g.__class__ and buf._shape == g.shape \
            and getattr(getattr(d, "flags", None), "writeable", True):  # (CuPy: no such flag)
        buf._data[...] = g
        return
    store(buf, g.astype(buf._dtype, copy=True))


def grad(heads, variables, head_grads=None, retain_graph=None, create_graph=False,
         train_mode=True):
    """Gradients of heads with respect to variables, returned as a list of new arrays
    (the variables' own gradient buffers are left alone). With ``create_graph=True``
    they are recorded computations that can be differentiated again."""
    if isinstance(variables, NDArray):
        variables = [variables]
    for v in variables:
        if v._ag is None or not isinstance(v._ag[0], VarNode):
            raise MXNetError("autograd.grad: every variable must be marked with "
                             "attach_grad() or mark_variables() before recording")
    if create_graph:       # gradients recorded as computations (autograd_graph.py)
        from .autograd_graph import on_tape, run_backward_graph
        from .ndarray.creation import zeros
        found = run_backward_graph(heads, head_grads, train_mode,
                                   (_heads_and_grads, _topo_order, _wants_grad, _xp))
        return [on_tape(found[id(v._ag[0])][1] if id(v._ag[0]) in found else
                        zeros(v.shape, v._ctx, v._dtype), v) for v in variables]
    if retain_graph is None:
        retain_graph = create_graph
    result = _run_backward(heads, head_grads, retain_graph, train_mode)
    out = []
    xp_zero = None
    for v in variables:
        hit = result.get(id(v._ag[0]))
        if hit is None:
            xp_zero = _xp(v)
            data = xp_zero.zeros(v.shape, v._dtype)
        else:
            data = hit[1]
            if not isinstance(data, _np_ndarray) and hasattr(data, "stype"):
                from .operator.sparse_values import todense
                data = todense(data)
            data = data.astype(v._dtype, copy=True)
        out.append(from_data(data, v._ctx))
    return out              # a list even for a single variable, as in MXNet


def get_symbol(x):
    """The recorded graph that produced x, as a Symbol."""
    return symbol_from_tape(x)


class Function:
    """A differentiable function written in Python with NDArrays.

    Subclass and define ``forward(*inputs)`` and ``backward(*output_grads)``; call the
    instance on NDArrays inside ``autograd.record()``. ``save_for_backward`` keeps
    arrays for the backward pass.
    """

    def __init__(self):
        self._saved = ()

    def save_for_backward(self, *args):
        self._saved = args

    @property
    def saved_tensors(self):
        return self._saved

    def forward(self, *inputs):
        raise NotImplementedError

    def backward(self, *output_grads):
        raise NotImplementedError

    def __call__(self, *inputs):
        with pause(_state.training):
            outputs = self.forward(*inputs)
        single = isinstance(outputs, NDArray)
        outs = [outputs] if single else list(outputs)
        if _state.recording:
            op = _FunctionOp(self, len(inputs))
            _record(op, op.params, list(inputs), [], outs, _state.training,
                    inputs[0].context)
        return outputs


class _FunctionOp(Op):
    """Adapts a Function instance to the operator interface the tape expects."""
    backward_uses = ("out_grad",)
    name = "_Function"

    def __init__(self, fn, n_in):
        self.fn, self.n_in = fn, n_in
        self.params = None

    def backward(self, ctx, p, ograds, in_data, out_data, aux):
        with pause():
            res = self.fn.backward(*[from_data(g, ctx.ctx) for g in ograds])
        res = [res] if isinstance(res, NDArray) else list(res)
        if len(res) != self.n_in:
            raise MXNetError(f"Function.backward returned {len(res)} gradients for "
                             f"{self.n_in} inputs")
        return [r._read() for r in res]


_tape._backward = backward
