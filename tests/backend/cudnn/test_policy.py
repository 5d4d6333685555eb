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
    ({}, "bfloat16", L.TENSOR_OP_MATH),
    ({"MXNET_CUDA_ALLOW_TENSOR_CORE": "0"}, "bfloat16", L.FMA_MATH),
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


class _FakeLib:
    """A stand-in for libcudnn's algorithm calls: the heuristic lists ``heur``, the
    measured search reports ``found`` (algo, status, time, memory, mathType) in the
    given (unsorted) order, and workspace sizes come from ``ws``."""

    def __init__(self, heur, found, ws):
        self.heur, self.found, self.ws, self.find_caps = heur, found, ws, []

    @staticmethod
    def _fill(rows, nref, perf):
        for i, (algo, status, t, mem, math) in enumerate(rows):
            perf[i].algo, perf[i].status, perf[i].time = algo, status, t
            perf[i].memory, perf[i].mathType = mem, math
        nref._obj.value = len(rows)
        return 0

    def cudnnGetConvolutionForwardAlgorithm_v7(self, h, a, b, c, d, count, nref, perf):
        return self._fill(self.heur, nref, perf)

    def cudnnFindConvolutionForwardAlgorithmEx(self, h, d0, p0, d1, p1, conv, d3, p3,
                                               count, nref, perf, wsp, cap):
        self.find_caps.append(cap)
        return self._fill(self.found, nref, perf)

    def cudnnGetConvolutionForwardWorkspaceSize(self, h, a, b, conv, d, algo, sref):
        sref._obj.value = self.ws.get(algo, 0)
        return 0


class _FakeCupy:
    uint8 = np.uint8

    class cuda:
        class memory:
            class OutOfMemoryError(Exception):
                pass

        class runtime:
            @staticmethod
            def deviceSynchronize():
                return None

    def __init__(self, fail_above=None):
        self.fail_above = fail_above

    def empty(self, n, dtype=None):
        if self.fail_above is not None and n > self.fail_above:
            raise self.cuda.memory.OutOfMemoryError(n)

        class Buf:
            class data:
                ptr = 1234
        return Buf()


class _FakeGeo:
    def __init__(self, math, key):
        self.math, self.strict, self.key = math, math == L.FMA_MATH, key
        self.x = self.w = self.y = self.conv = 1

    def conv_desc(self, math):
        return ("conv", math)


def _choose(lib, cp, geo, tune, limit):
    import types
    rt = types.SimpleNamespace(lib=lib, cupy=cp)
    return K._choose(rt, 7, "fwd", geo, tune, limit, (1, 2, 3))


MB = 1 << 20


def test_measured_choice_is_the_fastest_successful_one_within_the_limit():
    heur = [(1, 0, -1.0, 0, L.DEFAULT_MATH)]
    found = [(2, 0, 0.9, 10 * MB, L.DEFAULT_MATH),     # slower
             (5, 0, 0.3, 900 * MB, L.TENSOR_OP_MATH),  # fastest, fits 1024 MB
             (6, 3, 0.1, 0, L.DEFAULT_MATH),           # failed status
             (7, 0, 0.2, 2000 * MB, L.TENSOR_OP_MATH)]  # over the limit
    lib = _FakeLib(heur, found, {5: 800 * MB})
    algo, ws, conv = _choose(lib, _FakeCupy(), _FakeGeo(L.DEFAULT_MATH, ("a",)),
                             "limited_workspace", 1024 * MB)
    assert algo == 5 and ws == 900 * MB
    assert conv == ("conv", L.TENSOR_OP_MATH)          # run with the measured math type
    # searched with the whole limit, twice (the first ranking includes lazy kernel loads)
    assert lib.find_caps == [1024 * MB] * 2


def test_strict_fp32_stays_fma_and_skips_tensor_op_results():
    heur = [(1, 0, -1.0, 0, L.FMA_MATH)]
    found = [(5, 0, 0.3, 0, L.TENSOR_OP_MATH), (2, 0, 0.9, 0, L.FMA_MATH)]
    lib = _FakeLib(heur, found, {})
    algo, _, conv = _choose(lib, _FakeCupy(), _FakeGeo(L.FMA_MATH, ("b",)),
                            "limited_workspace", 64 * MB)
    assert algo == 2 and conv == ("conv", L.FMA_MATH)


def test_search_workspace_halves_when_the_pool_cannot_give_it():
    heur = [(1, 0, -1.0, 4 * MB, L.DEFAULT_MATH)]
    found = [(3, 0, 0.5, 100 * MB, L.DEFAULT_MATH), (1, 0, 0.7, 4 * MB, L.DEFAULT_MATH)]
    lib = _FakeLib(heur, found, {})
    algo, ws, _ = _choose(lib, _FakeCupy(fail_above=300 * MB), _FakeGeo(L.DEFAULT_MATH,
                                                                        ("c",)),
                          "limited_workspace", 1024 * MB)
    assert lib.find_caps == [256 * MB] * 2 and algo == 3 and ws == 100 * MB


def test_tune_off_takes_the_heuristic_first_fit_and_its_math():
    heur = [(4, 0, -1.0, 2048 * MB, L.TENSOR_OP_MATH), (1, 0, -1.0, 8 * MB,
                                                        L.DEFAULT_MATH)]
    lib = _FakeLib(heur, [], {1: 8 * MB})
    algo, ws, conv = _choose(lib, _FakeCupy(), _FakeGeo(L.DEFAULT_MATH, ("d",)), "off",
                             1024 * MB)
    assert (algo, ws, conv) == (1, 8 * MB, ("conv", L.DEFAULT_MATH))
    assert lib.find_caps == []


def test_search_for_an_accumulating_call_writes_a_scratch_output():
    """The measured search runs trial convolutions into its output pointer; for a call
    that adds into its output (cuDNN beta = 1, a gradient summed over two branches)
    that would clobber the sum, so the search gets a scratch array instead."""
    import types
    heur = [(1, 0, -1.0, 0, L.DEFAULT_MATH)]
    found = [(2, 0, 0.5, 0, L.DEFAULT_MATH)]
    lib = _FakeLib(heur, found, {})
    pointers = []
    orig = lib.cudnnFindConvolutionForwardAlgorithmEx

    def find(h, d0, p0, d1, p1, conv, d3, p3, *rest):
        pointers.append(p3)
        return orig(h, d0, p0, d1, p1, conv, d3, p3, *rest)
    lib.cudnnFindConvolutionForwardAlgorithmEx = find

    scratch = types.SimpleNamespace(data=types.SimpleNamespace(ptr=999))
    cp = _FakeCupy()
    cp.empty_like = lambda a: scratch
    rt = types.SimpleNamespace(lib=lib, cupy=cp)
    out = types.SimpleNamespace(data=types.SimpleNamespace(ptr=3))
    K._choose(rt, 7, "fwd", _FakeGeo(L.DEFAULT_MATH, ("acc",)), "limited_workspace",
              1024 * MB, (1, 2, 3), out)
    K._choose(rt, 7, "fwd", _FakeGeo(L.DEFAULT_MATH, ("plain",)), "limited_workspace",
              1024 * MB, (1, 2, 3))
    assert pointers == [999, 999, 3, 3]       # two searches each (warm, then measured)
