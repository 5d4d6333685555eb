"""Indexing operators: take, batch_take, pick, gather_nd, scatter_nd, one_hot, where,
ravel_multi_index, unravel_index.

Index inputs may have any dtype (float32 as usual in MXNet 1.x); fractional indices
are truncated toward zero, as MXNet's integer cast does. Index inputs get a zero
gradient.
"""
import numpy as np

from ...base import InvalidIndex, MXNetError
from ..params import Bool, DType, Enum, Float, Int, IntOrNone, Schema, Shape
from ..registry import Op, ShapeError, register
from .shape_utils import legacy, merge_shapes, norm_axis, prod, zeros_if

_INDEX_GRAD = ("out_grad", "in_data")


def as_index(xp, a):
    """Integer positions from an index array (truncated toward zero)."""
    return a if a.dtype == np.int64 else a.astype(np.int64)


# The dtypes CuPy's add.at accumulates with an integer-array key (CUDA's atomicAdd types;
# cupy/_core/_routines_indexing.pyx, _scatter_op_single): any other is a TypeError.
ATOMIC_ADD_TYPES = frozenset(np.dtype(t) for t in (
    "int32", "int64", "uint32", "uint64", "float16", "float32", "float64"))


def _add_at(xp, target, key, values):
    at = getattr(xp.add, "at", None)
    if at is not None:
        at(target, key, values)
    else:   # older CuPy
        import cupyx
        cupyx.scatter_add(target, key, values)


def scatter_add(xp, target, key, values):
    """target[key] += values, accumulating over repeated positions. On the GPU a dtype
    that CuPy's add.at refuses is accumulated in one it takes: a complex target as its
    real and imaginary parts, a bool or 8/16-bit integer one in 32 bits and cast back
    (which wraps as NumPy's own add.at does; bool: any nonzero sum is True)."""
    dt = target.dtype
    if xp is np or dt in ATOMIC_ADD_TYPES:
        _add_at(xp, target, key, values)
    elif dt.kind == "c":
        values = values if hasattr(values, "real") else xp.asarray(values)
        _add_at(xp, target.real, key, values.real)
        if values.dtype.kind == "c":
            _add_at(xp, target.imag, key, values.imag)
    else:
        wide = np.dtype(np.uint32 if dt.kind == "u" else np.int32)
        if dt.kind not in "biu" or dt.itemsize > 4:
            raise TypeError(f"scatter_add: no GPU accumulation for dtype {dt}")
        acc = target.astype(wide)
        if hasattr(values, "astype"):      # values in the target's type first (CuPy's rule)
            values = values.astype(dt, copy=False).astype(wide)
        _add_at(xp, acc, key, values)
        target[...] = acc.astype(dt)


def lane_key(xp, idx, axis):
    """The advanced-indexing key that addresses, for every position of idx, the element
    at that position with its coordinate along ``axis`` replaced by idx's value
    (numpy's take/put_along_axis addressing)."""
    nd = idx.ndim
    key = []
    for d in range(nd):
        if d == axis:
            key.append(idx)
        else:
            shape = [1] * nd
            shape[d] = idx.shape[d]
            key.append(xp.arange(idx.shape[d]).reshape(shape))
    return tuple(key)


def _bound(xp, idx, n, mode, opname):
    if mode == "clip":
        # two ufuncs, not clip(): its Python wrapper costs more than a small clip (not
        # in place: a 0-d index gives a scalar)
        return xp.minimum(xp.maximum(idx, 0), n - 1)
    if mode == "wrap":
        return idx % n
    if bool(((idx < 0) | (idx >= n)).any()):
        raise MXNetError(f"{opname}: indices out of bound (mode='raise', axis size {n})")
    return idx


@register
class Take(Op):
    """Elements of ``a`` at ``indices`` along ``axis``; out-of-range indices are clipped,
    wrapped, or an error, as ``mode`` says. Output shape:
    a.shape[:axis] + indices.shape + a.shape[axis+1:]."""
    name = "take"
    params = Schema(axis=Int(0), mode=Enum(("clip", "raise", "wrap"), "clip"))
    backward_uses = _INDEX_GRAD

    def arguments(self, p):
        return ["a", "indices"]

    def infer_shape(self, p, in_shapes):
        a, i = in_shapes
        if a is None or i is None:
            return in_shapes, [None], []
        ax = norm_axis(self.name, p.axis, len(a))
        return in_shapes, [tuple(a[:ax]) + tuple(i) + tuple(a[ax + 1:])], []

    def infer_type(self, p, in_types):
        return in_types, [in_types[0]], []

    def forward(self, ctx, p, inputs, aux):
        a, indices = inputs
        xp = ctx.xp
        ax = norm_axis(self.name, p.axis, a.ndim)
        idx = _bound(xp, as_index(xp, indices), a.shape[ax], p.mode, self.name)
        return [xp.take(a, idx, axis=ax)]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux):
        xp, g = ctx.xp, out_grads[0]
        a_shape, i_shape = ctx.in_shapes
        ax = norm_axis(self.name, p.axis, len(a_shape))
        n = a_shape[ax]
        idx = _bound(xp, as_index(xp, inputs[1]), n, p.mode, self.name).reshape(-1)
        grad = xp.zeros(a_shape, g.dtype)
        # Put the indexed axis first on both sides so one scatter-add covers any axis.
        g = g.reshape(tuple(a_shape[:ax]) + (idx.size,) + tuple(a_shape[ax + 1:]))
        scatter_add(xp, xp.moveaxis(grad, ax, 0), idx, xp.moveaxis(g, ax, 0))
        return [grad, zeros_if(ctx, 1, i_shape, inputs[1].dtype)]


def _check_int32(t):
    if t is not None and np.dtype(t) != np.int32:
        raise MXNetError(f"batch_take: indices must be int32, got {np.dtype(t)}")


@register
class BatchTake(Op):
    """``out[i] = a[i, indices[i]]`` with a viewed as (N, M) and indices clipped to
    [0, M)."""
    name = "batch_take"
    params = Schema()

    def arguments(self, p):
        return ["a", "indices"]

    def _check(self, a, i):
        n = prod(i)
        if a[0] is not None and n is not None and a[0] != n:
            raise ShapeError(f"batch_take: indices {tuple(i)} must hold one index per row "
                             f"of a {tuple(a)}")

    def infer_shape(self, p, in_shapes):
        a, i = in_shapes
        if a is None or i is None:
            return in_shapes, [None], []
        self._check(a, i)
        return in_shapes, [tuple(i)], []

    def infer_type(self, p, in_types):
        # MXNet fixes the index type to int32: any other provided dtype (float32, the
        # usual nd.array default, included) is a type-inconsistency error there
        _check_int32(in_types[1])
        return [in_types[0], np.dtype(np.int32)], [in_types[0]], []

    def _rows(self, xp, a_shape, indices):
        n = a_shape[0]
        m = int(np.prod(a_shape[1:], dtype=np.int64))
        idx = xp.clip(as_index(xp, indices).reshape(-1), 0, m - 1)
        return xp.arange(n), idx, (n, m)

    def forward(self, ctx, p, inputs, aux):
        a, indices = inputs
        _check_int32(indices.dtype)     # (imperative calls run no type inference)
        self._check(a.shape, indices.shape)
        rows, cols, nm = self._rows(ctx.xp, a.shape, indices)
        return [a.reshape(nm)[rows, cols].reshape(indices.shape)]

    # No backward: MXNet registers no gradient for batch_take (deprecated for pick),
    # so binding it with a gradient to compute is an error there and here.


def _pick_shapes(p, dshape, ishape=None):
    if p.axis is None:
        raise MXNetError("pick: axis=None is not supported by pick yet. Must specify an axis.")
    ax = norm_axis("pick", p.axis, len(dshape))
    keep = tuple(dshape[:ax]) + (1,) + tuple(dshape[ax + 1:])
    reduced = legacy(tuple(dshape[:ax]) + tuple(dshape[ax + 1:]))
    if ishape is not None:
        ishape = tuple(ishape)
        if merge_ok(ishape, reduced) is None and merge_ok(ishape, keep) is None:
            raise ShapeError(f"pick: index shape {ishape} does not match data {tuple(dshape)} "
                             f"with axis {ax} removed ({reduced})")
    return ax, keep, (keep if p.keepdims else reduced)


def merge_ok(a, b):
    try:
        return merge_shapes("pick", a, b)
    except ShapeError:
        return None


@register
class Pick(Op):
    """``out[i..] = data[i.., index[i..], ..]``: one element per lane along ``axis``."""
    name = "pick"
    aliases = ("choose_element_0index",)
    params = Schema(axis=IntOrNone(-1), keepdims=Bool(False),
                    mode=Enum(("clip", "wrap"), "clip"))
    backward_uses = _INDEX_GRAD

    def arguments(self, p):
        return ["data", "index"]

    def infer_shape(self, p, in_shapes):
        d, i = in_shapes
        if d is None:
            return in_shapes, [None], []
        ax, keep, out = _pick_shapes(p, d, i)
        if i is None:
            i = legacy(tuple(d[:ax]) + tuple(d[ax + 1:]))
        return [d, i], [out], []

    def infer_type(self, p, in_types):
        return in_types, [in_types[0]], []

    def _positions(self, xp, p, dshape, index):
        """(where each picked element sits in the flattened data, as an (outer, inner)
        array, the output shape). The data seen as (outer, n, inner), n the picked
        axis: lane (r, c) with index value k picks element (r * n + k) * inner + c.
        One gather (or scatter) at these places replaces take_along_axis, whose index
        grids and Python cost are most of a small call's time."""
        ax, _, out = _pick_shapes(p, dshape, index.shape)
        n = dshape[ax]
        outer, inner = prod(dshape[:ax]), prod(dshape[ax + 1:])
        k = _bound(xp, as_index(xp, index), n, p.mode, self.name).reshape(outer, inner)
        if inner != 1:
            k *= inner          # (k is a fresh array: _bound's result)
        return k + _lane_starts(xp, outer, n, inner), out

    def forward(self, ctx, p, inputs, aux):
        data, index = inputs
        pos, out = self._positions(ctx.xp, p, data.shape, index)
        return [data.reshape(-1)[pos].reshape(out)]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux):
        xp, g = ctx.xp, out_grads[0]
        d_shape, i_shape = ctx.in_shapes
        pos, _ = self._positions(xp, p, d_shape, inputs[1])
        grad = xp.zeros(d_shape, g.dtype)
        # each lane owns its place (no two lanes share one): a plain scatter
        grad.reshape(-1)[pos] = g.reshape(pos.shape)
        return [grad, zeros_if(ctx, 1, i_shape, inputs[1].dtype)]


_LANE_STARTS = {}


def _lane_starts(xp, outer, n, inner):
    """The flat position of each lane's first element, (r * n) * inner + c, as an
    (outer, inner) array; host arrays are kept per shape (a loss picks from the same
    shape every step), read only."""
    if xp is not np:
        return (xp.arange(outer) * (n * inner))[:, None] + xp.arange(inner)
    key = (outer, n, inner)
    starts = _LANE_STARTS.get(key)
    if starts is None:
        if len(_LANE_STARTS) >= 64:
            _LANE_STARTS.clear()
        starts = (np.arange(outer) * (n * inner))[:, None] + np.arange(inner)
        starts.flags.writeable = False
        _LANE_STARTS[key] = starts
    return starts


def _nd_shapes(opname, dshape, ishape):
    """(M, Y): indices is (M, *Y), addressing the first M axes of dshape."""
    if len(ishape) < 2:
        raise ShapeError(f"{opname}: the index tensor must have at least 2 dimensions, got "
                         f"{tuple(ishape)}")
    m = ishape[0]
    if m is not None and m > len(dshape):
        raise ShapeError(f"{opname}: indices {tuple(ishape)} address {m} axes but the data "
                         f"{tuple(dshape)} has only {len(dshape)}")
    return m, tuple(ishape[1:])


def _nd_key(xp, indices, dshape, opname, check=False):
    """A tuple of integer arrays for advanced indexing; negative indices count from the
    end (as gather_nd does). ``check``: raise for an index out of range (on a GPU the
    check waits for the device, as MXNet's gather_nd check does; unchecked indices
    wrap)."""
    idx = as_index(xp, indices)
    m = idx.shape[0]
    dims = xp.asarray(np.array(dshape[:m], dtype=np.int64)).reshape((m,) + (1,) * (idx.ndim - 1))
    if check and bool(((idx < -dims) | (idx >= dims)).any()):
        raise InvalidIndex(f"{opname}: index out of range for data of shape {tuple(dshape)}")
    idx = idx % dims     # also keeps device work free of range checks
    return tuple(idx[i] for i in range(m))


@register
class GatherND(Op):
    """``out[y..] = data[indices[0, y..], ..., indices[M-1, y..], ...]``; output shape
    indices.shape[1:] + data.shape[M:]."""
    name = "gather_nd"
    check_range = True        # on every device, as MXNet 1.9.1 (IndexError)
    params = Schema()
    backward_uses = _INDEX_GRAD

    def arguments(self, p):
        return ["data", "indices"]

    def infer_shape(self, p, in_shapes):
        d, i = in_shapes
        if d is None or i is None:
            return in_shapes, [None], []
        m, y = _nd_shapes(self.name, d, i)
        if m is None:
            return in_shapes, [None], []
        return in_shapes, [legacy(y + tuple(d[m:]))], []

    def infer_type(self, p, in_types):
        return in_types, [in_types[0]], []

    def forward(self, ctx, p, inputs, aux):
        data, indices = inputs
        m, y = _nd_shapes(self.name, data.shape, indices.shape)
        out = data[_nd_key(ctx.xp, indices, data.shape, self.name, self.check_range)]
        return [out.reshape(legacy(out.shape))]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux):
        xp, g = ctx.xp, out_grads[0]
        d_shape, i_shape = ctx.in_shapes
        m, y = _nd_shapes(self.name, d_shape, i_shape)
        grad = xp.zeros(d_shape, g.dtype)
        scatter_add(xp, grad, _nd_key(xp, inputs[1], d_shape, self.name),
                    g.reshape(y + tuple(d_shape[m:])))
        return [grad, zeros_if(ctx, 1, i_shape, inputs[1].dtype)]


@register
class ScatterND(Op):
    """The inverse of gather_nd: an array of ``shape``, zero except at the positions
    indices addresses, which take data's values (the last one wins on repeats)."""
    name = "scatter_nd"
    check_range = False       # the CPU kernel checks indices (see _nd_key)
    params = Schema(shape=Shape())
    backward_uses = _INDEX_GRAD

    def arguments(self, p):
        return ["data", "indices"]

    def _check(self, p, dshape, ishape):
        m, y = _nd_shapes(self.name, p.shape, ishape)
        if m is None:
            return
        want = legacy(y + tuple(p.shape[m:]))
        if merge_ok(tuple(dshape), want) is None:
            raise ShapeError(f"scatter_nd: invalid data, indices and output shape combination: "
                             f"{tuple(dshape)}, {tuple(ishape)}, {p.shape}")

    def infer_shape(self, p, in_shapes):
        d, i = in_shapes
        if d is not None and i is not None:
            self._check(p, d, i)
        return in_shapes, [tuple(p.shape)], []

    def infer_type(self, p, in_types):
        return in_types, [in_types[0]], []

    def forward(self, ctx, p, inputs, aux):
        data, indices = inputs
        self._check(p, data.shape, indices.shape)
        m, y = _nd_shapes(self.name, p.shape, indices.shape)
        out = ctx.xp.zeros(p.shape, data.dtype)
        out[_nd_key(ctx.xp, indices, p.shape, self.name, self.check_range)] = \
            data.reshape(y + tuple(p.shape[m:]))
        return [out]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux):
        xp, g = ctx.xp, out_grads[0]
        d_shape, i_shape = ctx.in_shapes
        grad = g[_nd_key(xp, inputs[1], p.shape, self.name)].reshape(d_shape)
        return [grad, zeros_if(ctx, 1, i_shape, inputs[1].dtype)]


_ONE_HOT_TYPES = ("float16", "float32", "float64", "int32", "int64", "int8", "uint8")


@register
class OneHot(Op):
    """One-hot encoding: output shape indices.shape + (depth,), ``on_value`` where the
    last coordinate equals the index and ``off_value`` elsewhere (out-of-range indices
    give an all-off row)."""
    name = "one_hot"
    params = Schema(depth=Int(), on_value=Float(1.0), off_value=Float(0.0),
                    dtype=DType("float32", enum=_ONE_HOT_TYPES))
    zero_grad = True
    backward_uses = ()

    def arguments(self, p):
        return ["indices"]

    def infer_shape(self, p, in_shapes):
        s = in_shapes[0]
        if p.depth < 0:
            raise MXNetError(f"one_hot: depth={p.depth} must be non-negative")
        return in_shapes, [None if s is None else tuple(s) + (p.depth,)], []

    def infer_type(self, p, in_types):
        return in_types, [np.dtype(p.dtype)], []

    def forward(self, ctx, p, inputs, aux):
        xp = ctx.xp
        self.infer_shape(p, [inputs[0].shape])
        hit = as_index(xp, inputs[0])[..., None] == xp.arange(p.depth)
        on = xp.asarray(p.on_value, dtype=p.dtype)
        off = xp.asarray(p.off_value, dtype=p.dtype)
        return [xp.where(hit, on, off)]


def _where_cond(opname, cshape, xshape):
    """True when condition is 1-D over x's first axis (whole rows are selected)."""
    if tuple(cshape) == tuple(xshape):
        return False
    if len(cshape) == 1 and len(xshape) >= 1 and cshape[0] == xshape[0]:
        return True
    raise ShapeError(f"where: condition {tuple(cshape)} must have the shape of x "
                     f"{tuple(xshape)} or be 1-D of size x.shape[0]")


@register
class Where(Op):
    """Elements of x where condition is non-zero and of y elsewhere; condition has x's
    shape or is 1-D over x's first axis."""
    name = "where"
    params = Schema()
    backward_uses = _INDEX_GRAD

    def arguments(self, p):
        return ["condition", "x", "y"]

    def infer_shape_partial(self, p, arg_shapes, out_shapes):
        """Partial shapes (0 = unknown), by MXNet's rule: nothing is said until the
        condition is complete; then x, y and the output are one shape, merged
        dimension by dimension (so a recurrent cell's ``where`` over zero begin states
        learns the batch size from the step that uses its result). The condition
        itself is checked against that shape, not merged into it."""
        c, x, y = arg_shapes
        if c is None or not all(c):
            return list(arg_shapes), [None], []
        merged = None
        for s in (x, y, out_shapes[0] if out_shapes else None):
            if s is None:
                continue
            if merged is not None and (len(s) != len(merged) or
                                       any(a and b and a != b for a, b in zip(s, merged))):
                raise ShapeError(f"where: x, y and the output must have one shape, got "
                                 f"{tuple(merged)} and {tuple(s)}")
            merged = s if merged is None else tuple(a or b for a, b in zip(merged, s))
        if merged is not None and all(merged):
            _where_cond(self.name, c, merged)
        return [c, merged, merged], [merged], []

    def infer_shape(self, p, in_shapes):
        c, x, y = in_shapes
        xy = merge_shapes(self.name, x, y)
        if c is None:
            return [c, xy, xy], [None], []
        if xy is not None and None not in c and None not in xy:
            _where_cond(self.name, c, xy)
        return [c, xy, xy], [xy], []

    def infer_type(self, p, in_types):
        c, x, y = in_types
        if x is not None and y is not None and np.dtype(x) != np.dtype(y):
            raise MXNetError(f"where: x and y must have the same dtype, got "
                             f"{np.dtype(x).name} and {np.dtype(y).name}")
        t = x if x is not None else y
        return [c, t, t], [t], []

    def _mask(self, xp, cond, xshape):
        rows = _where_cond(self.name, cond.shape, xshape)
        mask = cond != 0
        return mask.reshape(mask.shape + (1,) * (len(xshape) - 1)) if rows else mask

    def forward(self, ctx, p, inputs, aux):
        c, x, y = inputs
        if x.shape != y.shape:
            raise ShapeError(f"where: x {x.shape} and y {y.shape} must have the same shape")
        if x.dtype != y.dtype:
            raise MXNetError(f"where: x and y must have the same dtype, got {x.dtype} and "
                             f"{y.dtype}")
        return [ctx.xp.where(self._mask(ctx.xp, c, x.shape), x, y)]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux):
        xp, g = ctx.xp, out_grads[0]
        c_shape, x_shape, _ = ctx.in_shapes
        mask = self._mask(xp, inputs[0], x_shape)
        zero = xp.zeros((), g.dtype)
        need = ctx.need_grad or (True, True, True)
        return [zeros_if(ctx, 0, c_shape, inputs[0].dtype),
                xp.where(mask, g, zero) if need[1] else None,
                xp.where(mask, zero, g) if need[2] else None]


class _RavelBase(Op):
    params = Schema(shape=Shape())
    zero_grad = True
    backward_uses = ()

    def check_params(self, p):
        if len(p.shape) == 0:       # as MXNet: an empty shape is an error, not a no-op
            raise MXNetError(f"{self.name}: the shape parameter must not be empty")

    def infer_type(self, p, in_types):
        return in_types, [in_types[0]], []


@register
class RavelMultiIndex(_RavelBase):
    """Flat positions in an array of ``shape`` from coordinates: data is (ndim, N), the
    output (N,) holds sum_i data[i] * stride_i (row-major, no bounds check)."""
    name = "_ravel_multi_index"
    aliases = ("ravel_multi_index",)

    def infer_shape(self, p, in_shapes):
        s = in_shapes[0]
        if s is None:
            return in_shapes, [None], []
        if len(s) < 1 or (s[0] is not None and s[0] != len(p.shape)):
            raise ShapeError(f"ravel_multi_index: data {tuple(s)} must have len(shape)="
                             f"{len(p.shape)} rows")
        return in_shapes, [legacy(tuple(s[1:]))], []

    def forward(self, ctx, p, inputs, aux):
        xp, data = ctx.xp, inputs[0]
        self.infer_shape(p, [data.shape])
        strides = np.cumprod((1,) + tuple(p.shape[:0:-1]))[::-1].astype(np.int64)
        w = xp.asarray(strides).reshape((-1,) + (1,) * (data.ndim - 1))
        out = (as_index(xp, data) * w).sum(axis=0)
        return [out.reshape(legacy(out.shape)).astype(data.dtype)]


@register
class UnravelIndex(_RavelBase):
    """Coordinates in an array of ``shape`` from flat positions: data (N,) gives an
    (ndim, N) output (C division; the first coordinate is what is left, unwrapped)."""
    name = "_unravel_index"
    aliases = ("unravel_index",)

    def infer_shape(self, p, in_shapes):
        s = in_shapes[0]
        return in_shapes, [None if s is None else (len(p.shape),) + tuple(s)], []

    def forward(self, ctx, p, inputs, aux):
        xp, data = ctx.xp, inputs[0]
        idx = as_index(xp, data)
        coords = []
        for d in reversed(p.shape[1:]):
            q = xp.where(idx >= 0, idx // d, -((-idx) // d))    # C (truncating) division
            coords.append(idx - q * d)
            idx = q
        coords.append(idx)
        return [xp.stack(coords[::-1]).astype(data.dtype)]
