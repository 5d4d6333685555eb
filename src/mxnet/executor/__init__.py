"""mx.executor: bound symbols.

``Symbol.bind``/``simple_bind`` build an Executor. Its plan is made once by passes
that each take the indexed graph and return it with one more thing worked out:
``infer`` (shapes and dtypes), ``gradient`` (the backward steps), ``memory`` (buffer
reuse); ``executor`` runs the prepared steps.
"""
from .executor import Executor  # noqa: F401

__all__ = ["Executor"]
