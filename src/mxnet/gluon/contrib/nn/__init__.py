"""mx.gluon.contrib.nn: the layers MXNet 1.9.1 places here, defined in gluon.nn
(``Concurrent``/``HybridConcurrent`` are the 1.9.1 names of
``Concatenate``/``HybridConcatenate``), and the PixelShuffle blocks. SparseEmbedding
(row_sparse weight and gradient) has its own module."""
from ...nn import Concatenate, HybridConcatenate  # noqa: F401
from .basic_layers import (Concurrent, HybridConcurrent, Identity,  # noqa: F401
                           SyncBatchNorm, PixelShuffle1D, PixelShuffle2D, PixelShuffle3D,
                           SparseEmbedding)

__all__ = ["Concatenate", "Concurrent", "HybridConcatenate", "HybridConcurrent",
           "Identity", "SyncBatchNorm", "PixelShuffle1D", "PixelShuffle2D", "PixelShuffle3D",
           "SparseEmbedding"]
