"""cuDNN settings that need no library: the convolution math-type policy, the default
tuning mode, library discovery and the kernel-table adapters' registration."""
import numpy as np
import pytest

from mxnet.backend.cudnn import _lib as L
from mxnet.backend.cudnn import descriptors as D
from mxnet.backend.cudnn import kernels as K


@pytest.mark.parametrize("env,dtype,want", [
    ({}, np.float16, L.TENSOR_OP_MATH),
    ({"MXNET_CUDA_ALLOW_TENSOR_CORE": "0"}, np.float16, L.FMA_MATH),
    ({"MXNET_CUDA_TENSOR_OP_MATH_ALLOW_CONVERSION": "1"}, np.float16, L.TENSOR_OP_MATH),
    # MXNet 1.9.1 with cuDNN >= 8: DEFAULT_MATH for float32 (TF32 allowed on sm_80+)
    ({}, np.float32, L.DEFAULT_MATH),
    ({"MXNET_CUDA_TENSOR_OP_MATH_ALLOW_CONVERSION": "1"}, np.float32,
     L.TENSOR_OP_MATH_ALLOW_CONVERSION),
    ({"MXNET_CUDA_TENSOR_OP_MATH_ALLOW_CONVERSION": "1", "NVIDIA_TF32_OVERRIDE": "0"},
     np.float32, L.FMA_MATH),
    ({"NVIDIA_TF32_OVERRIDE": "0"}, np.float32, L.FMA_MATH),
    ({"NVIDIA_TF32_OVERRIDE": "1"}, np.float32, L.DEFAULT_MATH),
    ({"MXNET_CUDA_ALLOW_TENSOR_CORE": "0"}, np.float32, L.FMA_MATH),
    ({}, np.float64, L.DEFAULT_MATH),
    ({"NVIDIA_TF32_OVERRIDE": "0"}, np.float64, L.DEFAULT_MATH),
])
def test_conv_math_type_policy(monkeypatch, env, dtype, want):
    for k in ("MXNET_CUDA_ALLOW_TENSOR_CORE", "MXNET_CUDA_TENSOR_OP_MATH_ALLOW_CONVERSION",
              "NVIDIA_TF32_OVERRIDE"):
        monkeypatch.delenv(k, raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    assert D.conv_math_type(dtype) == want


@pytest.mark.parametrize("val,want", [(None, "limited_workspace"), ("0", "off"),
                                      ("1", "limited_workspace"), ("2", "fastest"),
                                      ("x", "limited_workspace")])
def test_default_tune_follows_mxnet_autotune_default(monkeypatch, val, want):
    monkeypatch.delenv("MXNET_CUDNN_AUTOTUNE_DEFAULT", raising=False)
    if val is not None:
        monkeypatch.setenv("MXNET_CUDNN_AUTOTUNE_DEFAULT", val)
    assert K.default_tune() == want


def test_library_candidates_put_the_override_first(monkeypatch):
    monkeypatch.setenv("MXNET_CUDNN_LIBRARY", "/nowhere/libcudnn.so.9")
    c = L.candidates()
    assert c[0] == "/nowhere/libcudnn.so.9" and c[-1] == "libcudnn.so"


def test_missing_library_is_an_oserror_naming_what_was_tried(monkeypatch):
    monkeypatch.setattr(L, "candidates", lambda: ["/nowhere/libcudnn.so.9"])
    with pytest.raises(OSError, match="/nowhere/libcudnn.so.9"):
        L.load()


def test_register_all_registers_forward_and_backward_for_gpu():
    from mxnet.operator import kernels_cudnn
    got = []
    names = kernels_cudnn.register_all(
        lambda name, dev, fn, backward=False: got.append((name, dev, backward)))
    assert set(names) == {"Convolution", "Deconvolution", "Pooling", "BatchNorm",
                          "softmax", "log_softmax", "Activation"}
    assert {(n, "gpu", b) for n in names for b in (False, True)} == set(got)


def test_adapters_decline_non_cupy_arrays():
    """Without CuPy/cuDNN (or for NumPy arrays) every adapter defers to the operator
    body."""
    from mxnet.operator import kernels_cudnn
    from mxnet.operator.registry import OpContext, get_op
    import mxnet as mx
    p = get_op("Activation").parse({"act_type": "relu"})
    x = np.ones((2, 3), np.float32)
    ctx = OpContext(np, mx.cpu(), is_train=False)
    assert kernels_cudnn.act_forward(ctx, p, [x], []) is NotImplemented
