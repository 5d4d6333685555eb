"""How many threads the CPU BLAS may use for one matrix product.

OpenBLAS's threads spin while they wait for each other, so a modest GEMM split over
both cores of a small machine — while the engine's worker and the Python thread also
want a core — can run 5-20x slower than on one thread (measured here: a 100x784x128
FullyConnected step went from 0.1 ms to 2 ms with a second thread on a busy 2-core
machine). pymxnet therefore runs products below ``MXNET_BLAS_PARALLEL_MIN_FLOPS``
(default 2e8 floating-point operations) on one thread and larger ones on the thread
count BLAS was started with (``OMP_NUM_THREADS``/``OPENBLAS_NUM_THREADS``).

Only NumPy's bundled OpenBLAS is steered (found through threadpoolctl when it is
installed); with any other BLAS, or on GPU, ``matmul`` is plain ``xp.matmul``.
"""
import threading

import numpy as np

from ..base import env_int

__all__ = ["matmul", "blas_threads"]

PARALLEL_MIN_FLOPS = float(env_int("MXNET_BLAS_PARALLEL_MIN_FLOPS", 200_000_000))
_lock = threading.Lock()
_state = {"init": False, "set": None, "default": 1}


def _init():
    with _lock:
        if _state["init"]:
            return
        _state["init"] = True
        try:
            from threadpoolctl import ThreadpoolController
            for lib in ThreadpoolController().lib_controllers:
                if lib.internal_api == "openblas" and lib.user_api == "blas":
                    _state["set"] = lib.set_num_threads
                    _state["default"] = lib.num_threads
                    break
        except Exception:          # no threadpoolctl, or an unknown BLAS: leave it
            _state["set"] = None


def blas_threads():
    """(steerable, default thread count) of the CPU BLAS."""
    if not _state["init"]:
        _init()
    return _state["set"] is not None, _state["default"]


def matmul(xp, a, b, out=None):
    """``xp.matmul(a, b, out=out)`` with the thread policy above on CPU."""
    if xp is not np:
        return xp.matmul(a, b, out=out) if out is not None else xp.matmul(a, b)
    if not _state["init"]:
        _init()
    setter = _state["set"]
    flops = 2.0 * a.size * (b.shape[-1] if b.ndim > 1 else 1)
    if setter is None or _state["default"] <= 1 or flops >= PARALLEL_MIN_FLOPS:
        return np.matmul(a, b, out=out) if out is not None else np.matmul(a, b)
    setter(1)
    try:
        return np.matmul(a, b, out=out) if out is not None else np.matmul(a, b)
    finally:
        setter(_state["default"])
