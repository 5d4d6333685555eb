"""``mx.kv.create('horovod')``: Horovod-style allreduce training over MPI, without the
horovod package (MXNet's Horovod store, reimplemented on the same MPI layer as the
'dist_*' stores).

The store keeps no values. ``broadcast`` copies rank 0's value into every worker's
value and outputs; ``pushpull`` sums the value over workers in place (an allreduce; a
list of values per key is summed first) and copies the sum into out. It cannot run an
optimizer (``is_capable('optimizer')`` is False), so gluon.Trainer allreduces the
gradients and updates on every worker.
"""
import os

import numpy as np

from ..base import MXNetError
from ..ndarray import NDArray
from .base import KVStoreBase
from .dist_common import DistMixin, wait_exclusive, wrap_host
from .kvstore import _copy_into, _reduce

__all__ = ["Horovod"]


def _as_list(x):
    return list(x) if isinstance(x, (list, tuple)) else [x]


class Horovod(DistMixin, KVStoreBase):
    """Allreduce-based store (see the module notes)."""

    def __init__(self):
        self._join_group()

    @property
    def type(self):
        return "horovod"

    @property
    def local_rank(self):
        """This worker's rank among the workers on its machine."""
        for var in ("OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "PMI_LOCAL_RANK",
                    "MV2_COMM_WORLD_LOCAL_RANK"):
            if var in os.environ:
                return int(os.environ[var])
        return self.rank

    @staticmethod
    def _check_key(key, value):
        if not isinstance(key, (str, int)) or isinstance(key, bool):
            raise AssertionError("the horovod store takes one int or str key per call")
        for v in _as_list(value):
            if not isinstance(v, NDArray):
                raise AssertionError(f"values must be NDArrays, got {type(v).__name__}")

    def _inplace(self, arr, collective):
        """Run collective(host buffer) on arr's data (it waits for completion), in
        place when arr is a whole CPU array, else through a host copy written back."""
        data = arr._chunk.data
        direct = arr._view is None and isinstance(data, np.ndarray) and \
            data.flags.c_contiguous
        if direct:
            wait_exclusive(arr)
            buf = data
        else:
            buf = np.array(arr.asnumpy(), order="C")
        collective(buf)
        if not direct:
            _copy_into(wrap_host(buf, arr.context), arr)

    def init(self, key, value):
        """Give value rank 0's value (collective; the store keeps nothing)."""
        self.broadcast(key, value, out=[])

    def broadcast(self, key, value, out, priority=0):
        """Copy rank 0's value into value and into out (collective)."""
        self._check_key(key, value)
        value = _as_list(value)[0]
        comm = self._comm
        what = f"broadcast of key {key!r}"
        desc = self._describe("broadcast", [(key, value)])
        if comm.size > 1:
            self._inplace(value, lambda b: comm.collective(desc, what, bcast=[b]))
        for o in _as_list(out):
            _copy_into(value, o)

    def pushpull(self, key, value, out=None, priority=0):
        """Sum value over workers in place (a list is summed first, and every entry gets
        the result), then copy it into out (collective)."""
        self._check_key(key, value)
        values = _as_list(value)
        comm = self._comm
        what = f"pushpull of key {key!r}"
        desc = self._describe("pushpull", [(key, values[0])])
        total = values[0] if len(values) == 1 else \
            _reduce("horovod_reduce", values, values[0].context)
        if comm.size > 1:
            MPI = comm.MPI
            self._inplace(total, lambda b: comm.collective(
                desc, what, allreduce=[(MPI.IN_PLACE, b)], always=False))
        for v in values:
            if v is not total:
                _copy_into(total, v)
        if out is not None:
            for o in _as_list(out):
                _copy_into(total, o)

    def is_capable(self, capability):
        if capability.lower() == KVStoreBase.OPTIMIZER:
            return False
        raise ValueError(f"Unknown capability: {capability}")

    def set_optimizer(self, optimizer):
        raise MXNetError("the horovod KVStore cannot run an optimizer "
                         "(is_capable('optimizer') is False): update on the workers")

    def save_optimizer_states(self, fname, dump_optimizer=False):
        raise MXNetError("the horovod KVStore holds no optimizer states")

    def load_optimizer_states(self, fname):
        raise MXNetError("the horovod KVStore holds no optimizer states")
