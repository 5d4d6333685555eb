"""mx.gluon.contrib.nn: the layers MXNet 1.9.1 places here, defined in gluon.nn
(``Concurrent``/``HybridConcurrent`` are the 1.9.1 names of
``Concatenate``/``HybridConcatenate``). PixelShuffle1D/2D/3D and SparseEmbedding are
not implemented."""
from ..nn import (Concatenate, Concurrent, HybridConcatenate,  # noqa: F401
                  HybridConcurrent, Identity, SyncBatchNorm)

__all__ = ["Concatenate", "Concurrent", "HybridConcatenate", "HybridConcurrent",
           "Identity", "SyncBatchNorm"]
