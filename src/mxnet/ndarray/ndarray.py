"""NDArray: an asynchronous n-dimensional array on a device (seed 002, seed 004).

An NDArray is (storage chunk, view, shape, dtype, context). Operations on it are
dispatched through the operator registry and the engine and return at once;
``asnumpy()``, ``wait_to_read()`` and ``mx.nd.waitall()`` are the sync points.
"""
import ctypes
import weakref

import numpy as np

from .. import engine, tape as _tape, ndarray as nd
from .. import base as _base
from ..base import InvalidArgument, MXNetError, bfloat16 as _BF16, dtype_np, numeric_types
from ..context import Context, current_context
from ..op_methods import OpMethods
from ..operator import frontend
from ..operator.registry import Op as _Op
from .chunk import Chunk
from ..backend import to_numpy, check_context
from ..operator.shape_codes import infer_reshape

__all__ = ["NDArray", "from_data", "waitall"]

_np_ndarray = np.ndarray
py_slice = slice        # MXNet's module-level name for the builtin slice
# Storage type ids (MXNet's NDArrayStorageType); pymxnet stores 'default' only.
_STORAGE_TYPE_UNDEFINED, _STORAGE_TYPE_DEFAULT = -1, 0
_STORAGE_TYPE_ROW_SPARSE, _STORAGE_TYPE_CSR = 1, 2
_STORAGE_TYPE_STR_TO_ID = {"undefined": -1, "default": 0, "row_sparse": 1, "csr": 2}
_STORAGE_TYPE_ID_TO_STR = {v: k for k, v in _STORAGE_TYPE_STR_TO_ID.items()}


# Arrays given out as C handles (NDArray._as_parameter_), by handle value.
_HANDLES = weakref.WeakValueDictionary()
# Arrays an emulated C API call created and handed out by handle: held until
# NDArray(handle) takes them, as the C API's caller owns a handle until it frees it.
_HANDED_OUT = {}


def hand_out(array):
    """The handle (an int) of a new array an emulated C API call returns."""
    _HANDED_OUT[id(array)] = array
    return id(array)


def _from_handle(handle):
    """The array a C handle (ctypes.c_void_p or int) from ``_as_parameter_`` or an
    emulated C API call names."""
    value = handle.value if isinstance(handle, ctypes.c_void_p) else handle
    src = None
    if isinstance(value, int):
        src = _HANDED_OUT.pop(value, None)
        if src is None:
            src = _HANDLES.get(value)
    if src is None:
        raise MXNetError(f"NDArray: {handle!r} is not the handle of a live NDArray")
    return src


class _HostArray(_np_ndarray):
    """The NumPy array ``asnumpy()`` gives (for arrays of ndim > 0).

    A plain ``numpy.ndarray`` in every way (its repr, its pickle and what
    ``numpy.asarray`` makes of it), except that ``float()``, ``int()`` and
    ``complex()`` accept it, and the one-element pieces indexed or computed from it
    (``scores.asnumpy()[i]`` of an ``(n, 1)`` result), as NumPy 1.x did where MXNet 1.x
    ran; NumPy 2.4 refuses them for arrays of ndim > 0.
    """

    def _one(self, kind, method):
        if self.size != 1:      # grown by broadcasting: NumPy's own error
            return method(self.view(_np_ndarray))
        return kind(self.item())

    def __float__(self):
        return self._one(float, _np_ndarray.__float__)

    def __int__(self):
        return self._one(int, _np_ndarray.__int__)

    def __complex__(self):
        return self._one(complex, _np_ndarray.__complex__)

    def __repr__(self):
        return repr(self.view(_np_ndarray))

    def __format__(self, spec):
        return format(self.view(_np_ndarray), spec)

    def __reduce__(self):
        return self.view(_np_ndarray).__reduce__()

    def __array_wrap__(self, array, context=None, return_scalar=False):
        # a reduction to one value gives a NumPy scalar, as on a plain array (NumPy
        # would give a 0-d subclass array, which isinstance(x, float) checks reject)
        if return_scalar:
            return array[()]
        return super().__array_wrap__(array, context, return_scalar)


class NDArray(OpMethods):
    """An array on a device with MXNet 1.x semantics.

    Create one with ``mx.nd.array``, ``mx.nd.zeros`` and friends, not directly.
    """

    __slots__ = ("_chunk", "_view", "_shape", "_dtype", "_ctx", "_ag", "__weakref__")
    __array_priority__ = 1000.0
    _sparse = False             # True on sparse storage (ndarray.sparse)

    def __init__(self, chunk=None, shape=None, dtype=None, ctx=None, view=None,
                 writable=True, handle=None):
        if handle is not None:      # NDArray(handle=...), MXNet's keyword
            chunk = handle
        if shape is None and chunk is None:
            # NDArray(None): an empty array that __setstate__ fills in; MXNet's pickles
            # rebuild arrays this way
            chunk, shape, dtype = Chunk(None), (0,), np.dtype(np.float32)
            ctx = Context("cpu", 0)
        elif shape is None:     # NDArray(handle, writable=...): MXNet's handle wrapping
            src = _from_handle(chunk)
            chunk, view, shape, dtype, ctx = (src._chunk, src._view, src._shape,
                                              src._dtype, src._ctx)
        self._chunk = chunk
        self._view = view           # None, or (element offset, shape) into chunk.data
        self._shape = shape
        self._dtype = dtype
        self._ctx = ctx
        self._ag = None             # autograd entry: (node, output index) or None
        if (dtype is _BF16 or dtype is _BF16.type) and not _base.BFLOAT16_IN_USE:
            _base.note_bfloat16()

    # --- raw data access (internal; callers must have waited) -------------
    @property
    def _data(self):
        d = self._chunk.data
        if d is None:
            d = self._unwritten()
        if self._view is None:
            return d
        off, shape = self._view
        n = 1
        for s in shape:
            n *= s
        return d.reshape(-1)[off:off + n].reshape(shape)

    def _unwritten(self):
        """A buffer for a chunk no operation ever wrote: its writer failed, and the
        failure was raised at a sync point already. MXNet hands back uninitialised
        memory then; this gives zeros of the array's size."""
        from .failures import zero_fill
        return zero_fill(self)

    def _read(self):
        """The device array, after pending writes complete (raises their failure)."""
        c = self._chunk
        if c.num_pending or c.exception is not None:
            engine.get().wait_for_var(c)
        return self._data

    # --- properties ---------------------------------------------------------
    @property
    def shape(self):
        return self._shape

    @property
    def dtype(self):
        """The numpy type of the elements (e.g. ``numpy.float32``)."""
        return self._dtype.type

    @property
    def context(self):
        return self._ctx

    ctx = context

    @property
    def size(self):
        n = 1
        for s in self._shape:
            n *= s
        return n

    @property
    def ndim(self):
        return len(self._shape)

    @property
    def stype(self):
        return "default"

    @property
    def T(self):
        """A transposed copy (all axes reversed, as ``nd.transpose(self)``); an array
        with fewer than 2 dimensions is returned itself."""
        if self.ndim < 2:
            return self
        return self.transpose()

    @property
    def handle(self):
        return self._chunk

    @property
    def _as_parameter_(self):
        """This array as a C handle (``ctypes.c_void_p``), the form MXNet's ctypes API
        (monitor callbacks) hands out: ``ctypes.cast(arr, NDArrayHandle)`` accepts the
        array, and ``NDArray(handle)`` gives back an array on the same storage."""
        _HANDLES[id(self)] = self
        return ctypes.c_void_p(id(self))

    @property
    def writable(self):
        return True

    # --- synchronisation and conversion ---------------------------------------
    def wait_to_read(self):
        """Block until the pending writes to this array are done (on a GPU: until the
        device has finished them, not just queued them)."""
        self._read()
        if self._ctx.device_typeid == 2:
            _sync_gpu(self._ctx)

    def wait_to_write(self):
        c = self._chunk
        if c.num_pending or c.exception is not None:
            # pending reads too (a GPU copy still reading it, a worker's operator):
            # what follows writes the memory in place (MXNet's WaitToWrite)
            engine.get().wait_for_var(c, write=True)

    def asnumpy(self):
        """A NumPy copy of the array (waits for pending work)."""
        d = self._read()
        if self._ctx.device_typeid == 2:
            _sync_gpu(self._ctx)
        out = to_numpy(d)
        out = out.copy() if out is d else out
        if out.ndim:
            # NumPy 2 refuses float()/int() on one-element arrays with ndim > 0,
            # which MXNet 1.x code (on NumPy 1.x) does, on the result itself ('%f' %
            # loss.mean().asnumpy()) or on a piece of it (float(scores[i]) of an
            # (n, 1) result); the subclass's pieces keep accepting them
            out = out.view(_HostArray)
        return out

    def asscalar(self):
        if self.size != 1:       # (a ValueError too, as MXNet 1.9.1 raises)
            raise InvalidArgument(f"The current array is not a scalar (shape "
                                  f"{self._shape})")
        return self.asnumpy().reshape(-1)[0]

    def item(self):
        return self.asscalar().item()

    def __array__(self, dtype=None, copy=None):
        a = self.asnumpy()
        return a if dtype is None else a.astype(dtype, copy=False)

    def tolist(self):
        return self.asnumpy().tolist()

    def __len__(self):
        if not self._shape:
            raise TypeError("len() of a 0-d NDArray")
        return self._shape[0]

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]

    def __bool__(self):
        if self.size == 1:
            return bool(self.asnumpy().reshape(-1)[0])
        if self.size == 0:
            return False
        raise ValueError("The truth value of an NDArray with multiple elements is ambiguous.")

    def __float__(self):
        # like NumPy (and MXNet's np.ndarray): a TypeError, so callers such as
        # math.isfinite/matplotlib can tell "not a scalar" from a real failure
        if self.size != 1:
            raise TypeError("only size-1 arrays can be converted to Python scalars")
        return float(self.asscalar())

    def __int__(self):
        if self.size != 1:
            raise TypeError("only size-1 arrays can be converted to Python scalars")
        return int(self.asscalar())

    def __index__(self):
        if self.size == 1 and np.issubdtype(self._dtype, np.integer):
            return int(self.asscalar())
        raise TypeError("only integer scalar arrays can be converted to a scalar index")

    def __repr__(self):
        body = str(self.asnumpy())
        shape = "x".join(map(str, self._shape))
        return f"\n{body}\n<NDArray {shape} @{self._ctx}>"

    def __reduce__(self):
        # MXNet's pickle: the class called with a None handle, then __setstate__ with the
        # raw bytes, so pickles load both here and in MXNet 1.x (optimizer states, say)
        return (self.__class__, (None,), self.__getstate__())

    def __getstate__(self):
        """{'handle': the array's bytes in MXNet's raw single-array format}."""
        from .raw_bytes import save_raw_bytes
        return {"handle": bytearray(save_raw_bytes(self))}

    def __setstate__(self, state):
        """Become the array a ``__getstate__`` dict holds (MXNet's raw format; an array
        saved on a GPU that is not present comes back on the CPU)."""
        from .raw_bytes import load_raw_bytes
        handle = state.get("handle") if isinstance(state, dict) else None
        if handle is None:
            raise MXNetError("NDArray.__setstate__ expects {'handle': bytes}")
        other = load_raw_bytes(bytes(handle))
        self._chunk, self._view = other._chunk, other._view
        self._shape, self._dtype, self._ctx = other._shape, other._dtype, other._ctx
        self._ag = None

    # --- copies, casts, contexts -------------------------------------------------
    def copy(self):
        """A deep copy on the same context."""
        return self.copyto(self._ctx)

    def __copy__(self):
        return self.copy()

    def __deepcopy__(self, memo):
        return self.copy()

    def copyto(self, other):
        """Copy into another NDArray (returned) or onto a Context (a new array)."""
        from .dispatch import invoke_by_name
        if isinstance(other, NDArray):
            if other is self:
                return other
            if other._shape != self._shape:
                raise MXNetError(f"copyto: shape mismatch {self._shape} vs {other._shape}")
            if (self._ctx.device_typeid == 2 or other._ctx.device_typeid == 2) and \
                    self._ctx != other._ctx:
                # the operator would compute on self's device and hand other a buffer
                # from the wrong memory: copy across devices instead
                if self._dtype != other._dtype:
                    return self.astype(other._dtype).copyto(other)
                return _copy_across_into(self, other)
            return invoke_by_name("_copyto", [self], {}, out=other)
        if isinstance(other, Context):
            if other == self._ctx:
                return invoke_by_name("_copy", [self], {})
            return _copy_across(self, other)
        raise MXNetError(f"copyto does not support type {type(other).__name__}")

    def as_in_context(self, context):
        """This array if it is already on context, else a copy there."""
        if self._ctx == context:
            return self
        return self.copyto(context)

    as_in_ctx = as_in_context

    def astype(self, dtype, copy=True):
        """A copy cast to dtype (this array itself when copy=False and dtype matches)."""
        dt = dtype_np(dtype)
        if not copy and dt == self._dtype:
            return self
        from .dispatch import invoke_by_name
        return invoke_by_name("Cast", [self], {"dtype": dt.name})

    def tostype(self, stype):
        """A copy in storage type ``stype`` ('default', 'row_sparse' or 'csr')."""
        from .sparse_dispatch import cast_storage_nd
        return cast_storage_nd(self, stype)

    def as_np_ndarray(self):
        """An ``mx.np.ndarray`` sharing this array's data (``mxnet.numpy`` installs
        the conversion: the np layer sits above this one)."""
        raise MXNetError("mx.np arrays are not available (mxnet.numpy is not loaded)")

    def as_nd_ndarray(self):
        return self

    # --- reshape and views ---------------------------------------------------------
    def reshape(self, *shape, **kwargs):
        """A view with a new shape, sharing memory (MXNet codes 0, -1, -2, -3, -4 and
        ``reverse=True`` are understood)."""
        if len(shape) == 1 and isinstance(shape[0], (list, tuple)):
            shape = tuple(shape[0])
        shape = kwargs.pop("shape", shape)
        reverse = kwargs.pop("reverse", False)
        if kwargs:
            raise MXNetError(f"reshape got unexpected arguments {sorted(kwargs)}")
        _check_plain_reshape(self._shape, tuple(shape))
        new_shape = infer_reshape(self._shape, tuple(shape), reverse)
        if self._ag is not None and _recording():
            from .dispatch import invoke_by_name
            return invoke_by_name("Reshape", [self], {"shape": tuple(shape),
                                                     "reverse": reverse})
        return self._as_view(new_shape, 0)

    def broadcast_to(self, shape):
        """This array broadcast to ``shape`` (a new array, never a view).

        Unlike the ``broadcast_to`` operator, the method first prepends size-1 axes
        when ``shape`` has more (NumPy's rule, as MXNet 1.9.1's method does), so a
        ``(3, 1)`` array broadcasts to ``(2, 3, 4)``. A shape it cannot reach raises
        ValueError.
        """
        shape = tuple(shape)
        padded = (1,) * (len(shape) - len(self._shape)) + self._shape
        if len(shape) < len(self._shape) or any(
                have != want and have != 1 for have, want in zip(padded, shape)):
            raise ValueError("operands could not be broadcast together with remapped "
                             f"shapes[original->remapped]: {self._shape} and requested "
                             f"shape {shape}")
        source = self if padded == self._shape else self.reshape(padded)
        return nd.broadcast_to(source, shape=shape)

    def broadcast_like(self, other):
        """This array broadcast to ``other``'s shape, by the rule of ``broadcast_to``
        (size-1 axes are prepended first, as MXNet 1.9.1's method does)."""
        return self.broadcast_to(other.shape)

    def _as_view(self, shape, offset_elems):
        base_off = 0 if self._view is None else self._view[0]
        if self._view is None and offset_elems == 0 and shape == self._shape:
            view = None
        else:
            view = (base_off + offset_elems, shape)
        return NDArray(self._chunk, shape, self._dtype, self._ctx, view)

    def _fluent_fn(self, name):
        return getattr(nd, name)

    def _inplace_view(self, name, *args, **kwargs):
        """flatten/squeeze/expand_dims with inplace=True: a view sharing memory."""
        if self._ag is not None and _recording():
            return self._fluent_fn(name)(self, *args, **kwargs)
        shape = self._shape
        if name == "flatten":
            if args or kwargs:
                raise MXNetError(f"flatten got unexpected arguments {args} {kwargs}")
            rest = 1
            for s in shape[1:]:
                rest *= s
            return self.reshape((shape[0], rest) if shape else (1, 1))
        if name == "squeeze":
            axis = args[0] if args else kwargs.pop("axis", None)
            if kwargs or len(args) > 1:
                raise MXNetError(f"squeeze got unexpected arguments {args[1:]} {kwargs}")
            if axis is None:
                new = tuple(s for s in shape if s != 1)
            else:
                axes = {a % len(shape) for a in ((axis,) if isinstance(axis, int) else axis)}
                if any(shape[a] != 1 for a in axes):
                    raise MXNetError(f"squeeze: cannot squeeze axis {axis} of shape {shape} "
                                     f"(size is not 1)")
                new = tuple(s for i, s in enumerate(shape) if i not in axes)
            return self.reshape(new or (1,))       # MXNet keeps one axis
        axis = args[0] if args else kwargs.pop("axis")
        if kwargs or len(args) > 1:
            raise MXNetError(f"expand_dims got unexpected arguments {args[1:]} {kwargs}")
        ndim = len(shape)
        if not -ndim - 1 <= axis <= ndim:
            raise MXNetError(f"expand_dims: axis {axis} is out of range for {ndim} dims")
        axis = axis + ndim + 1 if axis < 0 else axis
        return self.reshape(shape[:axis] + (1,) + shape[axis:])


    __hash__ = object.__hash__

    # --- in-place arithmetic --------------------------------------------------------
    def _inplace(self, other, op, scalar_op):
        from .dispatch import inplace_binary
        return inplace_binary(self, other, op, scalar_op)

    def __iadd__(self, o):
        return self._inplace(o, "broadcast_add", "_plus_scalar")

    def __isub__(self, o):
        return self._inplace(o, "broadcast_sub", "_minus_scalar")

    def __imul__(self, o):
        return self._inplace(o, "broadcast_mul", "_mul_scalar")

    def __itruediv__(self, o):
        return self._inplace(o, "broadcast_div", "_div_scalar")

    def __imod__(self, o):
        return self._inplace(o, "broadcast_mod", "_mod_scalar")

    # --- indexing ---------------------------------------------------------------------
    def __getitem__(self, key):
        from .indexing import getitem
        return getitem(self, key)

    def __setitem__(self, key, value):
        from .indexing import setitem
        if _recording() and self._recorded_assignment(key, value):
            return
        setitem(self, key, value)

    def _recorded_assignment(self, key, value):
        """``self[key] = value`` while recording, as MXNet 1.9.1 does it: refused into an
        array already in the graph, and for a recorded value into part of an array
        (neither can be differentiated); a recorded value written over the whole array
        (``[:]``, ``[...]``, ``[None]``) is a recorded copy, so gradients flow through
        it. True when done here; False leaves a plain write to ``setitem``."""
        _tape.refuse_recorded_destinations([self])
        if not isinstance(value, NDArray) or not _tape.in_graph(value):
            return False
        if not _selects_all(key, len(self._shape)):
            raise MXNetError(_tape.IN_PLACE)
        if value._shape != self._shape:
            value = value.reshape(self._shape) if value.size == self.size else \
                value.broadcast_to(self._shape)
        value.copyto(self)
        return True

    @staticmethod
    def _basic_indexing_slice_is_contiguous(slc_key, shape):
        """Whether basic indexing with a tuple of slices gives a C-contiguous region of
        an array of the given shape (so the result can be a view)."""
        partial = False
        for sl, size in reversed(list(zip(slc_key, shape))):
            start, stop, step = sl.indices(size)
            length = len(range(start, stop, step))
            if partial and length > 1:
                return False            # a partial inner axis breaks an outer run
            if step != 1 and length > 1:
                return False
            if length < size:
                partial = True
        return True

    # --- autograd ------------------------------------------------------------------------
    def attach_grad(self, grad_req="write", stype=None):
        """Allocate a gradient buffer and mark this array as a variable for autograd."""
        from .creation import zeros
        if stype is None:
            stype = self.stype          # a sparse array's gradient has its storage type
        if stype != "default":
            from .sparse import zeros as sparse_zeros
            buf = sparse_zeros(stype, self._shape, self._ctx, self._dtype)
        else:
            buf = zeros(self._shape, self._ctx, self._dtype)
        _tape.mark_variables([self], [buf], grad_req)

    @property
    def grad(self):
        """The gradient buffer attached by ``attach_grad`` (None if none, or if its
        grad_req is 'null', as in MXNet 1.9.1)."""
        ag = self._ag
        if ag is None or not hasattr(ag[0], "grad") or ag[0].grad_req == "null":
            return None
        return ag[0].grad

    def to_dlpack_for_read(self):
        """A DLPack capsule of this array's memory, for reading."""
        from .interop import to_dlpack_for_read
        return to_dlpack_for_read(self)

    def to_dlpack_for_write(self):
        """A DLPack capsule of this array's memory, for writing."""
        from .interop import to_dlpack_for_write
        return to_dlpack_for_write(self)

    @property
    def _fresh_grad(self):
        """Whether backward wrote this variable's gradient since the flag was cleared
        (MXNet's NDArray._fresh_grad; False for arrays that are not variables)."""
        ag = self._ag
        return ag is not None and getattr(ag[0], "fresh_grad", False)

    @_fresh_grad.setter
    def _fresh_grad(self, state):
        ag = self._ag
        if ag is None or not hasattr(ag[0], "fresh_grad"):
            raise MXNetError("_fresh_grad can only be set on an array with attach_grad()")
        ag[0].fresh_grad = bool(state)

    def detach(self):
        """The same data, cut from the autograd graph."""
        return NDArray(self._chunk, self._shape, self._dtype, self._ctx, self._view)

    def backward(self, out_grad=None, retain_graph=False, train_mode=True):
        """Compute gradients of this array with respect to marked variables."""
        _tape.backward([self], None if out_grad is None else [out_grad], retain_graph, train_mode)

    def to_dlpack_for_read(self):
        """A DLPack capsule of this array's memory, once pending writes are done."""
        from .interop import to_dlpack_for_read
        return to_dlpack_for_read(self)

    def to_dlpack_for_write(self):
        """A DLPack capsule of this array's memory, for a consumer that writes it."""
        from .interop import to_dlpack_for_write
        return to_dlpack_for_write(self)


from .dispatch import binary as _binary  # noqa: E402  (needs NDArray defined)

NDArray._binary_op = _binary


class _ReshapeSizeError(MXNetError, ValueError):
    """A reshape target that cannot hold the array (MXNet raises ValueError)."""


def _check_plain_reshape(shape, target):
    """A target made of sizes and at most one -1 that cannot hold the array's elements
    is a ValueError, as in MXNet (MXNet's special codes 0/-2/-3/-4 are checked later)."""
    if not all(isinstance(d, (int, np.integer)) and (d > 0 or d == -1) for d in target) \
            or sum(1 for d in target if d == -1) > 1:
        return
    size = 1
    for d in shape:
        size *= d
    known = 1
    for d in target:
        if d != -1:
            known *= d
    fits = size == known if -1 not in target else (known and size % known == 0)
    if not fits:
        raise _ReshapeSizeError(f"Cannot reshape array of size {size} into shape {target}")


def _recording():
    return _tape.is_recording()


def _selects_all(key, ndim):
    """Whether the index key selects a whole array of ndim axes as it is: None,
    ``...``, ``:``, or a tuple of those with at most ndim ``:``."""
    if key is None or key is Ellipsis or (key.__class__ is slice and key == slice(None)):
        return True
    if key.__class__ is not tuple:
        return False
    slices = 0
    for k in key:           # (identity tests: a key may hold arrays, whose == is theirs)
        if k.__class__ is slice and k == slice(None):
            slices += 1
        elif k is not None and k is not Ellipsis:
            return False
    return slices <= ndim


def _rebuild(data, devtype, devid):
    """Unpickles arrays pickled by earlier pymxnet releases."""
    return from_data(np.ascontiguousarray(data), Context(devtype, devid))


def from_data(data, ctx):
    """Wrap a fresh, contiguous device array (owned from now on) as an NDArray."""
    return NDArray(Chunk(data), data.shape, data.dtype, ctx)


def _copy_across(src, ctx):
    """Copy between devices (host <-> GPU, GPU <-> GPU) into a new array on ctx;
    recorded by autograd like MXNet's _copyto (the gradient goes back across)."""
    from ..backend import device_put
    out = from_data(device_put(src._read(), ctx, source_hold(src)), ctx)
    _record_copy(src, out)
    return out


def source_hold(src):
    """``device_put``'s ``hold_source`` for a copy that reads NDArray ``src``: a GPU may
    read a page-locked source after the copy has returned (backend/host_to_device.py),
    so writes of ``src`` are kept waiting until the event that ends the read has passed,
    as MXNet's engine holds a copy's source until its transfer is done. Reads of ``src``
    go on meanwhile; neither the calling thread nor an engine worker waits for the
    device (backend/event_watcher.py does). None inside pushed work (an engine worker
    running the copy): a read pushed from there could queue behind a write of ``src``
    pushed since, so the copy stages the source instead, as CuPy does for pageable
    memory."""
    if engine.get().in_worker():
        return None
    chunk, ctx = src._chunk, src._ctx

    def hold(read_done):
        from ..backend import cupy_or_none
        from ..backend.event_watcher import when_passed
        # (called right after the copy was queued, with its device current)
        device_id = cupy_or_none().cuda.runtime.getDevice()

        def wait(rctx, on_complete):
            when_passed(read_done, on_complete, device_id)
        # a read of src pushed now, ahead of any later write, that ends when the
        # device has read src
        engine.get().push_async(wait, ctx, [chunk], [], 0, "_copyto (device reads source)")
    return hold


class _CrossDeviceCopy(_Op):
    """The tape's node for a copy to another device: its backward copies the output
    gradient back to the source's device."""
    name = "_copyto"
    backward_uses = ("out_grad",)

    def __init__(self, src_ctx):
        self.src_ctx = src_ctx
        self.params = None

    def backward(self, octx, p, ograds, in_data, out_data, aux):
        from ..backend import device_put
        return [device_put(ograds[0], self.src_ctx)]


def _record_copy(src, dst):
    if src._ag is not None and _tape.is_recording():
        _tape.record_call(_CrossDeviceCopy(src._ctx), None, [src], [], [dst],
                          _tape.is_training(), dst._ctx)


def _copy_across_into(src, dst):
    """Copy src into the existing array dst on another device, ordered by the engine
    after src's writer and before dst's next reader."""
    from ..backend import device_put
    from .dispatch import store
    if dst._ctx.device_typeid == 2:
        from ..backend import check_context
        check_context(dst._ctx)

    def run(rctx):
        store(dst, device_put(src._data, dst._ctx, source_hold(src)))
    eng = engine.get()
    # Into GPU memory the copy is only queued on the device's stream (CuPy stages host
    # memory in pinned memory and returns), so with both arrays idle it runs here: an
    # engine worker would add a thread hand-off that the next kernel reading dst waits
    # for (Module copies every batch in this way). Into host memory the copy waits for
    # the GPU: a worker waits instead of the caller, as in MXNet.
    if not (dst._ctx.device_typeid == 2 and
            eng.run_inline(run, [src._chunk], [dst._chunk], "_copyto", dst._ctx)):
        eng.push_sync(run, dst._ctx, [src._chunk], [dst._chunk], 0, "_copyto")
    _record_copy(src, dst)
    return dst


def _sync_gpu(ctx):
    from ..backend import sync_device
    sync_device(ctx.device_id)


def waitall():
    """Wait for all pushed work to finish (on GPUs: until the devices are done too);
    raise the first failure among it."""
    engine.wait_for_all()


def _check_ctx(ctx):
    if ctx is None:
        return current_context()
    if isinstance(ctx, str):
        name, _, rest = ctx.partition("(")
        try:
            ctx = Context(name, int(rest.rstrip(")") or 0))
        except ValueError:
            raise MXNetError(f"invalid context string {ctx!r}; expected e.g. 'cpu(0)'") \
                from None
    if not isinstance(ctx, Context):
        raise MXNetError(f"expected a Context, got {ctx!r}")
    if ctx.device_typeid == 2:
        check_context(ctx)
    return ctx



def _failed_array(shape, dtype, ctx, error):
    """An NDArray whose every read raises ``error``."""
    chunk = Chunk()
    chunk.exception = error
    return NDArray(chunk, shape, dtype, ctx)


frontend.provide(wrap_array=lambda data, ctx: NDArray(Chunk(data), tuple(data.shape),
                                                      np.dtype(data.dtype), ctx),
                 failed_array=_failed_array, is_array=lambda v: isinstance(v, NDArray),
                 ndarray_class=NDArray)


# MXNet 1.9.1 defines these free functions in this module, and code imports them from
# here (``from mxnet.ndarray.ndarray import maximum``); they live in the mx.nd package.
_PACKAGE_FUNCTIONS = frozenset(
    "add subtract multiply divide true_divide modulo power maximum minimum equal "
    "not_equal greater greater_equal lesser lesser_equal logical_and logical_or "
    "logical_xor array empty zeros ones full arange linspace eye concatenate moveaxis "
    "onehot_encode histogram imdecode split_v2 from_numpy from_dlpack to_dlpack_for_read "
    "to_dlpack_for_write".split())


def __getattr__(name):
    if name in _PACKAGE_FUNCTIONS:
        from .. import ndarray as package
        return getattr(package, name)
    if name == "is_np_array":
        from ..util import is_np_array
        return is_np_array
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
