"""The binary NDArray file format of MXNet 1.x (``.nd``, ``.params``), read and written
byte for byte as MXNet does.

Layout (little-endian): ``u64 0x112``, ``u64 0``, ``u64 N``, N array records, ``u64 M``
(0 for a list, N for a dict) and M names (``u64`` length + UTF-8 bytes).

A record starts with a ``u32`` magic. 0xF993FAC9 (classic shapes) and 0xF993FACA (numpy
shapes: 0-d and zero-size arrays allowed) are followed by ``i32`` storage type
(0 dense, 1 row_sparse, 2 csr), the storage shape for sparse records, the shape
(``i32`` ndim + ``i64`` dims), the context (``i32`` device type, ``i32`` device id), the
``i32`` dtype flag, for sparse records each aux array's dtype flag and shape, then the
values (C order) and the aux arrays. Older records are also read: 0xF993FAC8 (dense,
shape as above, no storage type) and the oldest layout, whose first word is the ndim
followed by ``u32`` dims.

Sparse records load as RowSparseNDArray / CSRNDArray (aux arrays kept in their saved
integer types) and sparse arrays are written as such records. ``bfloat16`` records (flag
12) load as bfloat16 arrays and bfloat16 arrays save as such records. Files are
written with the numpy-shape magic under ``mx.np_shape(True)`` and the classic one
outside it (unless they hold a 0-d array, which classic shapes cannot express); as in
MXNet, ``load`` accepts numpy-shape records only inside ``np_shape(True)`` and classic
ones only outside it (``load_any`` takes both, for Gluon's parameter files).
"""
import io
import os
import struct

import numpy as np

from ..atomic_file import AtomicFile
from ..base import HAVE_BFLOAT16, MXNetError, bfloat16
from .ndarray import from_data, NDArray
from ..context import Context, cpu, num_gpus
from ..backend import array_module

__all__ = ["save", "load", "load_frombuffer", "dumps", "loads"]

FILE_MAGIC = 0x112
V1_MAGIC, V2_MAGIC, V3_MAGIC = 0xF993FAC8, 0xF993FAC9, 0xF993FACA
DENSE, ROW_SPARSE, CSR = 0, 1, 2
MAX_NDIM = 32

# MXNet 1.x type flags (mshadow). 8-11 are MXNet 2.x's and only read.
_FLAG_TO_DTYPE = {0: "float32", 1: "float64", 2: "float16", 3: "uint8", 4: "int32",
                  5: "int8", 6: "int64", 7: "bool", 8: "int16", 9: "uint16", 10: "uint32",
                  11: "uint64"}
_BFLOAT16 = 12
_WRITE_FLAGS = {np.dtype(v): k for k, v in _FLAG_TO_DTYPE.items() if k <= 7}
_WRITE_FLAGS[bfloat16] = _BFLOAT16


class _BadInput(MXNetError, TypeError):
    """A save() argument of the wrong type (MXNet raises TypeError/ValueError here)."""


class _BadData(MXNetError, ValueError):
    pass


class FormatError(MXNetError):
    """The bytes are not a valid NDArray file."""


# --------------------------------------------------------------------------------------
# reading
# --------------------------------------------------------------------------------------
class _Reader:
    """Reads fixed-size fields from a binary stream of known length, refusing to read
    or allocate past its end (so a corrupt count fails fast instead of hanging)."""

    def __init__(self, stream, size, source):
        self.f, self.left, self.source = stream, size, source

    def fail(self, what):
        return FormatError(f"Invalid NDArray file format ({self.source}): {what}")

    def take(self, n, what):
        if n < 0 or n > self.left:
            raise self.fail(f"truncated while reading {what} ({n} bytes wanted, "
                            f"{self.left} left)")
        data = self.f.read(n)
        if len(data) != n:
            raise self.fail(f"truncated while reading {what}")
        self.left -= n
        return data

    def unpack(self, fmt, what):
        return struct.unpack(fmt, self.take(struct.calcsize(fmt), what))

    def u32(self, what):
        return self.unpack("<I", what)[0]

    def i32(self, what):
        return self.unpack("<i", what)[0]

    def u64(self, what):
        return self.unpack("<Q", what)[0]

    def array(self, shape, dtype, what):
        """A fresh array of shape/dtype filled from the stream."""
        dtype = np.dtype(dtype).newbyteorder("<")
        nbytes = _prod(shape) * dtype.itemsize
        if nbytes > self.left:
            raise self.fail(f"truncated: {what} needs {nbytes} bytes, {self.left} left")
        try:
            out = np.empty(shape, dtype)
        except (MemoryError, ValueError):    # e.g. a zero-size shape with a huge dim
            raise self.fail(f"{what} has an impossible shape {shape}") from None
        if nbytes:
            got = self.f.readinto(memoryview(out.reshape(-1)).cast("B"))
            if got != nbytes:
                raise self.fail(f"truncated while reading {what}")
            self.left -= nbytes
        return out if dtype.isnative else out.astype(dtype.newbyteorder("="))


def _prod(shape):
    n = 1
    for s in shape:
        n *= s
    return n


def _read_shape(r, what, allow_empty):
    ndim = r.i32(f"{what} ndim")
    if ndim < 0 or ndim > MAX_NDIM:
        raise r.fail(f"{what} has an invalid number of dimensions {ndim}")
    dims = r.unpack(f"<{ndim}q", f"{what} dims") if ndim else ()
    if any(d < 0 for d in dims) or (not allow_empty and any(d == 0 for d in dims)):
        raise r.fail(f"{what} has an invalid shape {dims}")
    return tuple(dims)


def _read_dtype(r, what):
    flag = r.i32(f"{what} dtype")
    if flag == _BFLOAT16:
        if not HAVE_BFLOAT16:
            raise r.fail(f"{what} is bfloat16, which needs the ml_dtypes package "
                         "(pip install ml_dtypes)")
        return bfloat16
    if flag not in _FLAG_TO_DTYPE:
        raise r.fail(f"{what} has an unknown dtype flag {flag}")
    return np.dtype(_FLAG_TO_DTYPE[flag])


def _read_values(r, shape, dtype, what):
    if dtype == bfloat16:      # stored as its 16 bits (the upper half of a float32)
        return r.array(shape, np.uint16, what).view(bfloat16)
    return r.array(shape, dtype, what)


def _read_context(r, what):
    dev_type, dev_id = r.unpack("<ii", f"{what} context")
    if dev_type not in (1, 2, 3, 5) or dev_id < 0:
        raise r.fail(f"{what} has an invalid context ({dev_type}, {dev_id})")
    return dev_type, dev_id


def _check_semantics(r, what, np_shape, semantics):
    """MXNet loads a record only under the shape semantics it was saved in
    (``semantics``: the caller's ``is_np_shape()``, or None to accept both)."""
    if semantics is None or np_shape == semantics:
        return
    if np_shape:
        raise r.fail(f"{what} was saved in np shape semantics and must be loaded in the "
                     "same semantics: load it inside `with mx.np_shape(True)` (or "
                     "`@mx.use_np_shape`)")
    raise r.fail(f"{what} was not saved in np shape semantics, but is being loaded in np "
                 "shape semantics: load it inside `with mx.np_shape(False)`")


def _read_record(r, i, semantics=None):
    """One array record -> (numpy array, (device type, device id)); ``semantics``: see
    _check_semantics."""
    what = f"array {i}"
    magic = r.u32(f"{what} magic")
    if magic in (V2_MAGIC, V3_MAGIC):
        np_shape = magic == V3_MAGIC
        _check_semantics(r, what, np_shape, semantics)
        stype = r.i32(f"{what} storage type")
        if stype not in (DENSE, ROW_SPARSE, CSR):
            raise r.fail(f"{what} has an unknown storage type {stype}")
        sshape = _read_shape(r, f"{what} storage shape", True) if stype != DENSE else None
        shape = _read_shape(r, f"{what} shape", True)
        if not np_shape and not shape:
            raise r.fail(f"{what} is an empty (none) NDArray, which cannot be loaded")
    elif magic == V1_MAGIC:
        stype, sshape = DENSE, None
        shape = _read_shape(r, f"{what} shape", False)
    elif 0 < magic <= MAX_NDIM:        # oldest layout: the first word is ndim
        stype, sshape = DENSE, None
        shape = r.unpack(f"<{magic}I", f"{what} dims")
        if any(d == 0 for d in shape):
            raise r.fail(f"{what} has an invalid shape {shape}")
    else:
        raise r.fail(f"{what} has an unknown magic number 0x{magic:08X}")
    ctx = _read_context(r, what)
    dtype = _read_dtype(r, what)
    if stype == DENSE:
        return _read_values(r, shape, dtype, what), ctx
    n_aux = 1 if stype == ROW_SPARSE else 2
    aux = []
    for k in range(n_aux):
        adt = _read_dtype(r, f"{what} aux {k}")
        if adt.kind not in "iu":
            raise r.fail(f"{what} has non-integer sparse indices ({adt})")
        aux.append((adt, _read_shape(r, f"{what} aux {k} shape", True)))
    values = _read_values(r, sshape, dtype, f"{what} values")
    aux = [r.array(s, adt, f"{what} indices") for adt, s in aux]
    return _sparse_value(r, what, stype, shape, values, aux), ctx


def _sparse_value(r, what, stype, shape, values, aux):
    """The RowSparse / CSR value of a sparse record, its indices checked."""
    from ..operator import sparse_values as sv
    if stype == ROW_SPARSE:
        rows = aux[0]
        if not shape or values.shape != (len(rows),) + tuple(shape[1:]) or \
                (len(rows) and (rows.min() < 0 or rows.max() >= shape[0])):
            raise r.fail(f"{what}: row_sparse indices or values do not fit shape {shape}")
        return sv.RowSparse(values, rows, shape)
    indptr, indices = aux
    if len(shape) != 2 or indptr.shape != (shape[0] + 1,) or values.ndim != 1 or \
            indices.shape != values.shape or indptr[0] != 0 or indptr[-1] != len(values) or \
            (np.diff(indptr) < 0).any() or \
            (len(indices) and (indices.min() < 0 or indices.max() >= shape[1])):
        raise r.fail(f"{what}: csr indptr/indices do not fit shape {shape}")
    return sv.CSR(values, indices, indptr, shape)


def _read_file(r, semantics=None):
    """The whole stream -> (list of (array, context), list of names)."""
    magic, _reserved = r.unpack("<QQ", "header")
    if magic != FILE_MAGIC:
        raise r.fail(f"bad file magic 0x{magic:X} (expected 0x{FILE_MAGIC:X})")
    n = r.u64("array count")
    if n > r.left // 16:          # every record takes at least 16 bytes
        raise r.fail(f"array count {n} exceeds the data present")
    arrays = [_read_record(r, i, semantics) for i in range(n)]
    m = r.u64("name count")
    if m not in (0, n):
        raise r.fail(f"{m} names for {n} arrays")
    names = []
    for i in range(m):
        length = r.u64(f"name {i} length")
        raw = r.take(length, f"name {i}")
        try:
            names.append(raw.decode("utf-8"))
        except UnicodeDecodeError:
            raise r.fail(f"name {i} is not valid UTF-8") from None
    return arrays, names


def _to_ndarrays(arrays, names):
    out = []
    gpus = None
    for data, (dev_type, dev_id) in arrays:
        if not isinstance(data, np.ndarray):          # a sparse record: host memory
            from .sparse import _wrap
            out.append(_wrap(data, cpu(0) if dev_type == 2 else Context(
                {1: "cpu", 3: "cpu_pinned", 5: "cpu_shared"}[dev_type], dev_id)))
            continue
        ctx = cpu(0)
        if dev_type == 2:     # saved from a GPU: back there when it exists
            gpus = num_gpus() if gpus is None else gpus
            if dev_id < gpus:
                ctx = Context("gpu", dev_id)
        if ctx.device_typeid == 2:
            data = array_module(ctx).asarray(data)
        out.append(from_data(data, ctx))
    if names:
        return dict(zip(names, out))
    return out


def _load_stream(stream, size, source, semantics):
    return _to_ndarrays(*_read_file(_Reader(stream, size, source), semantics))


def _current_semantics():
    from ..util import is_np_shape
    return bool(is_np_shape())


def load(fname):
    """Load NDArrays saved by ``mx.nd.save`` (or MXNet 1.x): a list, or a dict when the
    file holds names. Sparse arrays come back sparse. As in MXNet, arrays saved under
    ``mx.np_shape(True)`` load only under it, and the others only outside it."""
    return _load_file(fname, _current_semantics())


def load_any(fname):
    """``load`` accepting records of either shape semantics (what Gluon's
    load_parameters does in MXNet by retrying outside numpy semantics)."""
    return _load_file(fname, None)


def _load_file(fname, semantics):
    path = os.fspath(fname) if isinstance(fname, (str, bytes, os.PathLike)) else None
    if path is None:
        raise _BadInput(f"fname must be a str or path, got {type(fname).__name__}")
    try:
        f = open(path, "rb")
    except OSError as err:
        raise MXNetError(f"Failed to open {path!r} for reading: {err.strerror}") from None
    with f:
        return _load_stream(f, os.fstat(f.fileno()).st_size, repr(path), semantics)


def load_frombuffer(buf):
    """Load NDArrays from the bytes of an NDArray file (as ``load``)."""
    if not isinstance(buf, (bytes, bytearray, memoryview)):
        raise _BadInput("buf required to be a string or bytes")
    data = memoryview(buf).cast("B")
    return _load_stream(io.BytesIO(data), len(data), "buffer", _current_semantics())


loads = load_frombuffer


# --------------------------------------------------------------------------------------
# writing
# --------------------------------------------------------------------------------------
def _normalize(data):
    """(list of NDArrays, list of names) from an NDArray, list/tuple or dict."""
    if isinstance(data, NDArray):
        return [data], []
    if isinstance(data, dict):
        for k, v in data.items():
            if not isinstance(k, str) or not isinstance(v, NDArray):
                raise _BadInput("save only accept dict str->NDArray or list of NDArray")
        return list(data.values()), list(data.keys())
    if isinstance(data, (list, tuple)):
        if not all(isinstance(v, NDArray) for v in data):
            raise _BadInput("save only accept dict str->NDArray or list of NDArray")
        return list(data), []
    raise _BadData("data needs to either be a NDArray, dict of str, NDArray pairs or a list "
                   "of NDarrays.")


def _flag(dtype):
    flag = _WRITE_FLAGS.get(np.dtype(dtype))
    if flag is None:
        raise MXNetError(f"cannot save an array of dtype {dtype}: MXNet 1.x files hold "
                         f"{', '.join(_FLAG_TO_DTYPE[k] for k in range(8))} and bfloat16 "
                         "only")
    return flag


def _write_bytes(w, a):
    if a.size:
        if a.dtype == bfloat16:     # its 16 bits (a memoryview refuses the type)
            a = a.view(np.uint16)
        a = np.ascontiguousarray(a, a.dtype.newbyteorder("<"))
        w(memoryview(a.reshape(-1)).cast("B"))


def _write_sparse_record(w, arr, v, magic):
    """A row_sparse / csr record: storage shape, shape, context, dtype, aux types and
    shapes, then the values and the aux arrays (MXNet's order: indptr before indices)."""
    stype = ROW_SPARSE if arr.stype == "row_sparse" else CSR
    sshape, shape, ctx = v.data.shape, tuple(arr.shape), arr.context
    w(struct.pack(f"<Iii{len(sshape)}q", magic, stype, len(sshape), *sshape))
    w(struct.pack(f"<i{len(shape)}q", len(shape), *shape))
    w(struct.pack("<iii", ctx.device_typeid, ctx.device_id, _flag(v.data.dtype)))
    for a in v.aux:
        w(struct.pack(f"<ii{a.ndim}q", _flag(a.dtype), a.ndim, *a.shape))
    _write_bytes(w, v.data)
    for a in v.aux:
        _write_bytes(w, a)


def _write_record(w, arr, a, magic):
    if getattr(arr, "_sparse", False):
        return _write_sparse_record(w, arr, a, magic)
    flag = _flag(a.dtype)
    shape = a.shape
    ctx = arr.context
    w(struct.pack(f"<Iii{len(shape)}q", magic, DENSE, len(shape), *shape))
    w(struct.pack("<iii", ctx.device_typeid, ctx.device_id, flag))
    _write_bytes(w, a)


def _write(w, data):
    arrays, names = _normalize(data)
    host = [arr._read_value() if arr._sparse else arr.asnumpy() for arr in arrays]
    # As MXNet, records take the numpy-shape magic under mx.np_shape(True), the classic
    # one outside it; a 0-d array, which classic shapes cannot express, puts every
    # record in numpy-shape form (MXNet refuses files that mix the two).
    legacy = not _current_semantics() and all(a.shape for a in host)
    w(struct.pack("<QQQ", FILE_MAGIC, 0, len(arrays)))
    for arr, a in zip(arrays, host):
        _write_record(w, arr, a, V2_MAGIC if legacy else V3_MAGIC)
    w(struct.pack("<Q", len(names)))
    for name in names:
        raw = name.encode("utf-8")
        w(struct.pack("<Q", len(raw)))
        w(raw)


def save(fname, data):
    """Save an NDArray, a list of NDArrays or a dict str -> NDArray to ``fname`` in
    MXNet's binary format (loadable by MXNet 1.x and ``mx.nd.load``)."""
    if not isinstance(fname, (str, os.PathLike)):
        raise _BadInput(f"fname must be a str or path, got {type(fname).__name__}")
    path = os.fspath(fname)
    _normalize(data)                  # check the argument before touching the file
    with AtomicFile(path, "wb") as f:   # the path holds the old file or the new one
        _write(f.write, data)


def dumps(data):
    """The bytes ``save`` would write for data."""
    buf = io.BytesIO()
    _write(buf.write, data)
    return buf.getvalue()
