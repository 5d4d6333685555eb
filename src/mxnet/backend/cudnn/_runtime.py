"""The process-wide cuDNN state: the library, CuPy, and one cudnnHandle per (thread,
device).

A handle is not safe to use from two threads at once, and the engine may run operators
on several worker threads, so each thread gets its own handle per device. Every call
binds the handle to CuPy's current stream first (``cudnnSetStream``), so cuDNN's work is
ordered with the CuPy kernels around it.
"""
import ctypes
import os
import threading
import warnings

from . import _lib as L

__all__ = ["try_runtime", "runtime", "load_error"]

_state = {"rt": None, "error": None, "tried": False, "warned": False}
_init_lock = threading.Lock()


class Runtime:
    """The loaded library (``lib``, ``path``, ``version``) and per-thread handles."""

    def __init__(self, lib, path, cupy):
        self.lib, self.path, self.cupy = lib, path, cupy
        self.version = int(lib.cudnnGetVersion())
        self._local = threading.local()

    def handle(self, device_id):
        """This thread's handle for ``device_id``, bound to CuPy's current stream."""
        local = self._local
        handles = getattr(local, "handles", None)
        if handles is None:
            handles = local.handles = {}
            local.streams = {}
        h = handles.get(device_id)
        if h is None:
            ptr = ctypes.c_void_p()
            with self.cupy.cuda.Device(device_id):
                L.check(self.lib, "cudnnCreate", self.lib.cudnnCreate(ctypes.byref(ptr)))
            h = handles[device_id] = ptr.value
        stream = self.cupy.cuda.get_current_stream().ptr
        # rebound only when the stream changed (a capture, a user's stream): the handle
        # is this thread's alone, so nothing else rebinds it in between
        if local.streams.get(device_id) != stream:
            L.check(self.lib, "cudnnSetStream", self.lib.cudnnSetStream(h, stream or None))
            local.streams[device_id] = stream
        return h


def _disabled():
    return os.environ.get("MXNET_CUDNN_ENABLED", "1").strip().lower() in ("0", "false",
                                                                          "off")


def try_runtime():
    """The Runtime, or None when cuDNN is off (MXNET_CUDNN_ENABLED=0), CuPy is missing or
    the library does not load (one RuntimeWarning says why; the operators' CuPy bodies
    run instead)."""
    rt = _state["rt"]
    if rt is not None or _state["tried"]:
        return rt
    with _init_lock:
        if _state["tried"]:
            return _state["rt"]
        try:
            if _disabled():
                raise OSError("cuDNN is turned off (MXNET_CUDNN_ENABLED=0)")
            try:
                import cupy
            except ImportError as err:
                raise OSError(f"CuPy is not importable ({err})") from err
            lib, path = L.load()
            _state["rt"] = Runtime(lib, path, cupy)
        except OSError as err:
            _state["error"] = str(err)
            if not _disabled():
                warnings.warn(f"pymxnet: {err}; GPU operators use their CuPy bodies "
                              "(slower).", RuntimeWarning, stacklevel=3)
        _state["tried"] = True
    return _state["rt"]


def runtime():
    """The Runtime; raises OSError when cuDNN is unavailable."""
    rt = try_runtime()
    if rt is None:
        raise OSError(_state["error"] or "cuDNN unavailable")
    return rt


def load_error():
    """Why cuDNN is unavailable (None when it loaded or was not tried yet)."""
    return _state["error"]
