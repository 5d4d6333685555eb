"""mx.nd.sparse: row_sparse and csr NDArrays. Not implemented in pymxnet yet: the module
imports, every name in it raises NotImplementedError (see mxnet._missing)."""
from .._missing import missing_module_getattr

__getattr__ = missing_module_getattr("mxnet.ndarray.sparse",
                                     "sparse storage (RowSparseNDArray, CSRNDArray)")
