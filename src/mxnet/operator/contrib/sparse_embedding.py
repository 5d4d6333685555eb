"""``SparseEmbedding`` (contrib): the Embedding lookup whose weight gradient MXNet 1.9.1
stores row-sparse. pymxnet has no row_sparse storage yet, so the gradient is the same
values in a dense array (rows never looked up are zero); the forward is Embedding's."""
from ..nn.embedding import Embedding
from ..registry import register

__all__ = ["SparseEmbedding"]


@register
class SparseEmbedding(Embedding):
    """Embedding lookup (data indices -> rows of weight); dense weight gradient."""
    name = "_contrib_SparseEmbedding"
    aliases = ()
