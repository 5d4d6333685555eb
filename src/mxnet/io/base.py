"""The data iterator protocol: DataDesc, DataBatch, DataIter (mx.io's base classes)."""
from collections import namedtuple

import numpy as np

from ..base import MXNetError, mx_real_t

__all__ = ["DataDesc", "DataBatch", "DataIter", "IOTypeError", "IOValueError"]


class IOTypeError(MXNetError, TypeError):
    """Wrong type of input to a data iterator (an MXNetError that is also a TypeError,
    the type MXNet raised)."""


class IOValueError(MXNetError, ValueError):
    """Bad value given to a data iterator (also a ValueError)."""


class DataDesc(namedtuple("DataDesc", ["name", "shape"])):
    """Name, shape, dtype and layout of one input or label of a data iterator.

    A DataDesc is a (name, shape) tuple with ``dtype`` and ``layout`` attributes, so
    code that unpacks ``provide_data`` entries as pairs keeps working.

    Parameters
    ----------
    name : str
    shape : tuple of int
    dtype : numpy type, default float32
    layout : str, default 'NCHW'
        Axis letters; 'N' marks the batch axis.
    """

    def __new__(cls, name, shape, dtype=mx_real_t, layout="NCHW"):
        desc = super().__new__(cls, name, shape)
        desc.dtype = dtype
        desc.layout = layout
        return desc

    def __getnewargs__(self):
        return (self.name, self.shape, self.dtype, self.layout)

    def __repr__(self):
        return f"DataDesc[{self.name},{self.shape},{self.dtype},{self.layout}]"

    @staticmethod
    def get_batch_axis(layout):
        """The index of 'N' in ``layout`` (0 when layout is None; -1 when absent)."""
        if layout is None:
            return 0
        return layout.find("N")

    @staticmethod
    def get_list(shapes, types):
        """DataDescs from a list of (name, shape) and an optional list of
        (name, dtype)."""
        if types is not None:
            type_of = dict(types)
            return [DataDesc(name, shape, type_of[name]) for name, shape in shapes]
        return [DataDesc(name, shape) for name, shape in shapes]


class DataBatch:
    """One batch from a data iterator.

    Parameters
    ----------
    data : list of NDArray
    label : list of NDArray, optional
    pad : int, optional
        How many trailing examples are padding (filled from elsewhere to complete
        the last batch of an epoch).
    index : numpy array, optional
        Indices of the examples in the batch.
    bucket_key : optional
        Bucket key, for bucketing modules.
    provide_data, provide_label : list of DataDesc, optional
    """

    def __init__(self, data, label=None, pad=None, index=None, bucket_key=None,
                 provide_data=None, provide_label=None):
        if data is not None and not isinstance(data, (list, tuple)):
            raise IOTypeError(f"DataBatch: data must be a list of NDArray, got "
                              f"{type(data).__name__}")
        if label is not None and not isinstance(label, (list, tuple)):
            raise IOTypeError(f"DataBatch: label must be a list of NDArray, got "
                              f"{type(label).__name__}")
        self.data = data
        self.label = label
        self.pad = pad
        self.index = index
        self.bucket_key = bucket_key
        self.provide_data = provide_data
        self.provide_label = provide_label

    def __str__(self):
        data_shapes = [d.shape for d in self.data]
        label_shapes = None if self.label is None else [l.shape for l in self.label]
        return (f"{self.__class__.__name__}: data shapes: {data_shapes} "
                f"label shapes: {label_shapes}")


class DataIter:
    """Base class of data iterators.

    Subclasses implement ``reset`` and ``iter_next`` plus ``getdata``/``getlabel``
    (and ``getpad``/``getindex`` when they pad or know indices), or override ``next``
    directly; they also provide ``provide_data`` and ``provide_label``. Iteration
    (``for batch in it``) and ``next()`` come from here.
    """

    def __init__(self, batch_size=0):
        self.batch_size = batch_size

    def __iter__(self):
        return self

    def reset(self):
        """Goes back to the first batch."""

    def next(self):
        """The next DataBatch; raises StopIteration at the end of the epoch."""
        if self.iter_next():
            return DataBatch(data=self.getdata(), label=self.getlabel(),
                             pad=self.getpad(), index=self.getindex())
        raise StopIteration

    def __next__(self):
        return self.next()

    def iter_next(self):
        """Moves to the next batch; False at the end of the epoch."""
        raise NotImplementedError(f"{type(self).__name__} does not implement iter_next")

    def getdata(self):
        """The data of the current batch (list of NDArray)."""
        raise NotImplementedError(f"{type(self).__name__} does not implement getdata")

    def getlabel(self):
        """The label of the current batch (list of NDArray)."""
        raise NotImplementedError(f"{type(self).__name__} does not implement getlabel")

    def getindex(self):
        """Indices of the current batch's examples, or None."""
        return None

    def getpad(self):
        """How many examples of the current batch are padding."""
        return 0


class _CurrentBatchIter(DataIter):
    """A DataIter whose ``iter_next`` keeps the whole current DataBatch in
    ``current_batch`` (iterators over other iterators): the getters read it."""

    current_batch = None

    def getdata(self):
        return self.current_batch.data

    def getlabel(self):
        return self.current_batch.label

    def getindex(self):
        return self.current_batch.index

    def getpad(self):
        return self.current_batch.pad


def as_int_param(value, owner, name, low=None):
    """An integer iterator parameter, checked (MXNetError naming owner and name)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        if isinstance(value, (float, np.floating)) and float(value).is_integer():
            value = int(value)
        else:
            raise IOValueError(f"{owner}: {name} must be an integer, got {value!r}")
    value = int(value)
    if low is not None and value < low:
        raise IOValueError(f"{owner}: {name} must be >= {low}, got {value}")
    return value
