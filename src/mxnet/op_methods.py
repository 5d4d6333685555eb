"""Convenience methods shared by NDArray and Symbol (one mixin instead of two copies).

A subclass provides ``_fluent_fn(name)``: the front end's function for operator
``name`` (``mx.nd.<name>`` or ``mx.sym.<name>``). In return it gets ``x.sum(...)``,
``x.exp()``, ``x.transpose(...)`` ... as methods that call that function with ``x`` as
the first input, and the arithmetic/comparison operators written in terms of
``_binary_op``/``_scalar_op`` hooks.
"""

__all__ = ["OpMethods", "FLUENT_METHODS"]

# Operators exposed as methods (x.name(...) == F.name(x, ...)), as MXNet 1.9.1 does.
FLUENT_METHODS = (
    "reshape_like", "zeros_like", "ones_like", "broadcast_axes", "repeat", "pad",
    "swapaxes", "split", "split_v2", "slice", "slice_axis", "slice_like", "take",
    "one_hot", "pick", "sort", "topk", "argsort", "argmax", "argmax_channel", "argmin",
    "clip", "abs", "sign", "flatten", "shape_array", "size_array", "expand_dims",
    "tile", "transpose", "flip", "depth_to_space", "space_to_depth", "diag", "sum",
    "nansum", "prod", "nanprod", "mean", "max", "min", "norm", "round", "rint", "fix",
    "floor", "ceil", "trunc", "sin", "cos", "tan", "arcsin", "arccos", "arctan",
    "degrees", "radians", "sinh", "cosh", "tanh", "arcsinh", "arccosh", "arctanh", "exp",
    "expm1", "log", "log10", "log2", "log1p", "log_sigmoid", "sqrt", "rsqrt", "cbrt",
    "rcbrt", "square", "reciprocal", "relu", "sigmoid", "softmax", "log_softmax",
    "softmin", "mish", "squeeze", "broadcast_to", "broadcast_like", "erf", "erfinv",
    "gamma", "gammaln", "softsign", "logical_not",
)


# Methods that take MXNet's ``inplace=`` flag: True asks for a result sharing memory
# with the input (a reshaped view) instead of a copy.
INPLACE_VIEW_METHODS = ("flatten", "squeeze", "expand_dims")


def _make_fluent(name):
    def method(self, *args, **kwargs):
        if name in INPLACE_VIEW_METHODS and kwargs.pop("inplace", False):
            return self._inplace_view(name, *args, **kwargs)
        return self._fluent_fn(name)(self, *args, **kwargs)
    method.__name__ = name
    method.__doc__ = f"Convenience method: same as calling ``{name}`` with this array first."
    return method


class OpMethods:
    """Mixin: fluent operator methods and Python operators for array-like graphs."""

    __slots__ = ()

    def _fluent_fn(self, name):            # provided by the front end
        raise NotImplementedError

    def _inplace_view(self, name, *args, **kwargs):
        """``x.flatten/squeeze/expand_dims(..., inplace=True)``: a front end whose arrays
        can share memory returns a view; by default (graphs) the plain operator."""
        return self._fluent_fn(name)(self, *args, **kwargs)

    # Python operators. Each front end names its ops through these two hooks.
    def _binary_op(self, other, op, scalar_op, reflect=False):
        raise NotImplementedError

    def __add__(self, o):
        return self._binary_op(o, "broadcast_add", "_plus_scalar")

    def __radd__(self, o):
        return self._binary_op(o, "broadcast_add", "_plus_scalar", reflect=True)

    def __sub__(self, o):
        return self._binary_op(o, "broadcast_sub", "_minus_scalar")

    def __rsub__(self, o):
        return self._binary_op(o, "broadcast_sub", "_rminus_scalar", reflect=True)

    def __mul__(self, o):
        return self._binary_op(o, "broadcast_mul", "_mul_scalar")

    def __rmul__(self, o):
        return self._binary_op(o, "broadcast_mul", "_mul_scalar", reflect=True)

    def __truediv__(self, o):
        return self._binary_op(o, "broadcast_div", "_div_scalar")

    def __rtruediv__(self, o):
        return self._binary_op(o, "broadcast_div", "_rdiv_scalar", reflect=True)

    def __mod__(self, o):
        return self._binary_op(o, "broadcast_mod", "_mod_scalar")

    def __rmod__(self, o):
        return self._binary_op(o, "broadcast_mod", "_rmod_scalar", reflect=True)

    def __pow__(self, o):
        return self._binary_op(o, "broadcast_power", "_power_scalar")

    def __rpow__(self, o):
        return self._binary_op(o, "broadcast_power", "_rpower_scalar", reflect=True)

    def __eq__(self, o):
        return self._binary_op(o, "broadcast_equal", "_equal_scalar")

    def __ne__(self, o):
        return self._binary_op(o, "broadcast_not_equal", "_not_equal_scalar")

    def __gt__(self, o):
        return self._binary_op(o, "broadcast_greater", "_greater_scalar")

    def __ge__(self, o):
        return self._binary_op(o, "broadcast_greater_equal", "_greater_equal_scalar")

    def __lt__(self, o):
        return self._binary_op(o, "broadcast_lesser", "_lesser_scalar")

    def __le__(self, o):
        return self._binary_op(o, "broadcast_lesser_equal", "_lesser_equal_scalar")

    def __neg__(self):
        return self._fluent_fn("negative")(self)

    def __abs__(self):
        return self._fluent_fn("abs")(self)

    __hash__ = object.__hash__


for _name in FLUENT_METHODS:
    setattr(OpMethods, _name, _make_fluent(_name))
