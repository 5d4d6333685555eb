"""BatchNorm against a NumPy reference, numeric gradients and MXNet 1.9.1's golden
cases (including the moving statistics after a training step)."""
import numpy as np
import pytest

import mxnet as mx
from mxnet.base import MXNetError
from mxnet.operator.registry import get_op
from mxnet.test_utils import assert_almost_equal, check_numeric_gradient
from common import fixture_cases_for, run_fixture_case

nd = mx.nd
rs = np.random.RandomState(11)


@pytest.mark.parametrize("case", fixture_cases_for("BatchNorm"))
def test_fixture(case):
    run_fixture_case(case)


def stats_axes(x, axis):
    axis %= x.ndim
    return tuple(i for i in range(x.ndim) if i != axis), \
        tuple(x.shape[i] if i == axis else 1 for i in range(x.ndim))


def ref_bn(x, gamma, beta, mean, var, eps, axis):
    _, b = stats_axes(x, axis)
    return (x - mean.reshape(b)) / np.sqrt(var.reshape(b) + eps) * gamma.reshape(b) + \
        beta.reshape(b)


def make(shape, axis=1):
    c = shape[axis]
    return (rs.randn(*shape), rs.uniform(0.5, 1.5, c), rs.randn(c), rs.randn(c) * 0.1,
            rs.uniform(0.5, 1.5, c))


@pytest.mark.parametrize("shape,axis", [((4, 3, 2, 2), 1), ((5, 4), 1), ((2, 3, 4), -1),
                                        ((3, 4, 2), 2), ((6, 3, 5), 0)])
@pytest.mark.parametrize("fix_gamma", [False, True])
def test_train_forward_and_moving_stats(shape, axis, fix_gamma):
    x, g, b, mm, mv = make(shape, axis)
    mm_nd, mv_nd = nd.array(mm), nd.array(mv)
    with mx.autograd.train_mode():
        y = nd.BatchNorm(nd.array(x), nd.array(g), nd.array(b), mm_nd, mv_nd, axis=axis,
                         fix_gamma=fix_gamma, momentum=0.8, eps=1e-3)
    axes, _ = stats_axes(x, axis)
    bm, bv = x.mean(axis=axes), x.var(axis=axes)
    gam = np.ones_like(g) if fix_gamma else g
    assert_almost_equal(y.asnumpy(), ref_bn(x, gam, b, bm, bv, 1e-3, axis), rtol=1e-4,
                        atol=1e-5)
    assert_almost_equal(mm_nd.asnumpy(), 0.8 * mm + 0.2 * bm, rtol=1e-5, atol=1e-6)
    assert_almost_equal(mv_nd.asnumpy(), 0.8 * mv + 0.2 * bv, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("use_global_stats,train", [(False, False), (True, True),
                                                    (True, False)])
def test_moving_stats_forward(use_global_stats, train):
    x, g, b, mm, mv = make((4, 3, 2))
    mm_nd, mv_nd = nd.array(mm), nd.array(mv)
    mode = mx.autograd.train_mode() if train else mx.autograd.predict_mode()
    with mode:
        y = nd.BatchNorm(nd.array(x), nd.array(g), nd.array(b), mm_nd, mv_nd,
                         fix_gamma=False, use_global_stats=use_global_stats)
    assert_almost_equal(y.asnumpy(), ref_bn(x, g, b, mm, mv, 1e-3, 1), rtol=1e-4,
                        atol=1e-5)
    # the moving statistics are left alone
    assert_almost_equal(mm_nd.asnumpy(), mm.astype(np.float32))
    assert_almost_equal(mv_nd.asnumpy(), mv.astype(np.float32))


@pytest.mark.parametrize("shape,axis", [((4, 3, 2), 1), ((3, 2, 4), -1)])
def test_train_gradient(shape, axis):
    x, g, b, mm, mv = make(shape, axis)
    aux = [nd.array(mm, dtype=np.float64), nd.array(mv, dtype=np.float64)]
    check_numeric_gradient(
        lambda a, gg, bb: nd.BatchNorm(a, gg, bb, *aux, axis=axis, fix_gamma=False),
        [x, g, b], rtol=1e-2, atol=1e-4)


def test_global_stats_gradient():
    x, g, b, mm, mv = make((5, 4))
    aux = [nd.array(mm, dtype=np.float64), nd.array(mv, dtype=np.float64)]
    check_numeric_gradient(
        lambda a, gg, bb: nd.BatchNorm(a, gg, bb, *aux, fix_gamma=False,
                                       use_global_stats=True),
        [x, g, b], rtol=1e-2, atol=1e-4)


def test_fix_gamma_zero_gamma_grad():
    x, g, b, mm, mv = make((4, 3, 2))
    arrays = [nd.array(a) for a in (x, g, b)]
    for a in arrays:
        a.attach_grad()
    with mx.autograd.record():
        y = nd.BatchNorm(*arrays, nd.array(mm), nd.array(mv))
    y.backward(nd.array(rs.randn(*x.shape)))
    assert_almost_equal(arrays[1].grad.asnumpy(), np.zeros(3))
    assert np.abs(arrays[0].grad.asnumpy()).max() > 0
    # gamma is treated as 1: the output ignores its value
    y2 = nd.BatchNorm(nd.array(x), nd.array(g * 5), nd.array(b), nd.array(mm), nd.array(mv))
    y1 = nd.BatchNorm(nd.array(x), nd.array(g), nd.array(b), nd.array(mm), nd.array(mv))
    assert_almost_equal(y1.asnumpy(), y2.asnumpy())


def test_output_mean_var():
    x, g, b, mm, mv = make((4, 3, 2))
    with mx.autograd.train_mode():
        out = nd.BatchNorm(nd.array(x), nd.array(g), nd.array(b), nd.array(mm),
                           nd.array(mv), output_mean_var=True, eps=1e-3)
    assert len(out) == 3
    # as in MXNet 1.9.1 the second statistic is 1/sqrt(var + eps)
    assert_almost_equal(out[1].asnumpy(), x.mean(axis=(0, 2)), rtol=1e-5, atol=1e-6)
    assert_almost_equal(out[2].asnumpy(), 1 / np.sqrt(x.var(axis=(0, 2)) + 1e-3),
                        rtol=1e-5)
    single = nd.BatchNorm(nd.array(x), nd.array(g), nd.array(b), nd.array(mm),
                          nd.array(mv))
    assert isinstance(single, mx.nd.NDArray)


def test_float16_data_float32_params():
    x, g, b, mm, mv = make((4, 3, 2))
    y = nd.BatchNorm(nd.array(x, dtype="float16"), nd.array(g), nd.array(b), nd.array(mm),
                     nd.array(mv), fix_gamma=False)
    assert y.dtype == np.float16
    assert_almost_equal(y.asnumpy(), ref_bn(x, g, b, mm, mv, 1e-3, 1), rtol=1e-2, atol=1e-2)
    op = get_op("BatchNorm")
    ins, outs, aux = op.infer_type(op.parse({}), [np.dtype("float16"), None, None])
    assert ins == [np.dtype("float16"), np.dtype("float32"), np.dtype("float32")]
    assert outs[0] == np.dtype("float16") and aux == [np.dtype("float32")] * 2


def test_names_and_shape_inference():
    op = get_op("BatchNorm")
    p = op.parse({})
    assert op.arguments(p) == ["data", "gamma", "beta"]
    assert op.aux_states(p) == ["moving_mean", "moving_var"]
    assert op.outputs(p) == ["output", "mean", "var"]
    assert op.num_visible_outputs(p) == 1
    assert op.num_visible_outputs(op.parse({"output_mean_var": True})) == 3
    ins, outs, aux = op.infer_shape(p, [(2, 3, 4), None, None])
    assert ins == [(2, 3, 4), (3,), (3,)] and aux == [(3,), (3,)]
    assert outs == [(2, 3, 4), (3,), (3,)]
    ins, _, aux = op.infer_shape(op.parse({"axis": -1}), [(2, 3, 4), None, None])
    assert ins[1] == (4,) and aux == [(4,), (4,)]
    d = op.params.fields
    assert d["eps"].default == 1e-3 and d["momentum"].default == 0.9
    assert d["fix_gamma"].default is True and d["axis"].default == 1


def test_errors():
    op = get_op("BatchNorm")
    with pytest.raises(MXNetError):
        op.infer_shape(op.parse({}), [(5,), None, None])           # no channel axis 1
    with pytest.raises(MXNetError):
        op.infer_shape(op.parse({}), [(2, 3), (4,), None])
    with pytest.raises(MXNetError):
        nd.BatchNorm(nd.ones((2, 3)), nd.ones((4,)), nd.ones((3,)), nd.ones((3,)),
                     nd.ones((3,)))
    with pytest.raises(MXNetError):
        nd.BatchNorm(nd.ones((2, 3)), nd.ones((3,)), nd.ones((3,)), nd.ones((3,)),
                     nd.ones((3,)), momentum="fast")


@pytest.mark.parametrize("global_stats,fix_gamma", [(False, False), (False, True),
                                                    (True, False)])
@pytest.mark.parametrize("in_place", [False, True])
def test_forward_and_backward_write_into_given_arrays(global_stats, fix_gamma, in_place):
    # the operator contract: results computed straight into the destinations given
    # (the executor's planned buffers); dx may be planned over dy's own buffer
    from mxnet.operator.registry import OpContext
    op = get_op("BatchNorm")
    p = op.parse(dict(fix_gamma=fix_gamma, use_global_stats=global_stats, eps=1e-3))
    x, g, b, mm, mv = (a.astype(np.float32) for a in make((3, 4, 5)))
    ctx = OpContext(np, mx.cpu(), True, [True, True, True], [x.shape, g.shape, b.shape])
    plain = op.forward(ctx, p, [x, g, b], [mm.copy(), mv.copy()])
    out = [np.empty_like(x), np.empty_like(g), np.empty_like(g)]
    res = op.forward(ctx, p, [x, g, b], [mm.copy(), mv.copy()], out)
    assert all(r is o for r, o in zip(res, out))
    for r, q in zip(res, plain):
        np.testing.assert_allclose(r, q, rtol=1e-6, atol=1e-7)
    dy = rs.randn(*x.shape).astype(np.float32)
    want = op.backward(ctx, p, [dy], [x, g, b], plain, [mm, mv])
    given = [dy.copy() if in_place else np.empty_like(x), np.empty_like(g),
             np.empty_like(g)]
    got = op.backward(ctx, p, [given[0] if in_place else dy], [x, g, b], plain, [mm, mv],
                      given)
    assert all(r is d for r, d in zip(got, given))
    for r, q in zip(got, want):
        np.testing.assert_allclose(r, q, rtol=1e-5, atol=1e-6)


def ref_train_grads(x, gamma, dy, eps, fix_gamma):
    """float64 training-mode gradients from the textbook formulas (axis 1)."""
    axes = (0,) + tuple(range(2, x.ndim))
    b = (1, -1) + (1,) * (x.ndim - 2)
    m = x.size // x.shape[1]
    mu, var = x.mean(axis=axes), x.var(axis=axes)
    inv = 1 / np.sqrt(var + eps)
    xhat = (x - mu.reshape(b)) * inv.reshape(b)
    dbeta, dgamma = dy.sum(axis=axes), (dy * xhat).sum(axis=axes)
    gam = np.ones_like(gamma) if fix_gamma else gamma
    dx = (gam * inv).reshape(b) * (dy - (dbeta / m).reshape(b) -
                                   xhat * (dgamma / m).reshape(b))
    return dx, (np.zeros_like(gamma) if fix_gamma else dgamma), dbeta


@pytest.mark.parametrize("shape", [(8, 16, 12, 12), (1, 24, 30, 30), (16, 64, 3)])
@pytest.mark.parametrize("offset", [0.0, 300.0])
@pytest.mark.parametrize("fix_gamma", [False, True])
def test_numpy_body_large_arrays(shape, offset, fix_gamma):
    # the sizes whose per-channel sums go through BLAS (operator/nn/channel_sums.py),
    # the NumPy body itself (oneDNN's adapter takes these in an executor); a large
    # common offset checks the statistics and gradients stay centred
    from mxnet.operator.registry import OpContext
    op = get_op("BatchNorm")
    p = op.parse(dict(fix_gamma=fix_gamma, eps=1e-3, momentum=0.9))
    c = shape[1]
    x = (rs.randn(*shape) * rs.uniform(0.5, 2, c).reshape(1, c, *([1] * (len(shape) - 2)))
         + offset).astype(np.float32)
    g = rs.uniform(0.5, 1.5, c).astype(np.float32)
    b = rs.randn(c).astype(np.float32)
    mm, mv = np.zeros(c, np.float32), np.ones(c, np.float32)
    ctx = OpContext(np, mx.cpu(), True, [True, True, True], [x.shape, g.shape, b.shape])
    y, mean, invstd = op.forward(ctx, p, [x, g, b], [mm, mv])
    x64 = x.astype(np.float64)
    axes = (0,) + tuple(range(2, x.ndim))
    mu, var = x64.mean(axis=axes), x64.var(axis=axes)
    gam = np.ones(c) if fix_gamma else g.astype(np.float64)
    np.testing.assert_allclose(mean, mu, rtol=1e-6, atol=1e-6 * max(offset, 1))
    np.testing.assert_allclose(invstd, 1 / np.sqrt(var + 1e-3), rtol=1e-4)
    np.testing.assert_allclose(y, ref_bn(x64, gam, b, mu, var, 1e-3, 1), rtol=1e-4,
                               atol=2e-4)
    np.testing.assert_allclose(mm, 0.1 * mu, rtol=1e-5, atol=1e-6 * max(offset, 1))
    np.testing.assert_allclose(mv, 0.9 + 0.1 * var, rtol=1e-4)
    dy = rs.randn(*shape).astype(np.float32)
    want = ref_train_grads(x64, g.astype(np.float64), dy.astype(np.float64), 1e-3,
                           fix_gamma)
    got = op.backward(ctx, p, [dy], [x, g, b], [y, mean, invstd], [mm, mv])
    for r, q in zip(got, want):
        np.testing.assert_allclose(r, q, rtol=2e-3, atol=2e-4 * np.abs(q).max())
    # only some gradients asked for: the others are None, the asked ones unchanged
    for need in ([True, False, False], [False, True, False], [False, False, True]):
        part = op.backward(OpContext(np, mx.cpu(), True, need, [x.shape, g.shape, b.shape]),
                           p, [dy], [x, g, b], [y, mean, invstd], [mm, mv])
        for r, q, n in zip(part, got, need):
            if n:
                np.testing.assert_allclose(r, q, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("mode", ["predict", "train", "record"])
def test_fix_gamma_writes_ones_into_gamma_as_mxnet_does(mode):
    # MXNet 1.9.1's BatchNorm with fix_gamma=True sets the gamma array to 1 on every
    # forward, in every mode (asked of the real MXNet: gamma [3, 4] reads [1, 1] after)
    x = mx.nd.array([[1.0, 2.0], [3.0, 6.0]])
    g, b, m, v = mx.nd.array([3.0, 4.0]), mx.nd.zeros(2), mx.nd.zeros(2), mx.nd.ones(2)
    if mode == "predict":
        y = mx.nd.BatchNorm(x, g, b, m, v, fix_gamma=True)
    elif mode == "train":
        with mx.autograd.train_mode():
            y = mx.nd.BatchNorm(x, g, b, m, v, fix_gamma=True)
    else:
        g.attach_grad()
        with mx.autograd.record():
            y = mx.nd.BatchNorm(x, g, b, m, v, fix_gamma=True)
        y.backward()
        assert g.grad.asnumpy().tolist() == [0.0, 0.0]
    y.wait_to_read()
    assert g.asnumpy().tolist() == [1.0, 1.0]
    kept = mx.nd.array([3.0, 4.0])
    mx.nd.BatchNorm(x, kept, b, m, v, fix_gamma=False).wait_to_read()
    assert kept.asnumpy().tolist() == [3.0, 4.0]


def test_fix_gamma_resets_a_bound_graphs_gamma():
    # a Module's gamma that weight decay moved reads 1 again after the next forward
    # (so MXNet's checkpoints hold 1); also when BatchNorm is fused with the ReLU after it
    data = mx.sym.var("data")
    net = mx.sym.Activation(mx.sym.BatchNorm(data, name="bn"), act_type="relu")
    ex = net.simple_bind(mx.cpu(), data=(4, 3))
    ex.arg_dict["bn_gamma"][:] = 5
    ex.arg_dict["data"][:] = mx.nd.array(np.arange(12).reshape(4, 3))
    ex.forward(is_train=True)
    x = np.arange(12.0).reshape(4, 3)
    want = np.maximum((x - x.mean(0)) / np.sqrt(x.var(0) + 1e-3), 0)
    np.testing.assert_allclose(ex.outputs[0].asnumpy(), want, rtol=1e-4, atol=1e-5)
    assert ex.arg_dict["bn_gamma"].asnumpy().tolist() == [1.0, 1.0, 1.0]
