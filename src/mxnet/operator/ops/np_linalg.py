"""``_npi_svd``: the singular value decomposition behind ``mx.np.linalg.svd``.

As in MXNet 1.9.1 (LAPACK gesvd on wide matrices), each matrix A of shape (M, N) in the
last two axes must have M <= N and is factored as A = UT @ diag(L) @ V with UT (M, M)
orthogonal, L (M,) descending and V (M, N) with orthonormal rows.

``_npi_tensorinv``: the inverse of a tensor with respect to ``tensordot``."""
import numpy as np

from ..contrib._common import store
from ..params import Int, Schema
from ..registry import Op, ShapeError, register
from .linalg import _FLOATS, _check_types, _same_type


def _t(x):
    return x.swapaxes(-1, -2)


def _wide(shape):
    if shape is not None and (len(shape) < 2 or shape[-2] > shape[-1]):
        raise ShapeError(f"_npi_svd: expected matrices with rows <= columns in the last two "
                         f"axes, got shape {tuple(shape)}")


@register
class NpSvd(Op):
    """(UT, L, V) with A = UT diag(L) V for each (M, N), M <= N matrix of A."""
    name = "_npi_svd"
    params = Schema()
    backward_uses = ("out_grad", "out_data")
    writes_outputs = True

    def arguments(self, p):
        return ["A"]

    def outputs(self, p):
        return ["ut", "l", "v"]

    def infer_type(self, p, in_types):
        return _same_type(self.name, in_types, 3)

    def infer_shape(self, p, in_shapes):
        s = in_shapes[0]
        if s is None:
            return in_shapes, [None] * 3, []
        _wide(s)
        m = s[-2]
        return in_shapes, [tuple(s[:-1]) + (m,), tuple(s[:-1]), tuple(s)], []

    def forward(self, ctx, p, inputs, aux, out=None):
        xp, a = ctx.xp, inputs[0]
        _check_types(self.name, [a], _FLOATS)
        _wide(a.shape)
        if a.size == 0:     # LAPACK is not called on empty matrices
            ut = xp.zeros(a.shape[:-1] + (a.shape[-2],), a.dtype)
            res = [ut, xp.zeros(a.shape[:-1], a.dtype), xp.zeros(a.shape, a.dtype)]
        else:
            u, s, vh = xp.linalg.svd(a, full_matrices=False)
            res = [u.astype(a.dtype, copy=False), s.astype(a.dtype, copy=False),
                   vh.astype(a.dtype, copy=False)]
        if out is None:
            return res
        for dst, r in zip(out, res):
            if dst is not None:
                dst[...] = r
        return [r if dst is None else dst for dst, r in zip(out, res)]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux, in_grad=None):
        # With S = diag(L) and A = UT S V (V's rows orthonormal, M <= N):
        #   G1 = (dV V^T) * (L_j / L_i) + dUT^T UT,   X = G1 o E,  E_ij = 1/(L_j^2 - L_i^2)
        #   G2 = diag(dL) + (X + X^T) * L_j - diag(diag(dV V^T) / L)
        #   dA = UT (G2 V + dV / L_i)
        # (E's denominators are clipped away from zero, as MXNet does, so that repeated
        # singular values give large but finite gradients.)
        xp = ctx.xp
        ut, s, v = outputs
        dut, ds, dv = out_grads
        if ut.size == 0 or v.size == 0:
            g = xp.zeros(v.shape, v.dtype)
        else:
            m = s.shape[-1]
            li, lj = s[..., :, None], s[..., None, :]
            upper = xp.triu(xp.ones((m, m), dtype=bool), 1)
            e = 1.0 / (xp.maximum(li - lj, 1e-20) * xp.maximum(li + lj, 1e-20))
            e = xp.where(upper, e, 0)
            e = e - _t(e)                       # E_ij = -E_ji, zero diagonal
            dvvt = xp.matmul(dv, _t(v))
            g1 = dvvt / li * lj + xp.matmul(_t(dut), ut)
            x = g1 * e
            eye = xp.eye(m, dtype=v.dtype)
            g2 = eye * ds[..., None, :] + (x + _t(x)) * lj \
                - eye * (xp.diagonal(dvvt, 0, -2, -1) / s)[..., None, :]
            g = xp.matmul(ut, xp.matmul(g2, v) + dv / li)
        g = g.astype(v.dtype, copy=False)
        return [store(in_grad, 0, g)]


def _tensorinv_sizes(p, shape):
    ind = p.ind
    if ind <= 0:
        raise ShapeError(f"_npi_tensorinv: ind must be positive, got {ind}")
    if len(shape) < ind:
        raise ShapeError(f"_npi_tensorinv: ind={ind} exceeds the input's {len(shape)} axes")
    front, back = tuple(shape[:ind]), tuple(shape[ind:])
    n = int(np.prod(front, dtype=np.int64))
    if n != int(np.prod(back, dtype=np.int64)):
        raise ShapeError(f"_npi_tensorinv: the product of shape[:ind] {front} must equal "
                         f"the product of shape[ind:] {back}")
    return front, back, n


@register
class NpTensorinv(Op):
    """Inverse of A with respect to tensordot over its first ``ind`` axes: A seen as
    an (n, n) matrix (n the product of those axes), inverted, of shape
    A.shape[ind:] + A.shape[:ind]."""
    name = "_npi_tensorinv"
    params = Schema(ind=Int(2))
    backward_uses = ("out_grad", "out_data")
    writes_outputs = True

    def arguments(self, p):
        return ["a"]

    def infer_type(self, p, in_types):
        return _same_type(self.name, in_types, 1)

    def infer_shape(self, p, in_shapes):
        s = in_shapes[0]
        if s is None or any(d is None for d in s):
            return in_shapes, [None], []
        front, back, _ = _tensorinv_sizes(p, s)
        return in_shapes, [back + front], []

    def forward(self, ctx, p, inputs, aux, out=None):
        xp, a = ctx.xp, inputs[0]
        _check_types(self.name, [a], _FLOATS)
        front, back, n = _tensorinv_sizes(p, a.shape)
        res = xp.linalg.inv(a.reshape(n, n)).astype(a.dtype, copy=False).reshape(back + front)
        return [store(out, 0, res)]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux, in_grad=None):
        # as for a matrix inverse B = A^{-1}: dA = -B^T dB B^T, on the (n, n) views
        xp, b = ctx.xp, outputs[0]
        n = int(np.prod(b.shape[:b.ndim - p.ind], dtype=np.int64))
        bm, g = b.reshape(n, n), out_grads[0].reshape(n, n)
        res = -xp.matmul(xp.matmul(bm.T, g), bm.T).reshape(ctx.in_shapes[0])
        return [store(in_grad, 0, res)]
