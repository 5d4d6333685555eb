"""Symbol JSON (MXNet 1.x ``*-symbol.json``) and the debug listing.

The format: ``nodes`` in topological order, each ``{"op", "name", "attrs", "inputs"}``
with ``op`` "null" for variables and every attribute value a string; ``inputs`` and
``heads`` are ``[node index, output index, version]``; ``arg_nodes`` lists the
variable nodes and ``node_row_ptr`` the prefix sums of each node's output count
(hidden outputs included). Only the parameters the caller passed are stored.
"""
import ast
import json

from ..base import MXNetError
from ..operator.control_flow import ControlFlowOp, with_subgraphs
from ..operator.registry import get_op
from .graph import Node, is_dunder, topo_order
from .symbol import Symbol
from ..util import is_np_shape

__all__ = ["to_json", "load_json", "load", "debug_str"]

MXNET_VERSION = 10901


def to_json(symbol):
    doc = _graph_doc(symbol)
    doc["attrs"] = {"mxnet_version": ["int", MXNET_VERSION]}
    if is_np_shape():       # MXNet marks graphs saved under NumPy shape semantics
        doc["attrs"]["is_np_shape"] = ["int", 1]
    return _dump(doc, 0)


def _graph_doc(symbol):
    """nodes, arg_nodes, node_row_ptr and heads of a graph; a control-flow node's
    subgraphs go under its ``subgraphs`` key, each laid out the same way."""
    order = topo_order(symbol._head_nodes())
    index = {id(n): i for i, n in enumerate(order)}
    nodes, row_ptr = [], [0]
    for node in order:
        entry = {"op": "null" if node.op is None else node.op.name, "name": node.name}
        attrs = node.all_attrs()
        if attrs:
            entry["attrs"] = dict(sorted(attrs.items()))
        aux = node.aux_positions() if node.op is not None else ()
        # MXNet marks inputs the operator mutates (auxiliary states) with version 1.
        entry["inputs"] = [[index[id(src)], k, 1 if j in aux else 0]
                           for j, (src, k) in enumerate(node.inputs)]
        subgraphs = getattr(node.params, "subgraphs", None)
        if subgraphs:
            entry["subgraphs"] = [_graph_doc(g) for g in subgraphs]
        nodes.append(entry)
        row_ptr.append(row_ptr[-1] + node.num_outputs())
    return {
        "nodes": nodes,
        "arg_nodes": [i for i, n in enumerate(order) if n.op is None],
        "node_row_ptr": row_ptr,
        "heads": [[index[id(n)], k, 0] for n, k in symbol._outputs],
    }


def _dump(value, depth):
    """JSON laid out as MXNet writes it: one key per line, lists of up to ten flat
    items and one-entry objects inline."""
    pad, inner = "  " * depth, "  " * (depth + 1)
    if isinstance(value, dict):
        if len(value) <= 1 and all(_flat(v) for v in value.values()):
            return "{" + ", ".join(f"{json.dumps(k)}: {_dump(v, depth)}"
                                   for k, v in value.items()) + "}"
        body = ", \n".join(f"{inner}{json.dumps(k)}: {_dump(v, depth + 1)}"
                            for k, v in value.items())
        return "{\n" + body + "\n" + pad + "}"
    if isinstance(value, list):
        if len(value) <= 10 and all(_flat(v) for v in value):
            return "[" + ", ".join(_dump(v, depth) for v in value) + "]"
        body = ", \n".join(inner + _dump(v, depth + 1) for v in value)
        return "[\n" + body + "\n" + pad + "]"
    return json.dumps(value)


def _flat(value):
    if isinstance(value, list):
        return all(not isinstance(v, (list, dict)) for v in value)
    return not isinstance(value, dict)


def load_json(json_str):
    """A Symbol from MXNet 1.x symbol JSON text."""
    if not isinstance(json_str, str):
        raise TypeError("fname required to be string")
    try:
        doc = json.loads(json_str)
        raw_nodes = doc["nodes"]
        heads = doc["heads"]
    except RecursionError:
        raise MXNetError("invalid symbol JSON: nested too deeply") from None
    except (ValueError, KeyError, TypeError) as err:
        raise MXNetError(f"invalid symbol JSON: {err}") from None
    graph_attrs = doc.get("attrs") if isinstance(doc.get("attrs"), dict) else {}
    # a graph saved under legacy shape semantics (0 = unknown dimension), loaded under
    # np_shape: its variables' unknown dimensions become -1 there, as MXNet converts them
    legacy_shapes = "is_np_shape" not in graph_attrs and is_np_shape()
    return _symbol_from_doc(raw_nodes, heads, legacy_shapes)


def _symbol_from_doc(raw_nodes, heads, legacy_shapes):
    if not isinstance(raw_nodes, list) or not isinstance(heads, list):
        raise MXNetError("invalid symbol JSON: 'nodes' and 'heads' must be lists")
    built = []
    for i, raw in enumerate(raw_nodes):
        if not isinstance(raw, dict):
            raise MXNetError(f"invalid symbol JSON: node {i} is not an object")
        try:
            built.append(_build_node(raw, built, i, legacy_shapes))
        except MXNetError:
            raise
        except (AttributeError, KeyError, TypeError, ValueError) as err:
            raise MXNetError(f"invalid symbol JSON: node {i} "
                             f"({raw.get('name', '?')!r}): {err}") from None
    outputs = []
    for h in heads:
        if not (isinstance(h, list) and len(h) >= 2 and all(isinstance(v, int) for v in h)
                and 0 <= h[0] < len(built) and 0 <= h[1]):
            raise MXNetError(f"invalid symbol JSON: bad head {h!r} (there are "
                             f"{len(built)} nodes)")
        outputs.append((built[h[0]], h[1]))
    return Symbol(outputs)


def _np_shape_text(text):
    """A legacy ``__shape__`` attribute with its unknown (0) dimensions as -1."""
    try:
        dims = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text
    if not isinstance(dims, (tuple, list)):
        return text
    return str(tuple(-1 if d == 0 else d for d in dims))


def _build_node(raw, built, position, legacy_shapes=False):
    name = raw.get("name", "")
    attrs = raw.get("attrs", raw.get("attr", raw.get("param"))) or {}
    attrs = {str(k): str(v) for k, v in attrs.items()}
    if legacy_shapes and "__shape__" in attrs:
        attrs["__shape__"] = _np_shape_text(attrs["__shape__"])
    try:
        inputs = [(built[e[0]], e[1]) for e in raw.get("inputs", [])]
    except IndexError:
        raise MXNetError(f"invalid symbol JSON: node {position} ({name}) refers to a later "
                         "node; nodes must be in topological order") from None
    if "op" not in raw:
        raise MXNetError(f"invalid symbol JSON: node {position} ({name!r}) has no 'op'")
    opname = raw["op"]
    if opname == "null":
        return Node(None, name, attrs=attrs)
    op = get_op(opname)
    fields = op.params.fields
    given = {k: v for k, v in attrs.items() if k in fields}
    extra = {k: v for k, v in attrs.items() if k not in fields}
    for key in extra:
        if not is_dunder(key) and fields:
            raise MXNetError(f"Operator {op.name} (node {name}) got an unknown parameter "
                             f"'{key}'. Valid parameters: {', '.join(fields)}")
    params = op.parse(given)
    subgraphs = raw.get("subgraphs")
    if isinstance(op, ControlFlowOp):
        if not isinstance(subgraphs, list):
            raise MXNetError(f"invalid symbol JSON: node {name} ({op.name}) has no "
                             "'subgraphs' list")
        if not all(isinstance(g, dict) for g in subgraphs):
            raise MXNetError(f"invalid symbol JSON: a subgraph of node {name} is not an "
                             "object")
        params = with_subgraphs(op, params, [
            _symbol_from_doc(g.get("nodes"), g.get("heads"), legacy_shapes)
            for g in subgraphs])
    elif subgraphs:
        raise MXNetError(f"invalid symbol JSON: node {name} ({op.name}) holds subgraphs; "
                         "only _foreach, _while_loop and _cond do")
    node = Node(op, name, params, given, extra, inputs)
    if op.variadic is None:
        expected = len(op.arguments(params)) + len(op.aux_states(params))
        if len(inputs) != expected:
            raise MXNetError(f"invalid symbol JSON: node {name} ({op.name}) has "
                             f"{len(inputs)} inputs, the operator takes {expected} "
                             f"({', '.join(node.input_names())})")
    return node


def load(fname):
    """Load a symbol saved with ``Symbol.save`` / MXNet's ``*-symbol.json``."""
    if not isinstance(fname, str):
        raise TypeError("fname required to be a string")
    try:
        with open(fname) as f:
            text = f.read()
    except (OSError, UnicodeDecodeError) as err:
        raise MXNetError(f"Failed to read symbol file {fname!r}: "
                         f"{getattr(err, 'strerror', None) or err}") from None
    try:
        return load_json(text)
    except MXNetError as err:
        raise MXNetError(f"{fname!r}: {err}") from None


def debug_str(symbol):
    """MXNet's listing: outputs, then each variable and operator with its inputs."""
    lines = ["Symbol Outputs:"]
    for i, (node, k) in enumerate(symbol._outputs):
        lines.append(f"\toutput[{i}]={node.name}({k})")
    for node in topo_order(symbol._head_nodes()):
        if node.op is None:
            lines.append(f"Variable:{node.name}")
            continue
        lines += ["-" * 20, f"Op:{node.op.name}, Name={node.name}", "Inputs:"]
        for j, (src, k) in enumerate(node.inputs):
            suffix = " version=0" if src.op is None else ""
            lines.append(f"\targ[{j}]={src.name}({k}){suffix}")
        attrs = node.all_attrs()
        if attrs:
            lines.append("Attrs:")
            lines += [f"\t{key}={value}" for key, value in attrs.items()]
    return "\n".join(lines) + "\n"
