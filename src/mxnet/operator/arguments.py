"""``mx.operator.get_operator_arguments``: an operator's inputs and parameters with
MXNet's one-line type descriptions (what its generated docstrings print)."""
from collections import namedtuple

from .params import REQUIRED, Enum, Optional, Params, Shape
from .registry import get_op

__all__ = ["OperatorArguments", "get_operator_arguments"]

OperatorArguments = namedtuple("OperatorArguments", ["narg", "names", "types"])


def _value(field, v):
    if isinstance(field, Shape) or isinstance(v, tuple):
        return "[" + ",".join(str(x) for x in (v or ())) + "]"
    if isinstance(v, bool):
        return str(int(v))
    return f"'{v}'" if isinstance(v, str) or v is None else str(v)


def _describe(field):
    """MXNet's description of a parameter: '<type>, required' or '<type>, optional,
    default=<value>' (an enum lists its choices in braces, sorted)."""
    inner = field.inner if isinstance(field, Optional) else field
    if isinstance(inner, Enum) or (field.enum is not None and inner.kind == "enum"):
        choices = sorted(c for c in field.enum if c is not None)
        nullable = None in field.enum or isinstance(field, Optional)
        kind = "{" + ", ".join((["None"] if nullable else []) + [f"'{c}'" for c in choices]) + "}"
        if field.default is REQUIRED:
            return f"{kind}, required"
        return f"{kind},optional, default={_value(field, field.default)}"
    kind = inner.kind
    if inner.kind == "int" and field.low is not None and field.low >= 0:
        kind = "int (non-negative)"
    if isinstance(field, Optional):
        kind += " or None"
    if field.default is REQUIRED:
        return f"{kind}, required"
    return f"{kind}, optional, default={_value(field, field.default)}"


def get_operator_arguments(op_name):
    """OperatorArguments(narg, names, types) of operator ``op_name``: its array inputs
    (typed 'NDArray-or-Symbol', or 'NDArray-or-Symbol[]' for a variable number) then its
    parameters, in declaration order."""
    op = get_op(op_name)
    names, types = [], []
    if op.variadic is not None:
        names.append("data")
        types.append("NDArray-or-Symbol[]")
    else:
        # the defaults, with None for required parameters: enough to name the inputs
        fields = op.params.fields if op.params is not None else {}
        p = Params({k: None if f.default is REQUIRED else f.default for k, f in fields.items()})
        p.given = {}
        try:
            inputs = list(op.arguments(p)) + list(op.aux_states(p))
        except Exception:       # noqa: BLE001 — the inputs depend on a required value
            inputs = []
        for nm in inputs:
            names.append(nm)
            types.append("NDArray-or-Symbol")
    for name, field in (op.params.fields if op.params is not None else {}).items():
        names.append(name)
        types.append(_describe(field))
    return OperatorArguments(len(names), names, types)
