"""Profiler (``mx.profiler``): records what the engine, imperative operators and
executors run, plus user Domains/Tasks/Frames/Events/Counters/Markers, and writes a
Chrome trace JSON (chrome://tracing, Perfetto) and an aggregate table.

    mx.profiler.set_config(profile_all=True, aggregate_stats=True, filename='p.json')
    mx.profiler.set_state('run')
    ...                                   # the code to profile
    mx.profiler.set_state('stop')
    mx.profiler.dump()                    # writes p.json
    print(mx.profiler.dumps())            # per-domain count/total/min/max/avg table

Operators are recorded with their names in the 'operator' domain (``profile_imperative``
for NDArray calls, ``profile_symbolic`` for each node of a bound executor or a
hybridized block); operators called inside a custom operator's Python code appear in
'Custom Operator' as ``<op_type>::<name>``. pymxnet has no C API, so ``profile_api``
records nothing, and ``profile_memory`` does not record allocations yet.
"""
import contextlib
import warnings

from ..base import MXNetError
from . import core, output
from .objects import Counter, Domain, Event, Frame, Marker, Task

__all__ = ["set_config", "set_state", "pause", "resume", "dump", "dumps",
           "scope", "Domain", "Task", "Frame", "Event", "Counter", "Marker",
           "profiler_set_config", "profiler_set_state", "dump_profile",
           "set_kvstore_handle"]


class _InvalidOption(MXNetError, AssertionError):
    """A bad dumps() option (an AssertionError, as MXNet's checks are)."""


def set_config(**kwargs):
    """Configure the profiler. Keywords (MXNet 1.9.1's, same defaults):
    profile_all, profile_symbolic, profile_imperative, profile_memory, profile_api,
    filename, continuous_dump, dump_period, aggregate_stats, profile_process."""
    new = {}
    for key, value in kwargs.items():
        if key not in core.CONFIG_DEFAULTS:
            raise MXNetError(f"Cannot find argument '{key}', Possible Arguments: "
                             f"{', '.join(core.CONFIG_DEFAULTS)}")
        default = core.CONFIG_DEFAULTS[key]
        if isinstance(default, bool):
            value = bool(value)
        elif isinstance(default, float):
            value = float(value)
        else:
            value = str(value)
        new[key] = value
    core.check_process(new.get("profile_process", "worker"))
    core.config.update(new)
    core.install()


def set_state(state="stop", profile_process="worker"):
    """'run' starts recording, 'stop' stops it (recorded events stay until dump)."""
    running = {"stop": False, "run": True}[state]
    core.check_process(profile_process)
    core.state.running = running
    if running:
        core.state.paused = False
    core.install()


def pause(profile_process="worker"):
    """Stop recording for a while without ending the session (see resume)."""
    core.check_process(profile_process)
    core.state.paused = True
    core.install()


def resume(profile_process="worker"):
    """Record again after pause."""
    core.check_process(profile_process)
    core.state.paused = False
    core.install()


def dump(finished=True, profile_process="worker"):
    """Write the events recorded since the last dump to the configured filename (a
    complete Chrome trace JSON after every call; later dumps append to it).
    finished=True ends this trace: the next dump starts the file afresh."""
    core.check_process(profile_process)
    from .. import engine
    engine.wait_for_all()
    output.write_trace(core.config["filename"], finished)


def dumps(reset=False, format="table", sort_by="total", ascending=False):
    """The aggregate statistics (set_config(aggregate_stats=True)) as a text table or
    JSON ('Time', 'Memory', 'Unit'), each domain's rows sorted by sort_by ('total',
    'avg', 'min', 'max', 'count'); reset=True clears them afterwards."""
    if format not in ("table", "json"):
        raise _InvalidOption(f"Invalid value provided for format: {format}. Support: "
                             "'table', 'json'")
    if sort_by not in ("total", "avg", "min", "max", "count"):
        raise _InvalidOption(f"Invalid value provided for sort_by: {sort_by}. Support: "
                             "'total', 'avg', 'min', 'max', 'count'")
    if ascending not in (True, False):
        raise _InvalidOption(f"Invalid value provided for ascending: {ascending}. "
                             "Support: False, True")
    text = output.aggregate(format, sort_by, ascending)
    if reset:
        with core._lock:
            core.stats.clear()
    return text


@contextlib.contextmanager
def scope(name="<unk>:", append_mode=False):
    """Prefix the names of operators recorded in this thread with name (MXNet 2.x's
    ``profiler.scope``); append_mode adds it after the current prefix."""
    prev = core.name_scope()
    core._tls.scope = (prev + name) if append_mode else name
    try:
        yield
    finally:
        core._tls.scope = prev


# The kvstore whose server processes profile_process='server' would address (MXNet
# keeps a handle here); pymxnet has no kvstore server processes.
profiler_kvstore_handle = None


def set_kvstore_handle(handle):
    """Kept for API compatibility (distributed kvstores register themselves here)."""
    global profiler_kvstore_handle
    profiler_kvstore_handle = handle


def profiler_set_config(mode="symbolic", filename="profile.json"):
    """Deprecated: use set_config. mode 'symbolic' or 'all'."""
    warnings.warn("profiler.profiler_set_config() is deprecated. Please use "
                  "profiler.set_config() instead", DeprecationWarning, stacklevel=2)
    if mode not in ("symbolic", "all"):
        raise MXNetError(f"profiler mode must be 'symbolic' or 'all', got {mode!r}")
    set_config(profile_symbolic=True, profile_all=(mode == "all"), filename=filename)


def profiler_set_state(state="stop"):
    """Deprecated: use set_state."""
    warnings.warn("profiler.profiler_set_state() is deprecated. Please use "
                  "profiler.set_state() instead", DeprecationWarning, stacklevel=2)
    set_state(state)


def dump_profile():
    """Deprecated: use dump."""
    warnings.warn("profiler.dump_profile() is deprecated. Please use profiler.dump() "
                  "instead", DeprecationWarning, stacklevel=2)
    dump(True)

