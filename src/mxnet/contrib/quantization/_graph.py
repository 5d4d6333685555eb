"""The quantization pass: a float Symbol graph -> the graph MXNet 1.9.1's (non-fused)
quantize pass builds, with int8 operators where the float ones can be replaced.

For every operator node that is quantized (``quantized_<name>``), each float data input
gets a ``quantize_v2`` node (``<producer>_quantize``, shared by its consumers) unless
its producer is already quantized; weights and biases become variables
``<param>_quantize`` (int8) with ``_min``/``_max`` ranges; an int32 result gets a
``requantize_<name>`` node; a quantized value read by a float operator, or a graph
output, gets a ``<name>_dequantize`` node. Calibration later writes the ranges into the
``quantize_v2``, ``requantize`` and ``quantized_batch_norm`` nodes (see ``_calibrate``).
"""
from ...base import MXNetError
from ...operator.registry import get_op
from ...symbol.graph import Node, topo_order
from ...symbol.symbol import Symbol

__all__ = ["quantize_symbol", "QuantizedGraph", "QUANTIZABLE"]

# float op -> (quantized op, the inputs that are parameters, int32 output, "compute"
# op: quantized in 'smart' mode even when no input is quantized yet)
QUANTIZABLE = {
    "Convolution": ("_contrib_quantized_conv", ("weight", "bias"), True, True),
    "FullyConnected": ("_contrib_quantized_fully_connected", ("weight", "bias"), True,
                       True),
    "Activation": ("_contrib_quantized_act", (), False, False),
    "Pooling": ("_contrib_quantized_pooling", (), False, False),
    "Flatten": ("_contrib_quantized_flatten", (), False, False),
    "Concat": ("_contrib_quantized_concat", (), False, False),
    "elemwise_add": ("_contrib_quantized_elemwise_add", (), True, True),
    "elemwise_mul": ("_contrib_quantized_elemwise_mul", (), True, True),
    "BatchNorm": ("_contrib_quantized_batch_norm", (), False, True),
    "Embedding": ("_contrib_quantized_embedding", ("weight",), False, True),
}


def _supported(node, calibrated):
    """Whether this float node can be replaced (beyond its op type)."""
    op, p = node.op.name, node.params
    if op == "Activation":
        return p.act_type == "relu"
    if op == "Pooling":
        return p.pool_type in ("max", "avg") and not (
            p.pool_type == "avg" and p.pooling_convention == "full") and \
            (p.layout in (None, "NCHW", "NCW", "NCDHW"))
    if op == "Convolution":
        return p.num_group == 1 and p.layout in (None, "NCHW") and len(p.kernel) == 2
    if op == "BatchNorm":
        # quantized batch norm needs a calibrated output range (as in MXNet)
        return calibrated and not p.output_mean_var
    if op == "Concat":
        return True
    return True


class QuantizedGraph:
    """The result of the pass: the quantized symbol, the parameters to quantize
    offline ({'<w>_quantize': '<w>'}), and what calibration must measure:
    ``calib_nodes`` maps a float output name (``conv0_output``, ``data``) to the new
    nodes that take its range."""

    def __init__(self, symbol, param_map, calib_nodes):
        self.symbol = symbol
        self.param_map = param_map
        self.calib_nodes = calib_nodes


def _new(op_name, name, inputs, given=None):
    op = get_op(op_name)
    given = dict(given or {})
    return Node(op, name, op.parse(given), given, {}, list(inputs))


def _filter_given(node, op_name):
    fields = get_op(op_name).params.fields
    return {k: v for k, v in node.given.items() if k in fields}


def quantize_symbol(sym, params, excluded_sym_names=(), excluded_op_names=(),
                    quantized_dtype="int8", quantize_mode="full", calibrated=True):
    """Rewrite ``sym`` (float) into its quantized graph; ``params``: names of the
    arguments holding parameters (arg_params' keys)."""
    if quantized_dtype not in ("int8", "uint8", "auto"):
        raise MXNetError(f"quantize: quantized_dtype must be 'int8', 'uint8' or 'auto', "
                         f"got {quantized_dtype!r}")
    if quantize_mode not in ("full", "smart"):
        raise MXNetError(f"quantize: quantize_mode must be 'full' or 'smart', got "
                         f"{quantize_mode!r}")
    excluded_sym_names = set(excluded_sym_names or ())
    excluded_op_names = set(excluded_op_names or ())
    params = set(params)
    heads = [n for n, _ in sym._outputs]
    order = topo_order(heads)

    new_float = {}      # id(float node) -> new node carrying its float outputs
    quantized = {}      # id(float node) -> (entry, min entry, max entry) of output 0
    qv2_cache, deq_cache, var_cache = {}, {}, {}
    param_map, calib_nodes = {}, {}

    def var(name):
        if name not in var_cache:
            var_cache[name] = Node(None, name)
        return var_cache[name]

    def float_entry(entry):
        node, i = entry
        if id(node) in quantized:
            if i != 0:
                raise MXNetError(f"quantize: output {i} of quantized node {node.name} is "
                                 "not available")
            if id(node) not in deq_cache:
                q, lo, hi = quantized[id(node)]
                deq_cache[id(node)] = _new("_contrib_dequantize", f"{node.name}_dequantize",
                                           [q, lo, hi])
            return (deq_cache[id(node)], 0)
        return (new_float[id(node)], i)

    def quantized_entry(entry):
        node, i = entry
        if id(node) in quantized and i == 0:
            return quantized[id(node)]
        key = (id(node), i)
        if key not in qv2_cache:
            qnode = _new("_contrib_quantize_v2", f"{node.name}_quantize",
                         [float_entry(entry)], {"out_type": quantized_dtype})
            qv2_cache[key] = qnode
            calib_nodes.setdefault(node.output_names()[i], []).append(qnode)
        q = qv2_cache[key]
        return ((q, 0), (q, 1), (q, 2))

    for node in order:
        if node.op is None:
            new_float[id(node)] = var(node.name)
            continue
        spec = QUANTIZABLE.get(node.op.name)
        wanted = (spec is not None and node.name not in excluded_sym_names and
                  node.op.name not in excluded_op_names and _supported(node, calibrated))
        names = node.input_names()
        if wanted and quantize_mode == "smart" and not spec[3]:
            wanted = any(id(src) in quantized and idx == 0 for src, idx in node.inputs)
        if wanted and spec[1]:
            # parameter inputs must be parameters (not computed values)
            wanted = all(src.op is None and src.name in params
                         for (src, _), nm in zip(node.inputs, names) if nm in spec[1])
        if not wanted:
            inputs = [float_entry(e) for e in node.inputs]
            new_float[id(node)] = Node(node.op, node.name, node.params, dict(node.given),
                                       dict(node.attrs), inputs)
            continue
        qop, pnames, int32_out, _ = spec
        data, ranges, weights, wranges, aux = [], [], [], [], []
        for entry, nm in zip(node.inputs, names):
            src = entry[0]
            if nm in pnames:
                qname = f"{src.name}_quantize"
                param_map[qname] = src.name
                weights.append((var(qname), 0))
                wranges += [(var(f"{qname}_min"), 0), (var(f"{qname}_max"), 0)]
            elif node.op.name == "BatchNorm" and nm != "data":
                (aux if nm in ("moving_mean", "moving_var") else weights).append(
                    float_entry(entry))
            else:
                q, lo, hi = quantized_entry(entry)
                data.append(q)
                ranges += [lo, hi]
        given = _filter_given(node, qop)
        if node.op.name == "Concat":
            given["num_args"] = len(data)
        if node.op.name in ("Convolution", "FullyConnected"):
            inputs = data + weights + ranges + wranges
        elif node.op.name == "Embedding":
            inputs = [float_entry(node.inputs[0])] + weights + wranges
        elif node.op.name == "BatchNorm":
            inputs = data + weights + ranges + aux
        else:
            inputs = data + ranges
        qnode = _new(qop, f"quantized_{node.name}", inputs, given)
        out = ((qnode, 0), (qnode, 1), (qnode, 2))
        if node.op.name == "BatchNorm":
            calib_nodes.setdefault(node.output_names()[0], []).append(qnode)
        if int32_out:
            rq = _new("_contrib_requantize", f"requantize_{node.name}", list(out),
                      {"out_type": quantized_dtype})
            calib_nodes.setdefault(node.output_names()[0], []).append(rq)
            out = ((rq, 0), (rq, 1), (rq, 2))
        quantized[id(node)] = out

    outputs = [float_entry(e) for e in sym._outputs]
    return QuantizedGraph(Symbol(outputs), param_map, calib_nodes)
