"""``mx.np.ndarray``: an NDArray with NumPy's semantics, as MXNet 1.9.1 defines them.

It is the same asynchronous array (storage chunk, engine var, context, autograd
entry) with NumPy behaviour on top: zero-dim results (``a.sum()`` and ``a[0]`` of a
vector have shape ``()``), NumPy broadcasting for every arithmetic operator, bool
results from comparisons, true division of integers giving float32, ``.T`` over any
rank, ``dtype`` as a ``numpy.dtype``, NumPy's ``repr``. Every computation goes through
the one operator registry (an ``mx.np`` function is a front end, not a second
implementation); results are re-labelled as ``mx.np.ndarray`` without a copy.
"""
import numpy as _onp

from ..ndarray import register as _nd_register
from ..ndarray import dispatch as _nd_dispatch
from ..ndarray.dispatch import binary as _nd_binary, inplace_short
from ..ndarray.ndarray import NDArray
from ..op_methods import OpMethods
from ..tape import is_recording as _is_recording

__all__ = ["ndarray", "as_np", "wrap"]

_FLOAT32 = _onp.dtype(_onp.float32)
_BOOL = _onp.dtype(_onp.bool_)


def wrap(x):
    """Label a freshly made NDArray (or a list of them) as mx.np.ndarray in place."""
    if isinstance(x, NDArray):
        if type(x) is not ndarray:
            x.__class__ = ndarray
        return x
    if isinstance(x, (list, tuple)):
        return same_sequence(x, [wrap(v) for v in x])
    return x


def same_sequence(seq, items):
    """``items`` in a sequence of ``seq``'s type: a list, a tuple or a named tuple
    (NumPy's EighResult, SlogdetResult... take their fields as arguments)."""
    return type(seq)(*items) if hasattr(seq, "_fields") else type(seq)(items)


def as_np(x):
    """An mx.np view of an NDArray that shares its data and autograd entry (the
    NDArray itself keeps its class)."""
    if type(x) is ndarray:
        return x
    out = ndarray(x._chunk, x._shape, x._dtype, x._ctx, x._view)
    out._ag = x._ag
    return out


def _key_shape(shape, key):
    """The shape NumPy gives ``a[key]`` for an array of this shape (computed on a
    zero-strided stand-in, so nothing of that size is allocated)."""
    stand_in = _onp.lib.stride_tricks.as_strided(_onp.zeros(1, _onp.int8), shape,
                                                 (0,) * len(shape))
    return stand_in[_host_key(key)].shape


def _is_basic_key(key):
    parts = key if isinstance(key, tuple) else (key,)
    return all(k is None or k is Ellipsis or isinstance(k, slice) or
               (isinstance(k, (int, _onp.integer)) and not isinstance(k, (bool, _onp.bool_)))
               for k in parts)


def _basic_view_plan(shape, key):
    """(element offset, result shape) when basic indexing ``a[key]`` selects one
    C-contiguous block of a's elements (NumPy and MXNet then give a view), else None.
    NumPy resolves the key on a stand-in whose strides count elements; the stand-in's
    memory is never read."""
    strides, step = [], 1
    for d in reversed(shape):
        strides.append(step)
        step *= d
    stand_in = _onp.lib.stride_tricks.as_strided(_onp.zeros(1, _onp.int8), shape,
                                                 tuple(reversed(strides)))
    parts = key if isinstance(key, tuple) else (key,)
    if Ellipsis not in parts:
        parts += (Ellipsis,)         # an Ellipsis keeps a 0-d result an array (a view)
    try:
        sel = stand_in[parts]
    except IndexError as err:
        raise IndexError(f"{err} (index {key!r} of an array of shape {shape})") from None
    if not sel.flags.c_contiguous:
        return None
    if sel.size == 0:
        return 0, sel.shape
    return (sel.__array_interface__["data"][0] - stand_in.__array_interface__["data"][0],
            sel.shape)


def _bool_masks_to_host(key):
    """Boolean mx arrays in an index become NumPy masks (their nonzero positions decide
    the result's shape, so the host must see them, as MXNet's boolean indexing does);
    a ``range`` is the integer index array NumPy reads it as."""
    if isinstance(key, NDArray) and key._dtype == _onp.bool_:
        return key.asnumpy()
    if isinstance(key, range):
        return _onp.arange(key.start, key.stop, key.step, dtype=_onp.int64)
    if isinstance(key, tuple):
        return tuple(_bool_masks_to_host(k) for k in key)
    return key


def _masks_as_indices(key, shape):
    """A key holding booleans (NumPy masks or Python bools, which NumPy reads as 0-d
    masks) as the equivalent tuple of integer index arrays, one per axis: NumPy resolves
    the key on a stand-in of positions, so every mix of masks, bools, integers and
    slices means exactly what it means in NumPy."""
    parts = key if isinstance(key, tuple) else (key,)
    if not any(isinstance(k, (bool, _onp.bool_)) or
               (isinstance(k, _onp.ndarray) and k.dtype == _onp.bool_) for k in parts):
        return key
    size = int(_onp.prod(shape, dtype=_onp.int64))
    positions = _onp.arange(size, dtype=_onp.int64).reshape(shape)[_host_key(key)]
    if not shape:                    # a 0-d array: all of it, or nothing (None)
        return () if positions.size else None
    return _onp.unravel_index(positions, shape)


def _has_python_bool(key):
    parts = key if isinstance(key, tuple) else (key,)
    return any(isinstance(k, bool) for k in parts)


def _host_key(key):
    if isinstance(key, NDArray):
        k = key.asnumpy()
        return k if k.dtype == _onp.bool_ else k.astype(_onp.int64)
    if isinstance(key, tuple):
        return tuple(_host_key(k) for k in key)
    if isinstance(key, list):
        return [_host_key(k) for k in key]
    return key


class ndarray(NDArray):
    """An array with NumPy semantics on a device (``mx.np.ndarray``).

    Create one with ``mx.np.array``, ``mx.np.zeros`` and friends. Operations return
    at once and compute asynchronously; ``asnumpy()``, ``item()`` and
    ``npx.waitall()`` wait.
    """

    # MXNet registers the class under its public path, so type() prints and
    # pickles as ``mxnet.numpy.ndarray``.
    __module__ = 'mxnet.numpy'
    __slots__ = ()

    # --- NumPy-style properties and conversions --------------------------------
    @property
    def dtype(self):
        """The element type as a ``numpy.dtype``."""
        return self._dtype

    @property
    def T(self):
        """The array with its axes reversed (any rank)."""
        from . import manipulation
        return manipulation.transpose(self)

    @property
    def device(self):
        return self._ctx

    @property
    def grad(self):
        """The gradient buffer (None when none is attached or grad_req is 'null')."""
        ag = self._ag
        if ag is not None and getattr(ag[0], "grad_req", None) == "null":
            return None
        g = NDArray.grad.fget(self)
        return None if g is None else wrap(g)

    def item(self, *args):
        """The element as a Python scalar (``item()`` needs a one-element array)."""
        a = self.asnumpy()
        return a.item(*args)

    def as_nd_ndarray(self):
        """The same data as a classic ``mx.nd.NDArray``."""
        out = NDArray(self._chunk, self._shape, self._dtype, self._ctx, self._view)
        out._ag = self._ag
        return out

    def as_np_ndarray(self):
        return self

    def asnumpy(self):
        return NDArray.asnumpy(self)

    def __array__(self, dtype=None, copy=None):
        a = self.asnumpy()
        return a if dtype is None else a.astype(dtype, copy=False)

    def __array_function__(self, func, types, args, kwargs):
        from .dispatch import array_function
        return array_function(func, types, args, kwargs)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        from .dispatch import array_ufunc
        return array_ufunc(ufunc, method, inputs, kwargs)

    def __repr__(self):
        a = self.asnumpy()
        body = _onp.array2string(a, separator=", ", prefix="array(")
        extra = "" if self._dtype in (_FLOAT32, _BOOL) else f", dtype={self._dtype.name}"
        if a.size == 0:       # NumPy's form for an empty array: its shape (unless 1-d)
            if a.ndim != 1:   # and its dtype (bool too), float32 left out as always
                body += f", shape={a.shape}"
            if self._dtype == _BOOL:
                extra = ", dtype=bool"
        if self._ctx.device_type != "cpu":
            extra += f", ctx={self._ctx}"
        return f"array({body}{extra})"

    def __round__(self, ndigits=None):
        """``round(a, ndigits)``: mx.np.round of the array (an array, as in MXNet)."""
        from . import math as _math
        return _math.round(self, 0 if ndigits is None else ndigits)

    def __format__(self, spec):
        if self.ndim == 0:
            return format(self.asnumpy()[()], spec)
        if spec:
            raise TypeError("unsupported format string passed to mx.np.ndarray.__format__")
        return str(self)

    def __str__(self):
        return str(self.asnumpy())

    def __len__(self):
        if not self._shape:
            raise TypeError("len() of unsized object")
        return self._shape[0]

    def __bool__(self):
        if self.size == 1:
            return bool(self.asnumpy().reshape(-1)[0])
        if self.size == 0:
            return False
        raise ValueError("The truth value of an array with more than one element is "
                         "ambiguous. Use a.any() or a.all()")

    __hash__ = None          # NumPy arrays are unhashable

    # --- indexing -------------------------------------------------------------------
    def __getitem__(self, key):
        if key.__class__ is int and self._shape and not (self._ag is not None and
                                                         _is_recording()):
            n = self._shape[0]           # the common a[i]: row i, a view
            if not -n <= key < n:
                raise IndexError(f"index {key} is out of bounds for axis 0 with size {n}")
            return wrap(NDArray._as_view(self, self._shape[1:],
                                         (key % n) * (self.size // n if n else 0)))
        if _is_basic_key(key) and not (self._ag is not None and _is_recording()):
            plan = _basic_view_plan(self._shape, key)
            if plan is not None:            # one contiguous block: a view, as in NumPy
                return wrap(NDArray._as_view(self, plan[1], plan[0]))
        key = _bool_masks_to_host(key)
        if _has_python_bool(key):
            return self._take_positions(key)
        out = wrap(NDArray.__getitem__(self, key))
        if isinstance(out, NDArray):
            shape = _key_shape(self._shape, key)
            if out._shape != shape and out.size == _onp.prod(shape, dtype=int):
                from .manipulation import reshape
                out = reshape(out, shape)
        return out

    def _take_positions(self, key):
        """self[key] gathered by flat positions: NumPy resolves the key (a Python bool
        in it is a 0-d mask: True adds a length-1 axis, False a length-0 one) on a
        stand-in of positions, as MXNet does."""
        from .manipulation import reshape
        positions = _onp.arange(self.size, dtype=_onp.int64).reshape(self._shape)[
            _host_key(key)]
        flat = reshape(self, (-1,))
        return reshape(wrap(NDArray.__getitem__(flat, positions.reshape(-1))),
                       positions.shape)

    def __setitem__(self, key, value):
        masked = _masks_as_indices(_bool_masks_to_host(key), self._shape)
        if masked is None and key is not None:
            return                   # a mask that selects nothing of a 0-d array
        key = masked
        if isinstance(value, NDArray):
            value = value.as_nd_ndarray() if type(value) is ndarray else value
        NDArray.__setitem__(self, key, value)

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]

    # --- views and copies -------------------------------------------------------------
    def reshape(self, *shape, order="C"):
        """A view with a new shape (NumPy's rules: one -1 is inferred)."""
        from . import manipulation
        if order != "C":          # the method, unlike np.reshape, takes only 'C'
            raise NotImplementedError("mx.np.ndarray.reshape: only order='C' is supported")
        if len(shape) == 1 and isinstance(shape[0], (list, tuple)):
            shape = tuple(shape[0])
        return manipulation.reshape(self, shape, order)

    def _as_view(self, shape, offset_elems):
        return wrap(NDArray._as_view(self, shape, offset_elems))

    def copy(self, order="C"):
        if order != "C":
            raise NotImplementedError(f"mx.np.ndarray.copy: order={order!r} is not "
                                      "supported (only 'C')")
        return wrap(NDArray.copy(self))

    def copyto(self, other):
        return wrap(NDArray.copyto(self, other))

    def as_in_context(self, context):
        return wrap(NDArray.as_in_context(self, context))

    as_in_ctx = as_in_context
    to_device = as_in_context

    def astype(self, dtype, order="K", casting="unsafe", subok=True, copy=True):
        """A copy cast to dtype (this array when copy=False and dtype matches)."""
        if isinstance(dtype, str):    # a name no dtype has: TypeError, as in MXNet
            from ..base import MXNetError, dtype_np
            try:
                dtype_np(dtype)
            except MXNetError as err:
                raise TypeError(f"data type {dtype!r} not understood") from err
        return wrap(NDArray.astype(self, _onp.float32 if dtype is None else dtype, copy))

    def detach(self):
        return wrap(NDArray.detach(self))

    def flatten(self, order="C"):
        return self.reshape(-1)

    def ravel(self, order="C"):
        return self.reshape(-1)

    def squeeze(self, axis=None):
        from . import manipulation
        return manipulation.squeeze(self, axis)

    def transpose(self, *axes):
        from . import manipulation
        if len(axes) == 1 and (axes[0] is None or isinstance(axes[0], (list, tuple))):
            axes = None if axes[0] is None else tuple(axes[0])
        return manipulation.transpose(self, axes or None)

    def clip(self, min=None, max=None, out=None):  # noqa: A002
        """Same as ``mx.np.clip(self, min, max)``."""
        from . import math as _math
        return _math.clip(self, min, max, out)

    def swapaxes(self, axis1, axis2):
        from . import manipulation
        return manipulation.swapaxes(self, axis1, axis2)

    def tolist(self):
        return self.asnumpy().tolist()

    # --- NumPy-style methods over the mx.np functions ------------------------------
    # NumPy's rules, not the legacy NDArray methods' (which pad axes their own way)
    broadcast_to = OpMethods.broadcast_to
    broadcast_like = OpMethods.broadcast_like

    def _fluent_fn(self, name):
        from .. import numpy as mnp
        fn = getattr(mnp, name, None)
        if fn is None:
            raise AttributeError(f"mx.np.ndarray has no method {name!r}")
        return fn

    def _binary_op(self, other, op, scalar_op, reflect=False):
        from . import math as _math
        return _math.binary_from_operator(self, other, op, reflect)

    def _inplace(self, other, op, scalar_op):
        from . import math as _math
        if inplace_short(self, other, op, scalar_op):
            return self
        result = _math.binary_from_operator(self, other, op, False)
        if result._dtype != self._dtype:
            result = result.astype(self._dtype)
        self[...] = result
        return self

    def __matmul__(self, other):
        from . import math as _math
        return _math.matmul(self, other)

    def __rmatmul__(self, other):
        from . import math as _math
        return _math.matmul(other, self)

    def __floordiv__(self, other):
        from . import math as _math
        return _math.floor_divide(self, other)

    def __rfloordiv__(self, other):
        from . import math as _math
        return _math.floor_divide(other, self)

    def __neg__(self):
        from . import math as _math
        if self._dtype == _BOOL:      # -b of a bool array: int64 (MXNet 1.9.1)
            return _math.negative(self.astype(_onp.int64))
        return _math.negative(self)

    def __abs__(self):
        from . import math as _math
        return _math.absolute(self)

    def __invert__(self):
        from . import routines as _math
        return _math.invert(self)

    def __and__(self, other):
        from . import routines as _math
        return _math.bitwise_and(self, other)

    def __or__(self, other):
        from . import routines as _math
        return _math.bitwise_or(self, other)

    def __xor__(self, other):
        from . import routines as _math
        return _math.bitwise_xor(self, other)

    # in place, as MXNet 1.9.1 does (without these Python would rebind the name to a
    # new array and leave this one, and every alias of it, unchanged)
    def _bitwise_inplace(self, name, other):
        from . import routines as _math
        result = getattr(_math, name)(self, other)
        self[...] = result if result._dtype == self._dtype else result.astype(self._dtype)
        return self

    def __iand__(self, other):
        return self._bitwise_inplace("bitwise_and", other)

    def __ior__(self, other):
        return self._bitwise_inplace("bitwise_or", other)

    def __ixor__(self, other):
        return self._bitwise_inplace("bitwise_xor", other)


def _nd_as_np_ndarray(self):
    """An ``mx.np.ndarray`` sharing this array's data (and autograd entry)."""
    return as_np(self)


NDArray.as_np_ndarray = _nd_as_np_ndarray     # the np layer adds the conversion to nd
_nd_register.FAST_CLASSES.add(ndarray)        # mx.nd functions take np arrays directly
_nd_dispatch.SHORT_CLASSES.add(ndarray)        # np a + b takes nd's short path


def _arithmetic(name, op_name, scalar_name, reflect):
    """ndarray.<name> (``+``, ``*``...): two float arrays of one dtype, or a float array
    and a Python number, need no promotion, so nd mode's operator call gives mx.np's
    result (the common case, as cheap as nd mode); everything else takes NumPy's rules
    (math.binary_from_operator)."""
    def method(self, other):
        dt = self._dtype
        if dt is _FLOAT32 or dt.kind == "f":
            cls = other.__class__
            if (cls is ndarray and (other._dtype is dt or other._dtype == dt)) or \
                    cls is float or cls is int:
                # nd's own entry point, so np rides whatever fast path nd mode has
                out = _nd_binary(self, other, op_name, scalar_name, reflect)
                if out.__class__ is not ndarray:
                    out.__class__ = ndarray
                return out
        from . import math as _math
        return _math.binary_from_operator(self, other, op_name, reflect)
    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"``{name}`` with NumPy's broadcasting and dtype rules."
    return method


for _name, _op, _scalar, _reflect in (
        ("__add__", "broadcast_add", "_plus_scalar", False),
        ("__radd__", "broadcast_add", "_plus_scalar", True),
        ("__sub__", "broadcast_sub", "_minus_scalar", False),
        ("__rsub__", "broadcast_sub", "_rminus_scalar", True),
        ("__mul__", "broadcast_mul", "_mul_scalar", False),
        ("__rmul__", "broadcast_mul", "_mul_scalar", True),
        ("__truediv__", "broadcast_div", "_div_scalar", False),
        ("__rtruediv__", "broadcast_div", "_rdiv_scalar", True),
        ("__pow__", "broadcast_power", "_power_scalar", False),
        ("__rpow__", "broadcast_power", "_rpower_scalar", True)):
    setattr(ndarray, _name, _arithmetic(_name, _op, _scalar, _reflect))


def _method(name, module):
    def method(self, *args, **kwargs):
        from .. import numpy as mnp
        return getattr(getattr(mnp, module) if module else mnp, name)(self, *args, **kwargs)
    method.__name__ = name
    method.__doc__ = f"Same as ``mx.np.{name}(self, ...)``."
    return method


for _name in ("sum", "mean", "max", "min", "prod", "std", "var", "argmax", "argmin",
              "cumsum", "round", "any", "all", "dot", "repeat", "tile", "take",
              "nonzero", "sort", "argsort", "exp", "log", "sqrt", "abs", "sign", "square",
              "sin", "cos", "tanh", "expand_dims", "broadcast_to", "split", "flip",
              "diagonal", "trace"):
    setattr(ndarray, _name, _method(_name, None))
