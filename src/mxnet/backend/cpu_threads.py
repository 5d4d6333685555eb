"""How many threads NumPy's BLAS uses under pymxnet.

OpenBLAS's worker threads spin while they wait for each other. On a small machine
where anything else also wants a core (the engine's worker, the Python thread,
another process), a GEMM split over two threads can run 10-60x slower than on one
(measured on a busy 2-core machine: a 100x784x128 FullyConnected forward took 17 ms on
two threads and 0.26 ms on one; a 64x288x12544 convolution GEMM 23 ms vs 6.5 ms).
pymxnet therefore runs BLAS on ``MXNET_BLAS_NUM_THREADS`` threads, 1 unless set;
its parallelism comes from the engine's workers (``MXNET_CPU_WORKER_NTHREADS``), which
run independent operators side by side. The limit is set once, at import, through
threadpoolctl (changing it per call from engine threads costs more than it saves).
"""
import os

__all__ = ["configure_blas_threads", "blas_num_threads", "omp_num_threads"]


def omp_num_threads():
    """The threads one computation may use, as MXNet counts them: OMP_NUM_THREADS,
    else the cores this process may run on; capped by MXNET_OMP_MAX_THREADS when set.
    oneDNN's OpenMP team and backend/parallel.py's pool both follow it."""
    from ..base import env_int
    n = env_int("OMP_NUM_THREADS", 0)
    if n <= 0:
        try:
            n = len(os.sched_getaffinity(0))
        except (AttributeError, OSError):
            n = os.cpu_count() or 1
    cap = env_int("MXNET_OMP_MAX_THREADS", 0)
    if cap > 0:
        n = min(n, cap)
    return max(1, n)

_configured = [None]


def configure_blas_threads():
    """Apply MXNET_BLAS_NUM_THREADS (default 1) to the BLAS NumPy uses."""
    try:
        n = int(os.environ.get("MXNET_BLAS_NUM_THREADS", "1"))
    except ValueError:
        n = 1
    if n <= 0:                      # 0 or negative: leave BLAS as it started
        return
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:             # optional at run time: BLAS keeps its own setting
        return
    threadpool_limits(limits=n, user_api="blas")
    _configured[0] = n


def blas_num_threads():
    """The thread count set by configure_blas_threads (None if it left BLAS alone)."""
    return _configured[0]
