"""mx.gluon.contrib.nn: the layers MXNet 1.9.1 places here, defined in gluon.nn
(``Concurrent``/``HybridConcurrent`` are the 1.9.1 names of
``Concatenate``/``HybridConcatenate``), and the PixelShuffle blocks. SparseEmbedding
raises NotImplementedError (no sparse storage)."""
from ..nn import (Concatenate, Concurrent, HybridConcatenate,  # noqa: F401
                  HybridConcurrent, Identity, SyncBatchNorm)
from .pixel_shuffle import (PixelShuffle1D, PixelShuffle2D, PixelShuffle3D,  # noqa: F401
                            SparseEmbedding)

__all__ = ["Concatenate", "Concurrent", "HybridConcatenate", "HybridConcurrent",
           "Identity", "SyncBatchNorm", "PixelShuffle1D", "PixelShuffle2D", "PixelShuffle3D",
           "SparseEmbedding"]
