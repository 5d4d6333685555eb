"""Several GPUs emulated on the host, for testing where pymxnet puts GPU work.

What is emulated is CuPy's device rule, nothing else: each thread has a current device
(``cupy.cuda.Device(k)`` as a context manager, or ``.use()``); a new array is made in
the current device's memory; a kernel (a ufunc, an array function) runs on the current
device and refuses an operand that lives on another one (CuPy raises ValueError
"... must be same as the current device"); ``get()`` copies to the host from any
device. Arrays are NumPy arrays tagged with their device (``DeviceArray``), so every
result can be checked against NumPy.

Not emulated: kernels (the kernel table's 'gpu' entries are hidden while emulating, so
operators run their array-module bodies), streams (work is synchronous), memory pools,
CUDA graphs, cuDNN. A multi-GPU test here checks placement and the numbers; the
device's own tests check the kernels.

    with emulated_gpus(2):
        a = mx.nd.ones((2, 3), ctx=mx.gpu(1))
        assert device_of(a) == 1
"""
import contextlib
import threading
import types

import numpy as np

_local = threading.local()


def current_device():
    return getattr(_local, "device", 0)


class DeviceMismatch(ValueError):
    """An operand on another device than the current one (CuPy's ValueError)."""


class DeviceArray(np.ndarray):
    """A NumPy array standing for a CuPy array in device ``device_id``'s memory."""

    def __array_finalize__(self, obj):
        self.device_id = getattr(obj, "device_id", current_device())

    @property
    def device(self):
        return Device(self.device_id)

    def get(self, stream=None, out=None):
        host = np.array(self.view(np.ndarray), copy=True)
        if out is not None:
            out[...] = host
            return out
        return host

    def __array_ufunc__(self, ufunc, method, *inputs, out=None, **kwargs):
        _check_operands(ufunc.__name__, inputs + (out or ()))
        plain = [_plain(x) for x in inputs]
        if out is not None:
            kwargs["out"] = tuple(_plain(o) for o in out)
        result = getattr(ufunc, method)(*plain, **kwargs)
        if out is not None:
            return out[0] if len(out) == 1 else out
        return _tag(result)

    def __array_function__(self, func, types_, args, kwargs):
        if func.__name__ not in _HOST_QUERIES:
            _check_operands(func.__name__, _leaves(args) + _leaves(kwargs))
        result = func(*_unwrap(args), **_unwrap(kwargs))
        return _tag(result)

    def __reduce_ex__(self, protocol):       # pickled as a host array
        return np.ndarray.__reduce_ex__(self.view(np.ndarray), protocol)


# answered on the host from the arrays' descriptors, on any device (no kernel)
_HOST_QUERIES = frozenset(("may_share_memory", "shares_memory", "shape", "ndim", "size",
                           "result_type", "can_cast", "min_scalar_type"))


def _plain(x):
    return x.view(np.ndarray) if isinstance(x, DeviceArray) else x


def _unwrap(obj):
    if isinstance(obj, DeviceArray):
        return obj.view(np.ndarray)
    if isinstance(obj, (list, tuple)):
        return type(obj)(_unwrap(x) for x in obj)
    if isinstance(obj, dict):
        return {k: _unwrap(v) for k, v in obj.items()}
    return obj


def _leaves(obj):
    if isinstance(obj, DeviceArray):
        return (obj,)
    if isinstance(obj, (list, tuple)):
        return tuple(y for x in obj for y in _leaves(x))
    if isinstance(obj, dict):
        return tuple(y for x in obj.values() for y in _leaves(x))
    return ()


def _check_operands(what, operands):
    cur = current_device()
    for x in operands:
        if isinstance(x, (DeviceArray, _DeviceRng)):
            if x.device_id != cur:
                raise DeviceMismatch(f"{what}: an operand is on device {x.device_id} while "
                                     f"the current device is {cur}")
        elif isinstance(x, np.ndarray) and x.ndim > 0:
            # CuPy takes no host array into a kernel ("Unsupported type numpy.ndarray")
            raise TypeError(f"{what}: a host (NumPy) array among device operands")


def _tag(result):
    """Results of a kernel live on the current device."""
    if isinstance(result, np.ndarray):
        out = result.view(DeviceArray)
        out.device_id = current_device()
        return out
    if isinstance(result, tuple):
        return tuple(_tag(r) for r in result)
    if isinstance(result, list):
        return [_tag(r) for r in result]
    return result


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


def _check_id(i):
    if not 0 <= i < _state["count"]:
        raise RuntimeError(f"cudaErrorInvalidDevice: device {i} of {_state['count']}")


_state = {"count": 0}


def _creation(fn):
    def make(*args, **kwargs):
        return _tag(fn(*_unwrap(args), **_unwrap(kwargs)))
    make.__name__ = fn.__name__
    return make


def _copy_here(fn):
    """asarray/array: an operand from another device is copied to the current one
    (CuPy copies between devices here)."""
    def make(obj, *args, **kwargs):
        if isinstance(obj, DeviceArray):
            obj = obj.view(np.ndarray)
        return _tag(np.array(fn(obj, *args, **kwargs), copy=True))
    make.__name__ = fn.__name__
    return make


_CREATION = ("empty", "zeros", "ones", "full", "arange", "eye", "identity", "linspace",
             "logspace", "empty_like", "zeros_like", "ones_like", "full_like", "frombuffer",
             "fromiter", "tri", "indices", "meshgrid")


def _make_module():
    mod = types.ModuleType("emulated_cupy")
    for name in dir(np):
        if not name.startswith("__"):
            setattr(mod, name, getattr(np, name))
    for name in _CREATION:
        setattr(mod, name, _creation(getattr(np, name)))
    for name in ("array", "asarray", "ascontiguousarray", "asanyarray"):
        setattr(mod, name, _copy_here(getattr(np, name)))
    mod.ndarray = DeviceArray
    mod.asnumpy = lambda a, stream=None, out=None: (a.get(out=out) if isinstance(
        a, DeviceArray) else np.asarray(a))
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
        memGetInfo=lambda: (1 << 30, 1 << 31), runtimeGetVersion=lambda: 0)
    mod.cuda = types.SimpleNamespace(Device=Device, runtime=runtime)
    return mod


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
            _check_operands(f"Generator.{name}", (self,) + _leaves(a) + _leaves(k))
            return _tag(fn(*_unwrap(a), **_unwrap(k)))
        return draw


def device_of(x):
    """The emulated device of an NDArray's memory (waits for it), or of a raw array."""
    data = x._data if hasattr(x, "_data") else x
    if hasattr(x, "wait_to_read"):
        x.wait_to_read()
        data = x._data
    return getattr(data, "device_id", None)


@contextlib.contextmanager
def emulated_gpus(count):
    """pymxnet sees ``count`` GPUs whose arrays are DeviceArrays, for the block."""
    from mxnet import backend
    from mxnet.operator import runner
    saved = (backend._cupy, backend._cupy_checked, set(backend._used_devices))
    kernels = runner._KERNELS
    hidden = {k: kernels.pop(k) for k in [k for k in kernels if k[1] == "gpu"]}
    _state["count"] = count
    backend._cupy, backend._cupy_checked = _make_module(), True
    _local.device = 0
    try:
        yield backend._cupy
    finally:
        import mxnet as mx
        try:
            mx.nd.waitall()
        except Exception:  # noqa: BLE001  (a test's failure is reported by the test)
            pass
        backend._cupy, backend._cupy_checked = saved[0], saved[1]
        backend._used_devices.clear()
        backend._used_devices.update(saved[2])
        kernels.update(hidden)
        _state["count"] = 0
        _local.device = 0
