"""Datasets and samplers: orders, lengths and last_batch modes against expectations
computed here."""
import numpy as np
import pytest

import mxnet as mx
from mxnet.gluon import data as gdata


def test_simple_and_array_dataset():
    x = np.arange(20, dtype=np.float32).reshape(10, 2)
    y = np.arange(10) * 3
    ds = gdata.ArrayDataset(mx.nd.array(x), y, [i * 2 for i in range(10)])
    assert len(ds) == 10
    a, b, c = ds[4]
    np.testing.assert_array_equal(a.asnumpy(), x[4])
    assert b == 12 and c == 8
    # 1-D NDArrays are kept as numpy: indexing gives a scalar
    single = gdata.ArrayDataset(mx.nd.arange(5))
    assert isinstance(single[2], np.float32) and single[2] == 2
    with pytest.raises(AssertionError):
        gdata.ArrayDataset(np.arange(3), np.arange(4))
    with pytest.raises(AssertionError):
        gdata.ArrayDataset()
    simple = gdata.SimpleDataset(list("abcdef"))
    assert len(simple) == 6 and simple[3] == "d"


def test_transform_and_transform_first():
    ds = gdata.ArrayDataset(np.arange(6), np.arange(6) * 10)
    t = ds.transform(lambda a, b: (a + 1, b + 1))
    assert [t[i] for i in range(6)] == [(i + 1, i * 10 + 1) for i in range(6)]
    tf = ds.transform_first(lambda a: a * 100)
    assert [tf[i] for i in range(6)] == [(i * 100, i * 10) for i in range(6)]
    eager = gdata.SimpleDataset(list(range(5))).transform(lambda v: v * v, lazy=False)
    assert isinstance(eager, gdata.SimpleDataset) and list(eager) == [0, 1, 4, 9, 16]
    single = gdata.SimpleDataset(list(range(3))).transform_first(lambda v: -v)
    assert [single[i] for i in range(3)] == [0, -1, -2]


def test_filter_shard_take_sample():
    ds = gdata.SimpleDataset(list(range(10)))
    assert [ds.filter(lambda v: v % 3 == 0)[i] for i in range(4)] == [0, 3, 6, 9]
    # the first len % n shards hold one more sample
    shards = [list(ds.shard(3, i)) for i in range(3)]
    assert shards == [[0, 1, 2, 3], [4, 5, 6], [7, 8, 9]]
    assert sum(len(ds.shard(4, i)) for i in range(4)) == 10
    with pytest.raises(AssertionError):
        ds.shard(3, 3)
    assert list(ds.take(3)) == [0, 1, 2]
    assert len(ds.take(None)) == 10 and len(ds.take(100)) == 10
    assert list(ds.sample(gdata.SequentialSampler(3, 5))) == [5, 6, 7]
    with pytest.raises(TypeError):
        ds.sample([1, 2])


def test_sequential_random_filter_samplers():
    assert list(gdata.SequentialSampler(5)) == [0, 1, 2, 3, 4]
    assert list(gdata.SequentialSampler(3, start=4)) == [4, 5, 6]
    np.random.seed(7)
    got = list(gdata.RandomSampler(12))
    np.random.seed(7)
    ref = np.arange(12)
    np.random.shuffle(ref)
    assert got == ref.tolist() and sorted(got) == list(range(12))
    fs = gdata.FilterSampler(lambda v: v > 5, list(range(10)))
    assert list(fs) == [6, 7, 8, 9] and len(fs) == 4


@pytest.mark.parametrize("n,bs", [(10, 3), (9, 3), (2, 5)])
def test_batch_sampler_modes(n, bs):
    idx = list(range(n))
    full = [idx[i:i + bs] for i in range(0, n, bs)]
    keep = gdata.BatchSampler(gdata.SequentialSampler(n), bs, "keep")
    assert list(keep) == full and len(keep) == len(full)
    discard = gdata.BatchSampler(gdata.SequentialSampler(n), bs, "discard")
    expect = [b for b in full if len(b) == bs]
    assert list(discard) == expect and len(discard) == len(expect)


def test_batch_sampler_rollover_carries_remainder():
    bs = gdata.BatchSampler(gdata.SequentialSampler(10), 3, "rollover")
    assert len(bs) == 3
    assert list(bs) == [[0, 1, 2], [3, 4, 5], [6, 7, 8]]
    assert len(bs) == 3          # index 9 carried: (1 + 10) // 3
    assert list(bs) == [[9, 0, 1], [2, 3, 4], [5, 6, 7]]
    assert len(bs) == 4          # 8, 9 carried: (2 + 10) // 3
    assert list(bs) == [[8, 9, 0], [1, 2, 3], [4, 5, 6], [7, 8, 9]]
    assert len(bs) == 3
    with pytest.raises(ValueError, match="last_batch"):
        gdata.BatchSampler(gdata.SequentialSampler(3), 2, "bogus")


def test_interval_sampler():
    assert list(gdata.IntervalSampler(10, 3)) == [0, 3, 6, 9, 1, 4, 7, 2, 5, 8]
    assert list(gdata.IntervalSampler(10, 3, rollover=False)) == [0, 3, 6, 9]
    with pytest.raises(AssertionError):
        gdata.IntervalSampler(3, 5)


def test_record_file_dataset(tmp_path):
    rec, idx = str(tmp_path / "d.rec"), str(tmp_path / "d.idx")
    w = mx.recordio.MXIndexedRecordIO(idx, rec, "w")
    payloads = [bytes([i]) * (i + 1) for i in range(7)]
    for i, p in enumerate(payloads):
        w.write_idx(i, p)
    w.close()
    ds = gdata.RecordFileDataset(rec)
    assert len(ds) == 7
    assert [ds[i] for i in range(7)] == payloads
    assert ds[-1] == payloads[-1]
