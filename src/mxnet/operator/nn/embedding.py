"""Embedding: map integer indices to rows of a weight matrix (input_dim, output_dim).

Indices arrive as floats (MXNet 1.x habit); they are truncated to integers and clipped
to [0, input_dim - 1]. The weight gradient scatter-adds the output gradient into the
rows that were looked up.
"""
import numpy as np

from ..params import Bool, DType, Int, Schema
from ..registry import Op, ShapeError, register
from ..ops.indexing import scatter_add

__all__ = ["Embedding"]

_DTYPES = ("bfloat16", "float16", "float32", "float64", "int32", "int64", "int8", "uint8")


def sorted_scatter_add(xp, dst, idx, values):
    """scatter_add for NumPy arrays (the CPU kernel's primitive): sorting groups equal
    indices so each row's sum is one reduceat segment, which beats np.add.at, most of
    all when indices repeat (frequent tokens)."""
    order = np.argsort(idx, kind="stable")
    sorted_idx = idx[order]
    starts = np.flatnonzero(np.r_[True, sorted_idx[1:] != sorted_idx[:-1]])
    dst[sorted_idx[starts]] += np.add.reduceat(values[order], starts, axis=0)


@register
class Embedding(Op):
    """Look up rows of ``weight`` (input_dim, output_dim) for every index in ``data``;
    the output has shape data.shape + (output_dim,) and the weight's dtype (``dtype``
    when the weight's type is not known). ``sparse_grad`` is accepted; the weight
    gradient is always dense here."""
    scatter_add = staticmethod(scatter_add)    # a CPU kernel swaps the primitive
    name = "Embedding"
    params = Schema(input_dim=Int(low=1), output_dim=Int(low=1),
                    dtype=DType("float32", enum=_DTYPES), sparse_grad=Bool(False))
    backward_uses = ("out_grad", "in_data")

    def arguments(self, p):
        return ["data", "weight"]

    def infer_shape(self, p, in_shapes):
        d, w = in_shapes
        want = (p.input_dim, p.output_dim)
        if w is not None and tuple(w) != want:
            raise ShapeError(f"Embedding: weight shape inconsistent: provided {tuple(w)}, "
                             f"expected (input_dim, output_dim) = {want}")
        out = None if d is None else tuple(d) + (p.output_dim,)
        return [d, want], [out], []

    def infer_type(self, p, in_types):
        d, w = in_types
        if w is None:
            w = np.dtype(p.dtype)
        return [d, w], [w], []

    def _indices(self, xp, p, data):
        idx = data if data.dtype.kind in "iu" else data.astype(np.int64)
        return xp.clip(idx, 0, p.input_dim - 1)

    def forward(self, ctx, p, inputs, aux):
        xp, data, weight = ctx.xp, inputs[0], inputs[1]
        self.infer_shape(p, [data.shape, weight.shape])
        return [xp.take(weight, self._indices(xp, p, data), axis=0)]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux):
        xp, g, data = ctx.xp, out_grads[0], inputs[0]
        need = ctx.need_grad or (False, True)
        gd = xp.zeros(data.shape, data.dtype) if need[0] else None
        gw = None
        if need[1]:
            gw = xp.zeros(ctx.in_shapes[1], g.dtype)
            idx = self._indices(xp, p, data).reshape(-1)
            if idx.size:
                self.scatter_add(xp, gw, idx, g.reshape(-1, p.output_dim))
        return [gd, gw]
