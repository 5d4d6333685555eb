"""ONNX import (``mx.contrib.onnx``): read an ONNX model as a Symbol with parameters or
as a Gluon SymbolBlock; ``export_model`` is ``mx.onnx.export_model``.

Needs the ``onnx`` package (``pip install pymxnet[onnx]``).
"""
from ...onnx import export_model
from .importer import get_model_metadata, import_model, import_to_gluon
from . import importer as onnx2mx  # noqa: F401  (MXNet's module name for the importer)

__all__ = ["import_model", "import_to_gluon", "get_model_metadata", "export_model",
           "onnx2mx"]

# MXNet 1.9.1 also exposes the undecorated functions under these names.
import_model_ = import_model
import_to_gluon_ = import_to_gluon
get_model_metadata_ = get_model_metadata
export_model_ = export_model
