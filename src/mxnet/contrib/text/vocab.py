"""Vocabulary: the indexing of text tokens (MXNet 1.9.1's ``mx.contrib.text.vocab``),
defined in ``gluon.data._vocabulary``."""
from ...gluon.data._vocabulary import Vocabulary

__all__ = ["Vocabulary"]
