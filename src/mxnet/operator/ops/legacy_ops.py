"""MXNet's deprecated NDArray functions kept for old code: fill_element_0index (write
one element per row) and _onehot_encode (the back end of ``nd.onehot_encode``).
``choose_element_0index`` is an alias of ``pick`` (ops/indexing.py)."""
import numpy as np

from ..registry import Op, ShapeError, register
from ..dtypes import F32, restrict_dtypes
from ..out_contract import adopt_out_contract


@register
@restrict_dtypes(F32, inputs=(0, 1, 2))
class FillElement0Index(Op):
    """A copy of the matrix ``lhs`` with ``lhs[i, rhs[i]] = mhs[i]`` for every row i."""
    name = "fill_element_0index"
    # no gradient, as in MXNet 1.9.1 (an NDArray-only legacy function there)

    def arguments(self, p):
        return ["lhs", "mhs", "rhs"]

    def infer_shape(self, p, in_shapes):
        lhs, mhs, rhs = in_shapes
        if lhs is not None:
            if len(lhs) != 2:
                raise ShapeError(f"fill_element_0index: lhs must be a matrix, got {tuple(lhs)}")
            for nm, s in (("mhs", mhs), ("rhs", rhs)):
                if s is not None and tuple(s) != (lhs[0],):
                    raise ShapeError(f"fill_element_0index: {nm} must have shape "
                                     f"({lhs[0]},), got {tuple(s)}")
            mhs = rhs = (lhs[0],)
        return [lhs, mhs, rhs], [lhs], []

    def infer_type(self, p, in_types):
        t = in_types[0]
        return [t, t, t], [t], []

    def forward(self, ctx, p, inputs, aux, out=None):
        xp = ctx.xp
        lhs, mhs, rhs = inputs
        self.infer_shape(p, [lhs.shape, mhs.shape, rhs.shape])
        res = lhs.copy() if out is None or out[0] is None else out[0]
        if res is not lhs:
            res[...] = lhs
        cols = xp.clip(rhs.astype(np.int64), 0, lhs.shape[1] - 1)
        res[xp.arange(lhs.shape[0]), cols] = mhs
        return [res]


@register
class OnehotEncode(Op):
    """Rows of ``rhs``'s shape (n, depth) that are one-hot at ``lhs[i]`` (n indices)."""
    name = "_onehot_encode"
    zero_grad = True

    def arguments(self, p):
        return ["lhs", "rhs"]

    def infer_shape(self, p, in_shapes):
        lhs, rhs = in_shapes
        if lhs is not None and rhs is not None and (len(rhs) != 2 or tuple(lhs) != (rhs[0],)):
            raise ShapeError(f"onehot_encode: indices of shape {tuple(lhs)} do not match "
                             f"an output of shape {tuple(rhs)} (expected (n,) and (n, depth))")
        return [lhs, rhs], [rhs], []

    def infer_type(self, p, in_types):
        return in_types, [in_types[1]], []

    def forward(self, ctx, p, inputs, aux, out=None):
        xp = ctx.xp
        idx, like = inputs
        self.infer_shape(p, [idx.shape, like.shape])
        res = xp.zeros(like.shape, like.dtype)
        cols = idx.astype(np.int64)
        ok = (cols >= 0) & (cols < like.shape[1])
        rows = xp.arange(like.shape[0])
        res[rows[ok], cols[ok]] = 1
        return [res]


adopt_out_contract(__name__)
