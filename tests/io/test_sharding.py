"""num_parts/part_index sharding rules (mxnet.io.sharding), checked against what the
real MXNet 1.9.1 iterators read."""
import numpy as np
import pytest

from mxnet.base import MXNetError
from mxnet.io.sharding import check_shard, record_shard, shard_indices, shard_range

# MNISTIter(num_parts=P, part_index=p) over 10 images, as MXNet 1.9.1 splits them.
MNIST_PARTS = {3: [[0, 1, 2], [3, 4, 5], [6, 7, 8, 9]],
               4: [[0, 1], [2, 3, 4], [5, 6], [7, 8, 9]]}

# ImageRecordIter(num_parts=P, part_index=p) over a .rec file of 23 records of these
# byte sizes (headers and padding included), as MXNet 1.9.1 splits it.
RECORD_SIZES = [668, 712, 664, 664, 708, 684, 664, 668, 664, 664, 716, 688, 664, 672,
                700, 664, 700, 724, 664, 764, 700, 664, 684]
RECORD_PARTS = {
    2: [range(0, 12), range(12, 23)],
    3: [range(0, 8), range(8, 16), range(16, 23)],
    4: [range(0, 6), range(6, 12), range(12, 18), range(18, 23)],
    5: [range(0, 5), range(5, 10), range(10, 14), range(14, 19), range(19, 23)],
    7: [range(0, 4), range(4, 7), range(7, 10), range(10, 14), range(14, 17),
        range(17, 20), range(20, 23)],
}


@pytest.mark.parametrize("parts", sorted(MNIST_PARTS))
def test_shard_range_matches_mnistiter(parts):
    for p, want in enumerate(MNIST_PARTS[parts]):
        start, end = shard_range(10, parts, p)
        assert list(range(start, end)) == want
        assert shard_indices(10, parts, p).tolist() == want


@pytest.mark.parametrize("n, parts", [(0, 3), (7, 7), (5, 8), (1000, 6), (101, 4)])
def test_parts_cover_everything_once(n, parts):
    got = np.concatenate([shard_indices(n, parts, p) for p in range(parts)])
    assert got.tolist() == list(range(n))
    sizes = [len(shard_indices(n, parts, p)) for p in range(parts)]
    assert max(sizes) - min(sizes) <= 1
    even = [shard_range(n, parts, p, drop_remainder=True) for p in range(parts)]
    assert all(e - s == n // parts for s, e in even)
    assert even[-1][1] == n - n % parts


@pytest.mark.parametrize("parts", sorted(RECORD_PARTS))
def test_record_shard_matches_imagerecorditer(parts):
    offsets = np.concatenate([[0], np.cumsum(RECORD_SIZES)[:-1]])
    total = int(np.sum(RECORD_SIZES))
    for p, want in enumerate(RECORD_PARTS[parts]):
        assert record_shard(offsets, total, parts, p).tolist() == list(want)


def test_record_shard_more_parts_than_records():
    got = [record_shard([0, 8], 16, 5, p).tolist() for p in range(5)]
    assert sum(got, []) == [0, 1] and got[0] == [0]


@pytest.mark.parametrize("num_parts, part_index, message", [
    (0, 0, "num_parts must be > 0"), (2, 2, "part_index (2) must be < num_parts (2)"),
    (2, -1, "part_index must be >= 0"), (2.0, 0, "num_parts must be an int"),
])
def test_bad_arguments(num_parts, part_index, message):
    with pytest.raises(MXNetError, match=message.replace("(", r"\(").replace(")", r"\)")):
        check_shard(num_parts, part_index, "MNISTIter")
    with pytest.raises(MXNetError, match="MNISTIter"):
        shard_range(10, num_parts, part_index, where="MNISTIter")
