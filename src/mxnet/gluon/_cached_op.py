"""The cached graph behind a hybridized HybridBlock (MXNet's CachedOp).

``CachedOp(symbol)`` runs the symbol through bound Executors, one per input
signature (context, input shapes and dtypes, which inputs need gradients), bound once
and reused. Every executor argument is a small NDArray of our own that is pointed at
the caller's array (data batch, parameter values) before each run, so nothing is
re-bound or copied when batches or parameter values change. Each run hands back
outputs of its own: before an executor runs again, its output arrays get new buffers
from the storage pool and the previous ones stay with the caller.

Under ``autograd.record()`` the whole run is one node on the tape (``_GraphOp``, an
adapter like ``autograd._FunctionOp``) whose backward runs the executor's backward.
The executor keeps the forward's intermediate values for that backward, so it is
leased to the tape node until the node is differentiated (or dropped); a forward
that finds every executor of its signature leased binds another one.

A CachedOp keeps the executors of the signatures it has seen for their next call, but
not without bound: once those of other signatures hold more than
``MXNET_CACHEDOP_MEMORY_MB`` (default 2048; -1: no bound) of planned buffers, outputs
and gradients, the least recently used idle ones are dropped (and bound again if their
shapes come back). MXNet's CachedOp holds the memory of one signature at a time;
a decoder run step by step (a new sequence length every step) would otherwise keep
every step's buffers alive.

Binding costs far more than one run, and such a decoder may never see a shape twice
within a sentence: outside ``autograd.record()``, without ``static_alloc`` and without
a monitor, the first call with a new signature runs the graph's operators one by one
through the imperative dispatcher (as a dynamic-shape graph always does), and only a
signature that comes back is bound (``MXNET_CACHEDOP_BIND_AT``: the sighting that
binds, default 2; 1 binds at once).
"""
import collections
import weakref

import numpy as np

from .. import autograd, engine, storage
from ..autograd import VarNode
from .. import ndarray as _nd
from ..base import MXNetError, env_int
from ..executor import cuda_graph
from ..executor.bind import bind as _bind
from ..executor.template import BindTemplate
from ..ndarray.chunk import Chunk, PooledChunk
from ..ndarray.ndarray import NDArray, from_data
from ..operator.registry import REQ_NULL, REQ_WRITE, Op
from ..symbol.graph import topo_order

__all__ = ["CachedOp"]


def _needs_grad(arr):
    ag = arr._ag
    if ag is None:
        return False
    node = ag[0]
    return not (node.__class__ is VarNode and node.grad_req == REQ_NULL)


class _Entry:
    """One bound executor with the arrays it reads and writes."""
    __slots__ = ("ex", "ctx", "args", "aux", "grads", "lease", "used", "own_outputs",
                 "out_pos", "xp", "graph", "pointed", "bound", "nbytes")

    def __init__(self, op, ctx, inputs, need):
        self.ctx = ctx
        # sparse inputs keep their class: the executor reads their dense form
        wrap = [(a.__class__ if a._sparse else NDArray)(a._chunk, a._shape, a._dtype, ctx,
                                                         a._view) for a in inputs]
        self.args = [wrap[i] for i in op.arg_pos]
        self.aux = [wrap[i] for i in op.aux_pos]
        # (bound array, its position in the inputs), pointed at the input by each load
        self.bound = list(zip(self.args + self.aux, op.arg_pos + op.aux_pos))
        if need is None:
            need = (False,) * len(self.args)
        from ..ndarray.creation import zeros
        self.grads = [zeros(a._shape, ctx, a._dtype) if n else None
                      for a, n in zip(self.args, need)]
        reqs = [REQ_WRITE if n else REQ_NULL for n in need]
        self.pointed = set()       # gradients written into the variables' buffers
        self.ex = _bind(op.template.symbol, ctx, self.args, args_grad=self.grads,
                        grad_req=reqs, aux_states=self.aux, template=op.template)
        if op.monitor is not None:
            _install_monitor(self.ex, op.monitor)
        bound = {id(a) for a in wrap}
        self.own_outputs = []
        self.out_pos = []          # per output: index into own_outputs, or -1 (a variable)
        seen = {}
        for o in self.ex.outputs:
            if id(o) in bound:
                self.out_pos.append(-1)
                continue
            if id(o) not in seen:
                seen[id(o)] = len(self.own_outputs)
                self.own_outputs.append(o)
            self.out_pos.append(seen[id(o)])
        self.lease = None
        self.used = False
        # what this executor keeps allocated: its planned buffers, outputs, gradients
        held = self.own_outputs + [g for g in self.grads if g is not None]
        self.nbytes = getattr(getattr(self.ex, "memory_plan", None), "planned_bytes", 0) + \
            sum(a.size * np.dtype(a._dtype).itemsize for a in held)
        from ..backend import array_module
        self.xp = array_module(ctx)
        self.graph = cuda_graph.runner(op.graph_cfg, self)     # None: no CUDA graphs

    def free(self):
        """Whether no tape node still needs this executor's forward values."""
        lease = self.lease
        if lease is None:
            return True
        node = lease()
        return node is None or node.freed

    def load(self, inputs, op):
        """Point the bound arrays at this call's inputs, after the previous run on this
        executor has finished with them."""
        if self.used and self.graph is not None:
            self.graph.wait_idle()      # outputs and gradients stay fixed with graphs
        elif self.used:
            eng = engine.get()
            # (a failure stays on its array, reported to whoever reads it)
            if not self.own_outputs:
                for a in self.args + self.aux:
                    if a._chunk.num_pending:
                        eng.wait_quietly(a._chunk)
            for o in self.own_outputs:
                c = o._chunk
                if c.num_pending:
                    eng.wait_quietly(c)
                if o._sparse:           # a sparse head: the forward stores its value
                    o._chunk = Chunk(None)
                    continue
                data, block = storage.empty(self.ctx, o._shape, o._dtype)
                o._chunk = PooledChunk(data, block)
        self.used = True
        for dst, i in self.bound:       # each an alias of the input (same chunk and view)
            src = inputs[i]
            dst._chunk = src._chunk
            dst._view = src._view

    def results(self):
        outs = []
        own = self.own_outputs
        for o, pos in zip(self.ex.outputs, self.out_pos):
            if pos < 0:
                outs.append(o.copy())
            else:
                src = own[pos]
                outs.append((src.__class__ if src._sparse else NDArray)(
                    src._chunk, src._shape, src._dtype, self.ctx))
        return outs


def _install_monitor(ex, monitor):
    """A block's op hook on one of its executors: MXNet's CachedOp reports operator
    inputs and outputs only, never the graph's variables under their own names."""
    ex._set_monitor(*monitor)
    ex._monitor_variables = False


class _GraphOp(Op):
    """The tape's view of one cached-graph run: backward runs the executor backward.

    The gradients it returns are the executor's own bound gradient arrays, rewritten
    by its next backward (no fresh buffers, no page faults each step):
    ``borrowed_results`` tells the tape, which copies what it keeps (autograd.backward
    into the variables' buffers, autograd.grad into new arrays, a create_graph pass
    into recorded arrays).

    ``graph`` is the CachedOp, which ``autograd.get_symbol`` reads (its symbol and
    whether MXNet would have recorded the run inlined)."""
    backward_uses = ("out_grad",)
    name = "_CachedOp"
    borrowed_results = True
    # backward takes destinations (runner's ``given``): the gradient buffers of
    # variables with grad_req 'write' that only this graph feeds (autograd's
    # _direct_grads); the executor writes those gradients there, as MXNet's CachedOp
    # writes into the variables' gradient arrays - no copy per parameter and step, and
    # no second gradient-sized buffer held by the executor
    writes_outputs = True
    grads_into_buffers = True
    # the graph's nodes choose their own bfloat16 route; widening the whole backward's
    # head gradients and outputs to float32 first would only add copies
    bfloat16_native = True

    def __init__(self, entry, graph):
        self.entry = entry
        self.graph = graph

    # names, as MXNet's _CachedOp node shows them in autograd.get_symbol
    def arguments(self, p):
        return self.graph.symbol.list_arguments()

    def aux_states(self, p):
        return self.graph.symbol.list_auxiliary_states()

    def outputs(self, p):
        return self.graph.symbol.list_outputs()

    def backward(self, octx, p, ograds, in_data, out_data, aux, given=None):
        entry = self.entry
        _point_grads(entry, given)
        if entry.graph is not None:
            return entry.graph.backward(ograds, octx.is_train, octx.need_grad)
        ctx = entry.ctx
        heads = [from_data(g, ctx) for g in ograds]
        entry.ex._backward(heads, octx.is_train, inline=True)
        need = octx.need_grad
        out = []
        for i, g in enumerate(entry.grads):
            out.append(g._read() if g is not None and (need is None or need[i]) else None)
        return out


def _point_grads(entry, given):
    """Point the executor's gradient arrays at the destinations ``given`` (raw arrays
    or None per argument) that fit: same shape and dtype as the gradient, memory no
    bound input starts at. They stay pointed (forward refreshes read them; nothing
    allocates per step) until a backward comes without a destination for them: that
    one gets a buffer of the executor's own again (allocated when written)."""
    pointed = entry.pointed
    if not given and not pointed:
        return
    inputs = None
    for i, g in enumerate(entry.grads):
        if g is None:
            continue
        d = given[i] if given and i < len(given) else None
        if d is not None and g._chunk.data is not d:
            if inputs is None:
                from ..operator.kernels import data_start
                # (dense inputs only: a CSR/row-sparse input holds a scipy matrix)
                inputs = {data_start(a._chunk.data) for a in entry.args + entry.aux
                          if isinstance(a._chunk.data, entry.xp.ndarray)}
            if tuple(d.shape) != g._shape or d.dtype != g._dtype or \
                    not isinstance(d, entry.xp.ndarray) or data_start(d) in inputs:
                d = None
            else:
                g._chunk = Chunk(d)
                g._view = None
        if d is not None:
            pointed.add(i)
        elif i in pointed:
            g._chunk = Chunk(None)
            pointed.discard(i)


class CachedOp:
    """Runs ``symbol`` on NDArrays given in ``symbol.list_inputs()`` order."""

    def __init__(self, symbol, flags=()):
        self.symbol = symbol
        self.graph_cfg = cuda_graph.config(flags)     # MXNET_ENABLE_CUDA_GRAPHS
        flags = dict(flags or ())
        # MXNet records a run of at most inline_limit operators (never with static_alloc)
        # operator by operator, not as one _CachedOp node; autograd.get_symbol shows it so
        static = cuda_graph._truthy(flags.get("static_alloc", False))
        self.inline_limit = 0 if static else int(flags.get("inline_limit", 2))
        self.static = static
        # the symbol's nodes in topological order (replay)
        self._order = order = topo_order([h for h, _ in symbol._outputs])
        # an operator whose output shape depends on values: no executor can be planned
        self.dynamic = any(node.op is not None and node.op.dynamic_shape for node in order)
        # whether a call may run without an executor: no node needs shape inference
        # to complete its parameters (zeros of batch size 0 in a begin_state)
        self._replayable = not any(node.op is not None and
                                   node.op.needs_inferred_params(node.params)
                                   for node in order)
        self.input_names = inputs = symbol.list_inputs()
        args = symbol.list_arguments()
        aux = set(symbol.list_auxiliary_states())
        self.arg_pos = [i for i, n in enumerate(inputs) if n not in aux]
        self.aux_pos = [i for i, n in enumerate(inputs) if n in aux]
        if len(self.arg_pos) != len(args):
            raise MXNetError(f"cached graph: input names are not unique: {inputs}")
        self.monitor = None
        self._template = None
        self._bind_at = max(1, env_int("MXNET_CACHEDOP_BIND_AT", 2))
        self._sightings = {}        # signature -> calls run without an executor
        self._pools = collections.OrderedDict()    # signature -> entries, oldest use first
        self._budget = env_int("MXNET_CACHEDOP_MEMORY_MB", 2048) << 20
        self._held = 0                              # bytes the kept executors hold

    @property
    def template(self):
        """What the binds for each input signature share (executor/template.py)."""
        if self._template is None:
            from ..symbol.partition import partition_for_bind
            # a subgraph backend's partition is the symbol actually bound (Symbol.bind)
            self._template = BindTemplate(partition_for_bind(self.symbol))
        return self._template

    def inlined(self):
        """Whether MXNet would record a run of this graph operator by operator."""
        n_ops = sum(1 for node in self._order if node.op is not None)
        return n_ops <= self.inline_limit

    def set_monitor(self, callback, monitor_all):
        """Install an executor monitor callback (name, NDArray) on every executor."""
        self.monitor = (callback, monitor_all)
        for pool in self._pools.values():
            for entry in pool:
                _install_monitor(entry.ex, self.monitor)

    def _trim(self, current):
        """Drop the least recently used idle executors of signatures other than
        ``current`` until the executors kept hold at most the memory budget."""
        for key in list(self._pools):
            if self._held <= self._budget:
                break
            if key == current:
                continue
            keep = []
            for e in self._pools[key]:
                if self._held > self._budget and e.free():
                    self._held -= e.nbytes      # its buffers go back to the storage pool
                else:
                    keep.append(e)
            if keep:
                self._pools[key] = keep
            else:
                del self._pools[key]

    def _sighted(self, key):
        """Count a call with signature ``key`` that has no executor; whether it is to
        run without one (it has not yet come back often enough to be bound)."""
        seen = self._sightings
        n = seen.get(key, 0) + 1
        if n >= self._bind_at:
            seen.pop(key, None)
            return False
        if len(seen) >= 4096:       # a bound on what is remembered, not on correctness
            seen.clear()
        seen[key] = n
        return True

    def _replay(self, inputs):
        """Run the symbol's operators in order on ``inputs`` (np_trace.replay)."""
        from .np_trace import replay
        from ..util import is_np_array
        outs = replay(self.symbol, dict(zip(self.input_names, inputs)),
                      np_arrays=is_np_array(), order=self._order)
        # an input returned as it is comes back as a copy, as from an executor
        given = {id(a._chunk) for a in inputs}
        return [o.copy() if id(o._chunk) in given else o for o in outs]

    def __call__(self, inputs, ctx):
        """Run the graph; returns the list of outputs."""
        if self.dynamic:
            return self._replay(inputs)
        state = autograd._state
        recording = state.recording
        need = None
        if recording:
            need = tuple([_needs_grad(inputs[i]) for i in self.arg_pos])
            if True not in need:
                need = None
        # (lists, not generator expressions, below: a few items, every call)
        key = (ctx, need) + tuple([(a._shape, a._dtype, a._sparse and a.stype)
                                   for a in inputs])
        pool = self._pools.get(key)
        if pool is None and need is None and self._replayable and self._bind_at > 1 and \
                not self.static and self.monitor is None and self._sighted(key):
            return self._replay(inputs)
        if pool is None:
            pool = self._pools[key] = []
        else:
            self._pools.move_to_end(key)
        entry = None
        for e in pool:
            if e.free():
                entry = e
                break
        if entry is None:
            entry = _Entry(self, ctx, inputs, need)
            pool.append(entry)
            self._held += entry.nbytes
            if 0 <= self._budget < self._held:
                self._trim(key)
        entry.load(inputs, self)
        if entry.graph is not None:
            outs = entry.graph.forward(state.training)
        else:
            entry.ex._forward(bool(state.training), inline=need is not None)
            outs = entry.results()
        if need is not None:
            args = [inputs[i] for i in self.arg_pos]
            autograd._record(_GraphOp(entry, self), None, args, [], outs, state.training, ctx)
            ag = outs[0]._ag if outs else None
            entry.lease = weakref.ref(ag[0]) if ag is not None else None
        else:
            entry.lease = None
        return outs


class NDCachedOp:
    """A symbol compiled once and called on NDArrays (MXNet's ``nd.CachedOp``):
    ``CachedOp(sym)(*inputs)`` returns its output(s); inputs follow
    ``sym.list_inputs()``. ``flags`` are accepted for compatibility."""

    def __init__(self, sym, flags=()):
        self._graph = CachedOp(sym, flags)
        self._flags = dict(flags)
        self._num_outputs = len(sym.list_outputs())

    def __call__(self, *args, out=None, default_ctx=None):
        from ..context import current_context
        ctx = args[0].context if args else (default_ctx or current_context())
        outs = self._graph(list(args), ctx)
        if out is not None:
            targets = out if isinstance(out, (list, tuple)) else [out]
            for t, o in zip(targets, outs):
                o.copyto(t)
            return out
        return outs[0] if len(outs) == 1 else list(outs)


# mx.nd.CachedOp is this class: installed from here, above the ndarray layer.
_nd.CachedOp = NDCachedOp
NDCachedOp.__name__ = NDCachedOp.__qualname__ = "CachedOp"
NDCachedOp.__module__ = "mxnet.ndarray"
