"""Generate ``mx.nd.<op>`` functions from the operator registry (closures with an
``inspect.Signature``; no generated source)."""
from ..operator.call import bind_call, signature
from .dispatch import invoke
from ..context import Context
from .ndarray import NDArray, _check_ctx
from ..base import MXNetError

__all__ = ["make_function", "simple_arity", "FAST_CLASSES"]

# Array classes the generated functions pass straight to the dispatcher (mxnet.numpy
# adds mx.np.ndarray, an NDArray subclass).
FAST_CLASSES = {NDArray}


def _is_input(v):
    return isinstance(v, NDArray)


def simple_arity(op):
    """How many arrays a call of op with no keywords passes (arguments and aux states
    at the default parameters), or None when such a call cannot take the fast path
    (variadic inputs, required parameters)."""
    if op.variadic is None and getattr(op, "positional_inputs", None) is None:
        try:
            p0 = op._default_params()
            return len(op.arguments(p0)) + len(op.aux_states(p0))
        except Exception:      # required parameters: no fast path
            return None
    return None


def make_function(op, public_name):
    """The imperative function for op: ``f(*inputs, out=None, name=None, **params)``."""
    arity = simple_arity(op)

    def fn(*args, out=None, name=None, ctx=None, attr=None, **kwargs):
        if ctx is not None and ctx.__class__ is not Context:
            ctx = _check_ctx(ctx)            # 'cpu(0)' strings, as MXNet accepts
        if not kwargs and arity == len(args):
            for a in args:
                if a.__class__ not in FAST_CLASSES:
                    break
            else:
                return invoke(op, list(args), None, out, ctx, op._defaults)
        inputs, p = bind_call(op, args, kwargs, _is_input)
        for i, v in enumerate(inputs):
            if v is None:
                names = list(op.arguments(p)) + list(op.aux_states(p))
                raise MXNetError(f"Operator {op.name}: required input '{names[i]}' is missing")
        return invoke(op, inputs, None, out, ctx, p)

    fn.__name__ = public_name
    fn.__qualname__ = public_name
    fn.__doc__ = op.doc or (op.__class__.__doc__ or f"The {op.name} operator.")
    fn.__signature__ = signature(op)
    fn.__module__ = "mxnet.ndarray"
    return fn
