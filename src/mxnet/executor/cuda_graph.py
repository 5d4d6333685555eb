"""CUDA graphs for hybridized blocks (MXNet 1.9.1's ``MXNET_ENABLE_CUDA_GRAPHS``).

With ``MXNET_ENABLE_CUDA_GRAPHS=1`` and ``hybridize(static_alloc=True,
static_shape=True)``, each bound executor of a CachedOp on a GPU runs its forward (per
training mode) and its backward (per set of given head gradients) the usual way for a
few warm-up calls — cuDNN algorithm searches, kernel compilation and every lazily made
buffer happen then — and is then recorded once with CuPy's stream capture and replayed
with one ``cudaGraphLaunch`` per call, which removes the per-operator Python and launch
cost. Off by default, as in MXNet; ``MXNET_CUDA_GRAPHS_VERBOSE=1`` writes each capture,
drop and reason for running without a graph to stderr; ``MXNET_CUDA_GRAPHS_WARMUP`` (a
pymxnet addition, default 2) is the number of ordinary runs of a signature before it is
captured.

A replay must see every buffer at the address it was captured with:

* the executor's planned buffers, its own output arrays and its gradient arrays are
  fixed while graphs are on. Each call hands the caller copies of the outputs, so
  nothing the caller holds is overwritten by a later replay; the gradients go straight
  into the variables' gradient buffers where the tape hands them (grad_req 'write',
  one use: part of the backward graph's key, so a graph only ever writes where it was
  captured to write), else they are lent (the tape node's ``borrowed_results``:
  autograd copies them before the entry can run again);
* inputs whose buffer stayed the same over the warm-up (parameters, auxiliary states)
  are read in place ("alias"); inputs whose buffer changed (data batches) are copied
  into a buffer of ours before each launch ("copy"); auxiliary states in copy mode are
  copied back after it. An aliased input found at another address before a launch
  moves to copy mode and the entry's graphs are captured again (at most
  ``_MAX_RECAPTURES`` times, then the entry runs without graphs);
* whatever the captured work allocates comes from a private CuPy memory pool and a
  private storage scope, never from or back to the shared free lists.

A graph is never used where it could give a different result: random operators
(samplers, Dropout in training with ``axes`` or with its kernel switched off), Python
callbacks (Custom), sparse arrays, monitors
and the operator profiler run the ordinary path, and a capture that fails (a host
synchronisation, a library that refuses capture) leaves that graph off for good with
one RuntimeWarning. The device-independent logic is tested on the CPU with a stand-in
``backend`` (``_test_backend``); ``CupyGraphs`` is the real one.
"""
import os
import sys
import threading
import warnings
import weakref

from .. import engine, storage
from ..backend import cublas_graph
from ..engine import base as _engine_base
from ..engine.errors import live_error
from ..ndarray.chunk import Chunk, PooledChunk
from ..ndarray.ndarray import NDArray
from ..operator.kernels_gpu_dropout import enabled as dropout_enabled
from ..operator.kernels_gpu_dropout import graph_safe as graph_safe_dropout

__all__ = ["config", "runner", "capturing", "GraphRunner", "CupyGraphs", "ineligible_reason",
           "private_pool_bytes"]

_MAX_RECAPTURES = 8
_warned = set()
_test_backend = None          # tests: a stand-in backend that also serves CPU contexts


def _flag(name, default=False):
    v = os.environ.get(name)
    if v is None or not v.strip():
        return default
    return v.strip().lower() not in ("0", "false", "off", "no")


def _truthy(v):
    if isinstance(v, str):
        return v.strip().lower() in ("1", "true", "yes", "on")
    return bool(v)


class Config:
    """What a CachedOp's graphs need to know: warm-up runs and verbosity."""
    __slots__ = ("warmup", "verbose")

    def __init__(self, warmup, verbose):
        self.warmup, self.verbose = warmup, verbose


def config(flags):
    """The graph configuration of a CachedOp with these hybridize ``flags`` (pairs or a
    dict), or None: graphs need MXNET_ENABLE_CUDA_GRAPHS=1 and both static_alloc and
    static_shape, as in MXNet."""
    if not _flag("MXNET_ENABLE_CUDA_GRAPHS"):
        return None
    f = dict(flags or ())
    if not (_truthy(f.get("static_alloc", False)) and _truthy(f.get("static_shape", False))):
        return None
    try:
        warmup = max(1, int(os.environ.get("MXNET_CUDA_GRAPHS_WARMUP", "2")))
    except ValueError:
        warmup = 2
    return Config(warmup, _flag("MXNET_CUDA_GRAPHS_VERBOSE"))


def capturing():
    """True on a thread that is recording a CUDA graph (kernels that would be refused
    inside a capture choose a capturable route then: backend/cublas_graph.py)."""
    return cublas_graph.capturing()


# --- the device side ----------------------------------------------------------------------
class CupyGraphs:
    """Capture and launch through CuPy: one capture stream per device, one private
    memory pool per runner (the graphs of one entry run one after another, so their
    scratch memory may overlap as it did in the capture; two entries' graphs may be
    launched from two threads, so they never share scratch memory)."""

    _per_device = {}
    _lock = threading.Lock()
    _pools = weakref.WeakSet()

    def __init__(self, cp, device_id):
        self.cp, self.device_id = cp, device_id
        self.stream = None

    @classmethod
    def get(cls, cp, device_id):
        with cls._lock:
            b = cls._per_device.get(device_id)
            if b is None:
                b = cls._per_device[device_id] = cls(cp, device_id)
        return b

    def ident(self, arr):
        """What must not change between capture and launch: address and strides."""
        return arr.data.ptr, arr.strides

    def capture(self, fn, owner):
        """Record ``fn()``'s device work into a graph (nothing runs); raises when the
        capture fails. What it allocates comes from ``owner``'s private pool."""
        cp = self.cp
        with cp.cuda.Device(self.device_id):
            if self.stream is None:
                # non-blocking: no implicit synchronisation with the legacy default
                # stream, which other threads keep using while this one captures
                self.stream = cp.cuda.Stream(non_blocking=True)
            pool = getattr(owner, "pool", None)
            if pool is None:
                pool = owner.pool = cp.cuda.MemoryPool()
                try:
                    self._pools.add(pool)           # for private_pool_bytes()
                except TypeError:
                    pass                            # not weakly referenceable
            # libraries' per-thread handles are made before the capture (creating one
            # allocates and synchronises); the engine's workers made theirs in warm-up
            cublas_graph.prepare(self.device_id)
            from ..backend.cudnn._runtime import try_runtime
            rt = try_runtime()
            if rt is not None:
                rt.handle(self.device_id)
            s = self.stream
            with cp.cuda.using_allocator(pool.malloc), s:
                s.begin_capture()
                try:
                    fn()
                except BaseException:
                    try:
                        s.end_capture()
                    except Exception:  # noqa: BLE001  (already invalidated)
                        pass
                    raise
                return s.end_capture()

    def launch(self, graph):
        """Run the graph on the calling thread's current stream of its device (where
        the ordinary path would have queued its kernels)."""
        with self.cp.cuda.Device(self.device_id):
            graph.launch()


def private_pool_bytes():
    """Device memory held by the capture pools (what graphs' scratch space costs; not
    in CuPy's default pool statistics)."""
    return sum(p.total_bytes() for p in list(CupyGraphs._pools))


def _backend_for(ctx):
    if _test_backend is not None:
        return _test_backend
    if ctx.device_typeid != 2:
        return None
    from ..backend import cupy_or_none
    cp = cupy_or_none()
    return None if cp is None else CupyGraphs.get(cp, ctx.device_id)


# --- which graphs may be captured ------------------------------------------------------------
_RANDOM_WORDS = ("random", "dropout", "shuffle", "bernoulli", "multinomial")
_RANDOM_PREFIXES = ("_sample_", "sample_", "_npi_choice", "_npi_normal", "_npi_uniform",
                    "_npi_gamma", "_npi_exponential", "_npi_laplace", "_npi_gumbel",
                    "_npi_logistic", "_npi_pareto", "_npi_powerd", "_npi_rayleigh",
                    "_npi_weibull")
# operators that run Python on the host every call (callbacks; control flow, whose
# loop counts and branches are decided there from the values)
_HOST_OPS = frozenset(("Custom", "_NDArray", "_Native", "_foreach", "_while_loop", "_cond"))


def ineligible_reason(nodes, is_train):
    """Why a graph of these ``(op name, params)`` pairs may not be captured (None when
    it may): random draws replay the same numbers, Python callbacks do not run again.
    Dropout draws only in training, or with mode='always', and without ``axes`` it
    draws from the device's Philox stream, which a replay moves on
    (operator/kernels_gpu_dropout.py), as RNN's dropout between layers does;
    LeakyReLU('rrelu') draws only in training."""
    for name, p in nodes:
        low = name.lower()
        if name in _HOST_OPS:
            return f"operator {name} runs Python code"
        if "dropout" in low:
            if name == "Dropout" and graph_safe_dropout(p):
                continue        # draws on the device, from a position kept there
            if is_train or getattr(p, "mode", None) == "always":
                return f"operator {name} draws random numbers"
            continue
        if any(w in low for w in _RANDOM_WORDS) or low.startswith(_RANDOM_PREFIXES):
            return f"operator {name} draws random numbers"
        # operators that draw only in training with some parameters
        if is_train and ((name == "RNN" and float(getattr(p, "p", 0) or 0) > 0
                          and not dropout_enabled()) or (
                name == "LeakyReLU" and getattr(p, "act_type", None) == "rrelu")):
            return f"operator {name} draws random numbers in training"
    return None


def _warn_once(kind, msg):
    if kind not in _warned:
        _warned.add(kind)
        warnings.warn(f"pymxnet: {msg}", RuntimeWarning, stacklevel=4)


def runner(cfg, entry):
    """A GraphRunner for a CachedOp entry, or None when graphs are off for it."""
    if cfg is None:
        return None
    backend = _backend_for(entry.ctx)
    if backend is None:
        return None
    return GraphRunner(entry, backend, cfg)


class GraphRunner:
    """Runs one bound executor (a CachedOp entry) with graphs once warmed up.

    Keys: ``("fwd", is_train)`` and ``("bwd", is_train, head shapes/dtypes or None,
    gradient array identities)``; the entry itself already stands for one (context,
    shapes, dtypes, gradient requests).
    """

    def __init__(self, entry, backend, cfg):
        self.entry, self.backend = entry, backend
        self.warmup, self.verbose = cfg.warmup, cfg.verbose
        self.wrappers = list(entry.args) + list(entry.aux)
        self.n_args = len(entry.args)
        n = len(self.wrappers)
        self.last = [None] * n        # each input buffer's identity at the last run
        self.moved = [False] * n      # seen at another address between runs: copy mode
        self.static = [None] * n      # our buffers of the copy-mode inputs
        self.pinned = [None] * n      # the arrays aliased inputs were captured with
        self.pinned_ident = [None] * n
        self.graphs = {}
        self.runs = {}
        self.off = {}                 # key -> why it runs without a graph
        self.recaptures = 0
        self.static_fresh = False     # the copy-mode buffers hold this call's inputs
        self.heads = {}               # backward key -> our head-gradient buffers
        self.disabled = None
        self.replays = 0
        self.pool = None              # the backend's private memory for captured work

    # --- bookkeeping --------------------------------------------------------------------
    def wait_idle(self):
        """Before the entry's inputs are re-pointed: the previous run on this executor
        (which reads them when it runs) has finished."""
        var = self.entry.ex._mem.var
        if var.num_pending:             # a failure stays for whoever reads that run's results
            engine.get().wait_quietly(var)

    def _dynamic_off(self):
        ex = self.entry.ex
        return ex._monitor is not None or _engine_base.profile_hook is not None

    def _static_reason(self, key):
        ex = self.entry.ex
        if self.disabled is not None:
            return self.disabled
        if ex._sparse_heads or any(w._sparse for w in self.wrappers) or any(
                g is not None and g._sparse for g in self.entry.grads):
            return "sparse arrays"
        nodes = [(n.op.name, n.params) for n in ex._graph.nodes if n.op is not None]
        return ineligible_reason(nodes, key[1])

    def _due(self, key):
        if key in self.graphs or key in self.off:
            return False
        if self.runs.get(key, 0) < self.warmup or self._dynamic_off():
            return False
        reason = self._static_reason(key)
        if reason is not None:
            self.off[key] = reason
            self._say(f"{key} runs without a CUDA graph: {reason}")
            return False
        return True

    def _say(self, msg):
        if self.verbose:                # MXNET_CUDA_GRAPHS_VERBOSE=1: on stderr, as MXNet
            sys.stderr.write(f"[pymxnet CUDA graphs] {msg}\n")

    def _drop(self, why):
        """Forget every graph of this entry (they are captured again when due)."""
        self.graphs.clear()
        self.static_fresh = False
        self.recaptures += 1
        self._say(f"dropped the graphs of an entry: {why}")
        if self.recaptures > _MAX_RECAPTURES:
            self.disabled = "its inputs keep moving"
            _warn_once("moving", "CUDA graphs turned off for a hybridized block whose "
                       "parameter buffers keep moving")
            return
        for key in list(self.runs):
            self.runs[key] = self.warmup      # warm already: capture at the next call

    # --- capture ------------------------------------------------------------------------
    def _capture(self, key, run):
        """Record ``run`` (the executor's forward or backward) into a graph, in this
        thread, reading the copy-mode inputs from our buffers and the aliased ones
        from where they are now."""
        for w in self.wrappers:
            c = w._chunk
            if c.num_pending:
                self.wait_idle()
                engine.get().wait_quietly(c)
            if live_error(c) is not None:
                return                  # the ordinary path runs, and its outputs report it
        self.wait_idle()
        xp = self.entry.xp
        arrays = [w._data for w in self.wrappers]
        for i, a in enumerate(arrays):
            if self.moved[i]:
                if self.static[i] is None:
                    self.static[i] = xp.empty(a.shape, a.dtype)
                self.pinned[i] = self.pinned_ident[i] = None
            else:
                self.pinned[i] = a
                self.pinned_ident[i] = self.backend.ident(a)
        self.static_fresh = False

        def pinned_run():
            saved = [(w._chunk, w._view) for w in self.wrappers]
            try:
                for i, w in enumerate(self.wrappers):
                    w._chunk = Chunk(self.static[i] if self.moved[i] else self.pinned[i])
                    w._view = None
                run()
            finally:
                for w, (c, v) in zip(self.wrappers, saved):
                    w._chunk, w._view = c, v
        prev = cublas_graph.capture_flag(True)
        try:
            with storage.private_scope():
                graph = self.backend.capture(pinned_run, self)
        except Exception as err:  # noqa: BLE001  (any failure: the ordinary path runs)
            self.off[key] = f"capture failed: {type(err).__name__}: {err}"
            _warn_once(("capture", type(err).__name__),
                       f"CUDA graph capture failed ({type(err).__name__}: {err}); "
                       "that graph runs without CUDA graphs")
            self._say(f"{key}: {self.off[key]}")
            return
        finally:
            cublas_graph.capture_flag(prev)
        self.graphs[key] = graph
        self._say(f"captured {key} ({sum(self.moved)} copied inputs, "
                  f"{len(self.moved) - sum(self.moved)} aliased)")

    # --- one run ------------------------------------------------------------------------
    def _step(self, key, run, fill_static, forward):
        """Replay the key's graph when there is one and every aliased input is where
        it was; else run the ordinary path. Runs where the executor's work runs (in
        the calling thread when its arrays are idle, else an engine worker once the
        inputs are written; both launch on the device's legacy default stream, which
        is what orders them: nothing here sets a stream per thread). Only a forward
        writes copy-mode
        auxiliary states back (a backward leaves them alone: another entry's forward
        may have updated the caller's arrays since)."""
        arrays = [w._data for w in self.wrappers]
        ident = self.backend.ident
        ids = [ident(a) for a in arrays]
        graph = self.graphs.get(key)
        if graph is not None and not self._dynamic_off():
            moved = [i for i, p in enumerate(self.pinned_ident)
                     if p is not None and ids[i] != p]
            if not moved:
                if fill_static:
                    for i, a in enumerate(arrays):
                        if self.moved[i]:
                            self.static[i][...] = a
                self.backend.launch(graph)
                self.replays += 1
                for i in range(self.n_args, len(arrays) if forward else 0):
                    if self.moved[i]:            # auxiliary states written back
                        arrays[i][...] = self.static[i]
                self.last = ids
                return True
            for i in moved:
                self.moved[i] = True
            self._drop(f"{len(moved)} aliased input(s) moved")
        last = self.last
        new = [i for i, cur in enumerate(ids)
               if last[i] is not None and cur != last[i] and not self.moved[i]]
        for i in new:
            self.moved[i] = True
        if new and self.graphs:
            # every graph of an entry reads its inputs the same way
            self._drop(f"{len(new)} input(s) moved")
        self.last = ids
        run()
        self.runs[key] = self.runs.get(key, 0) + 1
        return False

    def forward(self, is_train):
        """The executor's forward for this call (inputs already pointed by
        ``_Entry.load``); returns the outputs, copies of the fixed output arrays."""
        entry = self.entry
        ex = entry.ex
        key = ("fwd", bool(is_train))
        run = lambda: ex._run_forward(bool(is_train))  # noqa: E731
        if self._due(key):
            self._capture(key, run)
        own = entry.own_outputs
        fresh = []
        for o in own:
            data, block = storage.empty(entry.ctx, o._shape, o._dtype)
            fresh.append(NDArray(PooledChunk(data, block), o._shape, o._dtype, entry.ctx))

        def fn(rctx):
            self.static_fresh = self._step(key, run, True, True)
            for dst, src in zip(fresh, own):
                dst._chunk.data[...] = src._data
        # In this thread when the arrays are idle, whatever the executor's size: the
        # replay only queues the graph on the device, and a worker hand-off would make
        # every reader of the outputs (the loss, its backward) queue behind it too; on
        # an H100 the seed CNN's graphed step waited ~3 ms a step for such a worker
        ex._push(fn, ex.arg_arrays, fresh + ex.aux_arrays, "CUDAGraph.forward", inline=True,
                 new_run=True)
        outs = []
        for o, pos in zip(ex.outputs, entry.out_pos):
            outs.append(o.copy() if pos < 0 else fresh[pos])
        return outs

    def backward(self, ograds, is_train, need):
        """The executor's backward from the head gradients ``ograds`` (device arrays or
        None); returns fresh gradient arrays (None where not needed). Runs in the
        calling thread once the executor's forward and the inputs are done."""
        entry = self.entry
        ex = entry.ex
        self.wait_idle()            # the forward's run (it may change this runner's state)
        # the gradient arrays are where a graph writes: the variables' own buffers when
        # the tape gave them (gluon/_cached_op._point_grads), else ours; a graph is
        # replayed only into the arrays it was captured with
        key = ("bwd", bool(is_train),
               tuple(None if g is None else (g.shape, g.dtype.str) for g in ograds),
               tuple(None if g is None else self.backend.ident(g._data)
                     for g in entry.grads))
        heads = self.heads.get(key)
        if heads is None:
            xp = entry.xp
            heads = self.heads[key] = [None if g is None else
                                       NDArray(Chunk(xp.empty(g.shape, g.dtype)),
                                               tuple(g.shape), g.dtype, entry.ctx)
                                       for g in ograds]
        run = lambda: ex._run_backward(list(heads), bool(is_train))  # noqa: E731
        if self._due(key):
            self._capture(key, run)
        eng = engine.get()
        for w in self.wrappers:
            if w._chunk.num_pending or w._chunk.exception is not None:
                eng.wait_for_var(w._chunk)
        for h, g in zip(heads, ograds):
            if h is not None:
                h._chunk.data[...] = g
        self._step(key, run, not self.static_fresh, False)
        # lent, not copied: the tape copies them into the variables' buffers (a
        # gradient-sized copy and buffer less per step)
        return [g._chunk.data if g is not None and (need is None or need[i]) else None
                for i, g in enumerate(self.entry.grads)]
