"""Executor: a symbol bound to arrays, with its plan prepared once.

At construction the passes run in order — shape and dtype inference (``infer``), the
gradient pass (``gradient``) and memory planning (``memory``) — and the buffers the
plan asks for are taken from the storage pool. ``forward``/``backward`` then only
walk the prepared call lists (``prepared.py``): each calls the operator's (or its
device kernel's) ``forward``/``backward``, which writes into the planned buffers, the
caller's output/gradient arrays (with the argument's grad_req) or nowhere (outputs
nothing reads). Both are one engine operation reading the arguments and writing the
outputs (or gradients), so they return at once, as MXNet's do; a tiny graph on idle
arrays runs in the calling thread instead (``INLINE_MAX_BYTES``), its failures still
raised at the next sync point. ``MXNET_EXEC_SYNC=1`` runs every run in the calling
thread, raising at once.
"""
import numpy as np

from .. import engine, storage
from ..backend import device_scope
from ..base import MXNetError, env_int
from ..engine.var import Var
from ..ndarray.chunk import Chunk, PooledChunk
from ..ndarray.ndarray import NDArray, from_data
from ..operator import runner
from ..operator.registry import REQ_NULL, REQ_WRITE, apply_req
from .cse import eliminate_common_expr, enabled as cse_enabled
from .noop_cast import bypass_noop_casts
from .gradient import gradient_pass
from .graph import Graph
from .infer import incomplete_entries, infer_shape_pass, infer_type_pass
from .fusion import fuse_forward_steps
from .backward_fusion import fold_relu_backward
from . import bias_fold, bn_fold
from . import cast_gather
from .memory import memory_pass
from .layout import scheme as layout_scheme
from . import prepared
from ..engine import base as _engine_base
from .placement import place_nodes
from ..monitor import report_backward as monitor_backward
from ..resource import rng_var

__all__ = ["Executor"]


class _Memory:
    """Pool blocks backing planned buffers; shared by executors bound with
    ``shared_exec`` (which never run at the same time: they share an engine var)."""

    def __init__(self, ctx):
        self.ctx = ctx
        self.blocks = []
        self.var = Var("executor")

    def take(self, sizes):
        """One block per requested size, reusing this memory's blocks where they fit."""
        free = list(range(len(self.blocks)))
        out = [None] * len(sizes)
        for i in sorted(range(len(sizes)), key=lambda i: -sizes[i]):
            fits = [j for j in free if self.blocks[j].size >= sizes[i]]
            if fits:
                j = min(fits, key=lambda j: self.blocks[j].size)
                free.remove(j)
                out[i] = self.blocks[j]
            else:
                with device_scope(self.ctx):    # in the executor's device memory
                    block = storage.get_pool(self.ctx).alloc(max(sizes[i], 1))
                self.blocks.append(block)
                out[i] = block
        return out

    def __del__(self):
        for block in self.blocks:
            if block.buffer is not None:
                block.pool.free(block)


def _device(ctx):
    return "gpu" if ctx.device_typeid == 2 else "cpu"


def _xp(ctx):
    from ..backend import array_module
    return array_module(ctx)


class _FwdStep:
    """One forward node, prepared: its inputs, and per output the entry whose planned
    buffer it writes (None: nothing reads it) with the request."""
    __slots__ = ("op", "p", "node", "nid", "inputs", "n_args", "outs", "req", "mon_names")


class _BwdStep:
    """One backward node, prepared: entries read, destinations and requests."""
    __slots__ = ("op", "p", "name", "octx", "ograds", "in_data", "out_data", "aux",
                 "n_args", "n_out", "out_meta", "targets", "req", "low_precision")


class Executor:
    """A bound symbol. Create with ``Symbol.bind`` or ``Symbol.simple_bind``.

    ``arg_arrays``/``grad_arrays``/``aux_arrays`` are the bound arrays in
    ``list_arguments()``/``list_auxiliary_states()`` order (a gradient is None where
    grad_req is 'null'); ``outputs`` are the output arrays, rewritten by each forward.
    ``memory_plan`` holds the plan's figures (``planned_bytes``, ``naive_bytes`` ...).
    """

    def __init__(self, symbol, ctx, args, args_grad, grad_reqs, aux_states, shared_exec=None,
                 output_base=None, group2ctx=None, template=None):
        """``template``: the symbol's BindTemplate (template.py), whose shape-independent
        results this bind reuses and adds to; None plans everything afresh."""
        self._keep_bound(symbol, ctx, args, args_grad, grad_reqs, aux_states, group2ctx)
        # reshape(): the old executor's outputs, which ours view where they fit (MXNet
        # carves a reshaped executor's outputs from the memory of the one it came from)
        self._output_base = output_base or []
        # an executor's monitor also reports variable inputs under their own names (as
        # MXNet's executor does); a hybridized block's op hook does not (CachedOp)
        self._monitor_variables = True
        self._template = template
        # the graph actually run: duplicate computations merged (executor/cse.py)
        if template is None:
            self._optimized = eliminate_common_expr(symbol) if cse_enabled() else symbol
            self._graph = Graph(self._optimized)
            self._plan_graph()      # may replace the graph (noop_cast.py)
        else:
            self._plan_from_template(template)
        self._mem = shared_exec._mem if shared_exec is not None else _Memory(ctx)
        with device_scope(ctx):     # constant and zero buffers are made on its device
            self._allocate()
            self._prepare()
        self._arg_dict = self._grad_dict = self._aux_dict = self._output_dict = None
        self.memory_plan = self._graph.memory

    def _keep_bound(self, symbol, ctx, args, args_grad, grad_reqs, aux_states, group2ctx):
        """The bound symbol, context and arrays as the caller gave them."""
        self._symbol = symbol
        self._group2ctx = group2ctx or None      # ctx_group placement (placement.py)
        self._ctx = ctx
        self.arg_arrays = list(args)
        self.grad_arrays = [g if r != REQ_NULL else None for g, r in zip(args_grad, grad_reqs)]
        self._grad_req = list(grad_reqs)
        self.aux_arrays = list(aux_states)
        self._monitor = None
        self._monitor_all = False
        self._arg_dict = self._grad_dict = self._aux_dict = self._output_dict = None

    # ------------------------------------------------------------------ planning
    def _var_entries(self):
        g = self._graph
        var_entries = [(g.entry(n), a) for n, a in zip(g.arg_nodes, self.arg_arrays)]
        return var_entries + [(g.entry(n), a) for n, a in zip(g.aux_nodes, self.aux_arrays)]

    def _check_shapes(self, var_entries):
        g = self._graph
        for e, a in var_entries:
            if tuple(g.shapes[e]) != tuple(a.shape):
                raise MXNetError(f"bind: argument {g.entry_name(e)} has shape {a.shape}, the "
                                 f"graph needs {g.shapes[e]}")
        unknown = [g.entry_name(e) for e in incomplete_entries(g.shapes)]
        if unknown:
            raise MXNetError("bind: cannot infer the shapes of " + ", ".join(unknown))

    def _plan_from_template(self, template):
        """_plan_graph, reusing what an earlier bind of the template's symbol with the
        same dtypes, gradient requests and device settled on (template.py)."""
        key = template.key(self.arg_arrays, self.aux_arrays, self._grad_req,
                           _device(self._ctx))
        typed = template.typed(key)
        if typed is None:
            self._optimized, self._graph = template.graph_of(cse_enabled())
            self._plan_graph()
            template.keep(key, self._optimized, getattr(self, "_casts_bypassed", False),
                          getattr(self, "_casts_hoisted", False), self._graph)
            return
        self._optimized = typed.optimized
        self._casts_bypassed, self._casts_hoisted = typed.bypassed, typed.hoisted
        self._graph = g = typed.graph.fresh()
        var_entries = self._var_entries()
        infer_shape_pass(g, {e: a.shape for e, a in var_entries})
        self._check_shapes(var_entries)
        g.dtypes = list(typed.dtypes)
        self._plan_backward_and_memory()

    def _plan_backward_and_memory(self):
        gradient_pass(self._graph, self._grad_req)
        if bn_fold.applies(_device(self._ctx)):
            bn_fold.plan_chains(self._graph)
        # GPU libraries (cuDNN, cuBLAS) prefer 256-byte aligned arrays; 64 on the CPU
        memory_pass(self._graph, align=256 if self._ctx.device_typeid == 2 else 64)

    def _plan_graph(self):
        g = self._graph
        var_entries = self._var_entries()
        infer_shape_pass(g, {e: a.shape for e, a in var_entries})
        infer_type_pass(g, {e: a.dtype for e, a in var_entries})
        self._check_shapes(var_entries)
        g.dtypes = [np.dtype(np.float32) if t is None else np.dtype(t) for t in g.dtypes]
        # AMP's casts to the type an input already has: readers take the input itself
        # (once: the casts a rewrite leaves, it leaves on purpose)
        bypassed = self._optimized if getattr(self, "_casts_bypassed", False) else \
            bypass_noop_casts(self._optimized, g)
        if bypassed is not self._optimized:
            self._optimized, self._casts_bypassed = bypassed, True
            self._graph = Graph(bypassed)
            return self._plan_graph()
        # AMP's weight casts numbered first, so that each phase runs them as one call
        # (cast_gather.py; once: the order it gives is the one to keep)
        if cast_gather.applies(_device(self._ctx)) and \
                not getattr(self, "_casts_hoisted", False) and \
                any(r != REQ_NULL for r in self._grad_req):
            self._casts_hoisted = True
            order = cast_gather.hoisted_order(g)
            if order is not None:
                self._graph = Graph(self._optimized, nodes=order)
                return self._plan_graph()
        self._plan_backward_and_memory()

    def _allocate(self):
        g, plan = self._graph, self._graph.memory
        blocks = self._mem.take(plan.slot_bytes)
        n_total = g.num_entries + g.backward.num_grad_entries
        # the flat value list of the prepared loops (prepared.py): entries, gradient
        # entries, one slot per argument gradient, and a slot that stays None
        self._grad_base = n_total
        self._none_slot = n_total + len(self.arg_arrays)
        self._vals = vals = [None] * (self._none_slot + 1)
        grad_src = {ge: e for e, ge in g.backward.grad_entry.items()}
        for e, offset in plan.offset_of.items():        # all in the plan's one arena
            f = grad_src.get(e, e)
            vals[e] = blocks[0].view(g.shapes[f], g.dtypes[f], offset)
        self.outputs = []
        self._out_nd = {}                 # head entry -> NDArray (op outputs we own)
        var_nd = {g.entry(n): a for n, a in zip(g.arg_nodes, self.arg_arrays)}
        var_nd.update({g.entry(n): a for n, a in zip(g.aux_nodes, self.aux_arrays)})
        for e in g.heads:
            if e in var_nd:
                self.outputs.append(var_nd[e])
                continue
            nd = self._out_nd.get(e)
            if nd is None:
                nd = self._out_nd[e] = self._output_view(len(self.outputs), e)
            if nd is None:
                data, block = storage.empty(self._ctx, g.shapes[e], g.dtypes[e])
                nd = self._out_nd[e] = NDArray(PooledChunk(data, block),
                                               tuple(g.shapes[e]), g.dtypes[e],
                                               self._out_ctx(e))
            self.outputs.append(nd)
        # arrays whose device buffers are read afresh at every run
        self._dynamic = list(var_nd.items()) + list(self._out_nd.items())
        self._sparse_heads = self._sparse_outputs(var_nd)

    def _sparse_outputs(self, var_nd):
        """Heads whose inferred storage type is sparse: [(position, sparse array)];
        self.outputs shows those arrays (filled from the dense result after forward)."""
        if not any(a._sparse for a in var_nd.values()) and not any(
                n.op is not None and (n.op.name in ("cast_storage", "dot", "_square_sum")
                                      or hasattr(n.op, "infer_storage"))
                for n in self._graph.nodes):
            return []
        from .stype import infer_stypes, head_fillers
        from ..ndarray.sparse import zeros as sparse_zeros
        g = self._graph
        stypes = infer_stypes(g, {e: a.stype for e, a in var_nd.items()}, self._ctx)
        self._head_fill = head_fillers(g, stypes, var_nd, self._ctx)
        heads = []
        for pos, e in enumerate(g.heads):
            if stypes[e] != "default" and e in self._out_nd:
                arr = sparse_zeros(stypes[e], tuple(g.shapes[e]), self._ctx, g.dtypes[e])
                heads.append((pos, arr))
                self.outputs[pos] = arr
        return heads

    def _out_ctx(self, e):
        """The context an output array reports: its node's placement (group2ctx)."""
        if not self._group2ctx:
            return self._ctx
        g = self._graph
        return place_nodes(g, self._ctx, self._group2ctx)[g.entry_node[e]]

    def _output_view(self, pos, e):
        """A view of the old executor's output ``pos`` for head entry ``e`` (reshape),
        or None when there is none or it is too small or of another dtype."""
        g = self._graph
        if pos >= len(self._output_base):
            return None
        base, shape = self._output_base[pos], tuple(g.shapes[e])
        if base is None or np.dtype(base.dtype) != np.dtype(g.dtypes[e]) or \
                int(np.prod(shape)) > base.size:
            return None
        return base._as_view(shape, 0)

    def _prepare(self):
        g = self._graph
        planned = set(g.memory.offset_of) | set(self._out_nd)
        inplace_out = {dst for _, dst in g.memory.inplace}
        self._fsteps = []
        for nid, node in enumerate(g.nodes):
            if node.op is None:
                continue
            s = _FwdStep()
            outs = range(g.row_ptr[nid], g.row_ptr[nid + 1])
            s.op, s.p, s.node, s.nid = node.op, node.params, node, nid
            # Creation ops whose shape had unknown (0) dimensions run with the shape
            # inference found, as MXNet's fill the output it planned.
            s.p = node.op.complete_params(node.params, [g.shapes[e] for e in outs])
            s.inputs = g.node_inputs[nid]
            s.n_args = g.num_args[nid]
            # Every output is written straight into its planned buffer (or the caller's
            # output array); an output over an input's buffer is an 'inplace' request.
            s.outs = [e if e in planned else None for e in outs]
            s.req = ["inplace" if e in inplace_out else REQ_WRITE if e in planned
                     else REQ_NULL for e in outs]
            names = node.output_names()[:node.num_visible_outputs()]
            s.mon_names = names
            self._fsteps.append(s)
        # backward runs with its forward's parameters: complete_params may give a node
        # state of its own that both read (a control-flow node's recording)
        self._step_params = {s.nid: s.p for s in self._fsteps}
        # The plain steps serve monitors and the profiler, which see every operator.
        self._plain_fsteps = self._fsteps
        self._fsteps = fuse_forward_steps(g, self._plain_fsteps, _device(self._ctx))
        # gradients planned over an output gradient's buffer (in-place requests)
        self._inplace_dsts = {dst for _, dst in g.memory.inplace}
        self._bsteps = [self._prepare_backward(st) for st in g.backward.steps]
        self._zeros = {}
        self._shadows = {}
        device, xp = _device(self._ctx), _xp(self._ctx)
        # entries kept in the device's layout by the prepared loops (oneDNN's
        # channel-blocked one on the CPU, channels-last on the GPU: executor/layout.py)
        self._layout = layout_scheme(device)
        self._blocked = self._layout.entries(g, self._fsteps) if self._layout is not None \
            else frozenset()
        self._ran_blocked = False     # whether the last forward left blocked entries
        self._fcalls = None           # prepared from self._fsteps at the first run
        self._fcalls_of = None
        self._bcalls = self._prepare_bcalls(self._blocked)
        if self._blocked:           # the fused backward kernels are channels-last ones
            self._bcalls = fold_relu_backward(self._bcalls, self._none_slot, device)
        # the input entries of the weight casts the graph lists first (cast_gather.py)
        self._cast_sources = frozenset(
            g.node_inputs[nid][0] for nid in cast_gather.hoisted_casts(g)) \
            if getattr(self, "_casts_hoisted", False) else frozenset()
        if self._cast_sources:
            self._bcalls = cast_gather.gather_backward(self._bcalls, self._none_slot,
                                                       self._cast_sources)
        self._plain_bcalls = self._bcalls if not self._blocked else None
        self._octx = {flag: runner.op_context(xp, self._ctx, flag) for flag in (False, True)}
        self._sync = bool(env_int("MXNET_EXEC_SYNC", 0))
        self._inline = _nbytes(g, self.arg_arrays, self.aux_arrays) <= \
            env_int("MXNET_EXEC_INLINE_MAX_BYTES", INLINE_MAX_BYTES)
        # forward and backward arrays the engine orders the runs by
        self._fwd_writes = list(self._out_nd.values()) + self.aux_arrays + \
            [a for _, a in self._sparse_heads]

    def _prepare_bcalls(self, blocked):
        return prepared.prepare_backward(
            self._bsteps, self._none_slot,
            lambda t: self._grad_base + t[1] if t[0] == "arg" else t[1],
            _device(self._ctx), blocked, self._layout)

    def _prepare_backward(self, step):
        g, xp = self._graph, _xp(self._ctx)
        node = g.nodes[step.nid]
        b = _BwdStep()
        b.op, b.p, b.name = node.op, self._step_params.get(step.nid, node.params), node.name
        b.n_args = g.num_args[step.nid]
        outs = range(g.row_ptr[step.nid], g.row_ptr[step.nid + 1])
        b.n_out = len(outs)
        b.ograds = step.ograds
        # zeros for the output gradients nothing sends (only when backward reads them)
        b.out_meta = None if step.ograds is None else \
            [(g.shapes[e], g.dtypes[e]) for e in outs]
        b.in_data, b.out_data, b.aux = step.in_data, step.out_data, step.aux
        b.targets = step.targets
        # a gradient planned over an output gradient's buffer is an 'inplace' request
        over = self._inplace_dsts
        b.req = [REQ_NULL if t is None else
                 "inplace" if t[0] == "grad" and t[1] in over and t[2] == REQ_WRITE
                 else t[2] for t in step.targets]
        in_shapes = [g.shapes[e] for e in g.node_inputs[step.nid][:b.n_args]]
        b.octx = runner.op_context(xp, self._ctx, True, step.need, in_shapes, b.req)
        b.low_precision = prepared.low_precision(
            [g.dtypes[e] for e in list(g.node_inputs[step.nid]) + list(outs)],
            _device(self._ctx))
        return b

    # ------------------------------------------------------------------ dicts
    def _named(self, names, arrays, what):
        if len(set(names)) != len(names):
            raise ValueError(f"Duplicate names detected in {what}: {names}")
        return dict(zip(names, arrays))

    @property
    def arg_dict(self):
        """{argument name: bound array}."""
        if self._arg_dict is None:
            self._arg_dict = self._named(self._graph.arg_names, self.arg_arrays, "arguments")
        return self._arg_dict

    @property
    def grad_dict(self):
        """{argument name: gradient array or None}."""
        if self._grad_dict is None:
            self._grad_dict = self._named(self._graph.arg_names, self.grad_arrays, "gradients")
        return self._grad_dict

    @property
    def aux_dict(self):
        if self._aux_dict is None:
            self._aux_dict = self._named(self._graph.aux_names, self.aux_arrays,
                                         "auxiliary states")
        return self._aux_dict

    @property
    def output_dict(self):
        if self._output_dict is None:
            self._output_dict = self._named(self._symbol.list_outputs(), self.outputs,
                                            "outputs")
        return self._output_dict

    def __getitem__(self, name):
        """``executor['data']`` is ``executor.arg_dict['data']`` (as older MXNet
        tutorials write it)."""
        return self.arg_dict[name]

    # ------------------------------------------------------------------ running
    def _push(self, fn, reads, writes, name, inline=False, new_run=False):
        """Run fn with the engine: reading ``reads``, writing ``writes`` and the
        executor's memory. ``new_run`` (a forward): it recomputes every output, so an
        earlier run's failure not yet raised is taken off the outputs (it is still
        raised by ``waitall``); a backward keeps it, is skipped and shares it, so
        neither the failed outputs nor gradients computed from them are read as
        values."""
        mem_var = self._mem.var
        if new_run:
            for v in [mem_var] + [nd._chunk for nd in self._out_nd.values()]:
                if v.num_pending == 0:
                    v.exception = None
        const = [a._chunk for a in reads]
        mutate = [a._chunk for a in writes] + [mem_var] + self._rng_vars()
        eng = engine.get()
        if self._monitor is not None or self._sync:
            for v in const:
                eng.wait_for_var(v)
            for v in mutate:            # written in place below: pending reads too
                eng.wait_for_var(v, write=True)
            with device_scope(self._ctx):
                fn(None)
            return
        # a small graph on idle arrays runs now, in this thread (the engine would start
        # it at once, and a worker hand-off costs more than the graph); its failures
        # are still recorded on the outputs and raised at the next sync point. Larger
        # graphs go to a worker, so the caller's Python overlaps their kernels.
        if (inline or self._inline) and eng.run_inline(fn, const, mutate, name, self._ctx):
            return
        eng.push_sync(fn, self._ctx, const, mutate, 0, name)

    def _rng_vars(self):
        """The random generator's engine variable when the graph draws random numbers:
        a run writes it, so it stays ordered with mx.random.seed and imperative draws
        (MXNet's kRandom resource)."""
        found = self.__dict__.get("_rng_deps")
        if found is None:
            uses = any(node.op is not None and "random" in node.op.resources
                       for node in self._graph.nodes)
            found = self._rng_deps = [rng_var(self._ctx)] if uses else []
        return found

    def forward(self, is_train=False, **kwargs):
        """Run the graph. Keyword arguments (name=array) are copied into the bound
        arguments first. Returns ``outputs``."""
        if kwargs:
            arg_dict = self.arg_dict
            for name, value in kwargs.items():
                if name not in arg_dict:
                    raise _ArgumentError(f"Unknown argument {name}")
                if not isinstance(value, (NDArray, np.ndarray)):
                    raise _BindError("forward only accepts keyword arguments of NDArrays "
                                     f"or numpy.ndarray (got {type(value).__name__} "
                                     f"for {name})")
                dst = arg_dict[name]
                shape = tuple(value.shape)
                if shape != dst.shape:
                    raise _BindError(f"Shape not match! Argument {name}, need: {dst.shape}, "
                                     f"received: {shape}")
                if isinstance(value, NDArray):
                    value.copyto(dst)
                else:
                    dst[:] = value
        return self._forward(bool(is_train))

    def _forward(self, is_train, inline=False):
        """Push (or, when ``inline`` and the arrays are idle, run now) one forward run.
        A CachedOp under autograd asks for ``inline``: the backward that follows runs
        in the calling thread and waits for this forward's outputs first, so a worker
        would only add a hand-off (and a second OpenMP team for oneDNN) and hide
        nothing; measured on the hybridized SimpleCNN (batch 64, 2 cores), 3 runs each:
        6800 samples/s median through a worker, 7540 inline."""
        self._push(lambda rctx: self._run_forward(is_train),
                   self.arg_arrays, self._fwd_writes, "Executor.forward", inline,
                   new_run=True)
        return self.outputs

    def _refresh(self):
        vals = self._vals
        for e, nd in self._dynamic:
            vals[e] = nd._data

    def _run_forward(self, is_train):
        vals = self._vals
        for e, nd in self._dynamic:
            vals[e] = nd._data
        if self._monitor is not None or _engine_base.profile_hook is not None:
            # monitors and the profiler see every operator, through the runner
            octx = runner.op_context(_xp(self._ctx), self._ctx, is_train)
            self._ran_blocked = False
            for s in self._plain_fsteps:
                self._forward_step(s, octx)
        else:
            calls = self._fcalls
            if self._fcalls_of is not self._fsteps:    # (re)prepared when steps change
                calls = prepared.prepare_forward(
                    self._fsteps, self._none_slot, _device(self._ctx), self._blocked,
                    self._graph, self._layout)
                if bias_fold.applies(_device(self._ctx)):
                    calls = bias_fold.fold_conv_bias(self._graph, calls)
                if bn_fold.applies(_device(self._ctx)):
                    calls = bn_fold.fold_batchnorm(self._graph, calls)
                if self._cast_sources:
                    calls = cast_gather.gather_forward(calls, self._none_slot,
                                                       self._cast_sources)
                self._fcalls = calls
                self._fcalls_of = self._fsteps
            self._ran_blocked = bool(self._blocked)
            octx = self._octx[is_train]
            hook = prepared.step_hook
            if hook is None:
                prepared.run_forward(calls, vals, octx)
            else:
                hook(self, "forward", lambda: prepared.run_forward(calls, vals, octx))
        if self._sparse_heads:
            self._fill_sparse_heads()

    def _fill_sparse_heads(self):
        for pos, arr in self._sparse_heads:       # sparse outputs: see executor/stype.py
            fill = self._head_fill.get(pos)
            v = NotImplemented if fill is None else fill(self._vals)
            if v is NotImplemented:
                arr._set_dense(self._out_nd[self._graph.heads[pos]]._data)
            else:
                arr._set_value(v)

    def _forward_step(self, s, octx):
        vals, monitor = self._vals, self._monitor
        ins = [vals[e] for e in s.inputs]
        if monitor is not None and self._monitor_all:
            # as MXNet: an input that is a variable is reported under the variable's
            # name too, before the operator's own name for it
            for (src, _), nm, x in zip(s.node.inputs, s.node.monitor_input_names(), ins):
                if src.is_variable and self._monitor_variables:
                    monitor(src.name, from_data(x.copy(), self._ctx))
                monitor(f"{s.node.name}_{nm}", from_data(x.copy(), self._ctx))
        octx.req = s.req
        res = runner.forward(s.op, octx, s.p, ins[:s.n_args], ins[s.n_args:],
                             [None if e is None else vals[e] for e in s.outs], s.req,
                             s.node.name)
        if monitor is not None:
            for k, nm in enumerate(s.mon_names):
                monitor(nm, from_data(res[k].copy(), self._ctx))

    def backward(self, out_grads=None, is_train=True):
        """Compute the gradients of the arguments into ``grad_arrays`` (as each
        argument's grad_req says). ``out_grads``: the gradient of each output (an
        NDArray or a list, None entries allowed); outputs whose operator reads no
        output gradient (losses such as SoftmaxOutput) need none."""
        self._backward(out_grads, is_train)

    def _backward(self, out_grads, is_train, inline=False):
        """``backward``; ``inline``: run now in the calling thread when the arrays are
        idle (a CachedOp's backward under autograd, whose caller reads the gradients
        at once: see ``_forward``)."""
        plan = self._graph.backward
        if not plan.steps and not any(s is not None for s in plan.seeds) \
                and not plan.zero_fill:
            return
        out_grads = self._out_grad_list(out_grads)
        for i, (req, g) in enumerate(zip(plan.head_required, out_grads)):
            if g is not None and plan.seeds[i] is None:
                out_grads[i] = None     # nothing reads it (MXNet neither checks it)
                continue
            if self._check_out_grad(i, g, req) and (
                    g.context.device_typeid == 2 or self._ctx.device_typeid == 2):
                # from another device: copied to the executor's (as MXNet copies
                # head gradients into its own arrays)
                out_grads[i] = g.as_in_context(self._ctx)
        given = [g for g in out_grads if g is not None]
        writes = [g for g, r in zip(self.grad_arrays, self._grad_req)
                  if g is not None and r != REQ_NULL]
        self._push(lambda rctx: self._run_backward(out_grads, bool(is_train)),
                   self.arg_arrays + self.aux_arrays + given + self.outputs, writes,
                   "Executor.backward", inline)

    def _out_grad_list(self, out_grads):
        """backward's out_grads (None, an NDArray, a list, or {output name: array}) as
        one entry per output, None where none is given."""
        if out_grads is None:
            out_grads = []
        elif isinstance(out_grads, NDArray):
            out_grads = [out_grads]
        elif isinstance(out_grads, dict):
            out_grads = [out_grads.get(n) for n in self._symbol.list_outputs()]
        out_grads = list(out_grads)
        n_heads = len(self._graph.heads)
        # MXNet reads one gradient per output and ignores any extra ones given.
        return out_grads[:n_heads] + [None] * (n_heads - len(out_grads))

    def _check_out_grad(self, i, g, required):
        """Raise for a missing head gradient output i needs, or a given one that is no
        NDArray or has another shape than the output. Returns whether one is given."""
        if g is None:
            if required:
                raise MXNetError(
                    "Because the last operator is not Loss function, head_gradient is "
                    "required when calling backward. If you are attempting to minimize "
                    "the output as an objective, please modify your network and pass it "
                    "through the make_loss symbol.")
            return False
        if not isinstance(g, NDArray):
            raise TypeError("out_grads must be NDArrays")
        if tuple(g.shape) != tuple(self.outputs[i].shape):
            raise MXNetError(f"backward: out_grad {i} has shape {g.shape}, output "
                             f"{i} has shape {self.outputs[i].shape}")
        return True

    def _target(self, target):
        """The array a gradient target (kind, index, req) names."""
        if target is None:
            return None
        if target[0] == "arg":
            g = self.grad_arrays[target[1]]
            # sparse gradient arrays: backward writes a dense shadow, cast afterwards
            return self._shadows[target[1]] if g._sparse else g._data
        return self._vals[target[1]]

    def _ones_like_head(self, pos):
        """The head gradient used for a loss head given none (its values are ignored)."""
        if self._graph.backward.seeds[pos] is None:
            return None
        key = ("ones", pos)
        z = self._zeros.get(key)
        if z is None:
            e = self._graph.heads[pos]
            g = self._graph
            z = self._zeros[key] = _xp(self._ctx).ones(g.shapes[e], g.dtypes[e])
        return z

    def _run_backward(self, out_grads, is_train):
        self._refresh()
        self._shadows = {pos: g._data for pos, g in enumerate(self.grad_arrays)
                         if g is not None and g._sparse}       # dense forms, fresh
        plan, vals = self._graph.backward, self._vals
        head_data = [self._ones_like_head(pos) if og is None else og._data
                     for pos, og in enumerate(out_grads)]
        for ge, pos in plan.external_heads.items():
            vals[ge] = head_data[pos]
        for pos, seed in enumerate(plan.seeds):
            if seed is None or (seed[0] == "grad" and seed[1] in plan.external_heads):
                continue
            apply_req(self._target(seed), seed[2], head_data[pos])
        monitor = self._monitor
        # a forward that left blocked entries is followed by the prepared loop that
        # reads them so (a monitor installed since then sees no backward)
        if self._ran_blocked or (monitor is None and _engine_base.profile_hook is None):
            base = self._grad_base
            for pos, g in enumerate(self.grad_arrays):
                if g is not None:
                    vals[base + pos] = self._shadows[pos] if g._sparse else g._data
            bcalls = self._bcalls
            if not self._ran_blocked:
                if self._plain_bcalls is None:
                    self._plain_bcalls = self._prepare_bcalls(frozenset())
                bcalls = self._plain_bcalls
            hook = prepared.step_hook
            if hook is None:
                prepared.run_backward(bcalls, vals, is_train)
            else:
                hook(self, "backward",
                     lambda: prepared.run_backward(bcalls, vals, is_train))
        else:
            self._run_backward_steps(is_train)
        self._finish_backward()

    def _run_backward_steps(self, is_train):
        """Backward through the runner, one step at a time (monitor, profiler)."""
        vals, bwd, monitor = self._vals, runner.backward, self._monitor
        for b in self._bsteps:
            b.octx.is_train = is_train
            b.octx.layout = None          # plain values here (see _run_forward)
            ograds = [None] * b.n_out if b.ograds is None else \
                [None if ge is None else vals[ge] for ge in b.ograds]
            ins = [None] * b.n_args if b.in_data is None else [vals[e] for e in b.in_data]
            outd = [None] * b.n_out if b.out_data is None else \
                [None if e is None else vals[e] for e in b.out_data]
            grads = bwd(b.op, b.octx, b.p, ograds, ins, outd, [vals[e] for e in b.aux],
                        [self._target(t) for t in b.targets], b.req, b.out_meta, b.name)
            if monitor is not None:       # Monitor sees backward outputs too
                monitor_backward(monitor, self._monitor_all, b.name, ograds + ins + outd,
                                 grads, self._ctx, b.octx.in_shapes)

    def _finish_backward(self):
        plan = self._graph.backward
        for pos in plan.zero_fill:
            if pos in self._shadows:
                self._shadows[pos][...] = 0
            else:
                self.grad_arrays[pos]._data[...] = 0
        for pos, dense in self._shadows.items():      # sparse gradients take their values
            self.grad_arrays[pos]._set_dense(dense)

    # --------------------------------------------------------------- utilities
    def set_monitor_callback(self, callback, monitor_all=False):
        """Call ``callback(name, array)`` with a copy of every operator output
        (``<node>_<output>``) after each forward; with monitor_all also every input
        (``<node>_<input>``) before the operator runs. ``name`` is bytes, as MXNet's C
        API hands it (``mx.base.py_str`` makes it a str). Forward runs synchronously
        while a callback is installed."""
        def with_bytes_name(name, array):
            callback(name.encode("utf-8"), array)
        self._set_monitor(with_bytes_name, monitor_all)

    def _set_monitor(self, callback, monitor_all):
        """The monitor callback, called with str names (Monitor, Gluon's op hooks)."""
        self._monitor = callback
        self._monitor_all = bool(monitor_all)

    def copy_params_from(self, arg_params, aux_params=None, allow_extra_params=False):
        """Copy values from dicts of arrays into the bound arguments / aux states."""
        for name, array in arg_params.items():
            if name in self.arg_dict:
                dst = self.arg_dict[name]
                _copy_into(array, dst, name)
            elif not allow_extra_params:
                raise ValueError(f'Find name "{name}" that is not in the arguments')
        if aux_params is None:
            return
        for name, array in aux_params.items():
            if name in self.aux_dict:
                _copy_into(array, self.aux_dict[name], name)
            elif not allow_extra_params:
                raise ValueError(f"Find name {name} that is not in the auxiliary states")

    def reshape(self, partial_shaping=False, allow_up_sizing=False, **kwargs):
        """A new executor for new input shapes that shares this one's parameters
        (and, for smaller arrays, their memory). See bind.reshape."""
        from .bind import reshape
        return reshape(self, partial_shaping, allow_up_sizing, kwargs)

    def get_optimized_symbol(self):
        return self._optimized.__copy__()

    def debug_str(self):
        """The graph with its backward steps, and the memory plan's figures."""
        g = self._graph
        lines = [self._symbol.debug_str().rstrip("\n")]
        for step in g.backward.steps:
            node = g.nodes[step.nid]
            lines += ["-" * 20, f"Op:_backward_{node.op.name}, Name={node.name}_backward",
                      "Reads:"]
            reads = [f"out_grad[{i}]" for i, x in enumerate(step.ograds or []) if x is not None]
            reads += [g.entry_name(e) for e in (step.in_data or [])]
            reads += [g.entry_name(e) for e in (step.out_data or []) if e is not None]
            lines += [f"\t{r}" for r in reads]
        lines.append(self.memory_plan.summary().rstrip("\n"))
        return "\n".join(lines) + "\n"


# Executors whose arrays take at most this many bytes in all (arguments, auxiliary
# states, planned intermediates) run in the calling thread when idle
# (MXNET_EXEC_INLINE_MAX_BYTES): graphs so small that handing them to a worker costs
# more than it hides. Their Python (a few us a node) would otherwise contend for the
# GIL with the caller's, and the caller of a training loop waits for every batch's
# outputs anyway (the metric). Measured on 2 cores, OMP_NUM_THREADS=2, load ~1: the
# 784-128-10 MLP executor (batch 128, ~1.1 MB) 700 -> 670 us a forward+backward, and
# Module.fit of the 784-128-64-10 MLP (batch 100, ~1 MB) 0.95 -> 0.74 ms a batch,
# inline against through the engine. Larger graphs (LeNet: 19 MB and more) go to a
# worker, so the caller's Python overlaps their kernels; on a heavily oversubscribed
# machine (load 14 on 2 cores) a thread that sleeps while its worker computes gets
# the CPU back sooner, so set MXNET_EXEC_INLINE_MAX_BYTES lower there.
INLINE_MAX_BYTES = 4 << 20


def _nbytes(g, args, aux):
    """Bytes of the executor's arguments, aux states and planned entries."""
    n = g.memory.naive_bytes
    for a in list(args) + list(aux):
        n += a.size * np.dtype(a.dtype).itemsize
    return n


def _copy_into(array, dst, name):
    from ..ndarray.creation import array as nd_array
    if not isinstance(array, NDArray):
        array = nd_array(array, ctx=dst.context, dtype=dst.dtype)
    if tuple(array.shape) != tuple(dst.shape):
        raise MXNetError(f"copy_params_from: {name} has shape {array.shape}, the executor's "
                         f"is {dst.shape}")
    if np.dtype(array.dtype) != np.dtype(dst.dtype):
        array = array.astype(dst.dtype)
    array.copyto(dst)


class _BindError(MXNetError, ValueError):
    """Bad arrays or names given to bind/forward (a ValueError, as in MXNet)."""


class _ArgumentError(MXNetError, TypeError):
    """An unknown argument name (a TypeError, as in MXNet)."""
