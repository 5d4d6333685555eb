"""backend/parallel: large host GEMMs split their rows between the caller and a pool
thread; the result must be the plain product whatever the pool does meanwhile."""
import threading

import numpy as np

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


def test_splits_back_off_while_they_do_not_pay(monkeypatch):
    # a pool thread that cannot start: the split did not pay, so the next calls run
    # on one thread (1, then 2, 4 ... calls), and still give the plain product
    monkeypatch.setattr(parallel, "_backoff", [0, 0])
    monkeypatch.setattr(parallel, "MATMUL_MIN_FLOPS", 0)
    if parallel.num_parts() < 2:
        return
    a, b = _operands(32, 64, 16)
    release = threading.Event()
    held = [parallel._get_pool().submit(release.wait) for _ in range(parallel.num_parts())]
    try:
        out = parallel.matmul(np, a, b)
        assert parallel._backoff == [1, 1]
        out2 = parallel.matmul(np, a, b)          # runs on one thread
        assert parallel._backoff == [0, 1]
        parallel.matmul(np, a, b)                 # tries again, fails again
        assert parallel._backoff == [2, 2]
    finally:
        release.set()
        for f in held:
            f.result()
    for o in (out, out2):
        np.testing.assert_allclose(o, a @ b, rtol=1e-5, atol=1e-4)
