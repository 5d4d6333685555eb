"""mx.contrib.amp at run time: amp.init wrapping the nd/sym front ends, dynamic loss
scaling (init_trainer / scale_loss / unscale) and a float16 Gluon net trained
against its float32 twin."""
import numpy as np
import pytest

import mxnet as mx
from mxnet import autograd, gluon
from mxnet.base import MXNetError
from mxnet.contrib import amp
from mxnet.contrib.amp import amp as amp_impl
from mxnet.contrib.amp.loss_scaler import LossScaler


def _net(seed):
    mx.random.seed(seed)
    net = gluon.nn.HybridSequential()
    net.add(gluon.nn.Conv2D(4, 3), gluon.nn.BatchNorm(), gluon.nn.Activation("relu"),
            gluon.nn.Dense(5))
    net.initialize(mx.init.Xavier())
    return net


def test_init_trainer_needs_init_and_trainer():
    amp_impl._reset()
    net = _net(0)
    tr = gluon.Trainer(net.collect_params(), "sgd")
    with pytest.raises(MXNetError, match="amp.init"):
        amp.init_trainer(tr)
    amp.init()
    try:
        with pytest.raises(TypeError, match="Trainer"):
            amp.init_trainer(mx.optimizer.SGD())
        with pytest.raises(MXNetError, match="init_trainer"):
            with amp.scale_loss(mx.nd.ones((1,)), tr):
                pass
    finally:
        amp_impl._reset()


def test_imperative_casts(amp_on):
    x = mx.nd.ones((2, 4))
    w = mx.nd.ones((3, 4))
    y = mx.nd.FullyConnected(x, w, no_bias=True, num_hidden=3)
    assert y.dtype == np.float16                      # an fp16 op
    assert mx.nd.exp(y).dtype == np.float32           # an fp32 op
    assert mx.nd.relu(y).dtype == np.float16          # either
    assert mx.nd.Activation(y, act_type="softrelu").dtype == np.float32   # conditional
    assert mx.nd.Activation(y, act_type="relu").dtype == np.float16
    assert mx.nd.elemwise_add(y, mx.nd.exp(y)).dtype == np.float32       # widest
    np.testing.assert_allclose(mx.nd.exp(y).asnumpy(), np.exp(4.0), rtol=1e-3)


def test_symbolic_casts(amp_on):
    a, b = mx.sym.var("a"), mx.sym.var("b")
    fc = mx.sym.FullyConnected(a, num_hidden=2, name="fc")
    out = mx.sym.elemwise_add(fc, b)
    ops = [n.op.name for n in out._topo() if n.op is not None]
    assert ops.count("amp_cast") == 3 and "amp_multicast" in ops
    _, types, _ = out.infer_type(a="float32", b="float32", fc_weight="float32",
                                 fc_bias="float32")
    assert types == [np.float32]


def test_loss_scaler_skips_and_adjusts():
    net = gluon.nn.Dense(2, in_units=2)
    net.initialize()
    params = list(net.collect_params().values())
    x = mx.nd.ones((1, 2))
    with autograd.record():
        net(x).sum().backward()
    s = LossScaler()
    assert s.loss_scale == 2.0 ** 16
    assert s.has_overflow(params) is False
    params[0].grad()[0, 0] = np.inf
    assert s.has_overflow(params) is True and s.loss_scale == 2.0 ** 15
    params[0].grad()[0, 0] = np.nan
    assert s.has_overflow(params) is True and s.loss_scale == 2.0 ** 14
    params[0].grad()[0, 0] = 1.0
    s._scale_seq_len = 3
    for _ in range(2):
        assert s.has_overflow(params) is False and s.loss_scale == 2.0 ** 14
    assert s.has_overflow(params) is False and s.loss_scale == 2.0 ** 15
    s._loss_scale = s._next_loss_scale = s._max_loss_scale
    for _ in range(3):
        s.has_overflow(params)
    assert s.loss_scale == s._max_loss_scale


def test_trainer_skips_update_on_overflow(amp_on):
    net = gluon.nn.Dense(2, in_units=2)
    net.initialize()
    tr = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 1.0})
    amp.init_trainer(tr)
    before = net.weight.data().asnumpy().copy()
    x = mx.nd.array([[1e4, 1e4]])
    with autograd.record():
        loss = net(x).sum()
        with amp.scale_loss(loss, tr) as scaled:
            assert scaled.asscalar() == pytest.approx(loss.asscalar() * 2 ** 16, rel=1e-2)
            scaled.backward()                 # float16 gradient overflows
    tr.step(1)
    np.testing.assert_array_equal(net.weight.data().asnumpy(), before)
    assert tr._amp_loss_scaler.loss_scale == 2.0 ** 15


def test_unscale_divides_out_the_scale(amp_on):
    net = gluon.nn.Dense(1, in_units=2, use_bias=False)
    net.initialize(mx.init.One())
    tr = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
    amp.init_trainer(tr)
    tr._amp_loss_scaler._loss_scale = 8.0
    x = mx.nd.array([[1.0, 2.0]])
    with autograd.record():
        with amp.scale_loss(net(x).sum(), tr) as scaled:
            scaled.backward()
    np.testing.assert_allclose(net.weight.grad().asnumpy(), [[8.0, 16.0]])
    amp.unscale(tr)
    np.testing.assert_allclose(net.weight.grad().asnumpy(), [[1.0, 2.0]])
    tr.step(1)
    np.testing.assert_allclose(net.weight.data().asnumpy(), [[0.9, 0.8]], rtol=1e-3)


def _train(use_amp, hybridize, steps=4):
    rng = np.random.default_rng(3)
    x = mx.nd.array(rng.normal(size=(8, 3, 8, 8)))
    y = mx.nd.array(rng.integers(0, 5, size=8))
    net = _net(7)
    if hybridize:
        net.hybridize()
    tr = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.05})
    if use_amp:
        amp.init_trainer(tr)
        tr._amp_loss_scaler._loss_scale = tr._amp_loss_scaler._next_loss_scale = 64.0
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    losses = []
    for _ in range(steps):
        with autograd.record():
            loss = loss_fn(net(x), y)
            if use_amp:
                with amp.scale_loss(loss, tr) as scaled:
                    autograd.backward(scaled)
            else:
                loss.backward()
        tr.step(8)
        losses.append(float(loss.mean().asscalar()))
    weights = {k.split("_", 1)[1]: p.data().asnumpy() for k, p in net.collect_params().items()}
    return losses, weights


# float16 keeps 11 significant bits, bfloat16 8: four SGD steps stay this close
_TRAIN_TOL = {"float16": (2e-2, 5e-3), "bfloat16": (5e-2, 2e-2)}


@pytest.mark.parametrize("target", ["float16", "bfloat16"])
@pytest.mark.parametrize("hybridize", [False, True])
def test_amp_training_matches_float32(target, hybridize):
    amp_impl._reset()
    ref_losses, ref_w = _train(False, hybridize)
    amp.init(target_dtype=target)
    try:
        losses, w = _train(True, hybridize)
    finally:
        amp_impl._reset()
    loss_tol, w_tol = _TRAIN_TOL[target]
    assert ref_losses[-1] < ref_losses[0]            # the float32 run learns
    np.testing.assert_allclose(losses, ref_losses, rtol=loss_tol, atol=loss_tol)
    for k in ref_w:
        assert w[k].dtype == np.float32               # master weights stay float32
        np.testing.assert_allclose(w[k], ref_w[k], rtol=2e-2, atol=w_tol, err_msg=k)


def test_bfloat16_imperative_casts():
    """Under amp.init('bfloat16') convolution runs in bfloat16, BatchNorm keeps float32
    parameters on bfloat16 data, relu follows its input and softmax runs in float32."""
    amp_impl._reset()
    amp.init(target_dtype="bfloat16")
    try:
        x = mx.nd.random.uniform(shape=(2, 3, 6, 6))
        w = mx.nd.random.uniform(shape=(4, 3, 3, 3))
        y = mx.nd.Convolution(x, w, kernel=(3, 3), num_filter=4, no_bias=True)
        assert y.dtype == mx.base.bfloat16 and w.dtype == np.float32
        g, b = mx.nd.ones(4), mx.nd.zeros(4)
        mm, mv = mx.nd.zeros(4), mx.nd.ones(4)
        z = mx.nd.BatchNorm(y, g, b, mm, mv)
        assert z.dtype == mx.base.bfloat16
        assert mx.nd.relu(z).dtype == mx.base.bfloat16
        assert mx.nd.softmax(z).dtype == np.float32
    finally:
        amp_impl._reset()


def test_loss_scaler_checks_every_gradient_past_one_chunk_and_every_type():
    """More gradients than one multi_all_finite call takes (chunks of 200), gradients of
    two contexts, bfloat16 and float16 ones: a single non-finite value anywhere is an
    overflow (NumPy's isfinite over the same arrays is the reference)."""
    from mxnet.base import bfloat16
    params = []
    for i in range(230):
        dtype = (np.float32, np.float16, bfloat16)[i % 3]
        p = gluon.Parameter(f"w{i}", shape=(3,), dtype=dtype)
        p.initialize(ctx=mx.cpu(i % 2))
        params.append(p)
    s = LossScaler()
    assert s.has_overflow(params) is False
    for where in (0, 199, 200, 229):
        grads = params[where].list_grad()
        grads[0][1] = np.inf
        assert not all(np.isfinite(g.astype("float32").asnumpy()).all()
                       for p in params for g in p.list_grad())
        assert s.has_overflow(params) is True
        grads[0][1] = 0.0
    assert s.has_overflow(params) is False
