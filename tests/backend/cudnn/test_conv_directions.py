"""The three convolution directions share one runner (kernels._conv_run): each must
call its own cuDNN function with the descriptors and data pointers in cuDNN's order,
and geometries and pooling descriptors are made once per key. No GPU needed: the
library, CuPy and the arrays are stand-ins."""
import types

import numpy as np
import pytest

from mxnet.backend.cudnn import _lib as L
from mxnet.backend.cudnn import kernels as K


class _Arr:
    def __init__(self, ptr):
        self.data = types.SimpleNamespace(ptr=ptr)
        self.device = types.SimpleNamespace(id=0)


class _Lib:
    def __init__(self):
        self.calls = []

    def __getattr__(self, name):
        if not name.startswith("cudnnConvolution"):
            raise AttributeError(name)

        def call(*args):
            self.calls.append((name, args))
            return L.STATUS_SUCCESS
        return call


@pytest.fixture
def fake(monkeypatch):
    lib = _Lib()
    rt = types.SimpleNamespace(lib=lib, cupy=None, handle=lambda dev: "H")
    monkeypatch.setattr(K, "runtime", lambda: rt)
    chosen = []

    def choose(rt_, h, direction, g, tune, limit, ptrs, out=None):
        chosen.append((direction, ptrs, out))
        return 3, 0, "CONV"
    monkeypatch.setattr(K, "_choose", choose)
    return lib, chosen


def _geo():
    return types.SimpleNamespace(x="X", w="W", y="Y", conv="CONV0", dtype=np.float32)


@pytest.mark.parametrize("fn, name, descs", [
    (K.conv_forward, "cudnnConvolutionForward", ("X", "W", "Y")),
    (K.conv_backward_data, "cudnnConvolutionBackwardData", ("W", "Y", "X")),
    (K.conv_backward_filter, "cudnnConvolutionBackwardFilter", ("X", "Y", "W")),
])
def test_each_direction_calls_its_function_in_cudnn_order(fake, fn, name, descs):
    lib, chosen = fake
    a, b, c = _Arr(11), _Arr(22), _Arr(33)
    assert fn(_geo(), a, b, c, "off", 64) is c
    (called, args), = lib.calls
    assert called == name
    one, zero = K.D.scalars(np.float32)
    assert args == ("H", one, descs[0], 11, descs[1], 22, "CONV", 3, 0, 0, zero,
                    descs[2], 33)
    assert chosen[0][1] == (11, 22, 33)        # the algorithm search sees the same order
    assert chosen[0][2] is None                 # ... and may write its trial results in c
    lib.calls.clear()
    assert fn(_geo(), a, b, c, "off", 64, accumulate=True) is c
    (called, args), = lib.calls
    assert args[10] == one                      # beta = 1: c += the result
    assert chosen[1][2] is c                    # the search must keep c's contents


def test_pool_descriptors_made_once(monkeypatch):
    made = []
    rt = types.SimpleNamespace(lib="lib")
    monkeypatch.setattr(K, "runtime", lambda: rt)
    monkeypatch.setattr(K, "_pool_descs", {})
    monkeypatch.setattr(K.D, "pooling", lambda *a: made.append("pool") or "P")
    monkeypatch.setattr(K.D, "tensor",
                        lambda lib, shape, dt, strides=None: ("T", tuple(shape)))
    monkeypatch.setattr(K.D, "pool_output_dims", lambda lib, pd, xd, n: (2, 3, 4, 4))
    args = ((2, 3, 8, 8), (2, 3, 4, 4), 0, (2, 2), (0, 0), (2, 2), np.float32)
    first = K.pool_descriptor(*args)
    assert K.pool_descriptor(*args) is first and made == ["pool"]
    with pytest.raises(K.D.NotSupported):
        K.pool_descriptor((2, 3, 8, 8), (2, 3, 5, 5), 0, (2, 2), (0, 0), (2, 2),
                          np.float32)


class _BnArr(np.ndarray):
    """A host array with the device pointer and device the batch-norm calls read."""
    @property
    def data(self):
        return types.SimpleNamespace(ptr=self.__array_interface__["data"][0])

    @property
    def device(self):
        return types.SimpleNamespace(id=0)


def test_batchnorm_falls_back_to_spatial_where_persistent_is_refused(monkeypatch):
    modes = []

    def call(*args):
        modes.append(args[1])
        return 3 if args[1] == L.BATCHNORM_SPATIAL_PERSISTENT else L.STATUS_SUCCESS
    lib = types.SimpleNamespace(cudnnBatchNormalizationForwardTraining=call,
                                cudnnBatchNormalizationBackward=call,
                                cudnnGetErrorString=lambda status: b"refused")
    monkeypatch.setattr(K, "runtime",
                        lambda: types.SimpleNamespace(lib=lib, handle=lambda dev: "H"))
    monkeypatch.setattr(K, "_bn_descs", lambda lib_, x4, mode=None: ("XD", "BD"))
    monkeypatch.setattr(K, "_PERSISTENT_REFUSED", set())
    x = np.zeros((2, 3, 4, 8), np.float32).transpose(0, 3, 1, 2).view(_BnArr)  # NHWC
    v = np.zeros(8, np.float32).view(_BnArr)
    K.bn_forward_training(x, x, v, v, 1e-3, v, v)
    assert modes == [L.BATCHNORM_SPATIAL_PERSISTENT, L.BATCHNORM_SPATIAL]
    K.bn_backward(x, x, x, v, v, v, 1e-3, v, v)     # remembered: SPATIAL at once
    assert modes[2:] == [L.BATCHNORM_SPATIAL]
    modes.clear()
    lib.cudnnBatchNormalizationBackward = lambda *a: modes.append(a[1]) or 9
    with pytest.raises(L.CudnnError):                # a refusal of SPATIAL is an error
        K.bn_backward(x, x, x, v, v, v, 1e-3, v, v)


class _Plan:
    """A stand-in graph-API plan: records its runs, or refuses them."""

    def __init__(self, refuse=False):
        self.workspace, self.failed, self.refuse, self.runs = 0, False, refuse, []

    def run(self, handle, ptrs, ws_ptr):
        if self.refuse:
            raise L.CudnnError("cudnnBackendExecute", 3000, "CUDNN_STATUS_NOT_SUPPORTED")
        self.runs.append((handle, ptrs, ws_ptr))


@pytest.fixture
def planned(fake, monkeypatch):
    from mxnet.backend.cudnn import graph_api
    monkeypatch.setenv("MXNET_CUDNN_GRAPH_API", "1")
    asked = []

    def use(plan):
        def conv_plan(rt, h, direction, g, tune, limit, ptrs, out=None, accumulate=False):
            asked.append((direction, ptrs, accumulate))
            return None if plan is None or plan.failed else plan
        monkeypatch.setattr(graph_api, "conv_plan", conv_plan)
        return asked
    return fake, use


@pytest.mark.parametrize("fn, direction", [(K.conv_forward, "fwd"),
                                           (K.conv_backward_data, "bwd_data"),
                                           (K.conv_backward_filter, "bwd_filter")])
def test_with_the_switch_a_plan_runs_instead_of_the_legacy_call(planned, fn, direction):
    (lib, chosen), use = planned
    plan = _Plan()
    asked = use(plan)
    a, b, c = _Arr(16), _Arr(32), _Arr(48)
    assert fn(_geo(), a, b, c, "off", 64, accumulate=True) is c
    assert asked == [(direction, (16, 32, 48), True)]
    assert plan.runs == [("H", (16, 32, 48), 0)] and lib.calls == [] and chosen == []


def test_declined_refused_and_unaligned_calls_take_the_legacy_path(planned):
    (lib, chosen), use = planned
    asked = use(None)                       # no plan for this problem
    K.conv_forward(_geo(), _Arr(16), _Arr(32), _Arr(48), "off", 64)
    assert len(lib.calls) == 1 and len(asked) == 1
    refusing = _Plan(refuse=True)
    asked = use(refusing)                   # refused at run time: legacy, then never again
    for _ in range(2):
        K.conv_forward(_geo(), _Arr(16), _Arr(32), _Arr(48), "off", 64)
    assert refusing.failed and len(lib.calls) == 3
    plan = _Plan()
    use(plan)
    K.conv_forward(_geo(), _Arr(16), _Arr(40), _Arr(48), "off", 64)   # 40: not 16-aligned
    assert plan.runs == [] and len(lib.calls) == 4


def test_without_the_switch_no_plan_is_asked_for(planned, monkeypatch):
    (lib, chosen), use = planned
    asked = use(_Plan())
    monkeypatch.delenv("MXNET_CUDNN_GRAPH_API")
    K.conv_forward(_geo(), _Arr(16), _Arr(32), _Arr(48), "off", 64)
    assert asked == [] and len(lib.calls) == 1


def test_a_plan_whose_workspace_runs_out_of_memory_takes_the_legacy_call(planned,
                                                                         monkeypatch):
    (lib, chosen), use = planned
    plan = _Plan()
    plan.workspace = 1 << 30
    use(plan)

    def workspace(cp, nbytes):
        if nbytes == plan.workspace:
            raise MemoryError("out of memory")      # CuPy's OutOfMemoryError is one
        return None, 0
    monkeypatch.setattr(K, "_workspace", workspace)
    K.conv_forward(_geo(), _Arr(16), _Arr(32), _Arr(48), "off", 64)
    assert plan.runs == [] and len(lib.calls) == 1 and not plan.failed
