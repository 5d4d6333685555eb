"""CSVIter: batches from comma-separated text files."""
import os

import numpy as np

from ..base import MXNetError
from ..operator.params import Bool, Shape, Str
from .batching import BatchCursor
from .mx_data_iter import MXDataIter, iterator_schema

__all__ = ["CSVIter", "read_csv_rows"]


def _files(uri, owner):
    if os.path.isdir(uri):
        files = sorted(os.path.join(uri, f) for f in os.listdir(uri)
                       if os.path.isfile(os.path.join(uri, f)))
        if not files:
            raise MXNetError(f"{owner}: folder {uri!r} holds no files")
        return files
    if not os.path.isfile(uri):
        raise MXNetError(f"{owner}: cannot find any file matching {uri!r}")
    return [uri]


def read_csv_rows(uri, row_size, owner, what):
    """All rows of a CSV file (or of every file in a folder) as a float64 array of
    shape (rows, row_size)."""
    parts = []
    for path in _files(uri, owner):
        try:
            rows = np.loadtxt(path, delimiter=",", dtype=np.float64, ndmin=2)
        except ValueError as err:
            raise MXNetError(f"{owner}: cannot parse {what} file {path!r}: {err}") from None
        if rows.size == 0:
            continue
        if rows.shape[1] != row_size:
            raise MXNetError(f"{owner}: {what} rows in {path!r} have {rows.shape[1]} "
                             f"values but {what}_shape needs {row_size}")
        parts.append(rows)
    if not parts:
        raise MXNetError(f"{owner}: {what} file {uri!r} is empty")
    return np.concatenate(parts) if len(parts) > 1 else parts[0]


class CSVIter(MXDataIter):
    """Iterates over rows of CSV files; each row is one example reshaped to
    ``data_shape``.

    With ``round_batch`` (default) the last batch of an epoch is completed with rows
    from the start, which then count as read: the next epoch (after ``reset``)
    begins after them. With ``round_batch=False`` every epoch starts at the first
    row and the padded rows are reported by ``pad``.

    Parameters
    ----------
    data_csv : str
        CSV file, or a folder whose files are all read.
    data_shape : tuple
        Shape of one example (its size must equal the values per row).
    label_csv : str, default 'NULL'
        Labels CSV; 'NULL' gives zero labels.
    label_shape : tuple, default (1,)
    batch_size : int
    round_batch : bool, default True
    dtype : str, optional
        Parse values as this type (float32 when None; 'int32', 'int64', ...).
    """

    _schema = iterator_schema(
        data_csv=Str(),
        data_shape=Shape(),
        label_csv=Str("NULL"),
        label_shape=Shape((1,)),
        round_batch=Bool(True),
    )

    def _setup(self, p):
        owner = type(self).__name__
        dsize = int(np.prod(p.data_shape))
        data = read_csv_rows(p.data_csv, dsize, owner, "data")
        lsize = int(np.prod(p.label_shape))
        if p.label_csv == "NULL":
            label = np.zeros((len(data), lsize))
        else:
            label = read_csv_rows(p.label_csv, lsize, owner, "label")
            if len(label) != len(data):
                raise MXNetError(f"{owner}: {p.label_csv!r} has {len(label)} rows but "
                                 f"{p.data_csv!r} has {len(data)}")
        dtype = np.dtype(p.dtype or np.float32)
        self._data = data.astype(dtype).reshape((-1,) + p.data_shape)
        lshape = () if p.label_shape == (1,) else p.label_shape
        self._label = label.astype(dtype).reshape((-1,) + lshape)
        self._cursor = BatchCursor(len(data), p.batch_size,
                                   "round" if p.round_batch else "pad")
        bs = p.batch_size
        return (bs,) + p.data_shape, dtype.type, (bs,) + lshape, dtype.type
