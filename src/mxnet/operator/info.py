"""Introspection helpers that ``mx.operator`` exposes as MXNet 1.9.1 does:
``get_operator_arguments`` (an operator's input and parameter names with MXNet-style type
descriptions) and ``ctypes2numpy_shared`` (a NumPy view of memory behind a ctypes float
pointer, as legacy NumpyOp/NDArrayOp callbacks received their buffers)."""
import ctypes
from collections import namedtuple

import numpy as np

from ..base import MXNetError
from .call import input_names
from .params import format_value
from .registry import get_op

__all__ = ["OperatorArguments", "get_operator_arguments", "ctypes2numpy_shared"]

OperatorArguments = namedtuple("OperatorArguments", ["narg", "names", "types"])
OperatorArguments.__doc__ = "An operator's argument count, names and type descriptions."


def _describe(field):
    """MXNet's parameter description: 'int, required', 'boolean, optional, default=0',
    "{None, 'NCHW'},optional, default='None'"."""
    inner = getattr(field, "inner", None)
    enum = field.kind == "enum" or (inner is not None and inner.kind == "enum")
    if enum:
        choices = (("None",) if inner is not None else ()) + tuple(
            repr(c) for c in sorted(c for c in field.enum if c is not None))
        if field.required:
            return "{" + ", ".join(choices) + "}, required"
        return "{" + ", ".join(choices) + "},optional, default=" + repr(str(field.default))
    if field.required:
        return field.kind + ", required"
    d = field.default
    if isinstance(d, bool):
        d = int(d)
    elif isinstance(d, tuple):
        d = "[" + ",".join(str(x) for x in d) + "]"
    return f"{field.kind}, optional, default={format_value(d)}"


def get_operator_arguments(op_name):
    """OperatorArguments(narg, names, types) of a registered operator: its inputs
    (type 'NDArray-or-Symbol') then its parameters, in declaration order."""
    op = get_op(op_name)
    inputs = list(input_names(op))
    fields = [(k, f) for k, f in op.params.fields.items() if k not in inputs]
    names = inputs + [k for k, _ in fields]
    # a variable number of inputs is one 'data' argument of type 'NDArray-or-Symbol[]'
    kind = "NDArray-or-Symbol[]" if op.variadic is not None else "NDArray-or-Symbol"
    types = [kind] * len(inputs) + [_describe(f) for _, f in fields]
    return OperatorArguments(len(names), names, types)


def ctypes2numpy_shared(cptr, shape):
    """A float32 NumPy array of ``shape`` that shares the memory ``cptr`` (a
    ``ctypes.POINTER(ctypes.c_float)``) points to; writes go to that memory."""
    if not isinstance(cptr, ctypes.POINTER(ctypes.c_float)):
        raise MXNetError("ctypes2numpy_shared: expected a ctypes float pointer, got "
                         f"{type(cptr).__name__}")
    shape = tuple(int(s) for s in shape)
    size = int(np.prod(shape)) if shape else 1
    buf = (ctypes.c_float * size).from_address(ctypes.addressof(cptr.contents))
    return np.frombuffer(buf, dtype=np.float32).reshape(shape)
