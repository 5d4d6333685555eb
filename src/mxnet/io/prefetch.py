"""PrefetchingIter: reads the next batch of one or more iterators in background
threads while the current one is used."""
import queue
import threading

from ..base import MXNetError
from .base import DataBatch, DataDesc, _CurrentBatchIter

__all__ = ["PrefetchingIter"]

_NEXT, _STOP = "next", "stop"


def _worker(it, requests, results):
    # Holds only the sub-iterator and its queues (never the PrefetchingIter), so an
    # abandoned PrefetchingIter can be collected and its __del__ can stop us.
    while requests.get() == _NEXT:
        try:
            results.put(("ok", it.next()))
        except StopIteration:
            results.put(("end", None))
        except BaseException as err:  # surfaced in the consumer's thread
            results.put(("error", err))


def _renamed(descs, renames):
    if renames is None:
        return list(descs)
    out = []
    for d in descs:
        if isinstance(d, DataDesc):
            out.append(DataDesc(renames.get(d.name, d.name), d.shape, d.dtype, d.layout))
        else:
            name, shape = d[0], d[1]
            out.append(DataDesc(renames.get(name, name), shape))
    return out


class PrefetchingIter(_CurrentBatchIter):
    """Prefetches batches from one or more iterators in background threads.

    With several iterators, each batch joins their data and labels (in order); they
    must yield the same number of batches with equal ``pad``.

    Parameters
    ----------
    iters : DataIter or list of DataIter
    rename_data : list of dict, optional
        Per iterator, a mapping from its data names to new names.
    rename_label : list of dict, optional
        Per iterator, a mapping from its label names to new names.
    """

    def __init__(self, iters, rename_data=None, rename_label=None):
        super().__init__()
        if not isinstance(iters, (list, tuple)):
            iters = [iters]
        if not iters:
            raise MXNetError("PrefetchingIter: needs at least one iterator")
        self.iters = list(iters)
        self.n_iter = len(self.iters)
        for what, renames in (("rename_data", rename_data), ("rename_label", rename_label)):
            if renames is not None and len(renames) != self.n_iter:
                raise MXNetError(f"PrefetchingIter: {what} needs one dict per iterator "
                                 f"({self.n_iter}), got {len(renames)}")
        self.rename_data = rename_data
        self.rename_label = rename_label
        self.batch_size = self.provide_data[0][1][0]
        self.current_batch = None
        self._requests = [queue.Queue() for _ in self.iters]
        self._results = [queue.Queue() for _ in self.iters]
        self._pending = [False] * self.n_iter
        self._threads = []
        for it, req, res in zip(self.iters, self._requests, self._results):
            t = threading.Thread(target=_worker, args=(it, req, res), daemon=True,
                                 name="PrefetchingIter")
            t.start()
            self._threads.append(t)
        self._request_all()

    @property
    def provide_data(self):
        renames = self.rename_data or [None] * self.n_iter
        return sum((_renamed(it.provide_data, r) for it, r in zip(self.iters, renames)),
                   [])

    @property
    def provide_label(self):
        renames = self.rename_label or [None] * self.n_iter
        return sum((_renamed(it.provide_label, r) for it, r in zip(self.iters, renames)),
                   [])

    def _request_all(self):
        for i, req in enumerate(self._requests):
            if not self._pending[i]:
                req.put(_NEXT)
                self._pending[i] = True

    def _collect(self):
        out = []
        for i, res in enumerate(self._results):
            if self._pending[i]:
                out.append(res.get())
                self._pending[i] = False
            else:
                out.append(None)
        return out

    def close(self):
        """Stops the background threads (also done when the iterator is collected)."""
        threads, self._threads = getattr(self, "_threads", []), []
        for req in getattr(self, "_requests", []):
            req.put(_STOP)
        for t in threads:
            t.join(timeout=10)

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shutdown
            pass

    def reset(self):
        if not self._threads:
            raise MXNetError("PrefetchingIter: the iterator is closed")
        self._collect()  # let in-flight reads finish before rewinding under them
        for it in self.iters:
            it.reset()
        self.current_batch = None
        self._request_all()

    def iter_next(self):
        if not self._threads:
            raise MXNetError("PrefetchingIter: the iterator is closed")
        self._request_all()
        results = self._collect()
        for status, value in results:
            if status == "error":
                raise value
        ended = [status == "end" for status, _ in results]
        if all(ended):
            self.current_batch = None
            return False
        if any(ended):
            raise MXNetError("PrefetchingIter: the iterators yield different numbers of "
                             "batches")
        batches = [value for _, value in results]
        pads = {b.pad for b in batches}
        if len(pads) > 1:
            raise MXNetError(f"PrefetchingIter: the iterators' batches have different "
                             f"pad values {sorted(pads, key=str)}")
        self.current_batch = DataBatch(
            sum((list(b.data) for b in batches), []),
            sum((list(b.label or []) for b in batches), []),
            batches[0].pad, batches[0].index,
            provide_data=self.provide_data, provide_label=self.provide_label)
        self._request_all()
        return True

    def next(self):
        if self.iter_next():
            return self.current_batch
        raise StopIteration
