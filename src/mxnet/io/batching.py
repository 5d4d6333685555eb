"""Which examples go into each batch, under MXNet's policies for the last, short batch.

``BatchCursor`` walks ``num`` examples in an order chosen per epoch and hands out the
example ids of one batch at a time. The policies for an epoch that does not divide
into whole batches:

- 'discard': the short batch is dropped.
- 'pad': the short batch is completed with examples from the start of the order and
  reports how many it borrowed as ``pad``; the next epoch starts from scratch
  (ImageRecordIter/CSVIter with ``round_batch=False``, ImageIter's 'pad').
- 'round': like 'pad', but the borrowed examples are taken from the next epoch's
  order and count as read: after ``reset`` that epoch continues after them
  (``round_batch=True``, the default of MXNet's C++ iterators).
- 'roll_over': the short batch is held back and starts the next epoch, followed by
  that epoch's examples; its ``pad`` reports how many were held back (ImageIter).
"""
import numpy as np

from .base import IOValueError

__all__ = ["BatchCursor"]

_MODES = ("discard", "pad", "round", "roll_over")


class BatchCursor:
    """Hands out example ids batch by batch.

    Parameters
    ----------
    num : int
        Number of examples.
    batch_size : int
    mode : str
        One of 'discard', 'pad', 'round', 'roll_over'.
    new_order : callable, optional
        Returns the order (a permutation of range(num)) for a new epoch, or None for
        the natural order.
    """

    def __init__(self, num, batch_size, mode, new_order=None):
        if mode not in _MODES:
            raise IOValueError(f"unknown last-batch policy {mode!r}; expected one of "
                               f"{list(_MODES)}")
        if num <= 0:
            raise IOValueError("the data set is empty: there is nothing to iterate over")
        if batch_size <= 0:
            raise IOValueError(f"batch_size must be positive, got {batch_size}")
        self.num, self.batch_size, self.mode = num, batch_size, mode
        self._new_order = new_order
        self._held = None          # roll_over: ids held back for the next epoch
        self._continue = False     # round: the next reset keeps the current position
        self._start_epoch()

    def _order(self):
        order = self._new_order() if self._new_order is not None else None
        return np.arange(self.num) if order is None else np.asarray(order)

    def _start_epoch(self):
        self.order = self._order()
        self.pos = 0
        self.ended = False

    def reset(self):
        """Starts the next epoch."""
        if self._continue:
            self._continue = False
            self.ended = False
        else:
            self._start_epoch()

    def next(self):
        """(ids, pad) of the next batch, or None at the end of the epoch."""
        if self.ended:
            return None
        bs, n = self.batch_size, self.num
        lead = 0
        if self._held is not None:
            held, self._held = self._held, None
            lead = len(held)
            take = np.concatenate([held, self.order[np.arange(bs - lead) % n]])
            self.pos = bs - lead
            return take, lead
        if self.pos >= n:
            self.ended = True
            return None
        ids = self.order[self.pos:self.pos + bs]
        if len(ids) == bs:
            self.pos += bs
            return ids, 0
        short = bs - len(ids)
        self.pos = n
        if self.mode == "discard":
            self.ended = True
            return None
        if self.mode == "roll_over":
            self._held = ids.copy()
            self.ended = True
            return None
        if self.mode == "round":
            self.order = self._order()
            self.pos = min(short, n)
            self._continue = True
            self.ended = True      # this batch closes the epoch
        return np.concatenate([ids, self.order[np.arange(short) % n]]), short
