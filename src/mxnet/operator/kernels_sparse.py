"""Sparse kernels: operators on row_sparse / csr values (MXNet's FComputeEx).

The table maps an operator name to ``fn(p, values, call)``: ``values`` holds one entry
per input, a ``sparse_values.RowSparse``/``CSR`` or a dense numpy array; ``call`` has
``ctx``, ``is_train``, ``inputs`` (the arrays) and ``out_stype(i, default)``. It
returns the list of result values (sparse or dense), or ``NotImplemented`` for storage
types it does not handle: then ``ndarray.sparse_dispatch`` densifies the inputs and
runs the operator's dense body (MXNet's storage fallback). A kernel may update an
input array in place (an optimizer's states) and may return the very value of the
array passed as ``out`` to say it was updated in place.

Results follow MXNet 1.9.1's storage inference (e.g. csr + csr is csr, csr + dense is
dense, dot(csr.T, dense) is row_sparse). The arithmetic is scipy.sparse and NumPy.
"""
import numpy as np

from ..base import MXNetError
from . import sparse_values as sv
from .registry import get_op

__all__ = ["register_sparse", "lookup_sparse", "lookup_sparse_gpu", "lookup_sparse_backward",
           "SPARSE_FROM_DENSE", "add_values", "StorageError"]


class StorageError(MXNetError):
    """Storage types an operator refuses outright (MXNet fails its storage inference),
    as opposed to ones it runs through the dense fallback."""

_TABLE = {}
# Backward kernels giving row_sparse gradients: op name -> fn(p, out_grads, in_data,
# need) -> one gradient value (or None) per argument. Autograd uses them when the
# gradient goes into a sparse buffer.
_BACKWARD = {}
# Operators whose kernel may return sparse values for all-dense inputs.
SPARSE_FROM_DENSE = frozenset({"cast_storage", "dot", "_square_sum"})

# The operators mx.nd.sparse / mx.sym.sparse expose (MXNet 1.9.1 lists those with a
# sparse implementation there).
SPARSE_MODULE_OPS = (
    "ElementWiseSum", "Embedding", "FullyConnected", "LinearRegressionOutput",
    "LogisticRegressionOutput", "MAERegressionOutput", "_contrib_round_ste",
    "_contrib_sign_ste", "abs", "adam_update", "add_n", "arccos", "arccosh", "arcsin",
    "arcsinh", "arctan", "arctanh", "broadcast_add", "broadcast_div", "broadcast_minus",
    "broadcast_mul", "broadcast_plus", "broadcast_sub", "cast_storage", "cbrt", "ceil",
    "clip", "concat", "cos", "cosh", "degrees", "dot", "elemwise_add", "elemwise_div",
    "elemwise_mul", "elemwise_sub", "exp", "expm1", "fix", "floor", "ftrl_update", "gamma",
    "gammaln", "log", "log10", "log1p", "log2", "make_loss", "mean", "negative", "norm",
    "radians", "relu", "rint", "round", "rsqrt", "sgd_mom_update", "sgd_update", "sigmoid",
    "sign", "sin", "sinh", "slice", "sqrt", "square", "stop_gradient", "sum", "tan", "tanh",
    "trunc", "where", "zeros_like")


def sparse_requested(op_name, p):
    """Whether a call of op_name on dense inputs asks for a sparse result."""
    if op_name == "cast_storage":
        return p.stype != "default"
    if op_name == "dot":
        return getattr(p, "forward_stype", None) not in (None, "default")
    return False


def register_sparse(op_name, fn):
    """Use ``fn`` for calls of ``op_name`` (and its aliases) with sparse storage."""
    op = get_op(op_name)
    _TABLE[op.name] = fn
    return fn


def lookup_sparse(op_name):
    if not _TABLE:
        _install()        # once every operator is registered
    return _TABLE.get(op_name)


def lookup_sparse_gpu(op_name):
    """The kernel for calls on a GPU context whose dense operands stay in device memory
    (cupyx.scipy.sparse's dot, the lazy optimizer updates), or None. It runs with the
    context's device current and may return NotImplemented (then the host kernel runs,
    with copies)."""
    return _GPU_TABLE.get(op_name)


def lookup_sparse_backward(op_name):
    if not _TABLE:
        _install()
    return _BACKWARD.get(op_name)


def add_values(a, b):
    """a + b for gradient values of any storage (row_sparse + row_sparse stays so)."""
    if isinstance(a, sv.RowSparse) and isinstance(b, sv.RowSparse):
        return _add_n(None, [a, b], None)[0]
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray) or not (
            isinstance(a, (sv.RowSparse, sv.CSR)) or isinstance(b, (sv.RowSparse, sv.CSR))):
        return a + b
    return sv.todense(a) + sv.todense(b)


def _segment_sum(keys, values):
    """(unique keys, per-key sums of the value rows), keys sorted."""
    order = np.argsort(keys)          # sums do not need a stable order
    k = keys[order]
    if not len(k):
        return k.astype(np.int64), values[:0]
    starts = np.flatnonzero(np.r_[True, k[1:] != k[:-1]])
    return k[starts].astype(np.int64), np.add.reduceat(values[order], starts, axis=0)


def _csr_t_dot(a, rhs, dtype):
    """csr.T @ rhs as row_sparse. Its rows are the columns csr stores: renumber them
    0..k-1 (np.unique), so the product is a (k, n) one of a csc view of the same data,
    in O(nnz) memory and time, never O(number of columns)."""
    import scipy.sparse as sps
    rows, local = np.unique(a.indices, return_inverse=True)
    m = sps.csc_matrix((a.data, local.reshape(-1), a.indptr), shape=(len(rows), a.shape[0]))
    res = np.asarray(m @ rhs, dtype=dtype)
    return sv.RowSparse(np.ascontiguousarray(res), rows.astype(np.int64, copy=False),
                        (a.shape[1], rhs.shape[1]))


def _embedding_backward(p, out_grads, in_data, need, in_shapes):
    """The weight gradient of Embedding as row_sparse: the looked-up rows only (the
    indices' gradient, when wanted, is zero as in the dense rule)."""
    if len(need) < 2 or not need[1] or not getattr(p, "sparse_grad", True):
        return NotImplemented
    data, weight_shape = in_data[0], tuple(in_shapes[1])
    if not isinstance(data, np.ndarray):
        return NotImplemented
    idx = data.astype(np.int64).ravel() if data.dtype.kind not in "iu" else \
        data.astype(np.int64, copy=False).ravel()
    idx = np.clip(idx, 0, p.input_dim - 1)
    g = out_grads[0].reshape(-1, p.output_dim)
    rows, sums = _segment_sum(idx, g)
    gd = np.zeros(data.shape, data.dtype) if need[0] else None
    return [gd, sv.RowSparse(np.ascontiguousarray(sums), rows, weight_shape)]


def _dot_backward(p, out_grads, in_data, need, in_shapes):
    """dot(csr, rhs): rhs's gradient csr.T · out_grad as row_sparse (the columns the
    csr stores); the csr operand's own gradient is not given (NotImplemented)."""
    a, b = in_data
    if need[0] or not _is(a, "csr") or p.transpose_a or p.transpose_b or \
            getattr(p, "forward_stype", None):
        return NotImplemented
    og = out_grads[0]
    g = _csr_t_dot(a, og, og.dtype)
    return [None, sv.RowSparse(g.data, g.indices, tuple(in_shapes[1]))]


def _dense_run(name, p, arrays, call):
    """Operator ``name``'s own dense body on numpy arrays."""
    from . import runner
    op = get_op(name)
    octx = runner.op_context(np, call.ctx, call.is_train)
    return runner.forward(op, octx, p, list(arrays), [], None)


def _is(v, stype):
    return sv.stype_of(v) == stype


# --- storage casts and structural ops ---------------------------------------------------
def _cast_storage(p, vals, call):
    v = vals[0]
    if p.stype == "csr" and len(v.shape) != 2:
        raise MXNetError(f"cast_storage: csr needs a 2-D array, got shape {v.shape}")
    out = sv.convert(v, p.stype)
    return [out.copy() if out is v and isinstance(out, np.ndarray) else
            (_copy(out) if out is v else out)]


def _copy(v):
    if isinstance(v, sv.RowSparse):
        return sv.RowSparse(v.data.copy(), v.indices.copy(), v.shape)
    if isinstance(v, sv.CSR):
        return sv.CSR(v.data.copy(), v.indices.copy(), v.indptr.copy(), v.shape)
    return np.array(v, copy=True)


def _zeros_like(p, vals, call):
    v = vals[0]
    if isinstance(v, np.ndarray):
        return NotImplemented
    return [sv.empty_value(v.stype, v.shape, v.dtype)]


def _retain(p, vals, call):
    v, idx = vals
    if not _is(v, "row_sparse") or not isinstance(idx, np.ndarray):
        return NotImplemented
    ids = idx.astype(np.int64).ravel()
    n = len(v.indices)
    if n and len(ids) and (ids[0] >= 0 and ids[-1] < v.shape[0]
                           and bool((ids[1:] > ids[:-1]).all())):
        # MXNet's result stores exactly the requested rows (sorted unique ids), those
        # the input does not store as zeros; an input storing no row gives none
        pos = np.minimum(np.searchsorted(v.indices, ids), n - 1)
        found = v.indices[pos] == ids
        data = np.zeros((len(ids),) + tuple(v.shape[1:]), v.data.dtype)
        data[found] = v.data[pos[found]]
        return [sv.RowSparse(data, ids.copy(), v.shape)]
    keep = np.isin(v.indices, ids)
    return [sv.RowSparse(v.data[keep].copy(), v.indices[keep].copy(), v.shape)]


def _slice(p, vals, call):
    v = vals[0]
    if not _is(v, "csr") or any(s not in (None, 1) for s in (p.step or ())):
        return NotImplemented
    rows, cols = v.shape
    begin = tuple(p.begin) + (None,) * (2 - len(p.begin))
    end = tuple(p.end) + (None,) * (2 - len(p.end))
    r0, r1, _ = slice(begin[0], end[0]).indices(rows)
    c0, c1, _ = slice(begin[1], end[1]).indices(cols)
    r1, c1 = max(r0, r1), max(c0, c1)
    if (c0, c1) == (0, cols):     # a row range: a contiguous piece of the arrays
        lo, hi = v.indptr[r0], v.indptr[r1]
        return [sv.CSR(v.data[lo:hi].copy(), v.indices[lo:hi].copy(),
                       v.indptr[r0:r1 + 1] - lo, (r1 - r0, cols))]
    return [sv.from_scipy(sv.to_scipy(v)[r0:r1, c0:c1], v.dtype)]


# --- elementwise ------------------------------------------------------------------------
# Unary operators with f(0) == 0, and the _scatter_* scalar operators: they keep the
# storage type and touch stored values only.
ZERO_PRESERVING = ("abs", "sign", "sqrt", "square", "sin", "tan", "arcsin", "expm1",
                   "log1p", "ceil", "floor", "rint", "round", "trunc", "fix", "cbrt",
                   "radians", "degrees", "relu", "tanh", "sinh", "arctan", "arctanh",
                   "arcsinh", "negative", "_contrib_round_ste", "_contrib_sign_ste",
                   "stop_gradient", "make_loss", "_copy", "BlockGrad", "_mul_scalar",
                   "_div_scalar", "clip", "Cast", "_scatter_plus_scalar", "_scatter_minus_scalar",
                   "_identity")


def _unary(name):
    def kernel(p, vals, call):
        v = vals[0]
        if isinstance(v, np.ndarray):
            return NotImplemented
        if name == "clip" and not (p.a_min <= 0 <= p.a_max):
            return NotImplemented
        data = _dense_run(name, p, [v.data], call)[0]
        if isinstance(v, sv.RowSparse):
            return [sv.RowSparse(np.ascontiguousarray(data), v.indices.copy(), v.shape)]
        return [sv.CSR(np.ascontiguousarray(data), v.indices.copy(), v.indptr.copy(),
                       v.shape)]
    return kernel


# Scalar comparisons keep the storage type when they map zero to zero (x == 1, x > 0).
SCALAR_COMPARISONS = ("_equal_scalar", "_not_equal_scalar", "_greater_scalar",
                      "_greater_equal_scalar", "_lesser_scalar", "_lesser_equal_scalar")


def _scalar_compare(name):
    unary = _unary(name)

    def kernel(p, vals, call):
        v = vals[0]
        if isinstance(v, np.ndarray):
            return NotImplemented
        zero = _dense_run(name, p, [np.zeros((1,), v.dtype)], call)[0]
        if zero[0] != 0:
            return NotImplemented
        return unary(p, vals, call)
    return kernel


def _quadratic(p, vals, call):
    """a*x^2 + b*x + c keeps the storage type when c == 0 (zero stays zero)."""
    if p.c != 0:
        return NotImplemented
    return _unary("_contrib_quadratic")(p, vals, call)


def _take(p, vals, call):
    """take(csr, indices, axis=0): the selected rows, a csr array."""
    a, idx = vals
    if not (_is(a, "csr") and isinstance(idx, np.ndarray)) or p.axis != 0:
        return NotImplemented
    rows = a.shape[0]
    ids = idx.astype(np.int64).ravel()
    if p.mode == "wrap":
        ids = np.mod(ids, rows)
    else:
        ids = np.clip(ids, 0, rows - 1)
    return [sv.from_scipy(sv.to_scipy(a)[ids], a.dtype)]


def _rsp_union(a, b):
    """(rows, a's rows, b's rows) as dense blocks over the union of stored rows."""
    rows = np.union1d(a.indices, b.indices).astype(np.int64)
    blocks = []
    for v in (a, b):
        blk = np.zeros((len(rows),) + tuple(v.shape[1:]), v.dtype)
        blk[np.searchsorted(rows, v.indices)] = v.data
        blocks.append(blk)
    return rows, blocks[0], blocks[1]


_NP_BINARY = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
              "maximum": np.maximum, "minimum": np.minimum, "hypot": np.hypot}


def _csr_binary(kind, ma, mb):
    """kind(ma, mb) of two scipy csr matrices, staying sparse (f(0, 0) == 0 for all)."""
    if kind == "mul":
        return ma.multiply(mb)
    if kind == "add":
        return ma + mb
    if kind == "sub":
        return ma - mb
    if kind == "maximum":
        return ma.maximum(mb)
    if kind == "minimum":
        return ma.minimum(mb)
    return (ma.multiply(ma) + mb.multiply(mb)).sqrt()      # hypot


def _binary(kind):
    fn = _NP_BINARY[kind]

    def kernel(p, vals, call):
        a, b = vals
        sa, sb = sv.stype_of(a), sv.stype_of(b)
        if tuple(a.shape) != tuple(b.shape) or kind == "div":
            return NotImplemented
        if sa == sb == "row_sparse":
            rows, x, y = _rsp_union(a, b)
            return [sv.RowSparse(fn(x, y).astype(a.dtype, copy=False), rows, a.shape)]
        if sa == sb == "csr":
            return [sv.from_scipy(_csr_binary(kind, sv.to_scipy(a), sv.to_scipy(b)),
                                  a.dtype)]
        if kind == "mul" and {sa, sb} in ({"csr", "default"}, {"row_sparse", "default"}):
            sp, dn = (a, b) if sa != "default" else (b, a)
            return [_scale_pattern(sp, dn)]
        if "csr" in (sa, sb) and "row_sparse" in (sa, sb) or sa == sb == "default":
            return NotImplemented
        # sparse with dense (mul aside): a dense result, computed without a warning
        return [fn(sv.todense(a), sv.todense(b)).astype(a.dtype, copy=False)]
    return kernel


def _scale_pattern(sp, dense, div=False):
    """sp * dense (dense broadcast to sp's shape) on sp's stored entries only."""
    dense = np.broadcast_to(dense, sp.shape)
    op = np.divide if div else np.multiply
    if isinstance(sp, sv.RowSparse):
        return sv.RowSparse(op(sp.data, dense[sp.indices]).astype(sp.dtype, copy=False),
                            sp.indices.copy(), sp.shape)
    rows = np.repeat(np.arange(sp.shape[0]), np.diff(sp.indptr))
    return sv.CSR(op(sp.data, dense[rows, sp.indices]).astype(sp.dtype, copy=False),
                  sp.indices.copy(), sp.indptr.copy(), sp.shape)


def _scatter_div(p, vals, call):
    """_scatter_elemwise_div(row_sparse, any): lhs's stored rows divided by the same
    rows of rhs, a row_sparse result over exactly those rows (0/0 there stays nan)."""
    a, b = vals
    if not _is(a, "row_sparse") or tuple(a.shape) != tuple(b.shape):
        return NotImplemented
    rows = b[a.indices] if isinstance(b, np.ndarray) else sv.todense(b)[a.indices]
    with np.errstate(divide="ignore", invalid="ignore"):
        data = np.divide(a.data, rows).astype(a.dtype, copy=False)
    return [sv.RowSparse(np.ascontiguousarray(data), a.indices.copy(), a.shape)]


def _broadcast_scale(div):
    def kernel(p, vals, call):
        a, b = vals
        if not (_is(a, "csr") and isinstance(b, np.ndarray)):
            return NotImplemented
        try:
            np.broadcast_shapes(b.shape, a.shape)
        except ValueError:
            return NotImplemented
        if np.broadcast_shapes(b.shape, a.shape) != tuple(a.shape):
            return NotImplemented
        return [_scale_pattern(a, b, div)]
    return kernel


def _add_n(p, vals, call):
    if not all(_is(v, "row_sparse") for v in vals):
        return NotImplemented
    rows = np.unique(np.concatenate([v.indices for v in vals])).astype(np.int64)
    acc = np.zeros((len(rows),) + tuple(vals[0].shape[1:]), vals[0].dtype)
    for v in vals:
        acc[np.searchsorted(rows, v.indices)] += v.data
    return [sv.RowSparse(acc, rows, vals[0].shape)]


def _square_sum(p, vals, call):
    v = vals[0]
    if not _is(v, "row_sparse"):
        return NotImplemented
    axis = p.axis
    ax = None if axis is None else tuple(a % len(v.shape) for a in
                                         (axis if isinstance(axis, tuple) else (axis,)))
    if ax == (1,) and len(v.shape) == 2:
        s = np.square(v.data).sum(axis=1, keepdims=True).astype(v.dtype)
        if p.keepdims:
            return [sv.RowSparse(s, v.indices.copy(), (v.shape[0], 1))]
        out = np.zeros((v.shape[0],), v.dtype)
        out[v.indices] = s[:, 0]
        return [out]
    return [_dense_run("_square_sum", p, [sv.todense(v)], call)[0]]


def _getnnz(p, vals, call):
    """The stored-value count of a csr array from its row pointers (explicit zeros
    count, as in MXNet)."""
    v = vals[0]
    if not _is(v, "csr"):
        return NotImplemented
    get_op("_contrib_getnnz").infer_shape(p, [v.shape])
    if p.axis is None:
        return [np.array([v.indptr[-1] - v.indptr[0]], dtype=np.int64)]
    return [np.diff(v.indptr).astype(np.int64)]


def _batch_norm(p, vals, call):
    """BatchNorm runs densely on sparse inputs, except with fix_gamma=True, which MXNet
    1.9.1 refuses for sparse inputs."""
    if p.fix_gamma and any(not isinstance(v, np.ndarray) for v in vals):
        raise StorageError("BatchNorm: fix_gamma=True is not supported for sparse "
                           "ndarrays (MXNet 1.9.1 refuses it as well)")
    return NotImplemented


# --- dot ----------------------------------------------------------------------------------
def _dot(p, vals, call):
    a, b = vals
    sa, sb = sv.stype_of(a), sv.stype_of(b)
    fwd = getattr(p, "forward_stype", None)
    if "csr" in (sa, sb):
        # the dense rule's shape check first: a mismatch is MXNet's dot shape error,
        # not SciPy's ValueError
        get_op("dot").infer_shape(p, [tuple(a.shape), tuple(b.shape)])
    if sa == "csr" and sb == "default" and b.ndim == 2:
        rhs = b.T if p.transpose_b else b
        if p.transpose_a:
            # rows of the result are the columns csr stores: a row_sparse result
            out = _csr_t_dot(a, rhs, a.dtype)
            return [sv.convert(out, fwd) if fwd else out]
        m = sv.to_scipy(a)
        out = np.asarray(m @ rhs, dtype=a.dtype)
        return [sv.convert(out, fwd) if fwd else out]
    if sa == "default" and sb == "csr" and a.ndim == 2 and not p.transpose_a:
        m = sv.to_scipy(b)
        m = m.T if p.transpose_b else m
        res = np.asarray((m.T @ a.T).T, dtype=a.dtype)
        return [sv.convert(res, fwd or "csr")]
    if fwd and sa == sb == "default":
        return [sv.convert(_dense_run("dot", p, [a, b], call)[0], fwd)]
    if "row_sparse" in (sa, sb) and "csr" not in (sa, sb) or (sa == "csr" and sb ==
                                                              "row_sparse"):
        # row_sparse operands: the dense product of the dense forms (MXNet: dense out)
        res = _dense_run("dot", p, [sv.todense(a), sv.todense(b)], call)[0]
        return [sv.convert(res, fwd) if fwd else res]
    return NotImplemented


def _dot_gpu(p, vals, call):
    """dot(csr, dense) with the dense operand on a GPU: cupyx.scipy.sparse's product,
    a dense device result (the csr's arrays are copied to the device per call). Other
    forms (transposed csr: a row_sparse result) take the host kernel."""
    a, b = vals
    if not (_is(a, "csr") and sv.stype_of(b) == "default" and b.ndim == 2) or \
            p.transpose_a or getattr(p, "forward_stype", None) not in (None, "default"):
        return NotImplemented
    # cupyx.scipy.sparse holds bool, float32, float64, complex64 and complex128 values
    # only: float16 is multiplied in float32 and the product rounded back to float16;
    # other types take the host kernel
    work = np.dtype(np.float32) if a.dtype == np.float16 else a.dtype
    if work.char not in "?fdFD":
        return NotImplemented
    import cupy as cp
    import cupyx.scipy.sparse as cps
    # (the caller entered the context's device)
    m = cps.csr_matrix((cp.asarray(a.data.astype(work, copy=False)),
                        cp.asarray(a.indices.astype(np.int32)),
                        cp.asarray(a.indptr.astype(np.int32))), shape=a.shape)
    rhs = b.T if p.transpose_b else b
    return [cp.ascontiguousarray((m @ rhs.astype(work, copy=False)).astype(a.dtype,
                                                                           copy=False))]


# --- optimizer updates: lazy updates touch only the rows a row_sparse gradient has --------
# update operators with a rule for row_sparse gradients (MXNet's lazy_update)
LAZY_UPDATES = ("sgd_update", "sgd_mom_update", "adam_update", "ftrl_update",
                "_sparse_adagrad_update")


def lazy_applies(name, p, stypes):
    """Whether MXNet 1.9.1 runs the lazy rule of update operator ``name`` for inputs of
    storage types ``stypes`` (weight, gradient, ..., states): a row_sparse gradient,
    lazy_update not turned off, and the weight and states its sparse kernels take —
    for sgd_mom and adam all dense (Gluon's sparse_grad parameters) or all row_sparse,
    for ftrl all row_sparse, for sgd any. Every other combination (rmsprop and nag
    always) runs the standard rule on dense forms, every row updated: MXNet's storage
    fallback."""
    if stypes[1] != "row_sparse" or stypes[0] == "csr" or \
            not getattr(p, "lazy_update", True):
        return False
    kinds = {stypes[0]} | set(stypes[len(get_op(name).arguments(p)):])
    if name in ("sgd_mom_update", "adam_update"):
        return kinds in ({"default"}, {"row_sparse"})
    if name == "ftrl_update":
        return kinds == {"row_sparse"}
    return True


def _lazy_applies(name, p, vals):
    return lazy_applies(name, p, [sv.stype_of(v) for v in vals])


def _update_rows(xp, op, p, w, g, extra, states):
    """The update rule on the gradient's rows only: the states' rows are written back
    in place; returns the weight's new rows."""
    rows = xp.asarray(g.indices)
    w_rows = w[rows]
    st_rows = [s[rows] for s in states]
    extra = [a[rows] if a.shape == w.shape else a for a in extra]
    g_rows = xp.asarray(g.data.astype(w_rows.dtype, copy=True))
    new_rows = op.update(xp, p, [w_rows, g_rows] + extra, st_rows)
    for s, r in zip(states, st_rows):
        s[rows] = r
    return rows, new_rows


def _lazy_update(name):
    def kernel(p, vals, call):
        if not _lazy_applies(name, p, vals):
            return NotImplemented
        w, g = vals[0], vals[1]
        op = get_op(name)
        n_args = len(op.arguments(p))
        states = list(vals[n_args:])
        if any(not isinstance(s, np.ndarray) for s in vals[2:n_args]):
            return NotImplemented
        # sparse states (made like a row_sparse weight) are updated in dense form and
        # stored back into their arrays below
        sparse_states = {k: sv.todense(s) for k, s in enumerate(states)
                         if not isinstance(s, np.ndarray)}
        for k, d in sparse_states.items():
            states[k] = d
        dense_w = w if isinstance(w, np.ndarray) else sv.todense(w)
        rows, new_rows = _update_rows(np, op, p, dense_w, g, vals[2:n_args], states)
        for k, d in sparse_states.items():
            call.inputs[n_args + k]._set_dense(d)
        in_place = call.out is not None and call.out[0] is call.inputs[0]
        if isinstance(w, np.ndarray):
            target = w if in_place else w.copy()
            target[rows] = new_rows
            return [target]
        keep = np.union1d(w.indices, rows).astype(np.int64)
        dense_w = dense_w.copy() if dense_w is w else dense_w
        dense_w[rows] = new_rows
        return [sv.RowSparse(np.ascontiguousarray(dense_w[keep]), keep, w.shape)]
    return kernel


def _lazy_update_gpu(name):
    """The lazy rule with a dense weight and dense states in device memory (the common
    case: an Embedding with sparse_grad=True): only the gradient's rows and indices are
    copied to the device, and the rows are updated there. Sparse weights or states
    decline (the caller then runs the host rule on copies)."""
    def kernel(p, vals, call):
        if not _lazy_applies(name, p, vals):
            return NotImplemented
        op = get_op(name)
        n_args = len(op.arguments(p))
        w = vals[0]
        dense = [w] + list(vals[2:])
        if any(sv.stype_of(v) != "default" for v in dense):
            return NotImplemented
        from ..backend import array_module
        xp = array_module(call.ctx)
        rows, new_rows = _update_rows(xp, op, p, w, vals[1], vals[2:n_args],
                                      list(vals[n_args:]))
        in_place = call.out is not None and call.out[0] is call.inputs[0]
        target = w if in_place else w.copy()
        target[rows] = new_rows
        return [target]
    return kernel


_GPU_TABLE = {"dot": _dot_gpu}
_GPU_TABLE.update({name: _lazy_update_gpu(name) for name in LAZY_UPDATES})


def _install():
    _BACKWARD["dot"] = _dot_backward
    _BACKWARD["Embedding"] = _embedding_backward
    _BACKWARD["_contrib_SparseEmbedding"] = _embedding_backward
    register_sparse("cast_storage", _cast_storage)
    register_sparse("zeros_like", _zeros_like)
    register_sparse("_sparse_retain", _retain)
    register_sparse("slice", _slice)
    register_sparse("dot", _dot)
    register_sparse("add_n", _add_n)
    register_sparse("_square_sum", _square_sum)
    register_sparse("take", _take)
    register_sparse("_contrib_quadratic", _quadratic)
    for name in SCALAR_COMPARISONS:
        register_sparse(name, _scalar_compare(name))
    for name in ZERO_PRESERVING:
        try:
            register_sparse(name, _unary(name))
        except Exception:           # an operator this build does not register
            pass
    for kind in ("add", "sub", "mul", "div"):
        register_sparse(f"elemwise_{kind}", _binary(kind))
    for kind in ("maximum", "minimum", "hypot"):
        register_sparse(f"_{kind}", _binary(kind))
    register_sparse("_scatter_elemwise_div", _scatter_div)
    register_sparse("BatchNorm", _batch_norm)
    from .custom import sparse_forward as _custom_forward
    register_sparse("Custom", _custom_forward)
    register_sparse("_contrib_getnnz", _getnnz)
    for name in ("broadcast_mul", "broadcast_div"):
        register_sparse(name, _broadcast_scale(name.endswith("div")))
    for name in LAZY_UPDATES:
        register_sparse(name, _lazy_update(name))
