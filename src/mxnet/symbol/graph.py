"""The symbolic graph: nodes and the walks every Symbol method and executor pass uses.

A ``Node`` is a variable (``op is None``) or an operator applied to input entries.
An entry is ``(node, output index)``. Nodes are shared between the symbols that
reach them (as in MXNet: setting an attribute through one symbol is seen by all);
``copy_graph`` makes an independent copy.
"""
from ..base import MXNetError
from ..executor.graph import topo_order  # noqa: F401 (the walk the executor owns)
from ..operator.call import HIDDEN_KEYS, is_dunder
from ..operator.params import format_value

__all__ = ["Node", "HIDDEN_KEYS", "topo_order", "copy_graph", "attr_key", "is_dunder"]

# HIDDEN_KEYS: attributes that MXNet stores as ``__key__`` and lists under both
# spellings (defined with the front-end keywords in operator.call).


def attr_key(key):
    """The stored spelling of an attribute key (``lr_mult`` -> ``__lr_mult__``)."""
    return f"__{key}__" if key in HIDDEN_KEYS else key


class Node:
    """One graph node.

    ``op``: the registered Op, or None for a variable. ``params``: parsed Params
    (None for variables). ``given``: the parameter values exactly as the caller passed
    them (what JSON stores, as str()). ``attrs``: string attributes (``__lr_mult__``,
    ``__shape__``, ``ctx_group`` ...). ``inputs``: entries ``(node, index)``, the
    operator's arguments followed by its auxiliary states.
    """

    __slots__ = ("op", "name", "params", "given", "attrs", "inputs", "__weakref__")

    def __init__(self, op, name, params=None, given=None, attrs=None, inputs=()):
        self.op = op
        self.name = name
        self.params = params
        self.given = given if given is not None else {}
        self.attrs = attrs if attrs is not None else {}
        self.inputs = list(inputs)

    @property
    def is_variable(self):
        return self.op is None

    def num_outputs(self):
        """All outputs, hidden ones included (BatchNorm: 3)."""
        if self.op is None:
            return 1
        return len(self.op.outputs(self.params))

    def num_visible_outputs(self):
        if self.op is None:
            return 1
        return self.op.num_visible_outputs(self.params)

    def num_args(self):
        """How many inputs are arguments (the rest are auxiliary states)."""
        if self.op is None:
            return 0
        if self.op.variadic is not None:
            return len(self.inputs) - len(self.op.aux_states(self.params))
        return len(self.op.arguments(self.params))

    def ordered_inputs(self):
        """The input entries as arguments, then auxiliary states (the order the
        operator's calls take; ``inputs`` itself unless the operator permutes it)."""
        if self.op is None or not self.op.permutes_inputs:
            return self.inputs
        return [self.inputs[j] for j in self.op.input_order(self.params)]

    def aux_positions(self):
        """The positions in ``inputs`` of the auxiliary states."""
        if self.op is not None and self.op.permutes_inputs:
            return set(self.op.input_order(self.params)[self.num_args():])
        return set(range(self.num_args(), len(self.inputs)))

    def arg_names(self):
        op, p = self.op, self.params
        names = list(op.arguments(p))
        n = self.num_args()
        if len(names) != n:                  # variadic operators
            names = [f"arg{i}" for i in range(n)]
        return names

    def aux_names(self):
        return list(self.op.aux_states(self.params))

    def input_names(self):
        return self.arg_names() + self.aux_names()

    def monitor_input_names(self):
        """The names monitor callbacks give the inputs (``<node>_<name>``)."""
        if self.op.named_inputs:
            return self.input_names()
        return [f"input{i}" for i in range(len(self.inputs))]

    def output_names(self):
        """Names of every output (``<node>_<output>``); a variable's is its own name."""
        if self.op is None:
            return [self.name]
        return [f"{self.name}_{o}" for o in self.op.outputs(self.params)]

    def all_attrs(self):
        """Parameters as given (as strings) and attributes: what JSON stores."""
        out = {k: format_value(v) for k, v in self.given.items()}
        out.update(self.attrs)
        return out

    def copy(self):
        return Node(self.op, self.name, self.params, dict(self.given), dict(self.attrs),
                    self.inputs)

    def __repr__(self):
        return f"<Node {'Variable' if self.op is None else self.op.name} {self.name}>"


def copy_graph(entries, replace=None):
    """Copy the graph under entries; ``replace`` maps id(variable node) -> entry to
    substitute. Returns the copied entries."""
    replace = replace or {}
    heads = [e[0] for e in entries]
    mapping = {}
    for node in topo_order(heads):
        sub = replace.get(id(node))
        if sub is not None:
            mapping[id(node)] = sub
            continue
        new = node.copy()
        new.inputs = [_remap(mapping, e) for e in node.inputs]
        mapping[id(node)] = (new, None)
    return [_remap(mapping, e) for e in entries]


def _remap(mapping, entry):
    node, idx = entry
    got = mapping[id(node)]
    if got[1] is None:           # a copied node: keep the output index
        return (got[0], idx)
    if idx != 0:
        raise MXNetError(f"cannot substitute output {idx} of variable {node.name}")
    return got
