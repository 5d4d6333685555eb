"""Host-side parallelism for large kernels.

BLAS runs on one thread (see cpu_threads.py), so large products use the cores by
splitting their rows (or a convolution's batch) into parts run on a small thread pool;
NumPy releases the GIL inside GEMMs and copies, so the parts run side by side.
``MXNET_CPU_PARALLEL`` sets the number of parts (default: the threads OMP_NUM_THREADS /
MXNET_OMP_MAX_THREADS allow, as for oneDNN (cpu_threads.omp_num_threads), at most 2).
"""

import time

import numpy as np

from ..base import env_int
from . import cublas_graph
from .cpu_threads import omp_num_threads

__all__ = ["num_parts", "split", "run_parts", "matmul"]

_THREADS = max(1, env_int("MXNET_CPU_PARALLEL", min(2, omp_num_threads())))
MATMUL_MIN_FLOPS = 1 << 24      # below this, one thread beats the hand-off
_pool = []


def num_parts():
    return _THREADS


def split(n, parts=None):
    """[(start, end)] cutting range(n) into up to ``parts`` nearly equal pieces."""
    k = max(1, min(parts or _THREADS, n))
    return [(i * n // k, (i + 1) * n // k) for i in range(k)]


def _get_pool():
    if not _pool:
        from concurrent.futures import ThreadPoolExecutor
        _pool.append(ThreadPoolExecutor(_THREADS, thread_name_prefix="mxnet-cpu"))
    return _pool[0]


def run_parts(fn, ranges):
    """fn(start, end) for each range, on the pool; returns the results in order."""
    if len(ranges) == 1:
        return [fn(*ranges[0])]
    futures = [_get_pool().submit(fn, a, b) for a, b in ranges]
    return [f.result() for f in futures]


def matmul(xp, a, b, out=None):
    """a @ b for 2-D arrays (into ``out`` when given); on the CPU, large products split
    a's rows over threads."""
    m = a.shape[0]
    if xp is not np and cublas_graph.capturing():      # CuPy refuses cuBLAS in captures
        res = cublas_graph.matmul(a, b, out)
        if res is not NotImplemented:
            return res
    if xp is not np or _THREADS < 2 or m < 2 or 2.0 * a.size * b.shape[1] < MATMUL_MIN_FLOPS \
            or (out is not None and (np.may_share_memory(out, a) or
                                     np.may_share_memory(out, b))):
        return xp.matmul(a, b, out=out)      # one call: NumPy handles overlapping out
    if out is None:
        out = np.empty((m, b.shape[1]), dtype=np.result_type(a.dtype, b.dtype))

    def part(lo, hi):
        np.matmul(a[lo:hi], b, out=out[lo:hi])
    if _backoff[0] > 0:              # splits did not pay lately: one thread for now
        _backoff[0] -= 1
        part(0, m)
        return out
    if _share_parts(part, split(m)):
        _backoff[1] = 0
    else:                            # wait 1, 2, 4 ... 256 calls before trying again
        _backoff[0] = _backoff[1] = min(max(1, 2 * _backoff[1]), 256)
    return out


# [calls left to run on one thread, the current back-off length]: a heuristic shared
# by the threads that call matmul (a lost update only shifts when the next try comes)
_backoff = [0, 0]


def _share_parts(fn, ranges):
    """fn(start, end) for each range, the ranges taken in turn by the calling thread
    and one pool thread. The caller never waits for a pool thread that has not started
    (the other core busy): it runs the remaining ranges itself, so a busy machine costs
    one hand-off, not a GEMM wait (measured at load 2.7 on 2 cores, a 100x784x128 GEMM:
    210 us alone, 530 us with both halves on the pool, 210 us shared this way).
    Returns whether sharing paid: the pool thread took a range and the caller waited
    for it less than it worked itself (on a loaded machine a pool thread that starts
    late, or runs slowly beside other processes, makes the split cost more than one
    thread: at load 1.3, a 784-128-10 MLP step took 670 us split, 465 us unsplit)."""
    it = iter(ranges)
    taken = []

    def work(mine):
        for lo, hi in it:          # a list iterator hands each range out once
            if not mine:
                taken.append(lo)
            fn(lo, hi)
    helper = _get_pool().submit(work, False)
    t0 = time.perf_counter()
    try:
        work(True)
    finally:
        t1 = time.perf_counter()
        if not helper.cancel():
            helper.result()
    return bool(taken) and time.perf_counter() - t1 < t1 - t0
