"""Convolutions through cuDNN's graph API (the backend descriptors NVIDIA's
cudnn-frontend wraps): an execution plan per problem, built once, run with a variant
pack per call.

Why: cuDNN 9 runs its legacy convolution calls (``cudnnConvolutionForward`` and the two
backward ones) through this API and pays for it on every call: on an H100 machine each
legacy call took ~0.19 ms of host time (session 12's profile of a ResNet-50 step without
CUDA graphs: 158 calls, ~30 ms of host time a step against ~17 ms of GPU work). With a
cached plan a call is one variant pack (the three data pointers and the workspace) and
``cudnnBackendExecute``. The frontend's Python wheel would do the same, but it needs
~100 MB of further packages (CUTLASS DSL, cuda-bindings); these few descriptors need
only the libcudnn already loaded.

Switch: ``MXNET_CUDNN_GRAPH_API=1`` (off by default until a device run has measured
it). ``backend/cudnn/kernels.py`` asks ``conv_plan`` first and keeps the legacy call
for what it declines: a math type other than cuDNN's default and tensor-op ones (FMA
math: ``NVIDIA_TF32_OVERRIDE=0`` or ``MXNET_CUDA_ALLOW_TENSOR_CORE=0``; and
``MXNET_CUDA_TENSOR_OP_MATH_ALLOW_CONVERSION=1``: the plans never take an engine
that down-converts its inputs); a problem no engine configuration takes; a first call inside a CUDA-graph
capture (no building or timing there); pointers below the plans' 16-byte alignment.

The algorithm follows MXNet's ``cudnn_tune`` as on the legacy path: 'off' takes the
first configuration of cuDNN's heuristic (mode A) whose workspace fits the limit
(engines with precompiled kernels before those that compile one per problem);
'limited_workspace' and 'fastest' time up to ``_TIMED`` fitting configurations (the
precompiled ones; a runtime-compiled one only where none of those fits) on the
call's own arrays (each run once untimed first: CUDA loads kernels lazily) and keep the
fastest. Plans are cached per cuDNN handle (per thread and device, _runtime.py), as a
plan holds the handle it was built with. Running out of device memory while choosing or
for a plan's workspace takes the legacy call that time.

The enum values are cuDNN 9's ``cudnn_graph.h``.
"""
import ctypes

from . import _lib as L
from . import descriptors as D

__all__ = ["conv_plan", "ConvPlan", "tensor", "convolution", "operation", "UIDS"]

# cudnnBackendDescriptorType_t
_CONVOLUTION, _ENGINE, _ENGINECFG, _ENGINEHEUR, _EXECUTION_PLAN = 1, 2, 3, 4, 5
_OPERATION = {"fwd": 10, "bwd_filter": 11, "bwd_data": 12}
_OPERATIONGRAPH, _VARIANT_PACK, _TENSOR = 15, 16, 17
# cudnnBackendAttributeType_t
T_HANDLE, T_DATA_TYPE, T_INT64, T_FLOAT, T_DOUBLE, T_VOID_PTR = 0, 1, 3, 4, 5, 6
T_CONVOLUTION_MODE, T_HEUR_MODE, T_NUMERICAL_NOTE = 7, 8, 11
T_BACKEND_DESCRIPTOR, T_BEHAVIOR_NOTE = 15, 19
# cudnnBackendAttributeName_t
A_CONV_COMP_TYPE, A_CONV_MODE, A_CONV_DILATIONS, A_CONV_FILTER_STRIDES = 100, 101, 102, 103
A_CONV_POST_PADDINGS, A_CONV_PRE_PADDINGS, A_CONV_SPATIAL_DIMS = 104, 105, 106
A_HEUR_MODE, A_HEUR_OPERATION_GRAPH, A_HEUR_RESULTS = 200, 201, 202
A_CFG_ENGINE, A_CFG_WORKSPACE_SIZE = 300, 303      # (the latter: cuDNN >= 9.2)
A_ENGINE_NUMERICAL_NOTE, A_ENGINE_BEHAVIOR_NOTE = 1303, 1305
A_PLAN_HANDLE, A_PLAN_ENGINE_CONFIG, A_PLAN_WORKSPACE_SIZE = 400, 401, 402
A_GRAPH_HANDLE, A_GRAPH_OPS = 800, 801
A_TENSOR_BYTE_ALIGNMENT, A_TENSOR_DATA_TYPE, A_TENSOR_DIMENSIONS = 900, 901, 902
A_TENSOR_STRIDES, A_TENSOR_UNIQUE_ID = 903, 906
A_PACK_UNIQUE_IDS, A_PACK_DATA_POINTERS, A_PACK_WORKSPACE = 1000, 1001, 1003
# per direction: (alpha, beta, conv desc, then the three tensors' attributes in the
# order of kernels._conv_run's arrays: fwd (x, w, y), bwd_data (w, dy, dx), bwd_filter
# (x, dy, dw))
_OP_ATTRS = {
    "fwd": (700, 701, 702, (704, 703, 705)),
    "bwd_data": (706, 707, 708, (709, 711, 710)),
    "bwd_filter": (712, 713, 714, (716, 717, 715)),
}
# unique ids of x, w, y; per direction, the ids of _conv_run's three arrays in order
X_UID, W_UID, Y_UID = 1, 2, 3
UIDS = {"fwd": (X_UID, W_UID, Y_UID), "bwd_data": (W_UID, Y_UID, X_UID),
        "bwd_filter": (X_UID, Y_UID, W_UID)}
HEUR_MODE_A = 3
BEHAVIOR_NOTE_RUNTIME_COMPILATION, BEHAVIOR_NOTE_COUNT = 0, 5
NUMERICAL_NOTE_DOWN_CONVERT_INPUTS, NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION = 1, 2
NUMERICAL_NOTE_COUNT = 10
CROSS_CORRELATION = 1
ALIGNMENT = 16
_TIMED = 8                  # configurations timed by a tuned choice
_TIMING_RUNS = 3


class Descriptor:
    """One backend descriptor, destroyed with the object."""
    __slots__ = ("lib", "ptr")

    def __init__(self, lib, kind):
        self.lib, self.ptr = lib, ctypes.c_void_p()
        L.check(lib, "cudnnBackendCreateDescriptor",
                lib.cudnnBackendCreateDescriptor(kind, ctypes.byref(self.ptr)))

    def set(self, name, atype, ctype, values):
        arr = (ctype * len(values))(*values)
        L.check(self.lib, "cudnnBackendSetAttribute",
                self.lib.cudnnBackendSetAttribute(self.ptr, name, atype, len(values), arr))

    def set_descriptors(self, name, descs):
        self.set(name, T_BACKEND_DESCRIPTOR, ctypes.c_void_p, [d.ptr.value for d in descs])

    def get_int64(self, name):
        return self.get_int64s(name, 1)[0]

    def get_int64s(self, name, count):
        arr, n = (ctypes.c_int64 * count)(), ctypes.c_int64(0)
        L.check(self.lib, "cudnnBackendGetAttribute",
                self.lib.cudnnBackendGetAttribute(self.ptr, name, T_INT64, count,
                                                  ctypes.byref(n), arr))
        return tuple(arr[:n.value])

    def finalize(self):
        L.check(self.lib, "cudnnBackendFinalize", self.lib.cudnnBackendFinalize(self.ptr))
        return self

    def __del__(self):
        try:
            if self.ptr:
                self.lib.cudnnBackendDestroyDescriptor(self.ptr)
        except Exception:       # interpreter shutdown: the library may be gone
            pass


def tensor(lib, uid, dims, strides, dtype):
    """A finalized tensor descriptor (``dims``/``strides`` in elements, logical
    N, C, spatial order)."""
    d = Descriptor(lib, _TENSOR)
    d.set(A_TENSOR_DATA_TYPE, T_DATA_TYPE, ctypes.c_int, [D.data_type(dtype)])
    d.set(A_TENSOR_DIMENSIONS, T_INT64, ctypes.c_int64, [int(v) for v in dims])
    d.set(A_TENSOR_STRIDES, T_INT64, ctypes.c_int64, [int(v) for v in strides])
    d.set(A_TENSOR_UNIQUE_ID, T_INT64, ctypes.c_int64, [int(uid)])
    d.set(A_TENSOR_BYTE_ALIGNMENT, T_INT64, ctypes.c_int64, [ALIGNMENT])
    return d.finalize()


def convolution(lib, pad, stride, dilate, dtype):
    """A finalized cross-correlation descriptor (computing in float for half, bfloat16
    and float data, double for double, as the legacy descriptors)."""
    d = Descriptor(lib, _CONVOLUTION)
    nd = len(pad)
    d.set(A_CONV_COMP_TYPE, T_DATA_TYPE, ctypes.c_int, [D.compute_type(dtype)])
    d.set(A_CONV_MODE, T_CONVOLUTION_MODE, ctypes.c_int, [CROSS_CORRELATION])
    d.set(A_CONV_SPATIAL_DIMS, T_INT64, ctypes.c_int64, [nd])
    d.set(A_CONV_DILATIONS, T_INT64, ctypes.c_int64, [int(v) for v in dilate])
    d.set(A_CONV_FILTER_STRIDES, T_INT64, ctypes.c_int64, [int(v) for v in stride])
    d.set(A_CONV_PRE_PADDINGS, T_INT64, ctypes.c_int64, [int(v) for v in pad])
    d.set(A_CONV_POST_PADDINGS, T_INT64, ctypes.c_int64, [int(v) for v in pad])
    return d.finalize()


def operation(lib, direction, conv, tensors, dtype, accumulate):
    """A finalized convolution operation of ``direction`` over ``tensors`` (the
    descriptors of _conv_run's three arrays, in its order): out = 1 * f(...) + beta *
    out, beta 1 when ``accumulate``."""
    alpha, beta, conv_attr, tensor_attrs = _OP_ATTRS[direction]
    d = Descriptor(lib, _OPERATION[direction])
    d.set_descriptors(conv_attr, [conv])
    for attr, t in zip(tensor_attrs, tensors):
        d.set_descriptors(attr, [t])
    if D.compute_type(dtype) == L.DATA_DOUBLE:
        scale_t, scale_c = T_DOUBLE, ctypes.c_double
    else:
        scale_t, scale_c = T_FLOAT, ctypes.c_float
    d.set(alpha, scale_t, scale_c, [1.0])
    d.set(beta, scale_t, scale_c, [1.0 if accumulate else 0.0])
    return d.finalize()


def _operation_graph(lib, handle, op):
    d = Descriptor(lib, _OPERATIONGRAPH)
    d.set(A_GRAPH_HANDLE, T_HANDLE, ctypes.c_void_p, [handle])
    d.set_descriptors(A_GRAPH_OPS, [op])
    return d.finalize()


def _engine_configs(lib, graph):
    """The engine configurations cuDNN's heuristic (mode A) ranks for ``graph``, best
    first."""
    heur = Descriptor(lib, _ENGINEHEUR)
    heur.set_descriptors(A_HEUR_OPERATION_GRAPH, [graph])
    heur.set(A_HEUR_MODE, T_HEUR_MODE, ctypes.c_int, [HEUR_MODE_A])
    heur.finalize()
    n = ctypes.c_int64(0)
    L.check(lib, "cudnnBackendGetAttribute",
            lib.cudnnBackendGetAttribute(heur.ptr, A_HEUR_RESULTS, T_BACKEND_DESCRIPTOR, 0,
                                         ctypes.byref(n), None))
    cfgs = [Descriptor(lib, _ENGINECFG) for _ in range(n.value)]
    if not cfgs:
        return []
    arr = (ctypes.c_void_p * len(cfgs))(*[c.ptr.value for c in cfgs])
    L.check(lib, "cudnnBackendGetAttribute",
            lib.cudnnBackendGetAttribute(heur.ptr, A_HEUR_RESULTS, T_BACKEND_DESCRIPTOR,
                                         len(cfgs), ctypes.byref(n), arr))
    return cfgs[:n.value]


class ConvPlan:
    """A finalized execution plan of one convolution direction: ``run`` executes it on
    three data pointers (in _conv_run's order) and a workspace of ``workspace`` bytes.
    Holds the descriptors it was built from (cuDNN's plan refers to them)."""

    def __init__(self, lib, plan, workspace, uids, keep):
        self.lib, self.plan, self.workspace = lib, plan, int(workspace)
        self.failed = False         # set when a run was refused: the legacy call then
        self._uids = (ctypes.c_int64 * 3)(*uids)
        self._keep = keep

    def run(self, handle, ptrs, ws_ptr):
        lib = self.lib
        pack = Descriptor(lib, _VARIANT_PACK)
        L.check(lib, "cudnnBackendSetAttribute",
                lib.cudnnBackendSetAttribute(pack.ptr, A_PACK_UNIQUE_IDS, T_INT64, 3,
                                             self._uids))
        pack.set(A_PACK_DATA_POINTERS, T_VOID_PTR, ctypes.c_void_p, list(ptrs))
        pack.set(A_PACK_WORKSPACE, T_VOID_PTR, ctypes.c_void_p, [ws_ptr or None])
        pack.finalize()
        L.check(lib, "cudnnBackendExecute",
                lib.cudnnBackendExecute(handle, self.plan.ptr, pack.ptr))


def aligned(ptrs):
    """Whether every pointer meets the plans' byte alignment."""
    for p in ptrs:
        if p % ALIGNMENT:
            return False
    return True


def _strides(shape, channels_last):
    return D.nhwc_strides(shape) if channels_last else D._packed(tuple(shape))


def _build(lib, handle, direction, g, accumulate):
    """(op graph, its descriptors) for ConvGeometry ``g``."""
    x_shape, w_shape, y_shape, pad, stride, dilate, _groups, _dt, _math, nhwc = g.key
    dtype = g.dtype     # (the key holds dtype.str: bfloat16's is a plain void '<V2')
    x = tensor(lib, X_UID, x_shape, _strides(x_shape, nhwc), dtype)
    w = tensor(lib, W_UID, w_shape, _strides(w_shape, nhwc), dtype)
    y = tensor(lib, Y_UID, y_shape, _strides(y_shape, nhwc), dtype)
    by_uid = {X_UID: x, W_UID: w, Y_UID: y}
    conv = convolution(lib, pad, stride, dilate, dtype)
    op = operation(lib, direction, conv, [by_uid[u] for u in UIDS[direction]], dtype,
                   accumulate)
    return _operation_graph(lib, handle, op), [x, w, y, conv, op]


def engine_notes(lib, cfg):
    """(behaviour notes, numerical notes) of engine configuration ``cfg``'s engine, as
    sets of cuDNN's enum values; None where cuDNN cannot say (the configuration is
    then not taken: it could be one that down-converts)."""
    try:
        engine = Descriptor(lib, _ENGINE)
        n = ctypes.c_int64(0)
        ref = ctypes.c_void_p(engine.ptr.value)
        L.check(lib, "cudnnBackendGetAttribute",
                lib.cudnnBackendGetAttribute(cfg.ptr, A_CFG_ENGINE, T_BACKEND_DESCRIPTOR, 1,
                                             ctypes.byref(n), ctypes.byref(ref)))
        found = []
        for attr, kind, count in ((A_ENGINE_BEHAVIOR_NOTE, T_BEHAVIOR_NOTE,
                                   BEHAVIOR_NOTE_COUNT),
                                  (A_ENGINE_NUMERICAL_NOTE, T_NUMERICAL_NOTE,
                                   NUMERICAL_NOTE_COUNT)):
            notes = (ctypes.c_int * count)()
            L.check(lib, "cudnnBackendGetAttribute",
                    lib.cudnnBackendGetAttribute(engine.ptr, attr, kind, count,
                                                 ctypes.byref(n), notes))
            found.append(set(notes[:n.value]))
    except L.CudnnError:
        return None
    return tuple(found)


# engines whose arithmetic is not the legacy path's: inputs down-converted (its
# TENSOR_OP_MATH_ALLOW_CONVERSION, which conv_plan declines) or reductions accumulated
# below float32 (the legacy descriptors ask for float32 accumulation)
_REFUSED_NOTES = frozenset((NUMERICAL_NOTE_DOWN_CONVERT_INPUTS,
                            NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION))


def _ordered_configs(lib, graph):
    """[(configuration, runtime-compiled)] of the heuristic's configurations, those
    with precompiled kernels first (the heuristic's order kept within each group): a
    runtime-compiled engine compiles its kernel with NVRTC when a plan is finalized (up
    to a second per problem; a model has dozens), so it is taken only where no
    precompiled one fits, as PyTorch's cuDNN path does by default. Engines that
    down-convert their inputs or reduce in reduced precision are dropped (PyTorch
    drops the former too), and so are those whose notes cuDNN cannot give."""
    ordered = ([], [])
    for cfg in _engine_configs(lib, graph):
        notes = engine_notes(lib, cfg)
        if notes is None:
            continue
        behaviour, numerical = notes
        if numerical & _REFUSED_NOTES:
            continue
        rtc = BEHAVIOR_NOTE_RUNTIME_COMPILATION in behaviour
        ordered[rtc].append((cfg, rtc))
    return ordered[0] + ordered[1]


def config_workspace(cfg):
    """The workspace bytes configuration ``cfg`` needs, read before any plan is
    finalized (cuDNN >= 9.2); None where cuDNN cannot say."""
    try:
        return cfg.get_int64(A_CFG_WORKSPACE_SIZE)
    except L.CudnnError:
        return None


def finalized_plan(lib, handle, cfg):
    """(plan descriptor, workspace bytes) of configuration ``cfg``, or None where this
    problem cannot run it. Finalizing is where a runtime-compiled engine compiles."""
    plan = Descriptor(lib, _EXECUTION_PLAN)
    try:
        plan.set(A_PLAN_HANDLE, T_HANDLE, ctypes.c_void_p, [handle])
        plan.set_descriptors(A_PLAN_ENGINE_CONFIG, [cfg])
        plan.finalize()
        return plan, plan.get_int64(A_PLAN_WORKSPACE_SIZE)
    except L.CudnnError:
        return None


def _plans(lib, handle, graph, limit, compile_ok=lambda: True):
    """(plan descriptor, workspace bytes, configuration, runtime-compiled) of each
    configuration that finalizes and fits ``limit`` (None: no limit), in
    ``_ordered_configs``' order. A configuration known to need more than ``limit`` is
    passed over unfinalized, and the runtime-compiled ones (last in that order) are
    finalized only while ``compile_ok()``, so no kernel is compiled to be thrown away."""
    for cfg, rtc in _ordered_configs(lib, graph):
        if rtc and not compile_ok():
            return
        if limit is not None:
            need = config_workspace(cfg)
            if need is not None and need > limit:
                continue
        made = finalized_plan(lib, handle, cfg)
        if made is None:
            continue
        plan, ws = made
        if limit is None or ws <= limit:
            yield plan, ws, cfg, rtc


_UNSUPPORTED = object()


def conv_plan(rt, handle, direction, g, tune, limit, ptrs, out=None, accumulate=False):
    """The ConvPlan for ConvGeometry ``g``'s ``direction`` under ``tune`` and workspace
    ``limit`` (bytes; kernels.workspace_cap's, so 'fastest' has one too), built and
    chosen at the first call (see the module docstring);
    None where the legacy path should run it. ``ptrs``: the call's three data pointers
    (a tuned choice times plans on them); ``out``: the output array, whose contents a
    tuned choice must keep when ``accumulate``."""
    if g.strict or g.math == L.TENSOR_OP_MATH_ALLOW_CONVERSION:
        return None
    plans = g.__dict__.get("graph_plans")
    if plans is None:
        plans = g.graph_plans = {}
    short = (handle, direction, tune, limit, accumulate)
    hit = plans.get(short)
    if hit is not None:
        return None if hit is _UNSUPPORTED or hit.failed else hit
    from ..cublas_graph import capturing
    if capturing():         # no building or timing inside a capture: the legacy call
        return None
    try:
        plan = _choose(rt, handle, direction, g, tune, limit, ptrs, out, accumulate)
    except (L.CudnnError, D.NotSupported):
        plan = None
    except MemoryError:     # CuPy's OutOfMemoryError: the legacy call now, ask again later
        return None
    plans[short] = _UNSUPPORTED if plan is None else plan
    return plan


def _choose(rt, handle, direction, g, tune, limit, ptrs, out, accumulate):
    lib, cp = rt.lib, rt.cupy
    graph, keep = _build(lib, handle, direction, g, accumulate)
    uids = UIDS[direction]
    if tune == "off":
        for plan, ws, cfg, _rtc in _plans(lib, handle, graph, limit):
            return ConvPlan(lib, plan, ws, uids, keep + [graph, cfg])
        return None
    cands = []
    # compile a kernel only where nothing precompiled fits
    for plan, ws, cfg, rtc in _plans(lib, handle, graph, limit,
                                     compile_ok=lambda: not cands):
        cands.append(ConvPlan(lib, plan, ws, uids, keep + [graph, cfg]))
        if len(cands) == _TIMED:
            break
    if len(cands) <= 1:
        return cands[0] if cands else None
    a, b, c = ptrs
    scratch = None
    if accumulate and out is not None:      # timed runs must not add into it
        scratch = cp.empty_like(out)
        c = scratch.data.ptr
    cp.cuda.runtime.deviceSynchronize()     # time on an idle device
    best, best_ms = None, None
    for cand in cands:
        try:
            ws = cp.empty(max(cand.workspace, 1), dtype=cp.uint8)
        except cp.cuda.memory.OutOfMemoryError:
            continue
        try:
            cand.run(handle, (a, b, c), ws.data.ptr)        # loads its kernels
            start, end = cp.cuda.Event(), cp.cuda.Event()
            start.record()
            for _ in range(_TIMING_RUNS):
                cand.run(handle, (a, b, c), ws.data.ptr)
            end.record()
            end.synchronize()
        except L.CudnnError:
            continue
        ms = cp.cuda.get_elapsed_time(start, end)
        if best_ms is None or ms < best_ms:
            best, best_ms = cand, ms
    del scratch
    return best
