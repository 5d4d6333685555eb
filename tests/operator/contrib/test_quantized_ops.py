"""quantized_flatten / quantized_act / quantized_pooling / quantized_concat against
their float counterparts (values are also compared with MXNet 1.9.1 fixtures)."""
import numpy as np
import pytest

import mxnet as mx
from mxnet.base import MXNetError

nd = mx.nd
RNG = np.random.RandomState(0)
Q = RNG.randint(-127, 128, (2, 3, 6, 6)).astype(np.int8)
MN, MX = nd.array([-2.0]), nd.array([2.0])


def test_flatten_and_relu_keep_the_range():
    out, lo, hi = nd.contrib.quantized_flatten(nd.array(Q, dtype="int8"), MN, MX)
    assert out.shape == (2, 108) and out.dtype == np.int8
    assert (out.asnumpy() == Q.reshape(2, -1)).all()
    assert (lo.asnumpy()[0], hi.asnumpy()[0]) == (-2.0, 2.0)
    out, _, _ = nd.contrib.quantized_act(nd.array(Q, dtype="int8"), MN, MX, act_type="relu")
    assert (out.asnumpy() == np.maximum(Q, 0)).all()
    with pytest.raises(MXNetError, match="relu"):
        nd.contrib.quantized_act(nd.array(Q, dtype="int8"), MN, MX, act_type="tanh")


@pytest.mark.parametrize("pool_type", ["max", "avg"])
def test_pooling_equals_float_pooling_rounded(pool_type):
    kw = dict(kernel=(2, 2), stride=(2, 2), pool_type=pool_type)
    out, _, _ = nd.contrib.quantized_pooling(nd.array(Q, dtype="int8"), MN, MX, **kw)
    ref = nd.Pooling(nd.array(Q.astype(np.float64), dtype="float64"), **kw).asnumpy()
    assert out.dtype == np.int8 and (out.asnumpy() == np.rint(ref)).all()


def test_concat_rescales_to_the_common_range():
    b = RNG.randint(-127, 128, (2, 1, 6, 6)).astype(np.int8)
    out, lo, hi = nd.contrib.quantized_concat(nd.array(Q, dtype="int8"),
                                              nd.array(b, dtype="int8"), MN, MX,
                                              nd.array([-4.0]), nd.array([3.0]), num_args=2)
    assert out.shape == (2, 4, 6, 6)
    assert (lo.asnumpy()[0], hi.asnumpy()[0]) == (-4.0, 3.0)
    assert (out.asnumpy()[:, :3] == np.rint(Q * np.float32(0.5))).all()
    assert (out.asnumpy()[:, 3:] == b).all()


def test_quantized_fully_connected():
    x = RNG.randint(-127, 128, (3, 8)).astype(np.int8)
    w = RNG.randint(-127, 128, (4, 8)).astype(np.int8)
    rngs = [nd.array([-2.0]), nd.array([1.0]), nd.array([-0.5]), nd.array([0.5])]
    out, lo, hi = nd.contrib.quantized_fully_connected(
        nd.array(x, dtype="int8"), nd.array(w, dtype="int8"), *rngs, num_hidden=4,
        no_bias=True)
    assert out.dtype == np.int32
    assert (out.asnumpy() == x.astype(np.int64) @ w.astype(np.int64).T).all()
    assert abs(hi.asnumpy()[0] - 2.0 * 0.5 / 127 ** 2 * (2 ** 31 - 1)) < 1
    # Dequantized, the int32 result is the float product within quantization error.
    real = out.asnumpy() * (hi.asnumpy()[0] / (2 ** 31 - 1))
    ref = (x * 2.0 / 127) @ (w * 0.5 / 127).T
    assert np.abs(real - ref).max() < 1e-6
    # uint8 data (range [0, r]): one step is (r / 255) * (rw / 127)
    xu = RNG.randint(0, 256, (3, 8)).astype(np.uint8)
    out, lo, hi = nd.contrib.quantized_fully_connected(
        nd.array(xu, dtype="uint8"), nd.array(w, dtype="int8"), nd.array([0.0]),
        nd.array([2.0]), *rngs[2:], num_hidden=4, no_bias=True)
    assert (out.asnumpy() == xu.astype(np.int64) @ w.astype(np.int64).T).all()
    assert abs(hi.asnumpy()[0] - 2.0 / 255 * 0.5 / 127 * (2 ** 31 - 1)) < 1
    with pytest.raises(MXNetError, match="int8 or uint8"):
        nd.contrib.quantized_fully_connected(nd.array(x, dtype="int32"),
                                             nd.array(w, dtype="int8"), *rngs, num_hidden=4,
                                             no_bias=True)[0].asnumpy()


def test_quantized_embedding():
    w = RNG.randint(-127, 128, (4, 3)).astype(np.int8)
    out, lo, hi = nd.contrib.quantized_embedding(nd.array([[1, 3], [0, 9]]),
                                                 nd.array(w, dtype="int8"), MN, MX,
                                                 input_dim=4, output_dim=3)
    assert out.dtype == np.int8 and out.shape == (2, 2, 3)
    assert (out.asnumpy() == w[[[1, 3], [0, 3]]]).all()       # 9 clips to the last row
    assert (lo.asnumpy()[0], hi.asnumpy()[0]) == (-2.0, 2.0)


# --- quantized_conv / elemwise / batch norm / rnn, quantize_asym, calibrate_entropy ---

def _int_conv(x, w, stride=1, pad=0):
    """Direct integer convolution (N, C, H, W) x (F, C, kh, kw), no groups."""
    x = np.pad(x.astype(np.int64), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    F, _, kh, kw = w.shape
    H = (x.shape[2] - kh) // stride + 1
    W = (x.shape[3] - kw) // stride + 1
    out = np.zeros((x.shape[0], F, H, W), np.int64)
    for i in range(H):
        for j in range(W):
            win = x[:, :, i * stride:i * stride + kh, j * stride:j * stride + kw]
            out[:, :, i, j] = np.einsum("nchw,fchw->nf", win, w.astype(np.int64))
    return out


@pytest.mark.parametrize("dtype, levels", [("int8", 127.0), ("uint8", 255.0)])
def test_quantized_conv_is_the_integer_convolution(dtype, levels):
    lo = -127 if dtype == "int8" else 0
    x = RNG.randint(lo, 128 if dtype == "int8" else 256, (2, 3, 7, 7)).astype(dtype)
    w = RNG.randint(-127, 128, (4, 3, 3, 3)).astype(np.int8)
    mnd = -1.5 if dtype == "int8" else 0.0
    out, omin, omax = nd.contrib.quantized_conv(
        nd.array(x, dtype=dtype), nd.array(w, dtype="int8"), nd.array([mnd]),
        nd.array([1.5]), nd.array([-0.4]), nd.array([0.4]), kernel=(3, 3), num_filter=4,
        stride=(2, 2), pad=(1, 1), no_bias=True)
    assert out.dtype == np.int32
    assert (out.asnumpy() == _int_conv(x, w, stride=2, pad=1)).all()
    step = (1.5 / levels) * (0.4 / 127)
    np.testing.assert_allclose(omax.asnumpy()[0], step * (2 ** 31 - 1), rtol=1e-6)
    np.testing.assert_allclose(omin.asnumpy()[0], -omax.asnumpy()[0])


def test_quantized_conv_bias_and_symbol():
    x = RNG.randint(-127, 128, (1, 2, 5, 5)).astype(np.int8)
    w = RNG.randint(-127, 128, (3, 2, 3, 3)).astype(np.int8)
    b = RNG.randint(-127, 128, (3,)).astype(np.int8)
    names = ["data", "weight", "bias", "min_data", "max_data", "min_weight", "max_weight",
             "min_bias", "max_bias"]
    vals = [nd.array(x, dtype="int8"), nd.array(w, dtype="int8"), nd.array(b, dtype="int8"),
            nd.array([-2.0]), nd.array([2.0]), nd.array([-0.5]), nd.array([0.5]),
            nd.array([-0.3]), nd.array([0.3])]
    sym = mx.sym.contrib.quantized_conv(*[mx.sym.var(n) for n in names], kernel=(3, 3),
                                        num_filter=3)
    assert sym.list_arguments() == names
    got = sym.bind(mx.cpu(), dict(zip(names, vals))).forward()
    imp = nd.contrib.quantized_conv(*vals, kernel=(3, 3), num_filter=3)
    assert (got[0].asnumpy() == imp[0].asnumpy()).all()
    # dequantized, the result is the float convolution with the float bias
    real = imp[0].asnumpy() * (imp[2].asnumpy()[0] / (2 ** 31 - 1))
    ref = _int_conv(x, w) * (2.0 / 127) * (0.5 / 127) + (b * 0.3 / 127).reshape(1, 3, 1, 1)
    # (within one int32 step per product and one step of the int8 bias: MXNet's bias
    # scale carries 127.5 / 127)
    assert np.abs(real - ref).max() < 2 * (2.0 / 127) * (0.5 / 127) + 0.3 / 127


def _q8(x):
    r = float(np.abs(x).max())
    return (nd.array(np.rint(x / r * 127), dtype="int8"), nd.array([-r]), nd.array([r]))


def test_quantized_elemwise_add_and_mul_follow_the_float_result():
    a = RNG.randn(3, 5).astype(np.float32)
    b = RNG.randn(3, 5).astype(np.float32)
    qa, amn, amx = _q8(a)
    qb, bmn, bmx = _q8(b)
    ra, rb = float(amx.asnumpy()[0]), float(bmx.asnumpy()[0])
    out, lo, hi = nd.contrib.quantized_elemwise_add(qa, qb, amn, amx, bmn, bmx)
    assert out.dtype == np.int32 and hi.asnumpy()[0] == pytest.approx(ra + rb)
    real = out.asnumpy() * ((ra + rb) / (2 ** 31 - 1))
    assert np.abs(real - (a + b)).max() < 2 * max(ra, rb) / 127
    out, lo, hi = nd.contrib.quantized_elemwise_add(qa, qb, amn, amx, bmn, bmx,
                                                    min_calib_range=-4.0,
                                                    max_calib_range=4.0)
    assert out.dtype == np.int8 and (lo.asnumpy()[0], hi.asnumpy()[0]) == (-4.0, 4.0)
    assert np.abs(out.asnumpy() * 4.0 / 127 - (a + b)).max() < 2 * 4.0 / 127
    out, lo, hi = nd.contrib.quantized_elemwise_mul(qa, qb, amn, amx, bmn, bmx)
    assert (out.asnumpy() == qa.asnumpy().astype(np.int32) * qb.asnumpy()).all()
    assert hi.asnumpy()[0] == pytest.approx(ra * rb / 127 ** 2 * (2 ** 31 - 1), rel=1e-6)
    f = nd.contrib.quantized_elemwise_mul(qa, qb, amn, amx, bmn, bmx,
                                          enable_float_output=True)
    assert f.dtype == np.float32
    assert np.abs(f.asnumpy() - a * b).max() < 3 * max(ra, rb) ** 2 / 127
    with pytest.raises(MXNetError, match="same shape"):
        nd.contrib.quantized_elemwise_add(qa, nd.array(np.zeros((2, 2)), dtype="int8"),
                                          amn, amx, bmn, bmx)


def test_quantized_batch_norm_positional_order_and_required_range():
    x = RNG.randn(2, 3, 4, 4).astype(np.float32)
    qx, mn, mx_ = _q8(x)
    g, b = RNG.uniform(0.5, 1.5, 3), RNG.randn(3)
    m, v = RNG.randn(3) * 0.1, RNG.uniform(0.5, 1.5, 3)
    args = [qx] + [nd.array(t) for t in (g, b, m, v)] + [mn, mx_]
    out, lo, hi = nd.contrib.quantized_batch_norm(*args, fix_gamma=False,
                                                  min_calib_range=-5.0, max_calib_range=5.0)
    real = qx.asnumpy() * (float(mx_.asnumpy()[0]) / 127.5)
    sh = (1, 3, 1, 1)
    ref = (real - m.reshape(sh)) / np.sqrt(v.reshape(sh) + 1e-3) * g.reshape(sh) + \
        b.reshape(sh)
    assert out.dtype == np.int8
    # outputs beyond the calibrated range saturate at int8's ends (about one draw of the
    # shared generator in seven reaches them: the check depended on test order before)
    want = np.clip(np.rint(ref * 127 / 5.0), -128, 127)
    assert np.abs(out.asnumpy() - want).max() <= 1
    sym = mx.sym.contrib.quantized_batch_norm(*[mx.sym.var(n) for n in "dgbmvlh"],
                                              min_calib_range=-1.0, max_calib_range=1.0)
    assert sym.list_arguments() == ["d", "g", "b", "l", "h"]
    assert sym.list_auxiliary_states() == ["m", "v"]
    with pytest.raises(MXNetError, match="min_calib_range"):
        nd.contrib.quantized_batch_norm(*args)[0].asnumpy()


def test_quantize_asym_round_trip():
    x = RNG.randn(4, 2, 3).astype(np.float32) * 3
    q, scale, shift = nd.contrib.quantize_asym(nd.array(x))
    s, b = scale.asnumpy()[0], shift.asnumpy()[0]
    assert q.dtype == np.uint8 and s == pytest.approx(255 / (x.max() - x.min()), rel=1e-6)
    assert q.asnumpy().min() == 0 and q.asnumpy().max() == 255
    assert np.abs((q.asnumpy() - b) / s - x).max() <= 0.5 / s + 1e-5
    q, _, _ = nd.contrib.quantize_asym(nd.array(x), min_calib_range=-1.0, max_calib_range=1.0)
    assert (q.asnumpy()[x >= 1] == 255).all() and (q.asnumpy()[x <= -1] == 0).all()


def test_quantized_rnn_is_the_float_lstm_within_quantization_error():
    T, N, I, H = 4, 3, 5, 6
    x = RNG.randn(T, N, I).astype(np.float32)
    par = nd.array(RNG.randn(4 * H * (I + H) + 8 * H).astype(np.float32) * 0.3)
    h0, c0 = nd.array(RNG.randn(1, N, H) * 0.1), nd.array(RNG.randn(1, N, H) * 0.1)
    q, s, b = nd.contrib.quantize_asym(nd.array(x))
    kw = dict(state_size=H, num_layers=1, mode="lstm", state_outputs=True)
    got = nd.contrib.quantized_rnn(q, par, h0, c0, s, b, **kw)
    ref = nd.RNN(nd.array(x), par, h0, c0, **kw)
    assert [o.shape for o in got] == [(T, N, H), (1, N, H), (1, N, H)]
    for g, r in zip(got, ref):
        assert np.abs(g.asnumpy() - r.asnumpy()).max() < 0.02
    with pytest.raises(MXNetError, match="lstm"):
        nd.contrib.quantized_rnn(q, par, h0, c0, s, b, state_size=H, num_layers=1,
                                 mode="gru")


def test_calibrate_entropy_hand_worked():
    # Normal data with a few far outliers: the threshold clips the outliers but keeps
    # the bulk (the KL of clipping the bulk grows fast).
    x = np.concatenate([RNG.randn(50000), [-9.0, 9.5, 10.0]])
    hist, edges = np.histogram(x, bins=2001, range=(-10, 10))
    th, div = nd.contrib.calibrate_entropy(nd.array(hist), nd.array(edges))
    assert 2.5 < th.asnumpy()[0] < 6.0
    assert div.asnumpy()[0] >= 0
    # a window equal to the whole histogram with one bin per quantized bin: KL 0
    h = np.array([1, 2, 3], np.float32)
    th, div = nd.contrib.calibrate_entropy(nd.array(h), nd.array([-1.5, -0.5, 0.5, 1.5]),
                                           num_quantized_bins=3)
    assert th.asnumpy()[0] == 1.5 and div.asnumpy()[0] == pytest.approx(0, abs=1e-6)
    with pytest.raises(MXNetError, match="hist_edges"):
        nd.contrib.calibrate_entropy(nd.array(h), nd.array([0.0, 1.0]))[0].asnumpy()
