"""Operator lists AMP uses, one module per target dtype."""
from . import symbol_bf16, symbol_fp16  # noqa: F401
