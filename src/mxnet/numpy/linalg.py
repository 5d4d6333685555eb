"""mx.np.linalg over the registered linear-algebra operators (``linalg_*``)."""
import numpy as _onp

from .. import ndarray as _nd
from ..base import MXNetError
from ..ndarray.ndarray import NDArray
from .multiarray import wrap

__all__ = ["norm", "inv", "det", "slogdet", "cholesky", "solve", "svd", "qr", "eigh",
           "eigvalsh", "pinv", "tensorinv", "lstsq", "matrix_rank", "tensorsolve", "eig",
           "eigvals", "cond", "matrix_power", "multi_dot"]


def _result_type(fn, *args):
    """The container the installed NumPy returns from fn (a named tuple from NumPy 2 on,
    a plain tuple before), so results compare and unpack as NumPy's do."""
    cls = type(fn(*args))
    return (lambda *parts: parts) if cls is tuple else cls


_EIGH_RESULT = _result_type(_onp.linalg.eigh, _onp.eye(1))
_SLOGDET_RESULT = _result_type(_onp.linalg.slogdet, _onp.eye(1))


def _arr(a):
    if isinstance(a, NDArray):
        return a
    from .creation import array
    return array(a)


_INF_ORDS = {"inf": _onp.inf, "-inf": -_onp.inf}


def norm(x, ord=None, axis=None, keepdims=False):  # noqa: A002
    """Vector norms (axis an int, or a 1-d x) and matrix norms (axis a pair, or a 2-d x
    with ord given): NumPy's orders, 'inf'/'-inf' strings too, differentiable
    (ord 2/-2/'nuc' through the singular values). ord=None with axis=None is the
    2-norm of the flattened array."""
    from . import math as m
    x = _arr(x)
    ord = _INF_ORDS.get(ord, ord)  # noqa: A001
    if axis is None:
        if ord is None:
            return m.sqrt(m.sum(m.multiply(x, x), keepdims=keepdims))
        if x.ndim not in (1, 2):
            raise ValueError("Improper number of dimensions to norm.")
        axes = tuple(range(x.ndim))
    else:
        axes = (axis,) if isinstance(axis, (int, _onp.integer)) else tuple(axis)
    axes = tuple(int(a) % x.ndim if -x.ndim <= a < x.ndim else _bad_axis(a, x.ndim)
                 for a in axes)
    if len(axes) == 1:
        return _vector_norm(m, x, ord, axes[0], keepdims)
    if len(axes) == 2:
        if axes[0] == axes[1]:
            raise ValueError("Duplicate axes given.")
        res = _matrix_norm(m, x, ord, axes)
        if keepdims:
            from .manipulation import expand_dims
            for a in sorted(axes):
                res = expand_dims(res, a)
        return res
    raise ValueError("Improper number of dimensions to norm.")


def _bad_axis(a, ndim):
    raise MXNetError(f"norm: axis {a} is out of bounds for array of dimension {ndim}")


def _vector_norm(m, x, ord, ax, keepdims):  # noqa: A002
    # MXNet 1.9.1 takes 'fro' over one axis as the 2-norm (NumPy refuses it)
    if ord is None or ord == 2 or (isinstance(ord, str) and ord == "fro"):
        return m.sqrt(m.sum(m.multiply(x, x), axis=ax, keepdims=keepdims))
    if isinstance(ord, str):
        raise ValueError(f"Invalid norm order '{ord}' for vectors")
    mag = m.absolute(x)
    if ord == _onp.inf:
        return m.max(mag, axis=ax, keepdims=keepdims)
    if ord == -_onp.inf:
        return m.min(mag, axis=ax, keepdims=keepdims)
    if ord == 0:
        return m.sum(m.not_equal(x, 0).astype(x.dtype), axis=ax, keepdims=keepdims)
    if ord == 1:
        return m.sum(mag, axis=ax, keepdims=keepdims)
    p = float(ord)
    return m.power(m.sum(m.power(mag, p), axis=ax, keepdims=keepdims), 1.0 / p)


def _matrix_norm(m, x, ord, axes):  # noqa: A002
    row, col = axes
    if ord is None or ord == "fro":
        return m.sqrt(m.sum(m.multiply(x, x), axis=axes))
    if ord in (1, -1, _onp.inf, -_onp.inf):
        # 1: the largest column sum of |x|; inf: the largest row sum
        summed, kept = (row, col) if ord in (1, -1) else (col, row)
        if kept > summed:
            kept -= 1
        sums = m.sum(m.absolute(x), axis=summed)
        return (m.max if ord > 0 else m.min)(sums, axis=kept)
    if ord in (2, -2, "nuc"):
        from .manipulation import moveaxis, swapaxes
        mats = moveaxis(x, (row, col), (-2, -1))
        if mats.shape[-2] > mats.shape[-1]:      # svd takes wide matrices
            mats = swapaxes(mats, -1, -2)
        sv = svd(mats)[1]
        if ord == "nuc":
            return m.sum(sv, axis=-1)
        return (m.max if ord == 2 else m.min)(sv, axis=-1)
    raise ValueError(f"Invalid norm order {ord!r} for matrices.")


def _op(name):
    fn = getattr(_nd.linalg, name, None)
    if fn is None:
        from . import NotImplementedName
        raise NotImplementedName(f"mx.np.linalg needs the linalg_{name} operator, which "
                                 "pymxnet does not implement yet")
    return fn


def inv(a):
    """Inverse of the square matrices in the last two axes."""
    return wrap(_op("inverse")(_arr(a)))


def det(a):
    """Determinant of the square matrices in the last two axes."""
    a = _arr(a)
    return wrap(_op("det")(a)).reshape(a.shape[:-2])


def slogdet(a):
    """(sign, log|det|) of the square matrices in the last two axes."""
    a = _arr(a)
    sign, logabs = _op("slogdet")(a)
    batch = a.shape[:-2]
    return _SLOGDET_RESULT(wrap(sign).reshape(batch), wrap(logabs).reshape(batch))


def cholesky(a):
    """Lower Cholesky factor of symmetric positive-definite matrices."""
    return wrap(_op("potrf")(_arr(a)))


def solve(a, b):
    """x with a @ x = b: b is a stack of vectors when it has one axis fewer than a
    (as MXNet 1.9.1 and NumPy 1.x read it), else a stack of matrices."""
    from . import math as m
    from .manipulation import expand_dims, squeeze
    a, b = _arr(a), _arr(b)
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise MXNetError(f"solve: a must be square in its last two axes, got {a.shape}")
    if b.ndim == a.ndim - 1:
        return squeeze(m.matmul(inv(a), expand_dims(b, -1)), -1)
    return m.matmul(inv(a), b)


def eigh(a, UPLO="L"):
    """(eigenvalues ascending, eigenvectors as columns) of symmetric matrices (the
    linalg_syevd operator, differentiable)."""
    a = _arr(a)
    if a.dtype.kind in "iub":        # integer matrices decompose in float64, as in MXNet
        a = a.astype(_onp.float64)
    if UPLO == "U":     # syevd reads the lower triangle; a's transpose has a's upper one
        from .manipulation import swapaxes as _swap
        a = _swap(a, -1, -2)
    if UPLO not in ("L", "U"):
        raise ValueError("UPLO argument must be 'L' or 'U'")
    from .manipulation import swapaxes
    u, w = _op("syevd")(a)
    return _EIGH_RESULT(wrap(w), swapaxes(wrap(u), -1, -2))


def eigvalsh(a, UPLO="L"):
    """Eigenvalues (ascending) of symmetric matrices."""
    return eigh(a, UPLO)[0]


def svd(a):
    """(UT, L, V) with a = UT @ diag(L) @ V for matrices (M, N), M <= N, in the last two
    axes (MXNet's convention, not NumPy's (u, s, vh) of any shape); differentiable."""
    ut, s, v = _nd._internal._npi_svd(_arr(a))
    return wrap(ut), wrap(s), wrap(v)


def _prod(dims):
    return int(_onp.prod(dims, dtype=_onp.int64))


def tensorinv(a, ind=2):
    """The inverse of a with respect to tensordot over its first ``ind`` axes: shape
    a.shape[ind:] + a.shape[:ind]; differentiable."""
    if not isinstance(ind, int) or ind <= 0:
        raise ValueError("Invalid ind argument.")
    return wrap(_nd._internal._npi_tensorinv(_arr(a), ind=ind))


def tensorsolve(a, b, axes=None):
    """x with tensordot(a, x, x.ndim) == b; ``axes`` (of a) are moved to the end first.
    x has the shape of a's trailing a.ndim - b.ndim axes; differentiable."""
    from .manipulation import moveaxis, reshape
    a, b = _arr(a), _arr(b)
    if axes is not None:
        axes = (axes,) if isinstance(axes, int) else tuple(axes)
        a = moveaxis(a, axes, tuple(range(a.ndim - len(axes), a.ndim)))
    # MXNet's (and NumPy's) slice: a.ndim <= b.ndim leaves the whole or an empty shape
    x_shape = a.shape[-(a.ndim - b.ndim):]
    n = _prod(x_shape)
    if n * n != _prod(a.shape) or n != _prod(b.shape):
        raise MXNetError(f"tensorsolve: a of shape {a.shape} (after moving axes) is not "
                         f"square for b of shape {b.shape}")
    return reshape(solve(reshape(a, (n, n)), reshape(b, (n, 1))), x_shape)


def _host(name):
    from .fallback import fallback
    fn = fallback(getattr(_onp.linalg, name), name)
    fn.__doc__ = (f"``numpy.linalg.{name}`` computed on the host: mx.np arrays in and "
                  "out, no gradient.")
    return fn


# computed on the host (pymxnet has no operator for them yet): no gradient
pinv = _host("pinv")
eig = _host("eig")
eigvals = _host("eigvals")
# MXNet 1.9.1 computes these on the host too (its np.fallback_linalg)
cond, lstsq, matrix_power, matrix_rank, multi_dot, qr = (
    _host(n) for n in ("cond", "lstsq", "matrix_power", "matrix_rank", "multi_dot", "qr"))
