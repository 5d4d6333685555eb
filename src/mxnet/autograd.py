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
# (loaded by the dispatcher already; imported here once, not on every backward node)
from .operator.kernels_sparse import (add_values as _sparse_add_values,
                                      lookup_sparse_backward as _lookup_sparse_backward)
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


def _topo_order(heads, uses=None):
    """Nodes reachable from heads, each after all nodes that consume it. A freed node
    (its graph already differentiated without retain_graph) is an error as a head; met
    below a head it is a constant, as in MXNet, whose freed arrays record no history.
    ``uses`` (a dict), when given, receives {node: how many gradients it gets from
    recorded consumers} from the same walk (_direct_grads reads the variables'
    counts; the heads' own gradients are the caller's to add)."""
    for h in heads:
        if h[0].__class__ is Node and h[0].freed:
            raise MXNetError(
                "Cannot differentiate node because it was already differentiated and "
                "its graph freed. Pass retain_graph=True to backward() to "
                "differentiate the same graph twice.")
    # Sets and keys hold the nodes themselves (hashed by identity; both node classes
    # define no __eq__): no id() call per visit. A VarNode has no parents, so it is
    # finished as soon as it is met (the (node, True) entry it used to push was the
    # very next one popped: the order is the same).
    order, seen = [], set()
    stack = [(h[0], False) for h in heads]
    push, pop, finish = stack.append, stack.pop, order.append
    while stack:
        node, done = pop()
        if done:
            finish(node)
            continue
        if node in seen:
            continue
        seen.add(node)
        if node.__class__ is not Node:
            finish(node)
            continue
        if node.freed:
            continue
        push((node, True))
        for par in node.parents:
            if par is not None:
                p0 = par[0]
                if uses is not None:
                    uses[p0] = uses.get(p0, 0) + 1
                if p0 not in seen:
                    push((p0, False))
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
    # gradients so far, by tape entry (node, output index): the entries are the tuples
    # the nodes' parents hold, so a gradient is filed under its parent entry as it is
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
        elif h._ctx.device_typeid != 2:     # host memory: no device to make current
            data = _np.ones(h.shape, h._dtype)
        else:
            with device_scope(h._ctx):
                data = _xp(h).ones(h.shape, h._dtype)
        accumulate((h._ag[0], h._ag[1]), data)
    uses = {} if into_buffers else None
    order = _topo_order([h._ag for h in heads], uses)
    if variables is None and not any(n.__class__ is VarNode and n.grad_req != "null"
                                     for n in order):
        # MXNet 1.9.1 refuses a backward() that would compute no gradient at all
        raise MXNetError("There are no inputs in computation graph that require "
                         "gradients: every variable behind the heads has grad_req "
                         "'null' (or none was marked with attach_grad)")
    if uses is not None:
        for h in heads:
            uses[h._ag[0]] = uses.get(h._ag[0], 0) + 1
    result = {}
    pop = grads.pop
    for node in order:
        if node.__class__ is VarNode:
            g = grads.get((node, 0))
            if g is not None:
                result[id(node)] = (node, g)
            continue
        n_out = node.n_out
        if n_out == 1:          # (most nodes: no comprehension to build and call)
            g = pop((node, 0), None)
            if g is None:
                continue        # no gradient reaches this node
            ograds = [g]
        else:
            ograds = [pop((node, i), None) for i in range(n_out)]
            for g in ograds:
                if g is not None:
                    break
            else:
                continue        # no gradient reaches this node
        ctx = node.ctx
        if ctx is not None and ctx.device_typeid == 2:
            with device_scope(ctx):     # its gradients are made (and summed) there
                _backward_node(node, ograds, accumulate, train_mode, uses)
        else:                           # host memory: no device to make current
            _backward_node(node, ograds, accumulate, train_mode, uses)
        if not retain_graph:
            node.in_data = node.out_data = node.aux = None
            node.freed = True
    return result


def _xp(arr):
    """The array module of an NDArray's (or a tape node's) context."""
    return array_module(arr.ctx if isinstance(arr, Node) else arr._ctx)


def _direct_grads(node, need, uses, ograds, in_data, out_data, aux):
    """Destinations for the node's backward: the gradient buffer's own NumPy array for
    each wanted input that is a variable with grad_req 'write', receiving only this one
    gradient, whose buffer is a whole dense array of the input's shape and dtype and
    shares no memory with the backward's inputs (``ograds``, ``in_data``, ``out_data``,
    ``aux``). The operator then writes the gradient there (as MXNet does) instead of
    into a fresh array that backward() copies over the buffer: a copy and an allocation
    per gradient. A hybridized block's graph gets such buffers on any device (its
    executor writes the parameters' gradients into them, as MXNet's CachedOp). None
    when there is no such input."""
    dests = None
    # A hybridized block's graph (gluon/_cached_op._GraphOp) takes destinations on any
    # device, checking them against its own bound arrays (it saves no input values)
    whole_graph = getattr(node.op, "grads_into_buffers", False)
    if not whole_graph and node.in_data is None:
        return None
    arrays = None           # the backward's arrays, gathered for the first candidate
    for i, (par, wanted) in enumerate(zip(node.parents, need)):
        if not wanted:
            continue
        var = par[0]
        if var.__class__ is not VarNode:
            continue
        buf = var.grad
        if var.grad_req != REQ_WRITE or uses.get(var) != 1 or buf is None \
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
        d, x = buf._chunk.data, node.in_data[i]
        if x is None or type(d) is not _np_ndarray or not d.flags.writeable \
                or d.shape != x._shape or d.dtype != x._dtype:
            continue
        if arrays is None:
            arrays = [a for a in (*ograds, *in_data, *out_data, *aux) if a is not None]
        if _shares_memory_with_any(d, arrays):
            continue
        buf.wait_to_write()
        if dests is None:
            dests = [None] * len(node.parents)
        dests[i] = d
    return dests


def _shares_memory_with_any(d, arrays):
    may_share = _np.may_share_memory
    for a in arrays:
        if may_share(d, a):
            return True
    return False


def _needs_and_reqs(parents):
    """Per argument of a node: whether its gradient is wanted (_wants_grad) and what
    it goes into: a variable's grad_req ('add' accumulates), else the tape's own sum
    ('write'); 'null' where unwanted. (None, None) when no gradient is wanted."""
    need, req = [], []
    wanted_any = False
    for par in parents:
        if par is None:
            need.append(False)
            req.append(REQ_NULL)
            continue
        n = par[0]
        r = n.grad_req if n.__class__ is VarNode else REQ_WRITE
        wanted = r != REQ_NULL
        need.append(wanted)
        req.append(r)
        wanted_any = wanted_any or wanted
    return (need, req) if wanted_any else (None, None)


def _backward_node(node, ograds, accumulate, train_mode, uses=None):
    op = node.op
    need, req = _needs_and_reqs(node.parents)
    if need is None:
        return
    ctx = node.ctx
    octx = runner.op_context(_np if ctx.device_typeid != 2 else array_module(ctx), ctx,
                             node.is_train if train_mode else False,
                             need, node.in_shapes, req)
    differentiable = not op.zero_grad and op.backward is not None
    in_grads = NotImplemented
    if differentiable and _lookup_sparse_backward(op.name) is not None:
        in_grads = _sparse_backward(node, ograds, need)
    if in_grads is NotImplemented:
        dests = None
        if differentiable:
            in_data = [a._read() for a in node.in_data] if node.in_data is not None else \
                [None] * len(node.parents)
            out_data = [None if o is None else o._read() for o in node.out_data] \
                if node.out_data is not None else \
                [None] * node.n_out
            aux = [a._read() for a in node.aux] if node.aux else []
            if uses is not None:
                dests = _direct_grads(node, need, uses, ograds, in_data, out_data, aux)
        else:
            in_data = out_data = aux = None
        in_grads = runner.backward(op, octx, node.p, ograds, in_data, out_data, aux,
                                   in_grad=dests, req=None if dests is None else
                                   [REQ_WRITE if d is not None else REQ_NULL
                                    for d in dests],
                                   out_meta=node.out_meta,
                                   _on_device=True)   # the caller entered node.ctx's scope
    for par, g, wanted in zip(node.parents, in_grads, need):
        if wanted and g is not None:
            accumulate(par, g)      # par: the (node, index) entry, grads' key


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
    return _sparse_add_values(a, b)


def _sparse_backward(node, ograds, need):
    """Row_sparse gradients from the operator's sparse backward kernel, when one exists
    and a gradient goes straight into a sparse variable buffer; else NotImplemented."""
    op = node.op
    fn = _lookup_sparse_backward(op.name)
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
        ctx = node.grad._ctx
        if ctx.device_typeid == 2:
            with device_scope(ctx):     # written into the buffer's memory
                _into_buffer(node, g)
        else:
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
