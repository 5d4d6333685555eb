"""Generate ``mx.sym.<op>`` functions from the operator registry (closures with an
``inspect.Signature``, no generated source). They accept the same calls as ``mx.nd``
(``operator/call.py``), plus ``name=`` and ``attr=``; inputs left out become variables.
"""
from ..base import MXNetError
from ..operator.call import bind_call, input_names, signature
from .create import create_symbol
from .graph import HIDDEN_KEYS, attr_key, is_dunder
from .symbol import Symbol

__all__ = ["make_function"]


def _is_input(v):
    return isinstance(v, Symbol)


def make_function(op, public_name):
    """The symbolic function for op: ``f(*inputs, name=None, attr=None, **params)``."""
    hint = public_name.lower()
    fields = op.params.fields

    def fn(*args, name=None, attr=None, out=None, ctx=None, **kwargs):
        # MXNet 1.9.1's symbolic functions accept out= (shared with mx.nd) and ignore it:
        # a symbol has no destination array.
        del out
        if ctx is not None and "ctx" in fields:
            kwargs["ctx"] = ctx
        extra_attr = {}
        for key in [k for k in kwargs if k not in fields and (is_dunder(k) or k in HIDDEN_KEYS)]:
            extra_attr[attr_key(key)] = str(kwargs.pop(key))
        if op.variadic is None and not input_names(op):
            # an operator without inputs ignores Symbol keyword arguments (nnvm's compose
            # has nothing to bind them to), as MXNet does
            kwargs = {k: v for k, v in kwargs.items() if not isinstance(v, Symbol)}
        inputs, p = bind_call(op, args, kwargs, _is_input, auto_inputs=True)
        given = dict(p.given)
        for key in given:                       # the caller's own values (types kept)
            if key in kwargs:
                given[key] = kwargs[key]
        if attr:
            extra_attr = {**attr, **extra_attr}
        return create_symbol(op, inputs, p, name=name, attr=extra_attr or None, hint=hint,
                             given=given)

    fn.__name__ = public_name
    fn.__qualname__ = public_name
    fn.__doc__ = op.doc or (op.__class__.__doc__ or f"The {op.name} operator.")
    fn.__signature__ = signature(op)
    fn.__module__ = "mxnet.symbol"
    return fn
