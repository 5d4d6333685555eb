"""cuDNN (NVIDIA's deep-learning primitives) kernels for GPU operators.

libcudnn (cuDNN 9, or 8) comes from the ``nvidia-cudnn-cu12`` / ``nvidia-cudnn-cu13``
wheel (``pip install pymxnet[gpu-cu12]``) or the system, and is called through ctypes
with its legacy descriptor API (``_lib.py``); ``descriptors.py`` creates and caches
tensor/filter/convolution/pooling/activation descriptors; ``kernels.py`` holds plain
functions over CuPy arrays that write into given outputs (convolution algorithms chosen
by ``cudnn_tune`` within the ``workspace`` limit and cached); the adapters for the
operator kernel table are ``mxnet.operator.kernels_cudnn``. Importing this package loads
nothing; libcudnn loads on the first GPU kernel call or ``available()``.

Switches: ``MXNET_CUDNN_ENABLED=0`` turns cuDNN off; ``MXNET_CUDNN_LIBRARY`` names a
libcudnn.so to use; ``MXNET_CUDNN_AUTOTUNE_DEFAULT`` (0/1/2) is the tuning mode when an
operator's ``cudnn_tune`` is None; ``NVIDIA_TF32_OVERRIDE``,
``MXNET_CUDA_ALLOW_TENSOR_CORE`` and ``MXNET_CUDA_TENSOR_OP_MATH_ALLOW_CONVERSION`` set
the convolution math type (float32 allows TF32 by default, as MXNet 1.9.1 with cuDNN 8;
see ``descriptors.conv_math_type``).
"""
from ._runtime import load_error, try_runtime

__all__ = ["available", "version", "library_path", "load_error"]


def available():
    """True when CuPy and libcudnn loaded (and MXNET_CUDNN_ENABLED is not 0)."""
    return try_runtime() is not None


def version():
    """cuDNN's version number (e.g. 92800 for 9.28.0), or None when unavailable."""
    rt = try_runtime()
    return None if rt is None else rt.version


def library_path():
    """The libcudnn file in use, or None."""
    rt = try_runtime()
    return None if rt is None else rt.path
