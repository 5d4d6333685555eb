"""Network visualization (``mx.viz``): ``print_summary`` prints a layer table with
output shapes and parameter counts; ``plot_network`` returns a ``graphviz.Digraph``
of the graph (the ``graphviz`` package, pymxnet's ``viz`` extra; rendering it to an
image needs Graphviz's ``dot`` program).

Both take a Symbol or a hybridized Gluon HybridBlock that has run once (its cached
graph is drawn). Shapes are given without thinking about names beyond the inputs':
``shape={'data': (1, 1, 28, 28)}``; tables and edge labels leave out the batch axis.
"""
import json
import warnings

import numpy as np

from .base import MXNetError
from .symbol import Symbol
from .gluon.block import HybridBlock

__all__ = ["print_summary", "plot_network"]

# Variables hidden by plot_network(hide_weights=True): learned parameters and states.
_PARAM_SUFFIXES = ("_weight", "_bias", "_beta", "_gamma", "_moving_var", "_moving_mean",
                   "_running_var", "_running_mean")
_COLORS = ("#8dd3c7", "#fb8072", "#ffffb3", "#bebada", "#80b1d3", "#fdb462", "#b3de69",
           "#fccde5")


def _as_symbol(obj, what):
    if isinstance(obj, Symbol):
        return obj
    if isinstance(obj, HybridBlock):
        graph = getattr(obj, "_cached_graph", ())
        if not graph:
            raise MXNetError(f"{what}: the HybridBlock has no graph yet; call hybridize() "
                             "and run it on an input once (or pass a Symbol)")
        return graph[1]
    raise TypeError(f"{what}: symbol must be a Symbol or a hybridized HybridBlock, got "
                    f"{type(obj).__name__}")


def _graph(sym):
    conf = json.loads(sym.tojson())
    return conf["nodes"], conf["heads"]


def _output_shapes(sym, shape):
    """{internal output name: shape} from shape inference on the given input shapes."""
    if not shape:
        return {}
    internals = sym.get_internals()
    _, out_shapes, _ = internals.infer_shape_partial(**shape)
    if out_shapes is None:
        raise MXNetError("print_summary/plot_network: cannot infer shapes from "
                         f"{shape}")
    return {name: tuple(s) for name, s in zip(internals.list_outputs(), out_shapes)}


def _output_key(node):
    """The internals name of the output that a node's consumers are shown with (the
    last one of a multi-output node)."""
    if node["op"] == "null":
        return node["name"]
    attrs = node.get("attrs", {})
    if "num_outputs" in attrs:
        return f"{node['name']}_output{int(attrs['num_outputs']) - 1}"
    return node["name"] + "_output"


def _shape_text(shape):
    return "x".join(str(d) for d in shape[1:])


def _is_param(name, shape_given):
    return name not in shape_given and not name.endswith("label")


def _known_params_without_shapes(node):
    """What parameter sizes the operator's own settings fix when no input shape is
    given: the bias of Convolution/Deconvolution/FullyConnected, Embedding's table."""
    attrs = node.get("attrs", {})
    no_bias = attrs.get("no_bias", "False") in ("True", "true", "1")
    op = node["op"]
    if op in ("Convolution", "Deconvolution"):
        return 0 if no_bias else int(attrs.get("num_filter", 0))
    if op == "FullyConnected":
        return 0 if no_bias else int(attrs.get("num_hidden", 0))
    if op == "Embedding":
        return int(attrs.get("input_dim", 0)) * int(attrs.get("output_dim", 0))
    return 0


def print_summary(symbol, shape=None, line_length=120, positions=[.44, .64, .74, 1.]):
    """Print a table of the network's layers: name(type), output shape (batch axis
    left out; needs ``shape``), parameter count and the layers feeding it, then the
    total number of parameters.

    Parameters
    ----------
    symbol : Symbol or hybridized HybridBlock
    shape : dict of str -> tuple, optional
        Input shapes, e.g. ``{'data': (1, 3, 28, 28)}``.
    line_length : int
        Width of the table.
    positions : list of float
        Right edges of the four columns, as fractions of line_length (or absolute
        positions when the last is above 1).
    """
    sym = _as_symbol(symbol, "print_summary")
    if shape is not None and not isinstance(shape, dict):
        raise TypeError("shape must be a dict of input name -> shape tuple")
    shape = shape or {}
    shapes = _output_shapes(sym, shape)
    arg_shapes = {}
    if shape:
        args = sym.list_arguments()
        inferred, _, _ = sym.infer_shape_partial(**shape)
        arg_shapes = dict(zip(args, [tuple(s) for s in inferred]))
    nodes, heads = _graph(sym)
    if positions[-1] <= 1:
        positions = [int(line_length * p) for p in positions]
    columns = ["Layer (type)", "Output Shape", "Param #", "Previous Layer"]

    def row(fields):
        line = ""
        for field, pos in zip(fields, positions):
            line += str(field)
            line = line[:pos]
            line += " " * (pos - len(line))
        print(line)

    print("_" * line_length)
    row(columns)
    print("=" * line_length)
    shown = [i for i, n in enumerate(nodes) if n["op"] != "null" or i == 0]
    total = 0
    for k, i in enumerate(shown):
        node = nodes[i]
        out = shapes.get(_output_key(node)) if node["op"] != "null" else \
            shapes.get(node["name"])
        out_text = _shape_text(out) if out else ""
        params = 0
        if node["op"] != "null":
            if shape:
                for src, _, _ in node["inputs"]:
                    var = nodes[src]
                    s = arg_shapes.get(var["name"])
                    if var["op"] == "null" and src != 0 and s and all(s) and \
                            _is_param(var["name"], shape):
                        params += int(np.prod(s))
            else:
                params = _known_params_without_shapes(node)
        total += params
        previous = [nodes[src]["name"] for src, _, _ in node["inputs"]
                    if nodes[src]["op"] != "null" or src == 0]
        row([f"{node['name']}({node['op']})", out_text, params,
             previous[0] if previous else ""])
        for name in previous[1:]:
            row(["", "", "", name])
        print("=" * line_length if k == len(shown) - 1 else "_" * line_length)
    print(f"Total params: {total}")
    print("_" * line_length)


def _node_style(node):
    """(label, color) for an operator node, as MXNet draws them."""
    op, name = node["op"], node["name"]
    attrs = node.get("attrs", {})

    def dims(key, default="1"):
        v = attrs.get(key)
        if v is None:
            return default
        return "x".join(p.strip() for p in v.strip("()[]").split(",") if p.strip())
    if op in ("Convolution", "Deconvolution"):
        stride = dims("stride") if "stride" in attrs else "1"
        return f"{op}\n{dims('kernel')}/{stride}, {attrs.get('num_filter', '')}", \
            _COLORS[1]
    if op == "FullyConnected":
        return f"FullyConnected\n{attrs.get('num_hidden', '')}", _COLORS[1]
    if op == "BatchNorm":
        return name, _COLORS[3]
    if op in ("Activation", "LeakyReLU"):
        return f"{op}\n{attrs.get('act_type', 'leaky' if op == 'LeakyReLU' else '')}", \
            _COLORS[2]
    if op == "Pooling":
        stride = dims("stride") if "stride" in attrs else "1"
        return f"Pooling\n{attrs.get('pool_type', 'max')}, {dims('kernel')}/{stride}", \
            _COLORS[4]
    if op in ("Concat", "Flatten", "Reshape", "flatten", "reshape", "concat"):
        return name, _COLORS[5]
    if op == "Softmax":
        return name, _COLORS[6]
    return name, _COLORS[7]


def plot_network(symbol, title="plot", save_format="pdf", shape=None, dtype=None,
                 node_attrs={}, hide_weights=True):
    """A ``graphviz.Digraph`` of the graph computing symbol: one node per operator
    (and per input variable; learned parameters hidden with hide_weights), edges
    labelled with the tensor shapes (batch axis left out) when ``shape`` gives the
    input shapes, and with their dtypes when ``dtype`` gives the input types.
    ``node_attrs`` overrides Graphviz node attributes; ``save_format`` is the format
    ``Digraph.render`` writes. Warns when several nodes share a name (the drawing
    merges them)."""
    try:
        from graphviz import Digraph
    except ImportError:
        raise ImportError("plot_network needs the graphviz package: pip install "
                          "'pymxnet[viz]' (and Graphviz's dot program to render)") from None
    sym = _as_symbol(symbol, "plot_network")
    if shape is not None and not isinstance(shape, dict):
        raise TypeError("shape must be a dict of input name -> shape tuple")
    if dtype is not None and not isinstance(dtype, dict):
        raise TypeError("dtype must be a dict of input name -> type")
    shapes = _output_shapes(sym, shape)
    types = {}
    if dtype:
        internals = sym.get_internals()
        _, out_types, _ = internals.infer_type_partial(**dtype) \
            if hasattr(internals, "infer_type_partial") else internals.infer_type(**dtype)
        types = {n: np.dtype(t).name for n, t in zip(internals.list_outputs(), out_types)
                 if t is not None}
    nodes, _ = _graph(sym)
    seen, repeated = set(), []
    for node in nodes:
        if node["name"] in seen and node["name"] not in repeated:
            repeated.append(node["name"])
        seen.add(node["name"])
    if repeated:
        warnings.warn("There are multiple variables with the same name in your graph, "
                      "this may result in cyclic graph. Repeated names: "
                      + ",".join(repeated))
    attrs = {"shape": "box", "fixedsize": "true", "width": "1.3", "height": "0.8034",
             "style": "filled"}
    attrs.update(node_attrs)
    dot = Digraph(name=title, format=save_format)
    hidden = set()
    for i, node in enumerate(nodes):
        name = node["name"]
        if node["op"] == "null":
            if name.endswith(_PARAM_SUFFIXES):
                # parameters get no styled node: hidden, or (hide_weights=False) left
                # to Graphviz to draw as a plain node at the end of their edge
                if hide_weights:
                    hidden.add(i)
                continue
            style = dict(attrs, shape="oval")
            label, color = name, _COLORS[0]
        else:
            style = dict(attrs)
            label, color = _node_style(node)
        dot.node(name=name, label=label, fillcolor=color, **style)
    for node in nodes:
        if node["op"] == "null":
            continue
        for src, _, _ in node["inputs"]:
            if src in hidden:
                continue
            key = _output_key(nodes[src])
            label = ""
            if key in shapes:
                label = _shape_text(shapes[key])
            if key in types:
                label += f"({types[key]})"
            dot.edge(tail_name=node["name"], head_name=nodes[src]["name"], label=label,
                     dir="back", arrowtail="open")
    return dot
