"""The ``numpy.linalg`` functions MXNet 1.9.1 computes on the host (its
``np.fallback_linalg``); they live in ``mx.np.linalg``."""
from .linalg import cond, lstsq, matrix_power, matrix_rank, multi_dot, qr  # noqa: F401

__all__ = ["cond", "lstsq", "matrix_power", "matrix_rank", "multi_dot", "qr"]
