"""``mx.sym.np.linalg``: the linear-algebra functions of ``mx.np.linalg`` that map onto
registered ``linalg_*`` operators, building Symbol graphs (matrices on the last two
axes, as in ``mx.np.linalg``)."""
from .. import symbol as _sym
from .._missing import MissingFeatureError

__all__ = ["inv", "cholesky", "det", "slogdet", "eigh", "eigvalsh", "svd", "tensorinv"]


def inv(a):
    """Symbolic inverse of the square matrices in the last two axes."""
    return _sym.linalg.inverse(a)


def cholesky(a):
    """Symbolic lower Cholesky factor of symmetric positive-definite matrices."""
    return _sym.linalg.potrf(a)


def det(a):
    """Symbolic determinant of the square matrices in the last two axes."""
    return _sym.linalg.det(a)


def slogdet(a):
    """Symbolic (sign, log|det|) of the square matrices in the last two axes."""
    out = _sym.linalg.slogdet(a)
    return out[0], out[1]


def eigh(a, UPLO="L"):
    """Symbolic (eigenvalues ascending, eigenvectors as columns) of symmetric
    matrices."""
    if UPLO not in ("L", "U"):
        raise ValueError("UPLO argument must be 'L' or 'U'")
    u, w = _sym.linalg.syevd(a)
    return w, _sym.swapaxes(u, dim1=-1, dim2=-2)


def eigvalsh(a, UPLO="L"):
    """Symbolic eigenvalues (ascending) of symmetric matrices."""
    return eigh(a, UPLO)[0]


def svd(a):
    """Symbolic (UT, L, V) of the ``_npi_svd`` operator."""
    return _sym._internal._npi_svd(a)


def tensorinv(a, ind=2):
    """Symbolic ``_npi_tensorinv``."""
    return _sym._internal._npi_tensorinv(a, ind=ind)


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    raise MissingFeatureError(f"mx.sym.np.linalg.{name} is not implemented in pymxnet; "
                              "hybridized blocks in NumPy mode trace mx.np.linalg calls "
                              "instead")
