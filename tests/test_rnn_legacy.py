"""mx.rnn: legacy symbolic cells against NumPy recurrences, weight (un)packing, io."""
import numpy as np
import pytest

import mxnet as mx
from mxnet.test_utils import assert_almost_equal


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _bind_eval(sym, **arrays):
    return [o.asnumpy() for o in sym.eval(ctx=mx.cpu(), **{k: mx.nd.array(v)
                                                            for k, v in arrays.items()})]


def test_lstm_cell_matches_numpy():
    batch, nin, nh, steps = 3, 4, 5, 2
    cell = mx.rnn.LSTMCell(nh, prefix="l_")
    outputs, states = cell.unroll(steps, mx.sym.Variable("data"), layout="NTC",
                                  merge_outputs=True)
    assert len(outputs.list_outputs()) == 1
    rng = np.random.RandomState(0)
    x = rng.normal(size=(batch, steps, nin))
    w = {"l_i2h_weight": rng.normal(size=(4 * nh, nin)) * 0.5,
         "l_i2h_bias": rng.normal(size=(4 * nh,)),
         "l_h2h_weight": rng.normal(size=(4 * nh, nh)) * 0.5,
         "l_h2h_bias": rng.normal(size=(4 * nh,))}
    got = _bind_eval(outputs, data=x, **w)[0]
    h = np.zeros((batch, nh))
    c = np.zeros((batch, nh))
    want = []
    for t in range(steps):
        g = x[:, t] @ w["l_i2h_weight"].T + w["l_i2h_bias"] + h @ w["l_h2h_weight"].T \
            + w["l_h2h_bias"]
        i, f, cc, o = np.split(g, 4, axis=1)
        c = _sigmoid(f) * c + _sigmoid(i) * np.tanh(cc)
        h = _sigmoid(o) * np.tanh(c)
        want.append(h)
    assert_almost_equal(got, np.stack(want, axis=1), rtol=1e-4, atol=1e-5)


def test_gru_and_rnn_cells_name_outputs_like_mxnet():
    for cell in (mx.rnn.GRUCell(6, prefix="rnn_"), mx.rnn.RNNCell(6, prefix="rnn_")):
        inputs = [mx.sym.Variable(f"rnn_t{i}_data") for i in range(3)]
        outputs, _ = cell.unroll(3, inputs)
        group = mx.sym.Group(outputs)
        assert group.list_outputs() == ["rnn_t0_out_output", "rnn_t1_out_output",
                                        "rnn_t2_out_output"]
        _, outs, _ = group.infer_shape(rnn_t0_data=(2, 4), rnn_t1_data=(2, 4),
                                       rnn_t2_data=(2, 4))
        assert outs == [(2, 6)] * 3


def test_unpack_pack_weights_roundtrip():
    cell = mx.rnn.LSTMCell(3, prefix="l_")
    args = {"l_i2h_weight": mx.nd.array(np.arange(24).reshape(12, 2)),
            "l_i2h_bias": mx.nd.arange(12), "l_h2h_weight": mx.nd.ones((12, 3)),
            "l_h2h_bias": mx.nd.zeros((12,))}
    unpacked = cell.unpack_weights(args)
    assert sorted(unpacked)[:2] == ["l_h2h_c_bias", "l_h2h_c_weight"]
    assert_almost_equal(unpacked["l_i2h_f_weight"], np.arange(24).reshape(12, 2)[3:6])
    packed = cell.pack_weights(unpacked)
    for name, value in args.items():
        assert_almost_equal(packed[name], value)


def test_fused_cell_unpacks_into_unfused_names():
    fused = mx.rnn.FusedRNNCell(4, num_layers=2, mode="gru", prefix="g_")
    stack = fused.unfuse()
    outputs, _ = stack.unroll(2, mx.sym.Variable("data"), merge_outputs=True)
    arg_shapes, _, _ = outputs.infer_shape(data=(3, 2, 5))
    shapes = dict(zip(outputs.list_arguments(), arg_shapes))
    n = sum(int(np.prod(s)) for k, s in shapes.items() if k != "data")
    vec = mx.nd.array(np.arange(n, dtype=np.float32))
    unpacked = fused.unpack_weights({"g_parameters": vec})
    assert unpacked["g_l0_i2h_r_weight"].shape == (4, 5)
    assert unpacked["g_l1_i2h_r_weight"].shape == (4, 4)
    repacked = fused.pack_weights(unpacked)["g_parameters"]
    assert_almost_equal(repacked, vec)


def test_modified_cell_refuses_direct_use():
    base = mx.rnn.GRUCell(3)
    mx.rnn.ZoneoutCell(base, zoneout_outputs=0.5)
    with pytest.raises(AssertionError):
        base.begin_state()
    with pytest.raises(NotImplementedError):
        mx.rnn.BidirectionalCell(mx.rnn.GRUCell(2), mx.rnn.GRUCell(2))(None, [])


def test_encode_sentences_and_bucket_iter():
    sents = [["a", "b"], ["b", "c", "a"], ["c"]]
    coded, vocab = mx.rnn.encode_sentences(sents, invalid_label=0, start_label=1)
    assert vocab == {"\n": 0, "a": 1, "b": 2, "c": 3}
    assert coded == [[1, 2], [2, 3, 1], [3]]
    with pytest.raises(AssertionError):
        mx.rnn.encode_sentences([["zzz"]], vocab=vocab)
    it = mx.rnn.BucketSentenceIter(coded * 2, batch_size=2, buckets=[2, 3],
                                   invalid_label=0)
    batches = list(it)
    assert sorted(b.bucket_key for b in batches) == [2, 2, 3]
    for b in batches:
        data, label = b.data[0].asnumpy(), b.label[0].asnumpy()
        assert data.shape == (2, b.bucket_key)
        assert_almost_equal(label[:, :-1], data[:, 1:])
        assert (label[:, -1] == 0).all()


def test_rnn_checkpoint_roundtrip(tmp_path):
    cell = mx.rnn.LSTMCell(2, prefix="l_")
    out, _ = cell.unroll(1, mx.sym.Variable("data"), merge_outputs=True)
    args = {"l_i2h_weight": mx.nd.ones((8, 3)), "l_i2h_bias": mx.nd.arange(8),
            "l_h2h_weight": mx.nd.ones((8, 2)) * 2, "l_h2h_bias": mx.nd.zeros((8,))}
    prefix = str(tmp_path / "m")
    mx.rnn.save_rnn_checkpoint(cell, prefix, 1, out, args, {})
    stored = mx.nd.load(prefix + "-0001.params")
    assert "arg:l_i2h_i_weight" in stored and "arg:l_i2h_weight" not in stored
    _, loaded, _ = mx.rnn.load_rnn_checkpoint(cell, prefix, 1)
    for name, value in args.items():
        assert_almost_equal(loaded[name], value)
