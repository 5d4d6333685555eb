"""gluon.contrib.rnn cells: one step against outputs written by MXNet 1.9.1 with the
same weights (tests/fixtures/mxnet-1.9.1/gluon_contrib_rnn_cells.npz, made by
mxnet.gluon.contrib.rnn with Uniform(0.5) weights), hybridized unrolls, gradients, and
VariationalDropoutCell's one-mask-per-sequence rule."""
import numpy as np
import pytest

import mxnet as mx
from mxnet.gluon.contrib import rnn
from common import fixture_path

CELLS = {
    "lstm2": lambda: rnn.Conv2DLSTMCell((3, 5, 5), 4, (3, 3), (3, 3), i2h_pad=(1, 1)),
    "gru1": lambda: rnn.Conv1DGRUCell((2, 7), 3, 3, 3),
    "rnn3": lambda: rnn.Conv3DRNNCell((1, 4, 4, 4), 2, 1, 3, activation="relu"),
    "lstmp": lambda: rnn.LSTMPCell(6, 3, input_size=5),
}


@pytest.fixture(scope="module")
def golden():
    return np.load(fixture_path("gluon_contrib_rnn_cells.npz"))


def _loaded(key, golden):
    cell = CELLS[key]()
    cell.initialize()
    for name, p in cell.collect_params().items():
        p.set_data(mx.nd.array(golden[f"{key}/param/{name[len(cell.prefix):]}"]))
    return cell


@pytest.mark.parametrize("key", sorted(CELLS))
@pytest.mark.parametrize("hybridize", [False, True])
def test_step_matches_mxnet(key, golden, hybridize):
    cell = _loaded(key, golden)
    if hybridize:
        cell.hybridize()
    n_states = len(cell.state_info())
    states = [mx.nd.array(golden[f"{key}/st{i}"]) for i in range(n_states)]
    out, new = cell(mx.nd.array(golden[f"{key}/x"]), states)
    np.testing.assert_allclose(out.asnumpy(), golden[f"{key}/o"], rtol=1e-5, atol=1e-6)
    for i, s in enumerate(new):
        np.testing.assert_allclose(s.asnumpy(), golden[f"{key}/s{i}"], rtol=1e-5, atol=1e-6)


def test_parameter_names():
    assert list(CELLS["lstm2"]().collect_params().keys())[0].endswith("i2h_weight")
    assert rnn.LSTMPCell(4, 2).prefix.startswith("lstmp")
    assert rnn.Conv1DGRUCell((2, 7), 3, 3, 3).prefix.startswith("conv_gru")


def test_unroll_hybridized_matches_imperative():
    cell = rnn.Conv2DGRUCell((2, 4, 4), 3, (3, 3), (3, 3), i2h_pad=(1, 1))
    cell.initialize(mx.init.Uniform(0.3))
    x = mx.nd.array(np.random.RandomState(1).uniform(-1, 1, (2, 3, 2, 4, 4)))
    eager, _ = cell.unroll(3, x, merge_outputs=True)
    cell.hybridize()
    hybrid, _ = cell.unroll(3, x, merge_outputs=True)
    assert eager.shape == (2, 3, 3, 4, 4)
    np.testing.assert_allclose(eager.asnumpy(), hybrid.asnumpy(), rtol=1e-5, atol=1e-6)


def test_conv_cell_gradient_flows():
    cell = rnn.Conv1DLSTMCell((2, 6), 2, 3, 3, i2h_pad=1)
    cell.initialize(mx.init.Uniform(0.3))
    x = mx.nd.ones((1, 2, 6))
    x.attach_grad()
    with mx.autograd.record():
        out, _ = cell(x, cell.begin_state(1))
    out.backward()
    assert np.abs(x.grad.asnumpy()).sum() > 0
    assert np.abs(cell.i2h_weight.grad().asnumpy()).sum() > 0


def test_bad_layout_and_kernel():
    with pytest.raises(NotImplementedError):
        rnn.Conv2DRNNCell((3, 5, 5), 2, 3, 3, conv_layout="NHWC")
    with pytest.raises(ValueError):
        rnn.Conv2DRNNCell((3, 5, 5), 2, 3, (2, 2))


def test_variational_dropout_one_mask_per_sequence():
    base = mx.gluon.rnn.RNNCell(50, activation="relu", i2h_weight_initializer="ones",
                                h2h_weight_initializer="zeros")
    cell = rnn.VariationalDropoutCell(base, drop_outputs=0.5)
    cell.initialize()
    x = mx.nd.ones((1, 4, 3))
    with mx.autograd.train_mode():
        outs, _ = cell.unroll(4, x, merge_outputs=True)
    o = outs.asnumpy()[0]
    kept = o[0] != 0
    assert 0 < kept.sum() < 50
    for t in range(1, 4):                      # the same units dropped at every step
        assert np.array_equal(o[t] != 0, kept)
    np.testing.assert_allclose(o[:, kept], 2 * 3.0)      # kept units scaled by 1/(1-p)
    with mx.autograd.predict_mode():
        outs, _ = cell.unroll(4, x, merge_outputs=True)
    np.testing.assert_allclose(outs.asnumpy(), 3.0)


@pytest.mark.parametrize("make", [
    lambda: rnn.Conv1DLSTMCell((10, 50), 8, 3, 3, prefix="rnn_"),
    lambda: rnn.Conv2DGRUCell((10, 20, 50), 8, 3, 3, prefix="rnn_"),
    lambda: rnn.Conv1DRNNCell((10, 50), 8, 3, 3, prefix="rnn_"),
    lambda: rnn.LSTMPCell(10, 4, prefix="rnn_"),
])
def test_symbolic_unroll_output_names(make):
    cell = make()
    inputs = [mx.sym.Variable(f"rnn_t{i}_data") for i in range(3)]
    outputs, _ = cell.unroll(3, inputs)
    assert mx.sym.Group(outputs).list_outputs() == [f"rnn_t{i}_out_output" for i in range(3)]


@pytest.mark.parametrize("layout", ["TNC", "NTC"])
def test_dynamic_unroll_matches_unroll(layout):
    from mxnet.gluon.contrib.rnn.rnn_cell import dynamic_unroll
    cell = mx.gluon.rnn.GRUCell(5, prefix="rnn_")
    cell.initialize()
    x = mx.nd.random.normal(shape=(4, 2, 3) if layout == "TNC" else (2, 4, 3))
    states = [mx.nd.random.normal(shape=(2, 5))]
    valid = mx.nd.array([2, 4])
    out, st = dynamic_unroll(cell, x, states, layout=layout, valid_length=valid)
    ref, ref_st = cell.unroll(4, x, states, layout=layout, merge_outputs=True,
                              valid_length=valid)
    np.testing.assert_allclose(out.asnumpy(), ref.asnumpy(), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(st[0].asnumpy(), ref_st[0].asnumpy(), rtol=1e-6, atol=1e-7)


def test_dynamic_unroll_symbol_needs_foreach():
    from mxnet.gluon.contrib.rnn.rnn_cell import dynamic_unroll
    if hasattr(mx.sym.contrib, "foreach"):
        pytest.skip("foreach present: the symbolic path is exercised by MXNet's own tests")
    cell = mx.gluon.rnn.RNNCell(3)
    with pytest.raises(NotImplementedError, match="foreach"):
        dynamic_unroll(cell, mx.sym.var("x"), [mx.sym.var("s")])


@pytest.mark.parametrize("kind", ["Conv3DLSTMCell", "Conv3DGRUCell"])
def test_conv3d_cells_with_unit_kernels_are_per_voxel_cells(kind):
    # 1x1x1 kernels make the conv cell the plain cell applied at every voxel
    cell = getattr(rnn, kind)((2, 3, 4, 4), 5, (1, 1, 1), (1, 1, 1))
    cell.initialize(mx.init.Uniform(0.5))
    x = mx.nd.array(np.random.RandomState(2).uniform(-1, 1, (2, 2, 3, 4, 4)))
    states = [mx.nd.array(np.random.RandomState(3).uniform(-1, 1, s.shape))
              for s in cell.begin_state(batch_size=2)]
    out, new = cell(x, states)
    assert out.shape == (2, 5, 3, 4, 4)
    p = {k.split("_", 1)[1] if "_" in k else k: v.data().asnumpy()
         for k, v in cell.collect_params().items()}
    wi = next(v for k, v in p.items() if k.endswith("i2h_weight"))[:, :, 0, 0, 0]
    wh = next(v for k, v in p.items() if k.endswith("h2h_weight"))[:, :, 0, 0, 0]
    bi = next(v for k, v in p.items() if k.endswith("i2h_bias"))
    bh = next(v for k, v in p.items() if k.endswith("h2h_bias"))
    xs = np.moveaxis(x.asnumpy(), 1, -1).reshape(-1, 2)
    h = np.moveaxis(states[0].asnumpy(), 1, -1).reshape(-1, 5)
    sig = lambda v: 1 / (1 + np.exp(-v))                      # noqa: E731
    gi, gh = xs @ wi.T + bi, h @ wh.T + bh
    if kind == "Conv3DLSTMCell":
        c = np.moveaxis(states[1].asnumpy(), 1, -1).reshape(-1, 5)
        i, f, g, o = np.split(gi + gh, 4, axis=1)
        c = sig(f) * c + sig(i) * np.tanh(g)
        want = sig(o) * np.tanh(c)
    else:
        ri, zi, ni = np.split(gi, 3, axis=1)
        rh, zh, nh = np.split(gh, 3, axis=1)
        r, z = sig(ri + rh), sig(zi + zh)
        n = np.tanh(ni + r * nh)
        want = (1 - z) * n + z * h
    got = np.moveaxis(out.asnumpy(), 1, -1).reshape(-1, 5)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
