"""cuDNN's graph API for convolutions (backend/cudnn/graph_api.py).

Without a GPU: the descriptors that need no device (tensors, the convolution, the three
operations) finalize with the values given and read them back, and cuDNN refuses an
operation whose shapes disagree: the enum values and attribute types are right. The
driver cuDNN's sub-libraries link is a stand-in then (tests/cuda_driver_stub.py).
With a GPU: every direction, layout, type and accumulation through cached plans equals
the legacy calls, and the plans were used."""
import ctypes
import os
import types

import numpy as np
import pytest

from mxnet.backend.cudnn import _lib as L
from mxnet.backend.cudnn import graph_api as G
from mxnet.backend.cudnn import kernels as K

try:
    LIB, PATH = L.load()
except OSError as err:
    LIB, PATH, WHY = None, None, str(err)
else:
    WHY = ""

pytestmark = pytest.mark.skipif(LIB is None, reason=f"libcudnn not loadable: {WHY[:200]}")


@pytest.fixture(scope="module")
def lib():
    from cuda_driver_stub import preload
    if preload(os.path.dirname(PATH)) is None:
        pytest.skip("no CUDA driver and no C compiler for a stand-in")
    try:
        G.tensor(LIB, 1, (1, 1, 1, 1), (1, 1, 1, 1), np.float32)
    except L.CudnnError as err:         # e.g. a sub-library still missing
        pytest.skip(f"cuDNN cannot finalize descriptors here: {err}")
    return LIB


NHWC = (8 * 56 * 56, 1, 8 * 56, 8)


def test_tensor_descriptor_holds_what_was_set(lib):
    t = G.tensor(lib, 7, (4, 8, 56, 56), NHWC, np.dtype("float16"))
    assert t.get_int64s(G.A_TENSOR_DIMENSIONS, 8) == (4, 8, 56, 56)
    assert t.get_int64s(G.A_TENSOR_STRIDES, 8) == NHWC
    assert t.get_int64(G.A_TENSOR_UNIQUE_ID) == 7
    data_type = ctypes.c_int(-1)
    n = ctypes.c_int64(0)
    L.check(lib, "get", lib.cudnnBackendGetAttribute(
        t.ptr, G.A_TENSOR_DATA_TYPE, G.T_DATA_TYPE, 1, ctypes.byref(n),
        ctypes.byref(data_type)))
    assert data_type.value == L.DATA_HALF
    # (the byte alignment cannot be read back: cuDNN took it when set)


def test_convolution_descriptor_holds_what_was_set(lib):
    c = G.convolution(lib, (1, 2), (2, 1), (1, 3), np.dtype("float32"))
    assert c.get_int64(G.A_CONV_SPATIAL_DIMS) == 2
    assert c.get_int64s(G.A_CONV_PRE_PADDINGS, 4) == (1, 2)
    assert c.get_int64s(G.A_CONV_POST_PADDINGS, 4) == (1, 2)
    assert c.get_int64s(G.A_CONV_FILTER_STRIDES, 4) == (2, 1)
    assert c.get_int64s(G.A_CONV_DILATIONS, 4) == (1, 3)


def _tensors(lib, dtype, nhwc):
    shapes = {G.X_UID: (4, 8, 10, 10), G.W_UID: (16, 8, 3, 3), G.Y_UID: (4, 16, 10, 10)}
    return {u: G.tensor(lib, u, s, G._strides(s, nhwc), np.dtype(dtype))
            for u, s in shapes.items()}


@pytest.mark.parametrize("direction", ["fwd", "bwd_data", "bwd_filter"])
@pytest.mark.parametrize("nhwc", [False, True])
def test_operations_finalize_in_every_direction(lib, direction, nhwc):
    ts = _tensors(lib, "float32", nhwc)
    conv = G.convolution(lib, (1, 1), (1, 1), (1, 1), np.dtype("float32"))
    for accumulate in (False, True):
        G.operation(lib, direction, conv, [ts[u] for u in G.UIDS[direction]],
                    np.dtype("float32"), accumulate)


def test_an_operation_whose_shapes_disagree_is_refused(lib):
    ts = _tensors(lib, "float32", False)
    conv = G.convolution(lib, (1, 1), (1, 1), (1, 1), np.dtype("float32"))
    with pytest.raises(L.CudnnError, match="cudnnBackendFinalize"):
        # x and y swapped: a 16-channel input for a filter of 8 input channels
        G.operation(lib, "fwd", conv, [ts[G.Y_UID], ts[G.W_UID], ts[G.X_UID]],
                    np.dtype("float32"), False)


class _Geometry:
    def __init__(self, math):
        self.math, self.strict = math, math == L.FMA_MATH


@pytest.mark.parametrize("math", [L.FMA_MATH, L.TENSOR_OP_MATH_ALLOW_CONVERSION])
def test_math_types_the_plans_do_not_filter_for_take_the_legacy_call(math):
    assert G.conv_plan(None, 1, "fwd", _Geometry(math), "off", 1 << 20, (0, 0, 0)) is None


def test_alignment_check():
    assert G.aligned((0, 256, 4096)) and not G.aligned((0, 8, 4096))


# --- on a GPU: plans against the legacy calls ----------------------------------------
def _gpu():
    import mxnet as mx
    if mx.context.num_gpus() == 0:
        pytest.skip("no GPU")
    cp = pytest.importorskip("cupy")
    from mxnet.backend import cudnn
    if not cudnn.available():
        pytest.skip(f"cuDNN unavailable: {cudnn.load_error()}")
    return cp


@pytest.mark.parametrize("direction", ["fwd", "bwd_data", "bwd_filter"])
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("nhwc", [False, True])
@pytest.mark.parametrize("tune", ["off", "limited_workspace"])
def test_on_a_gpu_plans_equal_the_legacy_calls(monkeypatch, direction, dtype, nhwc, tune):
    cp = _gpu()
    from mxnet.base import bfloat16
    from mxnet.backend.cudnn import kernels as K
    if dtype == "bfloat16":
        try:
            cp.zeros(1, bfloat16)
        except Exception:   # noqa: BLE001  (no ml_dtypes, or a CuPy without bfloat16)
            pytest.skip("CuPy makes no bfloat16 arrays here")
    dt = bfloat16 if dtype == "bfloat16" else np.dtype(dtype)
    x_shape, w_shape, y_shape = (4, 16, 12, 12), (32, 16, 3, 3), (4, 32, 12, 12)
    g = K.geometry(x_shape, w_shape, y_shape, (1, 1), (1, 1), (1, 1), 1, dt, nhwc)
    rng = np.random.RandomState(0)

    def arr(shape):
        a = cp.asarray(rng.standard_normal(shape).astype(np.float32)).astype(dt)
        if nhwc:            # a logical NCHW view of NHWC memory
            a = cp.ascontiguousarray(a.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)
        return a
    x, w, y = arr(x_shape), arr(w_shape), arr(y_shape)
    ins = {"fwd": (x, w, y), "bwd_data": (w, y, x), "bwd_filter": (x, y, w)}[direction]
    results = []
    for graph in (False, True):
        monkeypatch.setenv("MXNET_CUDNN_GRAPH_API", "1" if graph else "0")
        for accumulate in (False, True):
            a, b, c = ins
            out = c.copy()
            K._conv_run(direction, g, a, b, out, tune, 256, accumulate)
            results.append(cp.asnumpy(out.astype(np.float32)))
    plans = [p for p in getattr(g, "graph_plans", {}).values() if p is not G._UNSUPPORTED]
    assert plans, "the graph path declined every call"
    tol = 5e-2 if dtype != "float32" else 1e-2       # TF32 allowed on both paths
    scale = max(1.0, float(np.abs(results[0]).max()))
    for legacy, planned in ((results[0], results[2]), (results[1], results[3])):
        np.testing.assert_allclose(planned, legacy, rtol=tol, atol=tol * scale)


def test_on_a_gpu_the_registered_convolution_uses_plans(monkeypatch):
    cp = _gpu()
    import mxnet as mx
    from mxnet.backend.cudnn import kernels as K
    monkeypatch.setenv("MXNET_CUDNN_GRAPH_API", "1")
    monkeypatch.setenv("NVIDIA_TF32_OVERRIDE", "0")     # strict: declined, legacy runs
    rng = np.random.RandomState(1)
    x = rng.standard_normal((2, 3, 9, 9)).astype(np.float32)
    w = rng.standard_normal((5, 3, 3, 3)).astype(np.float32)
    want = mx.nd.Convolution(mx.nd.array(x), mx.nd.array(w), kernel=(3, 3), num_filter=5,
                             no_bias=True).asnumpy()
    monkeypatch.delenv("NVIDIA_TF32_OVERRIDE")
    got = mx.nd.Convolution(mx.nd.array(x, ctx=mx.gpu(0)), mx.nd.array(w, ctx=mx.gpu(0)),
                            kernel=(3, 3), num_filter=5, no_bias=True).asnumpy()
    np.testing.assert_allclose(got, want, rtol=1e-2, atol=1e-2)
    assert any(p is not G._UNSUPPORTED for g in K._geometries.values()
               for p in getattr(g, "graph_plans", {}).values())
    del cp


def _notes(cfg):
    """Stand-in engine notes: '_rtc' compiles at run time, '_down' down-converts, '_rpr'
    reduces in reduced precision, '_mute' has notes cuDNN cannot give."""
    if "_mute" in cfg:
        return None
    numerical = {0}
    if "_down" in cfg:
        numerical.add(G.NUMERICAL_NOTE_DOWN_CONVERT_INPUTS)
    if "_rpr" in cfg:
        numerical.add(G.NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION)
    return ({G.BEHAVIOR_NOTE_RUNTIME_COMPILATION} if "_rtc" in cfg else set(), numerical)


def test_precompiled_engines_come_first_and_other_arithmetic_never(monkeypatch):
    """A runtime-compiled engine (an NVRTC compile per problem at plan time) is taken
    only after every precompiled one, the heuristic's order kept within each group; an
    engine that down-converts its inputs (the legacy path's ALLOW_CONVERSION math,
    which the plans decline) or reduces below float32, or whose notes cuDNN cannot
    give, is not taken."""
    cfgs = ["a_rtc", "b", "x_down", "c_rtc", "d", "y_rtc_down", "e_rpr", "f_mute"]
    monkeypatch.setattr(G, "_engine_configs", lambda lib, graph: list(cfgs))
    monkeypatch.setattr(G, "engine_notes", lambda lib, cfg: _notes(cfg))
    assert G._ordered_configs(None, None) == [("b", False), ("d", False),
                                              ("a_rtc", True), ("c_rtc", True)]


def _plan_world(monkeypatch, workspaces, known):
    """Stand-ins under _plans: the ordered configurations, the workspace cuDNN reports
    before finalizing (``known``; absent: cannot say) and after (``workspaces``), and a
    log of the configurations finalized (a runtime-compiled one compiles there)."""
    monkeypatch.setattr(G, "_build", lambda *a: ("GRAPH", []))
    monkeypatch.setattr(G, "_ordered_configs", lambda lib, graph: [
        (c, c.endswith("_rtc")) for c in workspaces])
    monkeypatch.setattr(G, "config_workspace", lambda cfg: known.get(cfg))
    finalized = []

    def finalize(lib, handle, cfg):
        finalized.append(cfg)
        return "PLAN_" + cfg, workspaces[cfg]
    monkeypatch.setattr(G, "finalized_plan", finalize)
    return finalized


@pytest.mark.parametrize("tune", ["off", "limited_workspace", "fastest"])
def test_no_kernel_is_compiled_where_a_precompiled_engine_fits(monkeypatch, tune):
    """With a precompiled configuration that fits, no runtime-compiled one is
    finalized (finalizing compiles it), and one known to need more workspace than the
    limit is passed over unfinalized (one candidate left: chosen without timing, so no
    device is needed here)."""
    finalized = _plan_world(monkeypatch, {"p1": 0, "p2_big": 1 << 40, "r1_rtc": 0,
                                          "r2_rtc": 0}, known={"p2_big": 1 << 40})
    rt = types.SimpleNamespace(lib=None, cupy=None)
    plan = G._choose(rt, "H", "fwd", None, tune, 1 << 20, (0, 0, 0), None, False)
    assert plan.plan == "PLAN_p1" and finalized == ["p1"]


@pytest.mark.parametrize("tune", ["off", "limited_workspace"])
def test_a_kernel_is_compiled_only_where_nothing_precompiled_fits(monkeypatch, tune):
    """No precompiled configuration fits (one only found out by finalizing it): the
    first runtime-compiled one that fits is compiled, and no further one."""
    finalized = _plan_world(monkeypatch, {"p1": 1 << 30, "r0_rtc": 1 << 30, "r1_rtc": 0,
                                          "r2_rtc": 0}, known={"r0_rtc": 1 << 30})
    rt = types.SimpleNamespace(lib=None, cupy=None)
    plan = G._choose(rt, "H", "fwd", None, tune, 1 << 20, (0, 0, 0), None, False)
    assert plan.plan == "PLAN_r1_rtc" and finalized == ["p1", "r1_rtc"]


def test_fastest_has_a_workspace_cap():
    """MXNet's 'fastest' ignores the workspace limit; both paths still cap it (a plan's
    workspace is allocated on every call)."""
    assert K.workspace_cap("fastest", 1 << 20) == K._FASTEST_CAP
    assert K.workspace_cap("fastest", K._FASTEST_CAP * 2) == K._FASTEST_CAP * 2
    assert K.workspace_cap("limited_workspace", 1 << 20) == 1 << 20


def test_plans_are_built_for_the_geometry_dtype_bfloat16_included(lib, monkeypatch):
    """The tensors take the geometry's dtype: bfloat16's dtype string in the key is a
    plain void ('<V2') that names no cuDNN type."""
    from mxnet.base import bfloat16
    if bfloat16 is None:
        pytest.skip("no ml_dtypes")
    monkeypatch.setattr(G, "_operation_graph", lambda lib_, handle, op: "GRAPH")
    dt = np.dtype(bfloat16)
    x, w, y = (2, 8, 6, 6), (4, 8, 3, 3), (2, 4, 6, 6)
    g = types.SimpleNamespace(key=(x, w, y, (1, 1), (1, 1), (1, 1), 1, dt.str, 0, False),
                              dtype=dt)
    graph, descs = G._build(lib, None, "fwd", g, False)
    assert graph == "GRAPH" and len(descs) == 5
    data_type, n = ctypes.c_int(-1), ctypes.c_int64(0)
    L.check(lib, "get", lib.cudnnBackendGetAttribute(
        descs[0].ptr, G.A_TENSOR_DATA_TYPE, G.T_DATA_TYPE, 1, ctypes.byref(n),
        ctypes.byref(data_type)))
    assert data_type.value == L.DATA_BFLOAT16


def test_out_of_memory_while_choosing_takes_the_legacy_call_and_asks_again(monkeypatch):
    def oom(*a):
        raise MemoryError("out of memory")
    monkeypatch.setattr(G, "_choose", oom)
    g = types.SimpleNamespace(strict=False, math=0)
    monkeypatch.setattr("mxnet.backend.cublas_graph.capturing", lambda: False)
    assert G.conv_plan(None, "H", "fwd", g, "off", 0, (0, 0, 0)) is None
    assert g.graph_plans == {}          # not remembered as unsupported
