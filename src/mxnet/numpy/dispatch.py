"""NumPy's dispatch protocols for ``mx.np.ndarray`` (NEP 18 ``__array_function__`` and
NEP 13 ``__array_ufunc__``): official NumPy functions and ufuncs called on mx.np
arrays run mx.np's implementation when it has one (the names listed here, as MXNet
1.9.1 lists them) and otherwise compute on the host and return mx.np arrays
(``numpy.fallback``)."""
import functools

import numpy as _np

__all__ = ["with_array_function_protocol", "with_array_ufunc_protocol",
           "array_function", "array_ufunc"]

_NUMPY_ARRAY_FUNCTION_LIST = [
    "all", "any", "sometrue", "argmin", "argmax", "around", "round", "round_", "argsort",
    "sort", "append", "broadcast_arrays", "broadcast_to", "clip", "concatenate", "copy",
    "cumsum", "diag", "diagonal", "diagflat", "dot", "expand_dims", "fix", "flip", "flipud",
    "fliplr", "inner", "insert", "max", "amax", "mean", "min", "amin", "nonzero",
    "ones_like", "atleast_1d", "atleast_2d", "atleast_3d", "prod", "product", "ravel",
    "repeat", "reshape", "roll", "split", "array_split", "hsplit", "vsplit", "dsplit",
    "squeeze", "stack", "std", "sum", "swapaxes", "take", "tensordot", "tile", "transpose",
    "unique", "unravel_index", "diag_indices_from", "delete", "var", "vdot", "vstack",
    "column_stack", "hstack", "dstack", "zeros_like", "linalg.norm", "linalg.cholesky",
    "linalg.inv", "linalg.solve", "linalg.tensorinv", "linalg.tensorsolve", "linalg.pinv",
    "linalg.eigvals", "linalg.eig", "linalg.eigvalsh", "linalg.eigh", "shape", "trace",
    "tril", "meshgrid", "outer", "einsum", "polyval", "shares_memory", "may_share_memory",
    "quantile", "percentile", "diff", "ediff1d", "resize", "where", "full_like", "bincount",
    "empty_like", "nan_to_num", "isnan", "isfinite", "isposinf", "isneginf", "isinf", "pad"]

_NUMPY_ARRAY_UFUNC_LIST = [
    "abs", "fabs", "add", "arctan2", "copysign", "degrees", "hypot", "lcm", "subtract",
    "multiply", "true_divide", "negative", "power", "mod", "matmul", "absolute", "rint",
    "sign", "exp", "log", "log2", "log10", "expm1", "sqrt", "square", "cbrt", "reciprocal",
    "invert", "bitwise_not", "remainder", "sin", "cos", "tan", "sinh", "cosh", "tanh",
    "arcsin", "arccos", "arctan", "arcsinh", "arccosh", "arctanh", "maximum", "minimum",
    "ceil", "trunc", "floor", "bitwise_and", "bitwise_xor", "bitwise_or", "logical_not",
    "equal", "not_equal", "less", "less_equal", "greater", "greater_equal"]


def _in_installed_numpy(names):
    """The names the installed NumPy defines: NumPy 2 dropped a few NumPy 1.x aliases
    MXNet 1.9.1 lists (round_, product, sometrue...), and a function NumPy no longer
    has cannot be dispatched to mx.np (``mx.np`` keeps its own names regardless)."""
    return [n for n in names if _lookup(_np, n) is not None]


def _lookup(module, dotted):
    obj = module
    for part in dotted.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def _build(names):
    from .. import numpy as mx_np
    table = {}
    for name in names:
        onp_fn, mx_fn = _lookup(_np, name), _lookup(mx_np, name)
        if onp_fn is not None and mx_fn is not None:
            table[onp_fn] = mx_fn
    return table


_NUMPY_ARRAY_FUNCTION_LIST = _in_installed_numpy(_NUMPY_ARRAY_FUNCTION_LIST)
_NUMPY_ARRAY_UFUNC_LIST = _in_installed_numpy(_NUMPY_ARRAY_UFUNC_LIST)
_NUMPY_ARRAY_FUNCTION_DICT = {}
_NUMPY_ARRAY_UFUNC_DICT = {}


def array_function(func, types, args, kwargs):
    """``ndarray.__array_function__``: mx.np's implementation or the host fallback."""
    if not _NUMPY_ARRAY_FUNCTION_DICT:
        _NUMPY_ARRAY_FUNCTION_DICT.update(_build(_NUMPY_ARRAY_FUNCTION_LIST))
    mx_fn = _NUMPY_ARRAY_FUNCTION_DICT.get(func)
    if mx_fn is not None:
        return mx_fn(*args, **kwargs)
    from .fallback import call_on_host
    return call_on_host(func, args, kwargs)


def array_ufunc(ufunc, method, inputs, kwargs):
    """``ndarray.__array_ufunc__``: mx.np's ufunc for a plain call, else the host."""
    if not _NUMPY_ARRAY_UFUNC_DICT:
        from .. import numpy as mx_np
        _NUMPY_ARRAY_UFUNC_DICT.update({n: getattr(mx_np, n) for n in
                                        _NUMPY_ARRAY_UFUNC_LIST if hasattr(mx_np, n)})
    from .fallback import call_on_host
    if method == "__call__":
        mx_fn = _NUMPY_ARRAY_UFUNC_DICT.get(ufunc.__name__)
        if mx_fn is not None and "out" not in kwargs:
            return mx_fn(*inputs, **kwargs)
    return call_on_host(getattr(ufunc, method), inputs, kwargs)


def with_array_function_protocol(func):
    """Run func (a test) with NumPy's ``__array_function__`` protocol (always on in the
    NumPy versions pymxnet supports)."""
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        return func(*args, **kwargs)
    return wrapper


def with_array_ufunc_protocol(func):
    """Run func with NumPy's ``__array_ufunc__`` protocol (always on)."""
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        return func(*args, **kwargs)
    return wrapper
