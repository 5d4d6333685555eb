"""cuDNN's recurrent layers for the RNN operator (backend/cudnn/rnn.py,
operator/kernels_cudnn_rnn.py).

Without a GPU: the weight index map places every element of MXNet's flat parameter
vector where a cuDNN layout says (checked against the operator's own views of that
vector), the RNN and data descriptors take and read back what was set (over the
stand-in CUDA driver, tests/cuda_driver_stub.py), and the coverage rule.
With a GPU (``MXNET_CUDNN_RNN=1``): outputs, final states and every gradient equal the
operator's own GPU path (float64 and strict float32 closely, float16 loosely) for each
mode, bidirectional and stacked layers, and the cuDNN path was really taken."""
import ctypes
import types

import numpy as np
import pytest

from mxnet.backend.cudnn import _lib as L
from mxnet.backend.cudnn import rnn as R
from mxnet.operator.nn.rnn import RNN, _Plan


def _params(**kw):
    base = dict(state_size=3, num_layers=1, bidirectional=False, mode="lstm", p=0.0,
                state_outputs=False, projection_size=None, lstm_state_clip_min=None,
                lstm_state_clip_max=None, lstm_state_clip_nan=False,
                use_sequence_length=False)
    base.update(kw)
    return types.SimpleNamespace(**base)


def _blocks(plan):
    return [(wo, ws[1], ho, hs[1], bo, bho) for (wo, ws, ho, hs, _), (bo, bho)
            in zip(plan.weights, plan.biases)]


def _fake_cudnn_layout(plan, pad):
    """A cuDNN-like weight space: per pseudo-layer every matrix (input ones, then
    recurrent ones, gate by gate), then every bias, ``pad`` unused elements after
    each. Returns (offsets(k, lin), total elements)."""
    G, H = plan.G, plan.H
    table, off = {}, 0
    for k, (_, n_in, _, n_rec, _, _) in enumerate(_blocks(plan)):
        mats = {}
        for lin in range(2 * G):
            n = H * (n_rec if lin >= G else n_in)
            mats[lin] = (off, n)
            off += n + pad
        for lin in range(2 * G):
            table[(k, lin)] = mats[lin] + (off, H)
            off += H + pad
    return (lambda k, lin: table[(k, lin)]), off


@pytest.mark.parametrize("mode", ["lstm", "gru", "rnn_tanh"])
@pytest.mark.parametrize("layers,bidir", [(1, False), (2, True), (3, False)])
@pytest.mark.parametrize("pad", [0, 5])
def test_weight_map_puts_each_gate_where_cudnn_reads_it(mode, layers, bidir, pad):
    p = _params(mode=mode, num_layers=layers, bidirectional=bidir, state_size=4)
    plan = _Plan(p, 5, 2, 3)
    offsets, total = _fake_cudnn_layout(plan, pad)
    m = R.weight_map(plan.G, plan.H, _blocks(plan), offsets)
    flat = np.arange(plan.n_params, dtype=np.float64) + 1
    space = np.zeros(total)
    space[m] = flat
    H = plan.H
    for k in range(plan.L * plan.D):
        wx, wh, bx, bh, _ = plan.params_of(flat, k)      # the operator's own views
        for lin in range(2 * plan.G):
            g = lin % plan.G
            mo, mn, bo, bn = offsets(k, lin)
            want_m = (wh if lin >= plan.G else wx)[g * H:(g + 1) * H].ravel()
            want_b = (bh if lin >= plan.G else bx)[g * H:(g + 1) * H]
            np.testing.assert_array_equal(space[mo:mo + mn], want_m)
            np.testing.assert_array_equal(space[bo:bo + bn], want_b)
    # every parameter placed once: the gather back is the inverse
    np.testing.assert_array_equal(space[m], flat)
    assert len(set(m.tolist())) == plan.n_params


def test_weight_map_of_mxnets_own_order_is_the_identity():
    p = _params(mode="gru", state_size=4)
    plan = _Plan(p, 5, 2, 3)
    table = {}
    for k, (wx, n_in, wh, n_rec, bx, bh) in enumerate(_blocks(plan)):
        for lin in range(2 * plan.G):
            g, rec = lin % plan.G, lin >= plan.G
            cols = n_rec if rec else n_in
            table[(k, lin)] = ((wh if rec else wx) + g * plan.H * cols, plan.H * cols,
                               (bh if rec else bx) + g * plan.H, plan.H)
    m = R.weight_map(plan.G, plan.H, _blocks(plan), lambda k, lin: table[(k, lin)])
    np.testing.assert_array_equal(m, np.arange(plan.n_params))


def test_weight_map_refuses_a_layout_of_other_sizes():
    plan = _Plan(_params(state_size=4), 5, 2, 3)
    offsets, _ = _fake_cudnn_layout(plan, 0)
    with pytest.raises(R.Refused, match="expected"):
        R.weight_map(plan.G, plan.H, _blocks(plan),
                     lambda k, lin: offsets(k, lin)[:3] + (plan.H + 1,))


def test_coverage_rule():
    from mxnet.operator.kernels_cudnn_rnn import covered
    x = np.zeros((5, 2, 3), np.float32)
    assert covered(_params(), x)
    assert covered(_params(), x, np.zeros(4, np.float32), np.zeros((1, 2, 3), np.float32))
    # parameters or states of another type: the body (whose checks apply) runs it
    assert not covered(_params(), x, np.zeros(4, np.float64))
    assert not covered(_params(), x.astype(np.float16), np.zeros(4, np.float32))
    assert covered(_params(mode="gru", num_layers=2, bidirectional=True), x)
    assert covered(_params(p=0.5), x)                   # one layer: no dropout applies
    assert not covered(_params(p=0.5, num_layers=2), x)
    assert not covered(_params(use_sequence_length=True), x)
    assert not covered(_params(projection_size=2), x)
    assert not covered(_params(lstm_state_clip_min=-1.0, lstm_state_clip_max=1.0), x)
    assert not covered(_params(), x.astype(np.int32))
    assert not covered(_params(), np.zeros((0, 2, 3), np.float32))


def test_a_call_computed_in_float32_for_bfloat16_is_declined(monkeypatch):
    """The runner rounds every result of a widened bfloat16 call, the reserve included
    (operator/bfloat16.run_widened), which would corrupt cuDNN's opaque reserve: such a
    call keeps the body, forward and backward alike."""
    from mxnet.operator import kernels_cudnn_rnn as K
    from mxnet.operator import bfloat16 as B
    from mxnet.operator.runner import op_context
    from mxnet.base import bfloat16
    monkeypatch.setitem(K._state, "enabled", True)
    seen = []

    def compute(op, body, octx, is_backward, args, given):
        seen.append(octx.widened_from)
        return [np.zeros(1, np.float32)]
    ctx = op_context(np, None, True)
    B.run_widened(compute, RNN(), None, ctx, False, (None, [], []), None)
    assert seen == [bfloat16] and ctx.widened_from is None     # the caller's is unchanged
    inputs = [np.zeros((5, 2, 3), np.float32), np.zeros(4, np.float32),
              np.zeros((1, 2, 3), np.float32), np.zeros((1, 2, 3), np.float32)]
    assert K._plan(ctx.widened(bfloat16), _params(), inputs) is None


def test_the_switch_is_read_once(monkeypatch):
    from mxnet.operator import kernels_cudnn_rnn as K
    monkeypatch.setattr(K, "_state", {})
    monkeypatch.setenv("MXNET_CUDNN_RNN", "1")
    assert K.enabled()
    monkeypatch.setenv("MXNET_CUDNN_RNN", "0")
    assert K.enabled()          # a forward and its backward see one setting


# --- descriptors, over the stand-in driver -------------------------------------------
@pytest.fixture(scope="module")
def lib():
    from cuda_driver_stub import cudnn_for_descriptors
    lib, why = cudnn_for_descriptors()
    if lib is None:
        pytest.skip(why)
    return lib


@pytest.mark.parametrize("mode,dtype", [("lstm", "float32"), ("gru", "float16"),
                                        ("rnn_relu", "float64")])
def test_rnn_descriptor_holds_what_was_set(lib, mode, dtype):
    d = R.rnn_descriptor(lib, mode, 2, True, 28, 256, np.dtype(dtype), L.DEFAULT_MATH)
    v = [ctypes.c_int() for _ in range(12)]
    drop, flags = ctypes.c_void_p(), ctypes.c_uint32()
    L.check(lib, "get", lib.cudnnGetRNNDescriptor_v8(
        d, *[ctypes.byref(i) for i in v], ctypes.byref(drop), ctypes.byref(flags)))
    algo, cell, bias, direction, inp, dt, prec, math, isz, hsz, psz, nl = (
        i.value for i in v)
    want_dt = {"float32": L.DATA_FLOAT, "float16": L.DATA_HALF,
               "float64": L.DATA_DOUBLE}[dtype]
    assert (cell, bias, direction, inp) == (R.MODES[mode][0], 2, 1, 0)
    assert (dt, prec) == (want_dt, L.DATA_DOUBLE if dtype == "float64" else L.DATA_FLOAT)
    assert (isz, hsz, psz, nl, math) == (28, 256, 256, 2, L.DEFAULT_MATH)
    assert drop.value is None and flags.value == 0
    lib.cudnnDestroyRNNDescriptor(d)


def test_data_descriptor_holds_what_was_set(lib):
    d = R.data_descriptor(lib, np.dtype(np.float32), 35, 4, 28)
    dt, layout, T, N, V = (ctypes.c_int() for _ in range(5))
    lens = (ctypes.c_int * 4)()
    fill = ctypes.c_double(-1.0)
    L.check(lib, "get", lib.cudnnGetRNNDataDescriptor(
        d, ctypes.byref(dt), ctypes.byref(layout), ctypes.byref(T), ctypes.byref(N),
        ctypes.byref(V), 4, lens, ctypes.addressof(fill)))
    # packed sequence-major: with padded I/O off cuDNN takes no other layout, and with
    # every sequence full it is the dense (T, N, C) array
    assert (dt.value, layout.value, T.value, N.value, V.value) == (L.DATA_FLOAT, 1, 35, 4,
                                                                   28)
    assert list(lens) == [35] * 4
    lib.cudnnDestroyRNNDataDescriptor(d)


def test_cudnn_refuses_a_projection_wider_than_the_state(lib):
    """The descriptor's arguments are in cuDNN's order: projSize after hiddenSize."""
    d = ctypes.c_void_p()
    L.check(lib, "create", lib.cudnnCreateRNNDescriptor(ctypes.byref(d)))
    status = lib.cudnnSetRNNDescriptor_v8(d, 0, 2, 2, 0, 0, L.DATA_FLOAT, L.DATA_FLOAT,
                                          0, 28, 256, 300, 1, None, 0)
    assert status != L.STATUS_SUCCESS
    lib.cudnnDestroyRNNDescriptor(d)


# --- on a GPU: cuDNN against the operator's own path ---------------------------------
def _gpu():
    import mxnet as mx
    if mx.context.num_gpus() == 0:
        pytest.skip("no GPU")
    pytest.importorskip("cupy")
    from mxnet.backend import cudnn
    if not cudnn.available():
        pytest.skip(f"cuDNN unavailable: {cudnn.load_error()}")
    return mx


def _run(mx, p, x, params, states, dys):
    """(outputs, gradients of data, parameters and states) of one recorded call."""
    from mxnet import autograd
    args = [a.copy() for a in [x, params] + states]
    for a in args:
        a.attach_grad()
    with autograd.record():
        outs = mx.nd.RNN(*args, state_size=p["state_size"], num_layers=p["num_layers"],
                         bidirectional=p["bidirectional"], mode=p["mode"],
                         state_outputs=True)
        loss = sum((o * g).sum() for o, g in zip(outs, dys))
    loss.backward()
    return [o.asnumpy() for o in outs], [a.grad.asnumpy() for a in args]


def _assert_planned(mode, layers, directions, I, H, dtype, T, N):
    """The cuDNN path ran for this geometry: its plan was built, not refused."""
    used = [k for k in R._plans if len(k) == 10 and k[:5] == (mode, layers, directions,
                                                                I, H)
            and k[5] == np.dtype(dtype).str and k[-2:] == (T, N)]
    assert used and all(not isinstance(R._plans[k], Exception) for k in used), \
        [R.refusal(k) for k in used]


@pytest.mark.parametrize("mode", ["lstm", "gru", "rnn_tanh", "rnn_relu"])
@pytest.mark.parametrize("layers,bidir", [(1, False), (2, True)])
@pytest.mark.parametrize("dtype", ["float64", "float32", "float16"])
def test_on_a_gpu_cudnn_equals_the_operators_own_path(monkeypatch, mode, layers, bidir,
                                                     dtype):
    mx = _gpu()
    monkeypatch.setenv("NVIDIA_TF32_OVERRIDE", "0")     # strict float32 on both paths
    T, N, I, H = 7, 3, 5, 6
    p = dict(state_size=H, num_layers=layers, bidirectional=bidir, mode=mode)
    plan = _Plan(_params(**p), T, N, I)
    rng = np.random.RandomState(0)
    ctx = mx.gpu(0)

    def arr(shape, scale=0.5):
        return mx.nd.array(rng.uniform(-scale, scale, shape), ctx=ctx, dtype=dtype)
    S = (layers * plan.D, N, H)
    x, params = arr((T, N, I)), arr((plan.n_params,))
    states = [arr(S)] + ([arr(S)] if mode == "lstm" else [])
    dys = [arr((T, N, plan.D * H), 1.0), arr(S, 1.0)] + ([arr(S, 1.0)] if mode == "lstm"
                                                          else [])
    from mxnet.operator import kernels_cudnn_rnn as K
    monkeypatch.setitem(K._state, "enabled", False)
    want_out, want_grad = _run(mx, p, x, params, states, dys)
    monkeypatch.setitem(K._state, "enabled", True)
    got_out, got_grad = _run(mx, p, x, params, states, dys)
    _assert_planned(mode, layers, plan.D, I, H, dtype, T, N)
    tol = {"float64": 1e-10, "float32": 1e-4, "float16": 2e-2}[dtype]
    for got, want in zip(got_out + got_grad, want_out + want_grad):
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64),
                                   rtol=tol, atol=tol)


def test_on_a_gpu_a_covered_call_keeps_its_reserve_for_a_backward_after_predict(
        monkeypatch):
    """autograd.record(train_mode=False) then backward: the cuDNN forward keeps its
    reserve whatever the mode, so the gradient is right."""
    mx = _gpu()
    from mxnet import autograd
    monkeypatch.setenv("NVIDIA_TF32_OVERRIDE", "0")
    ctx = mx.gpu(0)
    rng = np.random.RandomState(1)
    p = _Plan(_params(state_size=4), 6, 2, 3)
    x = mx.nd.array(rng.randn(6, 2, 3), ctx=ctx, dtype="float64")
    w = mx.nd.array(rng.randn(p.n_params) * 0.3, ctx=ctx, dtype="float64")
    h = mx.nd.zeros((1, 2, 4), ctx=ctx, dtype="float64")
    from mxnet.operator import kernels_cudnn_rnn as K
    grads = []
    for flag in (False, True):
        monkeypatch.setitem(K._state, "enabled", flag)
        xw = x.copy()
        xw.attach_grad()
        with autograd.record(train_mode=False):
            y = mx.nd.RNN(xw, w, h, h, state_size=4, num_layers=1, mode="lstm")
        y.backward()
        grads.append(xw.grad.asnumpy())
    _assert_planned("lstm", 1, 1, 3, 4, "float64", 6, 2)
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-10, atol=1e-12)


def test_on_a_gpu_a_retained_graph_runs_the_cudnn_backward_twice_alike(monkeypatch):
    """cuDNN's backward rewrites its reserve: a second backward of a retained graph
    must still start from the forward's."""
    mx = _gpu()
    from mxnet import autograd
    from mxnet.operator import kernels_cudnn_rnn as K
    monkeypatch.setitem(K._state, "enabled", True)
    ctx = mx.gpu(0)
    rng = np.random.RandomState(2)
    p = _Plan(_params(mode="gru", state_size=4, num_layers=2, bidirectional=True), 6, 2, 3)
    x = mx.nd.array(rng.randn(6, 2, 3), ctx=ctx, dtype="float64")
    w = mx.nd.array(rng.randn(p.n_params) * 0.3, ctx=ctx, dtype="float64")
    h = mx.nd.zeros((4, 2, 4), ctx=ctx, dtype="float64")
    for a in (x, w):
        a.attach_grad()
    with autograd.record():
        y = mx.nd.RNN(x, w, h, state_size=4, num_layers=2, bidirectional=True, mode="gru")
    y.backward(retain_graph=True)
    first = (x.grad.asnumpy().copy(), w.grad.asnumpy().copy())
    y.backward()
    _assert_planned("gru", 2, 2, 3, 4, "float64", 6, 2)
    np.testing.assert_array_equal(x.grad.asnumpy(), first[0])
    np.testing.assert_array_equal(w.grad.asnumpy(), first[1])


def test_on_a_gpu_mixed_types_keep_the_operators_own_path(monkeypatch):
    mx = _gpu()
    from mxnet.operator import kernels_cudnn_rnn as K
    monkeypatch.setitem(K._state, "enabled", True)
    ctx = mx.gpu(0)
    p = _Plan(_params(state_size=5), 4, 3, 2)
    x = mx.nd.ones((4, 3, 2), ctx=ctx, dtype="float16")
    w = mx.nd.ones((p.n_params,), ctx=ctx, dtype="float32") * 0.1
    h = mx.nd.zeros((1, 3, 5), ctx=ctx, dtype="float32")
    before = set(R._plans)
    try:
        mx.nd.RNN(x, w, h, h, state_size=5, num_layers=1, mode="lstm").wait_to_read()
    except mx.base.MXNetError:
        pass            # the body's own verdict on mixed types; cuDNN never saw them
    assert not [k for k in set(R._plans) - before if k[:5] == ("lstm", 1, 1, 2, 5)]
