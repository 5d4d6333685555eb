"""Autograd: record imperative operations on a tape and differentiate them.

Under ``record()``, every operator call whose inputs reach a marked variable appends a
``Node`` holding exactly what its backward declared it needs (``Op.backward_uses``,
seed 002's DeclareBackwardDependency): FullyConnected keeps its input but not its
output, so the output's memory is released as soon as the user drops it.
``backward()`` walks the nodes in reverse topological order.
"""
import threading

import numpy as np

from .base import MXNetError
from .engine import base as _engine_base
from .operator.registry import OpContext, REQ_ADD, REQ_NULL

__all__ = ["record", "pause", "train_mode", "predict_mode", "is_recording", "is_training",
           "set_recording", "set_training", "mark_variables", "backward", "grad",
           "Function", "get_symbol"]


class _State(threading.local):
    def __init__(self):
        self.recording = False
        self.training = False


_state = _State()


def is_recording():
    return _state.recording


def is_training():
    return _state.training


def set_recording(is_record):
    """Set recording on/off; returns the previous state."""
    prev, _state.recording = _state.recording, bool(is_record)
    return prev


def set_training(train_mode):
    """Set training mode on/off; returns the previous state."""
    prev, _state.training = _state.training, bool(train_mode)
    return prev


class _Scope:
    def __init__(self, recording, training):
        self._rec, self._train = recording, training
        self._prev = None

    def __enter__(self):
        self._prev = (_state.recording, _state.training)
        if self._rec is not None:
            _state.recording = self._rec
        if self._train is not None:
            _state.training = self._train
        return self

    def __exit__(self, *exc):
        _state.recording, _state.training = self._prev


def record(train_mode=True):
    """``with autograd.record():`` records operations for differentiation."""
    return _Scope(True, train_mode)


def pause(train_mode=False):
    """``with autograd.pause():`` stops recording inside a record() block."""
    return _Scope(False, train_mode)


def train_mode():
    return _Scope(None, True)


def predict_mode():
    return _Scope(None, False)


class VarNode:
    """A marked variable: where its gradient goes and how (write/add/null).
    ``fresh_grad`` is set when backward() writes the gradient (MXNet's
    ``NDArray._fresh_grad``, which gluon.Trainer clears and checks for stale gradients)."""
    __slots__ = ("grad", "grad_req", "fresh_grad", "__weakref__")

    def __init__(self, grad, grad_req):
        self.grad, self.grad_req = grad, grad_req
        self.fresh_grad = False


class Node:
    """One recorded operator call with the values its backward needs."""
    __slots__ = ("op", "p", "ctx", "is_train", "parents", "in_data", "out_data", "aux",
                 "n_out", "out_meta", "in_shapes", "freed", "__weakref__")

    def __init__(self, op, p, ctx, is_train, parents, in_data, out_data, aux, out_meta,
                 in_shapes):
        self.op, self.p, self.ctx, self.is_train = op, p, ctx, is_train
        self.parents = parents          # per argument: (node, index) or None
        self.in_data, self.out_data, self.aux = in_data, out_data, aux
        self.n_out = len(out_meta)
        self.out_meta = out_meta        # [(shape, dtype)] of every output
        self.in_shapes = in_shapes      # shapes of the arguments
        self.freed = False


def mark_variables(variables, gradients, grad_reqs="write"):
    """Mark arrays as variables whose gradients autograd computes into gradients."""
    from .ndarray.ndarray import NDArray
    if isinstance(variables, NDArray):
        variables, gradients = [variables], [gradients]
    if isinstance(grad_reqs, str):
        grad_reqs = [grad_reqs] * len(variables)
    if len(variables) != len(gradients):
        raise MXNetError("mark_variables: variables and gradients differ in length")
    for v, g, req in zip(variables, gradients, grad_reqs):
        if req not in ("write", "add", "null", "inplace"):
            raise MXNetError(f"grad_req must be 'write', 'add' or 'null', got {req!r}")
        v._ag = (VarNode(g, "write" if req == "inplace" else req), 0)


def _record(op, p, args, aux, outputs, is_train, ctx):
    """Append a node for an operator call if any argument is on the tape."""
    parents = [a._ag for a in args]
    for par in parents:
        if par is not None:
            break
    else:
        return
    uses = op.backward_uses_for(p)
    in_data = list(args) if "in_data" in uses else None
    out_data = list(outputs) if "out_data" in uses else None
    node = Node(op, p, ctx, is_train, parents, in_data, out_data, list(aux),
                [(o._shape, o._dtype) for o in outputs], [a._shape for a in args])
    for i, o in enumerate(outputs):
        o._ag = (node, i)


def _topo_order(heads):
    """Nodes reachable from heads, each after all nodes that consume it."""
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
        stack.append((node, True))
        if isinstance(node, Node):
            if node.freed:
                raise MXNetError(
                    "Cannot differentiate node because it was already differentiated and "
                    "its graph freed. Pass retain_graph=True to backward() to "
                    "differentiate the same graph twice.")
            for par in node.parents:
                if par is not None and id(par[0]) not in seen:
                    stack.append((par[0], False))
    order.reverse()
    return order


def _heads_and_grads(heads, head_grads):
    from .ndarray.ndarray import NDArray
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


def _run_backward(heads, head_grads, retain_graph, train_mode, variables=None):
    """Propagate gradients; returns {id(VarNode): (VarNode, array)}."""
    heads, head_grads = _heads_and_grads(heads, head_grads)
    grads = {}

    def accumulate(key, g):
        prev = grads.get(key)
        grads[key] = g if prev is None else prev + g

    for h, g in zip(heads, head_grads):
        xp = _xp(h)
        data = g._read() if g is not None else xp.ones(h.shape, h._dtype)
        accumulate((id(h._ag[0]), h._ag[1]), data)
    order = _topo_order([h._ag for h in heads])
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
        _backward_node(node, ograds, accumulate, train_mode)
        if not retain_graph:
            node.in_data = node.out_data = node.aux = None
            node.freed = True
    return result


def _xp(arr):
    from .backend import array_module
    return array_module(arr._ctx)


def _backward_node(node, ograds, accumulate, train_mode):
    op = node.op
    from .backend import array_module
    xp = array_module(node.ctx)
    need = [par is not None and _wants_grad(par) for par in node.parents]
    if not any(need):
        return
    for i, g in enumerate(ograds):
        if g is None:
            shape, dtype = node.out_meta[i]
            ograds[i] = xp.zeros(shape, dtype)
    if op.zero_grad:
        # A defined, zero gradient: 'write' variables receive zeros, as in MXNet.
        dt = ograds[0].dtype
        in_grads = [xp.zeros(s, dt) if w else None for s, w in zip(node.in_shapes, need)]
    else:
        if op.backward is None:
            raise MXNetError(f"Operator {op.name} is non-differentiable because it didn't "
                             "register FGradient attribute.")
        in_data = [a._read() for a in node.in_data] if node.in_data is not None else \
            [None] * len(node.parents)
        out_data = [o._read() for o in node.out_data] if node.out_data is not None else \
            [None] * node.n_out
        aux = [a._read() for a in node.aux] if node.aux else []
        octx = OpContext(xp, node.ctx, node.is_train if train_mode else False, need,
                         node.in_shapes)
        bwd = op.backward if (hook := _engine_base.profile_hook) is None else hook(op.backward, "_backward_" + op.name, node.ctx, "imperative")  # noqa: E501
        try:
            in_grads = bwd(octx, node.p, ograds, in_data, out_data, aux)
        except MXNetError:
            raise
        except Exception as err:
            raise MXNetError(f"Error in backward of operator {op.name}: "
                             f"{type(err).__name__}: {err}") from err
    for par, g, wanted in zip(node.parents, in_grads, need):
        if wanted and g is not None:
            accumulate((id(par[0]), par[1]), g)


def _wants_grad(entry):
    node = entry[0]
    return not (isinstance(node, VarNode) and node.grad_req == REQ_NULL)


def backward(heads, head_grads=None, retain_graph=False, train_mode=True):
    """Compute the gradients of heads with respect to marked variables, writing or
    adding them into each variable's gradient buffer as its grad_req says."""
    from .ndarray.dispatch import store
    result = _run_backward(heads, head_grads, retain_graph, train_mode)
    for node, g in result.values():
        buf = node.grad
        node.fresh_grad = True
        if node.grad_req == REQ_ADD:
            buf.wait_to_write()
            buf._data[...] += g.astype(buf._dtype, copy=False)
        elif node.grad_req != REQ_NULL:
            buf.wait_to_write()
            # Copy: pass-through gradients (add, identity) may be the very array of a
            # head gradient or of another variable's gradient.
            store(buf, g.astype(buf._dtype, copy=True))


def grad(heads, variables, head_grads=None, retain_graph=None, create_graph=False,
         train_mode=True):
    """Gradients of heads with respect to variables, returned as new arrays (the
    variables' own gradient buffers are left alone)."""
    from .ndarray.ndarray import NDArray, from_data
    if create_graph:
        raise MXNetError("autograd.grad(create_graph=True) (higher-order gradients) is "
                         "not supported by pymxnet")
    single = isinstance(variables, NDArray)
    if single:
        variables = [variables]
    for v in variables:
        if v._ag is None or not isinstance(v._ag[0], VarNode):
            raise MXNetError("autograd.grad: every variable must be marked with "
                             "attach_grad() or mark_variables() before recording")
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
            data = hit[1].astype(v._dtype, copy=True)
        out.append(from_data(data, v._ctx))
    return out[0] if single else out


def get_symbol(x):
    """The recorded graph that produced x, as a Symbol."""
    from .symbol.from_tape import symbol_from_tape
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
        from .ndarray.ndarray import NDArray
        with pause(_state.training):
            outputs = self.forward(*inputs)
        single = isinstance(outputs, NDArray)
        outs = [outputs] if single else list(outputs)
        if _state.recording:
            op = _FunctionOp(self, len(inputs))
            _record(op, op.params, list(inputs), [], outs, _state.training,
                    inputs[0].context)
        return outputs


class _FunctionOp:
    """Adapts a Function instance to the operator interface the tape expects."""
    backward_uses = ("out_grad",)
    zero_grad = False
    name = "_Function"

    def backward_uses_for(self, p):
        return self.backward_uses

    def __init__(self, fn, n_in):
        self.fn, self.n_in = fn, n_in
        self.params = None

    def backward(self, ctx, p, ograds, in_data, out_data, aux):
        from .ndarray.ndarray import from_data
        with pause():
            res = self.fn.backward(*[from_data(g, ctx.ctx) for g in ograds])
        from .ndarray.ndarray import NDArray
        res = [res] if isinstance(res, NDArray) else list(res)
        if len(res) != self.n_in:
            raise MXNetError(f"Function.backward returned {len(res)} gradients for "
                             f"{self.n_in} inputs")
        return [r._read() for r in res]
