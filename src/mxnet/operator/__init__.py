"""Operators: the registry, parameter schemas, every built-in operator, and the
Python custom-operator interfaces (CustomOp/CustomOpProp/register, NumpyOp, NDArrayOp).
"""
from .registry import Op, OpContext, register as register_op, get_op, list_ops, apply_req
from . import ops as _ops  # noqa: F401  (registers the built-in operators)
from . import nn as _nn  # noqa: F401
from . import contrib as _contrib  # noqa: F401  (MXNet's _contrib_* operators)

from .custom import (CustomOp, CustomOpProp, register, PythonOp, NumpyOp,  # noqa: F401
                     NDArrayOp, get_all_registered_operators)
