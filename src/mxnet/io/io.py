"""``mxnet.io.io``: the module MXNet 1.9.1 defines its iterators in; older scripts
import them from here (``from mxnet.io.io import DataIter``)."""
from . import (DataDesc, DataBatch, DataIter, ResizeIter, PrefetchingIter,  # noqa: F401
               NDArrayIter, MXDataIter, CSVIter, ImageDetRecordIter, ImageRecordIter_v1,
               ImageRecordUInt8Iter_v1, ImageRecordIter, ImageRecordUInt8Iter,
               ImageRecordInt8Iter, LibSVMIter, MNISTIter)
from ..base import pickled_as as _pickled_as

# MXNet 1.9.1 defines these classes in this module (a DataBatch or DataDesc inside a
# pickle names it)
_pickled_as(__name__, (DataDesc, DataBatch, DataIter, ResizeIter, PrefetchingIter,
                       NDArrayIter, MXDataIter))
