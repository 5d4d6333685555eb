"""Shape and dtype inference passes (and the Symbol.infer_shape/infer_type front ends).

Each operator's ``infer_shape``/``infer_type`` is applied in topological order,
repeatedly until nothing changes, so a shape learnt late (a weight inferred from the
data it multiplies) reaches every node. A dimension of 0 means unknown (MXNet 1.x
legacy semantics); under ``mx.np_shape()`` (read when a pass starts) 0 is a real
zero-size dimension and -1 means unknown, in the passes as at the front end (a
zero-size array binds, ``index_array`` of a 0-d array is ``(0,)``); operators see
complete shapes or None, and ``partial_shape.infer_node`` derives MXNet's answers
for partly known shapes from their rules (forwards and backwards). A contradiction is
an MXNetError naming the operator, the input and both shapes.
"""
import ast
import functools
import warnings

import numpy as np

from ..base import FLAG_TO_DTYPE, MXNetError, dtype_np
from .graph import Graph
from ..util import is_np_shape
from .partial_shape import UNKNOWN, _complete, infer_node, known, merge_dims as _merge_shape
from .partial_shape import unknown_marker

__all__ = ["infer_shape_pass", "infer_type_pass", "infer_symbol_shapes",
           "infer_symbol_types", "is_complete"]


def is_complete(shape):
    """Whether every dimension is known (0 counts as known under np_shape)."""
    with unknown_marker(-1 if is_np_shape() else 0):
        return _complete(shape)


def incomplete_entries(shapes):
    """The entry ids whose shape is not complete (see is_complete)."""
    with unknown_marker(-1 if is_np_shape() else 0):
        return [e for e, s in enumerate(shapes) if not _complete(s)]


def _as_shape(value):
    if value is None:
        return None
    if type(value) is tuple and _plain_known(value):
        return value            # the common case: a rule's tuple of known Python ints
    if isinstance(value, (int, np.integer)):
        value = (int(value),)
    # operators say None; -1 (np_shape's spelling, creation ops' shape=(-1, 3)) is
    # unknown too: no real dimension is negative
    u = UNKNOWN()
    return tuple(u if d is None or not known(d) else int(d) for d in value)


def _plain_known(dims):
    """Whether every dimension is a Python int that is known."""
    u = UNKNOWN()
    for d in dims:
        if type(d) is not int or d <= u:
            return False
    return True


def _var_shape(node):
    text = node.attrs.get("__shape__")
    if text is None:
        return None
    try:
        shape = _parse_shape(text)
    except (ValueError, SyntaxError, TypeError):
        raise MXNetError(f"variable {node.name}: cannot parse __shape__ {text!r}") from None
    return None if unknown_given_shape(shape) else _as_shape(shape)


def unknown_given_shape(shape):
    """Whether a shape a caller gives stands for 'unknown': () outside np_shape, where
    MXNet 1.x has no 0-d arrays and a shape without dimensions is an unknown one."""
    return isinstance(shape, tuple) and not shape and not is_np_shape()


@functools.lru_cache(maxsize=4096)
def _parse_shape(text):
    # (a graph bound for every new input shape parses the same attributes each time)
    return ast.literal_eval(text)


def _var_dtype(node):
    text = node.attrs.get("__dtype__")
    if text is None:
        return None
    try:
        return FLAG_TO_DTYPE[int(text)]
    except (ValueError, KeyError):
        return dtype_np(text)


def _merge_dtype(old, new):
    if new is None:
        return old
    if old is None or np.dtype(old) == np.dtype(new):
        return new
    raise ValueError


def _fmt_shape(s):
    return "()" if s is None else str(tuple(s))


def _run_pass(graph, values, call, merge, fmt, kind, complete):
    """Apply ``call(node, values of its arguments, values of its outputs) -> (args,
    outs, aux)`` to every operator node until a fixpoint; merge the results into
    ``values``. A node runs again only when a value it reads or writes has changed
    since (``version`` counts the changes of each entry); once its values are all
    ``complete`` its own results are no reason to run it again."""
    nodes, seen = graph.nodes, {}
    node_outputs = [list(range(graph.row_ptr[nid], graph.row_ptr[nid + 1]))
                    for nid in range(len(nodes))]
    version = [0] * len(values)
    for _ in range(len(nodes) + 1):
        changed = False
        for nid, node in enumerate(nodes):
            if node.op is None:
                continue
            eids = graph.node_inputs[nid]
            outs = node_outputs[nid]
            touched = eids + outs
            state = tuple([version[e] for e in touched])
            if seen.get(nid) == state:
                continue
            seen[nid] = state
            n_args = graph.num_args[nid]
            try:
                res_args, res_outs, res_aux = call(node, [values[e] for e in eids[:n_args]],
                                                   [values[e] for e in outs])
            except MXNetError as err:
                raise MXNetError(f"Error in operator {node.name}: {err}") from None
            except Exception as err:           # an operator's rule failed outright
                raise MXNetError(f"Error in operator {node.name}: {kind} inference failed: "
                                 f"{type(err).__name__}: {err}") from None
            results = list(zip(eids, list(res_args or []) + list(res_aux or [])))
            results += zip(outs, res_outs or [])
            for pos, (eid, new) in enumerate(results):
                old = values[eid]
                try:
                    merged = merge(old, new)
                except (ValueError, TypeError):
                    names = node.input_names()
                    label = names[pos] if pos < len(eids) else graph.entry_name(eid)
                    src = graph.describe_entry(eid)
                    raise MXNetError(
                        f"Error in operator {node.name}: {kind} inconsistent for '{label}'"
                        f"{'' if src == label else f' ({src})'}: provided {fmt(old)}, "
                        f"inferred {fmt(new)}") from None
                if (old is None) != (merged is None) or \
                        (old is not None and merged != old):   # (np.dtype == None is True)
                    values[eid] = merged
                    version[eid] += 1
                    changed = True
            if all([complete(values[e]) for e in touched]):
                seen[nid] = tuple([version[e] for e in touched])
        if not changed:
            break
    return values


def _shape_semantics(fn):
    """Run a shape pass with the unknown-dimension marker of the caller's np_shape."""
    def wrapper(*args, **kwargs):
        with unknown_marker(-1 if is_np_shape() else 0):
            return fn(*args, **kwargs)
    wrapper.__name__, wrapper.__doc__ = fn.__name__, fn.__doc__
    return wrapper


@_shape_semantics
def infer_shape_pass(graph, given):
    """Fill ``graph.shapes`` (one tuple or None per entry; unknown dimensions 0, or -1
    under np_shape). ``given``: {entry id: shape}; variables' ``__shape__`` attributes
    count as known unless overridden."""
    shapes = [None] * graph.num_entries
    for nid in graph.arg_nodes + graph.aux_nodes:
        shapes[graph.entry(nid)] = _var_shape(graph.nodes[nid])
    for eid, s in given.items():
        shapes[eid] = _as_shape(s)

    def call(node, arg_shapes, out_shapes):
        a, o, x = infer_node(node.op, node.params, arg_shapes, out_shapes)
        back = getattr(node.op, "infer_shape_from_outputs", None)   # e.g. amp_cast
        if back is not None and any(s is None for s in a):
            a = back(node.params, a, out_shapes)
        return [_as_shape(s) for s in a], [_as_shape(s) for s in o], [_as_shape(s) for s in x]

    u = UNKNOWN()
    graph.shapes = _run_pass(graph, shapes, call, _merge_shape, _fmt_shape, "shape",
                             lambda s: s is not None and all([d > u for d in s]))
    return graph


def infer_type_pass(graph, known):
    """Fill ``graph.dtypes`` (one numpy dtype or None per entry)."""
    dtypes = [None] * graph.num_entries
    for nid in graph.arg_nodes + graph.aux_nodes:
        dtypes[graph.entry(nid)] = _var_dtype(graph.nodes[nid])
    for eid, t in known.items():
        dtypes[eid] = None if t is None else dtype_np(t)

    def call(node, arg_types, out_types):
        if arg_types and all(t is None for t in arg_types) and \
                any(t is not None for t in out_types):
            back = _types_from_outputs(node, len(arg_types), out_types)
            if back is not None:
                return back
        a, o, x = node.op.infer_type(node.params, list(arg_types))
        return _np_dtypes(a), _np_dtypes(o), _np_dtypes(x)

    graph.dtypes = _run_pass(graph, dtypes, call, _merge_dtype,
                             lambda t: "unknown" if t is None else np.dtype(t).name, "type",
                             lambda t: t is not None)
    return graph


def _np_dtypes(types):
    return [None if t is None else np.dtype(t) for t in types]


def _types_from_outputs(node, n_args, out_types):
    """The dtypes of a node whose inputs are all unknown, from its known outputs
    (MXNet's type rules run both ways: ``relu(w)`` consumed as float16 makes w
    float16). Operators state their rules forwards only, so this asks the rule what
    the outputs would be with the first input of the known output dtype, and of
    another dtype: when the outputs follow the input (unlike cast, argmax or
    Embedding, whose output types are fixed) and match, the rule's input types are
    taken. None when nothing can be concluded."""
    if node.op.name == "Custom":        # a Python rule: not asked hypothetical questions
        return None
    known = [(i, np.dtype(t)) for i, t in enumerate(out_types) if t is not None]
    dtype = known[0][1]
    other = np.dtype(np.float64 if dtype != np.float64 else np.float32)
    try:
        results = []
        for t in (dtype, other):
            a, o, x = node.op.infer_type(node.params, [t] + [None] * (n_args - 1))
            results.append((_np_dtypes(a), _np_dtypes(o), _np_dtypes(x)))
    except Exception:       # a rule that rejects the probe's dtype: no conclusion
        return None
    (a, o, x), (_, o2, _) = results
    if any(i >= len(o) or o[i] != t or o2[i] == t for i, t in known):
        return None
    return a, o, x


def _known_by_entry(graph, args, kwargs, what):
    names = graph.arg_names
    if args and kwargs:     # one way or the other, as MXNet insists
        raise ValueError(f"Can only specify known argument {what}s either by positional "
                         "or kwargs way.")
    if len(args) > len(names):
        raise MXNetError(f"infer_{what}: got {len(args)} positional values for "
                         f"{len(names)} arguments ({', '.join(names)})")
    known = {}
    unknown = unknown_given_shape if what == "shape" else (lambda value: False)
    for nid, value in zip(graph.arg_nodes, args):
        if value is not None and not unknown(value):
            known[graph.entry(nid)] = value
    by_name = {graph.nodes[i].name: i for i in graph.arg_nodes + graph.aux_nodes}
    for key, value in kwargs.items():
        if key not in by_name:
            raise MXNetError(f"infer_{what}: keyword argument name {key} not found. "
                             f"Candidate arguments: {', '.join(names)}")
        if value is not None and not unknown(value):
            known[graph.entry(by_name[key])] = value
    return known


def _results(graph, values):
    arg = [values[graph.entry(i)] for i in graph.arg_nodes]
    out = [values[e] for e in graph.heads]
    aux = [values[graph.entry(i)] for i in graph.aux_nodes]
    return arg, out, aux


def infer_symbol_shapes(symbol, args, kwargs, partial):
    np_shape = is_np_shape()
    g = Graph(symbol)
    infer_shape_pass(g, _known_by_entry(g, args, kwargs, "shape"))
    arg, out, aux = _results(g, g.shapes)
    if partial:
        if np_shape:        # unknown: None, unknown dimension: -1 (as the pass has it)
            fix = lambda ss: list(ss)  # noqa: E731
        else:               # unknown: (), unknown dimension: 0
            fix = lambda ss: [() if s is None else s for s in ss]  # noqa: E731
        return fix(arg), fix(out), fix(aux)
    missing = [(n, s) for n, s in zip(g.arg_names, arg) if not is_complete(s)]
    if missing or not all(is_complete(s) for s in out + aux):
        _warn(missing, "shape")
        return None
    return arg, out, aux


def infer_symbol_types(symbol, args, kwargs, partial):
    g = Graph(symbol)
    infer_type_pass(g, _known_by_entry(g, args, kwargs, "type"))
    arg, out, aux = _results(g, g.dtypes)
    conv = lambda ts: [None if t is None else np.dtype(t).type for t in ts]  # noqa: E731
    if partial:
        return conv(arg), conv(out), conv(aux)
    missing = [(n, None) for n, t in zip(g.arg_names, arg) if t is None]
    if missing or any(t is None for t in out + aux):
        _warn(missing, "type")
        return None
    return conv(arg), conv(out), conv(aux)


def _warn(missing, kind):
    lines = "\n".join(f"\t{n}: {_fmt_shape(v) if kind == 'shape' else 'None'}"
                      for n, v in missing)
    extra = " (0s in shape means unknown dimensions)" if kind == "shape" else ""
    warnings.warn(f"Cannot decide {kind} for the following arguments{extra}. Consider "
                  f"providing them as input:\n{lines}", stacklevel=4)
