"""ThreadedEngine: per-variable queues resolved under one lock, a pool of workers.

Each pushed block waits for one grant per variable it uses. A variable grants every
reader at the head of its queue together and a writer alone, so writes to a var run
in push order and readers see the last earlier writer. A block whose grants are all
in is handed to the worker pool in priority order.
"""
import contextlib
from collections import deque
import heapq
import itertools
import threading

from ..backend import device_scope
from ..base import env_int
from .base import Engine, RunContext

__all__ = ["ThreadedEngine"]

_current = threading.local()      # .engine: set in that engine's worker threads


def _wait(var, blk, is_write):
    """Queue blk on var (the queue is made on first use)."""
    q = var._queue
    if q is None:
        q = var._queue = deque()
    q.append((blk, is_write))


class _Block:
    __slots__ = ("fn", "is_async", "ctx", "const_vars", "mutate_vars", "wait", "priority",
                 "name", "always_run", "owner")

    def __init__(self, fn, is_async, ctx, const_vars, mutate_vars, priority, name):
        self.fn, self.is_async, self.ctx = fn, is_async, ctx
        self.const_vars, self.mutate_vars = const_vars, mutate_vars
        self.wait = len(const_vars) + len(mutate_vars) + 1   # +1: released after push
        self.priority, self.name = priority, name
        self.always_run = False         # sync markers run even after upstream failures
        self.owner = threading.get_ident()   # the pushing thread owns its failures


class ThreadedEngine(Engine):
    """Asynchronous engine: ``push`` returns at once; work runs on worker threads.

    ``MXNET_CPU_WORKER_NTHREADS`` sets the number of workers (default 2). NumPy and
    CuPy release the GIL inside their kernels, so independent large operations overlap.
    """

    def __init__(self, num_workers=None):
        super().__init__()
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._ready = []                 # heap of (-priority, seq, block)
        self._ready_cv = threading.Condition(threading.Lock())
        self._seq = itertools.count()
        self._outstanding = 0
        n = num_workers or max(1, env_int("MXNET_CPU_WORKER_NTHREADS", 2))
        self._workers = [threading.Thread(target=self._work, name=f"mxnet-engine-{i}",
                                          daemon=True) for i in range(n)]
        self._blocked = 0                # workers inside blocking_section()
        self._spares = 0                 # extra workers started for them
        for t in self._workers:
            t.start()

    # --- dependency bookkeeping (all under self._lock) --------------------
    def _push_block(self, fn, is_async, ctx, const_vars, mutate_vars, priority, name,
                    always_run=False):
        blk = _Block(fn, is_async, ctx, const_vars, mutate_vars, priority, name)
        blk.always_run = always_run
        granted = 1
        with self._lock:
            self._outstanding += 1
            for v in const_vars:
                v.num_pending += 1
                if not v._active_write and not v._queue:
                    v._active_reads += 1
                    granted += 1
                else:
                    _wait(v, blk, False)
            for v in mutate_vars:
                v.num_pending += 1
                if not v._active_write and v._active_reads == 0 and not v._queue:
                    v._active_write = True
                    granted += 1
                else:
                    _wait(v, blk, True)
            blk.wait -= granted
            runnable = blk.wait == 0
        if runnable:
            self._schedule(blk)

    def _grant_next(self, var, ready):
        """Hand var to the next waiter(s) in its queue; collect blocks now runnable."""
        q = var._queue
        while q:
            blk, is_write = q[0]
            if is_write:
                if var._active_reads or var._active_write:
                    return
                var._active_write = True
            else:
                if var._active_write:
                    return
                var._active_reads += 1
            q.popleft()
            blk.wait -= 1
            if blk.wait == 0:
                ready.append(blk)
            if is_write:
                return

    def _complete(self, blk):
        ready = []
        with self._lock:
            for v in blk.const_vars:
                v.num_pending -= 1
                v._active_reads -= 1
                self._grant_next(v, ready)
            for v in blk.mutate_vars:
                v.num_pending -= 1
                v._active_write = False
                self._grant_next(v, ready)
            self._outstanding -= 1
            if self._outstanding == 0:
                self._idle.notify_all()
        for r in ready:
            self._schedule(r)

    # --- execution ---------------------------------------------------------
    def _schedule(self, blk):
        with self._ready_cv:
            heapq.heappush(self._ready, (-blk.priority, next(self._seq), blk))
            self._ready_cv.notify()

    def _work(self):
        _current.engine = self
        while True:
            with self._ready_cv:
                while not self._ready:
                    self._ready_cv.wait()
                blk = heapq.heappop(self._ready)[2]
            self._run(blk)

    def _run(self, blk):
        if not blk.always_run and self._inherit_failure(blk.const_vars, blk.mutate_vars,
                                                         blk.owner):
            self._complete(blk)
            return
        rctx = RunContext(blk.ctx)
        if not blk.is_async:
            try:
                with device_scope(blk.ctx):
                    blk.fn(rctx)
            except BaseException as exc:  # recorded, raised at the sync point
                self._record_failure(exc, blk.mutate_vars, blk.name, blk.const_vars,
                                     blk.owner)
            self._complete(blk)
            return
        called = []

        def on_complete(exc=None):
            if called:
                return
            called.append(True)
            if exc is not None:
                self._record_failure(exc, blk.mutate_vars, blk.name, blk.const_vars,
                                     blk.owner)
            self._complete(blk)
        try:
            with device_scope(blk.ctx):
                blk.fn(rctx, on_complete)
        except BaseException as exc:
            on_complete(exc)

    def in_worker(self):
        return getattr(_current, "engine", None) is self

    def _only_read(self, var):
        # under the lock: a worker granting a queued writer sets _active_write and pops
        # the queue in two steps, which a lock-free reader could see half done
        with self._lock:
            return not var._active_write and not var._queue

    @contextlib.contextmanager
    def blocking_section(self):
        """A worker about to run code that may wait on other pushed work (a custom
        operator's Python callback) gets a spare worker to stand in, so waiting
        workers can never leave the pool empty. Spares stay for later sections."""
        if not self.in_worker():
            yield
            return
        with self._ready_cv:
            self._blocked += 1
            spawn = self._blocked > self._spares
            if spawn:
                self._spares += 1
        if spawn:
            threading.Thread(target=self._work, name=f"mxnet-engine-spare-{self._spares}",
                             daemon=True).start()
        try:
            yield
        finally:
            with self._ready_cv:
                self._blocked -= 1

    # --- synchronisation ---------------------------------------------------
    def wait_for_var(self, var, write=False):
        self.wait_quietly(var, write)
        self._raise_var(var)

    def wait_quietly(self, var, write=False):
        if var.num_pending:
            # a marker that reads var (granted after the writes pushed before it) or,
            # for ``write``, writes it (granted after the reads as well)
            done = threading.Event()
            const, mutate = ([], [var]) if write else ([var], [])
            self._push_block(lambda rctx: done.set(), False, None, const, mutate, 1 << 30,
                             "WaitToWrite" if write else "WaitForVar", always_run=True)
            done.wait()

    def wait_for_all(self):
        with self._lock:
            while self._outstanding:
                self._idle.wait()
        self._raise_pending()
