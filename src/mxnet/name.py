"""Automatic naming of symbols and blocks: ``mx.name.NameManager`` and ``Prefix``.

An operator created without ``name=`` is named ``<hint><n>``: the front end passes
the lower-cased function name as the hint (``fullyconnected0``, ``_plusscalar1``) and
``n`` counts the names given for that hint by the current manager. ``with NameManager():`` starts
fresh counters; ``with Prefix('net_'):`` also prepends a prefix to every name.
"""
import threading

__all__ = ["NameManager", "Prefix", "current"]


class _Current(threading.local):
    """Every thread starts with its own default manager."""

    def __init__(self):
        self.value = NameManager()


class _NameManagerMeta(type):
    @property
    def current(cls):
        """The manager in effect in this thread."""
        return NameManager._current.value

    @current.setter
    def current(cls, manager):
        NameManager._current.value = manager


class NameManager(metaclass=_NameManagerMeta):
    """Hands out unique names per hint; use as a context manager to scope counters."""

    _current = None          # set below, once the class exists

    def __init__(self):
        self._counter = {}
        self._old_manager = None

    def get(self, name, hint):
        """``name`` if given, else ``hint`` followed by the next counter value."""
        if name:
            return name
        n = self._counter.get(hint, 0)
        self._counter[hint] = n + 1
        return f"{hint}{n}"

    def __enter__(self):
        self._old_manager = NameManager._current.value
        NameManager._current.value = self
        return self

    def __exit__(self, ptype, value, trace):
        NameManager._current.value = self._old_manager
        self._old_manager = None


class Prefix(NameManager):
    """A NameManager that prepends ``prefix`` to every name it returns, given or not."""

    def __init__(self, prefix):
        super().__init__()
        self._prefix = prefix

    def get(self, name, hint):
        return self._prefix + super().get(name, hint)


NameManager._current = _Current()


def current():
    """The NameManager in effect in this thread."""
    return NameManager._current.value
