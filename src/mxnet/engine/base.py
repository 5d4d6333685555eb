"""The engine interface shared by NaiveEngine and ThreadedEngine."""
import contextlib
import threading

from ..backend import device_scope
from ..base import MXNetError
from .errors import AsyncError, as_mxnet_error, describe_failure, live_error
from .var import Var

__all__ = ["RunContext", "Operator", "Engine", "FnProperty"]

# Profiler hook (mxnet.profiler sets it while recording, else None): pushed work passes
# through profile_hook(fn, name, ctx, kind) -> fn, kind 'sync'/'async'.
profile_hook = None


class FnProperty:
    """Kinds of pushed functions, as in MXNet (kept for API compatibility)."""
    NORMAL, COPY_TO_GPU, COPY_FROM_GPU, CPU_PRIORITIZED, ASYNC, DELETE_VAR = range(6)


class RunContext:
    """What a running function learns from the engine: its context and stream."""
    __slots__ = ("ctx", "stream", "is_bulk")

    def __init__(self, ctx, stream=None):
        self.ctx, self.stream, self.is_bulk = ctx, stream, False


class Operator:
    """A prepared operation (seed 002's OprHandle): an async function with fixed
    dependencies, pushed many times without re-declaring them."""
    __slots__ = ("fn", "const_vars", "mutate_vars", "name", "prop", "deleted")

    def __init__(self, fn, const_vars, mutate_vars, name=None, prop=FnProperty.NORMAL):
        self.fn = fn
        self.const_vars, self.mutate_vars = dedup_vars(const_vars, mutate_vars)
        self.name, self.prop, self.deleted = name, prop, False


def dedup_vars(const_vars, mutate_vars):
    """Drop repeats, and readers that are also writers (a write covers the read)."""
    mutate = list(dict.fromkeys(mutate_vars))
    mset = set(map(id, mutate))
    const = [v for v in dict.fromkeys(const_vars) if id(v) not in mset]
    return const, mutate


class Engine:
    """Common API: ``push_sync``, ``push_async``, ``new_operator``/``push``,
    ``delete_variable``, ``wait_for_var``, ``wait_for_all``."""

    def __init__(self):
        self._exceptions = []          # failures not yet reported by wait_for_all
        self._exc_lock = threading.Lock()

    # --- public API -------------------------------------------------------
    @staticmethod
    def new_variable(name=None):
        return Var(name)

    def new_operator(self, fn, const_vars, mutate_vars, name=None, prop=FnProperty.NORMAL):
        """Prepare an async function ``fn(run_ctx, on_complete)`` for repeated pushes."""
        return Operator(fn, const_vars, mutate_vars, name, prop)

    def delete_operator(self, opr):
        opr.deleted = True

    def push(self, opr, ctx, priority=0):
        if opr.deleted:
            raise MXNetError(f"operator {opr.name or opr!r} was deleted")
        fn = opr.fn if profile_hook is None else profile_hook(opr.fn, opr.name, ctx, "async")
        self._push_block(fn, True, ctx, opr.const_vars, opr.mutate_vars, priority, opr.name)

    def push_async(self, fn, ctx, const_vars=(), mutate_vars=(), priority=0, name=None):
        """Push ``fn(run_ctx, on_complete)``; it is done when it calls ``on_complete()``
        (or ``on_complete(exc)`` to report a failure)."""
        const, mutate = dedup_vars(const_vars, mutate_vars)
        fn = fn if profile_hook is None else profile_hook(fn, name, ctx, "async")
        self._push_block(fn, True, ctx, const, mutate, priority, name)

    def push_sync(self, fn, ctx, const_vars=(), mutate_vars=(), priority=0, name=None):
        """Push ``fn(run_ctx)``; returns at once (NaiveEngine: after running it)."""
        const, mutate = dedup_vars(const_vars, mutate_vars)
        fn = fn if profile_hook is None else profile_hook(fn, name, ctx, "sync")
        self._push_block(fn, False, ctx, const, mutate, priority, name)

    def delete_variable(self, delete_fn, ctx, var):
        """Run ``delete_fn(run_ctx)`` after all work pending on var, then retire var."""
        def run(rctx):
            try:
                if delete_fn is not None:
                    delete_fn(rctx)
            finally:
                var._deleted = True
        self._push_block(run, False, ctx, [], [var], 0, "DeleteVariable")

    def run_inline(self, fn, const_vars, mutate_vars, name=None, ctx=None):
        """Run ``fn(None)`` now, in the calling thread (with ``ctx``'s device current),
        when no pushed work is pending on ``mutate_vars``, none but reads on
        ``const_vars``, and no var carries a failure (then the engine would run it at
        once anyway; this skips the hand-off to a worker). A failure of ``fn`` is
        recorded on ``mutate_vars`` and raised at the next sync point, as for pushed
        work. Returns False, running nothing, when the vars are not idle or the
        profiler is recording (it sees pushed work only): push it then."""
        if profile_hook is not None:
            return False
        for v in const_vars:
            # a read may run beside pending reads, as the engine would grant it (a GPU
            # copy's source is held by a pending read until the device has read it)
            if v.exception is not None or (v.num_pending and not self._only_read(v)):
                return False
        for v in mutate_vars:
            if v.num_pending or v.exception is not None:
                return False
        try:
            with device_scope(ctx):
                fn(None)
        except BaseException as exc:   # recorded, raised at the sync point
            self._record_failure(exc, mutate_vars, name, const_vars)
            if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                raise                  # the user stops now (the outputs stay poisoned)
        return True

    def wait_for_var(self, var, write=False):
        """Block until every write pushed to var so far is done (``write``: every read
        too, as before writing var's memory in place: MXNet's WaitToWrite); raise its
        failure."""
        raise NotImplementedError

    def wait_quietly(self, var, write=False):
        """``wait_for_var`` leaving a failure on var in place: for the engine's own
        waits (reusing a buffer, re-pointing an executor), which are not the sync point
        that reports it."""
        raise NotImplementedError

    def wait_for_all(self):
        raise NotImplementedError

    def _only_read(self, var):
        """Whether every pushed operation pending on var only reads it (a further read
        would be granted at once). Nothing is ever pending in the base engine."""
        return False

    def in_worker(self):
        """Whether the calling thread is one of this engine's workers (running pushed
        work), rather than a thread that pushes work."""
        return False

    def blocking_section(self):
        """Context manager around Python code that runs inside pushed work and may
        wait on other pushed work (a custom operator's callbacks). Engines whose
        workers could all end up waiting keep a spare worker running meanwhile."""
        return contextlib.nullcontext()

    # --- failures (see engine/errors.py for the rule) ------------------------
    def record_failure(self, exc, mutate_vars, name=None, in_shapes=None, owner=None):
        """Poison mutate_vars with exc, a failure of the work named name that read
        arrays of in_shapes; it is raised once, at the first dependent sync point or
        at a ``wait_for_all`` of the thread owner (default: the calling thread)."""
        cell = AsyncError(describe_failure(exc, name, in_shapes),
                          threading.get_ident() if owner is None else owner)
        for v in mutate_vars:
            cell.attach(v)
        with self._exc_lock:
            if len(self._exceptions) >= 64:      # drop the ones already raised
                self._exceptions = [c for c in self._exceptions if c.error is not None]
            self._exceptions.append(cell)
        return cell

    def _record_failure(self, exc, mutate_vars, name=None, const_vars=(), owner=None):
        shapes = [d.shape for d in (getattr(v, "data", None) for v in const_vars)
                  if d is not None] if name is not None else None
        self.record_failure(exc, mutate_vars, name, shapes, owner)

    def _inherit_failure(self, const_vars, mutate_vars, owner):
        """If an input (or an output) of work about to run carries a live failure, the
        work is skipped and its outputs share that failure. Returns True then."""
        for v in (*const_vars, *mutate_vars):
            e = live_error(v) if v.exception is not None else None
            if e is None:
                continue
            if not isinstance(e, AsyncError):        # a permanent marker: wrap it once
                self.record_failure(e, mutate_vars, owner=owner)
                return True
            for m in mutate_vars:
                if m is not v:
                    e.attach(m, owner)
            e.owners.add(owner)
            return True
        return False

    def _raise_pending(self):
        """Raise the first unraised failure of this thread's work; consume them all."""
        me = threading.get_ident()
        with self._exc_lock:
            mine = [c for c in self._exceptions if me in c.owners]
            self._exceptions = [c for c in self._exceptions
                                if me not in c.owners and c.error is not None]
        first = None
        for c in mine:
            err = c.consume()
            if first is None:
                first = err
        if first is not None:
            raise first

    @staticmethod
    def _raise_var(var):
        e = live_error(var) if var.exception is not None else None
        if e is None:
            return
        if isinstance(e, AsyncError):
            err = e.consume()
            if err is not None:
                raise err
            return
        raise as_mxnet_error(e)
