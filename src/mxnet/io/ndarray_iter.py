"""NDArrayIter: batches over in-memory arrays (NumPy arrays or NDArrays)."""
import numpy as np

from ..backend import array_module
from ..ndarray.ndarray import NDArray, from_data
from .base import DataBatch, DataDesc, DataIter, IOTypeError, IOValueError, as_int_param
from .sharding import shard_range
from ..ndarray import array

__all__ = ["NDArrayIter", "init_data"]

_HANDLES = ("pad", "discard", "roll_over")


def init_data(data, allow_empty, default_name):
    """Normalises iterator input into a name-sorted list of (name, NDArray).

    Accepts an array, a list of arrays (named ``default_name`` when alone, else
    ``_<i>_<default_name>``) or a dict of name -> array. Non-NDArray values are
    converted with ``mx.nd.array`` (so NumPy arrays become float32, as in MXNet).
    """
    if data is None:
        data = []
    if isinstance(data, (np.ndarray, NDArray)):
        data = [data]
    if isinstance(data, list):
        if not allow_empty and not data:
            raise IOValueError(f"NDArrayIter: {default_name} must not be empty")
        if len(data) == 1:
            data = {default_name: data[0]}
        else:
            data = {f"_{i}_{default_name}": d for i, d in enumerate(data)}
    if not isinstance(data, dict):
        raise IOTypeError("Input must be NDArray, numpy.ndarray, a list of them or dict "
                          f"with them as values (got {type(data).__name__})")
    out = {}
    for name, value in data.items():
        if _is_scipy_sparse(value):
            from ..ndarray import sparse
            value = sparse.csr_matrix(value.tocsr())
        if not isinstance(value, NDArray):
            try:
                value = array(value)
            except Exception:
                raise IOTypeError(f"Invalid type '{type(value)}' for {name}, should be "
                                  "NDArray or numpy.ndarray") from None
        if value.ndim == 0 or value.shape[0] == 0:
            raise IOValueError(f"NDArrayIter: {name} has shape {value.shape}; it needs a "
                               "first (batch) axis with at least one example")
        out[name] = value
    return sorted(out.items())


def _is_scipy_sparse(value):
    return type(value).__module__.startswith("scipy.sparse")


def _gather(arr, ids):
    """Rows ``ids`` of an NDArray, as a new NDArray on the same device."""
    if arr._sparse:               # a csr array: its selected rows stay csr
        from ..ndarray.dispatch import invoke_by_name
        return invoke_by_name("take", [arr, array(ids, dtype=np.int64)], {})
    raw = arr._read()
    xp = array_module(arr.context)
    if xp is np:
        return from_data(raw[ids], arr.context)
    with xp.cuda.Device(arr.context.device_id):
        return from_data(raw[xp.asarray(ids)], arr.context)


class NDArrayIter(DataIter):
    """Iterates over NumPy arrays or NDArrays in batches.

    Parameters
    ----------
    data : array, list of arrays, or dict of name -> array
        Input data; the first axis indexes examples.
    label : array, list of arrays, or dict, optional
        Labels, with as many examples as ``data``.
    batch_size : int, default 1
    shuffle : bool, default False
        Shuffle the examples at every reset (using ``numpy.random``).
    last_batch_handle : {'pad', 'discard', 'roll_over'}, default 'pad'
        'pad' completes the last batch with examples from the start (``pad`` says
        how many); 'discard' drops it; 'roll_over' keeps the leftover examples and
        puts them at the start of the next epoch's first batch.
    data_name, label_name : str
        Names used when ``data``/``label`` are not dicts.
    """

    def __init__(self, data, label=None, batch_size=1, shuffle=False,
                 last_batch_handle="pad", data_name="data", label_name="softmax_label",
                 num_parts=1, part_index=0):
        batch_size = as_int_param(batch_size, "NDArrayIter", "batch_size", low=1)
        super().__init__(batch_size)
        if last_batch_handle not in _HANDLES:
            raise IOValueError(f"NDArrayIter: last_batch_handle must be one of "
                               f"{list(_HANDLES)}, got {last_batch_handle!r}")
        self.data = init_data(data, allow_empty=False, default_name=data_name)
        self.label = init_data(label, allow_empty=True, default_name=label_name)
        if last_batch_handle != "discard" and any(
                v._sparse for _, v in self.data + self.label):
            raise NotImplementedError("NDArrayIter: CSRNDArray (or scipy.sparse) data "
                                      "needs last_batch_handle='discard'")
        if num_parts != 1 or part_index != 0:
            # pymxnet extension for distributed training: this worker's contiguous share
            lo, hi = shard_range(self.data[0][1].shape[0], num_parts, part_index,
                                 where="NDArrayIter")
            self.data = [(k, v[lo:hi]) for k, v in self.data]
            self.label = [(k, v[lo:hi]) for k, v in self.label]
        sizes = {name: arr.shape[0] for name, arr in self.data + self.label}
        n = self.data[0][1].shape[0]
        # MXNet counts examples by the first data array; longer arrays are read up to
        # that count (MXNet's tests rely on it), shorter ones cannot fill the batches.
        if any(s < n for s in sizes.values()):
            raise IOValueError(f"NDArrayIter: every data and label array needs at least "
                               f"the {n} examples of the first data array (first axis), "
                               f"got {sizes}")
        if last_batch_handle == "roll_over" and batch_size > n:
            raise IOValueError(f"NDArrayIter: batch_size {batch_size} is larger than the "
                               f"{n} examples; roll_over cannot fill a batch")
        self.shuffle = shuffle
        self.last_batch_handle = last_batch_handle
        self.idx = np.arange(n)
        self.num_data = n - n % batch_size if last_batch_handle == "discard" else n
        self.data_list = [x[1] for x in self.data] + [x[1] for x in self.label]
        self.num_source = len(self.data_list)
        self.cursor = -batch_size
        self._cache_ids = None
        self.reset()

    @property
    def provide_data(self):
        """Names, shapes and dtypes of the data of a batch."""
        return [DataDesc(k, (self.batch_size,) + v.shape[1:], v.dtype)
                for k, v in self.data]

    @property
    def provide_label(self):
        """Names, shapes and dtypes of the labels of a batch."""
        return [DataDesc(k, (self.batch_size,) + v.shape[1:], v.dtype)
                for k, v in self.label]

    def hard_reset(self):
        """Starts over, dropping any examples held back by 'roll_over'."""
        if self.shuffle:
            np.random.shuffle(self.idx)
        self._cache_ids = None
        self.cursor = -self.batch_size

    def reset(self):
        """Starts the next epoch (reshuffling when ``shuffle``)."""
        bs, n = self.batch_size, self.num_data
        if self.last_batch_handle == "roll_over" and n - bs < self.cursor < n:
            self._cache_ids = self.idx[self.cursor:n].copy()
            self.cursor = self.cursor - n - bs
        else:
            self._cache_ids = None
            self.cursor = -bs
        if self.shuffle:
            np.random.shuffle(self.idx)

    def iter_next(self):
        self.cursor += self.batch_size
        return self.cursor < self.num_data

    def next(self):
        if not self.iter_next():
            raise StopIteration
        if (self.last_batch_handle == "roll_over"
                and self.cursor + self.batch_size > self.num_data):
            raise StopIteration  # the leftover starts the next epoch (see reset)
        return DataBatch(data=self.getdata(), label=self.getlabel(), pad=self.getpad(),
                         index=None)

    def _batch_ids(self):
        """The example ids of the current batch, or a slice when they are contiguous."""
        c, bs, n = self.cursor, self.batch_size, self.num_data
        if c < 0:
            if self._cache_ids is None:
                raise IOValueError("NDArrayIter: no current batch (call iter_next first)")
            return np.concatenate([self._cache_ids, self.idx[:c + bs]])
        if c >= n:
            raise IOValueError("NDArrayIter: no current batch (the epoch has ended)")
        if c + bs > n:
            if self.last_batch_handle == "roll_over":
                return self.idx[c:n]
            return self.idx[np.arange(c, c + bs) % n]
        if not self.shuffle:
            return slice(c, c + bs)
        return self.idx[c:c + bs]

    def _batchify(self, source):
        ids = self._batch_ids()
        if isinstance(ids, slice):
            return [arr[ids] for _, arr in source]
        return [_gather(arr, ids) for _, arr in source]

    def getdata(self):
        return self._batchify(self.data)

    def getlabel(self):
        return self._batchify(self.label)

    def getpad(self):
        c, bs, n = self.cursor, self.batch_size, self.num_data
        if self.last_batch_handle == "pad" and c + bs > n:
            return c + bs - n
        if self.last_batch_handle == "roll_over" and -bs < c < 0:
            return -c
        return 0
