"""The autograd tape: recording/training mode (per thread) and the nodes operator calls
append while recording.

This is the piece the NDArray front end (which records calls) and ``mxnet.autograd``
(which differentiates them) share; it sits below both, so neither imports the other.
Under ``record()``, every operator call whose inputs reach a marked variable appends a
``Node`` holding exactly what its backward declared it needs (``Op.backward_uses``,
seed 002's DeclareBackwardDependency): FullyConnected keeps its input but not its
output, so the output's memory is released as soon as the user drops it.
"""
import threading

from .base import MXNetError

__all__ = ["record", "pause", "train_mode", "predict_mode", "is_recording", "is_training",
           "set_recording", "set_training", "mark_variables", "VarNode", "Node",
           "record_call", "backward"]


class _State(threading.local):
    def __init__(self):
        self.recording = False
        self.training = False
        self.tracer = None      # gluon.np_trace: records calls instead of the tape


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
    if not isinstance(variables, (list, tuple)):
        variables, gradients = [variables], [gradients]
    if isinstance(grad_reqs, str):
        grad_reqs = [grad_reqs] * len(variables)
    if len(variables) != len(gradients):
        raise MXNetError("mark_variables: variables and gradients differ in length")
    for v, g, req in zip(variables, gradients, grad_reqs):
        if req not in ("write", "add", "null", "inplace"):
            raise MXNetError(f"grad_req must be 'write', 'add' or 'null', got {req!r}")
        v._ag = (VarNode(g, "write" if req == "inplace" else req), 0)


def live(entry):
    """Whether a tape entry (an array's ``_ag``: (node, index) or None) is in the
    recorded graph: a variable, or a recorded result whose graph backward has not freed
    (MXNet's AGInfo; a freed result is a constant, as MXNet clears its history)."""
    return entry is not None and not getattr(entry[0], "freed", False)


def in_graph(a):
    """Whether array a is in the recorded graph (``live``)."""
    return live(a._ag)


_ASSIGNING = ("Assigning to NDArrays that are already in a computational graph will "
              "cause undefined behavior when evaluating gradients. Call backward first to "
              "clear the graph or do this outside of a record section; in-place operations "
              "(+=, *=, relu(x, out=x), y[idx]=x) cannot be recorded.")
IN_PLACE = ("Inplace operations (+=, -=, x[:]=, etc) are not supported when recording "
            "with autograd.")


def refuse_recorded_destinations(outputs, inputs=()):
    """While recording, an operator call writing into given arrays is refused where
    MXNet 1.9.1 refuses it, as its gradient would be undefined: a destination already
    in the graph (``in_graph``), or a destination that is also an input (the same
    storage) of a call that is recorded (an input in the graph)."""
    for o in outputs:
        if in_graph(o):
            raise MXNetError(_ASSIGNING)
    if any(in_graph(a) for a in inputs):
        for o in outputs:
            for a in inputs:
                if o._chunk is a._chunk:
                    raise MXNetError(IN_PLACE)


def record_call(op, p, args, aux, outputs, is_train, ctx):
    """Append a node for an operator call if any argument is on the tape."""
    if _state.tracer is not None:
        return _state.tracer(op, p, args, aux, outputs)
    parents = [a._ag for a in args]
    for par in parents:
        if live(par):           # (a call on constants only is not recorded)
            break
    else:
        return
    uses = op.backward_uses_for(p)
    in_data = list(args) if "in_data" in uses else None
    out_data = op.kept_outputs(p, outputs) if "out_data" in uses else None
    if len(outputs) == 1:       # most calls: no comprehension to build and call
        o = outputs[0]
        node = Node(op, p, ctx, is_train, parents, in_data, out_data, list(aux),
                    [(o._shape, o._dtype)], [a._shape for a in args])
        o._ag = (node, 0)
        return
    node = Node(op, p, ctx, is_train, parents, in_data, out_data, list(aux),
                [(o._shape, o._dtype) for o in outputs], [a._shape for a in args])
    for i, o in enumerate(outputs):
        o._ag = (node, i)


# mxnet.autograd installs its backward() here, for NDArray.backward.
_backward = None


def backward(heads, head_grads=None, retain_graph=False, train_mode=True):
    """autograd.backward (see there)."""
    return _backward(heads, head_grads, retain_graph, train_mode)
