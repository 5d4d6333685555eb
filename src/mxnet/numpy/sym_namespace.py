"""``mx.sym.np`` (``mxnet.symbol.numpy``, installed by ``mxnet/__init__``): NumPy-style functions that build Symbol graphs.

Each function here composes the registered operators' symbolic front ends (``mx.sym``)
for the NumPy signature (``sum(a, axis, keepdims)``, ``concatenate(seq, axis)``...),
for the functions whose graph does not depend on shapes. Hybridized blocks in NumPy
mode do not need this namespace: they trace ``F.np`` calls on real arrays
(``gluon.np_trace``), which covers every ``mx.np`` function. Names MXNet 1.9.1's
``mx.sym.np`` has that are not built here raise MissingFeatureError.
"""
import numbers

from .. import symbol as _sym
from .._missing import MissingFeatureError
from ..symbol.symbol import Symbol as _Symbol
from . import sym_linalg as linalg
from .math import _BINARY, _UNARY, tensordot_axes

__all__ = ["_Symbol"]


def _binary(name, op, scalar_op, rscalar_op):
    def fn(x1, x2, out=None, **kwargs):
        if isinstance(x1, _Symbol) and isinstance(x2, _Symbol):
            return getattr(_sym, op)(x1, x2)
        if isinstance(x1, _Symbol) and isinstance(x2, numbers.Number):
            return getattr(_sym._internal, scalar_op)(x1, scalar=float(x2))
        if isinstance(x2, _Symbol) and isinstance(x1, numbers.Number):
            return getattr(_sym._internal, rscalar_op or scalar_op)(x2, scalar=float(x1))
        raise TypeError(f"mx.sym.np.{name}: operands must be Symbols or numbers")
    fn.__name__ = name
    fn.__doc__ = f"Symbolic elementwise ``{name}`` with NumPy broadcasting."
    return fn


def _unary(name, op):
    def fn(x, out=None, **kwargs):
        return getattr(_sym, op)(x)
    fn.__name__ = name
    fn.__doc__ = f"Symbolic elementwise ``{name}``."
    return fn


for _n, (_op, _s, _r) in _BINARY.items():
    globals()[_n] = _binary(_n, _op, _s, _r)
    __all__.append(_n)
for _n, _op in _UNARY.items():
    globals()[_n] = _unary(_n, _op)
    __all__.append(_n)
divide, remainder = true_divide, mod  # noqa: F821


def _reduction(name):
    def fn(a, axis=None, dtype=None, out=None, keepdims=False, **kwargs):
        if dtype is not None:
            a = _sym.cast(a, dtype=dtype)
        kw = {"keepdims": bool(keepdims)}
        if axis is not None:
            kw["axis"] = axis
        return getattr(_sym, name)(a, **kw)
    fn.__name__ = name
    fn.__doc__ = f"Symbolic ``{name}`` over the given axes."
    return fn


sum, mean, max, min, prod = (_reduction(n) for n in  # noqa: A001
                             ("sum", "mean", "max", "min", "prod"))


def reshape(a, newshape, order="C"):
    """Symbolic reshape (one -1 is inferred)."""
    return _sym.reshape(a, shape=(newshape,) if isinstance(newshape, int) else
                        tuple(newshape))


def transpose(a, axes=None):
    return _sym.transpose(a, axes=() if axes is None else tuple(axes))


def concatenate(seq, axis=0, out=None):
    return _sym.concat(*seq, dim=axis)


def stack(arrays, axis=0, out=None):
    return _sym.stack(*arrays, axis=axis, num_args=len(arrays))


def expand_dims(a, axis):
    return _sym.expand_dims(a, axis=axis)


def squeeze(a, axis=None):
    return _sym.squeeze(a, axis=axis) if axis is not None else _sym.squeeze(a)


def swapaxes(a, axis1, axis2):
    return _sym.swapaxes(a, dim1=axis1, dim2=axis2)


def clip(a, a_min, a_max, out=None):
    return _sym.clip(a, a_min=float("-inf") if a_min is None else a_min,
                     a_max=float("inf") if a_max is None else a_max)


def where(condition, x, y):
    return _sym.where(condition, x, y)


def dot(a, b, out=None):
    """Symbolic NumPy dot (the ``_np_dot`` operator, as ``mx.np.dot``)."""
    return _sym._internal._np_dot(a, b)


def zeros_like(a, dtype=None):
    return _sym.zeros_like(a)


def ones_like(a, dtype=None):
    return _sym.ones_like(a)


def tile(A, reps):
    return _sym.tile(A, reps=tuple(reps) if not isinstance(reps, int) else (reps,))


amax, amin = max, min  # noqa: F821


def tensordot(a, b, axes=2):
    """Symbolic tensordot (the ``_npi_tensordot`` operator, as ``mx.np.tensordot``)."""
    a_axes, b_axes = tensordot_axes(axes)
    return _sym.op._npi_tensordot(a, b, a_axes=a_axes, b_axes=b_axes)


def inner(a, b):
    """Symbolic inner product over the last axes (``_npi_tensordot``)."""
    return _sym.op._npi_tensordot(a, b, a_axes=(-1,), b_axes=(-1,))


def outer(a, b):
    """Symbolic outer product of the flattened operands."""
    return _sym.broadcast_mul(_sym.reshape(a, shape=(-1, 1)), _sym.reshape(b, shape=(1, -1)))


def vdot(a, b):
    """Symbolic dot product of the flattened operands."""
    return _sym.sum(_sym.reshape(a, shape=(-1,)) * _sym.reshape(b, shape=(-1,)))


def einsum(*operands, **kwargs):
    """Symbolic Einstein summation (the ``_npi_einsum`` operator, as ``mx.np.einsum``)."""
    subscripts, arrays = operands[0], operands[1:]
    return _sym._internal._npi_einsum(*arrays, subscripts=subscripts,
                                      num_args=len(arrays),
                                      optimize=int(bool(kwargs.get("optimize", False))))


def ravel(x, order="C"):
    return _sym.reshape(x, shape=(-1,))


def roll(a, shift, axis=None):
    from .manipulation import _roll_params
    return _sym._internal._npi_roll(a, **_roll_params(shift, axis))


def flip(m, axis=None):
    if axis is None:
        raise MissingFeatureError("mx.sym.np.flip: axis=None needs the input's rank; "
                                  "give the axes")
    return _sym.reverse(m, axis=axis)


def argmax(a, axis=None, out=None):
    return _sym.argmax(_sym.reshape(a, shape=(-1,)) if axis is None else a,
                       axis=0 if axis is None else axis)


def argmin(a, axis=None, out=None):
    return _sym.argmin(_sym.reshape(a, shape=(-1,)) if axis is None else a,
                       axis=0 if axis is None else axis)


def sort(a, axis=-1, kind=None, order=None):
    return _sym.sort(a, axis=axis)


def argsort(a, axis=-1, kind=None, order=None):
    return _sym.argsort(a, axis=axis, dtype="int64")


def copy(a):
    return _sym._internal._copy(a)


def around(x, decimals=0, out=None):
    return _sym.op._npi_around(x, decimals=decimals)


round = round_ = around  # noqa: A001


def fabs(x, out=None):
    return _sym.abs(x)


__all__ += ["divide", "remainder", "sum", "mean", "max", "min", "prod", "reshape",
            "transpose", "concatenate", "stack", "expand_dims", "squeeze", "swapaxes",
            "clip", "where", "dot", "zeros_like", "ones_like", "tile", "amax", "amin",
            "tensordot", "inner", "outer", "vdot", "einsum", "ravel", "flip", "argmax",
            "argmin", "sort", "argsort", "copy", "around", "round", "round_", "fabs",
            "linalg"]




def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    raise MissingFeatureError(f"mx.sym.np.{name} (a symbolic NumPy function) is not "
                              "implemented in pymxnet; hybridized blocks in NumPy mode "
                              "trace mx.np calls instead")
