"""Calling back once a CUDA event has passed, without tying up an engine worker.

The engine ends a pushed operation when its function calls ``on_complete``
(``push_async``). Work whose end is a point on a device's stream (the GPU having read a
page-locked copy source, ndarray.source_hold) hands its event and ``on_complete`` to
``when_passed``: one watcher thread per device waits for the events in the order they
were handed over (they are recorded on that device's stream, so they pass in that
order) and calls each callback. No engine worker waits for the device meanwhile, and
however many copies are in flight, one thread per device does the waiting.
"""
import collections
import os
import threading
import warnings

__all__ = ["when_passed"]


class _Watcher:
    """One device's queue of (event, callback) and the thread that serves it."""

    def __init__(self, device_id):
        self.device_id = device_id
        self.queue = collections.deque()
        self.cv = threading.Condition()
        self.pid = None               # the process the thread was started in

    def add(self, event, done):
        with self.cv:
            self.queue.append((event, done))
            if self.pid != os.getpid():      # first use, or a forked child
                self.pid = os.getpid()
                threading.Thread(target=self._serve, daemon=True,
                                 name=f"mxnet-event-watcher-{self.device_id}").start()
            self.cv.notify()

    def _serve(self):
        while True:
            with self.cv:
                while not self.queue:
                    self.cv.wait()
                event, done = self.queue.popleft()
            try:
                event.synchronize()     # (a blocking-sync event: the thread sleeps)
            except Exception as exc:    # a device failure: the callback records it
                failure = exc
            else:
                failure = None
            try:
                done() if failure is None else done(failure)
            except Exception as exc:    # noqa: BLE001  the thread must serve the rest
                warnings.warn(f"pymxnet: a callback after a CUDA event failed: {exc!r}",
                              RuntimeWarning)


_watchers = {}
_lock = threading.Lock()


def when_passed(event, done, device_id=0):
    """Call ``done()`` from device ``device_id``'s watcher thread once ``event`` has
    passed (``done(exc)`` if waiting for it raised ``exc``); returns at once."""
    with _lock:
        w = _watchers.get(device_id)
        if w is None:
            w = _watchers[device_id] = _Watcher(device_id)
    w.add(event, done)
