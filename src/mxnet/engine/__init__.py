"""The runtime dependency engine (seed 002): push work with the variables it reads and
writes; the engine runs it when its dependencies allow, in parallel where they permit.

``MXNET_ENGINE_TYPE`` picks the engine as in MXNet: ``NaiveEngine`` runs work at push
time; ``ThreadedEngine``/``ThreadedEnginePerDevice`` (the default) run it on workers.
"""
import os

from ..base import MXNetError
from .base import Engine, FnProperty, Operator, RunContext
from .errors import AsyncError
from .naive import NaiveEngine
from .threaded import ThreadedEngine
from .var import Var

__all__ = ["Var", "Engine", "NaiveEngine", "ThreadedEngine", "RunContext", "Operator",
           "FnProperty", "get", "set_engine", "new_variable", "push_sync", "push_async",
           "new_operator", "push", "delete_variable", "wait_for_var", "wait_for_all",
           "bulk", "set_bulk_size"]

_ENGINES = {"NaiveEngine": NaiveEngine, "ThreadedEngine": ThreadedEngine,
            "ThreadedEnginePerDevice": ThreadedEngine,
            "ThreadedEnginePooled": ThreadedEngine}
_engine = None


def _create(kind):
    if kind not in _ENGINES:
        raise MXNetError(f"unknown MXNET_ENGINE_TYPE {kind!r}; expected one of {sorted(_ENGINES)}")
    return _ENGINES[kind]()


def _reset_after_fork():
    """A forked child (DataLoader workers) inherits no engine threads: give it a fresh
    engine of the same kind instead of one whose workers do not exist there."""
    global _engine
    if _engine is not None:
        _engine = type(_engine)()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_after_fork)


def get():
    """The process-wide engine, created on first use from MXNET_ENGINE_TYPE."""
    global _engine
    if _engine is None:
        _engine = _create(os.environ.get("MXNET_ENGINE_TYPE", "ThreadedEnginePerDevice"))
    return _engine


def set_engine(kind):
    """Switch engines (waits for the current one to drain first). Returns the new one."""
    global _engine
    if _engine is not None:
        _engine.wait_for_all()
    _engine = _create(kind) if isinstance(kind, str) else kind
    return _engine


def new_variable(name=None):
    return Var(name)


def push_sync(fn, ctx, const_vars=(), mutate_vars=(), priority=0, name=None):
    get().push_sync(fn, ctx, const_vars, mutate_vars, priority, name)


def push_async(fn, ctx, const_vars=(), mutate_vars=(), priority=0, name=None):
    get().push_async(fn, ctx, const_vars, mutate_vars, priority, name)


def new_operator(fn, const_vars, mutate_vars, name=None):
    return get().new_operator(fn, const_vars, mutate_vars, name)


def push(opr, ctx, priority=0):
    get().push(opr, ctx, priority)


def delete_variable(delete_fn, ctx, var):
    get().delete_variable(delete_fn, ctx, var)


def wait_for_var(var):
    get().wait_for_var(var)


def wait_for_all():
    """Wait for all pushed work, then for every GPU in use to finish its queued kernels
    (CuPy launches are asynchronous, so an operation is "done" for the engine once its
    kernels are queued)."""
    try:
        get().wait_for_all()
    finally:
        from ..backend import sync_all_devices
        sync_all_devices()


_bulk_size = 0          # MXNet's imperative bulk size starts at 0 (no bulking)


def set_bulk_size(size):
    """Kept for API compatibility (mx.engine.set_bulk_size); returns the previous size."""
    global _bulk_size
    prev, _bulk_size = _bulk_size, int(size)
    return prev


class bulk:
    """``with mx.engine.bulk(n):`` — accepted; operations are not batched further."""

    def __init__(self, size):
        self.size, self.prev = size, None

    def __enter__(self):
        self.prev = set_bulk_size(self.size)

    def __exit__(self, *exc):
        set_bulk_size(self.prev)
