"""mx.np.linalg over the registered linear-algebra operators (``linalg_*``)."""
import numpy as _onp

from .. import ndarray as _nd
from ..base import MXNetError
from ..ndarray.ndarray import NDArray
from .multiarray import wrap

__all__ = ["norm", "inv", "det", "slogdet", "cholesky", "solve", "svd", "qr", "eigh",
           "eigvalsh", "pinv", "tensorinv", "lstsq", "matrix_rank", "tensorsolve", "eig",
           "eigvals", "cond", "matrix_power", "multi_dot"]


def _arr(a):
    if isinstance(a, NDArray):
        return a
    from .creation import array
    return array(a)


def norm(x, ord=None, axis=None, keepdims=False):
    """Vector 2-norm / Frobenius norm (ord None/2/'fro' for vectors/matrices, 1 and
    inf for vectors)."""
    from . import math as m
    x = _arr(x)
    if ord in (None, 2, "fro") and (ord != 2 or axis is None or isinstance(axis, int)
                                   or x.ndim == 1):
        return m.sqrt(m.sum(m.multiply(x, x), axis=axis, keepdims=keepdims))
    if ord == 1 and (x.ndim == 1 or isinstance(axis, int)):
        return m.sum(m.absolute(x), axis=axis, keepdims=keepdims)
    if ord in (_onp.inf, "inf") and (x.ndim == 1 or isinstance(axis, int)):
        return m.max(m.absolute(x), axis=axis, keepdims=keepdims)
    raise NotImplementedError(f"mx.np.linalg.norm: ord={ord!r} with axis={axis!r} is not "
                              "implemented in pymxnet yet")


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
    return wrap(sign).reshape(batch), wrap(logabs).reshape(batch)


def cholesky(a):
    """Lower Cholesky factor of symmetric positive-definite matrices."""
    return wrap(_op("potrf")(_arr(a)))


def solve(a, b):
    """x with a @ x = b (b a vector or matrix)."""
    from . import math as m
    a, b = _arr(a), _arr(b)
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise MXNetError(f"solve: a must be square in its last two axes, got {a.shape}")
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
    return wrap(w), swapaxes(wrap(u), -1, -2)


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
