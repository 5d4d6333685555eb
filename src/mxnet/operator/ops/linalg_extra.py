"""The rest of the ``linalg`` family: det, slogdet, inverse, extractdiag, makediag,
extracttrian, maketrian, gelqf (LQ factorisation) and syevd (symmetric
eigendecomposition), on batches of matrices in the last two axes.

Conventions kept from MXNet 1.9.1:
* triangles are packed row by row from ``tril(A, offset)`` when ``offset < 0`` or
  (``offset == 0`` and ``lower``); otherwise from ``tril(A^T, -offset)`` (the upper
  triangle column by column); ``lower`` only matters at offset 0;
* gelqf returns (Q, L) with A = L Q, Q's rows orthonormal (LAPACK's Householder signs);
* syevd returns (U, lam) with A = U^T diag(lam) U, lam ascending, each row of U signed
  so that its entry of largest magnitude is positive.
"""
import numpy as np

from ..params import Bool, Int, Schema
from ..registry import Op, ShapeError, register
from .linalg import _FLOATS, _check_types, _same_type
from ..dtypes import F32_64, restrict_dtypes
from ..out_contract import adopt_out_contract


def _t(x):
    return x.swapaxes(-1, -2)


def _square(opname, shape):
    if shape is not None and (len(shape) < 2 or shape[-1] != shape[-2]):
        raise ShapeError(f"{opname}: expected square matrices in the last two axes, "
                         f"got shape {tuple(shape)}")


class _LinalgOp(Op):
    """One matrix argument ``A`` of float32/float64."""
    params = Schema()

    def arguments(self, p):
        return ["A"]

    def infer_type(self, p, in_types):
        return _same_type(self.name, in_types, len(self.outputs(p)))


@register
class Det(_LinalgOp):
    """Determinant of each square matrix."""
    name = "_linalg_det"
    aliases = ("linalg_det",)
    backward_uses = ("out_grad", "in_data", "out_data")

    def infer_shape(self, p, in_shapes):
        s = in_shapes[0]
        _square(self.name, s)
        return [s], [None if s is None else (tuple(s[:-2]) or (1,))], []

    def forward(self, ctx, p, inputs, aux, out=None):
        a = inputs[0]
        _check_types(self.name, [a], _FLOATS)
        _square(self.name, a.shape)
        d = ctx.xp.linalg.det(a).astype(a.dtype, copy=False)
        return [d.reshape(d.shape or (1,))]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux, in_grad=None):
        # d det(A) = det(A) * A^{-T}
        xp, a = ctx.xp, inputs[0]
        scale = (out_grads[0] * outputs[0]).reshape(a.shape[:-2] + (1, 1))
        return [scale * _t(xp.linalg.inv(a))]


@register
class SLogDet(_LinalgOp):
    """Sign and log of the absolute determinant of each square matrix."""
    name = "_linalg_slogdet"
    aliases = ("linalg_slogdet",)
    backward_uses = ("out_grad", "in_data")

    def outputs(self, p):
        return ["output0", "output1"]

    def infer_shape(self, p, in_shapes):
        s = in_shapes[0]
        _square(self.name, s)
        o = None if s is None else (tuple(s[:-2]) or (1,))
        return [s], [o, o], []

    def forward(self, ctx, p, inputs, aux, out=None):
        a = inputs[0]
        _check_types(self.name, [a], _FLOATS)
        _square(self.name, a.shape)
        sign, logdet = ctx.xp.linalg.slogdet(a)
        shape = sign.shape or (1,)
        return [sign.astype(a.dtype).reshape(shape), logdet.astype(a.dtype).reshape(shape)]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux, in_grad=None):
        # d log|det A| = A^{-T}; the sign is piecewise constant.
        xp, a = ctx.xp, inputs[0]
        g = out_grads[1].reshape(a.shape[:-2] + (1, 1))
        return [g * _t(xp.linalg.inv(a))]


@register
class Inverse(_LinalgOp):
    """Inverse of each square matrix."""
    name = "_linalg_inverse"
    aliases = ("linalg_inverse",)
    backward_uses = ("out_grad", "out_data")

    def infer_shape(self, p, in_shapes):
        _square(self.name, in_shapes[0])
        return [in_shapes[0]], [in_shapes[0]], []

    def forward(self, ctx, p, inputs, aux, out=None):
        a = inputs[0]
        _check_types(self.name, [a], _FLOATS)
        _square(self.name, a.shape)
        return [ctx.xp.linalg.inv(a).astype(a.dtype, copy=False)]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux, in_grad=None):
        # d(A^{-1}) = -A^{-1} dA A^{-1}  =>  grad = -A^{-T} g A^{-T}
        xp, inv = ctx.xp, outputs[0]
        return [-xp.matmul(xp.matmul(_t(inv), out_grads[0]), _t(inv))]


# --- diagonals ----------------------------------------------------------------------
def _diag_len(opname, m, n, k):
    size = min(m, n - k) if k >= 0 else min(m + k, n)
    if size <= 0:
        raise ShapeError(f"{opname}: offset {k} leaves no diagonal in a {m}x{n} matrix")
    return size


def _diag_index(xp, m, n, k):
    size = _diag_len("diagonal", m, n, k)
    i = xp.arange(size)
    return (i - min(k, 0), i + max(k, 0))


class _Pick(_LinalgOp):
    """Extract (``_make`` False) or make (True) along an index set ``_index(xp, p, m,
    n)`` of matrix entries: extracting gathers them into a vector, making scatters a
    vector into zero matrices; each is the other's backward."""
    backward_uses = ("out_grad",)
    _make = False

    def _gather(self, xp, p, a):
        r, c = self._index(xp, p, *a.shape[-2:])
        return xp.ascontiguousarray(a[..., r, c])

    def _scatter(self, xp, p, v, shape):
        res = xp.zeros(tuple(shape), v.dtype)
        r, c = self._index(xp, p, *shape[-2:])
        res[..., r, c] = v
        return res

    def infer_shape(self, p, in_shapes):       # make: (..., len) -> (..., n, n)
        s = in_shapes[0]
        if s is None:
            return [None], [None], []
        n = self._n(p, s[-1])
        return [s], [tuple(s[:-1]) + (n, n)], []

    def forward(self, ctx, p, inputs, aux, out=None):
        a = inputs[0]
        if self._make:
            n = self._n(p, a.shape[-1])
            return [self._scatter(ctx.xp, p, a, a.shape[:-1] + (n, n))]
        self.infer_shape(p, [a.shape])
        return [self._gather(ctx.xp, p, a)]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux, in_grad=None):
        g = out_grads[0]
        if self._make:
            return [self._gather(ctx.xp, p, g)]
        return [self._scatter(ctx.xp, p, g, ctx.in_shapes[0])]


@register
@restrict_dtypes(F32_64)
class ExtractDiag(_Pick):
    """Diagonal ``offset`` of each square matrix, as a vector."""
    name = "_linalg_extractdiag"
    aliases = ("linalg_extractdiag",)
    params = Schema(offset=Int(0))

    def _index(self, xp, p, m, n):
        return _diag_index(xp, m, n, p.offset)

    def infer_shape(self, p, in_shapes):
        s = in_shapes[0]
        if s is None:
            return [None], [None], []
        if len(s) < 2:
            raise ShapeError(f"{self.name}: expected a matrix, got shape {tuple(s)}")
        _square(self.name, s)       # as MXNet, which takes square matrices only
        return [s], [tuple(s[:-2]) + (_diag_len(self.name, s[-2], s[-1], p.offset),)], []


@register                           # float32/64 only, as ExtractDiag
class MakeDiag(ExtractDiag):
    """Square matrices with the input vectors on diagonal ``offset``, zero elsewhere."""
    name = "_linalg_makediag"
    aliases = ("linalg_makediag",)
    _make = True
    infer_shape = _Pick.infer_shape

    def _n(self, p, length):
        return length + abs(p.offset)


# --- triangles ----------------------------------------------------------------------
def _trian_index(xp, n, offset, lower):
    """(rows, cols) of the packed triangle, in packing order (see module docstring)."""
    transpose = offset > 0 or (offset == 0 and not lower)
    k = -abs(offset)
    r, c = np.tril_indices(n, k)
    if transpose:
        r, c = c, r
    return xp.asarray(r), xp.asarray(c)


def _trian_size(n, offset):
    t = n - abs(offset)
    return t * (t + 1) // 2


@register
@restrict_dtypes(F32_64)
class ExtractTrian(_Pick):
    """The triangle of each square matrix selected by ``offset``/``lower``, packed
    into a vector."""
    name = "_linalg_extracttrian"
    aliases = ("linalg_extracttrian",)
    params = Schema(offset=Int(0), lower=Bool(True))

    def _index(self, xp, p, m, n):
        return _trian_index(xp, n, p.offset, p.lower)

    def infer_shape(self, p, in_shapes):
        s = in_shapes[0]
        if s is None:
            return [None], [None], []
        _square(self.name, s)
        if abs(p.offset) >= s[-1]:
            raise ShapeError(f"{self.name}: offset {p.offset} is too large for "
                             f"{s[-1]}x{s[-1]} matrices")
        return [s], [tuple(s[:-2]) + (_trian_size(s[-1], p.offset),)], []


@register                           # float32/64 only, as ExtractTrian
class MakeTrian(ExtractTrian):
    """Square matrices whose triangle (selected as by extracttrian) holds the input
    vectors, zero elsewhere."""
    name = "_linalg_maketrian"
    aliases = ("linalg_maketrian",)
    _make = True
    infer_shape = _Pick.infer_shape

    def _n(self, p, length):
        t = int(round((np.sqrt(8 * length + 1) - 1) / 2))
        if t * (t + 1) // 2 != length:
            raise ShapeError(f"{self.name}: {length} is not a triangular number of "
                             "elements")
        return t + abs(p.offset)


# --- factorisations -----------------------------------------------------------------
def _copyltu(xp, m):
    """The symmetric matrix with m's lower triangle (diagonal included)."""
    low = xp.tril(m)
    return low + _t(xp.tril(m, -1))


@register
class Gelqf(_LinalgOp):
    """LQ factorisation A = L Q of each m x n matrix (m <= n): Q (m x n) with
    orthonormal rows and lower triangular L (m x m)."""
    name = "_linalg_gelqf"
    aliases = ("linalg_gelqf",)
    backward_uses = ("out_grad", "out_data")

    def outputs(self, p):
        return ["output0", "output1"]

    def infer_shape(self, p, in_shapes):
        s = in_shapes[0]
        if s is None:
            return [None], [None, None], []
        if len(s) < 2 or s[-2] > s[-1]:
            raise ShapeError(f"{self.name}: expected matrices with rows <= columns, got "
                             f"shape {tuple(s)}")
        m = s[-2]
        return [s], [tuple(s), tuple(s[:-2]) + (m, m)], []

    def forward(self, ctx, p, inputs, aux, out=None):
        a = inputs[0]
        _check_types(self.name, [a], _FLOATS)
        self.infer_shape(p, [a.shape])
        # A^T = Q' R (Householder QR)  =>  A = R^T Q'^T.
        q, r = ctx.xp.linalg.qr(_t(a))
        return [ctx.xp.ascontiguousarray(_t(q)).astype(a.dtype, copy=False),
                ctx.xp.ascontiguousarray(_t(r)).astype(a.dtype, copy=False)]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux, in_grad=None):
        # With M = L^T dL - dQ Q^T:  dA = L^{-T} (dQ + copyltu(M) Q).
        xp = ctx.xp
        q, low = outputs
        dq, dl = out_grads
        m = xp.matmul(_t(low), dl) - xp.matmul(dq, _t(q))
        rhs = dq + xp.matmul(_copyltu(xp, m), q)
        return [xp.linalg.solve(_t(low), rhs)]


@register
class Syevd(_LinalgOp):
    """Eigendecomposition A = U^T diag(lam) U of each symmetric matrix (rows of U are
    the eigenvectors, lam ascending)."""
    name = "_linalg_syevd"
    aliases = ("linalg_syevd",)
    backward_uses = ("out_grad", "out_data")

    def outputs(self, p):
        return ["output0", "output1"]

    def infer_shape(self, p, in_shapes):
        s = in_shapes[0]
        _square(self.name, s)
        return [s], [s, None if s is None else tuple(s[:-1])], []

    def forward(self, ctx, p, inputs, aux, out=None):
        xp, a = ctx.xp, inputs[0]
        _check_types(self.name, [a], _FLOATS)
        _square(self.name, a.shape)
        if a.size == 0:     # empty matrices or batch: nothing to decompose or sign
            return [xp.zeros(a.shape, a.dtype), xp.zeros(a.shape[:-1], a.dtype)]
        lam, v = xp.linalg.eigh(a.astype(np.float64), UPLO="L")
        u = _t(v)
        # Sign: the entry of largest magnitude of each eigenvector is positive.
        big = xp.take_along_axis(u, xp.abs(u).argmax(axis=-1)[..., None], axis=-1)
        u = u * xp.where(big < 0, -1.0, 1.0)
        return [xp.ascontiguousarray(u).astype(a.dtype), lam.astype(a.dtype)]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux, in_grad=None):
        # Abar = U^T (diag(dlam) + F o (dU U^T)) U, symmetrised; F_ij = 1/(lam_i-lam_j).
        xp = ctx.xp
        u, lam = outputs
        du, dlam = out_grads
        diff = lam[..., :, None] - lam[..., None, :]
        with np.errstate(divide="ignore", invalid="ignore"):
            f = xp.where(diff == 0, 0, 1.0 / xp.where(diff == 0, 1, diff))
        inner = f * xp.matmul(du, _t(u))
        n = lam.shape[-1]
        inner = inner + xp.eye(n, dtype=u.dtype) * dlam[..., None, :]
        g = xp.matmul(xp.matmul(_t(u), inner), u)
        return [((g + _t(g)) / 2).astype(u.dtype, copy=False)]


adopt_out_contract(__name__)
