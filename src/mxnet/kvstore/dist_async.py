"""Asynchronous distributed KVStore over MPI: ``mx.kv.create('dist_async')`` (MXNet's
KVStoreDist in async mode).

Rank 0 holds the values and runs a server thread beside its training loop; the other
workers send it pushes and pull requests (MPI point-to-point on a private
communicator). Consistency model, as MXNet's async parameter server:

* A push is applied by the server on its own, as soon as it arrives: with an
  optimizer (``set_optimizer`` on rank 0 — the server uses rank 0's optimizer object)
  the update runs on that one worker's gradient; without one the pushed value (summed
  over the local list) replaces the stored value. There is no aggregation across
  workers and no barrier, so fast workers do not wait for slow ones.
* Pushes from one worker are applied in the order it made them, and a worker's pull
  sees all of its own earlier pushes (MPI messages between two ranks do not overtake).
  Pushes from different workers interleave in arrival order; a pull returns the
  server's value at the time it handles the request, so weights on different workers
  may be stale by any number of other workers' updates between their pulls.
* ``init`` takes rank 0's value and is collective; ``_barrier()`` first waits until
  the server has applied every push this worker made, so after a barrier every push
  made before it by any worker has been applied.
* ``push`` returns once the message is handed to MPI; errors the server finds in it
  (unknown key, wrong shape, a failing update) are raised by this worker's next
  ``pull``, ``pushpull`` or ``_barrier``.

All waits have the deadline and failure notices of ``mpi_comm``. At exit every worker
flushes its pushes and meets the others in a barrier before rank 0 stops its server.
"""
import threading
import time

import numpy as np

from ..base import MXNetError
from ..context import cpu
from ..optimizer import get_updater
from .dist_common import DistMixin, host_buffer, keys_text, optimizer_signature, wrap_host
from .kvstore import KVStore, _copy_into, _group, _pull_targets, _reduce

__all__ = ["DistAsyncKVStore"]

_PUSH, _PULL, _FLUSH, _REPLY = 7201, 7202, 7203, 7204


class DistAsyncKVStore(DistMixin, KVStore):
    """``mx.kv.create('dist_async')``: asynchronous data parallelism with a server on
    rank 0 (see the module notes for the consistency model)."""

    def __init__(self, kv_type="dist_async"):
        KVStore.__init__(self, kv_type)
        self._join_group()
        comm = self._comm
        MPI = comm.MPI
        if comm.size > 1 and MPI.Query_thread() < MPI.THREAD_MULTIPLE:
            raise MXNetError("KVStore 'dist_async' needs MPI_THREAD_MULTIPLE (its server "
                             "thread talks MPI beside the training loop); create the "
                             "store before importing mpi4py.MPI yourself, or use "
                             "'dist_sync'")
        self._srv = comm._dup(comm.data, "creating the dist_async server communicator")
        self._inited = set()
        self._lock = threading.RLock()
        self._pending = []              # this worker's pushes still in flight
        self._server = None
        self._server_error = None
        self._push_errors = {}          # source rank -> first error in its pushes
        self._replies = []              # the server's replies still in flight
        if comm.rank == 0 and comm.size > 1:
            self._stop = threading.Event()
            self._server = threading.Thread(target=self._serve, daemon=True,
                                            name="mxnet-kvstore-server")
            self._server.start()
            comm.after_exit.append(self._stop_server)
        comm.before_exit.append(self._flush_quietly)

    # --- the API -------------------------------------------------------------------------
    def init(self, key, value):
        """Initialise key(s) with rank 0's value (collective)."""
        pairs = _group(key, value)
        self._check_kind(pairs)
        firsts = [(k, vals[0]) for k, vals in pairs]
        for k, _ in firsts:
            if k in self._inited:
                raise MXNetError(f"duplicate init of key {k}. Please double check if you "
                                 "called kv.init or kv.broadcast with this key multiple "
                                 "times")
        if self._comm.rank == 0:
            with self._lock:
                for k, v in firsts:
                    ctx = v.context if self._on_device else cpu()
                    self._data[k] = v.copyto(ctx) if v.context != ctx else v.copy()
        # after rank 0 has stored: no worker can pull before the values exist
        self._comm.check(self._describe("init", firsts), f"init of key {keys_text(firsts)}")
        self._inited.update(k for k, _ in firsts)

    def push(self, key, value, priority=0):
        """Send value(s) (summed over the local list) to the server, which applies them
        on arrival; returns without waiting for other workers."""
        pairs = _group(key, value)
        self._check_kind(pairs)
        self._reap()
        for k, vals in pairs:
            self._known(k)
            if self._compression is not None:
                vals = [self._compress(k, i, v) for i, v in enumerate(vals)]
            merged = _reduce("kvstore_reduce", vals, vals[0].context)
            if self._comm.rank == 0:   # a copy: the server must not alias the caller's array
                self._apply(k, np.array(host_buffer(merged), copy=True))
            else:
                req = self._comm._issue(
                    lambda: self._srv.isend((k, host_buffer(merged)), dest=0, tag=_PUSH),
                    f"push of key {k!r}")
                self._pending.append(req)

    def pull(self, key, out=None, priority=0, ignore_sparse=True):
        """Copy the server's current value of key(s) into out."""
        if out is None:
            raise AssertionError("pull needs out")
        pairs = _group(key, out, "outputs")
        self._check_kind(pairs)
        for k, outs in pairs:
            self._known(k)
            current = self._fetch(k)
            for o in _pull_targets(outs, ignore_sparse):
                _copy_into(current, o)

    def pushpull(self, key, value, out=None, priority=0):
        """push, then pull the server's value (which includes this push)."""
        self.push(key, value, priority)
        self.pull(key, value if out is None else out, priority)

    def row_sparse_pull(self, key, out=None, priority=0, row_ids=None):
        """Pull only the rows ``row_ids`` of the server's value (the other rows of out
        are zeroed)."""
        if out is None or row_ids is None:
            raise AssertionError("row_sparse_pull needs out and row_ids")
        pairs = _group(key, out, "outputs")
        self._check_kind(pairs)
        local = KVStore("local")
        local._key_kind = self._key_kind
        for k, _ in pairs:
            self._known(k)
            local._data[k] = self._fetch(k)
        local.row_sparse_pull(key, out, priority, row_ids)

    def set_optimizer(self, optimizer):
        """Run optimizer on the server (rank 0's optimizer; collective)."""
        self._comm.check(f"store {self._store_id} {optimizer_signature(optimizer)}",
                         "set_optimizer")
        if self._comm.rank == 0:
            with self._lock:
                self._set_updater(get_updater(optimizer))

    def _send_command_to_servers(self, head, body):
        optimizer = self._command(head, body)
        if optimizer is not None:
            self.set_optimizer(optimizer)

    def save_optimizer_states(self, fname, dump_optimizer=False):
        """Write the server's optimizer states (on rank 0, which holds them)."""
        with self._lock:
            KVStore.save_optimizer_states(self, fname, dump_optimizer)

    def load_optimizer_states(self, fname):
        """Load the server's optimizer states (on rank 0, which holds them)."""
        with self._lock:
            KVStore.load_optimizer_states(self, fname)

    def _barrier(self):
        """Wait until the server applied this worker's pushes, then for all workers."""
        self._flush()
        self._comm.barrier("barrier")

    # --- worker side -------------------------------------------------------------------------
    def _known(self, key):
        if key not in self._inited:
            raise MXNetError(f"key {key} has not been inited")

    def _reap(self):
        if self._pending:
            self._pending = [r for r in self._pending if not r.Test()]

    def _request(self, tag, payload, what):
        """Send a request to the server and wait (with the deadline) for its reply."""
        comm = self._comm
        self._reap()
        req = comm._issue(lambda: self._srv.isend(payload, dest=0, tag=tag), what)
        found = []

        def replied():
            msg = self._srv.improbe(source=0, tag=_REPLY)
            if msg is not None:
                found.append(msg)
            return bool(found)
        comm.wait(replied, what)
        req.Wait()
        status, body = found[0].recv()
        if status != "ok":
            raise MXNetError(body)
        return body

    def _fetch(self, key):
        """The current value of key as an NDArray (a fresh copy on other workers)."""
        if self._comm.rank == 0:
            self._raise_own_errors()
            with self._lock:
                return self._stored(key).copy()
        buf = self._request(_PULL, key, f"pull of key {key!r}")
        return wrap_host(buf, cpu())

    def _flush(self):
        if self._comm.rank == 0:
            self._raise_own_errors()
            return
        if self._pending:
            self._comm.wait(self._pending, "sending pushes to the server")
            self._pending = []
        self._request(_FLUSH, None, "waiting for the server to apply this worker's pushes")

    def _flush_quietly(self):
        if self._comm.failure is None:
            self._flush()

    def _raise_own_errors(self):
        if self._server_error is not None:
            raise MXNetError(f"KVStore dist_async server failed: {self._server_error}")

    # --- server side (rank 0) ------------------------------------------------------------------
    def _apply(self, key, buf):
        """Apply one pushed value (rank 0; the server thread or rank 0's own push)."""
        with self._lock:
            stored = self._data.get(key)
            if stored is None:
                raise MXNetError(f"key {key} has not been inited")
            if tuple(buf.shape) != tuple(stored.shape):
                raise MXNetError(f"KVStore push: value of shape {tuple(buf.shape)} for key "
                                 f"{key} does not match the stored shape {stored.shape}")
            pushed = wrap_host(buf, stored.context)
            if self._updater is not None:
                self._updater(key, pushed, stored)
            else:
                if pushed.dtype != stored.dtype:
                    pushed = pushed.astype(stored.dtype)
                self._data[key] = pushed

    def _serve(self):
        MPI = self._comm.MPI
        status = MPI.Status()
        idle = 0
        while True:
            msg = self._srv.improbe(source=MPI.ANY_SOURCE, tag=MPI.ANY_TAG, status=status)
            if msg is None:
                if self._stop.is_set():
                    return
                idle += 1
                time.sleep(0 if idle < 50 else 2e-4 if idle < 5000 else 2e-3)
                continue
            idle = 0
            source, tag = status.Get_source(), status.Get_tag()
            try:
                self._handle(source, tag, msg.recv())
            except Exception as err:   # noqa: BLE001 - reported to the workers, not lost
                self._server_error = f"{type(err).__name__}: {err}"

    def _handle(self, source, tag, payload):
        if tag == _PUSH:
            key, buf = payload
            try:
                self._apply(key, buf)
            except Exception as err:   # noqa: BLE001 - raised on that worker's next pull
                self._push_errors.setdefault(source, f"{type(err).__name__}: {err}")
            return
        error = self._server_error or self._push_errors.pop(source, None)
        if error is not None:
            reply = ("error", f"KVStore dist_async server (rank 0): {error}")
        elif tag == _PULL:
            with self._lock:
                stored = self._data.get(payload)
                reply = ("ok", stored.asnumpy()) if stored is not None else \
                    ("error", f"key {payload} has not been inited")
        else:
            reply = ("ok", None)
        # never block the server on a worker that stopped listening
        self._replies = [r for r in self._replies if not r.Test()]
        self._replies.append(self._srv.isend(reply, dest=source, tag=_REPLY))

    def _stop_server(self):
        self._stop.set()
        self._server.join(timeout=self._comm.timeout)
