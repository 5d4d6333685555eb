"""Typed operator parameters (like dmlc::Parameter).

A ``Schema`` lists an operator's fields. ``Schema.parse`` accepts Python values and the
strings stored in symbol JSON (``"(2, 2)"``, ``"True"``, ``"1e-05"``), fills defaults,
checks enums and ranges, and rejects unknown or bad parameters with an MXNetError that
names the operator and the parameter.
"""
import ast

import numpy as np

from ..base import MXNetError

__all__ = ["Field", "Schema", "Params", "REQUIRED", "Int", "Float", "Bool", "Str", "Shape",
           "Enum", "DType", "Optional", "IntOrNone", "FloatOrNone", "ShapeOrNone", "Any",
           "format_value"]


class _Required:
    def __repr__(self):
        return "REQUIRED"


REQUIRED = _Required()


def _literal(text):
    text = text.strip()
    if text in ("None", ""):
        return None
    if text in ("True", "true"):
        return True
    if text in ("False", "false"):
        return False
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


class Field:
    """One parameter: a converter plus default, enum and range checks."""

    kind = "any"

    def __init__(self, default=REQUIRED, enum=None, low=None, high=None, doc=""):
        self.default, self.enum, self.low, self.high, self.doc = default, enum, low, high, doc
        self.name = None

    @property
    def required(self):
        return self.default is REQUIRED

    def convert(self, value):
        return value

    def parse(self, value, opname):
        if isinstance(value, str) and self.kind not in ("str", "enum", "dtype"):
            value = _literal(value)
        try:
            out = self.convert(value)
        except (TypeError, ValueError) as err:
            raise MXNetError(f"Invalid value {value!r} for parameter '{self.name}' of operator "
                             f"{opname}: expected {self.kind} ({err})") from None
        if self.enum is not None and out not in self.enum:
            raise MXNetError(f"Invalid value {value!r} for parameter '{self.name}' of operator "
                             f"{opname}: expected one of {sorted(map(str, self.enum))}")
        if out is not None and not isinstance(out, tuple):
            if self.low is not None and out < self.low:
                raise MXNetError(f"Invalid value {value!r} for parameter '{self.name}' of "
                                 f"operator {opname}: must be >= {self.low}")
            if self.high is not None and out > self.high:
                raise MXNetError(f"Invalid value {value!r} for parameter '{self.name}' of "
                                 f"operator {opname}: must be <= {self.high}")
        return out


def _to_int(v):
    if isinstance(v, (bool, np.bool_)):
        return int(v)
    if isinstance(v, (int, np.integer)):
        return int(v)
    if isinstance(v, (float, np.floating)) and float(v).is_integer():
        return int(v)
    raise ValueError("not an integer")


class Int(Field):
    kind = "int"

    def convert(self, v):
        return _to_int(v)


class Optional(Field):
    """A value of the ``inner`` field, or None; None may also arrive as the string
    'None' (symbol JSON). The one "X or None" field: ``Optional(Enum(...))``,
    ``Optional(Bool(), default=False)``..."""

    def __init__(self, inner, default=None, doc=""):
        super().__init__(default, inner.enum, inner.low, inner.high, doc or inner.doc)
        self.inner = inner
        self.kind = f"{inner.kind} or None"

    def parse(self, value, opname):
        if value is None or (isinstance(value, str) and value in ("None", "")):
            return None
        self.inner.name = self.name
        return self.inner.parse(value, opname)


def IntOrNone(default=None, **kw):
    """An int or None."""
    return Optional(Int(**kw), default)


class Float(Field):
    kind = "float"

    def convert(self, v):
        if isinstance(v, (list, tuple, np.ndarray)):
            raise ValueError("not a number")
        return float(v)


def FloatOrNone(default=None, **kw):
    """A float or None."""
    return Optional(Float(**kw), default)


class Bool(Field):
    kind = "boolean"

    def convert(self, v):
        if isinstance(v, (bool, np.bool_)):
            return bool(v)
        if isinstance(v, (int, np.integer)) and v in (0, 1):
            return bool(v)
        raise ValueError("not a boolean")


class Str(Field):
    kind = "str"

    def convert(self, v):
        if not isinstance(v, str):
            raise ValueError("not a string")
        return v


class Enum(Str):
    kind = "enum"

    def __init__(self, choices, default=REQUIRED, doc=""):
        super().__init__(default, enum=tuple(choices), doc=doc)

    def convert(self, v):
        if v is None and None in self.enum:
            return None
        return super().convert(v)


class Shape(Field):
    """A tuple of ints; an int becomes a 1-tuple, as MXNet's TShape parser does."""
    kind = "Shape(tuple)"

    def convert(self, v):
        if isinstance(v, (int, np.integer)):
            return (int(v),)
        if v is None:
            raise ValueError("None is not a shape")
        return tuple(_to_int(x) for x in v)


def ShapeOrNone(default=None, **kw):
    """A shape or None."""
    return Optional(Shape(**kw), default)


class OptFloatTuple(Field):
    kind = "tuple of float or None"

    def convert(self, v):
        if v is None:
            return None
        if isinstance(v, (int, float, np.number)):
            return (float(v),)
        return tuple(float(x) for x in v)


class DType(Field):
    """A dtype name ('float32', 'int64', ...); None allowed where the default is None."""
    kind = "dtype"

    def convert(self, v):
        if v is None:
            return None
        if isinstance(v, str) and v.isdigit():
            from ..base import FLAG_TO_DTYPE
            return FLAG_TO_DTYPE[int(v)].name
        from ..base import dtype_np
        return dtype_np(v).name


class Any(Field):
    kind = "any"


class Params(dict):
    """Parsed parameters: a dict with attribute access. ``given`` maps the names the
    caller passed to the raw values passed (symbol JSON stores only those, as str())."""

    # The instance's attribute dict is the dict itself, so ``p.name`` is a plain
    # attribute read (operators read their parameters on every call). A key then
    # hides a dict method of its name: only _npi_nan_to_num's 'copy' is one, and
    # nothing calls p.copy(); Custom's open-ended keywords keep __getattr__.
    __slots__ = ("given", "__dict__", "_hash")

    def __init__(self, *args, **kwargs):
        dict.__init__(self, *args, **kwargs)
        self.__dict__ = self

    def __getattr__(self, key):
        try:
            return self[key]
        except KeyError:
            raise AttributeError(key) from None

    def __hash__(self):
        # Kernels key their per-geometry caches by (params, shape) at every call, and
        # sorting the items costs microseconds: the hash is kept until a change.
        try:
            h = self._hash
        except AttributeError:
            h = None
        if h is None:
            h = self._hash = hash(tuple(sorted((k, _hashable(v)) for k, v in self.items())))
        return h

    def _changed(self):
        Params._hash.__set__(self, None)

    # every way of changing the values forgets the kept hash (an attribute set writes
    # the dict itself, past __setitem__)
    def __setattr__(self, key, value):
        object.__setattr__(self, key, value)
        if key != "_hash":
            self._changed()

    def __setitem__(self, key, value):
        dict.__setitem__(self, key, value)
        self._changed()

    def __delitem__(self, key):
        dict.__delitem__(self, key)
        self._changed()

    def _mutator(name):     # noqa: N805 - builds the methods below
        base = getattr(dict, name)

        def method(self, *args, **kwargs):
            res = base(self, *args, **kwargs)
            self._changed()
            return res
        method.__name__ = name
        return method

    update, pop, popitem = _mutator("update"), _mutator("pop"), _mutator("popitem")
    clear, setdefault, __ior__ = _mutator("clear"), _mutator("setdefault"), _mutator("__ior__")
    del _mutator

    def __reduce__(self):
        return (_make_params, (dict(self), dict(self.given)))


def _make_params(values, given):
    p = Params(values)
    p.given = given
    return p


def _hashable(v):
    if isinstance(v, list):
        return tuple(map(_hashable, v))
    if isinstance(v, dict):
        return tuple(sorted(v.items()))
    return v


class Schema:
    """An operator's parameter list, in declaration order."""

    def __init__(self, **fields):
        self.fields = fields
        for name, f in fields.items():
            f.name = name
        self._cache = {}

    def __iter__(self):
        return iter(self.fields)

    def __contains__(self, name):
        return name in self.fields

    def extend(self, **fields):
        merged = dict(self.fields)
        merged.update(fields)
        return Schema(**merged)

    def parse(self, opname, kwargs):
        # The key carries each value's type: 10 and 10.0 (or True and 1) hash alike but
        # may parse differently (an Any field) and are stored differently in ``given``.
        # Concatenating small tuples is the cheapest such key (a + 1 parses every call).
        key = ()
        for name, value in kwargs.items():
            key += (name, value, type(value))
        try:
            hit = self._cache.get(key)
        except TypeError:              # unhashable value (a list): parse without caching
            key, hit = None, None
        if hit is not None:
            return hit
        p = Params()
        for name, value in kwargs.items():
            f = self.fields.get(name)
            if f is None:
                if not self.fields:
                    # MXNet's operators without parameters have no parser: extra
                    # keywords (zeros_like(x, dtype=...)) are kept as attributes and
                    # have no effect.
                    continue
                raise MXNetError(f"Operator {opname} got an unknown parameter '{name}'. "
                                 f"Valid parameters: {', '.join(self.fields) or '(none)'}")
            p[name] = f.parse(value, opname)
        for name, f in self.fields.items():
            if name not in p:
                if f.required:
                    raise MXNetError(f"Required parameter '{name}' of operator {opname} "
                                     "is missing")
                p[name] = f.default
        p.given = dict(kwargs)
        if key is not None and len(self._cache) < 4096:
            self._cache[key] = p
        return p


def format_value(v):
    """How MXNet stores a parameter value in symbol JSON: Python's str() of it."""
    return v if isinstance(v, str) else str(v)
