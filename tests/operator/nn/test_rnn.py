"""The fused RNN operator against a NumPy reference written here (plain loops over
examples and time steps), numeric gradients, and MXNet 1.9.1's golden cases."""
import numpy as np
import pytest

import mxnet as mx
from mxnet.base import MXNetError
from mxnet.operator.registry import get_op
from mxnet.test_utils import assert_almost_equal, check_numeric_gradient
from common import fixture_cases_for, run_fixture_case

nd = mx.nd
GATES = {"rnn_relu": 1, "rnn_tanh": 1, "lstm": 4, "gru": 3}


def sigmoid(v):
    return 1 / (1 + np.exp(-v))


def unpack(params, mode, I, H, L, D):
    """[(Wx, Wh, bx, bh)] per layer and direction from the flat vector."""
    G, off, weights = GATES[mode], 0, []
    for l in range(L):
        n_in = I if l == 0 else D * H
        for _ in range(D):
            wx = params[off:off + G * H * n_in].reshape(G * H, n_in)
            off += G * H * n_in
            wh = params[off:off + G * H * H].reshape(G * H, H)
            off += G * H * H
            weights.append([wx, wh])
    for k in range(L * D):
        weights[k] += [params[off:off + G * H], params[off + G * H:off + 2 * G * H]]
        off += 2 * G * H
    assert off == params.size
    return weights


def cell(mode, w, x, h, c, H, clip):
    wx, wh, bx, bh = w
    gx, gh = wx @ x + bx, wh @ h + bh
    if mode == "lstm":
        a = gx + gh
        i, f, g, o = sigmoid(a[:H]), sigmoid(a[H:2 * H]), np.tanh(a[2 * H:3 * H]), \
            sigmoid(a[3 * H:])
        c = f * c + i * g
        if clip is not None:
            c = np.clip(c, *clip)
        return o * np.tanh(c), c
    if mode == "gru":
        r = sigmoid(gx[:H] + gh[:H])
        z = sigmoid(gx[H:2 * H] + gh[H:2 * H])
        n = np.tanh(gx[2 * H:] + r * gh[2 * H:])
        return (1 - z) * n + z * h, None
    a = gx + gh
    return (np.maximum(a, 0) if mode == "rnn_relu" else np.tanh(a)), None


def np_rnn(mode, x, params, h0, c0, H, L, bidir, lens=None, clip=None):
    """Output, final hidden states and final cell states (None unless LSTM)."""
    T, N, I = x.shape
    D = 2 if bidir else 1
    weights = unpack(params, mode, I, H, L, D)
    lens = [T] * N if lens is None else [int(v) for v in lens]
    hy, cy = np.zeros_like(h0), np.zeros_like(h0)
    inp = x
    for l in range(L):
        out = np.zeros((T, N, D * H))
        for d in range(D):
            k = l * D + d
            for n in range(N):
                h = h0[k, n]
                c = c0[k, n] if c0 is not None else None
                steps = range(lens[n]) if d == 0 else reversed(range(lens[n]))
                for t in steps:
                    h, c = cell(mode, weights[k], inp[t, n], h, c, H, clip)
                    out[t, n, d * H:(d + 1) * H] = h
                hy[k, n] = h
                if c is not None:
                    cy[k, n] = c
        inp = out
    return inp, hy, (cy if mode == "lstm" else None)


def n_params(mode, I, H, L, D):
    G = GATES[mode]
    return sum(D * (G * H * ((I if l == 0 else D * H) + H) + 2 * G * H) for l in range(L))


def make_inputs(mode, T, N, I, H, L, D, rs, scale=0.5):
    x = rs.uniform(-1, 1, (T, N, I))
    params = rs.uniform(-scale, scale, n_params(mode, I, H, L, D))
    h0 = rs.uniform(-1, 1, (L * D, N, H))
    c0 = rs.uniform(-1, 1, (L * D, N, H)) if mode == "lstm" else None
    return x, params, h0, c0


CONFIGS = [(mode, L, bidir) for mode in GATES for L, bidir in ((1, False), (2, True))]


@pytest.mark.parametrize("mode,L,bidir", CONFIGS)
def test_forward_matches_reference(mode, L, bidir):
    rs = np.random.RandomState(1)
    T, N, I, H = 4, 3, 3, 2
    D = 2 if bidir else 1
    x, params, h0, c0 = make_inputs(mode, T, N, I, H, L, D, rs)
    args = [nd.array(a) for a in (x, params, h0, c0) if a is not None]
    outs = nd.RNN(*args, mode=mode, state_size=H, num_layers=L, bidirectional=bidir,
                  state_outputs=True)
    ref = np_rnn(mode, x, params, h0, c0, H, L, bidir)
    assert len(outs) == (3 if mode == "lstm" else 2)
    for o, r in zip(outs, ref):
        assert o.dtype == np.float32
        assert_almost_equal(o.asnumpy(), r, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("mode,L,bidir", CONFIGS)
def test_gradient_numeric(mode, L, bidir):
    rs = np.random.RandomState(2)
    T, N, I, H = 3, 2, 2, 2
    D = 2 if bidir else 1
    loc = [a for a in make_inputs(mode, T, N, I, H, L, D, rs) if a is not None]

    def fn(*a):
        return nd.RNN(*a, mode=mode, state_size=H, num_layers=L, bidirectional=bidir,
                      state_outputs=True)
    check_numeric_gradient(fn, loc, numeric_eps=1e-5, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("mode", sorted(GATES))
def test_sequence_length(mode):
    rs = np.random.RandomState(3)
    T, N, I, H, L = 5, 3, 2, 2, 2
    x, params, h0, c0 = make_inputs(mode, T, N, I, H, L, 2, rs)
    lens = np.array([5, 2, 3])
    seq = nd.array(lens)
    kw = dict(mode=mode, state_size=H, num_layers=L, bidirectional=True, state_outputs=True,
              use_sequence_length=True)
    args = [a for a in (x, params, h0, c0) if a is not None]
    outs = nd.RNN(*[nd.array(a) for a in args], sequence_length=seq, **kw)
    for o, r in zip(outs, np_rnn(mode, x, params, h0, c0, H, L, True, lens)):
        assert_almost_equal(o.asnumpy(), r, rtol=1e-5, atol=1e-6)
    check_numeric_gradient(lambda *a: nd.RNN(*a, sequence_length=seq, **kw), args,
                           numeric_eps=1e-5, rtol=1e-4, atol=1e-6)


def test_lstm_state_clip():
    rs = np.random.RandomState(4)
    T, N, I, H = 4, 2, 3, 3
    x, params, h0, c0 = make_inputs("lstm", T, N, I, H, 1, 1, rs, scale=2.0)
    kw = dict(mode="lstm", state_size=H, num_layers=1, state_outputs=True,
              lstm_state_clip_min=-0.3, lstm_state_clip_max=0.4)
    outs = nd.RNN(nd.array(x), nd.array(params), nd.array(h0), nd.array(c0), **kw)
    ref = np_rnn("lstm", x, params, h0, c0, H, 1, False, clip=(-0.3, 0.4))
    assert np.abs(ref[2]).max() >= 0.3            # the clip is active
    for o, r in zip(outs, ref):
        assert_almost_equal(o.asnumpy(), r, rtol=1e-5, atol=1e-6)
    check_numeric_gradient(lambda *a: nd.RNN(*a, **kw), [x, params, h0, c0],
                           numeric_eps=1e-5, rtol=1e-3, atol=1e-6)


def test_clip_nan_maps_nan_to_lower_bound():
    T, N, I, H = 1, 1, 1, 1
    params = np.zeros(n_params("lstm", I, H, 1, 1))
    x = np.full((T, N, I), np.nan)
    kw = dict(mode="lstm", state_size=H, num_layers=1, state_outputs=True,
              lstm_state_clip_min=-0.5, lstm_state_clip_max=0.5)
    args = [nd.array(x), nd.array(params), nd.zeros((1, 1, 1)), nd.zeros((1, 1, 1))]
    params[:4] = 1.0                               # the input weights carry the NaN in
    args[1] = nd.array(params)
    assert np.isnan(nd.RNN(*args, **kw)[2].asnumpy()).all()
    c = nd.RNN(*args, lstm_state_clip_nan=True, **kw)[2].asnumpy()
    assert_almost_equal(c, np.full((1, 1, 1), -0.5))


def test_dropout_between_layers():
    rs = np.random.RandomState(5)
    T, N, I, H, L = 4, 3, 3, 4, 2
    x, params, h0, _ = make_inputs("rnn_tanh", T, N, I, H, L, 1, rs)
    args = [nd.array(a) for a in (x, params, h0)]
    kw = dict(mode="rnn_tanh", state_size=H, num_layers=L)
    plain = nd.RNN(*args, **kw).asnumpy()
    # inference: no dropout
    assert_almost_equal(nd.RNN(*args, p=0.5, **kw).asnumpy(), plain)
    with mx.autograd.train_mode():
        dropped = nd.RNN(*args, p=0.5, **kw).asnumpy()
    assert not np.allclose(dropped, plain)

    def fn(*a):
        mx.random.seed(11)              # the same dropout mask on every evaluation
        return nd.RNN(*a, p=0.5, **kw)
    check_numeric_gradient(fn, [x, params, h0], numeric_eps=1e-5, rtol=1e-4, atol=1e-6)


def test_float64_and_output_counts():
    rs = np.random.RandomState(6)
    x, params, h0, _ = make_inputs("gru", 3, 2, 2, 3, 1, 1, rs)
    out = nd.RNN(nd.array(x, dtype="float64"), nd.array(params, dtype="float64"),
                 nd.array(h0, dtype="float64"), mode="gru", state_size=3, num_layers=1)
    assert isinstance(out, mx.nd.NDArray) and out.dtype == np.float64
    assert_almost_equal(out.asnumpy(), np_rnn("gru", x, params, h0, None, 3, 1, False)[0],
                        rtol=1e-12, atol=1e-12)


def test_names_and_shapes_match_mxnet():
    op = get_op("RNN")
    p = op.parse({"mode": "gru", "state_size": 4, "num_layers": 2, "bidirectional": True,
                  "state_outputs": True, "use_sequence_length": True})
    assert op.arguments(p) == ["data", "parameters", "state", "sequence_length"]
    assert op.outputs(p)[:op.num_visible_outputs(p)] == ["output", "state_output"]
    ins, outs, _ = op.infer_shape(p, [(5, 2, 3), None, None, None])
    # numbers from MXNet 1.9.1's infer_shape
    assert ins == [(5, 2, 3), (552,), (4, 2, 4), (2,)]
    assert outs[:2] == [(5, 2, 8), (4, 2, 4)]
    p = op.parse({"mode": "lstm", "state_size": 4, "num_layers": 1})
    assert op.arguments(p) == ["data", "parameters", "state", "state_cell"]
    assert op.outputs(p)[:op.num_visible_outputs(p)] == ["output"]
    assert op.infer_shape(p, [(5, 2, 3), None, None, None])[0][1] == (144,)
    p = op.parse({"mode": "rnn_relu", "state_size": 4, "num_layers": 1})
    assert op.infer_shape(p, [(5, 2, 3), None, None])[0][1] == (36,)


def test_bad_input():
    rs = np.random.RandomState(7)
    x, params, h0, c0 = make_inputs("lstm", 3, 2, 3, 2, 1, 1, rs)
    kw = dict(mode="lstm", state_size=2, num_layers=1)
    good = [nd.array(a) for a in (x, params, h0, c0)]
    with pytest.raises(MXNetError, match="parameters"):
        nd.RNN(good[0], nd.array(params[:-1]), good[2], good[3], **kw)
        mx.nd.waitall()   # computing errors surface at the sync point
    with pytest.raises(MXNetError, match="state"):
        nd.RNN(good[0], good[1], nd.zeros((2, 2, 2)), good[3], **kw)
        mx.nd.waitall()   # computing errors surface at the sync point
    with pytest.raises(MXNetError, match="3-D"):
        nd.RNN(nd.array(x[0]), good[1], good[2], good[3], **kw)
        mx.nd.waitall()   # computing errors surface at the sync point
    with pytest.raises(MXNetError, match="projection_size"):
        nd.RNN(*good, projection_size=0, **kw)
        mx.nd.waitall()   # computing errors surface at the sync point
    with pytest.raises(MXNetError, match="together"):
        nd.RNN(*good, lstm_state_clip_min=-1.0, **kw)
        mx.nd.waitall()   # computing errors surface at the sync point
    with pytest.raises(MXNetError, match="mode"):
        nd.RNN(*good, mode="bogus", state_size=2, num_layers=1)
        mx.nd.waitall()   # computing errors surface at the sync point
    with pytest.raises(MXNetError, match="sequence_length"):
        nd.RNN(*good, sequence_length=nd.array([4, 1]), use_sequence_length=True, **kw)
        mx.nd.waitall()   # computing errors surface at the sync point


@pytest.mark.parametrize("case", fixture_cases_for("RNN"))
def test_fixture(case):
    run_fixture_case(case, rtol=1e-5, atol=1e-6)


def np_lstmp(x, params, h0, c0, H, P, L, bidir, lens=None):
    """LSTM with projection written out: per layer and direction the flat vector holds
    i2h (4H, in), h2h (4H, P), h2r (P, H), then the biases as without projection;
    h = W_hr (o * tanh(c))."""
    T, N, I = x.shape
    D = 2 if bidir else 1
    off, w = 0, []
    for l in range(L):
        n_in = I if l == 0 else D * P
        for _ in range(D):
            sizes = [(4 * H, n_in), (4 * H, P), (P, H)]
            mats = []
            for r, c in sizes:
                mats.append(params[off:off + r * c].reshape(r, c))
                off += r * c
            w.append(mats)
    for k in range(L * D):
        w[k] += [params[off:off + 4 * H], params[off + 4 * H:off + 8 * H]]
        off += 8 * H
    assert off == params.size
    lens = [T] * N if lens is None else [int(v) for v in lens]
    hy, cy = np.zeros_like(h0), np.zeros_like(c0)
    inp = x
    for l in range(L):
        out = np.zeros((T, N, D * P))
        for d in range(D):
            k = l * D + d
            wx, wh, wr, bx, bh = w[k]
            for n in range(N):
                h, c = h0[k, n], c0[k, n]
                for t in (range(lens[n]) if d == 0 else reversed(range(lens[n]))):
                    a = wx @ inp[t, n] + bx + wh @ h + bh
                    i, f, g, o = (sigmoid(a[:H]), sigmoid(a[H:2 * H]),
                                  np.tanh(a[2 * H:3 * H]), sigmoid(a[3 * H:]))
                    c = f * c + i * g
                    h = wr @ (o * np.tanh(c))
                    out[t, n, d * P:(d + 1) * P] = h
                hy[k, n], cy[k, n] = h, c
        inp = out
    return inp, hy, cy


@pytest.mark.parametrize("L, bidir, use_lens", [(1, False, False), (2, True, False),
                                                 (2, True, True)])
def test_lstm_projection(L, bidir, use_lens):
    rs = np.random.RandomState(6)
    T, N, I, H, P = 3, 2, 3, 3, 2
    D = 2 if bidir else 1
    size = sum(D * (4 * H * ((I if l == 0 else D * P) + P) + P * H + 8 * H) for l in range(L))
    x = rs.uniform(-1, 1, (T, N, I))
    params = rs.uniform(-0.5, 0.5, size)
    h0, c0 = rs.uniform(-1, 1, (L * D, N, P)), rs.uniform(-1, 1, (L * D, N, H))
    lens = np.array([3, 2]) if use_lens else None
    kw = dict(mode="lstm", state_size=H, projection_size=P, num_layers=L,
              bidirectional=bidir, state_outputs=True, use_sequence_length=use_lens)
    extra = {"sequence_length": nd.array(lens)} if use_lens else {}
    outs = nd.RNN(nd.array(x), nd.array(params), nd.array(h0), nd.array(c0), **extra, **kw)
    for o, r in zip(outs, np_lstmp(x, params, h0, c0, H, P, L, bidir, lens)):
        assert_almost_equal(o.asnumpy(), r, rtol=1e-5, atol=1e-6)
    check_numeric_gradient(lambda *a: nd.RNN(*a, **extra, **kw), [x, params, h0, c0],
                           numeric_eps=1e-5, rtol=1e-4, atol=1e-6)
    with pytest.raises(MXNetError, match="lstm"):
        nd.RNN(nd.array(x), nd.array(params), nd.array(h0), projection_size=P,
               mode="gru", state_size=H, num_layers=L, bidirectional=bidir)
