"""mx.nd: imperative NDArray API. Every registered operator appears here as a function
(``mx.nd.FullyConnected``, ``mx.nd.relu``, ...), plus creation, save/load and waitall."""
import sys as _sys

from .. import operator as _operator  # noqa: F401  (registers operators)
from ..operator.call import expose as _expose
from .ndarray import NDArray, waitall, from_data  # noqa: F401
from .creation import array, zeros, ones, full, empty, arange, eye, linspace  # noqa: F401
from .register import make_function as _make_function
from ..operator.ops.concat_split import split_v2_params as _split_v2_params
from . import _internal, op, contrib, linalg, image  # noqa: F401

_this = _sys.modules[__name__]
_expose(_make_function, _this, op, _internal,
        {"_contrib_": contrib, "_linalg_": linalg, "_image_": image})
contrib.getnnz = contrib._csr_getnnz    # refuses dense input, as MXNet does

from . import random, utils  # noqa: E402,F401
from .functions import *  # noqa: E402,F401,F403  (add, maximum, concatenate, ...)
from .utils import save, load, load_frombuffer  # noqa: E402,F401
from . import sparse  # noqa: E402,F401  (row_sparse / csr storage)
from .interop import from_numpy, from_dlpack, to_dlpack_for_read, to_dlpack_for_write  # noqa: E402,F401,E501


def split_v2(ary, indices_or_sections, axis=0, squeeze_axis=False):
    """Split an array into sub-arrays along axis: into ``n`` equal parts when given an
    int, or at the given indices when given a tuple (numpy.split's convention)."""
    if isinstance(indices_or_sections, int) and ary.shape[axis] % indices_or_sections:
        # MXNet's front end checks this before the operator, with a ValueError
        raise ValueError("array split does not result in an equal division")
    return _internal._split_v2(ary, axis=axis, squeeze_axis=squeeze_axis,
                               **_split_v2_params(indices_or_sections))
