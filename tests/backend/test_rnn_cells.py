"""The fused recurrent cells of the GPU ``RNN`` operator (backend/rnn_cells.py): the
sources compile with nvcc; run on the host through the module's own launch code
(tests/cuda_on_host.HostKernels in place of raw_kernel; skipped without g++), the
operator's outputs, states, reserve and every gradient equal the ufunc body's (the
reference, itself checked against loops over examples and numeric gradients in
tests/operator/nn/test_rnn.py) for every mode, with stacked bidirectional layers,
dropout, sequence lengths and LSTM state clipping; one kernel launch per step. On a GPU
(skipped without one) the fused cells equal the ufunc body and the CPU."""
import numpy as np
import pytest

import mxnet as mx
from mxnet import autograd
from mxnet.backend import rnn_cells as RC

from cuda_on_host import compile_ptx, translation_unit

GATES = {"rnn_relu": 1, "rnn_tanh": 1, "lstm": 4, "gru": 3}


def test_sources_compile_with_nvcc(tmp_path):
    sources = [RC.source(k, dt) for k in RC.KERNELS for dt in RC.TYPES]
    ptx = compile_ptx(tmp_path, translation_unit(src for _, src in sources))
    for kname, _ in sources:
        assert kname in ptx


def test_usable_only_for_cupy_floats_without_a_projection(monkeypatch):
    import types
    cupy_like = types.SimpleNamespace(__name__="cupy")
    plan = types.SimpleNamespace(proj=False)
    for dt in (np.float32, np.float64, np.float16):
        assert RC.usable(cupy_like, plan, dt)
    assert not RC.usable(np, plan, np.float32)
    assert not RC.usable(cupy_like, plan, np.int32)
    from mxnet.base import bfloat16
    if bfloat16 is not None:        # (bfloat16 calls reach RNN widened to float32)
        assert not RC.usable(cupy_like, plan, bfloat16)
    assert not RC.usable(cupy_like, types.SimpleNamespace(proj=True), np.float32)
    monkeypatch.setenv("MXNET_GPU_RNN_FUSED_CELLS", "0")
    assert not RC.usable(cupy_like, plan, np.float32)


@pytest.fixture
def cells_on_host(monkeypatch, host_raw_kernels):
    """Turns the fused cells on for NumPy arrays, their kernels compiled for the host;
    returns a switch back to the ufunc body."""
    monkeypatch.setattr(RC, "raw_kernel", host_raw_kernels)
    fused = {"on": True}
    plain = RC.usable

    def usable(xp, plan, dtype):
        return fused["on"] and np.dtype(dtype) in RC.TYPES and not plan.proj

    monkeypatch.setattr(RC, "usable", usable)
    assert plain is not usable
    return fused


def _n_params(mode, I, H, L, D):
    G = GATES[mode]
    return sum(D * (G * H * ((I if l == 0 else D * H) + H) + 2 * G * H) for l in range(L))


def _run(mode, dtype, L, bidir, lens, clip, p_drop, seed=3):
    """The operator's visible outputs and input gradients (autograd, a random
    head gradient on every output)."""
    T, N, I, H = 5, 3, 4, 3
    D = 2 if bidir else 1
    rs = np.random.RandomState(seed)
    host = [rs.uniform(-1, 1, (T, N, I)), rs.uniform(-0.6, 0.6, _n_params(mode, I, H, L, D)),
            rs.uniform(-1, 1, (L * D, N, H))]
    if mode == "lstm":
        host.append(rs.uniform(-1, 1, (L * D, N, H)) * 2)
    args = [mx.nd.array(a, dtype=dtype) for a in host]
    kw = dict(mode=mode, state_size=H, num_layers=L, bidirectional=bidir,
              state_outputs=True, p=p_drop)
    if clip is not None:
        kw.update(lstm_state_clip_min=clip[0], lstm_state_clip_max=clip[1],
                  lstm_state_clip_nan=clip[2])
    if lens is not None:
        kw["use_sequence_length"] = True
    for a in args:
        a.attach_grad()
    extra = [mx.nd.array(lens, dtype="int32")] if lens is not None else []
    mx.random.seed(11)
    with autograd.record():
        outs = mx.nd.RNN(*args, *extra, **kw)
        heads = [mx.nd.array(rs.uniform(-1, 1, o.shape), dtype=dtype) for o in outs]
        loss = sum((o * h).sum() for o, h in zip(outs, heads))
    loss.backward()
    return [o.asnumpy() for o in outs] + [a.grad.asnumpy() for a in args]


CASES = [(mode, L, bidir, lens, clip, p)
         for mode in GATES
         for L, bidir, lens, clip, p in [(1, False, None, None, 0.0),
                                         (2, True, None, None, 0.4),
                                         (2, True, [5, 2, 0], None, 0.0)]] + [
    ("lstm", 1, False, None, (-0.3, 0.5, False), 0.0),
    ("lstm", 2, True, [4, 5, 1], (-0.4, 0.4, True), 0.0),
]


def _ids(case):
    mode, L, bidir, lens, clip, p = case
    return f"{mode}-L{L}{'-bi' if bidir else ''}{'-lens' if lens else ''}" \
           f"{'-clip' if clip else ''}{'-nan' if clip and clip[2] else ''}" \
           f"{'-drop' if p else ''}"


def _names(mode):
    return ["output", "h_out", "c_out"][:3 if mode == "lstm" else 2] + \
        ["d_data", "d_params", "d_h0", "d_c0"][:4 if mode == "lstm" else 3]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", CASES, ids=_ids)
def test_fused_cells_equal_the_ufunc_body(cells_on_host, host_raw_kernels, case, dtype):
    mode, L, bidir, lens, clip, p = case
    before = sum(len(k.launches) for k in host_raw_kernels.kernels.values())
    fused = _run(mode, dtype, L, bidir, lens, clip, p)
    launches = sum(len(k.launches) for k in host_raw_kernels.kernels.values()) - before
    cells_on_host["on"] = False
    plain = _run(mode, dtype, L, bidir, lens, clip, p)
    D = 2 if bidir else 1
    assert launches == 2 * 5 * L * D          # one kernel per step, forward and backward
    tol = dict(rtol=2e-5, atol=2e-6) if dtype == "float32" else dict(rtol=1e-12, atol=1e-13)
    names = _names(mode)
    assert len(fused) == len(plain) == len(names)
    for name, a, b in zip(names, fused, plain):
        assert a.dtype == b.dtype == np.dtype(dtype), name
        np.testing.assert_allclose(a, b, err_msg=name, **tol)
        assert np.abs(b).max() > 0, name          # the comparison is not of zeros


HALF_CASES = CASES + [("lstm", 1, False, None, (-0.4, 0.4, False), 0.0)]  # f16(-0.4) > -0.4


@pytest.mark.parametrize("case", HALF_CASES, ids=_ids)
def test_float16_fused_cells_as_accurate_as_the_ufunc_body(cells_on_host, case):
    """float16: the fused cells (float32 inside, rounded where stored; clipping bounds
    rounded to float16 as the ufunc body's comparisons round them) are at least about
    as close to the float64 result as the ufunc body (rounded after every op)."""
    dtype = "float16"
    mode, L, bidir, lens, clip, p = case
    fused = _run(mode, dtype, L, bidir, lens, clip, p)
    cells_on_host["on"] = False
    plain = _run(mode, dtype, L, bidir, lens, clip, p)
    truth = _run(mode, "float64", L, bidir, lens, clip, p)
    floor = 2e-3
    for name, a, b, t in zip(_names(mode), fused, plain, truth):
        assert a.dtype == b.dtype == np.dtype(dtype), name
        scale = np.abs(t).max()
        err_fused = np.abs(a.astype(np.float64) - t).max() / scale
        err_plain = np.abs(b.astype(np.float64) - t).max() / scale
        assert err_fused <= max(1.5 * err_plain, floor), (name, err_fused, err_plain)


@pytest.mark.parametrize("clip_nan", [False, True])
def test_clipping_nan_state_as_the_ufunc_body(cells_on_host, clip_nan):
    """A NaN in the initial cell state: clipped to the bound with lstm_state_clip_nan,
    kept otherwise, in both bodies."""
    T, N, I, H = 3, 2, 2, 2
    rs = np.random.RandomState(5)
    x = mx.nd.array(rs.uniform(-1, 1, (T, N, I)))
    params = mx.nd.array(rs.uniform(-0.5, 0.5, _n_params("lstm", I, H, 1, 1)))
    h0 = mx.nd.array(rs.uniform(-1, 1, (1, N, H)))
    c0 = rs.uniform(-1, 1, (1, N, H))
    c0[0, 1, 0] = np.nan
    c0 = mx.nd.array(c0)
    kw = dict(mode="lstm", state_size=H, num_layers=1, state_outputs=True,
              lstm_state_clip_min=-0.2, lstm_state_clip_max=0.2, lstm_state_clip_nan=clip_nan)
    fused = [o.asnumpy() for o in mx.nd.RNN(x, params, h0, c0, **kw)]
    cells_on_host["on"] = False
    plain = [o.asnumpy() for o in mx.nd.RNN(x, params, h0, c0, **kw)]
    for a, b in zip(fused, plain):
        np.testing.assert_allclose(a, b, rtol=2e-6, atol=1e-7, equal_nan=True)
    assert np.isnan(fused[2]).any() != clip_nan


# --- on a GPU ------------------------------------------------------------------------------
gpu = pytest.mark.skipif(mx.context.num_gpus() == 0, reason="no GPU")


@gpu
@pytest.mark.parametrize("case", CASES, ids=_ids)
def test_gpu_fused_cells_equal_the_ufunc_body_and_the_cpu(monkeypatch, case):
    mode, L, bidir, lens, clip, p = case
    if p:
        pytest.skip("dropout masks differ between devices")

    def on(ctx, switch):
        monkeypatch.setenv("MXNET_GPU_RNN_FUSED_CELLS", switch)
        with mx.Context(ctx):
            return _run(mode, "float64", L, bidir, lens, clip, p)

    fused, plain, cpu = on(mx.gpu(0), "1"), on(mx.gpu(0), "0"), on(mx.cpu(), "1")
    for a, b, c in zip(fused, plain, cpu):
        np.testing.assert_allclose(a, b, rtol=1e-11, atol=1e-12)
        np.testing.assert_allclose(a, c, rtol=1e-11, atol=1e-12)


@gpu
@pytest.mark.parametrize("dropout", [0.0, 0.3])
def test_gpu_rnn_layers_are_captured_in_cuda_graphs(monkeypatch, dropout):
    """A hybridized LSTM (two layers; with dropout between them, drawn on the device)
    records CUDA graphs for its training forward and backward; without dropout its
    losses equal the graphs-off run's."""
    from mxnet import gluon
    from mxnet.gluon import rnn

    def train(graphs):
        monkeypatch.setenv("MXNET_ENABLE_CUDA_GRAPHS", "1" if graphs else "0")
        mx.random.seed(1)
        net = rnn.LSTM(16, num_layers=2, dropout=dropout, input_size=8)
        net.initialize(mx.init.Xavier(), ctx=mx.gpu(0))
        net.hybridize(static_alloc=True, static_shape=True)
        trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
        x = mx.nd.array(np.random.RandomState(0).uniform(-1, 1, (5, 4, 8)), ctx=mx.gpu(0))
        losses = []
        for _ in range(5):
            with autograd.record():
                loss = (net(x) ** 2).mean()
            loss.backward()
            trainer.step(1)
            losses.append(float(loss.asscalar()))
        entries = [e for pool in net._cached_op._pools.values() for e in pool]
        return losses, entries

    losses, entries = train(True)
    assert any(("fwd", True) in e.graph.graphs for e in entries), \
        [e.graph.off for e in entries]
    if not dropout:
        plain, _ = train(False)
        np.testing.assert_allclose(losses, plain, rtol=1e-5)
