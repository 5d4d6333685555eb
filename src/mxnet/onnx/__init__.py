"""ONNX export (``mx.onnx``): write a Symbol and its parameters as an ONNX model.

``export_model(sym, params, in_shapes, in_types, onnx_file_path)`` takes the same
arguments as MXNet 1.9.1's and writes a model that ONNX runtimes execute with the same
outputs as pymxnet's inference forward pass. ``get_operator_support()`` lists the
operators that convert. Needs the ``onnx`` package (``pip install pymxnet[onnx]``);
importing ``mxnet.onnx`` works without it, calling ``export_model`` says what to
install.
"""
from .exporter import export_model, get_operator_support
from . import exporter as mx2onnx  # noqa: F401  (MXNet's module name for the exporter)

__all__ = ["export_model", "get_operator_support", "mx2onnx"]
