"""The profiler's state and its recorder.

Events are kept in memory as plain tuples while the profiler runs; ``dump`` turns
them into Chrome trace JSON (``trace.py``) and, with ``aggregate_stats``, each timed
event also updates a per-domain table of count/total/min/max (``stats.py``).

Engine operations are seen through one hook: while the profiler runs,
``mxnet.engine.base.profile_hook`` is set to :func:`_wrap`, and the engine (at push),
imperative dispatch (operators run inline in the calling thread) and the executor
(each graph node, when ``profile_symbolic``) pass the work they are about to run
through it. When the profiler is stopped or paused the hook is ``None``: the only
cost left on those paths is that one test.
"""
import threading
import time

from ..base import MXNetError
from ..engine import base as engine_base

__all__ = ["CONFIG_DEFAULTS", "config", "state", "now_us", "record", "record_instant",
           "record_counter", "custom_scope", "name_scope", "device_name"]

# set_config's parameters and MXNet 1.9.1's defaults for them.
CONFIG_DEFAULTS = {
    "profile_all": False,
    "profile_symbolic": True,
    "profile_imperative": True,
    "profile_memory": True,
    "profile_api": True,
    "filename": "profile.json",
    "continuous_dump": True,
    "dump_period": 1.0,
    "aggregate_stats": False,
    "profile_process": "worker",
}

config = dict(CONFIG_DEFAULTS)


class _State:
    """What is running: ``running`` (set_state) and ``paused`` (pause/resume)."""
    running = False
    paused = False
    symbolic = True
    imperative = True

    @property
    def active(self):
        return self.running and not self.paused


state = _State()
_lock = threading.Lock()
events = []            # (ph, name, cat, device, tid, ts_us, dur_us, extra) in record order
stats = {}             # cat -> name -> [count, total_ms, min_ms, max_ms]
thread_names = {}      # thread ident -> (small id, thread name)
_tls = threading.local()
_t0 = time.perf_counter()
_epoch_us = time.time() * 1e6


def now_us():
    """Microseconds since the epoch, from a monotonic clock (so events never go back)."""
    return _epoch_us + (time.perf_counter() - _t0) * 1e6


def _tid():
    ident = threading.get_ident()
    entry = thread_names.get(ident)
    if entry is None:
        with _lock:
            entry = thread_names.setdefault(
                ident, (len(thread_names), threading.current_thread().name))
    return entry[0]


def device_name(ctx):
    """The trace's process name for a context, as MXNet writes it (``cpu/0``)."""
    if ctx is None:
        return "cpu/0"
    return f"{ctx.device_type}/{ctx.device_id}"


def record(name, cat, device, ts, end, tid=None):
    """A timed event from ts to end (microseconds) on thread tid (default: this one)."""
    if tid is None:
        tid = _tid()
    dur = max(end - ts, 0.0)
    events.append(("X", name, cat, device, tid, ts, dur, None))
    if config["aggregate_stats"]:
        ms = dur / 1000.0
        with _lock:
            row = stats.setdefault(cat, {}).get(name)
            if row is None:
                stats[cat][name] = [1, ms, ms, ms]
            else:
                row[0] += 1
                row[1] += ms
                row[2] = min(row[2], ms)
                row[3] = max(row[3], ms)


def record_instant(name, cat, scope):
    """An instant event (a Marker); scope is Chrome's 'g', 'p' or 't'."""
    events.append(("i", name, cat, "cpu/0", _tid(), now_us(), 0.0, scope))
    if config["aggregate_stats"]:
        with _lock:
            stats.setdefault(cat, {})


def record_counter(name, cat, value):
    """A counter sample (a Counter's new value)."""
    events.append(("C", name, cat, "cpu/0", _tid(), now_us(), 0.0, value))


def custom_scope():
    """The custom operator whose Python callback runs in this thread, or None."""
    return getattr(_tls, "custom", None)


def name_scope():
    """The prefix ``profiler.scope`` put on operator names in this thread ('' none)."""
    return getattr(_tls, "scope", "")


class custom_operator:
    """Around a custom operator's Python callback: the callback itself is recorded as
    ``<op_type>::pure_python`` and every operator it runs as ``<op_type>::<name>``, in
    the 'Custom Operator' domain (as MXNet reports them). Costs nothing when off."""
    __slots__ = ("label", "prev", "t0")

    def __init__(self, label):
        self.label = label

    def __enter__(self):
        self.prev = getattr(_tls, "custom", None)
        self.t0 = None
        if state.active:
            _tls.custom = self.label.replace("_backward_", "")
            self.t0 = now_us()
        return self

    def __exit__(self, *exc):
        if self.t0 is not None:
            _tls.custom = self.prev
            if state.active:
                record(f"{self.label}::pure_python", "Custom Operator", "cpu/0", self.t0,
                       now_us())


def _wrap(fn, name, ctx, kind):
    """The engine/dispatch/executor hook: return fn, or fn wrapped to record its run.

    kind: 'sync' (engine fn(rctx)), 'async' (engine fn(rctx, on_complete)),
    'imperative' (an operator body run inline) or 'symbolic' (an executor node).
    """
    if kind == "symbolic" or (name is not None and name.startswith("Executor.")):
        if not state.symbolic:
            return fn
    elif not state.imperative:
        return fn
    custom = getattr(_tls, "custom", None)
    if custom is not None:
        name, cat = f"{custom}::{name}", "Custom Operator"
    else:
        name, cat = getattr(_tls, "scope", "") + (name or "<unnamed>"), "operator"
    device = device_name(ctx)
    if kind == "async":
        def run_async(rctx, on_complete):
            t0, tid = now_us(), _tid()

            def done(exc=None):
                record(name, cat, device, t0, now_us(), tid)
                if exc is None:
                    on_complete()
                else:
                    on_complete(exc)
            fn(rctx, done)
        return run_async

    def run(*args):
        t0 = now_us()
        try:
            return fn(*args)
        finally:
            record(name, cat, device, t0, now_us())
    return run


def install():
    """Point the engine hook at the recorder when running and not paused."""
    if state.active:
        all_ = bool(config["profile_all"])
        state.symbolic = all_ or bool(config["profile_symbolic"])
        state.imperative = all_ or bool(config["profile_imperative"])
        engine_base.profile_hook = _wrap if (state.symbolic or state.imperative) else None
    else:
        engine_base.profile_hook = None


def clear_events():
    events.clear()


def check_process(profile_process):
    if profile_process not in ("worker", "server"):
        raise MXNetError(f"Invalid Input: {profile_process!r}, valid values are: "
                         "{'server', 'worker'}")
    if profile_process == "server":
        raise MXNetError("profiling a kvstore server process is not supported: pymxnet "
                         "has no distributed kvstore server (use profile_process='worker')")
