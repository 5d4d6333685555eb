"""NDArray indexing: ``x[key]`` and ``x[key] = value`` with MXNet 1.x semantics.

Integer and step-1 slice keys on the first axis give views that share memory (as
MXNet's ``at``/``slice`` do); every other key copies through the ``_getitem``
operator, which autograd records. Legacy shape semantics: a result with no dims has
shape (1,).
"""
import numpy as np

from .. import engine
from ..base import InvalidArgument, InvalidIndex, MXNetError, integer_types, numeric_types
from ..operator.ops.index_keys import IndexArg, resolve_key  # noqa: F401 (re-exported)
from .creation import scalar_as
from .dispatch import invoke_by_name, store
from .ndarray import NDArray
from ..tape import is_recording
from ..backend import array_module, device_scope

__all__ = ["getitem", "setitem", "IndexArg", "normalize_key", "resolve_key"]


def normalize_key(key):
    """(template, index NDArrays): NDArray parts of key become IndexArg placeholders."""
    if not isinstance(key, tuple):
        key = (key,)
    template, arrays = [], []
    for k in key:
        if isinstance(k, NDArray):
            template.append(IndexArg(len(arrays)))
            arrays.append(k)
        elif isinstance(k, (list, tuple, np.ndarray)):   # a nested tuple is an index list
            template.append(np.asarray(k))
        elif isinstance(k, (slice, type(Ellipsis), type(None))) or isinstance(k, integer_types):
            template.append(int(k) if isinstance(k, integer_types) else k)
        else:
            raise MXNetError(f"NDArray does not support indexing with {type(k).__name__}")
    return tuple(template), arrays


def _first_axis_view(arr, key):
    shape = arr._shape
    if not shape:
        return None
    row = 1
    for s in shape[1:]:
        row *= s
    if isinstance(key, integer_types) and not isinstance(key, (bool, np.bool_)):
        i = int(key)
        if i < -shape[0] or i >= shape[0]:
            raise IndexError(f"index {key} is out of bounds for axis 0 with size {shape[0]}")
        i %= shape[0]
        return arr._as_view(shape[1:] or (1,), i * row)
    if isinstance(key, slice) and key.step in (None, 1):
        start, stop, _ = key.indices(shape[0])
        stop = max(start, stop)
        return arr._as_view((stop - start,) + shape[1:], start * row)
    return None


def _int_prefix_view(arr, key):
    """A view for a tuple of leading integers then slices (``x[1, 2, 1:3]``) that selects
    one C-contiguous block, as MXNet's basic indexing gives; or None."""
    shape = arr._shape
    if not (isinstance(key, tuple) and 1 < len(key) <= len(shape)
            and isinstance(key[0], integer_types) and not isinstance(key[0], (bool, np.bool_))):
        return None
    n_int = 0
    while n_int < len(key) and isinstance(key[n_int], integer_types) \
            and not isinstance(key[n_int], (bool, np.bool_)):
        n_int += 1
    if n_int == len(shape) or not all(isinstance(k, slice) for k in key[n_int:]):
        return None
    as_slices = []
    for k, size in zip(key[:n_int], shape):
        if k < -size or k >= size:
            raise IndexError(f"index {k} is out of bounds for axis {len(as_slices)} with "
                             f"size {size}")
        k %= size
        as_slices.append(slice(k, k + 1))
    view = _contiguous_slices_view(arr, tuple(as_slices) + tuple(key[n_int:]))
    return None if view is None else view._as_view(view._shape[n_int:], 0)


def _contiguous_slices_view(arr, key):
    """A view for a tuple of slices that selects one C-contiguous block (as MXNet's
    basic indexing gives), or None."""
    shape = arr._shape
    if not (isinstance(key, tuple) and 0 < len(key) <= len(shape)
            and all(isinstance(k, slice) for k in key)):
        return None
    full = key + (slice(None),) * (len(shape) - len(key))
    if not NDArray._basic_indexing_slice_is_contiguous(full, shape):
        return None
    offset, stride, new_shape = 0, 1, []
    for sl, size in reversed(list(zip(full, shape))):
        start, stop, step = sl.indices(size)
        length = len(range(start, stop, step))
        if length:
            offset += start * stride
        new_shape.append(length)
        stride *= size
    return arr._as_view(tuple(reversed(new_shape)), offset if all(new_shape) else 0)


def getitem(arr, key):
    if not (arr._ag is not None and is_recording()):
        view = _first_axis_view(arr, key)
        if view is None:
            view = _contiguous_slices_view(arr, key)
        if view is None:
            view = _int_prefix_view(arr, key)
        if view is not None:
            return view
    template, arrays = normalize_key(key)
    return invoke_by_name("_getitem", [arr] + arrays, {"key": template})


def _is_whole(arr, key):
    if isinstance(key, slice) and key == slice(None):
        return True
    if key is Ellipsis:
        return True
    return isinstance(key, tuple) and all((isinstance(k, slice) and k == slice(None)) or
                                          k is Ellipsis for k in key)


def _check_assignable(arr, key, template, vshape):
    """Refuse, at the call, a value whose shape neither broadcasts to arr[key] nor
    equals it up to size-1 axes (MXNet raises here too; writing it would scramble)."""
    try:
        target = np.broadcast_to(np.zeros((), np.int8), arr._shape)[
            resolve_key(template, [])].shape
    except Exception:        # the key itself is bad: the write reports it
        return
    if vshape == target:
        return
    while len(vshape) > len(target) and vshape[0] == 1:
        vshape = vshape[1:]          # NumPy drops a value's extra leading 1-axes too
    try:
        if np.broadcast_shapes(vshape, target) == target:
            return
    except ValueError:
        pass
    if tuple(s for s in vshape if s != 1) == tuple(s for s in target if s != 1):
        return
    raise InvalidArgument(f"cannot assign a value of shape {vshape} to NDArray[{key!r}] of "
                          f"shape {target} (array shape {arr._shape})")


def setitem(arr, key, value):
    """Write value (scalar, NDArray, NumPy array or list) into arr[key], in place."""
    if isinstance(value, NDArray):
        src_chunks = [value._chunk]
        if value._ctx.device_typeid == 2 or arr._ctx.device_typeid == 2:
            if value._ctx != arr._ctx:
                # from another device: bring the values into arr's memory first
                from ..backend import device_put
                from .ndarray import source_hold
                get_value = lambda: device_put(value._data, arr._ctx,  # noqa: E731
                                               source_hold(value))
            else:
                get_value = lambda: value._data  # noqa: E731
        else:
            get_value = lambda: value._data  # noqa: E731
    elif isinstance(value, numeric_types) or isinstance(value, (bool, np.bool_)):
        # an integer destination wraps an out-of-range value as MXNet's C cast does
        src_chunks, const = [], scalar_as(value, arr._dtype) \
            if arr._dtype.kind in "iu" else value
        get_value = lambda: const  # noqa: E731
    else:
        if type(value).__module__.startswith("cupy"):    # a raw GPU array
            from ..backend import to_numpy
            value = to_numpy(value)
        try:
            const = np.array(value, dtype=arr._dtype)
        except (TypeError, ValueError) as err:
            raise MXNetError(f"cannot assign {type(value).__name__} to an NDArray: {err}") \
                from None
        if arr._ctx.device_typeid == 2:
            with device_scope(arr._ctx):
                const = array_module(arr._ctx).asarray(const)
        src_chunks = []
        get_value = lambda: const  # noqa: E731
    template, idx_arrays = normalize_key(key)
    src_chunks += [a._chunk for a in idx_arrays]
    whole = _is_whole(arr, key)
    vshape = value.shape if isinstance(value, NDArray) else \
        getattr(const, "shape", None) if not src_chunks else None
    if not idx_arrays and vshape is not None:
        _check_assignable(arr, key, template, tuple(vshape))

    def run(rctx=None):
        v = get_value()
        if whole and not np.isscalar(v) and tuple(v.shape) == arr._shape:
            store(arr, v.astype(arr._dtype, copy=True))
            return
        if arr._chunk.data is None:
            arr._chunk.data = array_module(arr._ctx).empty(arr._shape, arr._dtype)
        k = resolve_key(template, [a._data for a in idx_arrays])
        data = arr._data
        if isinstance(v, np.ndarray) or hasattr(v, "shape"):
            target_shape = data[k].shape
            if v.shape != target_shape:
                try:
                    v = v.reshape(target_shape) if v.size == int(np.prod(target_shape)) \
                        else v
                except ValueError:
                    pass
        try:
            data[k] = v
        except (ValueError, IndexError) as err:
            raise (InvalidIndex if isinstance(err, IndexError) else InvalidArgument)(
                f"cannot assign to NDArray of shape {arr._shape} at {key!r}: "
                f"{err}") from None

    # a source that failed (its error not raised yet) goes through the engine too, so the
    # error reaches arr as it would from any other reader (as dispatch's idle check does)
    busy = arr._chunk.num_pending or any(c.num_pending or c.exception is not None
                                         for c in src_chunks)
    if not busy and arr._chunk.exception is None:
        with device_scope(arr._ctx):
            run()
    else:
        engine.get().push_sync(run, arr._ctx, src_chunks, [arr._chunk], 0, "_set_value")
