"""ResizeIter: gives an iterator's epochs a fixed number of batches."""
from ..base import MXNetError
from .base import _CurrentBatchIter

__all__ = ["ResizeIter"]


class ResizeIter(_CurrentBatchIter):
    """Makes an epoch exactly ``size`` batches long: a shorter inner iterator is reset
    and continued, a longer one is cut.

    Parameters
    ----------
    data_iter : DataIter
    size : int
        Batches per epoch.
    reset_internal : bool, default True
        Reset the inner iterator when this one is reset (otherwise the next epoch
        continues where the inner iterator stopped).
    """

    def __init__(self, data_iter, size, reset_internal=True):
        super().__init__()
        self.data_iter = data_iter
        self.size = size
        self.reset_internal = reset_internal
        self.cur = 0
        self.current_batch = None
        self.provide_data = data_iter.provide_data
        self.provide_label = data_iter.provide_label
        self.batch_size = data_iter.batch_size
        if hasattr(data_iter, "default_bucket_key"):
            self.default_bucket_key = data_iter.default_bucket_key

    def reset(self):
        self.cur = 0
        if self.reset_internal:
            self.data_iter.reset()

    def iter_next(self):
        if self.cur == self.size:
            return False
        try:
            self.current_batch = self.data_iter.next()
        except StopIteration:
            self.data_iter.reset()
            try:
                self.current_batch = self.data_iter.next()
            except StopIteration:
                raise MXNetError("ResizeIter: the inner iterator yields no batch even "
                                 "after reset") from None
        self.cur += 1
        return True
