"""gluon.rnn fused layers (RNN, LSTM, GRU) against a NumPy reference written here and
against unrolled cells holding the same weights."""
import numpy as np
import pytest

import mxnet as mx
from mxnet import autograd, gluon
from mxnet.gluon import rnn
from mxnet.test_utils import assert_almost_equal


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _np_cell(mode, x, h, c, wi, wh, bi, bh):
    """One step of MXNet's cell equations (gates i,f,g,o for LSTM; r,z,n for GRU)."""
    if mode == "lstm":
        g = x @ wi.T + bi + h @ wh.T + bh
        i, f, gg, o = np.split(g, 4, axis=1)
        c = _sigmoid(f) * c + _sigmoid(i) * np.tanh(gg)
        return _sigmoid(o) * np.tanh(c), c
    if mode == "gru":
        xr, xz, xn = np.split(x @ wi.T + bi, 3, axis=1)
        hr, hz, hn = np.split(h @ wh.T + bh, 3, axis=1)
        r, z = _sigmoid(xr + hr), _sigmoid(xz + hz)
        n = np.tanh(xn + r * hn)
        return (1 - z) * n + z * h, None
    pre = x @ wi.T + bi + h @ wh.T + bh
    return (np.maximum(pre, 0) if mode == "rnn_relu" else np.tanh(pre)), None


def _np_layer(mode, x, params, prefix, num_layers, bidirectional, h0, c0):
    """Reference stacked (bi)directional recurrence on TNC data."""
    dirs = ["l", "r"] if bidirectional else ["l"]
    hs, cs = [], []
    inp = x
    for layer in range(num_layers):
        outs = []
        for k, d in enumerate(dirs):
            idx = layer * len(dirs) + k
            w = [params[f"{prefix}{d}{layer}_{n}"] for n in
                 ("i2h_weight", "h2h_weight", "i2h_bias", "h2h_bias")]
            h, c = h0[idx], (c0[idx] if c0 is not None else None)
            steps = range(len(inp)) if d == "l" else reversed(range(len(inp)))
            out = [None] * len(inp)
            for t in steps:
                h, c = _np_cell(mode, inp[t], h, c, *w)
                out[t] = h
            outs.append(np.stack(out))
            hs.append(h)
            cs.append(c)
        inp = np.concatenate(outs, axis=2)
    return inp, np.stack(hs), (np.stack(cs) if c0 is not None else None)


LAYERS = {"lstm": (rnn.LSTM, {}), "gru": (rnn.GRU, {}),
          "rnn_tanh": (rnn.RNN, {"activation": "tanh"}),
          "rnn_relu": (rnn.RNN, {"activation": "relu"})}


@pytest.mark.parametrize("mode", sorted(LAYERS))
@pytest.mark.parametrize("num_layers,bidirectional", [(1, False), (2, True)])
@pytest.mark.parametrize("layout", ["TNC", "NTC"])
def test_layer_matches_numpy(mode, num_layers, bidirectional, layout):
    cls, kw = LAYERS[mode]
    T, N, C, H = 4, 3, 5, 6
    layer = cls(H, num_layers=num_layers, bidirectional=bidirectional, layout=layout, **kw)
    layer.initialize(mx.init.Uniform(0.3))
    rng = np.random.RandomState(0)
    x = rng.randn(T, N, C).astype(np.float32)
    D = 2 if bidirectional else 1
    h0 = rng.randn(num_layers * D, N, H).astype(np.float32) * 0.5
    c0 = rng.randn(num_layers * D, N, H).astype(np.float32) * 0.5 if mode == "lstm" else None
    xin = x if layout == "TNC" else x.transpose(1, 0, 2)
    states = [mx.nd.array(h0)] + ([mx.nd.array(c0)] if c0 is not None else [])
    out, new_states = layer(mx.nd.array(xin), states)
    params = {k: v.data().asnumpy() for k, v in layer.collect_params().items()}
    ref_out, ref_h, ref_c = _np_layer(mode, x, params, layer.prefix, num_layers,
                                      bidirectional, h0, c0)
    if layout == "NTC":
        ref_out = ref_out.transpose(1, 0, 2)
    assert out.shape == ref_out.shape
    assert_almost_equal(out.asnumpy(), ref_out, rtol=1e-4, atol=1e-5)
    assert_almost_equal(new_states[0].asnumpy(), ref_h, rtol=1e-4, atol=1e-5)
    if c0 is not None:
        assert_almost_equal(new_states[1].asnumpy(), ref_c, rtol=1e-4, atol=1e-5)
    # without states: only the output comes back, from zero states
    out0 = layer(mx.nd.array(xin))
    assert isinstance(out0, mx.nd.NDArray)
    zeros = np.zeros_like(h0)
    ref0 = _np_layer(mode, x, params, layer.prefix, num_layers, bidirectional, zeros,
                     zeros if c0 is not None else None)[0]
    if layout == "NTC":
        ref0 = ref0.transpose(1, 0, 2)
    assert_almost_equal(out0.asnumpy(), ref0, rtol=1e-4, atol=1e-5)


def test_parameter_names_shapes_and_repr():
    # names and shapes as MXNet 1.9.1 gives them (checked with the real MXNet)
    layer = rnn.LSTM(8, num_layers=2, bidirectional=True, input_size=5, prefix="lstm0_")
    shapes = {k: v.shape for k, v in layer.collect_params().items()}
    assert list(shapes)[:5] == ["lstm0_l0_i2h_weight", "lstm0_l0_h2h_weight",
                                "lstm0_l0_i2h_bias", "lstm0_l0_h2h_bias",
                                "lstm0_r0_i2h_weight"]
    assert shapes["lstm0_l1_i2h_weight"] == (32, 16)
    assert shapes["lstm0_r1_h2h_bias"] == (32,)
    assert len(shapes) == 16
    assert repr(layer) == "LSTM(5 -> 8, TNC, num_layers=2, bidirectional)"
    gru = rnn.GRU(4, input_size=3, prefix="gru0_")
    assert {k: v.shape for k, v in gru.collect_params().items()} == {
        "gru0_l0_i2h_weight": (12, 3), "gru0_l0_h2h_weight": (12, 4),
        "gru0_l0_i2h_bias": (12,), "gru0_l0_h2h_bias": (12,)}
    assert repr(rnn.RNN(4, activation="tanh")) == "RNN(None -> 4, TNC)"
    assert rnn.LSTM(8).state_info(3) == [
        {"shape": (1, 3, 8), "__layout__": "LNC", "dtype": "float32"}] * 2
    assert rnn.GRU(8, num_layers=2, bidirectional=True).state_info(3) == [
        {"shape": (4, 3, 8), "__layout__": "LNC", "dtype": "float32"}]
    with pytest.raises(AssertionError):
        rnn.LSTM(4, layout="CTN")


def test_deferred_input_size_and_begin_state():
    layer = rnn.GRU(6, num_layers=2, layout="NTC")
    layer.initialize()
    out = layer(mx.nd.ones((2, 5, 7)))
    assert out.shape == (2, 5, 6)
    assert layer.l0_i2h_weight.shape == (18, 7)
    assert layer.l1_i2h_weight.shape == (18, 6)
    states = layer.begin_state(2)
    assert [s.shape for s in states] == [(2, 2, 6)]
    ones = layer.begin_state(2, func=mx.nd.ones)
    assert ones[0].asnumpy().sum() == 24
    with pytest.raises(ValueError, match="Invalid recurrent state shape"):
        layer(mx.nd.ones((2, 5, 7)), [mx.nd.zeros((1, 2, 6))])


def _unrolled_cells(mode, layer, hidden):
    """A stack of cells (bidirectional where the layer is) sharing the layer's weights."""
    cell_cls = {"lstm": rnn.LSTMCell, "gru": rnn.GRUCell, "rnn_tanh": rnn.RNNCell}[mode]
    stack = rnn.SequentialRNNCell()
    for layer_i in range(layer._num_layers):
        cells = []
        for d in ["l", "r"][:layer._dir]:
            cell = cell_cls(hidden, prefix=f"{d}{layer_i}_")
            cell.initialize()
            for name in ("i2h_weight", "h2h_weight", "i2h_bias", "h2h_bias"):
                src = getattr(layer, f"{d}{layer_i}_{name}").data()
                getattr(cell, name).shape = src.shape
                getattr(cell, name).initialize(force_reinit=True)
                getattr(cell, name).set_data(src)
            cells.append(cell)
        stack.add(rnn.BidirectionalCell(*cells) if layer._dir == 2 else cells[0])
    return stack


@pytest.mark.parametrize("mode", ["lstm", "gru", "rnn_tanh"])
@pytest.mark.parametrize("bidirectional", [False, True])
def test_layer_equals_unrolled_cells(mode, bidirectional):
    cls, kw = LAYERS[mode]
    layer = cls(5, num_layers=2 if not bidirectional else 1, bidirectional=bidirectional,
                layout="NTC", **kw)
    layer.initialize(mx.init.Xavier())
    x = mx.nd.array(np.random.RandomState(1).randn(3, 4, 6))
    out = layer(x)
    cells = _unrolled_cells(mode, layer, 5)
    cell_out, _ = cells.unroll(4, x, layout="NTC", merge_outputs=True)
    assert_almost_equal(out.asnumpy(), cell_out.asnumpy(), rtol=1e-4, atol=1e-5)


def test_layer_gradients_match_cells():
    layer = rnn.LSTM(4, layout="NTC")
    layer.initialize(mx.init.Xavier())
    x = mx.nd.array(np.random.RandomState(2).randn(2, 3, 5))
    x.attach_grad()
    with autograd.record():
        loss = (layer(x) ** 2).sum()
    loss.backward()
    cells = _unrolled_cells("lstm", layer, 4)
    x2 = x.copy()
    x2.attach_grad()
    with autograd.record():
        loss2 = (cells.unroll(3, x2, layout="NTC", merge_outputs=True)[0] ** 2).sum()
    loss2.backward()
    assert_almost_equal(x.grad.asnumpy(), x2.grad.asnumpy(), rtol=1e-4, atol=1e-5)
    cell = cells[0]
    assert_almost_equal(layer.l0_h2h_weight.grad().asnumpy(),
                        cell.h2h_weight.grad().asnumpy(), rtol=1e-4, atol=1e-5)


def test_hybridized_layer_and_symbol():
    layer = rnn.GRU(4, num_layers=2, bidirectional=True, input_size=3)
    layer.initialize()
    x = mx.nd.array(np.random.RandomState(3).randn(5, 2, 3))
    ref = layer(x).asnumpy()
    layer.hybridize()
    assert_almost_equal(layer(x).asnumpy(), ref, rtol=1e-5, atol=1e-6)
    sym = layer(mx.sym.var("data"))
    assert isinstance(sym, mx.sym.Symbol)
    assert "rnn" in sym.name.lower() or sym.list_outputs()


def test_dropout_between_layers_only_in_training():
    layer = rnn.LSTM(6, num_layers=2, dropout=0.5, input_size=4)
    layer.initialize()
    x = mx.nd.array(np.random.RandomState(4).randn(3, 2, 4))
    a, b = layer(x).asnumpy(), layer(x).asnumpy()
    np.testing.assert_array_equal(a, b)
    with autograd.train_mode():
        c = layer(x).asnumpy()
    assert not np.allclose(a, c)


def test_use_sequence_length_matches_cells_with_valid_length():
    layer = rnn.GRU(4, input_size=3, layout="NTC", use_sequence_length=True,
                    bidirectional=True)
    layer.initialize(mx.init.Xavier())
    x = mx.nd.array(np.random.RandomState(5).randn(2, 5, 3))
    valid = mx.nd.array([3, 5])
    out, states = layer(x, layer.begin_state(2), valid)
    l_cell = rnn.GRUCell(4, input_size=3, prefix="l_")
    r_cell = rnn.GRUCell(4, input_size=3, prefix="r_")
    bi = rnn.BidirectionalCell(l_cell, r_cell)
    bi.initialize()
    for d, cell in (("l", l_cell), ("r", r_cell)):
        for n in ("i2h_weight", "h2h_weight", "i2h_bias", "h2h_bias"):
            getattr(cell, n).set_data(getattr(layer, f"{d}0_{n}").data())
    ref, ref_states = bi.unroll(5, x, layout="NTC", merge_outputs=True, valid_length=valid)
    assert_almost_equal(out.asnumpy(), ref.asnumpy(), rtol=1e-5, atol=1e-6)
    assert np.all(out.asnumpy()[0, 3:] == 0)
    for k in range(2):
        assert_almost_equal(states[0].asnumpy()[k], ref_states[k].asnumpy(), rtol=1e-5,
                            atol=1e-6)


def test_lstm_projection_names_and_shapes():
    # names and shapes as MXNet 1.9.1 gives them
    layer = rnn.LSTM(8, projection_size=3, input_size=5, prefix="lstm1_")
    assert {k: v.shape for k, v in layer.collect_params().items()} == {
        "lstm1_l0_i2h_weight": (32, 5), "lstm1_l0_h2h_weight": (32, 3),
        "lstm1_l0_i2h_bias": (32,), "lstm1_l0_h2h_bias": (32,),
        "lstm1_l0_h2r_weight": (3, 8)}
    assert [s["shape"] for s in layer.state_info(2)] == [(1, 2, 3), (1, 2, 8)]
    layer.initialize()
    out, states = layer(mx.nd.ones((2, 2, 5)), layer.begin_state(2))
    assert out.shape == (2, 2, 3) and [s.shape for s in states] == [(1, 2, 3), (1, 2, 8)]


@pytest.mark.parametrize("bidirectional", [False, True])
def test_hybridized_nested_layer_learns_its_input_size(bidirectional):
    # the layer's input size is unknown until data arrives; hybridized inside a
    # HybridSequential it is found through the RNN operator's parameter length
    def build():
        net = gluon.nn.HybridSequential()
        with net.name_scope():
            net.add(rnn.LSTM(4, bidirectional=bidirectional))
            net.add(gluon.nn.Dense(3))
        net.initialize(mx.init.Xavier())
        return net
    x = mx.nd.array(np.random.RandomState(0).uniform(-1, 1, (2, 3, 5)))
    plain, hybrid = build(), build()
    hybrid.hybridize()
    out_h = hybrid(x)
    assert hybrid[0].l0_i2h_weight.shape == (16, 5)
    # the same computation eagerly, with the same parameters
    plain(x)
    for (_, a), (_, b) in zip(sorted(plain.collect_params().items()),
                              sorted(hybrid.collect_params().items())):
        a.set_data(b.data())
    assert_almost_equal(plain(x).asnumpy(), out_h.asnumpy(), rtol=1e-5, atol=1e-6)


def test_save_parameters_uses_mxnet_unfused_keys(tmp_path):
    # The keys MXNet 1.9.1 writes for these layers (read back from its files with
    # mx.nd.load): the unfused cell stack's names, so .params files move both ways.
    lstm = rnn.LSTM(4, 2, bidirectional=True)
    lstm.initialize()
    x = mx.nd.array(np.random.RandomState(0).randn(3, 2, 5))
    want = lstm(x).asnumpy()
    path = str(tmp_path / "lstm.params")
    lstm.save_parameters(path)
    assert sorted(mx.nd.load(path)) == sorted(
        f"_unfused.{layer}.{d}_cell.{m}_{k}" for layer in (0, 1) for d in "lr"
        for m in ("i2h", "h2h") for k in ("weight", "bias"))
    again = rnn.LSTM(4, 2, bidirectional=True)
    again.load_parameters(path)
    assert_almost_equal(again(x).asnumpy(), want)

    gru = rnn.GRU(4, 2)
    gru.initialize()
    gru(x)
    path = str(tmp_path / "gru.params")
    gru.save_parameters(path)
    assert sorted(mx.nd.load(path)) == sorted(
        f"_unfused.{layer}.{m}_{k}" for layer in (0, 1)
        for m in ("i2h", "h2h") for k in ("weight", "bias"))
    # a file written with those keys (as MXNet writes it) loads into a fresh layer
    weights = {key: mx.nd.array(np.full(arr.shape, 0.01 * i, dtype=np.float32))
               for i, (key, arr) in enumerate(sorted(mx.nd.load(path).items()))}
    mx.nd.save(path, weights)
    fresh = rnn.GRU(4, 2)
    fresh.load_parameters(path)
    assert_almost_equal(fresh.l1_h2h_bias.data().asnumpy(),
                        weights["_unfused.1.h2h_bias"].asnumpy())
