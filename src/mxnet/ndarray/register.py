"""Generate ``mx.nd.<op>`` functions from the operator registry (closures with an
``inspect.Signature``; no generated source)."""
from ..operator.call import bind_call, input_names, signature
from ..operator.params import Schema
from ..operator.registry import Op
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


# Parameter values a call's binding may be remembered by (with their class: 1, 1.0 and
# True hash alike but need not parse alike); tuples of ints too (axes, shapes).
_PLAIN = frozenset((int, float, bool, str, type(None)))
_BOUND_CALLS_PER_OP = 256


def _plain(v):
    c = v.__class__
    return c in _PLAIN or (c is tuple and all(e.__class__ is int for e in v))


def _call_key(args, kwargs):
    """(number of leading arrays, then each further positional value and keyword with
    its class) for a call whose leading arguments are arrays of FAST_CLASSES and whose
    other values are plain (_PLAIN, tuples of ints); None for any other call."""
    n = 0
    for a in args:
        if a.__class__ not in FAST_CLASSES:
            break
        n += 1
    key = (n,)
    for v in args[n:]:
        c = v.__class__
        if c not in _PLAIN and not _plain(v):    # (the class test first: no call)
            return None
        key += (c, v)
    for k, v in kwargs.items():
        c = v.__class__
        if c not in _PLAIN and not _plain(v):
            return None
        key += (k, c, v)
    return key


def _is_symbol(v):
    # by its interface: the ndarray layer does not import the symbol layer (no cycle)
    t = type(v)
    return hasattr(t, "list_arguments") and hasattr(t, "tojson")


def _reject_symbols(op, args, kwargs):
    """A Symbol given to an imperative function (``nd.X`` where ``F.X`` was meant, in a
    hybridized ``hybrid_forward``) fails as in MXNet 1.9.1, whose generated functions
    assert each array argument is an NDArray and name it."""
    for i, a in enumerate(args):
        if _is_symbol(a):
            if op.variadic is not None:
                raise AssertionError(
                    f"Positional arguments must have NDArray type, but got {a}")
            names = input_names(op)
            name = names[i] if i < len(names) else "data"
            raise AssertionError(f"Argument {name} must have NDArray type, but got {a}")
    for k, v in kwargs.items():
        if _is_symbol(v):
            raise AssertionError(f"Argument {k} must have NDArray type, but got {v}")


def make_function(op, public_name):
    """The imperative function for op: ``f(*inputs, out=None, name=None, **params)``."""
    arity = simple_arity(op)
    # The parsed parameters of calls seen before, by _call_key: a layer calls its
    # operator with the same keywords every step (F.FullyConnected(x, w, b,
    # num_hidden=...)), and binding them costs more than a small kernel. Only where
    # parsing is the Schema's cached parse (whose Params every such call shares
    # anyway): an operator parsing its own way may keep per-call state in them
    # (Custom's operator instances).
    bound = {} if (type(op).parse is Op.parse and
                   type(op.params).parse is Schema.parse) else None

    def fn(*args, out=None, name=None, ctx=None, attr=None, **kwargs):
        if ctx is not None and ctx.__class__ is not Context:
            ctx = _check_ctx(ctx)            # 'cpu(0)' strings, as MXNet accepts
        if not kwargs and arity == len(args):
            for a in args:
                if a.__class__ not in FAST_CLASSES:
                    break
            else:
                return invoke(op, list(args), None, out, ctx, op._defaults)
        key = None if bound is None else _call_key(args, kwargs)
        if key is not None:
            p = bound.get(key)
            if p is not None:
                return invoke(op, list(args[:key[0]]), None, out, ctx, p)
        _reject_symbols(op, args, kwargs)
        inputs, p = bind_call(op, args, kwargs, _is_input)
        for i, v in enumerate(inputs):
            if v is None:
                names = list(op.arguments(p)) + list(op.aux_states(p))
                raise MXNetError(f"Operator {op.name}: required input '{names[i]}' is missing")
        # remembered only when the inputs are the leading arrays themselves, in order
        if key is not None and len(inputs) == key[0] and \
                all(v is a for v, a in zip(inputs, args)):
            if len(bound) >= _BOUND_CALLS_PER_OP:
                bound.clear()
            bound[key] = p
        return invoke(op, inputs, None, out, ctx, p)

    fn.__name__ = public_name
    fn.__qualname__ = public_name
    fn.__doc__ = op.doc or (op.__class__.__doc__ or f"The {op.name} operator.")
    fn.__signature__ = signature(op)
    fn.__module__ = "mxnet.ndarray"
    return fn
