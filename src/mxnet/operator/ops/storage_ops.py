"""Operators about storage types: ``cast_storage``, ``_sparse_retain`` (mx.nd.sparse.retain)
and ``_square_sum``. Their bodies here are the dense ones (what runs when every input is
dense, and MXNet's storage fallback); the row_sparse/csr paths are sparse kernels in
``operator.kernels_sparse``."""
import numpy as np

from ..params import Bool, Enum, Schema, ShapeOrNone
from ..registry import Op, register
from ..out_contract import adopt_out_contract
from .reduce import reduce_axes, reduced_shape


@register
class CastStorage(Op):
    """Convert to another storage type; on dense data (the body here) a copy."""
    name = "cast_storage"
    named_inputs = False
    params = Schema(stype=Enum(("csr", "default", "row_sparse")))
    backward_uses = ("out_grad",)

    def forward(self, ctx, p, inputs, aux, out=None):
        return [inputs[0].copy()]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux, in_grad=None):
        return [out_grads[0]]


@register
class SparseRetain(Op):
    """Keep the rows of ``data`` whose ids are in ``indices``; every other row is zero."""
    name = "_sparse_retain"
    backward_uses = ("out_grad", "in_data")

    def arguments(self, p):
        return ["data", "indices"]

    def infer_shape(self, p, in_shapes):
        return [in_shapes[0], in_shapes[1]], [in_shapes[0]], []

    def infer_type(self, p, in_types):
        idx = in_types[1] if in_types[1] is not None else np.dtype(np.int64)
        return [in_types[0], idx], [in_types[0]], []

    def _mask(self, xp, rows, idx):
        keep = xp.zeros((rows,), dtype=bool)
        ids = idx.astype(np.int64).ravel()
        keep[ids[(ids >= 0) & (ids < rows)]] = True
        return keep.reshape((rows,) + (1,) * 0)

    def forward(self, ctx, p, inputs, aux, out=None):
        x, idx = inputs
        keep = self._mask(ctx.xp, x.shape[0], idx)
        return [x * keep.reshape((-1,) + (1,) * (x.ndim - 1)).astype(x.dtype)]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux, in_grad=None):
        g = out_grads[0]
        keep = self._mask(ctx.xp, g.shape[0], inputs[1])
        return [g * keep.reshape((-1,) + (1,) * (g.ndim - 1)).astype(g.dtype), None]


@register
class SquareSum(Op):
    """sum(data ** 2) over ``axis`` (MXNet's _square_sum, made for row_sparse data)."""
    name = "_square_sum"
    params = Schema(axis=ShapeOrNone(None), keepdims=Bool(False), exclude=Bool(False))
    backward_uses = ("out_grad", "in_data")

    def _axes(self, p, shape):
        return reduce_axes(self.name, shape, p["axis"], p["exclude"])

    def infer_shape(self, p, in_shapes):
        s = in_shapes[0]
        if s is None:
            return [None], [None], []
        return [s], [reduced_shape(s, self._axes(p, s), p["keepdims"])], []

    def forward(self, ctx, p, inputs, aux, out=None):
        x = inputs[0]
        axes = self._axes(p, x.shape)
        y = ctx.xp.sum(ctx.xp.square(x), axis=axes, keepdims=True).astype(x.dtype)
        return [y.reshape(reduced_shape(x.shape, axes, p["keepdims"]))]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux, in_grad=None):
        x = inputs[0]
        axes = self._axes(p, x.shape)
        kept = tuple(1 if i in axes else s for i, s in enumerate(x.shape))
        return [(2 * x * out_grads[0].reshape(kept)).astype(x.dtype)]


adopt_out_contract(__name__)
