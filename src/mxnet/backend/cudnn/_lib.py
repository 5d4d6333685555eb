"""Finding and loading libcudnn (cuDNN 9, the legacy descriptor C API) through ctypes.

Only opaque-handle functions and one plain struct (the algorithm-performance record) are
used, so no header is needed. The enum values are those of cuDNN 9's
``cudnn_graph.h`` / ``cudnn_ops.h`` / ``cudnn_cnn.h``; the binding test checks the ones
that descriptor calls can observe without a GPU (output dimensions, status strings).

Where the library comes from, first hit wins: ``MXNET_CUDNN_LIBRARY`` (a path), the
``nvidia-cudnn-cu12``/``-cu13`` wheel (``nvidia/cudnn/lib/libcudnn.so.9`` in any
``nvidia`` namespace-package directory, then any ``nvidia/*/lib/libcudnn.so*``), then the system's ``libcudnn.so.9`` /
``libcudnn.so``. cuDNN 9 splits into sub-libraries (``libcudnn_ops``, ``_cnn``, ...);
``libcudnn.so.9`` is the entry library that loads them from its own directory.
"""
import ctypes
import glob
import os

__all__ = ["load", "check", "CudnnError", "candidates", "AlgoPerf"]

# --- enum values (cuDNN 9) ---------------------------------------------------------------
STATUS_SUCCESS = 0

DATA_FLOAT, DATA_DOUBLE, DATA_HALF, DATA_BFLOAT16 = 0, 1, 2, 9
TENSOR_NCHW, TENSOR_NHWC = 0, 1
NOT_PROPAGATE_NAN, PROPAGATE_NAN = 0, 1

CONVOLUTION, CROSS_CORRELATION = 0, 1
DEFAULT_MATH, TENSOR_OP_MATH, TENSOR_OP_MATH_ALLOW_CONVERSION, FMA_MATH = 0, 1, 2, 3
FWD_ALGO_COUNT, BWD_DATA_ALGO_COUNT, BWD_FILTER_ALGO_COUNT = 8, 6, 7

POOLING_MAX, POOLING_AVG_INCLUDE, POOLING_AVG_EXCLUDE, POOLING_MAX_DETERMINISTIC = 0, 1, 2, 3

ACTIVATION_SIGMOID, ACTIVATION_RELU, ACTIVATION_TANH = 0, 1, 2

SOFTMAX_FAST, SOFTMAX_ACCURATE, SOFTMAX_LOG = 0, 1, 2
SOFTMAX_MODE_INSTANCE, SOFTMAX_MODE_CHANNEL = 0, 1

BATCHNORM_PER_ACTIVATION, BATCHNORM_SPATIAL, BATCHNORM_SPATIAL_PERSISTENT = 0, 1, 2
# cuDNN >= 7.5 defines CUDNN_BN_MIN_EPSILON as 0.0; older ones as 1e-5. The adapters use
# the old bound so an eps that an older cuDNN rejected keeps the NumPy body.
BN_MIN_EPSILON = 1e-5

_p = ctypes.c_void_p
_pp = ctypes.POINTER(ctypes.c_void_p)
_i = ctypes.c_int
_pi = ctypes.POINTER(ctypes.c_int)
_sz = ctypes.c_size_t
_psz = ctypes.POINTER(ctypes.c_size_t)
_d = ctypes.c_double


class AlgoPerf(ctypes.Structure):
    """cudnnConvolution{Fwd,BwdData,BwdFilter}AlgoPerf_t (one layout for the three):
    {algo; status; float time (ms); size_t memory; determinism; mathType; int reserved[3]}"""
    _fields_ = [("algo", ctypes.c_int), ("status", ctypes.c_int),
                ("time", ctypes.c_float), ("memory", ctypes.c_size_t),
                ("determinism", ctypes.c_int), ("mathType", ctypes.c_int),
                ("reserved", ctypes.c_int * 3)]


# name -> argtypes; every function returns cudnnStatus_t (int) unless listed in _RESTYPES
_SIGS = {
    "cudnnGetVersion": [],
    "cudnnGetErrorString": [_i],
    "cudnnCreate": [_pp],
    "cudnnDestroy": [_p],
    "cudnnSetStream": [_p, _p],
    # the graph (backend) API: backend/cudnn/graph_api.py
    "cudnnBackendCreateDescriptor": [_i, _pp],
    "cudnnBackendDestroyDescriptor": [_p],
    "cudnnBackendFinalize": [_p],
    "cudnnBackendSetAttribute": [_p, _i, _i, ctypes.c_int64, _p],
    "cudnnBackendGetAttribute": [_p, _i, _i, ctypes.c_int64,
                                 ctypes.POINTER(ctypes.c_int64), _p],
    "cudnnBackendExecute": [_p, _p, _p],
    # tensors / filters
    "cudnnCreateTensorDescriptor": [_pp],
    "cudnnDestroyTensorDescriptor": [_p],
    "cudnnSetTensorNdDescriptor": [_p, _i, _i, _pi, _pi],
    # (desc, nbDimsRequested, dataType*, nbDims*, dims, strides)
    "cudnnGetTensorNdDescriptor": [_p, _i, _pi, _pi, _pi, _pi],
    "cudnnCreateFilterDescriptor": [_pp],
    "cudnnDestroyFilterDescriptor": [_p],
    "cudnnSetFilterNdDescriptor": [_p, _i, _i, _i, _pi],
    # (desc, nbDimsRequested, dataType*, format*, nbDims*, dims)
    "cudnnGetFilterNdDescriptor": [_p, _i, _pi, _pi, _pi, _pi],
    "cudnnAddTensor": [_p, _p, _p, _p, _p, _p, _p],
    # convolution
    "cudnnCreateConvolutionDescriptor": [_pp],
    "cudnnDestroyConvolutionDescriptor": [_p],
    "cudnnSetConvolutionNdDescriptor": [_p, _i, _pi, _pi, _pi, _i, _i],
    "cudnnSetConvolutionGroupCount": [_p, _i],
    "cudnnSetConvolutionMathType": [_p, _i],
    "cudnnGetConvolutionNdForwardOutputDim": [_p, _p, _p, _i, _pi],
    "cudnnGetConvolutionForwardAlgorithm_v7": [_p, _p, _p, _p, _p, _i, _pi, _p],
    "cudnnGetConvolutionBackwardDataAlgorithm_v7": [_p, _p, _p, _p, _p, _i, _pi, _p],
    "cudnnGetConvolutionBackwardFilterAlgorithm_v7": [_p, _p, _p, _p, _p, _i, _pi, _p],
    "cudnnFindConvolutionForwardAlgorithmEx":
        [_p, _p, _p, _p, _p, _p, _p, _p, _i, _pi, _p, _p, _sz],
    "cudnnFindConvolutionBackwardDataAlgorithmEx":
        [_p, _p, _p, _p, _p, _p, _p, _p, _i, _pi, _p, _p, _sz],
    "cudnnFindConvolutionBackwardFilterAlgorithmEx":
        [_p, _p, _p, _p, _p, _p, _p, _p, _i, _pi, _p, _p, _sz],
    "cudnnGetConvolutionForwardWorkspaceSize": [_p, _p, _p, _p, _p, _i, _psz],
    "cudnnGetConvolutionBackwardDataWorkspaceSize": [_p, _p, _p, _p, _p, _i, _psz],
    "cudnnGetConvolutionBackwardFilterWorkspaceSize": [_p, _p, _p, _p, _p, _i, _psz],
    # (handle, alpha, xDesc, x, wDesc, w, convDesc, algo, ws, wsSize, beta, yDesc, y)
    "cudnnConvolutionForward": [_p, _p, _p, _p, _p, _p, _p, _i, _p, _sz, _p, _p, _p],
    # (handle, alpha, wDesc, w, dyDesc, dy, convDesc, algo, ws, wsSize, beta, dxDesc, dx)
    "cudnnConvolutionBackwardData": [_p, _p, _p, _p, _p, _p, _p, _i, _p, _sz, _p, _p, _p],
    # (handle, alpha, xDesc, x, dyDesc, dy, convDesc, algo, ws, wsSize, beta, dwDesc, dw)
    "cudnnConvolutionBackwardFilter": [_p, _p, _p, _p, _p, _p, _p, _i, _p, _sz, _p, _p, _p],
    # (handle, alpha, dyDesc, dy, beta, dbDesc, db)
    "cudnnConvolutionBackwardBias": [_p, _p, _p, _p, _p, _p, _p],
    # pooling
    "cudnnCreatePoolingDescriptor": [_pp],
    "cudnnDestroyPoolingDescriptor": [_p],
    "cudnnSetPoolingNdDescriptor": [_p, _i, _i, _i, _pi, _pi, _pi],
    "cudnnGetPoolingNdForwardOutputDim": [_p, _p, _i, _pi],
    # (handle, poolDesc, alpha, xDesc, x, beta, yDesc, y)
    "cudnnPoolingForward": [_p, _p, _p, _p, _p, _p, _p, _p],
    # (handle, poolDesc, alpha, yDesc, y, dyDesc, dy, xDesc, x, beta, dxDesc, dx)
    "cudnnPoolingBackward": [_p, _p, _p, _p, _p, _p, _p, _p, _p, _p, _p, _p],
    # activation
    "cudnnCreateActivationDescriptor": [_pp],
    "cudnnDestroyActivationDescriptor": [_p],
    "cudnnSetActivationDescriptor": [_p, _i, _i, _d],
    # (handle, actDesc, alpha, xDesc, x, beta, yDesc, y)
    "cudnnActivationForward": [_p, _p, _p, _p, _p, _p, _p, _p],
    # (handle, actDesc, alpha, yDesc, y, dyDesc, dy, xDesc, x, beta, dxDesc, dx)
    "cudnnActivationBackward": [_p, _p, _p, _p, _p, _p, _p, _p, _p, _p, _p, _p],
    # softmax: (handle, algo, mode, alpha, xDesc, x, beta, yDesc, y)
    "cudnnSoftmaxForward": [_p, _i, _i, _p, _p, _p, _p, _p, _p],
    # (handle, algo, mode, alpha, yDesc, y, dyDesc, dy, beta, dxDesc, dx)
    "cudnnSoftmaxBackward": [_p, _i, _i, _p, _p, _p, _p, _p, _p, _p, _p],
    # recurrent layers (backend/cudnn/rnn.py)
    "cudnnCreateDropoutDescriptor": [_pp],
    "cudnnDestroyDropoutDescriptor": [_p],
    # (desc, handle, dropout, states, stateSizeInBytes, seed)
    "cudnnSetDropoutDescriptor": [_p, _p, ctypes.c_float, _p, _sz, ctypes.c_ulonglong],
    "cudnnCreateRNNDescriptor": [_pp],
    "cudnnDestroyRNNDescriptor": [_p],
    # (desc, algo, cellMode, biasMode, dirMode, inputMode, dataType, mathPrec, mathType,
    #  inputSize, hiddenSize, projSize, numLayers, dropoutDesc, auxFlags)
    "cudnnSetRNNDescriptor_v8": [_p, _i, _i, _i, _i, _i, _i, _i, _i, _i, _i, _i, _i, _p,
                                 ctypes.c_uint32],
    "cudnnGetRNNDescriptor_v8": [_p, _pi, _pi, _pi, _pi, _pi, _pi, _pi, _pi, _pi, _pi,
                                 _pi, _pi, _pp, ctypes.POINTER(ctypes.c_uint32)],
    "cudnnCreateRNNDataDescriptor": [_pp],
    "cudnnDestroyRNNDataDescriptor": [_p],
    # (desc, dataType, layout, maxSeqLength, batchSize, vectorSize, seqLengthArray,
    #  paddingFill)
    "cudnnSetRNNDataDescriptor": [_p, _i, _i, _i, _i, _i, _pi, _p],
    # (desc, dataType*, layout*, maxSeqLength*, batchSize*, vectorSize*,
    #  arrayLengthRequested, seqLengthArray, paddingFill)
    "cudnnGetRNNDataDescriptor": [_p, _pi, _pi, _pi, _pi, _pi, _i, _pi, _p],
    # (handle, rnnDesc, fwdMode, xDesc, workSpaceSize*, reserveSpaceSize*)
    "cudnnGetRNNTempSpaceSizes": [_p, _p, _i, _p, _psz, _psz],
    "cudnnGetRNNWeightSpaceSize": [_p, _p, _psz],
    # (handle, rnnDesc, pseudoLayer, weightSpaceSize, weightSpace, linLayerID, mDesc,
    #  mAddr*, bDesc, bAddr*)
    "cudnnGetRNNWeightParams": [_p, _p, _i, _sz, _p, _i, _p, _pp, _p, _pp],
    # (handle, rnnDesc, fwdMode, devSeqLengths, xDesc, x, yDesc, y, hDesc, hx, hy,
    #  cDesc, cx, cy, weightSpaceSize, weightSpace, workSpaceSize, workSpace,
    #  reserveSpaceSize, reserveSpace)
    "cudnnRNNForward": [_p, _p, _i, _p, _p, _p, _p, _p, _p, _p, _p, _p, _p, _p, _sz, _p,
                        _sz, _p, _sz, _p],
    # (handle, rnnDesc, devSeqLengths, yDesc, y, dy, xDesc, dx, hDesc, hx, dhy, dhx,
    #  cDesc, cx, dcy, dcx, weightSpaceSize, weightSpace, workSpaceSize, workSpace,
    #  reserveSpaceSize, reserveSpace)
    "cudnnRNNBackwardData_v8": [_p, _p, _p, _p, _p, _p, _p, _p, _p, _p, _p, _p, _p, _p,
                                _p, _p, _sz, _p, _sz, _p, _sz, _p],
    # (handle, rnnDesc, addGrad, devSeqLengths, xDesc, x, hDesc, hx, yDesc, y,
    #  weightSpaceSize, dweightSpace, workSpaceSize, workSpace, reserveSpaceSize,
    #  reserveSpace)
    "cudnnRNNBackwardWeights_v8": [_p, _p, _i, _p, _p, _p, _p, _p, _p, _p, _sz, _p, _sz,
                                   _p, _sz, _p],
    # batch norm
    "cudnnDeriveBNTensorDescriptor": [_p, _p, _i],
    # (handle, mode, alpha, beta, xDesc, x, yDesc, y, bnDesc, scale, bias, expAvgFactor,
    #  runningMean, runningVar, eps, saveMean, saveInvVar)
    "cudnnBatchNormalizationForwardTraining":
        [_p, _i, _p, _p, _p, _p, _p, _p, _p, _p, _p, _d, _p, _p, _d, _p, _p],
    # (handle, mode, alpha, beta, xDesc, x, yDesc, y, bnDesc, scale, bias, estMean,
    #  estVar, eps)
    "cudnnBatchNormalizationForwardInference":
        [_p, _i, _p, _p, _p, _p, _p, _p, _p, _p, _p, _p, _p, _d],
    # (handle, mode, alphaData, betaData, alphaParam, betaParam, xDesc, x, dyDesc, dy,
    #  dxDesc, dx, bnDesc, scale, dScale, dBias, eps, savedMean, savedInvVar)
    "cudnnBatchNormalizationBackward":
        [_p, _i, _p, _p, _p, _p, _p, _p, _p, _p, _p, _p, _p, _p, _p, _p, _d, _p, _p],
}
_RESTYPES = {"cudnnGetVersion": ctypes.c_size_t, "cudnnGetErrorString": ctypes.c_char_p}


class CudnnError(RuntimeError):
    """A cuDNN call returned a status other than CUDNN_STATUS_SUCCESS."""

    def __init__(self, func, status, text):
        super().__init__(f"cuDNN {func} failed: {text} (status {status})")
        self.func, self.status = func, status


def check(lib, func, status):
    """Raise CudnnError unless ``status`` is success."""
    if status != STATUS_SUCCESS:
        text = lib.cudnnGetErrorString(status)
        raise CudnnError(func, status, text.decode() if text else "unknown status")


def _wheel_dirs():
    """``nvidia/cudnn/lib`` under every directory of the ``nvidia`` namespace package
    (found without importing anything that loads a library)."""
    import importlib.util
    try:
        spec = importlib.util.find_spec("nvidia")
    except (ImportError, ValueError):
        spec = None
    dirs = list(spec.submodule_search_locations or ()) if spec is not None else []
    out = [os.path.join(d, "cudnn", "lib") for d in dirs]
    # other layouts of NVIDIA's wheels (e.g. nvidia/cu13/lib), after the usual one
    out += sorted(os.path.dirname(p) for d in dirs
                  for p in glob.glob(os.path.join(d, "*", "lib", "libcudnn.so*"))
                  if os.path.dirname(p) not in out)
    return list(dict.fromkeys(out))


def candidates():
    """Library paths/names to try, in order."""
    out = []
    env = os.environ.get("MXNET_CUDNN_LIBRARY")
    if env:
        out.append(env)
    for d in _wheel_dirs():
        for name in ("libcudnn.so.9", "libcudnn.so"):
            path = os.path.join(d, name)
            if os.path.exists(path):
                out.append(path)
    out += ["libcudnn.so.9", "libcudnn.so"]
    return out


def _bind(lib):
    for name, args in _SIGS.items():
        fn = getattr(lib, name)           # AttributeError: a missing symbol
        fn.argtypes = args
        fn.restype = _RESTYPES.get(name, ctypes.c_int)
    return lib


def load():
    """(lib, path) of the first libcudnn that loads with every bound symbol and is
    version 8 or later; raises OSError naming what was tried otherwise."""
    errors = []
    for cand in candidates():
        try:
            # RTLD_GLOBAL: the sub-libraries cuDNN 9 loads later resolve against it
            lib = ctypes.CDLL(cand, mode=ctypes.RTLD_GLOBAL)
            _bind(lib)
        except (OSError, AttributeError) as err:
            errors.append(f"{cand}: {err}")
            continue
        ver = lib.cudnnGetVersion()
        if ver < 8000:
            errors.append(f"{cand}: cuDNN version {ver} is older than 8")
            continue
        return lib, cand
    raise OSError("cuDNN not found (pip install nvidia-cudnn-cu12 or nvidia-cudnn-cu13, or "
                  "set MXNET_CUDNN_LIBRARY): " + "; ".join(errors))
