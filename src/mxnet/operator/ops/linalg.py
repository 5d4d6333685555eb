"""Matrix products and the ``linalg`` family: dot, batch_dot, gemm, gemm2, potrf, potri,
trsm, trmm, syrk, sumlogdiag.

Products go through ``xp.matmul`` on 2-D (or stacked 2-D) views so NumPy/CuPy hand them
to BLAS with transposition flags instead of copying transposed operands.
"""
import numpy as np

from ...base import MXNetError
from ..params import Bool, Enum, Float, Int, Schema
from ..registry import Op, ShapeError, register

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
_DOT_FLOATS = _FLOATS + (np.dtype(np.float16),)


def _check_types(opname, arrays, allowed):
    """Every operand must have one float dtype (MXNet infers one type per node)."""
    dt = arrays[0].dtype
    for a in arrays[1:]:
        if a.dtype != dt:
            raise MXNetError(f"{opname}: all inputs must have the same dtype, got "
                             f"{', '.join(str(x.dtype) for x in arrays)}")
    if dt not in allowed:
        raise MXNetError(f"{opname}: only supports {'/'.join(t.name for t in allowed)} "
                         f"inputs, got {dt}")


def _same_type(opname, in_types, n_out=1):
    known = next((t for t in in_types if t is not None), None)
    for t in in_types:
        if t is not None and np.dtype(t) != np.dtype(known):
            raise MXNetError(f"{opname}: all inputs must have the same dtype, got "
                             f"{[None if x is None else np.dtype(x).name for x in in_types]}")
    return [known] * len(in_types), [known] * n_out, []


# --------------------------------------------------------------------------------------
# dot / batch_dot
# --------------------------------------------------------------------------------------
_PRODUCT_PARAMS = Schema(transpose_a=Bool(False), transpose_b=Bool(False),
                         forward_stype=Enum((None, "csr", "default", "row_sparse"), None))


def _t(x):
    return x.swapaxes(-1, -2)


def _product_grads(xp, p, need, opA, opB, g):
    """Gradients of out = opA @ opB with respect to A and B, where opA / opB are A / B
    transposed (on their last two axes) when p.transpose_a / p.transpose_b: each in
    its operand's own layout, None where ``need`` says it is not wanted."""
    ga = gb = None
    if need[0]:
        ga = xp.matmul(opB, _t(g)) if p.transpose_a else xp.matmul(g, _t(opB))
    if need[1]:
        gb = xp.matmul(_t(g), opA) if p.transpose_b else xp.matmul(_t(opA), g)
    return ga, gb


class _Product(Op):
    """dot and batch_dot: lhs and rhs of one float dtype, output shape from
    ``_out_shape``."""
    params = _PRODUCT_PARAMS
    backward_uses = ("out_grad", "in_data")

    def arguments(self, p):
        return ["lhs", "rhs"]

    def _out_shape(self, p, ls, rs):
        raise NotImplementedError

    def infer_shape(self, p, in_shapes):
        ls, rs = in_shapes
        if ls is None or rs is None:
            return [ls, rs], [None], []
        return [ls, rs], [self._out_shape(p, ls, rs)], []

    def infer_type(self, p, in_types):
        return _same_type(self.name, in_types)


def _dot_plan(p, ls, rs):
    """(contracted size, lhs kept dims, rhs kept dims) for MXNet's dot.

    lhs contracts its last axis (its first with transpose_a); rhs contracts its first
    axis (its last with transpose_b); the output is lhs kept + rhs kept.
    """
    ls, rs = tuple(ls), tuple(rs)
    if not ls or not rs:
        raise ShapeError(f"dot: operands must have at least one dimension, got {ls} X {rs}")
    if len(ls) == 1 and len(rs) == 1 and (p.transpose_a or p.transpose_b):
        raise ShapeError("dot: cannot transpose vectors (both operands are 1-D)")
    lk, lkeep = (ls[0], ls[1:]) if p.transpose_a else (ls[-1], ls[:-1])
    rk, rkeep = (rs[-1], rs[:-1]) if p.transpose_b else (rs[0], rs[1:])
    if lk != rk:
        raise ShapeError(f"dot: shape mismatch {list(ls)} X {list(rs)} (transpose_a="
                         f"{p.transpose_a}, transpose_b={p.transpose_b}): contracted "
                         f"dimensions {lk} and {rk} differ")
    return lk, lkeep, rkeep


def _dot_mats(p, a, b, plan):
    """lhs and rhs as the 2-D matrices A (m, k) and B (k, n) of out = A @ B (views;
    sizes spelled out, since with k = 0 a reshape to (-1, 0) is ambiguous)."""
    k, lkeep, rkeep = plan
    m, n = _size(lkeep), _size(rkeep)
    A = a.reshape(k, m).T if p.transpose_a else a.reshape(m, k)
    B = b.reshape(n, k).T if p.transpose_b else b.reshape(k, n)
    return A, B


def _size(dims):
    out = 1
    for d in dims:
        out *= d
    return out


@register
class Dot(_Product):
    """Dot product of two arrays.

    For N-D arrays the last axis of ``lhs`` is contracted with the first axis of ``rhs``
    (``transpose_a`` contracts the first axis of ``lhs`` instead, ``transpose_b`` the
    last axis of ``rhs``); the output shape is lhs's remaining axes followed by rhs's.
    Two vectors give their inner product, of shape (1,). ``forward_stype`` is accepted
    and ignored (pymxnet arrays are dense).
    """
    name = "dot"
    writes_outputs = True

    def infer_shape_partial(self, p, arg_shapes, out_shapes):
        """Partial shapes (0 = unknown dimension): a contracted dimension known on one
        side only is the other side's too, so a deferred weight learns its input size
        from the data; the output keeps the operands' unknowns."""
        ls, rs = arg_shapes
        if ls is None or rs is None or not ls or not rs:
            return [ls, rs], [None], []
        li = 0 if p.transpose_a else len(ls) - 1
        ri = len(rs) - 1 if p.transpose_b else 0
        k = ls[li] or rs[ri]
        ls = tuple(ls[:li]) + (k,) + tuple(ls[li + 1:])
        rs = tuple(rs[:ri]) + (k,) + tuple(rs[ri + 1:])
        if all(ls) and all(rs):
            return self.infer_shape(p, [ls, rs])
        lkeep = ls[1:] if p.transpose_a else ls[:-1]
        rkeep = rs[:-1] if p.transpose_b else rs[1:]
        return [ls, rs], [tuple(lkeep + rkeep) or (1,)], []

    def _out_shape(self, p, ls, rs):
        _, lkeep, rkeep = _dot_plan(p, ls, rs)
        return tuple(lkeep + rkeep) or (1,)

    def forward(self, ctx, p, inputs, aux, out=None):
        a, b = inputs
        _check_types(self.name, inputs, _DOT_FLOATS)
        plan = _dot_plan(p, a.shape, b.shape)
        lkeep, rkeep = plan[1], plan[2]
        A, B = _dot_mats(p, a, b, plan)
        dst = out[0] if out is not None else None
        if dst is not None and dst.flags.c_contiguous:
            # the GEMM writes the destination (seen as the product's matrix) directly
            ctx.xp.matmul(A, B, out=dst.reshape(A.shape[0], B.shape[1]))
            return [dst]
        return [ctx.xp.matmul(A, B).reshape(tuple(lkeep + rkeep) or (1,))]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux, in_grad=None):
        xp, (a, b) = ctx.xp, inputs
        A, B = _dot_mats(p, a, b, _dot_plan(p, a.shape, b.shape))
        g = out_grads[0].reshape(A.shape[0], B.shape[1])
        ga, gb = _product_grads(xp, p, ctx.need_grad or (True, True), A, B, g)
        return [None if ga is None else ga.reshape(a.shape),
                None if gb is None else gb.reshape(b.shape)]


def _batch_plan(p, ls, rs):
    ls, rs = tuple(ls), tuple(rs)
    if len(ls) < 3 or len(ls) != len(rs):
        raise ShapeError(f"batch_dot: only N-D x N-D arrays with N >= 3 are supported, got "
                         f"{list(ls)} X {list(rs)}")
    if ls[:-2] != rs[:-2]:
        raise ShapeError(f"batch_dot: the leading batch dimensions must be equal, got "
                         f"{list(ls)} X {list(rs)}")
    m, lk = (ls[-1], ls[-2]) if p.transpose_a else (ls[-2], ls[-1])
    rk, n = (rs[-1], rs[-2]) if p.transpose_b else (rs[-2], rs[-1])
    if lk != rk:
        raise ShapeError(f"batch_dot: shape mismatch {list(ls)} X {list(rs)} (transpose_a="
                         f"{p.transpose_a}, transpose_b={p.transpose_b})")
    return ls[:-2] + (m, n)


@register
class BatchDot(_Product):
    """Batchwise matrix product of two N-D arrays (N >= 3): the last two axes are
    matrices, the leading axes are batch dimensions and must be equal.
    ``transpose_a``/``transpose_b`` transpose each matrix first."""
    name = "batch_dot"

    def _out_shape(self, p, ls, rs):
        return _batch_plan(p, ls, rs)

    writes_outputs = True           # the product goes into ``out[0]``

    def forward(self, ctx, p, inputs, aux, out=None):
        a, b = inputs
        _check_types(self.name, inputs, _DOT_FLOATS)
        shape = _batch_plan(p, a.shape, b.shape)
        A = _t(a) if p.transpose_a else a
        B = _t(b) if p.transpose_b else b
        dst = out[0] if out is not None else None
        if dst is not None and (dst.dtype != a.dtype or dst.dtype != b.dtype or
                                tuple(dst.shape) != tuple(shape)):
            dst = None
        return [ctx.xp.matmul(A, B, out=dst)]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux, in_grad=None):
        a, b = inputs
        A = _t(a) if p.transpose_a else a
        B = _t(b) if p.transpose_b else b
        return list(_product_grads(ctx.xp, p, ctx.need_grad or (True, True), A, B,
                                   out_grads[0]))


# --------------------------------------------------------------------------------------
# linalg: matrices live on the last two axes (gemm/gemm2: rows on `axis`)
# --------------------------------------------------------------------------------------
def _check_square(opname, shape):
    if len(shape) < 2:
        raise ShapeError(f"{opname}: input must have at least 2 dimensions, got {list(shape)}")
    if shape[-1] != shape[-2]:
        raise ShapeError(f"{opname}: requires square matrices as input, got {list(shape)}")


def _linalg_error(opname, err):
    return MXNetError(f"{opname}: {err} (the matrix may be singular, or not symmetric "
                      "positive definite)")


def _rows_to_end(x, axis):
    """x with its row axis (gemm's ``axis``) moved to -2; a view. np.moveaxis only
    needs ``transpose``, so it serves CuPy arrays too."""
    ax = axis % x.ndim
    return x if ax == x.ndim - 2 else np.moveaxis(x, ax, -2)


def _gemm_plan(opname, p, shapes):
    """Check gemm/gemm2 operand shapes; return the output shape."""
    sa, sb = tuple(shapes[0]), tuple(shapes[1])
    nd = len(sa)
    if nd < 2 or len(sb) != nd:
        raise ShapeError(f"{opname}: A and B must have the same number (>= 2) of dimensions, "
                         f"got {list(sa)} and {list(sb)}")
    ax = p.axis % nd if -nd <= p.axis < nd else None
    if ax is None or ax == nd - 1:
        raise ShapeError(f"{opname}: invalid axis {p.axis} for {nd}-D inputs (it names the "
                         "row axis and cannot be the last one)")
    batch = [i for i in range(nd) if i not in (ax, nd - 1)]
    for i in batch:
        if sa[i] != sb[i]:
            raise ShapeError(f"{opname}: shapes of inputs A {list(sa)} and B {list(sb)} must "
                             "be the same, except on the row/column axes")
    m, ka = (sa[-1], sa[ax]) if p.transpose_a else (sa[ax], sa[-1])
    kb, n = (sb[-1], sb[ax]) if p.transpose_b else (sb[ax], sb[-1])
    if ka != kb:
        raise ShapeError(f"{opname}: incompatible matrix shapes {list(sa)} and {list(sb)} "
                         f"(transpose_a={p.transpose_a}, transpose_b={p.transpose_b})")
    out = list(sa)
    out[ax], out[-1] = m, n
    return tuple(out)


def _gemm_product(p, a, b):
    A = _rows_to_end(a, p.axis)
    B = _rows_to_end(b, p.axis)
    opA = _t(A) if p.transpose_a else A
    opB = _t(B) if p.transpose_b else B
    return opA, opB


def _gemm_grads(ctx, p, g, a, b, scale):
    """Gradients of scale * op(A) @ op(B) with respect to A and B (in their layouts)."""
    xp = ctx.xp
    opA, opB = _gemm_product(p, a, b)
    g = _rows_to_end(g, p.axis)
    ga, gb = _product_grads(xp, p, ctx.need_grad or (True,) * 3, opA, opB, g)
    if ga is not None:
        ga = xp.ascontiguousarray(np.moveaxis(ga * scale, -2, p.axis % a.ndim))
    if gb is not None:
        gb = xp.ascontiguousarray(np.moveaxis(gb * scale, -2, p.axis % b.ndim))
    return ga, gb


@register
class Gemm(Op):
    """out = alpha * op(A) @ op(B) + beta * C, with op() a transpose when
    ``transpose_a``/``transpose_b`` is set. Matrices have their rows on ``axis``
    (default -2) and columns on the last axis; other axes are batch dimensions."""
    name = "_linalg_gemm"
    aliases = ("linalg_gemm",)
    params = Schema(transpose_a=Bool(False), transpose_b=Bool(False), alpha=Float(1.0),
                    beta=Float(1.0), axis=Int(-2))
    backward_uses = ("out_grad", "in_data")

    def arguments(self, p):
        return ["A", "B", "C"]

    def infer_shape(self, p, in_shapes):
        sa, sb, sc = in_shapes
        if sa is None or sb is None:
            return list(in_shapes), [sc], []
        out = _gemm_plan(self.name, p, (sa, sb))
        if sc is not None and tuple(sc) != out:
            raise ShapeError(f"{self.name}: C has shape {list(sc)}, expected {list(out)}")
        return [sa, sb, out], [out], []

    def infer_type(self, p, in_types):
        return _same_type(self.name, in_types)

    def forward(self, ctx, p, inputs, aux):
        a, b, c = inputs
        _check_types(self.name, inputs, _FLOATS)
        out = _gemm_plan(self.name, p, (a.shape, b.shape))
        if c.shape != out:
            raise ShapeError(f"{self.name}: C has shape {list(c.shape)}, expected {list(out)}")
        opA, opB = _gemm_product(p, a, b)
        prod = ctx.xp.matmul(opA, opB)
        if p.alpha != 1.0:
            prod *= p.alpha
        prod = np.moveaxis(prod, -2, p.axis % a.ndim)
        return [prod + p.beta * c if p.beta != 1.0 else prod + c]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux):
        a, b, _ = inputs
        g = out_grads[0]
        ga, gb = _gemm_grads(ctx, p, g, a, b, p.alpha)
        need = ctx.need_grad or (True,) * 3
        gc = g * p.beta if need[2] else None
        return [ga, gb, gc]


@register
class Gemm2(Op):
    """out = alpha * op(A) @ op(B) (``gemm`` without the C term)."""
    name = "_linalg_gemm2"
    aliases = ("linalg_gemm2",)
    params = Schema(transpose_a=Bool(False), transpose_b=Bool(False), alpha=Float(1.0),
                    axis=Int(-2))
    backward_uses = ("out_grad", "in_data")

    def arguments(self, p):
        return ["A", "B"]

    def infer_shape(self, p, in_shapes):
        sa, sb = in_shapes
        if sa is None or sb is None:
            return [sa, sb], [None], []
        return [sa, sb], [_gemm_plan(self.name, p, (sa, sb))], []

    def infer_type(self, p, in_types):
        return _same_type(self.name, in_types)

    def forward(self, ctx, p, inputs, aux):
        a, b = inputs
        _check_types(self.name, inputs, _FLOATS)
        _gemm_plan(self.name, p, (a.shape, b.shape))
        opA, opB = _gemm_product(p, a, b)
        prod = ctx.xp.matmul(opA, opB)
        if p.alpha != 1.0:
            prod *= p.alpha
        return [np.moveaxis(prod, -2, p.axis % a.ndim)]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux):
        a, b = inputs
        return list(_gemm_grads(ctx, p, out_grads[0], a, b, p.alpha))


class _SquareOp(Op):
    """One square-matrix (stack) input, output of the same shape."""
    params = Schema()

    def arguments(self, p):
        return ["A"]

    def infer_shape(self, p, in_shapes):
        s = in_shapes[0]
        if s is not None:
            _check_square(self.name, s)
        return [s], [s], []

    def infer_type(self, p, in_types):
        return _same_type(self.name, in_types)


def _tri(xp, x, lower):
    return xp.tril(x) if lower else xp.triu(x)


def _solve(ctx, opname, t, b):
    try:
        return ctx.xp.linalg.solve(t, b)
    except np.linalg.LinAlgError as err:
        raise _linalg_error(opname, err) from None


def _copyltu(xp, x):
    """The symmetric matrix whose lower triangle is x's (upper triangle discarded)."""
    low = xp.tril(x)
    return low + _t(xp.tril(x, -1))


def _lower_view(a, lower):
    """a as the lower-triangular form the factor routines work on: a itself when
    ``lower``, its transpose otherwise (an upper factor U is L = U^T)."""
    return a if lower else _t(a)


@register
class Potrf(_SquareOp):
    """Cholesky factorization of each symmetric positive definite matrix A on the last
    two axes: the lower-triangular L with A = L @ L.T (only A's lower triangle is
    read), or with ``lower=False`` the upper-triangular U with A = U.T @ U (only the
    upper triangle is read)."""
    name = "_linalg_potrf"
    aliases = ("linalg_potrf",)
    params = Schema(lower=Bool(True))
    backward_uses = ("out_grad", "out_data")

    def forward(self, ctx, p, inputs, aux):
        a = inputs[0]
        _check_types(self.name, inputs, _FLOATS)
        _check_square(self.name, a.shape)
        try:
            out = ctx.xp.linalg.cholesky(_copyltu(ctx.xp, _lower_view(a, p.lower)))
        except np.linalg.LinAlgError as err:
            raise _linalg_error(self.name, err) from None
        return [_lower_view(out, p.lower)]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux):
        # dA = 1/2 L^-T copyltu(L^T dL) L^-1 (symmetric), dL taken as lower-triangular;
        # an upper factor is handled as its transpose (the result is symmetric).
        xp = ctx.xp
        L = _lower_view(outputs[0], p.lower)
        dL = xp.tril(_lower_view(out_grads[0], p.lower))
        S = _copyltu(xp, xp.matmul(_t(L), dL))
        X = _solve(ctx, self.name, _t(L), S)             # L^-T S
        X = _t(_solve(ctx, self.name, _t(L), _t(X)))     # (L^-T S) L^-1
        return [0.5 * X]


@register
class Potri(_SquareOp):
    """Inverse of A from its Cholesky factor on the last two axes: (L @ L.T)^-1 for a
    lower-triangular L, or with ``lower=False`` (U.T @ U)^-1 for an upper U."""
    name = "_linalg_potri"
    aliases = ("linalg_potri",)
    params = Schema(lower=Bool(True))
    backward_uses = ("out_grad", "in_data", "out_data")

    def forward(self, ctx, p, inputs, aux):
        xp, a = ctx.xp, inputs[0]
        _check_types(self.name, inputs, _FLOATS)
        _check_square(self.name, a.shape)
        L = xp.tril(_lower_view(a, p.lower))
        eye = xp.broadcast_to(xp.eye(a.shape[-1], dtype=a.dtype), a.shape)
        Linv = _solve(ctx, self.name, L, eye)
        return [xp.matmul(_t(Linv), Linv)]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux):
        # Y = (L L^T)^-1: dL = -(S + S^T) L with S = Y g Y, on L's lower triangle.
        xp, Y, g = ctx.xp, outputs[0], out_grads[0]
        L = xp.tril(_lower_view(inputs[0], p.lower))
        S = xp.matmul(xp.matmul(Y, g), Y)
        return [_lower_view(-xp.tril(xp.matmul(S + _t(S), L)), p.lower)]


_TRI_PARAMS = Schema(transpose=Bool(False), rightside=Bool(False), lower=Bool(True),
                     alpha=Float(1.0))


class _TriOp(Op):
    """Shared checks of trsm/trmm: A square (triangular), B matching its side."""
    params = _TRI_PARAMS
    backward_uses = ("out_grad", "in_data", "out_data")

    def arguments(self, p):
        return ["A", "B"]

    def _check(self, p, sa, sb):
        _check_square(self.name, sa)
        if len(sb) != len(sa) or tuple(sb[:-2]) != tuple(sa[:-2]):
            raise ShapeError(f"{self.name}: A {list(sa)} and B {list(sb)} must have the same "
                             "batch dimensions")
        k = sb[-1] if p.rightside else sb[-2]
        if k != sa[-1]:
            raise ShapeError(f"{self.name}: matrix shapes do not match: A {list(sa)}, B "
                             f"{list(sb)} (rightside={p.rightside})")

    def infer_shape(self, p, in_shapes):
        sa, sb = in_shapes
        if sa is not None and sb is not None:
            self._check(p, sa, sb)
        return [sa, sb], [sb], []

    def infer_type(self, p, in_types):
        return _same_type(self.name, in_types)

    def _op_a(self, xp, p, a):
        T = _tri(xp, a, p.lower)
        return _t(T) if p.transpose else T

    def _grad_a(self, xp, p, dT):
        """Gradient of op(A) back to A's triangle."""
        return _tri(xp, _t(dT) if p.transpose else dT, p.lower)


@register
class Trsm(_TriOp):
    """Solve with a triangular matrix: out = alpha * op(A)^-1 @ B, or (``rightside``)
    out = alpha * B @ op(A)^-1, where op(A) is A's lower (``lower``) or upper triangle,
    transposed when ``transpose`` is set."""
    name = "_linalg_trsm"
    aliases = ("linalg_trsm",)

    def forward(self, ctx, p, inputs, aux):
        xp, (a, b) = ctx.xp, inputs
        _check_types(self.name, inputs, _FLOATS)
        self._check(p, a.shape, b.shape)
        T = self._op_a(xp, p, a)
        rhs = b if p.alpha == 1.0 else p.alpha * b
        if p.rightside:     # X T = rhs  <=>  T^T X^T = rhs^T
            return [xp.ascontiguousarray(_t(_solve(ctx, self.name, _t(T), _t(rhs))))]
        return [_solve(ctx, self.name, T, rhs)]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux):
        xp, (a, _), X, g = ctx.xp, inputs, outputs[0], out_grads[0]
        T = self._op_a(xp, p, a)
        if p.rightside:
            Y = _t(_solve(ctx, self.name, T, _t(g)))       # g T^-T
            dT = -xp.matmul(_t(X), Y)
        else:
            Y = _solve(ctx, self.name, _t(T), g)            # T^-T g
            dT = -xp.matmul(Y, _t(X))
        return [self._grad_a(xp, p, dT), p.alpha * Y]


@register
class Trmm(_TriOp):
    """Triangular matrix product: out = alpha * op(A) @ B, or (``rightside``)
    out = alpha * B @ op(A), op(A) as in ``trsm``."""
    name = "_linalg_trmm"
    aliases = ("linalg_trmm",)
    backward_uses = ("out_grad", "in_data")

    def forward(self, ctx, p, inputs, aux):
        xp, (a, b) = ctx.xp, inputs
        _check_types(self.name, inputs, _FLOATS)
        self._check(p, a.shape, b.shape)
        T = self._op_a(xp, p, a)
        out = xp.matmul(b, T) if p.rightside else xp.matmul(T, b)
        return [out * p.alpha if p.alpha != 1.0 else out]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux):
        xp, (a, b), g = ctx.xp, inputs, out_grads[0]
        T = self._op_a(xp, p, a)
        if p.rightside:
            dT, dB = xp.matmul(_t(b), g), xp.matmul(g, _t(T))
        else:
            dT, dB = xp.matmul(g, _t(b)), xp.matmul(_t(T), g)
        return [p.alpha * self._grad_a(xp, p, dT), p.alpha * dB]


@register
class Syrk(Op):
    """out = alpha * A @ A.T, or alpha * A.T @ A with ``transpose``, on the last two
    axes."""
    name = "_linalg_syrk"
    aliases = ("linalg_syrk",)
    params = Schema(transpose=Bool(False), alpha=Float(1.0))
    backward_uses = ("out_grad", "in_data")

    def arguments(self, p):
        return ["A"]

    def infer_shape(self, p, in_shapes):
        s = in_shapes[0]
        if s is None:
            return [s], [None], []
        if len(s) < 2:
            raise ShapeError(f"{self.name}: input must have at least 2 dimensions, got "
                             f"{list(s)}")
        k = s[-1] if p.transpose else s[-2]
        return [s], [tuple(s[:-2]) + (k, k)], []

    def infer_type(self, p, in_types):
        return _same_type(self.name, in_types)

    def forward(self, ctx, p, inputs, aux):
        xp, a = ctx.xp, inputs[0]
        _check_types(self.name, inputs, _FLOATS)
        self.infer_shape(p, [a.shape])
        out = xp.matmul(_t(a), a) if p.transpose else xp.matmul(a, _t(a))
        return [out * p.alpha if p.alpha != 1.0 else out]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux):
        xp, a, g = ctx.xp, inputs[0], out_grads[0]
        gs = g + _t(g)
        ga = xp.matmul(a, gs) if p.transpose else xp.matmul(gs, a)
        return [ga * p.alpha if p.alpha != 1.0 else ga]


@register
class Sumlogdiag(_SquareOp):
    """Sum of the natural logarithms of the diagonal of each square matrix on the last
    two axes; the output drops those two axes (a single matrix gives shape (1,))."""
    name = "_linalg_sumlogdiag"
    aliases = ("linalg_sumlogdiag",)
    backward_uses = ("out_grad", "in_data")

    def infer_shape(self, p, in_shapes):
        s = in_shapes[0]
        if s is None:
            return [s], [None], []
        _check_square(self.name, s)
        return [s], [tuple(s[:-2]) or (1,)], []

    def forward(self, ctx, p, inputs, aux):
        xp, a = ctx.xp, inputs[0]
        _check_types(self.name, inputs, _FLOATS)
        _check_square(self.name, a.shape)
        out = xp.log(xp.diagonal(a, axis1=-2, axis2=-1)).sum(axis=-1)
        return [out.reshape(tuple(a.shape[:-2]) or (1,))]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux):
        xp, a = ctx.xp, inputs[0]
        n = a.shape[-1]
        d = xp.diagonal(a, axis1=-2, axis2=-1)
        g = out_grads[0].reshape(tuple(a.shape[:-2]) + (1,)) / d
        ga = xp.zeros(a.shape, dtype=a.dtype)
        idx = xp.arange(n)
        ga[..., idx, idx] = g
        return [ga]
