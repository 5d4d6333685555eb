"""``mxnet.gluon.contrib.nn.basic_layers``: the module MXNet 1.9.1 defines its contrib
layers in. pymxnet defines them elsewhere (gluon.nn, the PixelShuffle and SparseEmbedding
modules); they take this module's name, the one MXNet's pickles of them use, so a
pickled block holding one loads both here and in MXNet."""
from ....base import pickled_as as _pickled_as
from ...nn import Concurrent, HybridConcurrent, Identity, SyncBatchNorm
from ..pixel_shuffle import PixelShuffle1D, PixelShuffle2D, PixelShuffle3D
from ..sparse_embedding import SparseEmbedding

__all__ = ["Concurrent", "HybridConcurrent", "Identity", "SyncBatchNorm", "PixelShuffle1D",
           "PixelShuffle2D", "PixelShuffle3D", "SparseEmbedding"]

_pickled_as(__name__, (Concurrent, HybridConcurrent, Identity, SyncBatchNorm,
                       PixelShuffle1D, PixelShuffle2D, PixelShuffle3D, SparseEmbedding))
