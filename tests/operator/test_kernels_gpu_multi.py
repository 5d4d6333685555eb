"""The multi-tensor CUDA kernels (kernels_gpu_multi): their generated sources compile
with nvcc (skipped without it); run on the host (the same source compiled by g++ with
CUDA's thread indices as loop variables, the tables packed by the module's own
functions, skipped without g++) they give the update operators' NumPy results and
find every inf/NaN; on a GPU (skipped without one) the launchers equal NumPy."""
import ctypes

import numpy as np
import pytest

import mxnet as mx
from mxnet.base import bfloat16
from mxnet.operator import kernels_gpu_multi as M
from mxnet.operator import kernels_gpu_optim as K
from mxnet.operator.registry import OpContext, get_op

from cuda_on_host import build, compile_ptx, grid_driver, translation_unit

RULE_ARGS = {"sgd_update": dict(lr=0.1, wd=1e-3, rescale_grad=0.5, clip_gradient=0.3),
             "sgd_mom_update": dict(lr=0.1, momentum=0.9, wd=1e-3, rescale_grad=0.5,
                                    clip_gradient=-1.0),
             "adam_update": dict(lr=0.01, beta1=0.8, beta2=0.95, epsilon=1e-6, wd=0.01,
                                 rescale_grad=1.0, clip_gradient=0.2)}
SOURCES = [(name, dt) for name in sorted(K.RULES) for dt in M.FLOAT_TYPES]


def _translation_unit():
    """Every kernel in one file, each in its own namespace (each source has its own T)."""
    return translation_unit([M.update_source(name, dt)[1] for name, dt in SOURCES] +
                            [M.nonfinite_source()[1]])


def test_sources_compile_with_nvcc(tmp_path):
    ptx = compile_ptx(tmp_path, _translation_unit())
    for name, dt in SOURCES:
        assert M.update_source(name, dt)[0] in ptx
    assert M.nonfinite_source()[0] in ptx


# --- the kernels run on the host -------------------------------------------------------
def _driver(ns, kname, extra_params, extra_args):
    return grid_driver(ns, kname, "const unsigned long long* table, int n" + extra_params,
                       "table, n" + extra_args)


@pytest.fixture(scope="module")
def host_kernels(tmp_path_factory):
    code = [_translation_unit()]
    for i, (name, dt) in enumerate(SOURCES):
        code.append(_driver(f"k{i}", M.update_source(name, dt)[0], ", const float* gate",
                            ", gate"))
    code.append(_driver(f"k{len(SOURCES)}", M.nonfinite_source()[0], ", float* flag",
                        ", flag"))
    return build(tmp_path_factory.mktemp("emu"), "\n".join(code))


def _run_update(lib, name, groups, scalars, gate=None):
    """multi_update's packing and launch shape, with the kernel run on the host."""
    dt = groups[0][0].dtype
    sizes = [g[0].size for g in groups]
    table = M.update_table(name, [[a.ctypes.data for a in g] for g in groups], sizes,
                           scalars)
    gx, gy = M.launch_grid(sizes)
    fn = getattr(lib, "emu_" + M.update_source(name, dt)[0])
    fn(ctypes.c_uint(gx), ctypes.c_uint(gy), ctypes.c_uint(M._THREADS),
       table.ctypes.data_as(ctypes.c_void_p), ctypes.c_int(len(groups)),
       None if gate is None else gate.ctypes.data_as(ctypes.c_void_p))


def _reference(name, kw, w, g, states):
    op = get_op(name)
    st = [s.copy() for s in states]
    out = op.forward(OpContext(np, mx.cpu()), op.parse(kw), [w.copy(), g.copy()], st)[0]
    return out, st


@pytest.mark.parametrize("in_place", [True, False])
@pytest.mark.parametrize("dtype", M.FLOAT_TYPES)
@pytest.mark.parametrize("name", sorted(K.RULES))
def test_update_kernel_equals_the_operator(host_kernels, name, dtype, in_place):
    rng = np.random.RandomState(7)
    # sizes around the grid's edges: empty, one element, more than one block row of
    # threads per array (each thread strides), and odd tails
    sizes = [(0,), (1,), (3, 5), (257,), (70001,)]
    kw = RULE_ARGS[name]
    n_states = len(K.RULES[name][1])
    groups, refs = [], []
    for i, s in enumerate(sizes):
        w, g = rng.randn(*s).astype(dtype), rng.randn(*s).astype(dtype)
        states = [rng.randn(*s).astype(dtype) for _ in range(n_states)]
        if name == "adam_update":
            states[1] = np.abs(states[1])
        kw_i = dict(kw, lr=kw["lr"] * (i + 1))          # per-weight learning rates
        refs.append((_reference(name, kw_i, w, g, states), kw_i))
        dst = w if in_place else np.empty_like(w)
        groups.append([w, g, *states, dst])
    scalars = [[kw_i[p] for p in K.RULES[name][0]] for _, kw_i in refs]
    _run_update(host_kernels, name, groups, scalars)
    tol = 2e-6 if dtype == np.float32 else 1e-12
    for grp, ((out, states), _) in zip(groups, refs):
        np.testing.assert_allclose(grp[-1], out, rtol=tol, atol=tol)
        for got, want in zip(grp[2:-1], states):
            np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


@pytest.mark.parametrize("open_", [True, False])
def test_a_closed_gate_leaves_every_array_alone(host_kernels, open_):
    """AMP's finite flag as the gate: 0 (an overflowed step) changes nothing, 1 runs the
    rule as without a gate."""
    rng = np.random.RandomState(9)
    w, g, m = (rng.randn(300).astype(np.float32) for _ in range(3))
    w0, m0 = w.copy(), m.copy()
    kw = RULE_ARGS["sgd_mom_update"]
    (want, (want_m,)) = _reference("sgd_mom_update", kw, w, g, [m])
    gate = np.array([1.0 if open_ else 0.0], np.float32)
    _run_update(host_kernels, "sgd_mom_update", [[w, g, m, w]],
                [[kw[p] for p in K.RULES["sgd_mom_update"][0]]], gate)
    if open_:
        np.testing.assert_allclose(w, want, rtol=2e-6, atol=2e-7)
        np.testing.assert_allclose(m, want_m, rtol=2e-6, atol=2e-7)
    else:
        np.testing.assert_array_equal(w, w0)
        np.testing.assert_array_equal(m, m0)


NONFINITE_DTYPES = [np.float16, np.float32, np.float64] + ([bfloat16] if bfloat16 else [])


@pytest.mark.parametrize("dtype", NONFINITE_DTYPES)
def test_nonfinite_kernel_finds_every_inf_and_nan(host_kernels, dtype):
    rng = np.random.RandomState(3)
    arrays = [rng.randn(*s).astype(dtype) for s in [(1,), (4, 6), (100003,)]]
    fn = getattr(host_kernels, "emu_" + M.nonfinite_source()[0])

    def flag_of(arrs, start=1.0):
        sizes = [a.size for a in arrs]
        table = M.nonfinite_table([a.ctypes.data for a in arrs], sizes,
                                  [a.dtype for a in arrs])
        flag = np.array([start], np.float32)
        gx, gy = M.launch_grid(sizes)
        fn(ctypes.c_uint(gx), ctypes.c_uint(gy), ctypes.c_uint(M._THREADS),
           table.ctypes.data_as(ctypes.c_void_p), ctypes.c_int(len(arrs)),
           flag.ctypes.data_as(ctypes.c_void_p))
        return float(flag[0])

    big = np.array([65504.0 if dtype == np.float16 else 3e38], dtype)  # largest finite
    assert flag_of(arrays + [big]) == 1.0
    assert flag_of(arrays, start=0.5) == 0.5          # a given flag is kept when clean
    for k, pos in [(0, 0), (1, 13), (2, 100002), (2, 65536)]:
        for bad in (np.inf, -np.inf, np.nan):
            arrs = [a.copy() for a in arrays]
            arrs[k].reshape(-1)[pos] = bad
            want = float(all(np.isfinite(a.astype(np.float64)).all() for a in arrs))
            assert flag_of(arrs) == want == 0.0


def test_tables_hold_pointers_sizes_and_scalars_in_their_places():
    name = "sgd_mom_update"
    ptrs = [[10, 11, 12, 13], [20, 21, 22, 23]]
    t = M.update_table(name, ptrs, [5, 7], [[0.1, 0.9, 0.0, 1.0, -1.0],
                                           [0.2, 0.9, 1e-4, 1.0, -1.0]])
    assert t[:8].tolist() == [10, 20, 11, 21, 12, 22, 13, 23]    # per array, n pointers
    assert t[8:10].tolist() == [5, 7]
    assert t[10:].view(np.float64).tolist() == [0.1, 0.9, 0.0, 1.0, -1.0,
                                                0.2, 0.9, 1e-4, 1.0, -1.0]
    assert M.launch_grid([1, 5]) == (1, 2)
    assert M.launch_grid([10 ** 8]) == (M._MAX_BLOCKS_X, 1)


gpu = pytest.mark.skipif(mx.context.num_gpus() == 0, reason="no GPU")


@gpu
@pytest.mark.parametrize("name", ["sgd_update", "sgd_mom_update", "adam_update"])
def test_multi_update_on_gpu_equals_the_operator(name):
    import cupy as cp
    rng = np.random.RandomState(11)
    kw = RULE_ARGS[name]
    n_states = len(K.RULES[name][1])
    groups, refs = [], []
    for s in [(0,), (3, 5), (70001,), (64, 3, 7, 7)]:
        w, g = rng.randn(*s).astype(np.float32), rng.randn(*s).astype(np.float32)
        states = [np.abs(rng.randn(*s)).astype(np.float32) for _ in range(n_states)]
        refs.append(_reference(name, kw, w, g, states))
        dw = cp.asarray(w)
        groups.append([dw, cp.asarray(g), *[cp.asarray(x) for x in states], dw])
    scalars = [[kw[p] for p in K.RULES[name][0]]] * len(groups)
    assert M.multi_update(cp, name, groups, scalars)
    for grp, (out, states) in zip(groups, refs):
        np.testing.assert_allclose(cp.asnumpy(grp[0]), out, rtol=1e-5, atol=1e-6)
        for got, want in zip(grp[2:-1], states):
            np.testing.assert_allclose(cp.asnumpy(got), want, rtol=1e-5, atol=1e-6)


@gpu
def test_multi_update_declines_what_it_cannot_take():
    import cupy as cp
    w = cp.ones((4, 4), np.float32)
    strided = cp.ones((4, 8), np.float32)[:, ::2]
    assert not M.multi_update(cp, "sgd_update", [[w, strided, w]], [[0.1, 0, 1, -1]])
    h = cp.ones(3, np.float16)
    assert not M.multi_update(cp, "sgd_update", [[h, h, h]], [[0.1, 0, 1, -1]])
    assert not M.multi_nonfinite(cp, [strided], cp.ones(1, np.float32))


def test_sgd_list_step_through_the_multi_tensor_kernel(host_kernels, monkeypatch):
    """SGD's fused list step on a GPU (optimizer.sgd._sgd_multi_tensor: weights with
    and without momentum, per-weight lr/wd) with the kernel run on the host equals
    the per-weight rule SGD runs on the CPU."""
    from mxnet.optimizer import sgd

    def emulated(xp, name, groups, scalars, gate=None):
        _run_update(host_kernels, name, groups, scalars, gate)
        return True
    monkeypatch.setattr(M, "multi_update", emulated)
    rng = np.random.RandomState(2)
    shapes = [(3, 4), (700,), (2, 3, 5), (1,)]
    ws = [rng.randn(*s).astype(np.float32) for s in shapes]
    gs = [rng.randn(*s).astype(np.float32) for s in shapes]
    ms = [rng.randn(*s).astype(np.float32) if i % 2 == 0 else None
          for i, s in enumerate(shapes)]
    lrs, wds = [0.1, 0.2, 0.05, 0.3], [0.0, 1e-3, 1e-2, 0.0]
    ref_w, ref_m = [w.copy() for w in ws], [None if m is None else m.copy() for m in ms]
    for i in range(len(shapes)):
        sgd._sgd_in_place(np, ref_w[i], gs[i], ref_m[i], lrs[i], wds[i], 0.5, 0.9, 0.4,
                          np.empty_like(ws[i]), np.empty_like(ws[i]))
    assert sgd._sgd_multi_tensor(np, ws, gs, ms, lrs, wds, 0.5, 0.9, 0.4) == []
    for i in range(len(shapes)):
        np.testing.assert_allclose(ws[i], ref_w[i], rtol=2e-6, atol=2e-7)
        if ms[i] is not None:
            np.testing.assert_allclose(ms[i], ref_m[i], rtol=2e-6, atol=2e-7)


@pytest.mark.parametrize("kernel_takes_it", [True, False])
def test_rule_in_place_equals_the_operator_with_out_weight(host_kernels, monkeypatch,
                                                           kernel_takes_it):
    """Adam's GPU step (optimizer._kernel.rule_in_place: one engine step writing the
    weight and states), with the kernel run on the host, or declining (then the
    operator's body is written into the weight), equals ``adam_update(..., out=w)``."""
    from mxnet.optimizer import _kernel

    def emulated(xp, name, groups, scalars, gate=None):
        if not kernel_takes_it:
            return False
        _run_update(host_kernels, name, groups, scalars, gate)
        return True
    monkeypatch.setattr(M, "multi_update", emulated)
    rng = np.random.RandomState(4)
    w, g = rng.randn(6, 5).astype(np.float32), rng.randn(6, 5).astype(np.float32)
    m, v = rng.randn(6, 5).astype(np.float32), np.abs(rng.randn(6, 5)).astype(np.float32)
    kw = dict(lr=0.01, beta1=0.8, beta2=0.95, epsilon=1e-6, wd=0.01, rescale_grad=0.5)
    W, G, Mm, V = (mx.nd.array(a) for a in (w, g, m, v))
    assert _kernel.rule_in_place("adam_update", W, G, [Mm, V], kw)
    W2, M2, V2 = (mx.nd.array(a) for a in (w, m, v))
    mx.nd.adam_update(W2, mx.nd.array(g), M2, V2, out=W2, **kw)
    for a, b in [(W, W2), (Mm, M2), (V, V2)]:
        np.testing.assert_allclose(a.asnumpy(), b.asnumpy(), rtol=2e-6, atol=2e-7)
    assert not _kernel.rule_in_place("adam_update", W, G.astype("float64"), [Mm, V], kw)
    assert not _kernel.fused_rule_on_gpu("adam_update", W, G, [Mm, V], kw)   # on the CPU


def test_a_repeated_table_is_copied_to_the_device_once(monkeypatch):
    """A training step launches the same table (buffers, sizes, scalars) every step:
    its host-to-device copy is made once and reused while its bytes stay the same; a
    changed byte (a new learning rate, another buffer) makes a new copy."""
    import types
    copies = []
    cp = types.SimpleNamespace(asarray=lambda t: copies.append(t.copy()) or t.copy())
    dev0, dev1 = types.SimpleNamespace(id=0), types.SimpleNamespace(id=1)
    monkeypatch.setattr(M, "_DEVICE_TABLES", M.DeviceTables())
    t = np.arange(8, dtype=np.uint64)
    a = M._device_table(cp, ("update",), dev0, 0, t)
    b = M._device_table(cp, ("update",), dev0, 0, t.copy())
    assert len(copies) == 1 and np.array_equal(a, b)
    t2 = t.copy()
    t2[-1] += 1                                     # e.g. a scheduled learning rate
    c = M._device_table(cp, ("update",), dev0, 0, t2)
    assert len(copies) == 2 and np.array_equal(c, t2)
    M._device_table(cp, ("update",), dev1, 0, t2)   # another device: its own copy
    M._device_table(cp, ("nonfinite",), dev0, 0, t2)  # another launch kind: its own
    M._device_table(cp, ("update",), dev0, 4096, t2)  # the next part of a long list
    assert len(copies) == 5
    # inside a CUDA-graph capture: a copy of its own every time, never cached (a
    # captured copy runs only at replay; the graph keeps the array's address)
    from mxnet.backend import cublas_graph
    monkeypatch.setattr(cublas_graph, "capturing", lambda: True)
    cached = M._DEVICE_TABLES.current[(("update",), 0, 0)]
    M._device_table(cp, ("update",), dev0, 0, t2)
    M._device_table(cp, ("update",), dev0, 0, t2)
    assert len(copies) == 7 and M._DEVICE_TABLES.current[(("update",), 0, 0)] is cached
