"""Text utilities (MXNet 1.9.1's ``mx.contrib.text``): token counting (``utils``),
token indexing (``vocab.Vocabulary``) and token embeddings (``embedding``: GloVe,
FastText, CustomEmbedding, CompositeEmbedding). Pretrained embeddings are read from
the local store (``$MXNET_HOME/embeddings``) and never downloaded."""
from . import utils, vocab, embedding  # noqa: F401
