"""DataLoader: batching semantics, worker processes/threads equal to in-process
loading, worker errors, worker death, timeouts and clean shutdown."""
import gc
import os
import time

import numpy as np
import pytest

import mxnet as mx
from mxnet.base import MXNetError
from mxnet.gluon.data import (ArrayDataset, BatchSampler, DataLoader, Dataset,
                              SequentialSampler, SimpleDataset)
from mxnet.gluon.data.dataloader import default_batchify_fn


def _alive(pid):
    """True while ``pid`` exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def _collect(loader):
    out = []
    for batch in loader:
        out.append([b.asnumpy() for b in batch] if isinstance(batch, list)
                   else batch.asnumpy())
    return out


def _data(n=23):
    x = np.random.RandomState(1).rand(n, 2, 3).astype(np.float32)
    y = np.arange(n, dtype=np.int32)
    return x, y


def test_default_batchify():
    nd_batch = default_batchify_fn([mx.nd.ones((2,)), mx.nd.zeros((2,))])
    np.testing.assert_array_equal(nd_batch.asnumpy(), [[1, 1], [0, 0]])
    pairs = default_batchify_fn([(np.ones(2, np.float32), 1), (np.zeros(2, np.float32), 2)])
    assert isinstance(pairs, list) and len(pairs) == 2
    assert pairs[0].dtype == np.float32 and pairs[1].dtype == np.int64
    np.testing.assert_array_equal(pairs[1].asnumpy(), [1, 2])
    assert default_batchify_fn([1.0, 2.0]).dtype == np.float64
    assert default_batchify_fn([np.int32(1), np.int32(4)]).dtype == np.int32


@pytest.mark.parametrize("last_batch", ["keep", "discard", "rollover"])
def test_batches_in_order(last_batch):
    x, y = _data()
    loader = DataLoader(ArrayDataset(mx.nd.array(x), y), batch_size=5, last_batch=last_batch)
    n_full = len(x) // 5
    expect_len = n_full + (1 if last_batch == "keep" else 0)
    assert len(loader) == expect_len
    batches = _collect(loader)
    assert len(batches) == expect_len
    for i, (bx, by) in enumerate(batches[:n_full]):
        np.testing.assert_array_equal(bx, x[5 * i:5 * i + 5])
        np.testing.assert_array_equal(by, y[5 * i:5 * i + 5])
    if last_batch == "keep":
        np.testing.assert_array_equal(batches[-1][1], y[20:])
    if last_batch == "rollover":   # the 3 left over lead the next epoch
        assert _collect(loader)[0][1].tolist() == [20, 21, 22, 0, 1]


def test_shuffle_is_a_permutation_from_numpy_rng():
    x, y = _data(17)
    np.random.seed(3)
    got = np.concatenate([b[1] for b in _collect(
        DataLoader(ArrayDataset(x, y), batch_size=4, shuffle=True))])
    np.random.seed(3)
    perm = np.arange(17)
    np.random.shuffle(perm)
    np.testing.assert_array_equal(got, y[perm])


def test_argument_errors():
    ds = SimpleDataset(list(range(4)))
    with pytest.raises(ValueError):
        DataLoader(ds)
    with pytest.raises(ValueError):
        DataLoader(ds, batch_size=2, shuffle=True, sampler=SequentialSampler(4))
    with pytest.raises(ValueError):
        DataLoader(ds, batch_size=2, batch_sampler=BatchSampler(SequentialSampler(4), 2))


def test_batch_sampler_and_batchify_fn():
    ds = SimpleDataset(list(range(10)))
    loader = DataLoader(ds, batch_sampler=BatchSampler(SequentialSampler(10), 4),
                        batchify_fn=lambda items: sum(items))
    assert list(loader) == [6, 22, 17]


class _Squares(Dataset):
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return mx.nd.full((3,), i) * i, np.float32(i), (os.getpid())


@pytest.mark.parametrize("thread_pool", [False, True])
def test_workers_equal_single_process(thread_pool):
    ds = _Squares(29)
    ref = _collect(DataLoader(ds, batch_size=4))
    loader = DataLoader(ds, batch_size=4, num_workers=3, thread_pool=thread_pool,
                        prefetch=5)
    for _ in range(2):   # the pool serves several epochs
        got = _collect(loader)
        assert len(got) == len(ref)
        for g, r in zip(got, ref):
            np.testing.assert_array_equal(g[0], r[0])
            np.testing.assert_array_equal(g[1], r[1])
            assert g[0].dtype == r[0].dtype and g[1].dtype == r[1].dtype
    pids = set(np.concatenate([g[2] for g in got]).tolist())
    if thread_pool:
        assert pids == {os.getpid()}
    else:   # loading really happened in other processes
        assert os.getpid() not in pids and len(pids) >= 1


def test_pin_memory_context():
    batch = next(iter(DataLoader(_Squares(4), batch_size=2, pin_memory=True,
                                 num_workers=1)))
    assert batch[0].context == mx.cpu_pinned(0)


class _Failing(Dataset):
    def __len__(self):
        return 12

    def __getitem__(self, i):
        if i == 7:
            raise KeyError("sample 7 is corrupt")
        return np.float32(i)


@pytest.mark.parametrize("num_workers", [0, 2])
def test_worker_exception_surfaces(num_workers):
    loader = DataLoader(_Failing(), batch_size=3, num_workers=num_workers)
    with pytest.raises(KeyError, match="sample 7 is corrupt") as info:
        list(loader)
    if num_workers:
        assert "DataLoader worker" in str(info.value.__cause__)


class _Dying(Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        if i == 5:
            os._exit(3)
        return np.float32(i)


def test_worker_death_is_an_error_not_a_hang():
    loader = DataLoader(_Dying(), batch_size=2, num_workers=2, timeout=60)
    t0 = time.monotonic()
    with pytest.raises(MXNetError, match="exited with code 3"):
        list(loader)
    assert time.monotonic() - t0 < 30


class _Slow(Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        time.sleep(5)
        return np.float32(i)


def test_timeout_raises_mxnet_error():
    loader = DataLoader(_Slow(), batch_size=2, num_workers=1, timeout=0.5)
    with pytest.raises(MXNetError, match="timed out"):
        list(loader)
    pids = loader._worker_pool.pids
    del loader
    gc.collect()
    assert not any(_alive(p) for p in pids)


def test_no_orphans_after_loader_deleted():
    ds = _Squares(40)
    loader = DataLoader(ds, batch_size=4, num_workers=3)
    pids = loader._worker_pool.pids
    assert all(_alive(p) for p in pids)
    it = iter(loader)
    next(it)       # abandon the epoch half way, with batches in flight
    del it, loader
    gc.collect()
    deadline = time.monotonic() + 10
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(_alive(p) for p in pids)


def test_auto_reload_prefetches_next_epoch():
    x, y = _data(10)
    loader = DataLoader(ArrayDataset(x, y), batch_size=3, num_workers=1, auto_reload=True)
    first = _collect(loader)
    second = _collect(loader)
    assert len(first) == len(second) == 4
    np.testing.assert_array_equal(first[-1][1], second[-1][1])


def test_workers_exit_when_main_process_is_killed(tmp_path):
    import subprocess
    import sys
    script = tmp_path / "main.py"
    script.write_text(
        "import os, signal, sys, numpy as np\n"
        "from mxnet.gluon.data import DataLoader, SimpleDataset\n"
        "loader = DataLoader(SimpleDataset(list(range(8))), batch_size=2, num_workers=2)\n"
        "print(' '.join(map(str, loader._worker_pool.pids)), flush=True)\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n")
    src = os.path.join(os.path.dirname(mx.__file__), "..")
    env = dict(os.environ, PYTHONPATH=os.path.abspath(src))
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         env=env, timeout=60)
    pids = [int(p) for p in out.stdout.split()]
    assert len(pids) == 2, out.stderr
    deadline = time.monotonic() + 10
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(_alive(p) for p in pids)


def test_forking_pickler_exported_and_pickles_ndarrays():
    # MXNet 1.9.1 re-exports multiprocessing's ForkingPickler from gluon.data.dataloader
    # (GluonNLP's loaders import it from there with _as_in_context)
    import io
    import pickle
    from multiprocessing.reduction import ForkingPickler as reference
    from mxnet.gluon.data.dataloader import ForkingPickler, _as_in_context
    assert ForkingPickler is reference
    buf = io.BytesIO()
    ForkingPickler(buf, pickle.HIGHEST_PROTOCOL).dump([mx.nd.array([1., 2.]), 3])
    back = pickle.loads(buf.getvalue())
    assert back[0].asnumpy().tolist() == [1., 2.] and back[1] == 3
    moved = _as_in_context((mx.nd.ones(2), 5), mx.cpu())
    assert isinstance(moved, list) and moved[1] == 5
