"""backend/parallel: large host GEMMs split their rows (or columns) between the caller
and a pool thread; the result must be the plain product whatever the pool does meanwhile."""
import os
import subprocess
import sys
import threading

import numpy as np
import pytest

from mxnet.backend import parallel


def _operands(m=96, k=700, n=300):
    rng = np.random.RandomState(0)
    return (rng.standard_normal((m, k)).astype(np.float32),
            rng.standard_normal((k, n)).astype(np.float32))


def test_split_product_equals_numpy():
    a, b = _operands()
    out = np.empty((a.shape[0], b.shape[1]), np.float32)
    res = parallel.matmul(np, a, b, out)
    assert res is out
    np.testing.assert_allclose(out, a @ b, rtol=1e-5, atol=1e-4)


def test_caller_takes_every_range_while_the_pool_is_busy():
    # the pool's threads are all held: the caller must not wait for them
    release = threading.Event()
    held = [parallel._get_pool().submit(release.wait) for _ in range(parallel.num_parts())]
    try:
        seen = []
        parallel._share_parts(lambda lo, hi: seen.append((lo, hi, threading.get_ident())),
                              parallel.split(10, 4))
        assert sorted(r[:2] for r in seen) == parallel.split(10, 4)
        assert {r[2] for r in seen} == {threading.get_ident()}
    finally:
        release.set()
        for f in held:
            f.result()


def test_each_range_runs_once_when_shared():
    counts = np.zeros(64, np.int64)
    lock = threading.Lock()

    def part(lo, hi):
        with lock:
            counts[lo:hi] += 1
    for _ in range(50):
        parallel._share_parts(part, parallel.split(64, 8))
    assert (counts == 50).all()


def test_split_or_not_follows_the_cheaper_way_and_explores(monkeypatch):
    # whichever way cost less per flop lately runs; every EXPLORE-th call the other
    monkeypatch.setattr(parallel, "MATMUL_MIN_FLOPS", 0)
    if parallel.num_parts() < 2:
        return
    a, b = _operands(32, 64, 16)
    ways = []
    real = parallel._share_parts
    monkeypatch.setattr(parallel, "_share_parts",
                        lambda fn, ranges: (ways.append("split"), real(fn, ranges)))
    monkeypatch.setattr(parallel, "_cost", [1.0, 1e-12])      # single-thread cheaper
    monkeypatch.setattr(parallel, "_cost_calls", [0])
    for _ in range(2 * parallel.EXPLORE):
        out = parallel.matmul(np, a, b)
        np.testing.assert_allclose(out, a @ b, rtol=1e-5, atol=1e-4)
    assert len(ways) == 2                 # only the two exploring calls split
    monkeypatch.setattr(parallel, "_cost", [1e-12, 1.0])      # now the split is cheaper
    monkeypatch.setattr(parallel, "_cost_calls", [0])
    ways.clear()
    for _ in range(parallel.EXPLORE):
        parallel.matmul(np, a, b)
    assert len(ways) == parallel.EXPLORE - 1


@pytest.mark.parametrize("m, k, n", [(100, 784, 128),    # a the smaller: b's columns split
                                     (300, 200, 50)])     # b the smaller: a's rows split
def test_values_do_not_depend_on_the_way_chosen(monkeypatch, m, k, n):
    # split or not (the choice follows the machine's load), the bits are the same
    monkeypatch.setattr(parallel, "MATMUL_MIN_FLOPS", 0)
    a, b = _operands(m, k, n)
    results = []
    for costs in ([1.0, 1e-12], [1e-12, 1.0]):
        monkeypatch.setattr(parallel, "_cost", list(costs))
        monkeypatch.setattr(parallel, "_cost_calls", [1])
        results.append(parallel.matmul(np, a, b))
    np.testing.assert_array_equal(results[0], results[1])
    np.testing.assert_allclose(results[0], a @ b, rtol=1e-5, atol=1e-4)


def test_min_flops_follows_the_environment():
    code = "from mxnet.backend import parallel; print(parallel.MATMUL_MIN_FLOPS)"
    src = os.path.join(os.path.dirname(__file__), "..", "..", "src")
    for value, want in (("16777216", "16777216"), (None, str(1 << 26))):
        env = {k: v for k, v in os.environ.items() if k != "MXNET_CPU_PARALLEL_MIN_FLOPS"}
        if value is not None:
            env["MXNET_CPU_PARALLEL_MIN_FLOPS"] = value
        env["PYTHONPATH"] = src
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                             text=True, timeout=120)
        assert out.stdout.strip() == want, out.stderr[-500:]
