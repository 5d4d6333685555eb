"""MXDataIter: the base of mx.io's built-in iterators (MNISTIter, CSVIter,
ImageRecordIter, ...), which MXNet wrote in C++ and pymxnet writes in Python.

They share one shape: keyword parameters parsed like dmlc parameters (unknown keys
are accepted and ignored, as MXNet's iterators do), one data and one label output
named by ``data_name``/``label_name``, ``getdata()``/``getlabel()`` returning single
NDArrays, and batches laid out by a ``BatchCursor``.
"""
import logging

import numpy as np

from ..base import MXNetError
from ..context import cpu
from ..ndarray.ndarray import from_data
from ..operator.params import DType, Enum, Int, Schema
from .base import DataBatch, DataDesc, DataIter

__all__ = ["MXDataIter", "iterator_schema", "to_nd"]

_log = logging.getLogger("mxnet.io")

# Parameters every built-in iterator takes (dmlc's PrefetcherParam and batch params).
_COMMON = dict(
    batch_size=Int(low=1),
    prefetch_buffer=Int(4, low=0),
    ctx=Enum(("cpu", "gpu"), "gpu"),
    dtype=DType(None),
)


def iterator_schema(**fields):
    """A parameter Schema with the common iterator fields plus ``fields``."""
    merged = dict(_COMMON)
    merged.update(fields)
    return Schema(**merged)


def to_nd(array):
    """Wraps a fresh host numpy array as a CPU NDArray without copying (an NDArray,
    e.g. a sparse batch, is passed through)."""
    if hasattr(array, "_chunk"):
        return array
    return from_data(np.ascontiguousarray(array), cpu())


class MXDataIter(DataIter):
    """Base class of the built-in (C++ in MXNet) data iterators.

    Subclasses set ``_schema`` and implement ``_setup(params)`` (load, and return
    (data shape, data dtype, label shape, label dtype) of a batch), ``_next_batch()``
    (returning (data, label, pad, index) numpy arrays, or None at the epoch's end) and
    ``_reset()``. For a data set held in memory, ``_setup`` may instead set
    ``self._data``, ``self._label`` (one row per example) and ``self._cursor`` (a
    BatchCursor over them), and the defaults of the other two serve.
    """

    _schema = iterator_schema()

    def __init__(self, data_name="data", label_name="softmax_label", **kwargs):
        name = type(self).__name__
        known = {k: v for k, v in kwargs.items() if k in self._schema}
        ignored = sorted(set(kwargs) - set(known))
        if ignored:
            _log.debug("%s: ignoring unknown parameters %s", name, ignored)
        params = self._schema.parse(name, known)
        super().__init__(params.batch_size)
        self.params = params
        dshape, dtype, lshape, ltype = self._setup(params)
        self.provide_data = [DataDesc(data_name, dshape, dtype)]
        self.provide_label = [DataDesc(label_name, lshape, ltype)]
        self._batch = None

    # --- subclass hooks -----------------------------------------------------------
    def _setup(self, params):
        raise NotImplementedError

    def _next_batch(self):
        step = self._cursor.next()
        if step is None:
            return None
        ids, pad = step
        return self._data[ids], self._label[ids], pad, ids.astype(np.uint64)

    def _reset(self):
        self._cursor.reset()

    # --- protocol ---------------------------------------------------------------------
    def reset(self):
        self._batch = None
        self._reset()

    def iter_next(self):
        out = self._next_batch()
        if out is None:
            self._batch = None
            return False
        data, label, pad, index = out
        self._batch = (to_nd(data), to_nd(label), int(pad), index)
        return True

    def next(self):
        if self.iter_next():
            return DataBatch(data=[self.getdata()], label=[self.getlabel()],
                             pad=self.getpad(), index=self.getindex())
        raise StopIteration

    def _current(self, what):
        if self._batch is None:
            raise MXNetError(f"{type(self).__name__}.{what}: no current batch (call "
                             "iter_next() or next() first, and not after the end)")
        return self._batch

    def getdata(self):
        return self._current("getdata")[0]

    def getlabel(self):
        return self._current("getlabel")[1]

    def getpad(self):
        return self._current("getpad")[2]

    def getindex(self):
        return self._current("getindex")[3]
