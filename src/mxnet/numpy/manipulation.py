"""mx.np array manipulation: reshape, transpose, joining, splitting, tiling, flipping,
with NumPy's argument conventions, over the registered operators."""
import numpy as _onp

from .. import ndarray as _nd
from ..base import MXNetError
from ..ndarray.ndarray import NDArray
from .multiarray import wrap


def _arr(a):
    if isinstance(a, NDArray):
        return a
    from .creation import array
    return array(a)


def _norm_axis(axis, ndim):
    if not -ndim <= axis < ndim:
        raise MXNetError(f"axis {axis} is out of bounds for array of dimension {ndim}")
    return axis % ndim


def reshape(a, newshape, order="C", out=None):
    """A view of a with a new shape (NumPy's rules: one -1 is inferred, 0 is a real
    zero-length axis). MXNet's special codes are ``npx.reshape``'s. With ``out`` the
    values are written into out instead."""
    if out is not None:
        from .math import _finish
        return _finish(reshape(a, newshape, order), out)
    # 'A' and 'K' read an mx.np array (always C-contiguous) in C order
    if order not in ("C", "A", "K"):
        raise NotImplementedError("mx.np.reshape: only order='C' is supported")
    a = _arr(a)
    shape = (int(newshape),) if isinstance(newshape, (int, _onp.integer)) else \
        tuple(int(d) for d in newshape)
    if shape.count(-1) > 1 or any(d < -1 for d in shape):
        raise MXNetError(f"cannot reshape array of shape {a.shape} into shape {shape}")
    known = int(_onp.prod([d for d in shape if d != -1], dtype=_onp.int64))
    if -1 in shape:
        if known == 0 or a.size % known:
            raise MXNetError(f"cannot reshape array of size {a.size} into shape {shape}")
        shape = tuple(a.size // known if d == -1 else d for d in shape)
    elif known != a.size:
        raise MXNetError(f"cannot reshape array of size {a.size} into shape {shape}")
    if a._ag is not None and _recording():
        return wrap(_nd._internal._np_reshape(a, newshape=shape))
    return wrap(NDArray._as_view(a, shape, 0))


def _empty_from(a, shape):
    """A zero-size result of the given shape computed from a. When autograd records a,
    the result is an empty slice of a (reshaped), so it stays on a's graph and
    backward gives a its (zero) gradient instead of "not in a computational graph"."""
    if a._ag is not None and _recording():
        return reshape(reshape(a, (-1,))[0:0], shape)
    from .creation import zeros
    return zeros(shape, dtype=a.dtype, ctx=a.context)


def _recording():
    from ..autograd import is_recording
    return is_recording()


def transpose(a, axes=None):
    """The array with its axes permuted (reversed when axes is None)."""
    a = _arr(a)
    if a.ndim < 2 and axes is None:
        return reshape(a, a.shape)        # NumPy's reshape: a 0-d target is fine
    axes = tuple(range(a.ndim))[::-1] if axes is None else \
        tuple(_norm_axis(int(x), a.ndim) for x in axes)
    if len(set(axes)) != len(axes):
        from ..base import InvalidArgument           # MXNetError and ValueError
        raise InvalidArgument(f"mx.np.transpose: repeated axis in axes {axes}")
    return wrap(_nd.transpose(a, axes=axes))


def swapaxes(a, axis1, axis2):
    """The array with two axes interchanged."""
    a = _arr(a)
    return wrap(_nd.swapaxes(a, dim1=_norm_axis(axis1, a.ndim), dim2=_norm_axis(axis2, a.ndim)))


def moveaxis(a, source, destination):
    """Move axes to new positions; the others keep their order."""
    a = _arr(a)
    src = [source] if isinstance(source, int) else list(source)
    dst = [destination] if isinstance(destination, int) else list(destination)
    src = [_norm_axis(s, a.ndim) for s in src]
    dst = [_norm_axis(d, a.ndim) for d in dst]
    order = [i for i in range(a.ndim) if i not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return transpose(a, order)


def expand_dims(a, axis):
    """Insert a length-1 axis at position axis."""
    a = _arr(a)
    axis = _norm_axis(axis, a.ndim + 1)      # the result has one axis more
    return reshape(a, a.shape[:axis] + (1,) + a.shape[axis:])


def squeeze(a, axis=None):
    """Remove length-1 axes (only those named by axis, when given)."""
    a = _arr(a)
    if axis is None:
        return reshape(a, tuple(d for d in a.shape if d != 1))
    if a.ndim == 0 and all(x in (0, -1) for x in ((axis,) if isinstance(axis, int)
                                                   else axis)):
        return reshape(a, ())           # NumPy: a 0-d array's axis 0/-1 squeezes to 0-d
    axes = {_norm_axis(x, a.ndim) for x in ((axis,) if isinstance(axis, int) else axis)}
    for x in axes:
        if a.shape[x] != 1:
            raise MXNetError("cannot select an axis to squeeze out which has size not "
                             "equal to one")
    return reshape(a, tuple(d for i, d in enumerate(a.shape) if i not in axes))


def ravel(a, order="C"):
    return reshape(a, -1, order)


def _keep_dims_code(src, shape):
    """shape with MXNet's -2 entries ("this axis as in the source", the source aligned
    to the right) replaced by the source's sizes."""
    shape = (shape,) if isinstance(shape, (int, _onp.integer)) else tuple(shape)
    lead = len(shape) - len(src)
    out = []
    for i, d in enumerate(shape):
        if d == -2:
            if i < lead:
                raise MXNetError(f"broadcast_to: -2 at axis {i} of {shape} has no "
                                 f"matching axis in the source shape {src}")
            d = src[i - lead]
        out.append(int(d))
    return tuple(out)


def broadcast_to(array, shape):
    """The array broadcast to shape (NumPy's rules)."""
    array = _arr(array)
    if isinstance(shape, (int, _onp.integer)):
        shape = (int(shape),)
    shape = _keep_dims_code(array.shape, shape)
    try:
        _onp.broadcast_shapes(array.shape, shape)
    except ValueError:
        raise MXNetError(f"operands could not be broadcast together with remapped shapes "
                         f"{array.shape} -> {shape}") from None
    if array.ndim < len(shape):
        array = reshape(array, (1,) * (len(shape) - array.ndim) + array.shape)
    if 0 in shape:              # the legacy operator reads 0 as "keep": an empty take
        from .creation import zeros
        none = zeros((0,), dtype=_onp.int64, ctx=array.context)
        return reshape(wrap(_nd.take(ravel(array), none, axis=0)), shape)
    return wrap(_nd.broadcast_to(array, shape=shape))


def concatenate(seq, axis=0, out=None):
    """Join arrays along an existing axis (axis=None: flatten first)."""
    seq = [_arr(a) for a in seq]
    if axis is None:
        seq, axis = [ravel(a) for a in seq], 0
    from .math import result_type, _finish
    dt = seq[0].dtype
    for a in seq[1:]:
        dt = result_type(dt, a.dtype)
    seq = [a if a.dtype == dt else a.astype(dt) for a in seq]
    return _finish(wrap(_nd.concat(*seq, dim=_norm_axis(axis, seq[0].ndim))), out)


concat = concatenate


def stack(arrays, axis=0, out=None):
    """Join arrays along a new axis."""
    arrays = [_arr(a) for a in arrays]
    axis = axis if axis >= 0 else axis + arrays[0].ndim + 1
    return concatenate([expand_dims(a, axis) for a in arrays], axis, out)


def vstack(tup):
    return concatenate([a if _arr(a).ndim > 1 else reshape(_arr(a), (1, -1)) for a in tup], 0)


def hstack(tup):
    arrs = [_arr(a) for a in tup]
    arrs = [a.reshape(1) if a.ndim == 0 else a for a in arrs]
    return concatenate(arrs, 0 if arrs[0].ndim == 1 else 1)


def dstack(tup):
    arrs = [_arr(a) for a in tup]
    arrs = [reshape(a, (1, 1, 1)) if a.ndim == 0 else
            reshape(a, (1, -1, 1)) if a.ndim == 1 else
            reshape(a, a.shape + (1,)) if a.ndim == 2 else a for a in arrs]
    return concatenate(arrs, 2)


def _split_points(n, indices_or_sections, strict):
    if isinstance(indices_or_sections, (int, _onp.integer)):
        k = int(indices_or_sections)
        if strict and n % k:
            raise ValueError("array split does not result in an equal division")
        base, extra = divmod(n, k)
        sizes = [base + (1 if i < extra else 0) for i in range(k)]
        points = list(_onp.cumsum([0] + sizes))
        return list(zip(points[:-1], points[1:]))
    cuts = [0] + [int(i) for i in indices_or_sections] + [n]
    return [(min(b, n), min(max(e, b), n)) for b, e in zip(cuts[:-1], cuts[1:])]


def slice_along(a, axis, begin, end):
    """a[..., begin:end, ...] along axis (an empty slice is a zero-size array)."""
    if end <= begin:              # a take of no indices: empty, and on the tape
        from .creation import zeros
        none = zeros((0,), dtype=_onp.int64, ctx=a.context)
        return wrap(_nd.take(a, none, axis=axis))
    return wrap(_nd.slice_axis(a, axis=axis, begin=begin, end=end))


def split(ary, indices_or_sections, axis=0):
    """Split into equal sections (an int that must divide the axis) or at indices."""
    a = _arr(ary)
    axis = _norm_axis(axis, a.ndim)
    return [slice_along(a, axis, b, e)
            for b, e in _split_points(a.shape[axis], indices_or_sections, True)]


def array_split(ary, indices_or_sections, axis=0):
    """Like split, but the sections may differ by one element."""
    a = _arr(ary)
    axis = _norm_axis(axis, a.ndim)
    return [slice_along(a, axis, b, e)
            for b, e in _split_points(a.shape[axis], indices_or_sections, False)]


def _min_ndim(a, n, name):
    if a.ndim < n:
        raise ValueError(f"{name} only works on arrays of {n} or more dimensions")


def hsplit(ary, indices_or_sections):
    a = _arr(ary)
    _min_ndim(a, 1, "hsplit")
    return split(a, indices_or_sections, 0 if a.ndim == 1 else 1)


def vsplit(ary, indices_or_sections):
    _min_ndim(_arr(ary), 2, "vsplit")
    return split(ary, indices_or_sections, 0)


def dsplit(ary, indices_or_sections):
    _min_ndim(_arr(ary), 3, "dsplit")
    return split(ary, indices_or_sections, 2)


def flip(m, axis=None):
    """Reverse the order of elements along the given axes (all when None)."""
    m = _arr(m)
    axes = range(m.ndim) if axis is None else ((axis,) if isinstance(axis, int) else axis)
    for ax in axes:
        m = wrap(_nd.flip(m, axis=_norm_axis(ax, m.ndim)))
    return m


def fliplr(m):
    return flip(m, 1)


def flipud(m):
    return flip(m, 0)


def roll(a, shift, axis=None):
    """Roll elements along axes (of the flattened array when axis is None): the
    ``_npi_roll`` operator, as in ``mx.sym.np.roll``."""
    return wrap(_nd._internal._npi_roll(_arr(a), **_roll_params(shift, axis)))


def _roll_params(shift, axis):
    as_tuple = (lambda v: tuple(int(x) for x in v) if isinstance(v, (list, tuple))
                else (int(v),))
    return {"shift": as_tuple(shift), "axis": None if axis is None else as_tuple(axis)}


def rot90(m, k=1, axes=(0, 1)):
    """Rotate by 90 degrees k times in the plane of axes."""
    m = _arr(m)
    k %= 4
    a0, a1 = axes
    for _ in range(k):
        m = swapaxes(flip(m, a1), a0, a1)
    return m


def tile(A, reps):
    """Repeat A the given number of times along each axis."""
    A = _arr(A)
    reps = (reps,) if isinstance(reps, int) else tuple(reps)
    if 0 in reps or A.size == 0:      # a zero-size result: its NumPy shape, empty
        n = max(len(reps), A.ndim)
        shape = (1,) * (n - A.ndim) + A.shape
        full_reps = (1,) * (n - len(reps)) + reps
        return _empty_from(A, tuple(d * r for d, r in zip(shape, full_reps)))
    return wrap(_nd.tile(A, reps=reps))


def repeat(a, repeats, axis=None):
    """Repeat each element (along axis, or of the flattened array)."""
    a = _arr(a)
    if not isinstance(repeats, int):
        raise NotImplementedError("mx.np.repeat: only an int repeats is implemented")
    if axis is None:
        return wrap(_nd.repeat(ravel(a), repeats=repeats, axis=0))
    return wrap(_nd.repeat(a, repeats=repeats, axis=_norm_axis(axis, a.ndim)))


_PAD_MODES = ("constant", "edge", "reflect", "symmetric", "maximum", "minimum")


def pad(x, pad_width, mode="constant", **kwargs):
    """Pad every axis of x (modes constant, edge, reflect, symmetric, maximum, minimum;
    differentiable in mode 'constant', as in MXNet)."""
    if not isinstance(pad_width, tuple):
        raise TypeError("`pad_width` must be tuple.")
    if mode not in _PAD_MODES:
        raise ValueError(f"mode {{'{mode}'}} is not supported.")
    value = kwargs.pop("constant_values", 0)
    if not isinstance(value, (int, float, _onp.number)):
        raise TypeError(f"unsupported constant_values type: {{'{type(value).__name__}'}}.")
    reflect_type = kwargs.pop("reflect_type", "even")
    if reflect_type != "even":
        raise ValueError(f"unsupported reflect_type '{reflect_type}'")
    if kwargs:
        raise TypeError(f"pad() got unexpected keyword arguments {sorted(kwargs)}")
    return wrap(_nd._internal._npi_pad(_arr(x), pad_width=pad_width, mode=mode,
                                       constant_value=float(value)))


def take(a, indices, axis=None, mode="raise", out=None):
    """Elements of a at indices (along axis, or of the flattened array)."""
    from .math import _finish
    a = _arr(a)
    idx = _arr(indices)
    if axis is None:
        a, axis = ravel(a), 0
    res = wrap(_nd.take(a, idx, axis=_norm_axis(axis, a.ndim),
                        mode="clip" if mode == "clip" else "wrap" if mode == "wrap" else
                        "raise"))
    return _finish(res, out)


def diagonal(a, offset=0, axis1=0, axis2=1):
    """The offset diagonal of the (axis1, axis2) planes, as the last axis."""
    # an offset past the planes gives an empty diagonal, still recorded for autograd
    return wrap(_nd._internal._np_diagonal(_arr(a), offset=offset, axis1=axis1,
                                           axis2=axis2))


def trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    from .math import sum as _sum
    return _sum(diagonal(a, offset, axis1, axis2), axis=-1, dtype=dtype, out=out)


def sort(a, axis=-1, kind=None, order=None):
    a = _arr(a)
    if axis is None:
        a, axis = ravel(a), 0
    return wrap(_nd.sort(a, axis=_norm_axis(axis, a.ndim)))


def argsort(a, axis=-1, kind=None, order=None):
    a = _arr(a)
    if axis is None:
        a, axis = ravel(a), 0
    return wrap(_nd.argsort(a, axis=_norm_axis(axis, a.ndim), dtype="int64"))


def unique(ar, return_index=False, return_inverse=False, return_counts=False, axis=None):
    """The sorted unique elements (computed on the host, as MXNet's CPU kernel does)."""
    from .creation import array
    ar = _arr(ar)
    res = _onp.unique(ar.asnumpy(), return_index, return_inverse, return_counts, axis)
    if not isinstance(res, tuple):
        return array(res, dtype=ar.dtype, ctx=ar.context)
    first = array(res[0], dtype=ar.dtype, ctx=ar.context)
    return (first,) + tuple(array(r, dtype=_onp.int64, ctx=ar.context) for r in res[1:])


def searchsorted(a, v, side="left", sorter=None):
    from .creation import array
    a = _arr(a)
    vh = v.asnumpy() if isinstance(v, NDArray) else v
    if _onp.ndim(vh) == 0:            # one value: a NumPy integer, as MXNet returns it
        return _onp.int64(_onp.searchsorted(a.asnumpy(), vh, side, sorter))
    return array(_onp.searchsorted(a.asnumpy(), vh, side, sorter), dtype=_onp.int64,
                 ctx=a.context)

