"""Symbol + parameters -> ONNX model.

The symbol is indexed as the executor indexes it (``executor.graph.Graph``), shapes and
dtypes are inferred from the given input shapes, and every node whose inputs are all
parameters (or that has no inputs, such as ``zeros`` begin states) is evaluated once
here and stored as an initializer: a fused RNN's flat parameter vector built by
``Concat`` of reshaped weights becomes one constant the LSTM converter can split into
ONNX's W/R/B. The remaining nodes go through the converter table in ``export_ops``,
one function per MXNet operator, which emits ONNX nodes for inference semantics
(Dropout is the identity, BatchNorm uses its moving statistics).
"""
import os

import numpy as np

from ..base import MXNetError
from ..executor.graph import Graph
from ..executor.infer import infer_shape_pass, infer_type_pass, is_complete
from .export_ops import CONVERTERS, OPSET
from ..symbol import Symbol, load as load_symbol
from ..ndarray import NDArray, load as load_arrays, array as nd_array
from .. import ndarray as nd

__all__ = ["export_model", "get_operator_support"]


def _require_onnx():
    try:
        import onnx
    except ImportError:
        raise MXNetError("mx.onnx needs the 'onnx' package: pip install pymxnet[onnx] "
                         "(or pip install onnx)") from None
    return onnx


def get_operator_support(opset_version=None):
    """Names of the MXNet operators the exporter converts (for the given opset; this
    exporter writes opset 13)."""
    if opset_version is not None and int(opset_version) < OPSET:
        return []
    return sorted(CONVERTERS)


def _load_symbol(sym):
    if isinstance(sym, str):
        if not os.path.isfile(sym):
            raise MXNetError(f"export_model: symbol file {sym!r} does not exist")
        return load_symbol(sym)
    if not isinstance(sym, Symbol):
        raise MXNetError(f"export_model: sym must be a Symbol or a path to a -symbol.json "
                         f"file, got {type(sym).__name__}")
    return sym


def _load_params(params):
    """One {name: numpy array} dict from a path, a dict, or [arg_params, aux_params]."""
    if isinstance(params, str):
        if not os.path.isfile(params):
            raise MXNetError(f"export_model: params file {params!r} does not exist")
        params = load_arrays(params)
    if isinstance(params, (list, tuple)):
        if len(params) != 2 or not all(isinstance(d, dict) for d in params):
            raise MXNetError("export_model: params given as a list must be "
                             "[arg_params, aux_params]")
        merged = dict(params[0])
        merged.update(params[1])
        params = merged
    if not isinstance(params, dict):
        raise MXNetError(f"export_model: params must be a dict, a list of two dicts or a "
                         f"path, got {type(params).__name__}")
    out = {}
    for k, v in params.items():
        if k.startswith(("arg:", "aux:")):
            k = k[4:]
        out[k] = v.asnumpy() if isinstance(v, NDArray) else np.asarray(v)
    return out


class _Node:
    """What a converter sees of one MXNet node."""

    def __init__(self, cx, nid):
        g = cx.graph
        node = g.nodes[nid]
        self.name, self.p, self.op_name = node.name, node.params, node.op.name
        self.entries = g.node_inputs[nid]
        self.ins = [cx.tensor(e) for e in self.entries]
        outs = range(g.row_ptr[nid], g.row_ptr[nid + 1])
        self.out_entries = list(outs)
        self.outs = [cx.tensor(e) for e in outs]
        self.in_shapes = [tuple(g.shapes[e]) for e in self.entries]
        self.out_shapes = [tuple(g.shapes[e]) for e in outs]
        self.in_dtypes = [np.dtype(g.dtypes[e]) for e in self.entries]
        self.out_dtypes = [np.dtype(g.dtypes[e]) for e in outs]
        self._cx = cx

    def const(self, i):
        """Input i's value when it is a constant (parameter or folded), else None."""
        return self._cx.consts.get(self.entries[i])


class ExportContext:
    """The ONNX graph being built: nodes, initializers and unique tensor names."""

    def __init__(self, graph, consts, dynamic_batch):
        self.graph = graph
        self.consts = consts                  # entry -> numpy value
        self.dynamic_batch = dynamic_batch
        self.nodes, self.initializers = [], {}
        self._names = {}
        self._taken = set()

    def unique(self, hint):
        name, k = hint, 0
        while name in self._taken:
            k += 1
            name = f"{hint}_{k}"
        self._taken.add(name)
        return name

    def tensor(self, entry):
        name = self._names.get(entry)
        if name is None:
            name = self._names[entry] = self.unique(self.graph.entry_name(entry))
        return name

    def const(self, hint, value):
        """Add an initializer and return its name."""
        from onnx import numpy_helper
        name = self.unique(hint)
        self.initializers[name] = numpy_helper.from_array(np.ascontiguousarray(value), name)
        return name

    def add(self, op_type, inputs, outputs=None, name=None, **attrs):
        """Append an ONNX node; returns its output names (fresh ones when not given)."""
        from onnx import helper
        if outputs is None:
            outputs = [self.unique(f"{name or op_type}_out")]
        elif isinstance(outputs, str):
            outputs = [outputs]
        node_name = self.unique(name or op_type)
        self.nodes.append(helper.make_node(op_type, list(inputs), list(outputs),
                                           name=node_name, **attrs))
        return outputs


def _foldable(node, g, nid, consts):
    op = node.op
    if op is None or "random" in (op.resources or ()) or op.name == "Dropout":
        return False
    if node.num_args() != len(node.inputs):          # reads auxiliary states
        return False
    return all(e in consts for e in g.node_inputs[nid])


def _nd_function(op_name):
    """The imperative front-end function of a registered operator."""
    for space, name in ((nd, op_name), (nd._internal, op_name),
                        (nd.contrib, op_name.replace("_contrib_", "", 1))):
        fn = getattr(space, name, None)
        if fn is not None:
            return fn
    raise MXNetError(f"export_model: cannot evaluate operator {op_name} imperatively")


def _fold_constants(g, consts):
    """Evaluate, in topological order, every node computable from constants alone (and
    creation ops such as a begin state's ``zeros``, with the shape the whole graph
    inferred), adding their outputs to consts."""
    for nid, node in enumerate(g.nodes):
        if not _foldable(node, g, nid, consts):
            continue
        kwargs = dict(node.given)
        if not node.inputs and "shape" in node.op.params.fields:
            kwargs["shape"] = tuple(g.shapes[g.entry(nid)])
        inputs = [nd_array(consts[e], dtype=consts[e].dtype) for e in g.node_inputs[nid]]
        result = _nd_function(node.op.name)(*inputs, **kwargs)
        results = result if isinstance(result, (list, tuple)) else [result]
        for k, value in enumerate(results):
            consts[g.entry(nid, k)] = value.asnumpy()


def _input_value_info(name, shape, dtype, dyn_dims):
    from onnx import helper
    dims = [dyn_dims[i] if dyn_dims and i in dyn_dims else int(d) for i, d in enumerate(shape)]
    return helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(np.dtype(dtype)),
                                         dims)


def build_model(sym, params, in_shapes, in_types, dynamic=False, dynamic_input_shapes=None):
    """The ONNX ModelProto for sym with params (a {name: numpy array} dict)."""
    from onnx import helper
    g = Graph(sym)
    data_names = [n for n in g.arg_names if n not in params]
    if in_shapes is None:
        raise MXNetError(f"export_model: in_shapes is required (one shape per input "
                         f"{data_names})")
    in_shapes = [tuple(int(d) for d in s) for s in in_shapes]
    if len(in_shapes) != len(data_names):
        raise MXNetError(f"export_model: got {len(in_shapes)} input shapes for the inputs "
                         f"{data_names} (every argument without a parameter is an input)")
    if not isinstance(in_types, (list, tuple)):
        in_types = [in_types] * len(data_names)
    if len(in_types) != len(data_names):
        raise MXNetError(f"export_model: got {len(in_types)} input types for the inputs "
                         f"{data_names}")
    in_types = [np.dtype(t) for t in in_types]
    known_shapes, known_types = {}, {}
    by_name = dict(zip(data_names, zip(in_shapes, in_types)))
    for nid in g.arg_nodes + g.aux_nodes:
        name = g.nodes[nid].name
        e = g.entry(nid)
        if name in by_name:
            known_shapes[e], known_types[e] = by_name[name]
        elif name in params:
            known_shapes[e], known_types[e] = params[name].shape, params[name].dtype
        else:
            raise MXNetError(f"export_model: auxiliary state {name!r} has no value in params")
    infer_shape_pass(g, known_shapes)
    infer_type_pass(g, known_types)
    missing = [g.entry_name(e) for e in range(g.num_entries) if not is_complete(g.shapes[e])]
    if missing:
        raise MXNetError("export_model: cannot infer the shapes of " + ", ".join(missing[:8]))
    g.dtypes = [np.dtype(np.float32) if t is None else np.dtype(t) for t in g.dtypes]

    consts = {g.entry(nid): params[g.nodes[nid].name] for nid in g.arg_nodes + g.aux_nodes
              if g.nodes[nid].name in params}
    _fold_constants(g, consts)
    dyn = _dynamic_dims(data_names, in_shapes, dynamic, dynamic_input_shapes)
    cx = ExportContext(g, consts, dynamic_batch=bool(dyn))
    for nid, name in zip(g.arg_nodes, g.arg_names):
        cx.tensor(g.entry(nid))                       # inputs keep their MXNet names

    needed = _needed_entries(g, consts)
    for e in sorted(needed):
        if e in consts:
            name = cx.tensor(e)
            from onnx import numpy_helper
            cx.initializers[name] = numpy_helper.from_array(np.ascontiguousarray(consts[e]),
                                                            name)
    for nid, node in enumerate(g.nodes):
        if node.op is None or g.row_ptr[nid] in consts or not _is_used(g, nid, needed):
            continue
        conv = CONVERTERS.get(node.op.name)
        if conv is None:
            raise MXNetError(f"export_model: operator {node.op.name} (node {node.name}) has "
                             "no ONNX conversion; supported: " + ", ".join(sorted(CONVERTERS)))
        conv(cx, _Node(cx, nid))

    inputs = [_input_value_info(cx.tensor(g.entry(nid)), s, t, dyn.get(n))
              for nid, n, (s, t) in ((nid, n, by_name[n])
                                     for nid, n in zip(g.arg_nodes, g.arg_names)
                                     if n in by_name)]
    outputs = []
    for e in g.heads:
        name = cx.tensor(e)
        batch_dyn = {0: "N"} if dyn and g.shapes[e] and \
            g.shapes[e][0] == in_shapes[0][0] else None
        outputs.append(_input_value_info(name, g.shapes[e], g.dtypes[e], batch_dyn))
    read = {name for node in cx.nodes for name in node.input} | {o.name for o in outputs}
    graph = helper.make_graph(cx.nodes, "pymxnet_model", inputs, outputs,
                              initializer=[t for name, t in cx.initializers.items()
                                           if name in read])
    model = helper.make_model(graph, producer_name="pymxnet",
                              opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = min(model.ir_version, 8)      # readable by older runtimes too
    return model


def _dynamic_dims(data_names, in_shapes, dynamic, dynamic_input_shapes):
    """{input name: {axis: symbolic dim name}}; only the batch axis may be dynamic."""
    if not dynamic:
        return {}
    out = {}
    for i, name in enumerate(data_names):
        spec = dynamic_input_shapes[i] if dynamic_input_shapes else [None] * len(in_shapes[i])
        dims = {ax: "N" for ax, d in enumerate(spec) if d is None}
        if set(dims) - {0}:
            raise NotImplementedError("export_model(dynamic=True): pymxnet's exporter makes "
                                      "only the batch axis (axis 0) dynamic")
        out[name] = dims
    return out


def _needed_entries(g, consts):
    """Entries read by some non-folded node or returned as outputs."""
    needed = set(g.heads)
    for nid, node in enumerate(g.nodes):
        if node.op is not None and g.row_ptr[nid] not in consts:
            needed.update(g.node_inputs[nid])
    return needed


def _is_used(g, nid, needed):
    return any(e in needed for e in range(g.row_ptr[nid], g.row_ptr[nid + 1]))


def export_model(sym, params, in_shapes=None, in_types=np.float32,
                 onnx_file_path="model.onnx", verbose=False, dynamic=False,
                 dynamic_input_shapes=None, run_shape_inference=False, input_type=None,
                 input_shape=None):
    """Export a Symbol (or a ``-symbol.json`` path) with its parameters (a ``.params``
    path, a dict, or ``[arg_params, aux_params]``) to an ONNX file for inference.

    ``in_shapes``/``in_types``: one shape / dtype per input (arguments without a
    parameter, in ``list_arguments()`` order). ``dynamic``: make the batch axis
    symbolic (``dynamic_input_shapes`` marks it with None). ``input_shape`` and
    ``input_type`` are the older names of the same arguments. Returns the path written
    (atomically: a temporary beside it is renamed into place).
    """
    onnx = _require_onnx()
    if input_shape is not None:
        in_shapes = input_shape
    if input_type is not None:
        in_types = input_type
    sym = _load_symbol(sym)
    params = _load_params(params)
    model = build_model(sym, params, in_shapes, in_types, dynamic, dynamic_input_shapes)
    if run_shape_inference:
        model = onnx.shape_inference.infer_shapes(model)
    try:
        onnx.checker.check_model(model)
    except onnx.checker.ValidationError as err:
        raise MXNetError(f"export_model: the ONNX model built is invalid: {err}") from err
    if verbose:
        print(onnx.helper.printable_graph(model.graph))
    _write_atomic(onnx_file_path, model.SerializeToString())
    return onnx_file_path


def _write_atomic(path, data):
    directory = os.path.dirname(os.path.abspath(path))
    tmp = os.path.join(directory, f".{os.path.basename(path)}.tmp{os.getpid()}")
    try:
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
