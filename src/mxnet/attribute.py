"""Attribute scopes: ``with mx.AttrScope(ctx_group='dev1'):`` attaches string
attributes to every symbol created inside the block (nested scopes merge, the inner
value winning)."""
import threading
from collections import defaultdict

__all__ = ["AttrScope", "current"]


class _Current(threading.local):
    def __init__(self):
        self.value = AttrScope()


class _AttrScopeMeta(type):
    @property
    def current(cls):
        """The scope in effect in this thread."""
        return AttrScope._current.value

    @current.setter
    def current(cls, scope):
        AttrScope._current.value = scope


class AttrScope(metaclass=_AttrScopeMeta):
    """Attributes (string keys and values) for the symbols created in its scope."""

    _current = None          # set below, once the class exists
    # How many subgraphs of each name the control-flow symbols have made (foreach0,
    # cond_then1, ...): a subgraph's nodes carry ``__subgraph_name__`` = name + count.
    _subgraph_names = defaultdict(int)

    def __init__(self, **kwargs):
        self._old_scope = None
        for value in kwargs.values():
            if not isinstance(value, str):
                raise ValueError("Attributes need to be string")
        self._attr = kwargs

    def get(self, attr):
        """This scope's attributes updated with ``attr`` (the explicit ones win)."""
        if self._attr:
            ret = self._attr.copy()
            if attr:
                ret.update(attr)
            return ret
        return dict(attr) if attr else {}

    def __enter__(self):
        outer = AttrScope._current.value
        merged = outer._attr.copy()
        merged.update(self._attr)
        self._attr = merged
        self._old_scope = outer
        AttrScope._current.value = self
        return self

    def __exit__(self, ptype, value, trace):
        AttrScope._current.value = self._old_scope
        self._old_scope = None


AttrScope._current = _Current()


def current():
    return AttrScope._current.value
