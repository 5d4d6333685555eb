"""Host-side parallelism for large kernels.

BLAS runs on one thread (see cpu_threads.py), so large products use the cores by
splitting their rows or columns (or a convolution's batch) into parts run on a small thread pool;
NumPy releases the GIL inside GEMMs and copies, so the parts run side by side.
``MXNET_CPU_PARALLEL`` sets the number of parts (default: the threads OMP_NUM_THREADS /
MXNET_OMP_MAX_THREADS allow, as for oneDNN (cpu_threads.omp_num_threads), at most 2);
``MXNET_CPU_PARALLEL_MIN_FLOPS`` the smallest product that may split (default 2**26).
"""

import time

import numpy as np

from ..base import env_int
from . import cublas_graph
from .cpu_threads import omp_num_threads

__all__ = ["num_parts", "split", "run_parts", "matmul"]

_THREADS = max(1, env_int("MXNET_CPU_PARALLEL", min(2, omp_num_threads())))
# Below this, one thread beats the hand-off. Each part of a split product packs the
# operand it does not split again, so products split the smaller operand's other side:
# a 100x784 @ 784x128 GEMM (20M flops, the MLP's first layer) took 124 us whole, 168 us
# as two 50-row halves one after the other (each packs the 784x128 operand) and 128 us
# as two 64-column halves (each packs the 100x784 one); LeNet's 100x800 @ 800x500: 882
# us whole, 1188 us as row halves, 768 us as column halves. The MLP's 20M-flop GEMMs
# stay whole by default: on the quiet 2-core machine two 64-column halves side by side
# took 104 us at best but 151 us typically (the caller's half ran at 140 us beside the
# pool thread's 64 us one), against 124 us whole, and Module.fit of the MLP ran 5-8%
# slower with them split (16M) at load 2.2-4.5. MXNET_CPU_PARALLEL_MIN_FLOPS sets it.
MATMUL_MIN_FLOPS = env_int("MXNET_CPU_PARALLEL_MIN_FLOPS", 1 << 26)
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
    a's rows or b's columns (whichever repacks less) over threads."""
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

    n = b.shape[1]
    if a.size <= b.size and n >= 2:     # repack a (the smaller) in each part
        def part(lo, hi):
            np.matmul(a, b[:, lo:hi], out=out[:, lo:hi])
        ranges = split(n)
    else:
        def part(lo, hi):
            np.matmul(a[lo:hi], b, out=out[lo:hi])
        ranges = split(m)
    # Split or not: whichever has cost less per flop lately (a running average of
    # each), trying the other way every EXPLORE-th call so a change of load is seen.
    # On a quiet machine the split wins; on a loaded one a pool thread that starts
    # late or runs beside other processes makes it lose (at load 1.3 on 2 cores, a
    # 784-128-10 MLP step: 670 us split, 465 us unsplit).
    flops = 2.0 * a.size * b.shape[1]
    split_cost, single_cost = _cost
    _cost_calls[0] += 1
    if split_cost is None or single_cost is None:
        use_split = split_cost is None
    else:
        use_split = (split_cost < single_cost) != (_cost_calls[0] % EXPLORE == 0)
    t0 = time.perf_counter()
    if use_split:
        _share_parts(part, ranges)
    else:
        # the same ranges, in this thread: a product in parts differs from the whole
        # product in the last bits (BLAS blocks them differently), and
        # the values must not depend on the machine's load
        for lo, hi in ranges:
            part(lo, hi)
    per_flop = (time.perf_counter() - t0) / flops
    k = 0 if use_split else 1
    old = _cost[k]
    # a running average; one descheduled call counts at most 4x the average
    _cost[k] = per_flop if old is None else 0.8 * old + 0.2 * min(per_flop, 4 * old)
    return out


EXPLORE = 13         # prime: the calls of a step (a few GEMMs in turn) take turns exploring
# per-flop seconds of recent split and single-thread products (shared by the threads
# that call matmul: a lost update only delays the switch by a call)
_cost = [None, None]
_cost_calls = [0]


def _share_parts(fn, ranges):
    """fn(start, end) for each range, the ranges taken in turn by the calling thread
    and one pool thread. The caller never waits for a pool thread that has not started
    (the other core busy): it runs the remaining ranges itself, so a busy machine costs
    one hand-off, not a GEMM wait (measured at load 2.7 on 2 cores, a 100x784x128 GEMM:
    210 us alone, 530 us with both halves on the pool, 210 us shared this way)."""
    it = iter(ranges)

    def work():
        for lo, hi in it:          # a list iterator hands each range out once
            fn(lo, hi)
    helper = _get_pool().submit(work)
    try:
        work()
    finally:
        if not helper.cancel():
            helper.result()
