"""GPUs emulated on the host, for testing what pymxnet does with GPU arrays.

What is emulated is CuPy's array contract, nothing else:

- each thread has a current device (``cupy.cuda.Device(k)`` as a context manager, or
  ``.use()``); a new array is made in the current device's memory;
- a kernel (a ufunc, an array function, an array method that computes) runs on the
  current device and refuses an operand that lives on another device (CuPy's
  ValueError "... must be same as the current device") or on the host: a NumPy array
  or a list among its operands is a TypeError ("Unsupported type"), and so is a NumPy
  array or list assigned into a device array;
- a device array is not a NumPy array: ``isinstance(a, numpy.ndarray)`` is False and
  ``numpy.asarray(a)`` raises TypeError ("Implicit conversion to a NumPy array is not
  allowed"); ``a.get()`` and ``cupy.asnumpy(a)`` copy to the host from any device;
  ``cupy.asarray``/``cupy.array`` take host data (and copy another device's array to
  the current one); reductions give 0-d device arrays, not NumPy scalars;
- ``a.data.copy_from_device_async`` copies memory from any device (CuPy's peer copy);
  events and the default stream exist as CuPy's: an event belongs to the device it
  was made on and is recorded only on that device's stream; the default stream
  (``get_current_stream()``, CuPy's ``Stream.null``) acts on whichever device is
  current at each call, and its waits are logged (``stream_waits()``);
- some of CuPy's own rules that NumPy lacks: ``cupy.tensordot`` refuses a 0-d operand
  unless ``axes`` is 0 or ``((), ())`` (ValueError "An input is zero-dim while axes has
  dimensions"), and ``cupy.argmax``/``argmin`` over several NaNs need not answer the
  first one (the emulation answers the last; the array methods stay NumPy's), and
  ``cupy.cumsum`` in float16 rounds as a parallel scan, not element after element;
  ``add.at`` (and ``cupyx.scatter_add``) with an integer-array index takes only CUDA
  atomicAdd's dtypes (int32, int64, uint32, uint64, float16, float32, float64; else
  TypeError "cupy.add.at only supports ..."); ``any``, ``all``, ``nonzero``,
  ``flatnonzero`` and ``argwhere`` take only a device array (a scalar or a host array
  is TypeError "'a' must be a cupy.ndarray object, ..."); ``cupyx.scipy.sparse``'s
  csr_matrix holds bool, float32, float64, complex64 and complex128 values only
  (ValueError "Only bool, float32, float64, complex64 and complex128 are supported").

Arrays are NumPy arrays inside a ``DeviceArray`` tagged with their device, so every
result can be checked against NumPy. A ``cupy.RawKernel`` runs its CUDA source compiled
for the host (g++, tests/cuda_on_host.py). Not emulated: the kernel table's 'gpu'
entries (hidden while emulating, so operators run their array-module bodies), the
kernels' arithmetic (a CUDA kernel may fuse a multiply and an add into one rounding,
as CuPy's linspace does, so a last bit can differ from NumPy's),
streams and events (work is synchronous: their ordering is not checked), memory pools,
CUDA graphs, cuDNN, and of cupyx.scipy all but csr_matrix times a dense array. A test
here checks placement, the host/device boundary and the numbers; the device's own
tests check the kernels.

    with emulated_gpus(2):
        a = mx.nd.ones((2, 3), ctx=mx.gpu(1))
        assert device_of(a) == 1
"""
import contextlib
import ctypes
import os
import pathlib
import sys
import tempfile
import threading
import types

import numpy as np

_local = threading.local()
_state = {"count": 0}


def current_device():
    return getattr(_local, "device", 0)


class DeviceMismatch(ValueError):
    """An operand on another device than the current one (CuPy's ValueError)."""


# --- checking and wrapping operands ------------------------------------------------------------
def _unwrap(obj, what, check=True):
    """obj with every DeviceArray replaced by its NumPy array; with ``check``, raise as
    CuPy's kernels do for an operand on another device or on the host."""
    if isinstance(obj, DeviceArray):
        if check and obj.device_id != current_device():
            raise DeviceMismatch(f"{what}: an operand is on device {obj.device_id} while "
                                 f"the current device is {current_device()}")
        return obj._a
    if isinstance(obj, _DeviceRng):
        if check and obj.device_id != current_device():
            raise DeviceMismatch(f"{what}: a generator of device {obj.device_id} used on "
                                 f"device {current_device()}")
        return obj._gen
    if isinstance(obj, np.ndarray):
        if check and obj.ndim > 0:
            raise TypeError(f"{what}: Unsupported type {type(obj)} (a host array among "
                            "device operands)")
        return obj
    if isinstance(obj, (list, tuple)):
        return type(obj)(_unwrap(x, what, check) for x in obj)
    if isinstance(obj, dict):
        return {k: _unwrap(v, what, check) for k, v in obj.items()}
    return obj


def _wrap(result, device=None):
    """A kernel's results live on the current device (``device``: a view's own)."""
    dev = current_device() if device is None else device
    if isinstance(result, np.ndarray):
        return DeviceArray(result, dev)
    if isinstance(result, np.generic):          # CuPy reductions give 0-d arrays
        return DeviceArray(np.asarray(result), dev)
    if isinstance(result, tuple):
        return tuple(_wrap(r, device) for r in result)
    if isinstance(result, list):
        return [_wrap(r, device) for r in result]
    return result


def _kernel(fn, what):
    def call(*args, **kwargs):
        return _wrap(fn(*_unwrap(args, what), **_unwrap(kwargs, what)))
    call.__name__ = getattr(fn, "__name__", what)
    return call


# methods that only describe or re-view the array (no kernel, any current device)
_VIEWS = frozenset(("reshape", "view", "transpose", "swapaxes", "squeeze", "diagonal"))
_HOST = frozenset(("item", "tolist", "tobytes", "__reduce__", "__reduce_ex__"))
_NOT_CUPY = frozenset(("ctypes", "__array_interface__", "__array_struct__", "tofile",
                       "itemset", "newbyteorder", "resize"))


_host_reads = []      # the open host_copies() logs


def _read_on_host(arr):
    """arr's values read by the host (a device-to-host copy, which waits for the
    device in CuPy), logged for host_copies()."""
    for log in _host_reads:
        log.append(arr.shape)
    return arr._a


class DeviceArray:
    """A NumPy array standing for a CuPy array in device ``device_id``'s memory."""
    __slots__ = ("_a", "device_id")
    __array_priority__ = 100

    def __init__(self, a, device_id):
        self._a = a
        self.device_id = device_id

    # --- what CuPy offers the host ----------------------------------------------------------
    def get(self, stream=None, order="C", out=None, blocking=True):
        host = np.array(_read_on_host(self), copy=True, order=order)
        if out is not None:
            out[...] = host
            return out
        return host

    def __array__(self, dtype=None, copy=None):
        raise TypeError("Implicit conversion to a NumPy array is not allowed. Please use "
                        "`.get()` to construct a NumPy array explicitly.")

    @property
    def device(self):
        return Device(self.device_id)

    @property
    def data(self):
        return _Pointer(self)

    shape = property(lambda self: self._a.shape)
    dtype = property(lambda self: self._a.dtype)
    ndim = property(lambda self: self._a.ndim)
    size = property(lambda self: self._a.size)
    strides = property(lambda self: self._a.strides)
    nbytes = property(lambda self: self._a.nbytes)
    itemsize = property(lambda self: self._a.itemsize)
    flags = property(lambda self: self._a.flags)
    base = property(lambda self: None if self._a.base is None else
                    DeviceArray(self._a.base, self.device_id))
    T = property(lambda self: DeviceArray(self._a.T, self.device_id))

    def __len__(self):
        return len(self._a)

    def __iter__(self):
        return (DeviceArray(r, self.device_id) if isinstance(r, np.ndarray) else
                _wrap(r, self.device_id) for r in self._a)

    def __bool__(self):
        return bool(_read_on_host(self))

    def __float__(self):
        return float(_read_on_host(self))

    def __int__(self):
        return int(_read_on_host(self))

    def __index__(self):
        return _read_on_host(self).__index__()

    def __complex__(self):
        return complex(_read_on_host(self))

    def __repr__(self):
        return f"DeviceArray(device={self.device_id}, {self._a!r})"

    __str__ = lambda self: str(self._a)  # noqa: E731

    # --- indexing -------------------------------------------------------------------------
    def __getitem__(self, key):
        k = _key(key)
        if _basic(k):                     # a view: no kernel
            return _wrap(self._a[k], self.device_id)
        _unwrap(self, "indexing")
        return _wrap(self._a[k])

    def __setitem__(self, key, value):
        if isinstance(value, (list, np.ndarray)) and np.ndim(value) > 0:
            raise TypeError(f"index assignment: Unsupported type {type(value)} (host data into a "
                            "device array)")
        _unwrap(self, "index assignment")
        self._a[_key(key)] = _unwrap(value, "index assignment")

    # --- NumPy's protocols (CuPy dispatches them to its own kernels) --------------------------
    def __array_ufunc__(self, ufunc, method, *inputs, out=None, **kwargs):
        what = f"{ufunc.__name__}.{method}" if method != "__call__" else ufunc.__name__
        for x in inputs:
            if isinstance(x, list):
                raise TypeError(f"{what}: Unsupported type {type(x)}")
        args = _unwrap(inputs, what)
        if out is not None:
            kwargs["out"] = _unwrap(out, what)
        result = getattr(ufunc, method)(*args, **kwargs)
        if out is not None:
            return out[0] if len(out) == 1 else out
        return _wrap(result)

    def __array_function__(self, func, types_, args, kwargs):
        if func.__name__ in _HOST_QUERIES:
            return func(*_unwrap(args, "", False), **_unwrap(kwargs, "", False))
        return _kernel(func, func.__name__)(*args, **kwargs)

    def __getattr__(self, name):
        if name in _NOT_CUPY:
            raise AttributeError(f"cupy.ndarray has no attribute {name!r}")
        attr = getattr(self._a, name)
        if not callable(attr):
            return _wrap(attr, self.device_id)
        if name in _VIEWS:
            return lambda *a, **k: _wrap(attr(*_unwrap(a, name, False),
                                              **_unwrap(k, name, False)), self.device_id)
        if name in _HOST:
            _read_on_host(self)
            return attr

        def method(*a, **k):
            _unwrap(self, name)
            return _wrap(attr(*_unwrap(a, name), **_unwrap(k, name)))
        return method


def _key(key):
    """An index for the wrapped array: device index arrays must be on the current
    device; host index arrays and lists are taken (CuPy copies them over)."""
    if isinstance(key, tuple):
        return tuple(_key(k) for k in key)
    if isinstance(key, DeviceArray):
        return _unwrap(key, "index")
    return key


def _basic(key):
    """Whether an index gives a view (ints, slices, Ellipsis, None)."""
    parts = key if isinstance(key, tuple) else (key,)
    return all(k is None or k is Ellipsis or isinstance(k, (slice, int, np.integer))
               and not isinstance(k, bool) for k in parts)


def _binary_dunder(ufunc, reflected=False, inplace=False):
    def op(self, other):
        if isinstance(other, list):
            raise TypeError(f"{ufunc.__name__}: Unsupported type {type(other)}")
        if inplace:
            return self.__array_ufunc__(ufunc, "__call__", self, other, out=(self,))
        args = (other, self) if reflected else (self, other)
        return self.__array_ufunc__(ufunc, "__call__", *args)
    return op


for _name, _uf in (("add", np.add), ("sub", np.subtract), ("mul", np.multiply),
                   ("truediv", np.true_divide), ("floordiv", np.floor_divide),
                   ("mod", np.remainder), ("pow", np.power), ("matmul", np.matmul),
                   ("and", np.bitwise_and), ("or", np.bitwise_or), ("xor", np.bitwise_xor),
                   ("lshift", np.left_shift), ("rshift", np.right_shift)):
    setattr(DeviceArray, f"__{_name}__", _binary_dunder(_uf))
    setattr(DeviceArray, f"__r{_name}__", _binary_dunder(_uf, reflected=True))
    setattr(DeviceArray, f"__i{_name}__", _binary_dunder(_uf, inplace=True))
for _name, _uf in (("lt", np.less), ("le", np.less_equal), ("eq", np.equal),
                   ("ne", np.not_equal), ("gt", np.greater), ("ge", np.greater_equal)):
    setattr(DeviceArray, f"__{_name}__", _binary_dunder(_uf))
for _name, _uf in (("neg", np.negative), ("pos", np.positive), ("abs", np.absolute),
                   ("invert", np.invert)):
    setattr(DeviceArray, f"__{_name}__",
            (lambda uf: lambda self: self.__array_ufunc__(uf, "__call__", self))(_uf))
DeviceArray.__hash__ = None

# answered on the host from the arrays' descriptors, on any device (no kernel)
_HOST_QUERIES = frozenset(("may_share_memory", "shares_memory", "shape", "ndim", "size",
                           "result_type", "can_cast", "min_scalar_type", "iscomplexobj",
                           "isrealobj", "isscalar"))


class Device:
    """cupy.cuda.Device: a context manager that makes device ``id`` current."""

    def __init__(self, device=None):
        self.id = current_device() if device is None else int(device)
        self._saved = []

    def __enter__(self):
        _check_id(self.id)
        self._saved.append(current_device())
        _local.device = self.id
        return self

    def __exit__(self, *exc):
        _local.device = self._saved.pop()

    def use(self):
        _check_id(self.id)
        _local.device = self.id

    def synchronize(self):
        pass

    def __eq__(self, other):
        return isinstance(other, Device) and other.id == self.id

    def __hash__(self):
        return hash(self.id)


class _Pointer:
    """cupy.cuda.MemoryPointer of an array: its address, its device, and CuPy's copy
    from another device's memory (cudaMemcpyDefault: peer to peer, any two devices)."""

    def __init__(self, owner):
        self._owner = owner
        self.ptr = owner._a.__array_interface__["data"][0]
        self.device_id = owner.device_id

    def copy_from_device_async(self, src, size, stream=None):
        dst_bytes = _contiguous_bytes(self._owner)
        dst_bytes[:size] = _contiguous_bytes(src._owner)[:size]


def _contiguous_bytes(arr):
    if not arr._a.flags.c_contiguous:
        raise ValueError("a memory copy needs C-contiguous memory")
    return arr._a.reshape(-1).view(np.uint8)


class _Event:
    """cupy.cuda.Event: made on the current device, and recordable only on a stream of
    that device (CUDA's rule; work is synchronous here, so every event has happened)."""

    def __init__(self, block=False, disable_timing=False, interprocess=False):
        self.made_on = current_device()
        self.device_id = None

    def record(self, stream=None):
        device = _stream_device(stream)
        if device != self.made_on:
            raise RuntimeError("cudaErrorInvalidResourceHandle: an event made on device "
                               f"{self.made_on} recorded on a stream of device {device}")
        self.device_id = device

    def synchronize(self):
        pass

    done = property(lambda self: True)


def _stream_device(stream):
    """The device a stream call acts on: the default stream (CuPy's ``Stream.null``,
    handle 0) is the legacy stream of whichever device is current at the call."""
    if stream is None or stream.device_id == -1:
        return current_device()
    return stream.device_id


class _Stream:
    """CuPy's default stream, ``Stream.null`` (what cupy.cuda.get_current_stream()
    returns unless a stream was made current): one object for every device, handle 0,
    device_id -1, so each call on it acts on the device current at that call. Waits
    are logged (``stream_waits()``) as (device that waits, device of the event)."""
    device_id = -1
    ptr = 0

    def wait_event(self, event):
        if event.device_id is None:
            raise RuntimeError("wait_event: the event was never recorded")
        _state.setdefault("waits", []).append((current_device(), event.device_id))

    def synchronize(self):
        pass


_NULL_STREAM = _Stream()


def stream_waits():
    """(waiting device, event's device) of every stream wait since the emulation began."""
    return list(_state.get("waits", []))


def _check_id(i):
    if not 0 <= i < _state["count"]:
        raise RuntimeError(f"cudaErrorInvalidDevice: device {i} of {_state['count']}")


class _DeviceRng:
    """A generator whose state lives on the device that was current when it was made
    (as CuPy's): it draws there, and refuses to draw for another device."""

    def __init__(self, gen):
        self._gen = gen
        self.device_id = current_device()

    def __getattr__(self, name):
        fn = getattr(self._gen, name)
        if not callable(fn):
            return fn

        def draw(*a, **k):
            _unwrap(self, f"Generator.{name}")
            return _wrap(fn(*_unwrap(a, name), **_unwrap(k, name)))
        return draw


# --- the cupy module --------------------------------------------------------------------------
def _to_device(obj):
    """cupy.asarray/array's input: host data as it is, another device's array copied."""
    if isinstance(obj, DeviceArray):
        return obj._a
    if isinstance(obj, (list, tuple)):
        return type(obj)(_to_device(x) for x in obj)
    return obj


def _transfer(fn):
    def make(obj, *args, **kwargs):
        return _wrap(np.array(fn(_to_device(obj), *args, **kwargs), copy=True))
    make.__name__ = fn.__name__
    return make


# CuPy's add.at (and cupyx.scatter_add) with an integer-array index: CUDA atomicAdd's
# dtypes only (cupy/_core/_routines_indexing.pyx, _scatter_op_single)
_ADD_AT_TYPES = frozenset(np.dtype(t) for t in ("int32", "int64", "float16", "float32",
                                                "float64", "uint32", "uint64"))


def _check_add_at(a, indices):
    """Raise as CuPy's add.at does for a dtype atomicAdd lacks. CuPy checks it when the
    index holds an integer array (a lone boolean mask, or basic indices, go by
    elementwise kernels that take any dtype)."""
    parts = indices if isinstance(indices, tuple) else (indices,)
    arrays = [np.asarray(_unwrap(k, "add.at", False)) for k in parts
              if isinstance(k, (DeviceArray, np.ndarray, list))]
    if not arrays or (len(arrays) == 1 and arrays[0].dtype == np.bool_):
        return
    if np.dtype(a.dtype) not in _ADD_AT_TYPES:
        raise TypeError("cupy.add.at only supports int32, int64, float16, float32, "
                        "float64, uint32, uint64 as data type")


class _Ufunc:
    """A ufunc whose calls and methods (reduce, at, ...) are kernels."""

    def __init__(self, uf):
        self._uf = uf

    def __call__(self, *args, **kwargs):
        return _kernel(self._uf, self._uf.__name__)(*args, **kwargs)

    def __getattr__(self, name):
        attr = getattr(self._uf, name)
        if callable(attr):
            kernel = _kernel(attr, f"{self._uf.__name__}.{name}")
            if self._uf is np.add and name == "at":
                def add_at(a, indices, b=None):
                    _check_add_at(a, indices)
                    return kernel(a, indices, b)
                return add_at
            return kernel
        return attr


class _Module(types.ModuleType):
    """numpy (or one of its submodules) with every function turned into a kernel."""

    def __init__(self, inner, name="cupy"):
        super().__init__(name)
        self._inner = inner

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        v = getattr(self._inner, name)
        if isinstance(v, np.ufunc):
            v = _Ufunc(v)
        elif isinstance(v, types.ModuleType):
            v = _Module(v, f"{self.__name__}.{name}")
        elif callable(v) and not isinstance(v, type):
            v = _kernel(v, name)
        setattr(self, name, v)
        return v


def _asnumpy(a, stream=None, order="C", out=None, blocking=True):
    if isinstance(a, DeviceArray):
        return a.get(out=out)
    return np.asarray(a)


# CuPy functions that take a device array only (cupy._util.check_array): a scalar, a
# NumPy array or a list is a TypeError, where NumPy would take it
_ARRAY_ONLY = ("any", "all", "nonzero", "flatnonzero", "argwhere")


def _array_only(name):
    kernel = _kernel(getattr(np, name), name)

    def call(a, *args, **kwargs):
        if not isinstance(a, DeviceArray):
            raise TypeError(f"'a' must be a cupy.ndarray object, not {type(a)}.")
        return kernel(a, *args, **kwargs)
    call.__name__ = name
    return call


def _tensordot(a, b, axes=2):
    """cupy.tensordot, which refuses a 0-d operand unless ``axes`` is 0 or ``((), ())``
    (cupy/linalg/_product.py: even ``([], [])`` is refused)."""
    if np.ndim(_unwrap(a, "tensordot")) == 0 or np.ndim(_unwrap(b, "tensordot")) == 0:
        if axes != 0 and axes != ((), ()):
            raise ValueError("An input is zero-dim while axes has dimensions")
    return _kernel(np.tensordot, "tensordot")(a, b, axes=axes)


def _arg_reduction(fn):
    """cupy.argmax/argmin: with several NaNs along the axis, CuPy's parallel reduction
    answers with one of them, not necessarily the first (its float combiner keeps
    either NaN operand, whichever the reduction tree puts first;
    cupy/_core/_routines_statistics.pyx, my_argmax_float); NumPy answers the first.
    The emulation answers the last, so code that needs the first is caught."""
    def call(a, axis=None, out=None, *, keepdims=False, **kwargs):
        x = _unwrap(a, fn.__name__)
        idx = np.asarray(fn(x, axis=axis, keepdims=keepdims, **kwargs))
        if x.dtype.kind in "fc" and x.size:
            nan = np.isnan(x)
            flat = nan.reshape(-1) if axis is None else nan
            ax = 0 if axis is None else axis
            last = flat.shape[ax] - 1 - np.argmax(np.flip(flat, ax), axis=ax,
                                                  keepdims=keepdims and axis is not None)
            idx = np.where(np.any(flat, axis=ax, keepdims=keepdims and axis is not None),
                           last, idx).reshape(idx.shape)
        res = _wrap(idx)
        if out is not None:
            out[...] = res
            return out
        return res
    call.__name__ = fn.__name__
    return call


def _cumsum(a, axis=None, dtype=None, out=None):
    """cupy.cumsum: in float16 CuPy scans in parallel, adding by doubling strides
    (Hillis-Steele, each step rounded to float16: the order of its per-warp scan,
    cupy/_core/_routines_math.pyx, _cupy_scan_naive), not one element after another as
    NumPy does, so the roundings differ; other dtypes are NumPy's."""
    x = _unwrap(a, "cumsum")
    res_dtype = np.cumsum(x[:0] if x.ndim else x.reshape(1)[:0], dtype=dtype).dtype
    if res_dtype != np.float16:
        return _kernel(np.cumsum, "cumsum")(a, axis=axis, dtype=dtype, out=out)
    if axis is None:
        x, axis = x.reshape(-1), 0
    y = np.moveaxis(x.astype(np.float16), axis, 0).copy()
    step = 1
    while step < y.shape[0]:
        y[step:] = y[step:] + y[:-step]         # both sides read before the write
        step *= 2
    res = _wrap(np.ascontiguousarray(np.moveaxis(y, 0, axis)))
    if out is not None:
        out[...] = res
        return out
    return res


class _RawKernel:
    """CuPy's ``RawKernel(source, name)``: the CUDA source compiled for the host by g++
    (tests/cuda_on_host.py; skipped without it) and run on the device arrays' NumPy
    memory, every thread in turn. pymxnet's generated kernels that the emulation does
    not switch off (backend.half_scan's float16 cumsum) run so."""
    _host = None          # one HostKernels (and temporary folder) for the process
    _folder = None

    def __init__(self, source, name):
        self.source, self.name, self._kernel = source, name, None

    def __call__(self, grid, block, args):
        if self._kernel is None:
            from cuda_on_host import HostKernels
            if _RawKernel._host is None:
                _RawKernel._folder = tempfile.TemporaryDirectory(  # removed at exit
                    prefix="emulated_raw_kernels_")
                _RawKernel._host = HostKernels(pathlib.Path(_RawKernel._folder.name))
            self._kernel = _RawKernel._host(None, (self.name, self.source),
                                            lambda: (self.name, self.source))
        self._kernel(grid, block, [_unwrap(a, self.name) for a in args])


def _make_module():
    mod = _Module(np)
    mod.tensordot = _tensordot
    mod.cumsum = _cumsum
    mod.argmax = _arg_reduction(np.argmax)
    mod.argmin = _arg_reduction(np.argmin)
    mod.ndarray = DeviceArray
    mod.RawKernel = _RawKernel
    for name in _ARRAY_ONLY:
        setattr(mod, name, _array_only(name))
    for name in ("array", "asarray", "ascontiguousarray", "asanyarray"):
        setattr(mod, name, _transfer(getattr(np, name)))
    mod.asnumpy = _asnumpy
    mod.get_array_module = lambda *args: mod if any(
        isinstance(a, DeviceArray) for a in args) else np
    mod.random = types.SimpleNamespace(
        XORWOW=lambda seed=None: seed,
        Generator=lambda seed=None: _DeviceRng(np.random.default_rng(seed)),
        default_rng=lambda seed=None: _DeviceRng(np.random.default_rng(seed)))
    pool = types.SimpleNamespace(free_all_blocks=lambda: None, used_bytes=lambda: 0,
                                 total_bytes=lambda: 0)
    mod.get_default_memory_pool = lambda: pool
    mod.get_default_pinned_memory_pool = lambda: pool
    runtime = types.SimpleNamespace(
        getDevice=current_device, getDeviceCount=lambda: _state["count"],
        memGetInfo=lambda: (1 << 30, 1 << 31), runtimeGetVersion=lambda: 0,
        # cudaMemcpyAsync between raw addresses (device arrays' are their NumPy
        # memory): synchronous here, as all work is
        memcpyAsync=lambda dst, src, size, kind, stream: ctypes.memmove(dst, src, size),
        memcpyHostToHost=0, memcpyHostToDevice=1, memcpyDeviceToHost=2,
        memcpyDeviceToDevice=3, memcpyDefault=4)
    mod.cuda = types.SimpleNamespace(Device=Device, runtime=runtime, Event=_Event,
                                     get_current_stream=lambda device_id=-1: _NULL_STREAM,
                                     # a page-locked staging buffer: host memory here
                                     alloc_pinned_memory=lambda nbytes: bytearray(nbytes))
    return mod


def _make_cupyx():
    cupyx = types.ModuleType("cupyx")

    def scatter_add(a, slices, value):
        _unwrap((a, slices, value), "scatter_add")
        _check_add_at(a, slices)
        np.add.at(a._a, _unwrap(slices, "scatter_add"), _unwrap(value, "scatter_add"))
    cupyx.scatter_add = scatter_add
    cupyx.empty_pinned = lambda shape, dtype=float: np.empty(shape, dtype)
    cupyx.scipy = types.ModuleType("cupyx.scipy")
    cupyx.scipy.sparse = types.ModuleType("cupyx.scipy.sparse")
    cupyx.scipy.sparse.csr_matrix = _CsrMatrix
    return cupyx


class _CsrMatrix:
    """cupyx.scipy.sparse.csr_matrix from (data, indices, indptr) device arrays of the
    current device (values of CuPy's sparse dtypes only: bool, float32, float64,
    complex64, complex128); ``@`` a dense device array gives a dense device array."""

    def __init__(self, arg, shape=None):
        import scipy.sparse
        data, indices, indptr = _unwrap(tuple(arg), "csr_matrix")
        if data.dtype.char not in "?fdFD":
            raise ValueError("Only bool, float32, float64, complex64 and complex128 "
                             "are supported")
        self.device_id = current_device()
        self._m = scipy.sparse.csr_matrix((data, indices, indptr), shape=shape)
        self.shape = self._m.shape

    def __matmul__(self, other):
        if self.device_id != current_device():
            raise DeviceMismatch("csr_matrix @: the matrix is on another device")
        return _wrap(np.asarray(self._m @ _unwrap(other, "csr_matrix @")))


def device_of(x):
    """The emulated device of an NDArray's memory (waits for it), or of a raw array."""
    if hasattr(x, "wait_to_read"):
        x.wait_to_read()
        x = x._data
    return getattr(x, "device_id", None)


@contextlib.contextmanager
def host_copies():
    """The shapes of the device arrays read by the host inside the block, in order:
    ``get``, ``cupy.asnumpy``, ``float()``/``int()``/``bool()`` of an array, ``item``,
    ``tolist`` (each one, on a real GPU, waits for the device)."""
    shapes = []
    _host_reads.append(shapes)
    try:
        yield shapes
    finally:
        _host_reads.remove(shapes)


_EMULATED_MODULES = ("cupy", "cupyx", "cupyx.scipy", "cupyx.scipy.sparse")
_GENERATED_KERNEL_SWITCHES = ("MXNET_GPU_RNN_FUSED_CELLS", "MXNET_GPU_FUSED_DROPOUT")


@contextlib.contextmanager
def emulated_gpus(count):
    """pymxnet sees ``count`` GPUs whose arrays are DeviceArrays, for the block
    (``import cupy`` and ``import cupyx`` give the emulation too)."""
    from mxnet import backend
    from mxnet.ndarray import dispatch
    from mxnet.operator import runner
    saved = (backend._cupy, backend._cupy_checked, set(backend._used_devices))
    # (an emulation entered inside another one, as the conformance step's process-wide
    # one: leaving it gives the outer one its GPUs back)
    saved_count, saved_device = _state["count"], getattr(_local, "device", 0)
    # the imperative calls' cached operator contexts hold the array module they were
    # made with: each emulation's calls must get its own module
    dispatch._fwd_ctx.clear()
    saved_modules = {k: sys.modules.get(k) for k in _EMULATED_MODULES}
    # pymxnet's generated kernels that operator bodies call directly (not through the
    # kernel table) are turned off: their bodies run instead
    saved_env = {k: os.environ.get(k) for k in _GENERATED_KERNEL_SWITCHES}
    os.environ.update({k: "0" for k in _GENERATED_KERNEL_SWITCHES})
    kernels = runner._KERNELS
    hidden = {k: kernels.pop(k) for k in [k for k in kernels if k[1] == "gpu"]}
    _state["count"] = count
    _state["waits"] = []
    mod = _make_module()
    backend._cupy, backend._cupy_checked = mod, True
    cupyx = _make_cupyx()
    sys.modules.update({"cupy": mod, "cupyx": cupyx, "cupyx.scipy": cupyx.scipy,
                        "cupyx.scipy.sparse": cupyx.scipy.sparse})
    _local.device = 0
    try:
        yield mod
    finally:
        import mxnet as mx
        try:
            mx.nd.waitall()
        except Exception:  # noqa: BLE001  (a test's failure is reported by the test)
            pass
        backend._cupy, backend._cupy_checked = saved[0], saved[1]
        dispatch._fwd_ctx.clear()
        backend._used_devices.clear()
        backend._used_devices.update(saved[2])
        for k, v in saved_modules.items():
            if v is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = v
        kernels.update(hidden)
        for k, v in saved_env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        _state["count"] = saved_count
        _local.device = saved_device
