"""mx.io: data iterators (DataIter, NDArrayIter, MNISTIter, CSVIter, ImageRecordIter,
PrefetchingIter, ResizeIter, ...) and the DataDesc/DataBatch they produce."""
from .base import DataDesc, DataBatch, DataIter  # noqa: F401
from . import batching, record_file  # noqa: F401  (before image_record: see mxnet.image)
from .ndarray_iter import NDArrayIter  # noqa: F401
from .resize import ResizeIter  # noqa: F401
from .prefetch import PrefetchingIter  # noqa: F401
from .mx_data_iter import MXDataIter  # noqa: F401
from .mnist import MNISTIter  # noqa: F401
from .csv import CSVIter  # noqa: F401
from .libsvm import LibSVMIter  # noqa: F401
from .image_record import (ImageRecordIter, ImageRecordUInt8Iter,  # noqa: F401
                           ImageRecordIter_v1, ImageRecordUInt8Iter_v1)
from .unsupported import ImageRecordInt8Iter, ImageDetRecordIter  # noqa: F401
from . import io  # noqa: F401,E402  (MXNet's module of the classes above; names their pickles)
