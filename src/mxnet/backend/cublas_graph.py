"""A GEMM that can be recorded into a CUDA graph.

CuPy refuses every cuBLAS call while a stream is being captured ("calling cuBLAS API
during stream capture is currently unsupported"), although cuBLAS itself supports
capture given a fixed workspace. So while a CachedOp graph is recorded
(``executor.cuda_graph.capturing()``), 2-D products go through our own cuBLAS handle,
called with ctypes on the libcublas CuPy has loaded: the handle and a workspace are
made before the capture starts (``prepare``), and every call binds the handle to
CuPy's current stream. Outside captures the ordinary ``cupy.matmul`` runs, so this path
only ever changes how captured graphs compute, with the same math (no TF32 for float32,
float32 accumulation for float16, as CuPy's matmul).
"""
import ctypes
import glob
import os
import threading

import numpy as np

__all__ = ["prepare", "matmul", "available", "capturing", "capture_flag"]

_OP_N, _OP_T = 0, 1
_R_32F, _R_64F, _R_16F, _R_16BF = 0, 1, 2, 14
_COMPUTE_32F, _COMPUTE_64F = 68, 70
_GEMM_DEFAULT = -1
_WORKSPACE = 32 << 20

_state = {"lib": None, "error": None}
_lock = threading.Lock()
_local = threading.local()
_ONE_F, _ZERO_F = ctypes.c_float(1.0), ctypes.c_float(0.0)
_ONE_D, _ZERO_D = ctypes.c_double(1.0), ctypes.c_double(0.0)
_F = (ctypes.addressof(_ONE_F), ctypes.addressof(_ZERO_F))
_D = (ctypes.addressof(_ONE_D), ctypes.addressof(_ZERO_D))
_capture = threading.local()


def capturing():
    """True on a thread that is recording a CUDA graph (executor/cuda_graph.py)."""
    return getattr(_capture, "on", False)


def capture_flag(on):
    """Set this thread's capturing flag; returns the previous value."""
    prev = getattr(_capture, "on", False)
    _capture.on = bool(on)
    return prev


def _types(dtype):
    """(cudaDataType, computeType, alpha pointer, beta pointer) or None."""
    dt = np.dtype(dtype)
    if dt == np.float32:
        return (_R_32F, _COMPUTE_32F) + _F
    if dt == np.float64:
        return (_R_64F, _COMPUTE_64F) + _D
    if dt == np.float16:
        return (_R_16F, _COMPUTE_32F) + _F
    if dt.name == "bfloat16":
        return (_R_16BF, _COMPUTE_32F) + _F
    return None


def _loaded_paths():
    """libcublas files mapped into this process (the one CuPy uses)."""
    try:
        with open("/proc/self/maps") as f:
            paths = {line.split()[-1] for line in f if "libcublas.so" in line}
    except OSError:
        return []
    return sorted(p for p in paths if "libcublasLt" not in os.path.basename(p))


def _candidates():
    try:
        import cupy_backends.cuda.libs.cublas  # noqa: F401  (loads CuPy's libcublas)
    except Exception:  # noqa: BLE001
        pass
    out = _loaded_paths()
    try:
        import importlib.util
        spec = importlib.util.find_spec("nvidia")
        for d in (spec.submodule_search_locations or ()) if spec else ():
            out += sorted(glob.glob(os.path.join(d, "*", "lib", "libcublas.so*")))
    except (ImportError, ValueError):
        pass
    return out + ["libcublas.so.13", "libcublas.so.12", "libcublas.so"]


def _bind(lib):
    p, i, sz = ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t
    lib.cublasCreate_v2.argtypes = [ctypes.POINTER(p)]
    lib.cublasSetStream_v2.argtypes = [p, p]
    lib.cublasGemmEx.argtypes = [p, i, i, i, i, i, p, p, i, i, p, i, i, p, p, i, i, i, i]
    for fn in (lib.cublasCreate_v2, lib.cublasSetStream_v2, lib.cublasGemmEx):
        fn.restype = i
    ws = getattr(lib, "cublasSetWorkspace_v2", None)
    if ws is not None:
        ws.argtypes, ws.restype = [p, p, sz], i
    return lib


def _library():
    if _state["lib"] is not None or _state["error"] is not None:
        return _state["lib"]
    with _lock:
        if _state["lib"] is None and _state["error"] is None:
            errors = []
            for cand in _candidates():
                try:
                    _state["lib"] = _bind(ctypes.CDLL(cand))
                    break
                except (OSError, AttributeError) as err:
                    errors.append(f"{cand}: {err}")
            else:
                _state["error"] = "; ".join(errors) or "libcublas not found"
    return _state["lib"]


def available():
    """Whether libcublas could be loaded."""
    return _library() is not None


def _check(status, what):
    if status != 0:
        raise RuntimeError(f"cuBLAS {what} failed (status {status})")


def prepare(device_id):
    """Create this thread's handle and workspace for ``device_id`` (outside a
    capture: both allocate device memory). Returns the handle, or None."""
    lib = _library()
    if lib is None:
        return None
    handles = getattr(_local, "handles", None)
    if handles is None:
        handles = _local.handles = {}
    h = handles.get(device_id)
    if h is None:
        import cupy as cp
        with cp.cuda.Device(device_id):
            ptr = ctypes.c_void_p()
            _check(lib.cublasCreate_v2(ctypes.byref(ptr)), "cublasCreate")
            ws = cp.empty(_WORKSPACE, dtype=cp.uint8)
            set_ws = getattr(lib, "cublasSetWorkspace_v2", None)
            if set_ws is not None:
                _check(set_ws(ptr, ctypes.c_void_p(ws.data.ptr), _WORKSPACE),
                       "cublasSetWorkspace")
        h = handles[device_id] = (ptr.value, ws)      # the workspace lives as long
    return h[0]


def _layout(a):
    """(transpose flag, leading dimension) of a 2-D array as cuBLAS's column-major
    operand holding a's transpose, or None when a is not contiguous either way."""
    if a.flags.c_contiguous:
        return _OP_N, max(1, a.shape[1])
    if a.flags.f_contiguous:
        return _OP_T, max(1, a.shape[0])
    return None


def _span(a):
    s = a.data.ptr
    return s, s + a.nbytes


def matmul(a, b, out=None):
    """``a @ b`` for 2-D CuPy arrays of one float dtype, into ``out`` when given
    (C-contiguous, not overlapping a or b); NotImplemented for anything else."""
    if a.ndim != 2 or b.ndim != 2 or a.dtype != b.dtype or a.shape[1] != b.shape[0]:
        return NotImplemented
    types = _types(a.dtype)
    m, k = a.shape
    n = b.shape[1]
    if types is None or min(m, n, k) <= 0 or max(m, n, k) >= 2 ** 31:
        return NotImplemented
    la, lb = _layout(a), _layout(b)
    if la is None or lb is None:
        return NotImplemented
    import cupy as cp
    if out is None:
        out = cp.empty((m, n), a.dtype)
    elif out.shape != (m, n) or out.dtype != a.dtype or not out.flags.c_contiguous:
        return NotImplemented
    else:
        s, e = _span(out)
        for x in (a, b):
            xs, xe = _span(x)
            if s < xe and xs < e:
                return NotImplemented
    h = prepare(out.device.id)
    if h is None:
        return NotImplemented
    lib = _state["lib"]
    _check(lib.cublasSetStream_v2(h, cp.cuda.get_current_stream().ptr or None),
           "cublasSetStream")
    dtype, compute, alpha, beta = types
    # row-major C = A @ B is column-major C^T = B^T @ A^T: b is cuBLAS's first operand
    _check(lib.cublasGemmEx(h, lb[0], la[0], n, m, k, alpha, b.data.ptr, dtype, lb[1],
                            a.data.ptr, dtype, la[1], beta, out.data.ptr, dtype, n,
                            compute, _GEMM_DEFAULT), "cublasGemmEx")
    return out
