"""Sparse values: what the sparse kernels (``operator.kernels_sparse``) read and return.

Two host-memory containers mirror MXNet's sparse storage layouts:

* ``RowSparse`` (``'row_sparse'``): ``data`` holds the stored rows, shape
  ``(nnr,) + shape[1:]``; ``indices`` (int64, sorted, unique) says which rows they are.
* ``CSR`` (``'csr'``, 2-D): ``data``/``indices`` (column ids) / ``indptr`` as in
  scipy.sparse's csr_matrix, aux arrays kept int64 as MXNet stores them.

A dense value is a plain ``numpy.ndarray``. The arithmetic itself is done by
scipy.sparse and NumPy; these containers only carry the layout and MXNet's aux dtypes.
"""
import numpy as np

from ..base import MXNetError

__all__ = ["RowSparse", "CSR", "stype_of", "todense", "from_dense", "to_scipy",
           "from_scipy", "empty_value", "AUX_DTYPE"]

AUX_DTYPE = np.dtype(np.int64)


class RowSparse:
    """Rows ``indices`` of an array of ``shape`` are ``data``; all others are zero."""
    __slots__ = ("data", "indices", "shape")
    stype = "row_sparse"

    def __init__(self, data, indices, shape):
        self.data, self.indices, self.shape = data, indices, tuple(shape)

    @property
    def dtype(self):
        return self.data.dtype

    @property
    def aux(self):
        return [self.indices]

    @property
    def size(self):
        return self.data.size


class CSR:
    """A 2-D compressed-sparse-row matrix (scipy's layout, MXNet's aux dtypes)."""
    __slots__ = ("data", "indices", "indptr", "shape")
    stype = "csr"

    def __init__(self, data, indices, indptr, shape):
        self.data, self.indices, self.indptr = data, indices, indptr
        self.shape = tuple(shape)

    @property
    def dtype(self):
        return self.data.dtype

    @property
    def aux(self):
        return [self.indptr, self.indices]     # MXNet's aux order: kIndPtr, kIdx

    @property
    def size(self):
        return self.data.size


def stype_of(v):
    return getattr(v, "stype", "default")


def empty_value(stype, shape, dtype):
    """An all-zero value of the storage type (no stored entries)."""
    dtype = np.dtype(dtype)
    if stype == "row_sparse":
        return RowSparse(np.zeros((0,) + tuple(shape[1:]), dtype),
                         np.zeros((0,), AUX_DTYPE), shape)
    if stype == "csr":
        return CSR(np.zeros((0,), dtype), np.zeros((0,), AUX_DTYPE),
                   np.zeros((shape[0] + 1,), AUX_DTYPE), shape)
    return np.zeros(shape, dtype)


def to_scipy(v):
    """A scipy.sparse csr_matrix over a CSR value (shares its arrays where scipy can)."""
    import scipy.sparse as sps
    if isinstance(v, CSR):
        return sps.csr_matrix((v.data, v.indices, v.indptr), shape=v.shape)
    if isinstance(v, RowSparse):
        if len(v.shape) != 2:
            raise MXNetError(f"a row_sparse array of {len(v.shape)} dims has no scipy form")
        return sps.csr_matrix(todense(v))
    return sps.csr_matrix(v)


def from_scipy(m, dtype=None):
    """A CSR value from any scipy.sparse matrix (canonical: sorted, duplicates summed)."""
    m = m.tocsr(copy=True)
    m.sum_duplicates()
    m.sort_indices()
    data = m.data if dtype is None else m.data.astype(dtype, copy=False)
    return CSR(np.ascontiguousarray(data), m.indices.astype(AUX_DTYPE),
               m.indptr.astype(AUX_DTYPE), m.shape)


def todense(v):
    """The dense numpy array a value stands for."""
    if isinstance(v, RowSparse):
        out = np.zeros(v.shape, v.data.dtype)
        if len(v.indices):
            out[v.indices] = v.data
        return out
    if isinstance(v, CSR):
        out = np.zeros(v.shape, v.data.dtype)
        if v.data.size:
            rows = np.repeat(np.arange(v.shape[0]), np.diff(v.indptr))
            out[rows, v.indices] = v.data
        return out
    return v


def from_dense(a, stype):
    """The value of storage type ``stype`` holding dense array ``a`` (zeros dropped:
    rows that are all zero for row_sparse, zero entries for csr). ``a`` may lie in
    device memory (a CuPy array): sparse values live in host memory."""
    from ..backend import to_numpy
    a = np.asarray(to_numpy(a))
    if stype == "row_sparse":
        if a.ndim == 0:
            raise MXNetError("cast_storage: a 0-d array cannot be row_sparse")
        flat = a.reshape(a.shape[0], -1) if a.shape[0] else a.reshape(0, 0)
        keep = np.flatnonzero(np.any(flat != 0, axis=1)) if a.shape[0] else \
            np.zeros((0,), AUX_DTYPE)
        return RowSparse(np.ascontiguousarray(a[keep]), keep.astype(AUX_DTYPE), a.shape)
    if stype == "csr":
        if a.ndim != 2:
            raise MXNetError(f"cast_storage: csr storage needs a 2-D array, got shape "
                             f"{a.shape}")
        rows, cols = np.nonzero(a)
        indptr = np.zeros(a.shape[0] + 1, AUX_DTYPE)
        np.cumsum(np.bincount(rows, minlength=a.shape[0]), out=indptr[1:])
        return CSR(np.ascontiguousarray(a[rows, cols]), cols.astype(AUX_DTYPE), indptr,
                   a.shape)
    if stype == "default":
        return a
    raise MXNetError(f"unknown storage type {stype!r}")


def convert(v, stype):
    """v cast to storage type ``stype``."""
    if stype_of(v) == stype:
        return v
    if stype == "default":
        return todense(v)
    if stype == "csr" and isinstance(v, RowSparse) and len(v.shape) == 2:
        return from_scipy(to_scipy(v), v.dtype)
    return from_dense(todense(v), stype)
