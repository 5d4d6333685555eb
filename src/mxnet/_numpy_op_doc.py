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
