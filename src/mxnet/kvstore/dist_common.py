"""What the MPI stores ('dist_sync', 'dist_device_sync', 'dist_async', 'horovod')
share: host staging of NDArrays, the fused allreduce of many tensors, the text of a
call for the consistency check, and the process-group properties of a store (rank,
num_workers, barrier, barrier before exit)."""
import pickle
import threading

import numpy as np

from .. import engine
from ..backend import array_module, to_numpy
from ..base import MXNetError
from ..ndarray.ndarray import from_data
from .mpi_comm import world

__all__ = ["host_buffer", "wrap_host", "wait_exclusive", "allreduce_many", "describe",
           "optimizer_signature", "DistMixin", "out_is_value", "keys_text"]


def host_buffer(arr):
    """arr's data as a C-contiguous host NumPy array (no copy for a contiguous CPU
    array; waits for pending writes)."""
    return np.ascontiguousarray(to_numpy(arr._read()))


def wrap_host(buf, ctx):
    """An NDArray on ctx that owns the host array buf (copied to a GPU if ctx is one)."""
    if ctx.device_typeid == 2:
        return from_data(array_module(ctx).asarray(buf), ctx)
    return from_data(buf, ctx)


def wait_exclusive(arr):
    """Block until no pushed work reads or writes arr, so its buffer may be written
    directly (e.g. by an in-place MPI collective)."""
    arr.wait_to_read()
    chunk = arr._chunk
    if chunk.num_pending:
        done = threading.Event()
        engine.get().push_sync(lambda rctx: done.set(), arr.context, [], [chunk],
                               1 << 30, "KVStoreWaitExclusive")
        done.wait()


FUSE_TENSOR_BYTES = 1 << 20     # tensors up to this size share one allreduce...
FUSE_BUFFER_BYTES = 16 << 20    # ...of up to this many bytes (per dtype)


def allreduce_many(comm, sends, description, what):
    """The sums over workers of the host arrays sends (fresh arrays, same shapes).

    Small tensors of one dtype are packed into one buffer and reduced together, so a
    call with many keys costs a few collectives rather than one per key; large
    tensors are reduced on their own, without a staging copy. The grouping depends
    only on the call's shapes and dtypes, which the consistency check has made equal
    on every worker.
    """
    if comm.size == 1:
        return [s.copy() for s in sends]
    MPI = comm.MPI
    recvs = [None] * len(sends)
    pairs = []
    groups = {}
    for i, s in enumerate(sends):
        if s.nbytes > FUSE_TENSOR_BYTES:
            recvs[i] = np.empty_like(s)
            pairs.append((s, recvs[i]))
            continue
        buffers = groups.setdefault(s.dtype.str, [[[], 0]])
        if buffers[-1][1] + s.nbytes > FUSE_BUFFER_BYTES:
            buffers.append([[], 0])
        buffers[-1][0].append(i)
        buffers[-1][1] += s.nbytes
    for buffers in groups.values():
        for members, _ in buffers:
            if len(members) == 1:
                i = members[0]
                recvs[i] = np.empty_like(sends[i])
                pairs.append((sends[i], recvs[i]))
                continue
            packed = np.concatenate([sends[i].ravel() for i in members])
            pairs.append((MPI.IN_PLACE, packed))
            offset = 0
            for i in members:
                n = sends[i].size
                recvs[i] = packed[offset:offset + n].reshape(sends[i].shape)
                offset += n
    comm.collective(description, what, allreduce=pairs, always=False)
    return recvs


def describe(op, pairs):
    """A one-line description of a call, hashed by the consistency check."""
    parts = []
    for key, val in pairs:
        parts.append(f"key {key!r} shape {tuple(val.shape)} {np.dtype(val.dtype).name}")
    return f"{op}: " + ", ".join(parts)


def keys_text(pairs):
    keys = [k for k, _ in pairs]
    return repr(keys[0]) if len(keys) == 1 else repr(keys)


def optimizer_signature(optimizer):
    """The optimizer's class and scalar hyper-parameters, as text."""
    scalars = sorted((k, v) for k, v in vars(optimizer).items()
                     if isinstance(v, (int, float, str, bool, type(None))))
    return f"set_optimizer: {type(optimizer).__name__} " + \
        ", ".join(f"{k}={v!r}" for k, v in scalars)


def out_is_value(pairs, out):
    """Whether a pushpull writes each key's result back into its only value."""
    if out is None:
        return True
    outs = [out] if len(pairs) == 1 else out
    if not isinstance(outs, (list, tuple)) or len(outs) != len(pairs):
        return False
    for o, (_, vals) in zip(outs, pairs):
        if isinstance(o, (list, tuple)):
            if len(o) != 1:
                return False
            o = o[0]
        if o is not vals[0]:
            return False
    return True


class DistMixin:
    """Process-group properties and exit barrier shared by the MPI stores."""

    def _join_group(self):
        self._comm = world()
        # stores are numbered in creation order, the same on every worker, so the
        # consistency check also catches calls to different stores
        self._store_id = self._comm.num_stores
        self._comm.num_stores += 1
        self._exit_flag = [True]
        self._comm.exit_flags.append(self._exit_flag)

    def _describe(self, op, pairs):
        return f"store {self._store_id} {describe(op, pairs)}"

    @property
    def rank(self):
        """This worker's rank, 0 ... num_workers - 1 (its MPI rank)."""
        return self._comm.rank

    @property
    def num_workers(self):
        """The number of workers in the job (the MPI world size)."""
        return self._comm.size

    def _set_barrier_before_exit(self, barrier_before_exit=True):
        """Whether workers meet in a barrier at exit (default True, as in MXNet): no
        worker then finalizes MPI while another still runs KVStore calls."""
        self._exit_flag[0] = bool(barrier_before_exit)

    @property
    def _barrier_before_exit(self):
        return self._exit_flag[0]

    @_barrier_before_exit.setter
    def _barrier_before_exit(self, value):
        self._set_barrier_before_exit(value)

    def _barrier(self):
        """Wait until every worker reaches this call."""
        self._comm.barrier("barrier")

    @staticmethod
    def _command(head, body):
        """Decode MXNet's ``_send_command_to_servers``: (0, pickled optimizer) sets the
        optimizer; the sync-mode and multi-precision commands need nothing here."""
        if head == 0:
            data = body.encode("latin-1") if isinstance(body, str) else body
            return pickle.loads(data)
        if head in (1, 3):
            return None
        raise MXNetError(f"KVStore server command {head} is not supported: the MPI "
                         "backend has no parameter servers")
