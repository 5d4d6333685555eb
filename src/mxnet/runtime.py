"""mx.runtime: which features this pymxnet can use, under MXNet 1.9.1's feature names.

MXNet reports the options its library was compiled with. pymxnet has no compiled
library, so each feature is answered by looking at what is really usable now: the CPU's
instruction set (from /proc/cpuinfo), the oneDNN backend when its package imports and
its library loads, CUDA/cuDNN/NCCL/NVRTC through CuPy when it sees a GPU. Anything
pymxnet does not provide is reported disabled.
"""
import collections
import importlib
import platform

__all__ = ["Feature", "Features", "feature_list"]

# MXNet 1.9.1's feature names, in its order (LibFeature enum).
_NAMES = ("CUDA", "CUDNN", "NCCL", "CUDA_RTC", "TENSORRT", "CPU_SSE", "CPU_SSE2",
          "CPU_SSE3", "CPU_SSE4_1", "CPU_SSE4_2", "CPU_SSE4A", "CPU_AVX", "CPU_AVX2",
          "OPENMP", "SSE", "F16C", "JEMALLOC", "BLAS_OPEN", "BLAS_ATLAS", "BLAS_MKL",
          "BLAS_APPLE", "LAPACK", "MKLDNN", "OPENCV", "CAFFE", "PROFILER", "DIST_KVSTORE",
          "CXX14", "INT64_TENSOR_SIZE", "SIGNAL_HANDLER", "DEBUG", "TVM_OP")

# /proc/cpuinfo flag behind each CPU feature.
_CPU_FLAGS = {"CPU_SSE": "sse", "CPU_SSE2": "sse2", "CPU_SSE3": "pni",
              "CPU_SSE4_1": "sse4_1", "CPU_SSE4_2": "sse4_2", "CPU_SSE4A": "sse4a",
              "CPU_AVX": "avx", "CPU_AVX2": "avx2", "SSE": "sse", "F16C": "f16c"}


class Feature:
    """One runtime feature: its ``name`` and whether it is ``enabled``."""

    def __init__(self, name, enabled):
        self.name = name
        self.enabled = bool(enabled)

    def __repr__(self):
        return ("✔ " if self.enabled else "✖ ") + self.name


def _cpu_flags():
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def _module_works(name, probe=None):
    """Whether module ``name`` imports (and ``probe(module)`` is true, when given)."""
    try:
        mod = importlib.import_module(name)
        return True if probe is None else bool(probe(mod))
    except Exception:  # noqa: BLE001  (missing package or library that fails to load)
        return False


def _onednn_available():
    # The oneDNN backend is optional (onednn-cpu-gomp wheel); it says whether its
    # library loaded through ``available()`` when it has one.
    def probe(mod):
        check = getattr(mod, "available", None) or getattr(mod, "is_available", None)
        return check() if callable(check) else True
    return _module_works("mxnet.backend.onednn", probe)


def _cudnn_available():
    # pymxnet's cuDNN kernels (mxnet.backend.cudnn) say through ``available()``
    # whether libcudnn loaded; without that backend, no operator uses cuDNN.
    return _module_works("mxnet.backend.cudnn",
                         lambda m: callable(getattr(m, "available", None)) and m.available())


def _gpu_features():
    from .backend import cupy_or_none
    cp = cupy_or_none()
    if cp is None:
        return {}
    found = {"CUDA": True}
    found["CUDNN"] = _cudnn_available()
    found["NCCL"] = _module_works("cupy.cuda.nccl", lambda m: m.available)
    found["CUDA_RTC"] = _module_works("cupy.cuda.nvrtc")
    return found


def _blas_features():
    """BLAS behind NumPy (OpenBLAS, MKL or Accelerate) and LAPACK through numpy.linalg."""
    found = {"LAPACK": True}
    try:
        import numpy as np
        config = np.show_config(mode="dicts")
        name = str(config.get("Build Dependencies", {}).get("blas", {}).get("name", ""))
    except Exception:  # noqa: BLE001  (old NumPy without dict mode)
        name = ""
    name = name.lower()
    found["BLAS_OPEN"] = "openblas" in name
    found["BLAS_MKL"] = "mkl" in name
    found["BLAS_APPLE"] = "accelerate" in name
    return found


def _detect():
    enabled = dict.fromkeys(_NAMES, False)
    if platform.machine().lower() in ("x86_64", "amd64", "i686", "x86"):
        flags = _cpu_flags()
        for name, flag in _CPU_FLAGS.items():
            enabled[name] = flag in flags
    enabled.update(_blas_features())
    enabled["MKLDNN"] = _onednn_available()
    enabled.update(_gpu_features())
    enabled["PROFILER"] = _module_works("mxnet.profiler")
    # dist_sync/dist_async kvstores run over MPI through mpi4py
    enabled["DIST_KVSTORE"] = _module_works("mpi4py")
    # Array sizes are NumPy's/CuPy's int64 sizes: tensors over 2**31 elements work.
    enabled["INT64_TENSOR_SIZE"] = True
    return enabled


def feature_list():
    """Every feature, in MXNet 1.9.1's order, as a list of Feature."""
    return [Feature(name, on) for name, on in _detect().items()]


class Features(collections.OrderedDict):
    """Name -> Feature for every runtime feature; ``is_enabled(name)`` asks about one.

    ``ONEDNN`` (oneDNN's current name) is accepted as another name for ``MKLDNN``.
    """

    instance = None

    def __new__(cls):
        if cls.instance is None:
            cls.instance = super().__new__(cls)
            super().__init__(cls.instance, [(f.name, f) for f in feature_list()])
        return cls.instance

    def __init__(self):  # pylint: disable=super-init-not-called
        pass  # filled once in __new__: features do not change while the process runs

    def __repr__(self):
        return str(list(self.values()))

    def is_enabled(self, feature_name):
        """Whether the named feature is enabled; an unknown name is a RuntimeError."""
        name = feature_name.upper()
        if name == "ONEDNN":
            name = "MKLDNN"
        if name not in self:
            raise RuntimeError(f"Feature '{feature_name}' is unknown, known features are: "
                               f"{list(self.keys())}")
        return self[name].enabled
