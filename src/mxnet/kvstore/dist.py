"""Synchronous distributed KVStore over MPI: ``mx.kv.create('dist_sync')`` and
``'dist_device_sync'`` (MXNet's KVStoreDist in sync mode), plus ``create`` for every
distributed type.

MXNet runs parameter servers; here every worker is its own "server". ``init`` takes
rank 0's value (an MPI broadcast), a ``push`` sums the values of every worker (an MPI
allreduce) and then, like MXNet's server, either replaces the stored value with the
sum or runs the optimizer on it (``set_optimizer``). Every worker applies the same
update to the same summed gradient, so the stored weights stay identical on all
workers (Open MPI gives every rank a bitwise identical allreduce result), and ``pull``
is a local copy. Each call returns when its collectives are done; they run with a
deadline and a consistency check, so a dead or diverging worker gives an MXNetError,
never a hang (see ``mpi_comm``). The small tensors of one call (a list of keys) share
one allreduce.

Row_sparse values (gradients of sparse embeddings) stay sparse on the wire: a push
first sums a per-row mask over workers (which rows anyone pushed), then sums only the
union of those rows; the lazy optimizers then touch only them. Stored row_sparse
weights are replicated like dense ones, so ``row_sparse_pull`` is a local gather.

Start the workers with ``python -m mxnet.tools.launch -n 4 python train.py`` or
``mpiexec -n 4 python train.py``; a program started alone is a job of one worker.
"""
import numpy as np

from ..backend import to_numpy
from ..base import MXNetError
from ..context import cpu
from ..optimizer import get_updater
from .dist_common import (DistMixin, allreduce_many, host_buffer, keys_text,
                          optimizer_signature, out_is_value, wait_exclusive, wrap_host)
from .kvstore import KVStore, _group, _reduce
from .horovod import Horovod
from .dist_async import DistAsyncKVStore

__all__ = ["DistSyncKVStore", "create"]


def create(name):
    """The distributed store for a type name containing 'dist' (or 'horovod')."""
    if name == "horovod":
        return Horovod()
    if "_async" in name:
        return DistAsyncKVStore(name)
    return DistSyncKVStore(name)


class DistSyncKVStore(DistMixin, KVStore):
    """``mx.kv.create('dist_sync')`` / ``'dist_device_sync'``: synchronous data
    parallelism over MPI (see the module notes).

    Keys and values follow the local store (``init``/``push``/``pull``/``pushpull``/
    ``broadcast``/``row_sparse_pull``, ints or strs, a list of values per key is summed
    first). ``rank``/``num_workers`` give the worker's place in the job. Types with
    'device' in the name keep the stored values on the device of each key's initial
    value (GPU values go through host memory for MPI).
    """

    def __init__(self, kv_type="dist_sync"):
        KVStore.__init__(self, kv_type)
        self._join_group()

    # --- the API -------------------------------------------------------------------------
    def init(self, key, value):
        """Initialise key(s); every worker gets rank 0's value (collective: all workers
        init the same keys with the same shapes in the same order)."""
        pairs = _group(key, value)
        self._check_kind(pairs)
        firsts = [(k, vals[0]) for k, vals in pairs]
        for k, _ in firsts:
            if k in self._data:
                raise MXNetError(f"duplicate init of key {k}. Please double check if you "
                                 "called kv.init or kv.broadcast with this key multiple "
                                 "times")
        what = f"init of key {keys_text(firsts)}"
        comm = self._comm
        bufs = []
        for _, v in firsts:
            if comm.rank == 0:
                bufs.append(np.array(to_numpy(v._read()), order="C", copy=True))
            else:
                bufs.append(np.empty(v.shape, dtype=v.dtype))
        comm.collective(self._describe("init", firsts), what, bcast=bufs)
        for (k, v), buf in zip(firsts, bufs):
            ctx = v.context if self._on_device else cpu()
            self._data[k] = wrap_host(buf, ctx)
            if v._sparse:                      # rank 0's value, in the value's storage
                self._data[k] = self._data[k].tostype(v.stype)

    def push(self, key, value, priority=0):
        """Sum value(s) over the local list and over all workers, then update the
        stored value with the optimizer (if set) or replace it with the sum
        (collective)."""
        pairs = _group(key, value)
        self._check_kind(pairs)
        self._allreduce_and_store(pairs, "push")

    def _allreduce_and_store(self, pairs, op):
        sparse = [(k, vals) for k, vals in pairs if any(v._sparse for v in vals)]
        if sparse:
            pairs = [(k, vals) for k, vals in pairs if not any(v._sparse for v in vals)]
            for k, vals in sparse:
                self._push_row_sparse(k, vals, op)
            if not pairs:
                return
        comm = self._comm
        entries = []
        for k, vals in pairs:
            stored = self._stored(k)
            for v in vals:
                if v.shape != stored.shape:
                    raise MXNetError(f"KVStore {op}: value of shape {v.shape} for key {k} "
                                     f"does not match the stored shape {stored.shape}")
            if self._compression is not None:
                vals = [self._compress(k, i, v) for i, v in enumerate(vals)]
            entries.append((k, vals, stored))
        firsts = [(k, vals[0]) for k, vals, _ in entries]
        what = f"{op} of key {keys_text(firsts)}"
        sends = [host_buffer(_reduce("kvstore_reduce", vals, stored.context))
                 for _, vals, stored in entries]
        recvs = allreduce_many(comm, sends, self._describe(op, firsts), what)
        reduced = [wrap_host(buf, stored.context) for (_, _, stored), buf in
                   zip(entries, recvs)]
        if self._updater is not None:
            if len(entries) == 1:
                self._updater(entries[0][0], reduced[0], entries[0][2])
            else:   # one call: aggregating optimizers (multi-tensor SGD...) batch it
                self._updater([e[0] for e in entries], reduced, [e[2] for e in entries])
            return
        for (k, _, stored), red in zip(entries, reduced):
            self._data[k] = red if red.dtype == stored.dtype else red.astype(stored.dtype)

    def _push_row_sparse(self, key, vals, op):
        """Sum row_sparse value(s) of one key over the local list and all workers, on
        the union of the rows any worker pushed; then update or replace as push does."""
        from ..ndarray.sparse import _value_of, _wrap
        from ..operator import sparse_values as sv
        from ..operator.kernels_sparse import add_values
        stored = self._stored(key)
        for v in vals:
            if v.shape != stored.shape:
                raise MXNetError(f"KVStore {op}: value of shape {v.shape} for key {key} "
                                 f"does not match the stored shape {stored.shape}")
            if v.stype != "row_sparse":
                raise MXNetError(f"KVStore {op}: key {key} mixes storage types; push "
                                 f"row_sparse values only or dense values only, got "
                                 f"{v.stype}")
        local = _value_of(vals[0])
        for v in vals[1:]:
            local = add_values(local, _value_of(v))
        rows_total = stored.shape[0]
        what = f"{op} of row_sparse key {key!r}"
        pair = [(key, vals[0])]
        mask = np.zeros(rows_total, np.int32)
        mask[local.indices] = 1
        mask = allreduce_many(self._comm, [mask], self._describe(f"{op} rows", pair),
                              what)[0]
        rows = np.flatnonzero(mask).astype(np.int64)
        block = np.zeros((len(rows),) + tuple(stored.shape[1:]), local.dtype)
        block[np.searchsorted(rows, local.indices)] = local.data
        block = allreduce_many(self._comm, [block],
                               self._describe(f"{op} {len(rows)} rows", pair), what)[0]
        merged = _wrap(sv.RowSparse(block, rows, stored.shape), stored.context)
        if self._updater is not None:
            self._updater(key, merged, stored)
        else:
            merged.copyto(stored)

    def pushpull(self, key, value, out=None, priority=0):
        """push then pull: the sum over workers (or the updated weight, with an
        optimizer) goes to out, or back into value when out is None."""
        pairs = _group(key, value)
        self._check_kind(pairs)
        if self._updater is None and self._compression is None and len(pairs) == 1 and \
                self._pushpull_inplace(pairs, out):
            return
        self._allreduce_and_store(pairs, "push")
        self.pull(key, value if out is None else out, priority)

    def _pushpull_inplace(self, pairs, out):
        """The allreduce of plain gradients straight into the (single, CPU) value of
        each key, as Trainer and Module call it: no staging copy."""
        if not out_is_value(pairs, out):
            return False
        for k, vals in pairs:
            stored = self._stored(k)
            v = vals[0]
            if len(vals) != 1 or v.context != stored.context or v._view is not None or \
                    v.shape != stored.shape or v.dtype != stored.dtype or \
                    not isinstance(v._chunk.data, np.ndarray) or \
                    not v._chunk.data.flags.c_contiguous:
                return False
        comm = self._comm
        firsts = [(k, vals[0]) for k, vals in pairs]
        what = f"push of key {keys_text(firsts)}"
        for _, v in firsts:
            wait_exclusive(v)
        MPI = comm.MPI
        comm.collective(self._describe("push", firsts), what,
                        allreduce=[(MPI.IN_PLACE, v._chunk.data) for _, v in firsts],
                        always=False)
        for k, v in firsts:
            # the stored sum (for later pulls): copied here, while the data is still
            # in cache, into the stored buffer when nothing else uses it
            stored = self._data[k]
            wait_exclusive(stored)
            if stored._view is None and isinstance(stored._chunk.data, np.ndarray):
                np.copyto(stored._chunk.data, v._chunk.data)
            else:
                self._data[k] = v.copy()
        return True

    # --- optimizer on the store ------------------------------------------------------------
    def set_optimizer(self, optimizer):
        """Run optimizer on every worker's copy of the store: each applies the same
        update to the summed gradient (collective; the optimizers' class and scalar
        hyper-parameters must agree across workers)."""
        self._comm.check(f"store {self._store_id} {optimizer_signature(optimizer)}",
                         "set_optimizer")
        self._set_updater(get_updater(optimizer))

    def _send_command_to_servers(self, head, body):
        optimizer = self._command(head, body)
        if optimizer is not None:
            self.set_optimizer(optimizer)
