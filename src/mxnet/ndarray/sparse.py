"""mx.nd.sparse: NDArrays in row_sparse and csr storage.

A sparse NDArray is an NDArray whose chunk holds a ``RowSparse`` or ``CSR`` value
(``operator.sparse_values``) instead of a dense buffer. Operators run on it through
``ndarray.sparse_dispatch``: a sparse kernel when one is registered for the storage
types at hand (``operator.kernels_sparse``), else MXNet's storage fallback (the
inputs are densified, the dense operator runs, a sparse ``out`` gets the result cast
back). Sparse arrays live in host memory; their work runs synchronously once their
inputs are ready.
"""
import numbers

import numpy as np

from ..base import MXNetError, dtype_np, integer_types, mx_real_t, numeric_types  # noqa: F401
from ..context import Context, current_context  # noqa: F401
from ..operator import frontend, sparse_values as sv
from .chunk import Chunk
from .ndarray import (NDArray, _check_ctx, from_data, _STORAGE_TYPE_UNDEFINED,  # noqa: F401
                      _STORAGE_TYPE_DEFAULT, _STORAGE_TYPE_ROW_SPARSE, _STORAGE_TYPE_CSR,
                      _STORAGE_TYPE_STR_TO_ID)

__all__ = ["BaseSparseNDArray", "CSRNDArray", "RowSparseNDArray", "csr_matrix",
           "row_sparse_array", "zeros", "empty", "array", "NotSupportedForSparseNDArray"]

_STORAGE_AUX_TYPES = {"row_sparse": [np.int64], "csr": [np.int64, np.int64]}
py_slice = slice
py_sum = sum
native_array = np.array
# MXNet's generated modules expose these names; they point at pymxnet's equivalents.
mx_real_t = mx_real_t


class NotSupportedForSparseNDArray(MXNetError):
    """An NDArray method that sparse arrays do not have."""

    def __init__(self, function, alias=None, *args):
        name = getattr(function, "__name__", str(function))
        if alias:
            name += f" (alias {alias})"
        super().__init__(f"Function {name} is not supported for SparseNDArray.")


class BaseSparseNDArray(NDArray):
    """The common base of RowSparseNDArray and CSRNDArray."""

    __slots__ = ()
    _sparse = True

    # --- the stored value ------------------------------------------------------
    @property
    def _value(self):
        """The RowSparse/CSR value (callers must have waited)."""
        return self._chunk.data

    def _read_value(self):
        """The stored value, after pending writes complete (raises their failure)."""
        c = self._chunk
        if c.num_pending or c.exception is not None:
            from .. import engine
            engine.get().wait_for_var(c)
        return c.data

    def wait_to_read(self):
        self._read_value()

    @property
    def _data(self):
        # What a dense reader of this array sees: its dense form (storage fallback), in
        # the memory of the array's context, as every dense array's data (a GPU
        # array's dense readers are CuPy kernels).
        v = self._chunk.data
        if isinstance(v, sv.RowSparse) and self._ctx is not None and \
                self._ctx.device_typeid == 2:
            return _rows_on_device(v, self._ctx)
        return _in_ctx_memory(sv.todense(v) if v is not None else
                              np.zeros(self._shape, self._dtype), self._ctx)

    def _set_value(self, value):
        """Replace the stored value (a RowSparse/CSR of this array's stype)."""
        value = sv.convert(value, self.stype)
        if tuple(value.shape) != self._shape:
            raise MXNetError(f"cannot assign a value of shape {tuple(value.shape)} to a "
                             f"{self.stype} array of shape {self._shape}")
        if value.dtype != self._dtype:
            value = _with_data(value, value.data.astype(self._dtype))
        self._chunk.data = value

    def _set_dense(self, dense):
        """Take the values of dense numpy array ``dense`` (zeros are not stored)."""
        from ..backend import to_numpy
        self._chunk.data = sv.from_dense(np.asarray(to_numpy(dense), dtype=self._dtype),
                                         self.stype)

    @property
    def stype(self):
        return type(self)._stype

    @property
    def _num_aux(self):
        return len(_STORAGE_AUX_TYPES[self.stype])

    @property
    def _aux_types(self):
        return [a.dtype.type for a in self._read_value().aux]

    def _aux_type(self, i):
        return self._aux_types[i]

    @property
    def data(self):
        """The stored values as a dense NDArray (shares memory with this array on the
        CPU; a GPU array's is a device copy: sparse values live in host memory)."""
        return from_data(_in_ctx_memory(self._read_value().data, self._ctx), self._ctx)

    def _data_nd(self):
        return self.data

    def _aux_data(self, i):
        return from_data(_in_ctx_memory(self._read_value().aux[i], self._ctx), self._ctx)

    @property
    def nnz(self):
        return int(self._read_value().data.shape[0]) if self.stype == "csr" else \
            int(self._read_value().data.size)

    def asnumpy(self):
        return np.array(sv.todense(self._read_value()), copy=True)

    def __repr__(self):
        shape = "x".join(map(str, self._shape))
        return f"\n<{type(self).__name__} {shape} @{self._ctx}>"

    def __iter__(self):
        raise NotSupportedForSparseNDArray(self.__iter__)

    def __len__(self):
        return self._shape[0]

    # --- what sparse arrays refuse ------------------------------------------------
    def _at(self, idx):
        raise NotSupportedForSparseNDArray(self._at, "[idx]", idx)

    def _slice(self, start, stop):
        raise NotSupportedForSparseNDArray(self._slice, None, start, stop)

    def reshape(self, *shape, **kwargs):
        raise NotSupportedForSparseNDArray(self.reshape, None, shape)

    def _as_view(self, shape, offset_elems):
        raise NotSupportedForSparseNDArray(self.reshape, None, shape)

    def to_dlpack_for_read(self):
        raise NotSupportedForSparseNDArray(self.to_dlpack_for_read)

    def to_dlpack_for_write(self):
        raise NotSupportedForSparseNDArray(self.to_dlpack_for_write)

    # --- copies and conversions ---------------------------------------------------------
    def tostype(self, stype):
        """A copy in storage type ``stype`` ('default', 'row_sparse' or 'csr')."""
        from .sparse_dispatch import cast_storage_nd
        return cast_storage_nd(self, stype)

    def astype(self, dtype, copy=True):
        dt = dtype_np(dtype)
        if not copy and dt == self._dtype:
            return self
        v = self._read_value()
        return _wrap(_with_data(v, v.data.astype(dt)), self._ctx)

    def copyto(self, other):
        """Copy into another array (cast to its storage type) or onto a Context."""
        if isinstance(other, NDArray):
            if other is self:
                return other
            if other._shape != self._shape:
                raise MXNetError(f"copyto: shape mismatch {self._shape} vs {other._shape}")
            return _assign(other, self)
        if isinstance(other, Context):
            return _wrap(_copy_value(self._read_value()), other)
        raise TypeError(f"copyto does not support type {type(other).__name__}")

    def copy(self):
        return self.copyto(self._ctx)

    def as_in_context(self, context):
        return self if self._ctx == context else self.copyto(context)

    as_in_ctx = as_in_context

    def detach(self):
        return type(self)(self._chunk, self._shape, self._dtype, self._ctx)

    def check_format(self, full_check=True):
        """Raise MXNetError if the stored indices do not describe a valid array."""
        check_format(self._read_value(), full_check)

    # --- indexing ---------------------------------------------------------------------
    def __setitem__(self, key, value):
        if not (isinstance(key, py_slice) and key == py_slice(None)):
            raise NotSupportedForSparseNDArray(self.__setitem__, None, key, value)
        if isinstance(value, NDArray):
            if value is not self:
                _assign(self, value)
        elif isinstance(value, numeric_types):
            if self.stype == "csr":
                raise MXNetError("assigning a scalar to a csr array is not supported")
            self._set_value(sv.from_dense(np.full(self._shape, value, self._dtype),
                                          "default"))
        elif isinstance(value, (np.ndarray, np.generic, list, tuple)):
            arr = np.broadcast_to(np.asarray(value, dtype=self._dtype), self._shape)
            self._set_value(np.ascontiguousarray(arr))
        else:
            raise TypeError(f"type {type(value).__name__} not supported")

    # same-shape arithmetic uses the elemwise operators, which keep sparse storage
    _ELEMWISE = {"broadcast_add": "elemwise_add", "broadcast_sub": "elemwise_sub",
                 "broadcast_mul": "elemwise_mul", "broadcast_div": "elemwise_div"}

    def _binary_op(self, other, op, scalar_op, reflect=False):
        from .dispatch import binary, invoke_by_name
        name = self._ELEMWISE.get(op)
        if name is not None and isinstance(other, NDArray) and other.shape == self.shape:
            return invoke_by_name(name, [other, self] if reflect else [self, other], {})
        return binary(self, other, op, scalar_op, reflect)

    # in-place arithmetic keeps the storage type (MXNet writes into self)
    def _inplace(self, other, op, scalar_op):
        from .dispatch import invoke_by_name
        if isinstance(other, NDArray):
            name = {"broadcast_add": "elemwise_add", "broadcast_sub": "elemwise_sub",
                    "broadcast_mul": "elemwise_mul", "broadcast_div": "elemwise_div"}.get(op, op)
            if other.shape != self.shape:
                name = op
            return invoke_by_name(name, [self, other], {}, out=self)
        if isinstance(other, numeric_types):
            return invoke_by_name(scalar_op, [self], {"scalar": float(other)}, out=self)
        raise TypeError(f"type {type(other).__name__} not supported")


class CSRNDArray(BaseSparseNDArray):
    """A 2-D array in compressed sparse row storage (``data``, ``indices``, ``indptr``)."""

    __slots__ = ()
    _stype = "csr"

    @property
    def indices(self):
        """The column index of each stored value (int64 NDArray)."""
        return self._aux_data(1)

    @property
    def indptr(self):
        """Row pointers: row i's values are data[indptr[i]:indptr[i+1]] (int64 NDArray)."""
        return self._aux_data(0)

    def asscipy(self):
        """A scipy.sparse.csr_matrix copy of this array."""
        import scipy.sparse as sps
        v = self._read_value()
        return sps.csr_matrix((v.data.copy(), v.indices.copy(), v.indptr.copy()),
                              shape=v.shape)

    def __getitem__(self, key):
        """Row slices (step 1) and single rows give csr arrays, as in MXNet."""
        n = self._shape[0]
        if isinstance(key, integer_types + (np.integer,)):
            if not -n <= key < n:
                raise IndexError(f"index {key} is out of bounds for axis 0 with size {n}")
            key = int(key) % n
            key = py_slice(key, key + 1)
        if isinstance(key, py_slice):
            start, stop, step = key.indices(n)
            if step != 1:
                raise ValueError("csr slicing only supports step 1")
            stop = max(stop, start)
            from .sparse_dispatch import invoke_sparse
            return invoke_sparse("slice", [self], {"begin": (start,), "end": (stop,)})
        if isinstance(key, tuple) and len(key) == 1:
            return self[key[0]]
        raise ValueError(f"CSRNDArray only supports [] with an int or a row slice, got "
                         f"{key!r}")


class RowSparseNDArray(BaseSparseNDArray):
    """An array whose first-axis rows are stored only where nonzero (``data``,
    ``indices``)."""

    __slots__ = ()
    _stype = "row_sparse"

    @property
    def indices(self):
        """Which rows are stored (sorted int64 NDArray)."""
        return self._aux_data(0)

    def retain(self, *args, **kwargs):
        """Keep only the rows given (see mx.nd.sparse.retain)."""
        return retain(self, *args, **kwargs)

    def __getitem__(self, key):
        if isinstance(key, py_slice) and key == py_slice(None):
            return self
        if isinstance(key, py_slice):
            raise NotSupportedForSparseNDArray(self.__getitem__, None, key)
        raise ValueError(f"RowSparseNDArray only supports [:], got {key!r}")


_CLASSES = {"row_sparse": RowSparseNDArray, "csr": CSRNDArray}


# --- internal helpers ----------------------------------------------------------------
def _with_data(v, data):
    if isinstance(v, sv.RowSparse):
        return sv.RowSparse(data, v.indices, v.shape)
    return sv.CSR(data, v.indices, v.indptr, v.shape)


def _copy_value(v):
    if isinstance(v, sv.RowSparse):
        return sv.RowSparse(v.data.copy(), v.indices.copy(), v.shape)
    if isinstance(v, sv.CSR):
        return sv.CSR(v.data.copy(), v.indices.copy(), v.indptr.copy(), v.shape)
    return np.array(v, copy=True)


def _rows_on_device(value, ctx):
    """The dense form of RowSparse ``value`` in the memory of GPU ``ctx``: only the
    stored rows and their indices cross to the device (an Embedding's gradient is a few
    rows of a large table), the zeros are made there."""
    from ..backend import array_module, device_put, device_scope
    with device_scope(ctx):
        dense = array_module(ctx).zeros(tuple(value.shape), value.data.dtype)
        if len(value.indices):
            dense[device_put(np.asarray(value.indices, np.int64), ctx)] = \
                device_put(np.ascontiguousarray(value.data), ctx)
    return dense


def _in_ctx_memory(host_array, ctx):
    """``host_array`` itself for a CPU context, a copy in device memory for a GPU one."""
    if ctx is not None and ctx.device_typeid == 2:
        from ..backend import device_put
        return device_put(host_array, ctx)
    return host_array


def _wrap(value, ctx):
    """An NDArray (sparse class for sparse values) owning ``value``."""
    if isinstance(value, (sv.RowSparse, sv.CSR)):
        cls = _CLASSES[value.stype]
        return cls(Chunk(value), tuple(value.shape), np.dtype(value.data.dtype), ctx)
    if ctx is not None and ctx.device_typeid == 2:
        # a dense result for a GPU array: sparse values live in host memory, dense
        # ones in the array's device memory
        return from_data(_in_ctx_memory(value, ctx), ctx)
    value = np.ascontiguousarray(value)
    return from_data(value, ctx)


def _value_of(arr):
    """The value an NDArray holds (sparse value, or its dense numpy data)."""
    if isinstance(arr, BaseSparseNDArray):
        return arr._read_value()
    from ..backend import to_numpy
    return to_numpy(arr._read())


def _assign(dst, src):
    """Write src (any storage) into dst (any storage), cast to dst's storage type."""
    v = _value_of(src)
    if isinstance(dst, BaseSparseNDArray):
        dst.wait_to_write()
        dst._set_value(_copy_value(v))
    else:
        dst[:] = sv.todense(v)
    return dst


# Pickles load as in MXNet (NDArray.__reduce__: the class, then the raw sparse record).
# Pickles of earlier pymxnet versions name this function instead: it still reads them.
def _rebuild_sparse(stype, data, aux, shape, devtype, devid):
    ctx = Context(devtype, devid)
    if stype == "row_sparse":
        return _wrap(sv.RowSparse(data, aux[0], shape), ctx)
    return _wrap(sv.CSR(data, aux[1], aux[0], shape), ctx)


def check_format(v, full_check=True):
    """Validate a sparse value's indices (MXNet's CheckFormat)."""
    if isinstance(v, sv.CSR):
        indptr, indices = v.indptr, v.indices
        if indptr.shape != (v.shape[0] + 1,):
            raise MXNetError("csr check_format: indptr must have num_rows + 1 entries")
        if not full_check:
            return
        if len(indptr) and (indptr[0] != 0 or indptr[-1] != len(indices)):
            raise MXNetError("csr check_format: indptr must start at 0 and end at nnz")
        if np.any(np.diff(indptr) < 0) or np.any(indptr < 0):
            raise MXNetError("csr check_format: indptr must be non-decreasing and "
                             "non-negative")
        if np.any(indptr > len(indices)):
            raise MXNetError("csr check_format: indptr exceeds the number of indices")
        if np.any(indices < 0) or np.any(indices >= v.shape[1]):
            raise MXNetError("csr check_format: column indices out of range")
        for r in range(v.shape[0]):
            seg = indices[indptr[r]:indptr[r + 1]]
            if np.any(np.diff(seg) <= 0):
                raise MXNetError("csr check_format: column indices must be ascending "
                                 "within each row")
    elif isinstance(v, sv.RowSparse):
        idx = v.indices
        if not full_check:
            return
        if np.any(idx < 0) or np.any(idx >= v.shape[0]):
            raise MXNetError("row_sparse check_format: row indices out of range")
        if np.any(np.diff(idx) <= 0):
            raise MXNetError("row_sparse check_format: row indices must be ascending")


def _prepare_default_dtype(src_array, dtype):
    if dtype is None:
        if isinstance(src_array, (NDArray, np.ndarray)):
            return np.dtype(src_array.dtype)
        try:
            import scipy.sparse as sps
            if sps.issparse(src_array):
                return np.dtype(src_array.dtype)
        except ImportError:
            pass
        return np.dtype(mx_real_t)
    return dtype_np(dtype)


def _prepare_src_array(src, dtype):
    if isinstance(src, NDArray):
        return src.asnumpy()
    if not isinstance(src, np.ndarray):
        try:
            src = np.array(src, dtype=dtype)
        except (TypeError, ValueError):
            raise TypeError(f"values must be array-like, got {type(src).__name__}") from None
    return src


def _aux_array(a, what):
    a = a.asnumpy() if isinstance(a, NDArray) else np.asarray(a)
    if a.size and not np.issubdtype(a.dtype, np.integer):
        if not np.all(a == np.round(a)):
            raise TypeError(f"{what} must be integers")
    return np.ascontiguousarray(a, dtype=np.int64).reshape(-1)


def _check_shape(s1, s2):
    if s1 and s2 and tuple(s1) != tuple(s2):
        raise ValueError(f"Shape mismatch detected. {tuple(s1)} v.s. {tuple(s2)}")


def _is_scipy(x):
    try:
        import scipy.sparse as sps
    except ImportError:
        return False
    return sps.issparse(x)


# --- creation ----------------------------------------------------------------------------
def _csr_matrix_from_definition(data, indices, indptr, shape=None, ctx=None, dtype=None,
                                indices_type=None, indptr_type=None):
    ctx = _check_ctx(ctx)
    dtype = _prepare_default_dtype(data, dtype)
    data = np.ascontiguousarray(_prepare_src_array(data, dtype), dtype=dtype).reshape(-1)
    indices = _aux_array(indices, "indices")
    indptr = _aux_array(indptr, "indptr")
    if data.shape != indices.shape:
        raise ValueError(f"csr_matrix: data ({data.shape[0]}) and indices "
                         f"({indices.shape[0]}) must have the same length")
    if shape is None:
        if indices.shape[0] == 0:
            raise ValueError("invalid shape: cannot infer the shape of an empty csr "
                             "matrix; give shape")
        shape = (len(indptr) - 1, int(indices.max()) + 1)
    shape = tuple(int(s) for s in shape)
    if len(shape) != 2:
        raise ValueError(f"csr_matrix: shape must be 2-D, got {shape}")
    return _wrap(sv.CSR(data, indices, indptr, shape), ctx)


def _row_sparse_ndarray_from_definition(data, indices, shape=None, ctx=None, dtype=None,
                                        indices_type=None):
    ctx = _check_ctx(ctx)
    dtype = _prepare_default_dtype(data, dtype)
    data = np.ascontiguousarray(_prepare_src_array(data, dtype), dtype=dtype)
    indices = _aux_array(indices, "indices")
    if data.ndim == 0 or data.shape[0] != indices.shape[0]:
        if not (data.size == 0 and indices.size == 0):
            raise ValueError(f"row_sparse_array: data has {data.shape[:1]} rows but "
                             f"{indices.shape[0]} indices were given")
    if shape is None:
        if indices.shape[0] == 0:
            raise ValueError("invalid shape: cannot infer the shape of an empty "
                             "row_sparse array; give shape")
        shape = (int(indices.max()) + 1,) + data.shape[1:]
    shape = tuple(int(s) for s in shape)
    if data.size == 0 and indices.size == 0:
        data = data.reshape((0,) + shape[1:])
    elif data.shape[1:] != shape[1:]:
        raise ValueError(f"row_sparse_array: rows of shape {data.shape[1:]} do not fit "
                         f"shape {shape}")
    return _wrap(sv.RowSparse(data, indices, shape), ctx)


def csr_matrix(arg1, shape=None, ctx=None, dtype=None):
    """Create a CSRNDArray from ``(data, indices, indptr)``, ``(data, (row, col))``, a
    shape ``(M, N)`` (all zeros), a scipy.sparse matrix, a CSRNDArray, or a 2-D dense
    array (NDArray, NumPy array or nested list)."""
    if isinstance(arg1, tuple):
        n = len(arg1)
        if n == 2:
            if isinstance(arg1[1], tuple) and len(arg1[1]) == 2:      # COO form
                import scipy.sparse as sps
                data, (row, col) = arg1
                data = _prepare_src_array(data, _prepare_default_dtype(data, dtype))
                row, col = _aux_array(row, "row"), _aux_array(col, "col")
                coo = sps.coo_matrix((data, (row, col)), shape=shape)
                _check_shape(coo.shape, shape)
                return csr_matrix(coo.tocsr(), shape=shape, ctx=ctx,
                                  dtype=_prepare_default_dtype(arg1[0], dtype))
            _check_shape(arg1, shape)
            return zeros("csr", arg1, ctx=ctx, dtype=dtype)
        if n == 3:
            return _csr_matrix_from_definition(arg1[0], arg1[1], arg1[2], shape=shape,
                                               ctx=ctx, dtype=dtype)
        raise ValueError(f"Unexpected length of input tuple: {n}")
    if isinstance(arg1, CSRNDArray):
        _check_shape(arg1.shape, shape)
        return array(arg1, ctx=ctx, dtype=dtype)
    if isinstance(arg1, RowSparseNDArray):
        raise ValueError("Unexpected input type: RowSparseNDArray")
    if _is_scipy(arg1):
        _check_shape(arg1.shape, shape)
        return array(arg1, ctx=ctx, dtype=dtype)
    dtype = _prepare_default_dtype(arg1, dtype)
    dns = _prepare_src_array(arg1, dtype)
    if dns.ndim != 2:
        raise ValueError(f"csr_matrix: a dense source must be 2-D, got shape {dns.shape}")
    _check_shape(dns.shape, shape)
    return _wrap(sv.from_dense(dns.astype(dtype, copy=False), "csr"), _check_ctx(ctx))


def row_sparse_array(arg1, shape=None, ctx=None, dtype=None):
    """Create a RowSparseNDArray from ``(data, indices)``, a shape (all zeros), a
    RowSparseNDArray, or a dense array (NDArray, NumPy array or nested list)."""
    if isinstance(arg1, tuple):
        n = len(arg1)
        if n < 2:
            raise ValueError(f"Unexpected length of input tuple: {n}")
        if n > 2 or all(isinstance(a, integer_types + (np.integer,)) for a in arg1):
            _check_shape(arg1, shape)
            return zeros("row_sparse", arg1, ctx=ctx, dtype=dtype)
        return _row_sparse_ndarray_from_definition(arg1[0], arg1[1], shape=shape, ctx=ctx,
                                                   dtype=dtype)
    if isinstance(arg1, RowSparseNDArray):
        _check_shape(arg1.shape, shape)
        return array(arg1, ctx=ctx, dtype=dtype)
    if isinstance(arg1, CSRNDArray):
        raise ValueError("Unexpected input type: CSRNDArray")
    dtype = _prepare_default_dtype(arg1, dtype)
    dns = _prepare_src_array(arg1, dtype)
    _check_shape(dns.shape, shape)
    return _wrap(sv.from_dense(dns.astype(dtype, copy=False), "row_sparse"), _check_ctx(ctx))


def zeros(stype, shape, ctx=None, dtype=None, **kwargs):
    """An all-zero array of storage type ``stype`` ('default', 'row_sparse', 'csr')."""
    if stype == "default":
        from .creation import zeros as dense_zeros
        return dense_zeros(shape, ctx=ctx, dtype=dtype, **kwargs)
    if stype not in _CLASSES:
        raise ValueError(f"unknown storage type {stype!r}")
    if isinstance(shape, integer_types + (np.integer,)):
        shape = (shape,)
    shape = tuple(int(s) for s in shape)
    if stype == "csr" and len(shape) != 2:
        raise ValueError(f"a csr array must be 2-D, got shape {shape}")
    dt = dtype_np(dtype, mx_real_t)
    return _wrap(sv.empty_value(stype, shape, dt), _check_ctx(ctx))


_zeros_ndarray = zeros


def empty(stype, shape, ctx=None, dtype=None):
    """An array of storage type ``stype`` with no stored entries."""
    if isinstance(shape, integer_types + (np.integer,)):
        shape = (shape,)
    return zeros(stype, shape, ctx=ctx, dtype=dtype)


def array(source_array, ctx=None, dtype=None):
    """A sparse array copied from a sparse NDArray or a scipy.sparse matrix (csr)."""
    ctx = _check_ctx(ctx)
    if isinstance(source_array, BaseSparseNDArray):
        v = source_array._read_value()
        dt = dtype_np(dtype, v.dtype)
        return _wrap(_with_data(_copy_value(v), v.data.astype(dt)), ctx)
    if _is_scipy(source_array):
        import scipy.sparse as sps
        if not isinstance(source_array, sps.csr_matrix):
            raise ValueError("Unexpected input type: only scipy.sparse.csr_matrix is "
                             f"supported, got {type(source_array).__name__}")
        dt = _prepare_default_dtype(source_array, dtype)
        return _wrap(sv.from_scipy(source_array, dt), ctx)
    if isinstance(source_array, NDArray):
        raise ValueError("Unexpected input type: a dense NDArray; use tostype()")
    raise ValueError(f"Unexpected source_array type: {type(source_array).__name__}")


def _ndarray_cls(handle, writable=True, stype=_STORAGE_TYPE_UNDEFINED):
    raise NotImplementedError("mx.nd.sparse._ndarray_cls: pymxnet arrays are not built "
                              "from C handles")


def _set_ndarray_class(cls):
    raise NotImplementedError("mx.nd.sparse._set_ndarray_class: pymxnet has no C "
                              "NDArray class registry")


def _new_alloc_handle(*args, **kwargs):
    raise NotImplementedError("mx.nd.sparse._new_alloc_handle: pymxnet has no C handles")


def _storage_type(handle):
    stype = getattr(handle, "stype", None)
    if stype is None:
        raise NotImplementedError("mx.nd.sparse._storage_type: pymxnet has no C handles")
    return _STORAGE_TYPE_STR_TO_ID[stype]


# operator.custom hands callbacks arrays of any storage (sparse values included)
frontend.provide(wrap_value=_wrap, value_of=_value_of)

from .sparse_ops import *  # noqa: E402,F401,F403  (operator functions of mx.nd.sparse)
from .sparse_ops import __all__ as _ops_all  # noqa: E402

__all__ += _ops_all
