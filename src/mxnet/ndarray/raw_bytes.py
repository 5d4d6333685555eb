"""One NDArray as raw bytes: the single-record form of MXNet's NDArray file format
(MXNDArraySaveRawBytes / MXNDArrayLoadFromRawBytes), used by pickling through
``NDArray.__getstate__`` / ``__setstate__``."""
import io

from .serialization import V2_MAGIC, V3_MAGIC, _Reader, _current_semantics, _read_record, \
    _to_ndarrays, _write_record

__all__ = ["save_raw_bytes", "load_raw_bytes"]


def save_raw_bytes(arr):
    """The bytes of one array record for NDArray arr (sparse ones in MXNet's sparse
    record form, as ``nd.save`` writes them)."""
    host = arr._read_value() if arr._sparse else arr.asnumpy()
    # As MXNet (and ``nd.save``): the numpy-shape magic under mx.np_shape(True), which
    # MXNet requires to load the record there; the classic one outside it, unless the
    # shape is one classic shapes cannot express (0-d, zero-size)
    legacy = not _current_semantics() and host.shape and all(host.shape)
    buf = io.BytesIO()
    _write_record(buf.write, arr, host, V2_MAGIC if legacy else V3_MAGIC)
    return buf.getvalue()


def load_raw_bytes(buf):
    """The NDArray one record holds (on its saved GPU when present, else the CPU)."""
    data = memoryview(buf).cast("B")
    record = _read_record(_Reader(io.BytesIO(data), len(data), "raw bytes"), 0)
    return _to_ndarrays([record], [])[0]
