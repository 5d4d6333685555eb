"""Binding a front-end call ``F.op(*args, **kwargs)`` to an operator's inputs and
parameters, shared by ``mx.nd`` and ``mx.sym`` so both accept the same calls.

Positional values are matched as MXNet's generated signatures do: inputs first (in
argument order), then parameters in declaration order.
"""
import inspect

from ..base import MXNetError
from .params import REQUIRED, Params
from .registry import ShapeError, add_listener

__all__ = ["bind_call", "input_names", "signature", "expose"]

# Keywords every front-end function accepts and that are not operator parameters.
FRONT_END_KEYWORDS = ("out", "name", "ctx", "attr")
# Symbol attributes MXNet stores as __key__ (ctx_group -> __ctx_group__), never
# operator parameters.
HIDDEN_KEYS = ("ctx_group", "lr_mult", "wd_mult", "force_mirroring", "mirror_stage",
               "profiler_scope")


def is_dunder(key):
    """Whether key is spelled as a stored attribute (``__lr_mult__``)."""
    return len(key) > 4 and key.startswith("__") and key.endswith("__")


def expose(make_function, top, op, internal, prefixed, leaf_named=()):
    """Give a front end (mx.nd, mx.sym) a function per registered operator, now and for
    every later registration: ``make_function(opdef, name)`` goes on ``op`` (all names),
    ``internal`` ('_' names), the sub-namespaces of ``prefixed`` ({'_contrib_': contrib,
    '_linalg_': linalg, '_image_': image}: '_contrib_x' as contrib.x) and, for public
    names, the ``top`` module unless it defines the name itself. For the prefixes in
    ``leaf_named`` the sub-namespace's function is made under the leaf name (symbols
    then get MXNet's default names: ``box_nms0``)."""
    generated = set()

    def listener(name, opdef):
        fn = make_function(opdef, name)
        setattr(op, name, fn)
        for prefix, space in prefixed.items():
            if name.startswith(prefix):
                leaf = name[len(prefix):]
                setattr(space, leaf, make_function(opdef, leaf) if prefix in leaf_named
                        else fn)
                break
        if name.startswith("_"):
            setattr(internal, name, fn)
        elif not hasattr(top, name) or name in generated:
            setattr(top, name, fn)
            generated.add(name)
    add_listener(listener)


def input_names(op):
    """Every input name the operator can take (arguments then aux states), computed
    with default parameters and cached."""
    names = op.__dict__.get("_input_names")
    if names is None:
        p = Params({k: (None if f.required else f.default) for k, f in op.params.fields.items()})
        p.given = {}
        try:
            names = list(op.arguments(p)) + list(op.aux_states(p))
        except Exception:
            names = ["data"]
        op._input_names = names
    return names


def bind_call(op, args, kwargs, is_input, auto_inputs=False):
    """Split a call into (inputs, params).

    ``inputs`` is a list ordered as ``op.arguments(p) + op.aux_states(p)``, with None for
    inputs not given (a front end decides whether that is an error, e.g. the symbol
    front end creates a variable); ``params`` is the parsed Params. A variable-input
    operator called with no inputs at all is an error unless ``auto_inputs`` (the
    symbol front end, which then makes one variable per input its count names).
    """
    pos_inputs, pos_params = [], []
    for a in args:
        if is_input(a) or (a is None and not pos_params):
            pos_inputs.append(a)
        else:
            pos_params.append(a)
    names = input_names(op) if op.variadic is None else ()
    named_inputs, raw = {}, {}
    for k, v in kwargs.items():
        if k in names or (is_input(v) and op.variadic is None):
            if v is not None:
                named_inputs[k] = v
        elif v is None and k not in op.params.fields:
            continue        # an input these parameters drop (sequence_length=None)
        elif k.startswith("__") and k.endswith("__"):
            continue                          # attributes such as __layout__
        else:
            raw[k] = v
    if pos_params:
        fields = list(op.params.fields)
        if len(pos_params) > len(fields):
            raise MXNetError(f"Operator {op.name} takes at most {len(fields)} positional "
                             f"parameters, got {len(pos_params)}")
        for fname, v in zip(fields, pos_params):
            if fname in raw:
                raise MXNetError(f"Operator {op.name} got multiple values for '{fname}'")
            raw[fname] = v
    if op.variadic is not None:
        if op.variadic in op.params and op.variadic not in raw:
            raw[op.variadic] = len(pos_inputs)
        p = op.parse(raw)
        want = len(op.arguments(p))
        if auto_inputs and not pos_inputs:
            return [None] * want, p     # the symbol front end makes the variables
        if len(pos_inputs) != want:     # checked once here, not in each op's body
            raise ShapeError(f"Operator {op.name}: {op.variadic}={p[op.variadic]} means "
                             f"{want} inputs, got {len(pos_inputs)}")
        return list(pos_inputs), p
    p = op.parse(raw)
    arg_names = list(op.arguments(p)) + list(op.aux_states(p))
    # A None given for an input these parameters drop (Convolution(x, w, None,
    # no_bias=True)) is no input, as in MXNet's generated functions.
    while len(pos_inputs) > len(arg_names) and pos_inputs[-1] is None:
        pos_inputs.pop()
    if len(pos_inputs) > len(arg_names):
        raise MXNetError(f"Operator {op.name} takes {len(arg_names)} inputs "
                         f"({', '.join(arg_names)}), got {len(pos_inputs)}")
    inputs = list(pos_inputs) + [None] * (len(arg_names) - len(pos_inputs))
    order = getattr(op, "positional_inputs", None)
    if order is not None and pos_inputs:
        # MXNet's call order differs from arguments + aux (quantized_batch_norm takes
        # its moving statistics before min_data/max_data)
        inputs = [None] * len(arg_names)
        for k, v in zip(order(p), pos_inputs):
            inputs[arg_names.index(k)] = v
    for k, v in named_inputs.items():
        if k not in arg_names:
            raise MXNetError(f"Operator {op.name} got an unexpected input '{k}' "
                             f"(inputs: {', '.join(arg_names)})")
        i = arg_names.index(k)
        if i < len(pos_inputs) and pos_inputs[i] is not None:
            raise MXNetError(f"Operator {op.name} got multiple values for input '{k}'")
        inputs[i] = v
    return inputs, p


def signature(op):
    """An inspect.Signature in MXNet's generated style, for help() and IDEs."""
    P = inspect.Parameter
    params = []
    if op.variadic is not None:
        params.append(P("data", P.VAR_POSITIONAL))
    else:
        params += [P(n, P.POSITIONAL_OR_KEYWORD, default=None) for n in input_names(op)]
    kind = P.KEYWORD_ONLY if op.variadic is not None else P.POSITIONAL_OR_KEYWORD
    for name, f in op.params.fields.items():
        if name.isidentifier() and name not in input_names(op):
            params.append(P(name, kind, default=None if f.default is REQUIRED else f.default))
    for k in FRONT_END_KEYWORDS:
        params.append(P(k, P.KEYWORD_ONLY, default=None))
    params.append(P("kwargs", P.VAR_KEYWORD))
    return inspect.Signature(params)
