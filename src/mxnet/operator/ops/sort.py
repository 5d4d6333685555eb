"""Ordering operators: sort, argsort, topk.

Ordering is stable in both directions: equal elements keep their input order, as
MXNet's CPU kernels give. Index outputs are float32 unless ``dtype`` says otherwise.
sort and topk(ret_typ='value') also return the positions as a hidden output, which
their backward reads to scatter the head gradient back; argsort and the index/mask
forms of topk have a zero gradient.
"""
import numpy as np

from ...base import MXNetError
from ..params import Bool, DType, Enum, Int, IntOrNone, Schema
from ..registry import Op, register
from .indexing import lane_key
from .shape_utils import norm_axis, prod

_INDEX_TYPES = ("float16", "float32", "float64", "int32", "int64", "uint8")
_HIDDEN_INDEX = np.dtype(np.int64)


def stable_argsort(xp, x, axis, ascend):
    """Positions that order x along axis; ties keep their input order either way."""
    if ascend:
        return xp.argsort(x, axis=axis, kind="stable")
    n = x.shape[axis]
    rev = xp.argsort(xp.flip(x, axis), axis=axis, kind="stable")
    return (n - 1) - xp.flip(rev, axis)


def _packed_keys(x, ascend):
    """uint64 keys, one per element of x's last axis, whose plain order is the stable
    order of x: the value's bits mapped to an unsigned order in the high half, the
    position in the low half (so keys are unique and any fast sort is stable). None
    for types wider than 32 bits."""
    dt = x.dtype
    width = 8 * dt.itemsize
    if x.shape[-1] >= 1 << 32 or width > 32 or dt.kind not in "fiu":
        return None
    if dt.kind == "f":
        if width == 8:
            return None
        signed = (x + dt.type(0)).view(np.dtype(f"int{width}"))   # + 0: -0.0 ties with 0.0
        bits = signed.view(np.dtype(f"uint{width}"))
        # negative: invert every bit; non-negative: set the sign bit
        flip = (signed >> (width - 1)).view(bits.dtype) | np.array(1 << (width - 1),
                                                                    bits.dtype)
        v = (bits ^ flip).astype(np.uint64)
    elif dt.kind == "i":
        v = (x.astype(np.int64) - np.iinfo(dt).min).astype(np.uint64)
    else:
        v = x.astype(np.uint64)
    if not ascend:
        np.subtract(np.uint64((1 << width) - 1), v, out=v)
    v <<= np.uint64(32)
    v |= np.arange(x.shape[-1], dtype=np.uint64)
    return v


def order(xp, x, axis, ascend, k=None):
    """int64 positions of the first k elements of x's stable order along axis (all of
    them when k is None)."""
    n = x.shape[axis]
    k = n if k is None else k
    idx = stable_argsort(xp, x, axis, ascend)
    return idx if k == n else idx[(slice(None),) * axis + (slice(0, k),)]


def packed_order(xp, x, axis, ascend, k=None):
    """``order`` on NumPy arrays by sorting packed keys (one plain sort, or a partition
    for top-k), falling back to ``order`` for 64-bit types. The CPU kernel's primitive."""
    n = x.shape[axis]
    k = n if k is None else k
    keys = _packed_keys(np.moveaxis(x, axis, -1), ascend)
    if keys is None:
        return order(xp, x, axis, ascend, k)
    if k < n:
        keys = np.partition(keys, k - 1, axis=-1)[..., :k]
    idx = (np.sort(keys, axis=-1) & np.uint64(0xFFFFFFFF)).astype(np.int64)
    return np.ascontiguousarray(np.moveaxis(idx, -1, axis))


def _lanes(opname, p, shape):
    """(axis, shape sorted along): axis=None sorts the flattened array."""
    if p.axis is None:
        return 0, (prod(shape),)
    return norm_axis(opname, p.axis, len(shape)), tuple(shape)


def _flat(x, p):
    return x.reshape(-1) if p.axis is None else x


def _scatter_back(xp, shape, p, idx, g, axis):
    """The gradient of values = take_along_axis(x, idx): g placed at idx."""
    flat_shape = (int(np.prod(shape)),) if p.axis is None else tuple(shape)
    grad = xp.zeros(flat_shape, g.dtype)
    grad[lane_key(xp, idx.astype(np.int64, copy=False), axis)] = g
    return grad.reshape(shape)


class _Ordering(Op):
    backward_uses = ("out_grad", "out_data")
    order = staticmethod(order)      # the sorting primitive (a CPU kernel swaps it)

    def infer_type(self, p, in_types):
        t = in_types[0]
        return in_types, [self._out_type(p, t, i) for i in range(len(self.outputs(p)))], []

    def _out_type(self, p, t, i):
        return t


@register
class Sort(_Ordering):
    """Sorted copy along ``axis`` (the flattened array when None)."""
    name = "sort"
    named_inputs = False
    params = Schema(axis=IntOrNone(-1), is_ascend=Bool(True))

    def outputs(self, p):
        return ["output0", "output1"]

    def num_visible_outputs(self, p):
        return 1

    def _out_type(self, p, t, i):
        return t if i == 0 else _HIDDEN_INDEX

    def infer_shape(self, p, in_shapes):
        s = in_shapes[0]
        if s is None:
            return in_shapes, [None, None], []
        out = _lanes(self.name, p, s)[1]
        return in_shapes, [out, out], []

    def forward(self, ctx, p, inputs, aux):
        xp, x = ctx.xp, _flat(inputs[0], p)
        axis = _lanes(self.name, p, inputs[0].shape)[0]
        idx = self.order(xp, x, axis, p.is_ascend)
        return [xp.take_along_axis(x, idx, axis=axis), idx]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux):
        shape = ctx.in_shapes[0]
        axis = _lanes(self.name, p, shape)[0]
        return [_scatter_back(ctx.xp, shape, p, outputs[1], out_grads[0], axis)]


@register
class Argsort(_Ordering):
    """Positions that sort the input along ``axis`` (flattened when None), as
    ``dtype`` (float32 by default)."""
    name = "argsort"
    named_inputs = False
    params = Schema(axis=IntOrNone(-1), is_ascend=Bool(True),
                    dtype=DType("float32", enum=_INDEX_TYPES))
    zero_grad = True
    backward_uses = ()

    def _out_type(self, p, t, i):
        return np.dtype(p.dtype)

    def infer_shape(self, p, in_shapes):
        s = in_shapes[0]
        return in_shapes, [None if s is None else _lanes(self.name, p, s)[1]], []

    def forward(self, ctx, p, inputs, aux):
        x = _flat(inputs[0], p)
        axis = _lanes(self.name, p, inputs[0].shape)[0]
        return [self.order(ctx.xp, x, axis, p.is_ascend).astype(p.dtype)]


@register
class TopK(_Ordering):
    """The k largest (smallest with is_ascend) elements along ``axis``: their values,
    positions (as ``dtype``), both, or a 0/1 mask of the input's shape (ret_typ).
    k <= 0 means the whole axis."""
    name = "topk"
    named_inputs = False
    params = Schema(axis=IntOrNone(-1), k=Int(1),
                    ret_typ=Enum(("both", "indices", "mask", "value"), "indices"),
                    is_ascend=Bool(False), dtype=DType("float32", enum=_INDEX_TYPES))

    def outputs(self, p):
        return ["output0", "output1"] if p.ret_typ in ("value", "both") else ["output"]

    def num_visible_outputs(self, p):
        return 2 if p.ret_typ == "both" else 1

    def _out_type(self, p, t, i):
        if p.ret_typ == "indices" or (p.ret_typ == "both" and i == 1):
            return np.dtype(p.dtype)
        if p.ret_typ == "value" and i == 1:
            return _HIDDEN_INDEX
        return t

    def _geometry(self, p, shape):
        """(axis, lane shape, k, output shape of values/indices)."""
        axis, lanes = _lanes(self.name, p, shape)
        n = lanes[axis]
        if n is None:
            return axis, lanes, None, None
        k = n if p.k <= 0 else p.k
        if k > n:
            raise MXNetError(f"topk: k={p.k} is larger than the size {n} of the axis "
                             f"(input shape {tuple(shape)})")
        out = list(lanes)
        out[axis] = k
        return axis, lanes, k, tuple(out)

    def infer_shape(self, p, in_shapes):
        s = in_shapes[0]
        n_out = len(self.outputs(p))
        if s is None:
            return in_shapes, [None] * n_out, []
        if p.ret_typ == "mask":
            return in_shapes, [tuple(s)], []
        axis, lanes, k, out = self._geometry(p, s)
        if out is None:
            out = tuple(d if i != axis else (p.k if p.k > 0 else None)
                        for i, d in enumerate(lanes))
        return in_shapes, [out] * n_out, []

    def forward(self, ctx, p, inputs, aux):
        xp, x = ctx.xp, _flat(inputs[0], p)
        axis, lanes, k, out = self._geometry(p, inputs[0].shape)
        idx = self.order(xp, x, axis, p.is_ascend, k)
        if p.ret_typ == "indices":
            return [idx.astype(p.dtype)]
        if p.ret_typ == "mask":
            mask = xp.zeros(x.shape, inputs[0].dtype)
            mask[lane_key(xp, idx, axis)] = 1
            return [mask.reshape(inputs[0].shape)]
        values = xp.take_along_axis(x, idx, axis=axis)
        return [values, idx.astype(p.dtype) if p.ret_typ == "both" else idx]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux):
        shape = ctx.in_shapes[0]
        g = out_grads[0]
        if p.ret_typ in ("indices", "mask"):
            return [ctx.xp.zeros(shape, g.dtype if p.ret_typ == "mask" else np.float32)]
        axis = _lanes(self.name, p, shape)[0]
        return [_scatter_back(ctx.xp, shape, p, outputs[1], g, axis)]
