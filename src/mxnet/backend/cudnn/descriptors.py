"""cuDNN descriptors, created once per (shape, parameters, dtype) and cached for the
process (a model has a few hundred distinct keys at most). Creating and setting a
descriptor needs no GPU, so this layer is tested on machines without one.

Tensors are described by their logical NCHW-style dimensions (at least 4: cuDNN's
convolution and pooling calls want 4-D or 5-D tensors, so shorter shapes get trailing
or, for 1-D convolution, inserted unit dimensions by the caller) and their strides:
packed C-order by default, or those of a channels-last array (the executor's GPU
layout pass, executor/layout.py), which cuDNN reads as NHWC. Filters are KCRS, or KRSC
with ``nhwc``.
"""
import ctypes
import os
import threading

import numpy as np

from ...base import bfloat16, get_or_make
from . import _lib as L

__all__ = ["NotSupported", "data_type", "tensor", "tensor_of", "filter_", "strides_of",
           "nhwc_strides", "describe_tensor", "describe_filter", "convolution", "pooling",
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
    return get_or_make(_cache, key, make, _lock)


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


def _packed(shape):
    strides, acc = [], 1
    for s in reversed(shape):
        strides.append(acc)
        acc *= s
    return tuple(strides[::-1])


def nhwc_strides(shape):
    """The element strides of a packed channels-last array of logical shape
    (N, C, *spatial): channels innermost, then the spatial axes, then the batch."""
    n, c, *sp = (int(v) for v in shape)
    inner = _packed(tuple(sp) + (c,))         # strides of (*spatial, C)
    return (int(np.prod(sp, dtype=np.int64)) * c, 1) + inner[:-1]


def _agree(strides, want, shape):
    """Whether two stride tuples address ``shape`` alike (unit dims' strides unused)."""
    return all(s == w for s, w, d in zip(strides, want, shape) if d != 1)


def strides_of(a):
    """An array's strides in elements (cuDNN's unit); a packed C-order or channels-last
    array gets that layout's canonical strides, whatever its unit dimensions' strides
    say (NumPy and CuPy leave those arbitrary, and cuDNN recognises its layouts by
    the full stride tuple)."""
    item = a.dtype.itemsize
    raw = tuple(int(s) // item for s in a.strides)
    shape = tuple(a.shape)
    packed = _packed(shape)
    if _agree(raw, packed, shape):
        return packed
    if len(shape) >= 3 and _agree(raw, nhwc_strides(shape), shape):
        return nhwc_strides(shape)
    return raw


def tensor(lib, shape, dtype, strides=None):
    """A tensor descriptor of logical ``shape`` (4 to 8 dims) and element ``strides``
    (None: packed C order)."""
    shape = tuple(int(s) for s in shape)
    dt = data_type(dtype)
    packed = _packed(shape)
    strides = packed if strides is None else tuple(int(s) for s in strides)

    def make():
        _check_size(shape)
        d = _create(lib, "Tensor")
        L.check(lib, "cudnnSetTensorNdDescriptor",
                lib.cudnnSetTensorNdDescriptor(d, dt, len(shape), _ints(shape),
                                               _ints(strides)))
        return d
    key = ("tensor", shape, dt) if strides == packed else ("tensor", shape, dt, strides)
    return _cached(key, make)


def tensor_of(lib, a):
    """The descriptor of array ``a`` as it lies in memory (its strides). Looked up by
    the array's own shape, dtype and byte strides: no stride arithmetic per call."""
    key = ("of", a.shape, a.dtype, a.strides)
    d = _cache.get(key)
    if d is None:
        d = _cache.setdefault(key, tensor(lib, a.shape, a.dtype, strides_of(a)))
    return d


def filter_(lib, shape, dtype, nhwc=False):
    """A filter descriptor of logical dims (K, C/groups, *kernel): its memory in KCRS
    order, or KRSC (channels innermost) with ``nhwc``."""
    shape = tuple(int(s) for s in shape)
    dt = data_type(dtype)
    fmt = L.TENSOR_NHWC if nhwc else L.TENSOR_NCHW

    def make():
        _check_size(shape)
        d = _create(lib, "Filter")
        L.check(lib, "cudnnSetFilterNdDescriptor",
                lib.cudnnSetFilterNdDescriptor(d, dt, fmt, len(shape), _ints(shape)))
        return d
    return _cached(("filter", shape, dt, fmt), make)


def describe_tensor(lib, d, ndim=8):
    """(cudnnDataType_t, dims, strides) cuDNN holds for tensor descriptor ``d``."""
    dt, nb = ctypes.c_int(0), ctypes.c_int(0)
    dims, strides = (ctypes.c_int * ndim)(), (ctypes.c_int * ndim)()
    L.check(lib, "cudnnGetTensorNdDescriptor",
            lib.cudnnGetTensorNdDescriptor(d, ndim, ctypes.byref(dt), ctypes.byref(nb),
                                           dims, strides))
    return dt.value, tuple(dims[:nb.value]), tuple(strides[:nb.value])


def describe_filter(lib, d, ndim=8):
    """(cudnnDataType_t, cudnnTensorFormat_t, dims) cuDNN holds for filter ``d``."""
    dt, fmt, nb = ctypes.c_int(0), ctypes.c_int(0), ctypes.c_int(0)
    dims = (ctypes.c_int * ndim)()
    L.check(lib, "cudnnGetFilterNdDescriptor",
            lib.cudnnGetFilterNdDescriptor(d, ndim, ctypes.byref(dt), ctypes.byref(fmt),
                                           ctypes.byref(nb), dims))
    return dt.value, fmt.value, tuple(dims[:nb.value])


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


def compute_type(dtype):
    """A convolution's compute type: double for double data, float for the others."""
    return L.DATA_DOUBLE if np.dtype(dtype) == np.float64 else L.DATA_FLOAT


def convolution(lib, pad, stride, dilate, groups, dtype, math_type):
    """A cross-correlation descriptor (compute in float for half/float, double for
    double data)."""
    pad, stride, dilate = (tuple(int(v) for v in t) for t in (pad, stride, dilate))
    compute = compute_type(dtype)

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


def bn_param(lib, xdesc, key, mode=L.BATCHNORM_SPATIAL):
    """The (1, C, 1, 1) scale/bias/mean/var descriptor derived from ``xdesc``
    (float for half/float data, double for double) for batch-norm ``mode``."""
    def make():
        d = _create(lib, "Tensor")
        L.check(lib, "cudnnDeriveBNTensorDescriptor",
                lib.cudnnDeriveBNTensorDescriptor(d, xdesc, int(mode)))
        return d
    return _cached(("bn", key, int(mode)), make)
