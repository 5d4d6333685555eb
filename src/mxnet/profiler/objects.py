"""User-defined profiling objects: Domain, Task, Frame, Event, Counter, Marker.

Each records into the trace only while the profiler runs (and is not paused); a
Task/Frame/Event is one timed span from ``start`` to ``stop`` on the starting thread.
"""
import threading

from ..base import MXNetError
from . import core

__all__ = ["Domain", "Task", "Frame", "Event", "Counter", "Marker"]

_MARKER_SCOPES = {"global": "g", "process": "p", "thread": "t", "task": "t", "marker": "t"}


class Domain:
    """A named group of tasks, frames, counters and markers (a process in the trace)."""

    def __init__(self, name):
        self.name = str(name)

    def __str__(self):
        return self.name

    def new_task(self, name):
        """A Task in this domain."""
        return Task(self, name)

    def new_frame(self, name):
        """A Frame in this domain."""
        return Frame(self, name)

    def new_counter(self, name, value=None):
        """A Counter in this domain, set to value when given."""
        return Counter(self, name, value)

    def new_marker(self, name):
        """A Marker in this domain."""
        return Marker(self, name)


def _check_domain(domain, what):
    if not isinstance(domain, Domain):
        raise MXNetError(f"{what} needs a profiler.Domain, got {type(domain).__name__}")


class _Span:
    """A named span recorded from start() to stop()."""
    _suffix = ""

    def __init__(self, name, cat):
        self.name, self._cat = str(name), cat
        self._start = None
        self._tid = None

    def start(self):
        """Begin the span (recorded only if the profiler is running at stop)."""
        self._start = core.now_us() if core.state.active else None
        self._tid = threading.get_ident()

    def stop(self):
        """End the span and record it."""
        if self._start is not None and core.state.active:
            core.record(self.name, self._cat, "cpu/0", self._start, core.now_us())
        self._start = None

    def __str__(self):
        return self.name


class Task(_Span):
    """A logical unit of work in a domain."""

    def __init__(self, domain, name):
        _check_domain(domain, "Task")
        self.domain = domain
        super().__init__(name, domain.name)


class Frame(_Span):
    """A repeated unit of work (e.g. one training iteration) in a domain."""

    def __init__(self, domain, name):
        _check_domain(domain, "Frame")
        self.domain = domain
        super().__init__(name, f"{domain.name},frame")


class Event(_Span):
    """A named span in the 'event' domain."""

    def __init__(self, name):
        super().__init__(name, "event")


class Counter:
    """A named integer value in a domain, sampled into the trace at each change."""

    def __init__(self, domain, name, value=None):
        _check_domain(domain, "Counter")
        self.domain, self.name = domain, str(name)
        self._value = 0
        if value is not None:
            self.set_value(value)

    def set_value(self, value):
        """Set the counter to value (an int)."""
        self._value = int(value)
        self._sample()

    def increment(self, delta=1):
        """Add delta to the counter."""
        self.set_value(self._value + int(delta))

    def decrement(self, delta=1):
        """Subtract delta from the counter."""
        self.set_value(self._value - int(delta))

    def __iadd__(self, delta):
        self.increment(delta)
        return self

    def __isub__(self, delta):
        self.decrement(delta)
        return self

    def _sample(self):
        if core.state.active:
            core.record_counter(self.name, self.domain.name, self._value)

    def __str__(self):
        return self.name


class Marker:
    """An instant event in a domain."""

    def __init__(self, domain, name):
        _check_domain(domain, "Marker")
        self.domain, self.name = domain, str(name)

    def mark(self, scope="process"):
        """Record the instant; scope is one of 'global', 'process', 'thread', 'task',
        'marker'."""
        if scope not in _MARKER_SCOPES:
            raise MXNetError(f"Invalid Input: {scope!r}, valid values are: "
                             f"{set(sorted(_MARKER_SCOPES))}")
        if core.state.active:
            core.record_instant(self.name, f"{self.domain.name},instant_marker",
                                _MARKER_SCOPES[scope])
