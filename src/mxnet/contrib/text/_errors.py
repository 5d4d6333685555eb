"""The errors of mx.contrib.text: MXNetErrors that are also the built-in exception
MXNet 1.9.1 raised in each case, so ``except AssertionError`` / ``except KeyError``
code written for MXNet still catches them."""
from ...base import MXNetError

__all__ = []


class TextAssertionError(MXNetError, AssertionError):
    """Bad input MXNet rejected with an assertion (vocabulary arguments, embedding
    file format, vector shapes)."""


class TextKeyError(MXNetError, KeyError):
    """An unknown embedding name or pretrained file name."""

    def __str__(self):
        # KeyError would show the message in quotes (repr of its argument)
        return str(self.args[0]) if self.args else ""
