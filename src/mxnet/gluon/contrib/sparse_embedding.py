"""gluon.contrib.nn.SparseEmbedding: an embedding whose weight and weight gradient are
both row_sparse, for vocabularies too large to update densely."""
from ... import ndarray as nd
from ..block import Block

__all__ = ["SparseEmbedding"]


class SparseEmbedding(Block):
    """Look up rows of a row_sparse ``(input_dim, output_dim)`` weight for integer
    indices; the weight gradient is row_sparse (only the rows looked up), so optimizers
    with lazy updates (SGD, Adam, AdaGrad...) touch those rows only.

    Input: indices of any shape; output: that shape + ``(output_dim,)``."""

    def __init__(self, input_dim, output_dim, dtype="float32", weight_initializer=None,
                 **kwargs):
        super().__init__(**kwargs)
        self._kwargs = {"input_dim": input_dim, "output_dim": output_dim, "dtype": dtype,
                        "sparse_grad": True}
        self.weight = self.params.get("weight", shape=(input_dim, output_dim),
                                      init=weight_initializer, dtype=dtype,
                                      stype="row_sparse", grad_stype="row_sparse")

    def forward(self, x):
        return nd.Embedding(x, self.weight.row_sparse_data(x), name="fwd", **self._kwargs)

    def __repr__(self):
        k = self._kwargs
        return f"{type(self).__name__}({k['input_dim']} -> {k['output_dim']}, {k['dtype']})"
