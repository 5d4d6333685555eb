"""cuDNN descriptors, created once per (shape, parameters, dtype) and cached for the
process (a model has a few hundred distinct keys at most). Creating and setting a
descriptor needs no GPU, so this layer is tested on machines without one.

Tensors are described as packed (C-contiguous) NCHW-style tensors of at least 4
dimensions: cuDNN's convolution and pooling calls want 4-D or 5-D tensors, so shorter
shapes get trailing (or, for 1-D convolution, inserted) unit dimensions by the caller.
"""
import ctypes
import os
import threading

import numpy as np

from ...base import bfloat16
from . import _lib as L

__all__ = ["NotSupported", "data_type", "tensor", "filter_", "convolution", "pooling",
           "activation", "bn_param", "conv_output_dims", "pool_output_dims",
           "conv_math_type", "strict_fp32", "scalars"]


class NotSupported(Exception):
    """The call is outside what the cuDNN path covers; the operator body runs."""


_DTYPES = {np.dtype(np.float16): L.DATA_HALF, np.dtype(np.float32): L.DATA_FLOAT,
           np.dtype(np.float64): L.DATA_DOUBLE, bfloat16: L.DATA_BFLOAT16}
_lock = threading.Lock()
_cache = {}
_INT_MAX = 2 ** 31 - 1

# alpha/beta scaling factors live in host memory: double for double data, else float
_ONE_F, _ZERO_F = ctypes.c_float(1.0), ctypes.c_float(0.0)
_ONE_D, _ZERO_D = ctypes.c_double(1.0), ctypes.c_double(0.0)
_SCALARS = {False: (ctypes.addressof(_ONE_F), ctypes.addressof(_ZERO_F)),
            True: (ctypes.addressof(_ONE_D), ctypes.addressof(_ZERO_D))}


def scalars(dtype):
    """(pointer to 1, pointer to 0) of the scaling-factor type for ``dtype``."""
    return _SCALARS[np.dtype(dtype) == np.float64]


def data_type(dtype):
    """cudnnDataType_t of a NumPy/CuPy dtype; NotSupported for other types."""
    try:
        return _DTYPES[np.dtype(dtype)]
    except KeyError:
        raise NotSupported(f"dtype {dtype}") from None


def _ints(seq):
    seq = [int(v) for v in seq]
    return (ctypes.c_int * len(seq))(*seq)


def _cached(key, make):
    d = _cache.get(key)
    if d is None:
        with _lock:
            d = _cache.get(key)
            if d is None:
                d = _cache[key] = make()
    return d


def _create(lib, kind):
    ptr = ctypes.c_void_p()
    L.check(lib, f"cudnnCreate{kind}Descriptor",
            getattr(lib, f"cudnnCreate{kind}Descriptor")(ctypes.byref(ptr)))
    return ptr.value


def _check_size(shape):
    if any(d <= 0 for d in shape):
        raise NotSupported("empty tensor")
    if int(np.prod(shape, dtype=np.int64)) > _INT_MAX:
        raise NotSupported("tensor with 2**31 or more elements")


def tensor(lib, shape, dtype):
    """A packed tensor descriptor of ``shape`` (4 to 8 dims)."""
    shape = tuple(int(s) for s in shape)
    dt = data_type(dtype)

    def make():
        _check_size(shape)
        strides, acc = [], 1
        for s in reversed(shape):
            strides.append(acc)
            acc *= s
        d = _create(lib, "Tensor")
        L.check(lib, "cudnnSetTensorNdDescriptor",
                lib.cudnnSetTensorNdDescriptor(d, dt, len(shape), _ints(shape),
                                               _ints(strides[::-1])))
        return d
    return _cached(("tensor", shape, dt), make)


def filter_(lib, shape, dtype):
    """A filter descriptor (K, C/groups, *kernel) in NCHW order."""
    shape = tuple(int(s) for s in shape)
    dt = data_type(dtype)

    def make():
        _check_size(shape)
        d = _create(lib, "Filter")
        L.check(lib, "cudnnSetFilterNdDescriptor",
                lib.cudnnSetFilterNdDescriptor(d, dt, L.TENSOR_NCHW, len(shape),
                                               _ints(shape)))
        return d
    return _cached(("filter", shape, dt), make)


def _env_flag(name, default):
    v = os.environ.get(name)
    if v is None or not v.strip():
        return default
    return v.strip().lower() not in ("0", "false", "off", "no")


def strict_fp32():
    """True when float32 convolutions must not use TF32 tensor cores:
    NVIDIA_TF32_OVERRIDE=0 (NVIDIA's switch, which cuDNN and cuBLAS honour and MXNet
    1.9.1's tests read) or MXNET_CUDA_ALLOW_TENSOR_CORE=0."""
    return (os.environ.get("NVIDIA_TF32_OVERRIDE", "").strip() == "0"
            or not _env_flag("MXNET_CUDA_ALLOW_TENSOR_CORE", True))


def conv_math_type(dtype):
    """The convolution math type, MXNet 1.9.1's policy: float16 (and bfloat16) asks for
    tensor cores
    (TENSOR_OP_MATH); float32 and float64 use CUDNN_DEFAULT_MATH, which cuDNN >= 8 lets
    use TF32 tensor cores on Ampere and later GPUs - MXNet 1.9.1 built against cuDNN 8
    behaves so, as does PyTorch by default (``torch.backends.cudnn.allow_tf32``).
    MXNET_CUDA_TENSOR_OP_MATH_ALLOW_CONVERSION=1 lets float32 be down-converted to
    float16 inside tensor-core kernels (TENSOR_OP_MATH_ALLOW_CONVERSION), as in MXNet.
    Strict fp32 (FMA math, no tensor cores): NVIDIA_TF32_OVERRIDE=0 or
    MXNET_CUDA_ALLOW_TENSOR_CORE=0 (the latter also keeps float16 off tensor cores)."""
    dt = np.dtype(dtype)
    allow_tc = _env_flag("MXNET_CUDA_ALLOW_TENSOR_CORE", True)
    if dt == np.float16 or dt == bfloat16:
        return L.TENSOR_OP_MATH if allow_tc else L.FMA_MATH
    if dt == np.float32:
        if strict_fp32():
            return L.FMA_MATH
        if _env_flag("MXNET_CUDA_TENSOR_OP_MATH_ALLOW_CONVERSION", False):
            return L.TENSOR_OP_MATH_ALLOW_CONVERSION
        return L.DEFAULT_MATH
    return L.DEFAULT_MATH


def convolution(lib, pad, stride, dilate, groups, dtype, math_type):
    """A cross-correlation descriptor (compute in float for half/float, double for
    double data)."""
    pad, stride, dilate = (tuple(int(v) for v in t) for t in (pad, stride, dilate))
    compute = L.DATA_DOUBLE if np.dtype(dtype) == np.float64 else L.DATA_FLOAT

    def make():
        d = _create(lib, "Convolution")
        L.check(lib, "cudnnSetConvolutionNdDescriptor",
                lib.cudnnSetConvolutionNdDescriptor(d, len(pad), _ints(pad), _ints(stride),
                                                    _ints(dilate), L.CROSS_CORRELATION,
                                                    compute))
        if groups != 1:
            L.check(lib, "cudnnSetConvolutionGroupCount",
                    lib.cudnnSetConvolutionGroupCount(d, int(groups)))
        L.check(lib, "cudnnSetConvolutionMathType",
                lib.cudnnSetConvolutionMathType(d, int(math_type)))
        return d
    return _cached(("conv", pad, stride, dilate, int(groups), compute, int(math_type)),
                   make)


def conv_output_dims(lib, conv, xdesc, wdesc, ndim):
    """cuDNN's output shape of the convolution (a check of the geometry)."""
    out = (ctypes.c_int * ndim)()
    L.check(lib, "cudnnGetConvolutionNdForwardOutputDim",
            lib.cudnnGetConvolutionNdForwardOutputDim(conv, xdesc, wdesc, ndim, out))
    return tuple(out)


def pooling(lib, mode, window, pad, stride):
    """A pooling descriptor (NaN not propagated, as MXNet's own kernels)."""
    window, pad, stride = (tuple(int(v) for v in t) for t in (window, pad, stride))

    def make():
        d = _create(lib, "Pooling")
        L.check(lib, "cudnnSetPoolingNdDescriptor",
                lib.cudnnSetPoolingNdDescriptor(d, int(mode), L.NOT_PROPAGATE_NAN,
                                                len(window), _ints(window), _ints(pad),
                                                _ints(stride)))
        return d
    return _cached(("pool", int(mode), window, pad, stride), make)


def pool_output_dims(lib, pdesc, xdesc, ndim):
    out = (ctypes.c_int * ndim)()
    L.check(lib, "cudnnGetPoolingNdForwardOutputDim",
            lib.cudnnGetPoolingNdForwardOutputDim(pdesc, xdesc, ndim, out))
    return tuple(out)


def activation(lib, mode):
    def make():
        d = _create(lib, "Activation")
        L.check(lib, "cudnnSetActivationDescriptor",
                lib.cudnnSetActivationDescriptor(d, int(mode), L.NOT_PROPAGATE_NAN, 0.0))
        return d
    return _cached(("act", int(mode)), make)


def bn_param(lib, xdesc, key):
    """The (1, C, 1, 1) scale/bias/mean/var descriptor derived from ``xdesc``
    (float for half/float data, double for double)."""
    def make():
        d = _create(lib, "Tensor")
        L.check(lib, "cudnnDeriveBNTensorDescriptor",
                lib.cudnnDeriveBNTensorDescriptor(d, xdesc, L.BATCHNORM_SPATIAL))
        return d
    return _cached(("bn", key), make)
