"""``mxnet.io.io``: the module MXNet 1.9.1 defines its iterators in; older scripts
import them from here (``from mxnet.io.io import DataIter``)."""
from . import (DataDesc, DataBatch, DataIter, ResizeIter, PrefetchingIter,  # noqa: F401
               NDArrayIter, MXDataIter, CSVIter, ImageDetRecordIter, ImageRecordIter_v1,
               ImageRecordUInt8Iter_v1, ImageRecordIter, ImageRecordUInt8Iter,
               ImageRecordInt8Iter, LibSVMIter, MNISTIter)

# MXNet 1.9.1 defines these classes in this module, and its pickles name them so
# (a DataBatch or DataDesc inside a pickle): they pickle under this name here too, so
# that such pickles load both in pymxnet and in MXNet.
for _cls in (DataDesc, DataBatch, DataIter, ResizeIter, PrefetchingIter, NDArrayIter,
             MXDataIter):
    _cls.__module__ = __name__
del _cls
