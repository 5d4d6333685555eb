"""Creating symbols: variables, operator nodes and groups.

``create_symbol(op, inputs, params, name, attr, hint)`` is the one way an operator
node enters a graph; the generated ``mx.sym.<op>`` functions, the Python operators
and front ends built later (NumpyOp, CustomOp, Gluon) all call it (``Symbol._create``
is the same function). Inputs left as None become variables named
``<node name>_<input name>`` that carry a copy of the node's attributes, as MXNet's
auto-created ``fullyconnected0_weight`` do.
"""
import numpy as np

from ..attribute import AttrScope
from ..base import DTYPE_TO_FLAG, MXNetError, dtype_np
from ..name import NameManager
from ..operator import frontend
from ..operator.params import Params
from ..operator.registry import get_op
from .graph import Node, attr_key, is_dunder
from .symbol import Symbol

__all__ = ["Variable", "var", "Group", "create_symbol", "create_by_name"]

_STYPES = {"default": 0, "row_sparse": 1, "csr": 2}



def Variable(name, attr=None, shape=None, lr_mult=None, wd_mult=None, dtype=None,
             init=None, stype=None, **kwargs):
    """A placeholder symbol (an input, a weight, ...).

    shape / dtype / lr_mult / wd_mult / init / stype are stored as the attributes
    ``__shape__``, ``__dtype__`` (MXNet's type flag), ``__lr_mult__``, ``__wd_mult__``,
    ``__init__`` and ``__storage_type__``; further attributes go in ``attr`` or as
    ``__name__``-style keywords. Attributes of the enclosing AttrScope apply.
    """
    if not isinstance(name, str):
        raise TypeError("Expect a string for variable `name`")
    attrs = {}
    for key, value in AttrScope.current.get(attr).items():
        if not isinstance(value, str):
            raise ValueError("Set Attr only accepts string values")
        attrs[attr_key(key)] = value
    if shape is not None:
        attrs["__shape__"] = str(shape)
    if lr_mult is not None:
        attrs["__lr_mult__"] = str(lr_mult)
    if wd_mult is not None:
        attrs["__wd_mult__"] = str(wd_mult)
    if dtype is not None:
        attrs["__dtype__"] = str(DTYPE_TO_FLAG[dtype_np(dtype)])
    if init is not None:
        attrs["__init__"] = init if isinstance(init, str) else init.dumps()
    if stype is not None:
        if stype not in _STYPES:
            raise MXNetError(f"unknown storage type {stype!r}; expected one of "
                             f"{sorted(_STYPES)}")
        attrs["__storage_type__"] = str(_STYPES[stype])
    for key, value in kwargs.items():
        if not is_dunder(key):
            raise ValueError(f"Attribute name={key} is not supported. Additional attributes "
                             "must start and end with double underscores, e.g, "
                             "__yourattr__")
        attrs[key] = str(value)
    return Symbol([(Node(None, name, attrs=attrs), 0)])


var = Variable


def Group(symbols):
    """One symbol whose outputs are the outputs of all the given symbols, in order."""
    symbols = list(symbols) if symbols is not None else []
    if not symbols or any(not isinstance(s, Symbol) for s in symbols):
        raise TypeError("Expected a list of symbols as input")
    return Symbol([e for s in symbols for e in s._outputs])


def _split_attrs(op, attr):
    """Scope and explicit attributes -> (node attributes, extra parameters). Keys that
    are not attributes (``__x__`` or hidden keys) must be parameters of the operator,
    except for operators without parameters, which keep them as attributes."""
    attrs, extra = {}, {}
    for key, value in AttrScope.current.get(attr).items():
        stored = attr_key(key)
        if is_dunder(stored):
            attrs[stored] = str(value)
        elif key in op.params.fields:
            extra[key] = value
        elif not op.params.fields:
            attrs[key] = str(value)
        else:
            raise MXNetError(f"Operator {op.name} got an unknown parameter '{key}'. Valid "
                             f"parameters: {', '.join(op.params.fields)}")
    return attrs, extra


def _normalise_given(op, given):
    """Parameter values as MXNet stores them (dtype objects become their names)."""
    out = {}
    for key, value in given.items():
        field = op.params.fields.get(key)
        # every dtype-valued field (DType and the random operators' optional enum)
        if getattr(field, "kind", None) == "dtype" and value is not None and \
                not isinstance(value, str):
            value = np.dtype(value).name
        out[key] = value
    return out


def create_symbol(op, inputs, params=None, name=None, attr=None, hint=None, given=None):
    """A symbol for operator ``op`` applied to ``inputs``.

    op: an Op instance (or its registered name). inputs: Symbols (single output) or
    None, ordered as ``op.arguments(p) + op.aux_states(p)``; None creates a variable
    ``<name>_<input>``. params: parsed Params, or a dict of raw keyword values.
    given: the raw values to store in JSON (defaults to ``params.given``). name: the
    node name (default: from the NameManager with ``hint``, default ``op.name``
    lower-cased). attr: string attributes (merged over the AttrScope's).
    """
    if isinstance(op, str):
        op = get_op(op)
    attrs, extra = _split_attrs(op, attr)
    if params is None or not isinstance(params, Params):
        raw = dict(params or {})
        raw.update(extra)
        params = op.parse(raw)
        given = raw if given is None else given
    elif extra:
        raw = dict(params.given)
        raw.update(extra)
        params = op.parse(raw)
        given = raw if given is None else {**given, **extra}
    if given is None:
        given = dict(getattr(params, "given", {}) or {})
    name = NameManager.current.get(name, hint if hint is not None else op.name.lower())
    node = Node(op, name, params, _normalise_given(op, given), attrs)
    n_in = len(inputs)
    if op.variadic is None:
        names = list(op.arguments(params)) + list(op.aux_states(params))
        if n_in != len(names):
            raise MXNetError(f"Operator {op.name} takes {len(names)} inputs "
                             f"({', '.join(names)}), got {n_in}")
    elif inputs and all(v is None for v in inputs):
        # no inputs given (mx.sym.Concat(num_args=2)): one variable per input the
        # count names, <name>_arg0, ... as in MXNet (UpSampling's data/weight)
        names = list(op.arguments(params))
    else:
        names = None
    entries = []
    for i, value in enumerate(inputs):
        if value is None:
            if names is None:
                raise MXNetError(f"Operator {op.name}: input {i} is missing")
            entries.append((_auto_variable(node, names[i]), 0))
            continue
        if not isinstance(value, Symbol):
            label = names[i] if names else f"arg{i}"
            raise MXNetError(f"Operator {op.name}: argument {label} must be a Symbol, "
                             f"got {value!r}")
        if len(value._outputs) != 1:
            label = names[i] if names else f"arg{i}"
            raise MXNetError(f"Operator {op.name}: argument {label} is a group of "
                             f"{len(value._outputs)} outputs; a single output is required")
        entries.append(value._outputs[0])
    node.inputs = entries
    if op.variadic is not None and node.num_args() < 0:
        raise MXNetError(f"Operator {op.name}: too few inputs")
    return Symbol([(node, i) for i in range(node.num_visible_outputs())])


def _auto_variable(node, input_name):
    attrs = node.all_attrs()
    attrs.update(node.op.input_var_attrs(node.params, input_name))
    return Node(None, f"{node.name}_{input_name}", attrs=attrs)


def create_by_name(op_name, inputs, kwargs, hint=None, name=None, attr=None):
    """create_symbol for a registered operator name with raw keyword parameters."""
    op = get_op(op_name)
    return create_symbol(op, inputs, dict(kwargs), name=name, attr=attr,
                         hint=hint if hint is not None else op_name.lower())


Symbol._create = staticmethod(create_symbol)

frontend.provide(create_symbol=create_symbol, is_symbol=lambda v: isinstance(v, Symbol))
