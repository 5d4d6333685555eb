"""The errors of mx.contrib.text (defined in ``gluon.data._vocabulary``)."""
from ...gluon.data._vocabulary import TextAssertionError, TextKeyError  # noqa: F401

__all__ = []
