"""mx.sym / mx.symbol: symbolic graphs (MXNet 1.x Symbol API).

Every registered operator appears here as a function (``mx.sym.FullyConnected``,
``mx.sym.relu``, ...) generated from the registry, next to ``Variable``/``var``,
``Group``, ``load``/``load_json`` and the Symbol class itself. ``Symbol._create(op,
inputs, params, name, attr, hint)`` builds a node for any Op (see ``create.py``).
"""
import sys as _sys

from .. import operator as _operator  # noqa: F401  (registers operators)
from ..operator.call import expose as _expose
from .symbol import Symbol
from .create import Variable, var, Group, create_symbol, create_by_name as _by_name
from .json_io import load, load_json
from .register import make_function as _make_function
from ..operator.ops.concat_split import split_v2_params as _split_v2_params
from . import _internal, op, contrib, linalg, image  # noqa: F401
from . import control_flow_runtime as _control_flow_runtime  # noqa: F401  (installs it)
from . import partition as _partition  # noqa: F401  (the subgraph C API it emulates)

__all__ = ["Symbol", "Variable", "var", "Group", "load", "load_json", "create_symbol",
           "zeros", "ones", "full", "arange", "pow", "power", "maximum", "minimum",
           "hypot", "split_v2"]

_this = _sys.modules[__name__]
# contrib symbols are named like MXNet's (box_nms0, not _contrib_box_nms0)
_expose(_make_function, _this, op, _internal,
        {"_contrib_": contrib, "_linalg_": linalg, "_image_": image},
        leaf_named=("_contrib_",))

from . import random  # noqa: E402,F401
from . import sparse  # noqa: E402,F401  (mx.sym.sparse)


def __getattr__(name):
    """Operators registered after import (custom operators) appear on first use."""
    from ..operator.registry import all_ops
    opdef = all_ops().get(name)
    if opdef is None or name.startswith("__"):
        raise AttributeError(f"module 'mxnet.symbol' has no attribute {name!r}")
    fn = _make_function(opdef, name)
    setattr(op, name, fn)
    setattr(_this, name, fn)
    return fn


def _scalar_or_symbol(name, sym_op, scalar_op, rscalar_op, hint_scalar, hint_rscalar=None):
    """A function of two operands that are symbols or numbers (MXNet's sym.maximum,
    sym.pow, ...)."""
    def fn(left, right):
        left_sym, right_sym = isinstance(left, Symbol), isinstance(right, Symbol)
        if left_sym and right_sym:
            return _by_name(sym_op, [left, right], {}, hint=sym_op)
        if left_sym:
            return _by_name(scalar_op, [left], {"scalar": right}, hint=hint_scalar)
        if right_sym:
            return _by_name(rscalar_op, [right], {"scalar": left},
                            hint=hint_rscalar or hint_scalar)
        raise TypeError(f"{name}: at least one operand must be a Symbol, got "
                        f"{type(left).__name__} and {type(right).__name__}")
    fn.__name__ = name
    fn.__doc__ = f"Elementwise {name} of symbols and/or numbers."
    return fn


pow = _scalar_or_symbol("pow", "_power", "_power_scalar", "_rpower_scalar",  # noqa: A001
                        "_powerscalar", "_rpowerscalar")
power = pow
maximum = _scalar_or_symbol("maximum", "_maximum", "_maximum_scalar", "_maximum_scalar",
                            "_maximumscalar")
minimum = _scalar_or_symbol("minimum", "_minimum", "_minimum_scalar", "_minimum_scalar",
                            "_minimumscalar")
hypot = _scalar_or_symbol("hypot", "_hypot", "_hypot_scalar", "_hypot_scalar",
                          "_hypotscalar")


def zeros(shape, dtype=None, **kwargs):
    """A symbol of zeros of the given shape (float32 unless dtype says otherwise)."""
    return _internal._zeros(shape=shape, dtype="float32" if dtype is None else dtype,
                            **kwargs)


def ones(shape, dtype=None, **kwargs):
    return _internal._ones(shape=shape, dtype="float32" if dtype is None else dtype,
                           **kwargs)


def full(shape, val, dtype=None, **kwargs):
    return _internal._full(shape=shape, value=val,
                           dtype="float32" if dtype is None else dtype, **kwargs)


def arange(start, stop=None, step=1.0, repeat=1, infer_range=False, name=None,
           dtype=None):
    return _internal._arange(start=start, stop=stop, step=step, repeat=repeat,
                             infer_range=infer_range, name=name,
                             dtype="float32" if dtype is None else dtype)


def split_v2(ary, indices_or_sections, axis=0, squeeze_axis=False):
    """Split a symbol into outputs along axis: into ``n`` equal parts when given an
    int, or at the given indices when given a tuple (numpy.split's convention)."""
    return _internal._split_v2(ary, axis=axis, squeeze_axis=squeeze_axis,
                               **_split_v2_params(indices_or_sections))


def eye(N, M=0, k=0, dtype=None, **kwargs):
    """A symbol of an N x M matrix (M=0: N x N) with ones on diagonal k."""
    return _internal._eye(N=N, M=M, k=k, dtype="float32" if dtype is None else dtype,
                          **kwargs)


def linspace(start, stop, num, endpoint=True, name=None, dtype=None):
    """A symbol of ``num`` evenly spaced values from start to stop."""
    return _internal._linspace(start=start, stop=stop, num=num, endpoint=endpoint,
                               name=name, dtype="float32" if dtype is None else dtype)


def histogram(a, bins=10, range=None, **kwargs):  # noqa: A002  (MXNet's parameter name)
    """Symbolic histogram of the flattened input: ``bins`` is a Symbol of bin edges,
    or a count with ``range`` (low, high), which symbols require."""
    if isinstance(bins, Symbol):
        return _internal._histogram(a, bins, **kwargs)
    if isinstance(bins, int):
        if range is None:
            raise ValueError("histogram: symbols need range=(low, high) with a bin count")
        return _internal._histogram(a, bin_cnt=bins, range=range, **kwargs)
    raise ValueError("histogram: bins must be an integer or a Symbol of bin edges")
