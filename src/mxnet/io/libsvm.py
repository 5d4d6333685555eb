"""LibSVMIter: batches from LibSVM-format text files (zero-based feature indices).

Data batches are CSRNDArrays (as are the labels when they come from a separate LibSVM
file); the file is parsed once into a scipy csr matrix, never densified.
"""
import numpy as np

from ..base import MXNetError
from ..operator.params import Bool, Int, Shape, Str
from .batching import BatchCursor
from .csv import _files
from .mx_data_iter import MXDataIter, iterator_schema

__all__ = ["LibSVMIter", "read_libsvm"]


def read_libsvm(uri, dim, owner):
    """(labels float64 (n,), scipy csr_matrix float32 (n, dim)) of a LibSVM file or
    folder."""
    labels, counts, pairs = [], [], []
    for path in _files(uri, owner):
        with open(path) as f:
            for lineno, line in enumerate(f, 1):
                head, _, feats = line.strip().partition(" ")
                if not head:
                    continue
                try:
                    labels.append(float(head))
                except ValueError:
                    raise MXNetError(f"{owner}: bad label {head!r} on line {lineno} of "
                                     f"{path!r}") from None
                counts.append(feats.count(":"))
                pairs.append(feats)
    if not labels:
        raise MXNetError(f"{owner}: {uri!r} holds no examples")
    # All index:value pairs of the file parsed at once rather than token by token.
    tokens = " ".join(pairs).replace(":", " ").split()
    try:
        flat = np.array(tokens, dtype=np.float64).reshape(-1, 2)
    except ValueError as err:
        raise MXNetError(f"{owner}: cannot parse {uri!r} as LibSVM: {err}") from None
    cols = flat[:, 0].astype(np.int64)
    if cols.size and (cols.min() < 0 or cols.max() >= dim):
        raise MXNetError(f"{owner}: feature index {int(cols.max())} in {uri!r} is outside "
                         f"data_shape ({dim},) (indices are zero-based)")
    import scipy.sparse as sps
    indptr = np.zeros(len(labels) + 1, np.int64)
    np.cumsum(counts, out=indptr[1:])
    rows = sps.csr_matrix((flat[:, 1].astype(np.float32), cols, indptr),
                          shape=(len(labels), dim))
    rows.sum_duplicates()
    rows.sort_indices()
    return np.asarray(labels), rows


class LibSVMIter(MXDataIter):
    """Iterates over a LibSVM-format file: ``label index:value ...`` per line with
    zero-based, ascending indices. Data batches are CSRNDArrays.

    Parameters
    ----------
    data_libsvm : str
        File or folder.
    data_shape : tuple
        (num_features,).
    label_libsvm : str, default 'NULL'
        Separate label file (its index:value pairs form the label rows); 'NULL' uses
        the first column of ``data_libsvm``.
    label_shape : tuple, default (1,)
    batch_size : int
    round_batch : bool, default True
    num_parts, part_index : int
    """

    _schema = iterator_schema(
        data_libsvm=Str(),
        data_shape=Shape(),
        label_libsvm=Str("NULL"),
        label_shape=Shape((1,)),
        num_parts=Int(1, low=1),
        part_index=Int(0, low=0),
        round_batch=Bool(True),
    )

    def _setup(self, p):
        owner = type(self).__name__
        if len(p.data_shape) != 1:
            raise MXNetError(f"{owner}: data_shape must be 1-D, got {p.data_shape}")
        labels, data = read_libsvm(p.data_libsvm, p.data_shape[0], owner)
        lshape = () if p.label_shape == (1,) else p.label_shape
        if p.label_libsvm != "NULL":
            if len(p.label_shape) != 1:
                raise MXNetError(f"{owner}: label_shape must be 1-D, got {p.label_shape}")
            _, label = read_libsvm(p.label_libsvm, p.label_shape[0], owner)
            if label.shape[0] != data.shape[0]:
                raise MXNetError(f"{owner}: {p.label_libsvm!r} has {label.shape[0]} rows, "
                                 f"{p.data_libsvm!r} has {data.shape[0]}")
            label = label.reshape((-1,) + lshape)
        else:
            label = labels.astype(np.float32).reshape((-1,) + lshape)
        if p.part_index >= p.num_parts:
            raise MXNetError(f"{owner}: part_index {p.part_index} must be < num_parts "
                             f"{p.num_parts}")
        n = data.shape[0]
        lo, hi = n * p.part_index // p.num_parts, n * (p.part_index + 1) // p.num_parts
        dtype = np.dtype(p.dtype or np.float32)
        self._data = data[lo:hi].astype(dtype, copy=False)
        self._label = label[lo:hi]
        self._cursor = BatchCursor(hi - lo, p.batch_size,
                                   "round" if p.round_batch else "pad")
        bs = p.batch_size
        return (bs,) + p.data_shape, dtype.type, (bs,) + lshape, np.float32

    def _next_batch(self):
        step = self._cursor.next()
        if step is None:
            return None
        ids, pad = step
        label = self._label[ids]
        if not isinstance(label, np.ndarray):
            label = _csr_nd(label)
        return _csr_nd(self._data[ids]), label, pad, ids.astype(np.uint64)


def _csr_nd(m):
    """A CSRNDArray over a scipy csr matrix's arrays."""
    from ..ndarray.sparse import _wrap
    from ..context import cpu
    from ..operator import sparse_values as sv
    return _wrap(sv.CSR(m.data, m.indices.astype(np.int64), m.indptr.astype(np.int64),
                        m.shape), cpu())
