"""gluon.rnn cells: step equations vs NumPy, unroll layouts/merging/valid_length,
modifier and combinator cells. Expected numbers for valid_length unrolls were produced
once with MXNet 1.9.1 (constant 0.1 weights, inputs arange(24)[..,:2]/10)."""
import numpy as np
import pytest

import mxnet as mx
from mxnet import autograd, gluon
from mxnet.gluon import rnn
from mxnet.test_utils import assert_almost_equal


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _weights(cell):
    return [getattr(cell, n).data().asnumpy()
            for n in ("i2h_weight", "h2h_weight", "i2h_bias", "h2h_bias")]


def _init_cell(cell, seed=0):
    cell.initialize(mx.init.Uniform(0.5))
    cell(mx.nd.zeros((1, 4)), cell.begin_state(1))   # finish deferred shapes
    rng = np.random.RandomState(seed)
    for p in cell.collect_params().values():
        p.set_data(mx.nd.array(rng.uniform(-0.5, 0.5, p.shape)))
    return cell


def test_lstm_cell_step():
    cell = _init_cell(rnn.LSTMCell(3, input_size=4))
    wi, wh, bi, bh = _weights(cell)
    rng = np.random.RandomState(1)
    x, h, c = rng.randn(2, 4), rng.randn(2, 3), rng.randn(2, 3)
    out, (nh, nc) = cell(mx.nd.array(x), [mx.nd.array(h), mx.nd.array(c)])
    i, f, g, o = np.split(x @ wi.T + bi + h @ wh.T + bh, 4, axis=1)
    ref_c = _sigmoid(f) * c + _sigmoid(i) * np.tanh(g)
    ref_h = _sigmoid(o) * np.tanh(ref_c)
    assert_almost_equal(out.asnumpy(), ref_h, rtol=1e-5, atol=1e-6)
    assert_almost_equal(nc.asnumpy(), ref_c, rtol=1e-5, atol=1e-6)
    assert out is nh or np.array_equal(out.asnumpy(), nh.asnumpy())


def test_gru_and_rnn_cell_steps():
    gru = _init_cell(rnn.GRUCell(3, input_size=4), seed=2)
    wi, wh, bi, bh = _weights(gru)
    rng = np.random.RandomState(3)
    x, h = rng.randn(2, 4), rng.randn(2, 3)
    out, _ = gru(mx.nd.array(x), [mx.nd.array(h)])
    xr, xz, xn = np.split(x @ wi.T + bi, 3, axis=1)
    hr, hz, hn = np.split(h @ wh.T + bh, 3, axis=1)
    r, z = _sigmoid(xr + hr), _sigmoid(xz + hz)
    ref = (1 - z) * np.tanh(xn + r * hn) + z * h
    assert_almost_equal(out.asnumpy(), ref, rtol=1e-5, atol=1e-6)
    for act, fn in (("tanh", np.tanh), ("relu", lambda v: np.maximum(v, 0)),
                    ("softsign", lambda v: v / (1 + np.abs(v)))):
        cell = _init_cell(rnn.RNNCell(3, activation=act, input_size=4), seed=4)
        wi, wh, bi, bh = _weights(cell)
        out, states = cell(mx.nd.array(x), [mx.nd.array(h)])
        assert_almost_equal(out.asnumpy(), fn(x @ wi.T + bi + h @ wh.T + bh),
                            rtol=1e-5, atol=1e-6)


def test_names_state_info_and_repr():
    cell = rnn.LSTMCell(8, input_size=5, prefix="lstm4_")
    assert list(cell.collect_params().keys()) == [
        "lstm4_i2h_weight", "lstm4_h2h_weight", "lstm4_i2h_bias", "lstm4_h2h_bias"]
    assert cell.collect_params()["lstm4_i2h_weight"].shape == (32, 5)
    assert cell.state_info(2) == [{"shape": (2, 8), "__layout__": "NC"}] * 2
    assert repr(cell) == "LSTMCell(5 -> 32)"
    assert repr(rnn.GRUCell(8)) == "GRUCell(None -> 24)"
    assert repr(rnn.RNNCell(8)) == "RNNCell(None -> 8, tanh)"
    assert repr(rnn.DropoutCell(0.3)) == "DropoutCell(rate=0.3, axes=())"
    z = rnn.ZoneoutCell(rnn.GRUCell(2, prefix="g_"), 0.1, 0.2)
    assert z.prefix == "g_zoneout"
    assert repr(z) == "ZoneoutCell(p_out=0.1, p_state=0.2, GRUCell(None -> 6))"
    assert rnn.ResidualCell(rnn.GRUCell(3, prefix="g3_")).prefix == "g3_residualcell"
    seq = rnn.SequentialRNNCell(prefix="seq_")
    with seq.name_scope():
        seq.add(rnn.LSTMCell(4))
        seq.add(rnn.GRUCell(4))
    assert list(seq.collect_params().keys())[0] == "seq_lstm0_i2h_weight"
    assert list(seq.collect_params().keys())[-1] == "seq_gru0_h2h_bias"
    assert len(seq.state_info(2)) == 3 and len(seq) == 2
    assert repr(seq) == "SequentialRNNCell(\n(0): LSTMCell(None -> 16)\n" \
                        "(1): GRUCell(None -> 12)\n)"
    bi = rnn.BidirectionalCell(rnn.LSTMCell(4), rnn.LSTMCell(4))
    assert bi.prefix == "" and len(bi.state_info(2)) == 4
    with pytest.raises(NotImplementedError):
        bi(mx.nd.ones((1, 2)), bi.begin_state(batch_size=1))
    states = rnn.LSTMCell(3, prefix="c_").begin_state(2)
    assert [s.shape for s in states] == [(2, 3), (2, 3)]


@pytest.mark.parametrize("layout", ["NTC", "TNC"])
def test_unroll_layouts_and_merge(layout):
    cell = _init_cell(rnn.GRUCell(3, input_size=4), seed=5)
    rng = np.random.RandomState(6)
    x = rng.randn(2, 5, 4).astype(np.float32)      # N, T, C
    xin = x if layout == "NTC" else x.transpose(1, 0, 2)
    merged, states = cell.unroll(5, mx.nd.array(xin), layout=layout, merge_outputs=True)
    steps, _ = cell.unroll(5, mx.nd.array(xin), layout=layout, merge_outputs=False)
    assert isinstance(steps, list) and len(steps) == 5
    h = np.zeros((2, 3), np.float32)
    refs = []
    for t in range(5):
        out, _ = cell(mx.nd.array(x[:, t]), [mx.nd.array(h)])
        h = out.asnumpy()
        refs.append(h)
    ref = np.stack(refs, axis=1 if layout == "NTC" else 0)
    assert_almost_equal(merged.asnumpy(), ref, rtol=1e-5, atol=1e-6)
    for t in range(5):
        assert_almost_equal(steps[t].asnumpy(), refs[t], rtol=1e-5, atol=1e-6)
    assert_almost_equal(states[0].asnumpy(), refs[-1], rtol=1e-5, atol=1e-6)
    # a list of steps works too
    listed, _ = cell.unroll(5, [mx.nd.array(x[:, t]) for t in range(5)], layout=layout,
                            merge_outputs=True)
    assert_almost_equal(listed.asnumpy(), ref, rtol=1e-5, atol=1e-6)


def _const_x():
    return mx.nd.array(np.arange(24).reshape(2, 4, 3)[:, :, :2] / 10.0)


def test_valid_length_matches_mxnet():
    cell = rnn.LSTMCell(3, input_size=2, prefix="c_")
    cell.initialize(mx.init.Constant(0.1))
    out, states = cell.unroll(4, _const_x(), layout="NTC", merge_outputs=True,
                              valid_length=mx.nd.array([2, 4]))
    ref = np.array([[[0.0025] * 3, [0.0203] * 3, [0] * 3, [0] * 3],
                    [[0.0769] * 3, [0.1521] * 3, [0.2279] * 3, [0.304] * 3]])
    assert_almost_equal(out.asnumpy(), ref, atol=1e-4, rtol=0)
    assert_almost_equal(states[0].asnumpy(), [[0.0203] * 3, [0.304] * 3], atol=1e-4, rtol=0)
    assert_almost_equal(states[1].asnumpy(), [[0.0392] * 3, [0.5342] * 3], atol=1e-4, rtol=0)


def test_bidirectional_valid_length_matches_mxnet():
    bi = rnn.BidirectionalCell(rnn.GRUCell(2, input_size=2, prefix="l_"),
                               rnn.GRUCell(2, input_size=2, prefix="r_"))
    bi.initialize(mx.init.Constant(0.1))
    out, states = bi.unroll(4, _const_x(), layout="NTC", merge_outputs=True,
                            valid_length=mx.nd.array([2, 4]))
    ref = np.array([[[0.005, 0.005, 0.0236, 0.0236], [0.0365, 0.0365, 0.0337, 0.0337],
                     [0, 0, 0, 0], [0, 0, 0, 0]],
                    [[0.1072, 0.1072, 0.2767, 0.2767], [0.1927, 0.1927, 0.278, 0.278],
                     [0.2651, 0.2651, 0.2443, 0.2443], [0.3289, 0.3289, 0.1597, 0.1597]]])
    assert_almost_equal(out.asnumpy(), ref, atol=1e-4, rtol=0)
    assert_almost_equal(states[0].asnumpy(), [[0.0365] * 2, [0.3289] * 2], atol=1e-4, rtol=0)
    assert_almost_equal(states[1].asnumpy(), [[0.0236] * 2, [0.2767] * 2], atol=1e-4, rtol=0)


def test_bidirectional_equals_two_directions():
    l_cell = _init_cell(rnn.LSTMCell(3, input_size=4, prefix="l_"), seed=7)
    r_cell = _init_cell(rnn.LSTMCell(3, input_size=4, prefix="r_"), seed=8)
    bi = rnn.BidirectionalCell(l_cell, r_cell)
    x = mx.nd.array(np.random.RandomState(9).randn(2, 5, 4))
    out, states = bi.unroll(5, x, layout="NTC", merge_outputs=True)
    fwd, _ = l_cell.unroll(5, x, layout="NTC", merge_outputs=True)
    bwd, _ = r_cell.unroll(5, mx.nd.array(x.asnumpy()[:, ::-1].copy()),
                           layout="NTC", merge_outputs=True)
    ref = np.concatenate([fwd.asnumpy(), bwd.asnumpy()[:, ::-1]], axis=2)
    assert out.shape == (2, 5, 6) and len(states) == 4
    assert_almost_equal(out.asnumpy(), ref, rtol=1e-5, atol=1e-6)


def test_residual_cell_matches_mxnet_and_adds_input():
    res = rnn.ResidualCell(rnn.GRUCell(2, input_size=2, prefix="g_"))
    res.initialize(mx.init.Constant(0.1))
    out, _ = res.unroll(4, _const_x(), layout="NTC", merge_outputs=True,
                        valid_length=mx.nd.array([2, 4]))
    ref = np.array([[[0.005, 0.105], [0.3365, 0.4365], [0, 0], [0, 0]],
                    [[1.3072, 1.4072], [1.6927, 1.7927], [2.0651, 2.1651],
                     [2.4289, 2.5289]]])
    assert_almost_equal(out.asnumpy(), ref, atol=1e-4, rtol=0)
    step, _ = res(mx.nd.ones((2, 2)), res.begin_state(batch_size=2))
    base_only = rnn.GRUCell(2, input_size=2)
    base_only.initialize(mx.init.Constant(0.1))
    plain, _ = base_only(mx.nd.ones((2, 2)), base_only.begin_state(2))
    assert_almost_equal(step.asnumpy(), plain.asnumpy() + 1, rtol=1e-6, atol=1e-6)
    with pytest.raises(AssertionError):
        res.base_cell.begin_state(2)   # a modified cell is used through its modifier


def test_sequential_cells_step_and_unroll_agree():
    seq = rnn.HybridSequentialRNNCell()
    with seq.name_scope():
        seq.add(rnn.LSTMCell(3, input_size=4))
        seq.add(rnn.ResidualCell(rnn.GRUCell(3, input_size=3)))
    seq.initialize(mx.init.Uniform(0.4))
    x = mx.nd.array(np.random.RandomState(10).randn(2, 3, 4))
    merged, states = seq.unroll(3, x, layout="NTC", merge_outputs=True)
    st = seq.begin_state(batch_size=2)
    outs = []
    for t in range(3):
        o, st = seq(x[:, t], st)
        outs.append(o.asnumpy())
    assert_almost_equal(merged.asnumpy(), np.stack(outs, axis=1), rtol=1e-5, atol=1e-6)
    assert len(states) == 3
    for a, b in zip(states, st):
        assert_almost_equal(a.asnumpy(), b.asnumpy(), rtol=1e-5, atol=1e-6)
    seq.hybridize()
    o, _ = seq(x[:, 0], seq.begin_state(batch_size=2))
    assert_almost_equal(o.asnumpy(), outs[0], rtol=1e-5, atol=1e-6)


def test_dropout_and_zoneout_cells():
    drop = rnn.DropoutCell(0.5)
    x = mx.nd.ones((4, 6, 3))
    out, st = drop.unroll(6, x, layout="NTC", merge_outputs=True)
    np.testing.assert_array_equal(out.asnumpy(), x.asnumpy())   # predict mode
    with autograd.train_mode():
        out, _ = drop.unroll(6, x, layout="NTC", merge_outputs=True)
    vals = np.unique(out.asnumpy())
    assert set(vals.tolist()) <= {0.0, 2.0} and len(vals) == 2
    zone = rnn.ZoneoutCell(rnn.RNNCell(5, input_size=3), zoneout_outputs=0.5,
                           zoneout_states=0.5)
    zone.initialize()
    plain, _ = zone.unroll(4, x[:, :4], layout="NTC", merge_outputs=True)
    assert plain.shape == (4, 4, 5)
    with autograd.train_mode():
        zoned, _ = zone.unroll(4, x[:, :4], layout="NTC", merge_outputs=True)
    z = zoned.asnumpy()
    # a zoned-out unit keeps its previous value (0 before the first step)
    prev = np.concatenate([np.zeros_like(z[:, :1]), z[:, :-1]], axis=1)
    p = plain.asnumpy()
    kept = np.isclose(z, prev)
    assert kept.any() and (~kept).any()
    with pytest.raises(AssertionError):
        rnn.ZoneoutCell(rnn.BidirectionalCell(rnn.GRUCell(2), rnn.GRUCell(2)))
    assert p.shape == z.shape


def test_cell_gradients_flow():
    cell = rnn.LSTMCell(3, input_size=2)
    cell.initialize()
    x = mx.nd.array(np.random.RandomState(11).randn(2, 4, 2))
    with autograd.record():
        out, _ = cell.unroll(4, x, layout="NTC", merge_outputs=True)
        loss = out.sum()
    loss.backward()
    assert np.abs(cell.i2h_weight.grad().asnumpy()).sum() > 0


def test_symbolic_unroll_with_given_states():
    cell = rnn.LSTMCell(3, prefix="lstm_")
    begin = [mx.sym.var("h0"), mx.sym.var("c0")]
    out, states = cell.unroll(3, mx.sym.var("data"), begin_state=begin, layout="TNC",
                              merge_outputs=True)
    args = out.list_arguments()
    assert {"data", "lstm_i2h_weight", "lstm_i2h_bias", "lstm_h2h_weight",
            "lstm_h2h_bias", "h0", "c0"} == set(args)
    _, out_shapes, _ = out.infer_shape(data=(3, 2, 5), h0=(2, 3), c0=(2, 3))
    assert out_shapes == [(3, 2, 3)]


def test_symbolic_unroll_default_states():
    # the begin states are sym.zeros(shape=(0, H)): inference fills in the batch size
    cell = rnn.LSTMCell(3, prefix="lstm_")
    out, _ = cell.unroll(3, mx.sym.var("data"), layout="TNC", merge_outputs=True)
    assert out.infer_shape(data=(3, 2, 5))[1] == [(3, 2, 3)]
    exe = out.simple_bind(mx.cpu(), data=(3, 2, 5))
    for name, arr in exe.arg_dict.items():
        arr[:] = 0.1 if name != "data" else 1.0
    got = exe.forward()[0].asnumpy()
    # the same cell run imperatively from explicit zero states
    params = {name: mx.nd.full(arr.shape, 0.1) for name, arr in exe.arg_dict.items()
              if name != "data"}
    h = c = mx.nd.zeros((2, 3))
    for t in range(3):
        gates = (mx.nd.FullyConnected(mx.nd.ones((2, 5)), params["lstm_i2h_weight"],
                                      params["lstm_i2h_bias"], num_hidden=12)
                 + mx.nd.FullyConnected(h, params["lstm_h2h_weight"],
                                        params["lstm_h2h_bias"], num_hidden=12))
        i, f, g, o = mx.nd.split(gates, num_outputs=4, axis=1)
        c = mx.nd.sigmoid(f) * c + mx.nd.sigmoid(i) * mx.nd.tanh(g)
        h = mx.nd.sigmoid(o) * mx.nd.tanh(c)
        assert np.allclose(got[t], h.asnumpy(), rtol=1e-5, atol=1e-6)


def test_hybridized_zero_begin_state_learns_batch_size_through_where():
    # GluonTS's DeepAR pattern: begin_state(func=F.zeros, batch_size=0) in the graph,
    # passed through where(...) into unroll; the batch size comes back from the cell
    class Net(gluon.HybridBlock):
        def __init__(self):
            super().__init__()
            with self.name_scope():
                self.rnn = gluon.rnn.HybridSequentialRNNCell()
                self.rnn.add(gluon.rnn.LSTMCell(4))

        def hybrid_forward(self, F, x, pad):
            batch = x.shape[0] if isinstance(x, mx.nd.NDArray) else 0
            begin = self.rnn.begin_state(func=F.zeros, batch_size=batch)
            mask = pad.slice_axis(axis=1, begin=0, end=1).repeat(repeats=4, axis=1)
            state = [F.where(mask, b, b) for b in begin]
            out, _ = self.rnn.unroll(inputs=x, length=3, layout="NTC", merge_outputs=True,
                                     begin_state=state)
            return out

    net = Net()
    net.initialize()
    x = mx.nd.array(np.random.default_rng(0).standard_normal((2, 3, 5)))
    pad = mx.nd.zeros((2, 3))
    want = net(x, pad).asnumpy()            # imperative: real batch size
    net.hybridize()
    np.testing.assert_allclose(net(x, pad).asnumpy(), want, rtol=1e-5, atol=1e-6)


def test_hybrid_sequential_cell_step_returns_tuple_when_hybridized():
    # MXNet steps a HybridSequentialRNNCell in Python, so (output, states) stays a tuple
    seq = rnn.HybridSequentialRNNCell()
    with seq.name_scope():
        seq.add(rnn.LSTMCell(3, input_size=2))
        seq.add(rnn.GRUCell(3, input_size=3))
    seq.initialize(mx.init.Constant(0.1))
    x = mx.nd.array(np.random.RandomState(0).uniform(-1, 1, (2, 2)))
    want = seq(x, seq.begin_state(batch_size=2))
    seq.hybridize()
    got = seq(x, seq.begin_state(batch_size=2))
    assert isinstance(want, tuple) and isinstance(got, tuple)
    assert_almost_equal(got[0].asnumpy(), want[0].asnumpy(), rtol=1e-6, atol=1e-7)
    assert len(got[1]) == 3
