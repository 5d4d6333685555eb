"""The single-process key-value store (MXNet's KVStoreLocal: types 'local' and
'device').

Keys are ints or strs (one kind per store). ``push`` sums the values given for a key
(one per device) on the store's context — the CPU for 'local', the device of the
initial value for 'device' — then either runs the updater on the stored value
(``set_optimizer``/``set_updater``) or replaces the stored value with the sum.
``pull`` copies the stored value into every output. Work goes through the engine, so
pushes and pulls return at once and are ordered by the arrays they touch.

``row_sparse_pull`` fills row_sparse outputs with the requested rows of the stored
value (dense or row_sparse). Difference from MXNet: the updater receives str keys as
str (MXNet passes bytes).
"""
import pickle

from ..base import MXNetError
from ..atomic_file import write_bytes
from ..context import cpu
from ..ndarray import NDArray, empty, zeros
from ..optimizer import get_updater
from ..optimizer._kernel import apply_inplace
from ..tape import pause
from .base import KVStoreBase

__all__ = ["KVStore"]


def _group(keys, values, what="values"):
    """[(key, [NDArray, ...]), ...] in first-seen key order; a key repeated in one call
    gets all its values."""
    if isinstance(keys, (list, tuple)):
        if not isinstance(values, (list, tuple)) or len(keys) != len(values):
            raise AssertionError(f"keys and {what} must be lists of the same length")
        kinds = {isinstance(k, str) for k in keys}
        if len(kinds) > 1:
            raise AssertionError("inconsistent types of keys detected.")
        pairs = [(k, v) for k, v in zip(keys, values)]
    else:
        pairs = [(keys, values)]
    grouped = {}
    for key, val in pairs:
        if isinstance(key, bool) or not isinstance(key, (int, str)):
            raise AssertionError(f"unexpected type for keys: {type(key)}")
        vals = [val] if isinstance(val, NDArray) else list(val)
        for v in vals:
            if not isinstance(v, NDArray):
                raise AssertionError(f"{what} must be NDArrays, got {type(v).__name__}")
        grouped.setdefault(key, []).extend(vals)
    return list(grouped.items())


def _note_nccl():
    """'nccl' reduces on the GPU like 'device': in one process the values are copied
    between devices and summed there (NCCL's collectives are not called). Say so when
    CuPy's NCCL binding is missing, since a user asking for 'nccl' expects it."""
    import warnings
    try:
        from cupy.cuda import nccl
        if getattr(nccl, "available", False):
            return
    except Exception:  # noqa: BLE001  (no CuPy, or CuPy built without NCCL)
        pass
    warnings.warn("KVStore 'nccl': CuPy's NCCL binding (cupy.cuda.nccl) is not available; "
                  "gradients are reduced with 'device' semantics instead", stacklevel=3)


def _reduce(name, values, ctx):
    """The sum of values on ctx: a fresh array, or the single value itself when it is
    already on ctx (readers only)."""
    if len(values) == 1 and values[0].context == ctx:
        return values[0]
    out = values[0].copyto(ctx) if values[0].context != ctx else values[0].copy()

    def add(xp, src, dst):
        dst += src
    for v in values[1:]:
        apply_inplace(name, add, [v.as_in_context(ctx)], [out])
    return out


def _pull_targets(outs, ignore_sparse):
    """The outputs a pull writes: with ``ignore_sparse``, sparse ones are skipped (with a
    warning, as MXNet does: they take ``row_sparse_pull``)."""
    if not ignore_sparse:
        return outs
    dense = [o for o in outs if o.stype == "default"]
    if len(dense) != len(outs):
        import warnings
        warnings.warn("KVStore pull: outputs with sparse storage are ignored; use "
                      "row_sparse_pull() (or module.prepare() with row_ids) for them",
                      stacklevel=3)
    return dense


def _copy_into(src, dst):
    """dst[:] = src across contexts (and dtypes)."""
    if dst is src:
        return
    if dst.shape != src.shape:
        raise MXNetError(f"KVStore pull: output shape {dst.shape} does not match the "
                         f"stored shape {src.shape}")
    # a store's copies are no computation: under autograd.record() they must not turn a
    # parameter (a marked variable) into a recorded result
    with pause():
        src.as_in_context(dst.context).copyto(dst)


class KVStore(KVStoreBase):
    """A single-process store: ``mx.kv.create('local')`` or ``mx.kv.create('device')``.

    Parameters
    ----------
    kv_type : str, default 'local'
        The type name (``type`` returns it). Names containing 'device' (and 'nccl')
        aggregate on the device of each key's initial value; others on the CPU.
    """

    def __init__(self, kv_type="local"):
        self._type = kv_type
        self._on_device = "device" in kv_type or kv_type == "nccl"
        if kv_type == "nccl":
            _note_nccl()
        self._data = {}
        self._key_kind = None
        self._updater = None
        self._updater_func = None
        self._compression = None
        self._residuals = {}

    # --- keys ------------------------------------------------------------------------
    def _check_kind(self, pairs):
        for key, _ in pairs[:1]:
            kind = "str" if isinstance(key, str) else "int"
            if self._key_kind is None:
                self._key_kind = kind
            elif self._key_kind != kind:
                raise MXNetError(f"Mixed key types are not allowed: this store uses "
                                 f"{self._key_kind} keys, got key {key!r}")

    def _stored(self, key):
        stored = self._data.get(key)
        if stored is None:
            raise MXNetError(f"key {key} has not been inited")
        return stored

    # --- the API -------------------------------------------------------------------------
    def init(self, key, value):
        """Initialise one key (or a list of keys) with value(s); each key once."""
        pairs = _group(key, value)
        self._check_kind(pairs)
        for k, vals in pairs:
            if k in self._data:
                raise MXNetError(f"duplicate init of key {k}. Please double check if you "
                                 "called kv.init or kv.broadcast with this key multiple "
                                 "times")
            v = vals[0]
            ctx = v.context if self._on_device else cpu()
            self._data[k] = v.copyto(ctx) if v.context != ctx else v.copy()

    def push(self, key, value, priority=0):
        """Push value(s) to key(s). A list of values for one key is summed (one value
        per device); the updater, if any, then updates the stored value with the sum,
        else the sum replaces it."""
        pairs = _group(key, value)
        self._check_kind(pairs)
        for k, vals in pairs:
            stored = self._stored(k)
            for v in vals:
                if v.shape != stored.shape:
                    raise MXNetError(f"KVStore push: value of shape {v.shape} for key {k} "
                                     f"does not match the stored shape {stored.shape}")
            if self._compression is not None:
                vals = [self._compress(k, i, v) for i, v in enumerate(vals)]
            merged = _reduce("kvstore_reduce", vals, stored.context)
            if self._updater is not None:
                self._updater(k, merged, stored)
            else:
                _copy_into(merged, stored)

    def pull(self, key, out=None, priority=0, ignore_sparse=True):
        """Copy the value of key(s) into out (an NDArray or a list, one per device)."""
        if out is None:
            raise AssertionError("pull needs out")
        pairs = _group(key, out, "outputs")
        self._check_kind(pairs)
        for k, outs in pairs:
            stored = self._stored(k)
            for o in _pull_targets(outs, ignore_sparse):
                _copy_into(stored, o)

    def pushpull(self, key, value, out=None, priority=0):
        """push then pull; the result goes to out, or back into value when out is None."""
        self.push(key, value, priority)
        self.pull(key, value if out is None else out, priority)

    def broadcast(self, key, value, out, priority=0):
        """init key with value, then pull it into out."""
        self.init(key, value)
        self.pull(key, out, priority)

    def row_sparse_pull(self, key, out=None, priority=0, row_ids=None):
        """Pull only the rows ``row_ids`` of key(s) into row_sparse ``out`` arrays (one
        row_ids array per output, or one for all). As in MXNet 1.9.1 a dense ``out`` is
        refused (use ``pull``)."""
        if out is None or row_ids is None:
            raise AssertionError("row_sparse_pull needs out and row_ids")
        for o in (out if isinstance(out, (list, tuple)) else [out]):
            for arr in (o if isinstance(o, (list, tuple)) else [o]):
                if getattr(arr, "stype", "default") != "row_sparse":
                    raise MXNetError(
                        "row_sparse_pull: out must be row_sparse arrays, got storage type "
                        f"{getattr(arr, 'stype', type(arr).__name__)!r} (use pull for dense "
                        "values)")
        if isinstance(row_ids, NDArray):
            row_ids = [row_ids]
        if not isinstance(row_ids, list):
            raise AssertionError("row_ids should be NDArray or list of NDArray")
        first_out = out
        single = len(row_ids) == 1 and isinstance(out, list)
        if single:
            first_out = [out[0]]
        pairs = _group(key, first_out, "outputs")
        rid_pairs = _group(key, row_ids, "row_ids")
        self._check_kind(pairs)
        for (k, outs), (_, rids) in zip(pairs, rid_pairs):
            if len(outs) != len(rids):
                raise AssertionError("the number of row_ids doesn't match the number of "
                                     "values")
            stored = self._stored(k)
            for o, rid in zip(outs, rids):
                self._gather_rows(stored, rid, o)
        if single:
            for o in out[1:]:
                _copy_into(out[0], o)

    @staticmethod
    def _gather_rows(stored, rid, out):
        if out.shape != stored.shape:
            raise MXNetError(f"row_sparse_pull: output shape {out.shape} does not match "
                             f"the stored shape {stored.shape}")
        import numpy as np
        from ..ndarray.sparse import _value_of
        from ..operator import sparse_values as sv
        rows = np.unique(rid.asnumpy().astype(np.int64).ravel())
        if len(rows) and (rows[0] < 0 or rows[-1] >= stored.shape[0]):
            raise MXNetError(f"row_sparse_pull: row ids out of range [0, {stored.shape[0]})")
        v = _value_of(stored)
        if isinstance(v, sv.RowSparse):       # only rows the store holds can be non-zero
            rows = rows[np.isin(rows, v.indices)]
            data = v.data[np.searchsorted(v.indices, rows)]
        else:
            data = sv.todense(v)[rows]
        out.wait_to_write()
        out._set_value(sv.RowSparse(np.array(data, dtype=out.dtype), rows, out.shape))

    # --- gradient compression -------------------------------------------------------------
    def set_gradient_compression(self, compression_params):
        """Quantize pushed gradients (types 'device' and 'dist_*' only).

        ``{'type': '2bit', 'threshold': t}`` (t > 0, default 0.5): every pushed value
        is added to a per-key, per-device residual; elements of the residual >= t are
        sent as t, <= -t as -t, the rest as 0, and what was sent is subtracted from the
        residual (error feedback), as MXNet's 2-bit compression does.
        """
        if "device" not in self._type and "dist" not in self._type:
            raise MXNetError("Gradient compression is not supported for this type of "
                             "kvstore")
        if not isinstance(compression_params, dict):
            raise MXNetError("compression_params must be a dict")
        if "type" not in compression_params:
            raise MXNetError("Required parameter type of string is not presented")
        ctype = str(compression_params["type"])
        if ctype != "2bit":
            raise MXNetError(f"Unknown type for gradient compression {ctype}; pymxnet, "
                             "like MXNet 1.9.1, supports only '2bit'")
        try:
            threshold = float(compression_params.get("threshold", 0.5))
        except (TypeError, ValueError):
            raise MXNetError("gradient compression threshold must be a number") from None
        if not threshold > 0:
            raise MXNetError(f"threshold must be greater than 0, got {threshold}")
        self._compression = {"type": ctype, "threshold": threshold}
        self._residuals = {}

    def _compress(self, key, slot, value):
        th = self._compression["threshold"]
        res = self._residuals.get((key, slot))
        if res is None or res.context != value.context or res.shape != value.shape:
            res = self._residuals[(key, slot)] = zeros(value.shape, value.context,
                                                       value.dtype)
        sent = empty(value.shape, value.context, value.dtype)

        def quantize(xp, v, r, q):
            r += v
            t = r.dtype.type(th)
            q[...] = xp.where(r >= t, t, xp.where(r <= -t, -t, r.dtype.type(0)))
            r -= q
        apply_inplace("gradient_compression_2bit", quantize, [value], [res, sent])
        return sent

    # --- optimizer on the store ----------------------------------------------------------------
    def is_capable(self, capability):
        if capability.lower() == KVStoreBase.OPTIMIZER:
            return True
        raise ValueError(f"Unknown capability: {capability}")

    def set_optimizer(self, optimizer):
        """Update stored values with optimizer on every push (key -> index)."""
        self._set_updater(get_updater(optimizer))

    def _set_updater(self, updater):
        """Set ``updater(key, pushed_sum, stored_value)``, run on every push."""
        self._updater = updater
        self._updater_func = updater

    set_updater = _set_updater

    def save_optimizer_states(self, fname, dump_optimizer=False):
        """Write the updater's states (and the optimizer, if dump_optimizer) to fname."""
        if self._updater is None:
            raise AssertionError("Cannot save states for distributed training")
        write_bytes(fname, self._updater.get_states(dump_optimizer))

    def load_optimizer_states(self, fname):
        """Read states written by save_optimizer_states."""
        if self._updater is None:
            raise AssertionError("Cannot load states for distributed training")
        self._updater.load_states_file(fname)

    # --- process group --------------------------------------------------------------------------
    @property
    def type(self):
        """The store's type name ('local', 'device', ...)."""
        return self._type

    @property
    def rank(self):
        """This worker's rank: 0 (single process)."""
        return 0

    @property
    def num_workers(self):
        """The number of workers: 1 (single process)."""
        return 1

    def _barrier(self):
        """Wait for all workers: nothing to wait for in one process."""

    def _send_command_to_servers(self, head, body):
        raise MXNetError(f"KVStore '{self._type}' has no servers (commands are for "
                         "'dist_*' stores)")

    def __getstate__(self):
        raise pickle.PicklingError("a KVStore cannot be pickled")
