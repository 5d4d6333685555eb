"""mx.io iterators of MXNet that pymxnet does not implement: they raise at creation."""
from .mx_data_iter import MXDataIter

__all__ = ["ImageRecordInt8Iter", "ImageDetRecordIter"]


class ImageRecordInt8Iter(MXDataIter):
    """Not implemented in pymxnet (MXNet's int8-quantised image iterator)."""

    def __init__(self, *args, **kwargs):
        raise NotImplementedError("mx.io.ImageRecordInt8Iter is not implemented in "
                                  "pymxnet; use ImageRecordIter")


class ImageDetRecordIter(MXDataIter):
    """Not implemented in pymxnet (MXNet's object-detection record iterator)."""

    def __init__(self, *args, **kwargs):
        raise NotImplementedError("mx.io.ImageDetRecordIter is not implemented in "
                                  "pymxnet")
