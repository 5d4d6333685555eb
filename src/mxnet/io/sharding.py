"""Which part of a data set a worker reads: the ``num_parts``/``part_index`` arguments
of MXNet's data iterators, for distributed training (typically
``num_parts=kv.num_workers, part_index=kv.rank``).

Three rules, one per kind of source, each as MXNet 1.9.1 applies it:

* ``shard_range`` — contiguous blocks of samples, ``[p*n//P, (p+1)*n//P)``; part sizes
  differ by at most one (MNISTIter, and NDArrayIter/CSVIter in pymxnet).
  ``drop_remainder=True`` gives every part ``n//P`` samples and drops the tail
  (mx.image.ImageIter; also what keeps synchronous workers in step).
* ``record_shard`` — RecordIO files split by bytes (ImageRecordIter and the other
  record iterators, through dmlc's InputSplit): the file is cut into ``P`` equal byte
  ranges (rounded up to 4 bytes) and a part reads the records that *start* in its
  range.
* ``shard_indices`` — the sample indices of a part, as an array, for iterators that
  index (the DataLoader samplers in ``gluon.data.sharded_sampler`` build on it).
"""
import numpy as np

from ..base import MXNetError

__all__ = ["check_shard", "shard_range", "shard_indices", "record_shard"]


def check_shard(num_parts, part_index, where="iterator"):
    """Validate num_parts/part_index (MXNetError naming the argument)."""
    for name, val in (("num_parts", num_parts), ("part_index", part_index)):
        if isinstance(val, bool) or not isinstance(val, (int, np.integer)):
            raise MXNetError(f"{where}: {name} must be an int, got {val!r}")
    if num_parts <= 0:
        raise MXNetError(f"{where}: num_parts must be > 0, got {num_parts}")
    if part_index < 0:
        raise MXNetError(f"{where}: part_index must be >= 0, got {part_index}")
    if part_index >= num_parts:
        raise MXNetError(f"{where}: part_index ({part_index}) must be < num_parts "
                         f"({num_parts})")


def shard_range(n, num_parts=1, part_index=0, drop_remainder=False, where="iterator"):
    """(start, end): the samples ``[start, end)`` of part ``part_index`` of ``n``."""
    check_shard(num_parts, part_index, where)
    if n < 0:
        raise MXNetError(f"{where}: the number of samples must be >= 0, got {n}")
    if drop_remainder:
        size = n // num_parts
        return part_index * size, (part_index + 1) * size
    return part_index * n // num_parts, (part_index + 1) * n // num_parts


def shard_indices(n, num_parts=1, part_index=0, drop_remainder=False, where="iterator"):
    """The sample indices of a part, as an int64 array (see shard_range)."""
    start, end = shard_range(n, num_parts, part_index, drop_remainder, where)
    return np.arange(start, end, dtype=np.int64)


def record_shard(offsets, total_bytes, num_parts=1, part_index=0, where="iterator"):
    """The indices of the records of a RecordIO file that part ``part_index`` reads.

    ``offsets`` are the byte offsets where the file's records start (ascending);
    ``total_bytes`` is the file size. The byte range of a part is ``[p*step,
    (p+1)*step)`` with ``step = ceil(total_bytes / num_parts)`` rounded up to a multiple
    of 4, and it owns the records that start inside it.
    """
    check_shard(num_parts, part_index, where)
    offsets = np.asarray(offsets, dtype=np.int64)
    step = -(-int(total_bytes) // num_parts)
    step = -(-step // 4) * 4
    begin = min(step * part_index, int(total_bytes))
    end = min(step * (part_index + 1), int(total_bytes))
    lo, hi = np.searchsorted(offsets, [begin, end], side="left")
    return np.arange(lo, hi, dtype=np.int64)
