"""A gluon DataLoader as a DataIter (MXNet 1.9.1's ``mx.contrib.io``), so data
prepared with ``gluon.data`` can train a symbolic Module."""
import numpy as np

from .. import ndarray as nd
from ..base import MXNetError
from ..io import DataDesc, DataIter

__all__ = ["DataLoaderIter"]


def _as_nd(x, what):
    """x (an NDArray, mx.np array or NumPy array) as an NDArray."""
    if isinstance(x, nd.NDArray):
        return x
    if hasattr(x, "as_nd_ndarray"):                 # NumPy mode batches
        return x.as_nd_ndarray()
    if isinstance(x, np.ndarray):
        return nd.array(x, dtype=x.dtype)
    raise MXNetError(f"DataLoaderIter: the DataLoader's {what} must be an array, got "
                     f"{type(x).__name__}")


def _pair(batch):
    """(data, label) of one DataLoader batch."""
    if not isinstance(batch, (list, tuple)) or len(batch) != 2:
        raise MXNetError("DataLoaderIter: the DataLoader must yield (data, label) pairs, "
                         f"got {type(batch).__name__}"
                         + (f" of {len(batch)} items" if isinstance(batch, (list, tuple))
                            else ""))
    return _as_nd(batch[0], "data"), _as_nd(batch[1], "label")


class DataLoaderIter(DataIter):
    """A DataIter over the batches of a gluon ``DataLoader``, for Module.fit and the
    other DataIter consumers.

    The batch size is the first batch's. A shorter final batch (``last_batch='keep'``)
    is padded with zeros to that size and ``pad`` says how many examples are
    padding, as NDArrayIter's last batch does.

    Parameters
    ----------
    loader : mxnet.gluon.data.DataLoader
        Data loader yielding (data, label) batches.
    data_name : str, default 'data'
        Name of the data in ``provide_data``.
    label_name : str, default 'softmax_label'
        Name of the label in ``provide_label``.
    dtype : str, default 'float32'
        The data and label are cast to this type.

    Examples
    --------
    >>> dataset = gluon.data.ArrayDataset(np.zeros((10, 3)), np.arange(10))
    >>> it = DataLoaderIter(gluon.data.DataLoader(dataset, batch_size=4))
    >>> it.provide_data
    [DataDesc[data,(4, 3),float32,NCHW]]
    >>> [batch.pad for batch in it]
    [0, 0, 2]
    """

    def __init__(self, loader, data_name="data", label_name="softmax_label",
                 dtype="float32"):
        super().__init__()
        self._loader = loader
        self.dtype = dtype
        try:
            data, label = _pair(next(iter(loader)))
        except StopIteration:
            raise MXNetError("DataLoaderIter: the DataLoader yields no batch") from None
        self.batch_size = data.shape[0]
        self.provide_data = [DataDesc(data_name, data.shape, dtype)]
        self.provide_label = [DataDesc(label_name, label.shape, dtype)]
        self._current_batch = None
        self._iter = None
        self.reset()

    def reset(self):
        self._iter = iter(self._loader)

    def iter_next(self):
        try:
            self._current_batch = _pair(next(self._iter))
        except StopIteration:
            self._current_batch = None
            return False
        size = self._current_batch[0].shape[0]
        if size > self.batch_size:
            raise MXNetError(f"DataLoaderIter: a batch of {size} examples is larger than "
                             f"the first batch ({self.batch_size})")
        return True

    def _padded(self, arr):
        arr = arr.astype(self.dtype)
        pad = self.getpad()
        if not pad:
            return arr
        # zeros rather than uninitialised memory: the padding is deterministic
        out = nd.zeros((self.batch_size,) + tuple(arr.shape[1:]), ctx=arr.context,
                       dtype=self.dtype)
        out[:arr.shape[0]] = arr
        return out

    def getdata(self):
        return [self._padded(self._current_batch[0])]

    def getlabel(self):
        return [self._padded(self._current_batch[1])]

    def getpad(self):
        return self.batch_size - self._current_batch[0].shape[0]

    def getindex(self):
        return None
