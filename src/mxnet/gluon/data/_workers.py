"""Pools that load DataLoader batches in parallel: forked worker processes, or threads.

Both pools take ``submit(key, indices)`` and answer ``get(key, timeout)`` with
``batchify_fn([dataset[i] for i in indices])``, so the iterator on top is the same
for both.

Process workers are forked (so datasets holding lambdas or open files need no
pickling, as with MXNet's multiprocessing pool). Each worker has one socket pair to the
main process: tasks go down, pickled batches come up (an NDArray pickles as its NumPy
data and context and is rebuilt in the main process). The main process waits on the
sockets and the workers' process sentinels together, so a worker that dies is reported
at once instead of stalling until the timeout. Workers exit when told to, when their
socket closes, or within a second of the main process dying, so none outlives it.
"""
import concurrent.futures
import itertools
import os
import pickle
import random as _pyrandom
import signal
import time
import traceback
import warnings
import weakref
from multiprocessing import connection, get_context, get_all_start_methods

import numpy as np

from ...base import MXNetError
from ... import engine, random as mx_random

__all__ = ["ProcessPool", "ThreadPool", "WorkerError", "new_tag"]

_POLL_S = 1.0


class WorkerError(Exception):
    """Carries a worker's traceback; raised as the cause of the re-raised exception."""

    def __str__(self):
        return self.args[0]


def _prepare_child(wid, parent_ends):
    """Makes a freshly forked worker safe to run operators and distinct in randomness."""
    for conn in parent_ends:    # the main process's ends: only it may hold them open
        conn.close()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C belongs to the main process
    # The parent's engine threads did not survive the fork; run operators at push time.
    engine._engine = engine.NaiveEngine()
    # Forked workers share the parent's generator states; offset them per worker so
    # random augmentations differ between workers yet replay under the same seeds.
    base = int(np.random.randint(0, 2 ** 31 - 1))
    np.random.seed((base + wid) % 2 ** 32)
    _pyrandom.seed(base + wid)
    mx_random.seed(base + wid)


def _error_payload(key, exc):
    tb = traceback.format_exc()
    try:
        data = pickle.dumps((key, False, (exc, tb)), protocol=pickle.HIGHEST_PROTOCOL)
        pickle.loads(data)
    except Exception:   # an exception that cannot cross processes: send its text
        data = pickle.dumps((key, False, (None, tb)), protocol=pickle.HIGHEST_PROTOCOL)
    return data


def _worker_loop(wid, conn, dataset, batchify_fn, parent_pid, parent_ends):
    _prepare_child(wid, parent_ends)
    while True:
        try:
            if not conn.poll(_POLL_S):
                if os.getppid() != parent_pid:
                    return
                continue
            task = conn.recv()
        except (EOFError, OSError):
            return
        if task is None:
            return
        key, indices = task
        try:
            batch = batchify_fn([dataset[i] for i in indices])
            data = pickle.dumps((key, True, batch), protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as exc:
            data = _error_payload(key, exc)
        try:
            conn.send_bytes(data)
        except OSError:
            return


def _describe_exit(code):
    if code is None:
        return "is still running"
    if code < 0:
        try:
            return f"was killed by signal {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with code {code}"


def _shutdown(procs, conns):
    for conn in conns:
        try:
            conn.send(None)
        except (OSError, ValueError):
            pass
    deadline = time.monotonic() + 0.25   # idle workers exit at once; busy ones are killed
    for p in procs:
        p.join(max(0.0, deadline - time.monotonic()))
    for p in procs:
        if p.is_alive():
            p.terminate()
            p.join(1.0)
        if p.is_alive():
            p.kill()
            p.join()
    for conn in conns:
        conn.close()


class ProcessPool:
    """``num_workers`` forked processes, each loading whole batches of ``dataset``."""

    def __init__(self, num_workers, dataset, batchify_fn):
        method = "fork" if "fork" in get_all_start_methods() else None
        if method is None:
            raise MXNetError("DataLoader: worker processes need the 'fork' start method, "
                             "which this platform lacks; use num_workers=0 or "
                             "thread_pool=True")
        mpctx = get_context(method)
        self._procs, self._conns = [], []
        parent_pid = os.getpid()
        try:
            for wid in range(num_workers):
                ours, theirs = mpctx.Pipe(duplex=True)
                self._conns.append(ours)
                proc = mpctx.Process(target=_worker_loop, name=f"DataLoaderWorker-{wid}",
                                     args=(wid, theirs, dataset, batchify_fn, parent_pid,
                                           list(self._conns)),
                                     daemon=True)
                with warnings.catch_warnings():
                    # Python 3.12+ warns about forking a threaded process; the child
                    # never touches the parent's engine threads (_prepare_child).
                    warnings.simplefilter("ignore", DeprecationWarning)
                    proc.start()
                theirs.close()
                self._procs.append(proc)
        except BaseException:
            _shutdown(self._procs, self._conns)
            raise
        self._load = [0] * num_workers        # tasks in flight per worker
        self._owner = {}                      # key -> (worker, indices)
        self._results = {}                    # key -> (ok, value, worker)
        self._dropped = set()                 # tags of iterators gone: drop their results
        self._broken = None
        self._finalizer = weakref.finalize(self, _shutdown, self._procs, self._conns)

    @property
    def pids(self):
        """Process ids of the workers."""
        return [p.pid for p in self._procs]

    def shutdown(self):
        """Stops the workers (waits briefly, then terminates them)."""
        self._finalizer()

    def drop(self, tag):
        """Forget results, present and future, of keys ``(tag, ...)``."""
        self._dropped.add(tag)
        for key in [k for k in self._results if k[0] == tag]:
            del self._results[key]

    def submit(self, key, indices):
        self._check_usable()
        wid = min(range(len(self._procs)), key=self._load.__getitem__)
        try:
            self._conns[wid].send((key, indices))
        except OSError:
            self._fail_dead(wid)
        self._load[wid] += 1
        self._owner[key] = (wid, indices)

    def get(self, key, timeout):
        deadline = None if timeout is None else time.monotonic() + timeout
        while key not in self._results:
            self._check_usable()
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                wid, indices = self._owner.get(key, (None, None))
                who = ("its worker processes" if wid is None else
                       f"worker {wid} (pid {self._procs[wid].pid})")
                raise MXNetError(
                    f"DataLoader: timed out after {timeout} seconds waiting for a batch "
                    f"from {who}; a slow dataset or transform needs a larger `timeout` "
                    "(or fewer `num_workers`)")
            ready = connection.wait(self._conns + [p.sentinel for p in self._procs],
                                    remaining)
            for obj in ready:
                if obj in self._conns:
                    self._receive(self._conns.index(obj))
            for obj in ready:
                if obj not in self._conns and key not in self._results:
                    wid = next(i for i, p in enumerate(self._procs) if p.sentinel == obj)
                    self._fail_dead(wid)
        self._owner.pop(key, None)
        ok, value, wid = self._results.pop(key)
        if ok:
            return value
        exc, tb = value
        note = WorkerError(f"\n\"\"\"\nin DataLoader worker {wid} "
                           f"(pid {self._procs[wid].pid}):\n{tb}\"\"\"")
        if exc is None:
            raise MXNetError(f"DataLoader worker {wid} raised an exception that could "
                             f"not be sent back:{note}")
        raise exc from note

    def _receive(self, wid):
        try:
            data = self._conns[wid].recv_bytes()
        except (EOFError, OSError):
            self._procs[wid].join(1.0)
            self._fail_dead(wid)
        key, ok, value = pickle.loads(data)
        self._load[wid] -= 1
        if key[0] in self._dropped:
            self._owner.pop(key, None)
            return
        self._results[key] = (ok, value, wid)

    def _fail_dead(self, wid):
        proc = self._procs[wid]
        proc.join(1.0)
        self._broken = (f"DataLoader worker {wid} (pid {proc.pid}) "
                        f"{_describe_exit(proc.exitcode)} while loading data")
        self.shutdown()
        raise MXNetError(self._broken)

    def _check_usable(self):
        if self._broken:
            raise MXNetError(f"DataLoader: the worker pool is unusable: {self._broken}")
        if not self._finalizer.alive:
            raise MXNetError("DataLoader: the worker pool has been shut down")


class ThreadPool:
    """``num_workers`` threads of this process loading whole batches of ``dataset``."""

    def __init__(self, num_workers, dataset, batchify_fn):
        self._dataset = dataset
        self._batchify_fn = batchify_fn
        self._executor = concurrent.futures.ThreadPoolExecutor(
            num_workers, thread_name_prefix="DataLoaderThread")
        self._futures = {}
        self._finalizer = weakref.finalize(self, self._executor.shutdown, wait=False,
                                          cancel_futures=True)

    def shutdown(self):
        self._finalizer()

    def drop(self, tag):
        for key in [k for k in self._futures if k[0] == tag]:
            self._futures.pop(key).cancel()

    def _load(self, indices):
        return self._batchify_fn([self._dataset[i] for i in indices])

    def submit(self, key, indices):
        if not self._finalizer.alive:
            raise MXNetError("DataLoader: the worker pool has been shut down")
        self._futures[key] = self._executor.submit(self._load, indices)

    def get(self, key, timeout):
        future = self._futures.pop(key)
        try:
            return future.result(timeout)
        except concurrent.futures.TimeoutError:
            raise MXNetError(f"DataLoader: timed out after {timeout} seconds waiting for "
                             "a batch from its worker threads; a slow dataset or "
                             "transform needs a larger `timeout`") from None


_tags = itertools.count()


def new_tag():
    """A fresh tag for one iterator's keys."""
    return next(_tags)

