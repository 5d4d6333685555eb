"""``_contrib_getnnz``: how many values a csr array stores, in all or per row.

The count comes from the csr structure (``operator.kernels_sparse``). The dense body
below counts the non-zeros of the dense form, which is the same number for arrays that
store no explicit zeros; the executor, which computes every node densely, uses it.
"""
import numpy as np

from ..params import IntOrNone, Schema
from ..registry import Op, ShapeError, register

__all__ = ["GetNNZ"]


@register
class GetNNZ(Op):
    """Stored-value count of a csr matrix: shape (1,) for ``axis=None``, (rows,) for
    ``axis=1``; int64. MXNet 1.9.1 supports no other axis, and no gradient."""
    name = "_contrib_getnnz"
    params = Schema(axis=IntOrNone(None))
    writes_outputs = True

    def infer_shape(self, p, in_shapes):
        d = in_shapes[0]
        if p.axis not in (None, 1, -1):
            raise ShapeError(f"getnnz with axis = {p.axis} is not supported (axis must be "
                             "None or 1)")
        if d is None:
            return [d], [None], []
        if len(d) != 2:
            raise ShapeError(f"getnnz: data must be a 2-D csr array, got shape {tuple(d)}")
        return [tuple(d)], [(1,) if p.axis is None else (d[0],)], []

    def infer_type(self, p, in_types):
        return [in_types[0]], [np.dtype(np.int64)], []

    def forward(self, ctx, p, inputs, aux, out=None):
        self.infer_shape(p, [inputs[0].shape])
        xp = ctx.xp
        nz = inputs[0] != 0
        res = nz.sum(dtype=np.int64).reshape(1) if p.axis is None else \
            nz.sum(axis=1, dtype=np.int64)
        if out is not None and out[0] is not None:
            out[0][...] = res
            return [out[0]]
        return [xp.asarray(res)]
