"""gluon.contrib.rnn: LSTMPCell against a NumPy step, VariationalDropoutCell's masks."""
import numpy as np

import mxnet as mx
from mxnet import gluon
from mxnet.test_utils import assert_almost_equal


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def test_lstmp_cell_step_matches_numpy():
    cell = gluon.contrib.rnn.LSTMPCell(4, 3, input_size=5, prefix="p_")
    cell.initialize(mx.init.Uniform(0.5))
    x = np.random.uniform(-1, 1, (2, 5)).astype("float32")
    r0 = np.random.uniform(-1, 1, (2, 3)).astype("float32")
    c0 = np.random.uniform(-1, 1, (2, 4)).astype("float32")
    out, (r1, c1) = cell(mx.nd.array(x), [mx.nd.array(r0), mx.nd.array(c0)])
    p = {k[2:]: v.data().asnumpy() for k, v in cell.collect_params().items()}
    g = x @ p["i2h_weight"].T + p["i2h_bias"] + r0 @ p["h2h_weight"].T + p["h2h_bias"]
    i, f, c, o = np.split(g, 4, axis=1)
    c_want = _sigmoid(f) * c0 + _sigmoid(i) * np.tanh(c)
    r_want = (_sigmoid(o) * np.tanh(c_want)) @ p["h2r_weight"].T
    assert_almost_equal(c1, c_want, rtol=1e-4, atol=1e-5)
    assert_almost_equal(r1, r_want, rtol=1e-4, atol=1e-5)
    assert_almost_equal(out, r_want, rtol=1e-4, atol=1e-5)
    assert [s["shape"] for s in cell.state_info(2)] == [(2, 3), (2, 4)]


def test_variational_dropout_uses_one_output_mask_per_sequence():
    base = gluon.rnn.RNNCell(6, input_size=3)
    cell = gluon.contrib.rnn.VariationalDropoutCell(base, drop_outputs=0.5)
    cell.initialize(mx.init.One())
    x = mx.nd.ones((2, 4, 3))
    with mx.autograd.record():            # dropout is active in training mode
        out, _ = cell.unroll(4, x, layout="NTC", merge_outputs=True)
    dropped = out.asnumpy() == 0
    assert dropped.any() and not dropped.all()
    # the same units are zero at every time step
    assert (dropped == dropped[:, :1, :]).all()
    out2, _ = cell.unroll(4, x, layout="NTC", merge_outputs=True)   # inference: no mask
    assert (out2.asnumpy() != 0).all()
