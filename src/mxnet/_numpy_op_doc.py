"""The documented Python signature of each builtin ``_np_*`` operator (MXNet 1.9.1's
tests compare these with the ``__signature__`` of the ``mx.np`` front end that
``numpy_op_signature._get_builtin_op`` finds for the operator). Only signatures and
descriptions live here: the functions are documentation, never called."""

__all__ = []


def _doc_only(name):
    raise NotImplementedError(f"mxnet._numpy_op_doc.{name} documents an operator's "
                              f"signature; call the mx.np front end instead")


def _np_reshape(a, newshape, order='C', out=None):
    """Give ``a`` a new shape without changing its values.

    Parameters
    ----------
    a : ndarray
        The array to reshape.
    newshape : int or tuple of ints
        The target shape; its size must equal ``a.size``. One entry may be -1 and is
        then computed from the others.
    order : {'C'}
        Only row-major order is supported.
    out : ndarray, optional
        Where to write the result.

    Returns
    -------
    ndarray
        ``a``'s values in the new shape (a view when ``out`` is not given).
    """
    _doc_only("_np_reshape")


def _np_diag(array, k=0):
    """The k-th diagonal of a 2-D ``array``, or a 2-D array with a 1-D ``array`` on its
    k-th diagonal.

    Parameters
    ----------
    array : ndarray
        1-D (the diagonal to place) or 2-D (the matrix to read).
    k : int, default 0
        Which diagonal: 0 the main one, > 0 above it, < 0 below it.

    Returns
    -------
    ndarray
    """
    _doc_only("_np_diag")


def _np_diagonal(a, offset=0, axis1=0, axis2=1):
    """The diagonal of the 2-D planes of ``a`` spanned by ``axis1`` and ``axis2``.

    Parameters
    ----------
    a : ndarray
        At least 2-D.
    offset : int, default 0
        Distance of the diagonal from the main one (positive: above it).
    axis1, axis2 : int
        The two axes whose planes hold the diagonals (different axes).

    Returns
    -------
    ndarray
        ``a``'s other axes, then the diagonal as the last axis.
    """
    _doc_only("_np_diagonal")


def _np_dot(a, b, out=None):
    """NumPy's dot product: scalars multiply, 1-D with 1-D is the inner product, 2-D
    with 2-D the matrix product, N-D with M-D sums over a's last axis and b's
    second-to-last.

    Parameters
    ----------
    a, b : ndarray
    out : ndarray, optional
        Where to write the result.

    Returns
    -------
    ndarray
    """
    _doc_only("_np_dot")
