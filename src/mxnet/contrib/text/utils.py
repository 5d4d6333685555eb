"""Utilities for text data processing (MXNet 1.9.1's ``mx.contrib.text.utils``),
defined in ``gluon.data._vocabulary``."""
from ...gluon.data._vocabulary import count_tokens_from_str

__all__ = ["count_tokens_from_str"]
