"""SplitSampler and ShardedSampler: each worker's part of a data set for DataLoader."""
import numpy as np
import pytest

from mxnet.base import MXNetError
from mxnet.gluon.data.sampler import RandomSampler, SequentialSampler
from mxnet.gluon.data.sharded_sampler import ShardedSampler, SplitSampler


@pytest.mark.parametrize("length, parts", [(10, 3), (12, 4), (5, 5), (7, 2)])
def test_split_sampler_parts(length, parts):
    samplers = [SplitSampler(length, parts, p) for p in range(parts)]
    got = [list(s) for s in samplers]
    size = length // parts
    assert all(len(g) == size == len(s) for g, s in zip(got, samplers))
    assert sum(got, []) == list(range(size * parts))
    uneven = [list(SplitSampler(length, parts, p, even=False)) for p in range(parts)]
    assert sum(uneven, []) == list(range(length))
    assert uneven[0] == list(range(0, length // parts))


def test_split_sampler_shuffles_within_its_part():
    np.random.seed(3)
    s = SplitSampler(20, 4, 2, shuffle=True)
    first, second = list(s), list(s)
    assert sorted(first) == sorted(second) == list(range(10, 15))
    assert first != second or first != list(range(10, 15))


def test_sharded_sampler_interleaves():
    parts = [list(ShardedSampler(SequentialSampler(11), 3, p)) for p in range(3)]
    assert parts == [[0, 3, 6], [1, 4, 7], [2, 5, 8]]
    assert [len(ShardedSampler(SequentialSampler(11), 3, p)) for p in range(3)] == [3] * 3
    uneven = [list(ShardedSampler(SequentialSampler(11), 3, p, even=False))
              for p in range(3)]
    assert uneven == [[0, 3, 6, 9], [1, 4, 7, 10], [2, 5, 8]]
    assert [len(ShardedSampler(SequentialSampler(11), 3, p, even=False))
            for p in range(3)] == [4, 4, 3]


def test_sharded_sampler_seed_gives_workers_one_permutation():
    workers = [ShardedSampler(RandomSampler(40), 4, p, seed=7) for p in range(4)]
    np.random.seed(0)
    state = np.random.get_state()[1].copy()
    epoch1 = [list(w) for w in workers]
    assert (np.random.get_state()[1] == state).all()      # global state untouched
    assert sorted(sum(epoch1, [])) == list(range(40))       # disjoint, complete
    epoch2 = [list(w) for w in workers]
    assert sorted(sum(epoch2, [])) == list(range(40)) and epoch1 != epoch2


def test_bad_parts():
    with pytest.raises(MXNetError, match="part_index"):
        SplitSampler(10, 2, 2)
    with pytest.raises(MXNetError, match="num_parts"):
        ShardedSampler(SequentialSampler(3), 0, 0)
