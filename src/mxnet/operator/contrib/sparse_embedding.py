"""``SparseEmbedding`` (contrib): the Embedding lookup whose weight gradient is stored
row_sparse (autograd and the executor give the weight a row_sparse gradient buffer);
the forward is Embedding's."""
from ..nn.embedding import Embedding
from ..params import Bool, Schema
from ..registry import register

__all__ = ["SparseEmbedding"]


@register
class SparseEmbedding(Embedding):
    """Embedding lookup (data indices -> rows of weight); row_sparse weight gradient.
    ``deterministic`` (MXNet's GPU accumulation order) changes nothing here."""
    name = "_contrib_SparseEmbedding"
    aliases = ()
    params = Schema(**dict(Embedding.params.fields), deterministic=Bool(False))
