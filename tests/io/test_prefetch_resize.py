"""PrefetchingIter and ResizeIter, against the batches of the wrapped iterators read
directly."""
import gc
import threading

import numpy as np
import pytest

import mxnet as mx
from mxnet.base import MXNetError


def direct(it):
    out = [(b.data[0].asnumpy(), b.pad) for b in it]
    it.reset()
    return out


class Failing(mx.io.DataIter):
    """Yields one batch, then fails inside next()."""

    def __init__(self):
        super().__init__(2)
        self.calls = 0
        self.provide_data = [mx.io.DataDesc("data", (2, 1))]
        self.provide_label = []

    def reset(self):
        self.calls = 0

    def next(self):
        self.calls += 1
        if self.calls == 2:
            raise ValueError("bad record in the reader")
        return mx.io.DataBatch([mx.nd.ones((2, 1)) * self.calls], [])


def test_resize_longer_and_shorter():
    x = np.arange(10, dtype=np.float32)
    inner = mx.io.NDArrayIter(x, batch_size=4)
    ref = direct(inner)                            # 3 batches per pass
    r = mx.io.ResizeIter(inner, 5)
    assert r.provide_data == inner.provide_data and r.batch_size == 4
    for _ in range(2):
        got = [(b.data[0].asnumpy(), b.pad) for b in r]
        expect = ref + ref[:2]
        assert len(got) == 5
        for (d, p), (rd, rp) in zip(got, expect):
            np.testing.assert_array_equal(d, rd)
            assert p == rp
        r.reset()
    r = mx.io.ResizeIter(mx.io.NDArrayIter(x, batch_size=4), 2, reset_internal=False)
    seen = []
    for _ in range(3):
        seen += [b.data[0].asnumpy()[0] for b in r]
        r.reset()
    # Without internal resets the epochs continue through the inner iterator.
    np.testing.assert_array_equal(seen, [0, 4, 8, 0, 4, 8])


def test_resize_empty_inner():
    class Empty(mx.io.DataIter):
        provide_data, provide_label = [], []

        def next(self):
            raise StopIteration

    with pytest.raises(MXNetError, match="no batch"):
        next(iter(mx.io.ResizeIter(Empty(), 3)))


def test_prefetch_joins_iterators():
    a = np.random.rand(10, 2).astype(np.float32)
    b = np.random.rand(10, 3).astype(np.float32)
    it1 = mx.io.NDArrayIter(a, np.arange(10), batch_size=4)
    it2 = mx.io.NDArrayIter(b, np.arange(10) + 100, batch_size=4, data_name="d2",
                            label_name="l2")
    ref1, ref2 = direct(it1), direct(it2)
    p = mx.io.PrefetchingIter([it1, it2])
    assert [d.name for d in p.provide_data] == ["data", "d2"]
    assert [d.name for d in p.provide_label] == ["softmax_label", "l2"]
    assert p.batch_size == 4
    for _ in range(2):
        got = list(p)
        assert len(got) == len(ref1)
        for batch, (d1, p1), (d2, _) in zip(got, ref1, ref2):
            np.testing.assert_array_equal(batch.data[0].asnumpy(), d1)
            np.testing.assert_array_equal(batch.data[1].asnumpy(), d2)
            assert len(batch.label) == 2 and batch.pad == p1
            assert batch.provide_data == p.provide_data
        p.reset()
    p.close()


def test_prefetch_rename_and_protocol():
    x = np.arange(12, dtype=np.float32).reshape(6, 2)
    p = mx.io.PrefetchingIter(mx.io.NDArrayIter(x, np.zeros(6), batch_size=3),
                              rename_data=[{"data": "x"}],
                              rename_label=[{"softmax_label": "y"}])
    assert p.provide_data == [("x", (3, 2))] and p.provide_label == [("y", (3,))]
    assert p.iter_next()
    np.testing.assert_array_equal(p.getdata()[0].asnumpy(), x[:3])
    assert p.getpad() == 0 and p.getindex() is None
    # A reset in the middle of an epoch starts over.
    p.reset()
    np.testing.assert_array_equal(p.next().data[0].asnumpy(), x[:3])
    p.close()


def test_prefetch_surfaces_thread_errors():
    p = mx.io.PrefetchingIter(Failing())
    np.testing.assert_array_equal(p.next().data[0].asnumpy(), np.ones((2, 1)))
    with pytest.raises(ValueError, match="bad record"):
        p.next()
    # The iterator keeps working after the failure.
    np.testing.assert_array_equal(p.next().data[0].asnumpy(), np.full((2, 1), 3))
    p.close()


def test_prefetch_checks():
    a = mx.io.NDArrayIter(np.zeros((8, 1)), batch_size=4)
    b = mx.io.NDArrayIter(np.zeros((12, 1)), batch_size=4)
    p = mx.io.PrefetchingIter([a, b])
    p.next()
    p.next()
    with pytest.raises(MXNetError, match="different numbers"):
        p.next()
    p.close()
    with pytest.raises(MXNetError):
        mx.io.PrefetchingIter([])
    with pytest.raises(MXNetError, match="rename_data"):
        mx.io.PrefetchingIter([a], rename_data=[{}, {}])


def test_prefetch_threads_stop():
    def workers():
        return [t for t in threading.enumerate() if t.name == "PrefetchingIter"]

    before = len(workers())
    p = mx.io.PrefetchingIter([mx.io.NDArrayIter(np.zeros((4, 1)), batch_size=2)] * 1)
    assert len(workers()) == before + 1
    p.close()
    assert len(workers()) == before
    with pytest.raises(MXNetError, match="closed"):
        p.next()
    p = mx.io.PrefetchingIter(mx.io.NDArrayIter(np.zeros((4, 1)), batch_size=2))
    p.next()
    del p
    gc.collect()
    for t in workers()[before:]:
        t.join(timeout=5)
    assert len(workers()) == before
