"""ONNX model -> Symbol + parameters.

Initializers (and ``Constant`` nodes) become parameters; graph inputs without an
initializer become data variables; every node goes through the converter table in
``import_ops``. Parameters that feed a BatchNorm's moving statistics are returned as
auxiliary states, the rest as arguments, as ``mx.model.load_checkpoint`` returns them.
"""
import os

import numpy as np

from ...base import MXNetError
from .import_ops import CONVERTERS, LazyParam
from ... import symbol, ndarray as nd
from ...gluon import SymbolBlock

__all__ = ["import_model", "import_to_gluon", "get_model_metadata"]


def _load(model_file):
    try:
        import onnx
    except ImportError:
        raise MXNetError("mx.contrib.onnx needs the 'onnx' package: pip install "
                         "pymxnet[onnx] (or pip install onnx)") from None
    if isinstance(model_file, onnx.ModelProto):
        return model_file
    if not isinstance(model_file, str) or not os.path.isfile(model_file):
        raise MXNetError(f"ONNX model file {model_file!r} does not exist")
    try:
        return onnx.load(model_file)
    except Exception as err:      # protobuf's DecodeError and friends
        raise MXNetError(f"cannot read ONNX model {model_file!r}: {err}") from err


class ImportContext:
    """Tensors by ONNX name (Symbols), constant values, and the parameters made."""

    def __init__(self, opset):
        self.opset = opset
        self.tensors = {}
        self.consts = {}          # ONNX name -> numpy value (initializers, Constant nodes)
        self.params = {}          # variable name -> numpy value
        self._names = set()

    def unique(self, hint):
        name, k = hint.replace("/", "_").replace(":", "_") or "p", 0
        base = name
        while name in self._names:
            k += 1
            name = f"{base}_{k}"
        self._names.add(name)
        return name

    def param(self, hint, value):
        """A new parameter variable holding value."""
        name = self.unique(hint)
        self.params[name] = np.asarray(value)
        return symbol.var(name, shape=tuple(np.shape(value)), dtype=np.asarray(value).dtype)

    def const(self, name):
        """The constant value of an ONNX input (None if it is computed)."""
        return self.consts.get(name)

    def require_const(self, node, i, what):
        value = self.consts.get(node.input[i]) if i < len(node.input) else None
        if value is None:
            raise MXNetError(f"ONNX import: {node.op_type} node {node.name!r}: {what} must be "
                             "a constant (initializer or Constant node)")
        return value


def _attrs(node):
    from onnx import helper
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def _build(model):
    from onnx import numpy_helper
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 13)
    cx = ImportContext(opset)
    graph = model.graph
    for init in graph.initializer:
        value = numpy_helper.to_array(init)
        cx.consts[init.name] = value
    data_inputs = []
    for inp in graph.input:
        if inp.name in cx.consts:
            continue
        name = cx.unique(inp.name)
        cx.tensors[inp.name] = symbol.var(name)
        data_inputs.append(name)
    for init_name, value in cx.consts.items():
        cx.tensors[init_name] = LazyParam(cx, init_name, value)
    for node in graph.node:
        conv = CONVERTERS.get(node.op_type)
        if conv is None:
            raise MXNetError(f"ONNX import: operator {node.op_type} (node {node.name!r}) is "
                             "not supported; supported: " + ", ".join(sorted(CONVERTERS)))
        ins = [cx.tensors.get(n) if n else None for n in node.input]
        for n, s in zip(node.input, ins):
            if n and s is None:
                raise MXNetError(f"ONNX import: node {node.name!r} reads {n!r}, which no "
                                 "earlier node produces")
        outs = conv(cx, node, [_as_symbol(s) for s in ins], _attrs(node))
        if not isinstance(outs, (list, tuple)):
            outs = [outs]
        for name, s in zip(node.output, outs):
            if name:
                cx.tensors[name] = s
    heads = [_as_symbol(cx.tensors[o.name]) for o in graph.output]
    sym = heads[0] if len(heads) == 1 else symbol.Group(heads)
    return sym, cx, data_inputs


def _as_symbol(s):
    return s.materialize() if isinstance(s, LazyParam) else s


def import_model(model_file):
    """Read an ONNX model: returns ``(sym, arg_params, aux_params)`` with NDArray
    parameters, ready for ``Module.set_params`` or ``sym.bind``."""
    sym, cx, _ = _build(_load(model_file))
    args, aux = set(sym.list_arguments()), set(sym.list_auxiliary_states())
    arg_params = {k: nd.array(v, dtype=v.dtype) for k, v in cx.params.items() if k in args}
    aux_params = {k: nd.array(v, dtype=v.dtype) for k, v in cx.params.items() if k in aux}
    return sym, arg_params, aux_params


def import_to_gluon(model_file, ctx):
    """Read an ONNX model as a ``gluon.SymbolBlock`` with its parameters on ctx."""
    sym, cx, data_inputs = _build(_load(model_file))
    net = SymbolBlock(sym, [symbol.var(n) for n in data_inputs])
    params = net.collect_params()
    for name, value in cx.params.items():
        if name in params:
            params[name]._load_init(nd.array(value, dtype=value.dtype), ctx)
    return net


def get_model_metadata(model_file):
    """``{'input_tensor_data': [(name, shape)], 'output_tensor_data': [(name, shape)]}``
    of the model's data inputs and outputs (a symbolic dimension is its name)."""
    model = _load(model_file)
    inits = {i.name for i in model.graph.initializer}

    def shape_of(value_info):
        dims = value_info.type.tensor_type.shape.dim
        return tuple(d.dim_value if d.HasField("dim_value") else d.dim_param for d in dims)

    return {"input_tensor_data": [(i.name, shape_of(i)) for i in model.graph.input
                                  if i.name not in inits],
            "output_tensor_data": [(o.name, shape_of(o)) for o in model.graph.output]}
