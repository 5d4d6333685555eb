"""MNISTIter: batches from MNIST-format IDX files (plain or .gz)."""
import logging

import numpy as np

from ..base import MXNetError
from ..operator.params import Bool, Int, Str
from .batching import BatchCursor
from .idx import read_idx_file
from .mx_data_iter import MXDataIter, iterator_schema

__all__ = ["MNISTIter"]

_log = logging.getLogger("mxnet.io")


class MNISTIter(MXDataIter):
    """Iterates over MNIST-format data (images and labels in IDX files).

    Pixels are scaled to [0, 1) by dividing by 256, as MXNet does; labels are
    float32. The last incomplete batch of an epoch is dropped. With ``shuffle`` the
    order is drawn once from ``seed`` and kept for every epoch.

    Parameters
    ----------
    image : str, default './train-images-idx3-ubyte'
        Images file (a '.gz' next to it is used when the plain file is missing).
    label : str, default './train-labels-idx1-ubyte'
        Labels file.
    batch_size : int, default 128
    shuffle : bool, default True
    flat : bool, default False
        Output (batch, rows*cols) instead of (batch, 1, rows, cols).
    seed : int, default 0
    silent : bool, default False
        Do not log the data summary.
    num_parts, part_index : int
        Read only the ``part_index``-th of ``num_parts`` contiguous parts.
    dtype : str, optional
        Output data type (float32 when None).
    """

    _schema = iterator_schema(
        image=Str("./train-images-idx3-ubyte"),
        label=Str("./train-labels-idx1-ubyte"),
        batch_size=Int(128, low=1),
        shuffle=Bool(True),
        flat=Bool(False),
        seed=Int(0),
        silent=Bool(False),
        num_parts=Int(1, low=1),
        part_index=Int(0, low=0),
    )

    def _setup(self, p):
        images = read_idx_file(p.image)
        labels = read_idx_file(p.label)
        if images.ndim != 3:
            raise MXNetError(f"MNISTIter: {p.image!r} must hold a (N, rows, cols) array, "
                             f"got shape {images.shape}")
        if labels.ndim != 1 or labels.shape[0] != images.shape[0]:
            raise MXNetError(f"MNISTIter: {p.label!r} holds labels of shape {labels.shape} "
                             f"for {images.shape[0]} images in {p.image!r}")
        if p.part_index >= p.num_parts:
            raise MXNetError(f"MNISTIter: part_index {p.part_index} must be < num_parts "
                             f"{p.num_parts}")
        n = images.shape[0]
        lo, hi = n * p.part_index // p.num_parts, n * (p.part_index + 1) // p.num_parts
        self._images, self._labels = images[lo:hi], labels[lo:hi].astype(np.float32)
        self._first = lo
        order = None
        if p.shuffle:
            order = np.random.RandomState(p.seed).permutation(hi - lo)
        self._cursor = BatchCursor(hi - lo, p.batch_size, "discard",
                                   None if order is None else (lambda: order))
        rows, cols = images.shape[1:]
        self._shape = (rows * cols,) if p.flat else (1, rows, cols)
        self._dtype = np.dtype(p.dtype or np.float32)
        if not p.silent:
            _log.info("MNISTIter: load %d images, shuffle=%d, shape=%s", hi - lo,
                      p.shuffle, (p.batch_size,) + self._shape)
        return ((p.batch_size,) + self._shape, self._dtype.type, (p.batch_size,),
                np.float32)

    def _next_batch(self):
        step = self._cursor.next()
        if step is None:
            return None
        ids, pad = step
        data = self._images[ids].astype(np.float32)
        data *= np.float32(1.0 / 256)
        data = data.reshape((len(ids),) + self._shape).astype(self._dtype, copy=False)
        return data, self._labels[ids], pad, (ids + self._first).astype(np.uint64)
