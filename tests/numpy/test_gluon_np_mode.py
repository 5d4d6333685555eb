"""Gluon in NumPy mode: blocks, parameters, losses, Trainer and DataLoader deal in
mx.np arrays, imperative and hybridized, and train like nd mode does."""
import numpy as onp
import pytest

import mxnet as mx
from mxnet import autograd, gluon, init, np, npx
from mxnet.gluon import nn


@pytest.fixture
def np_mode():
    npx.set_np()
    yield
    npx.reset_np()


def _net():
    net = nn.HybridSequential()
    net.add(nn.Conv2D(4, 3, padding=1, activation="relu"), nn.MaxPool2D(2), nn.Flatten(),
            nn.Dense(10))
    return net


@pytest.mark.parametrize("hybridize", [False, True])
def test_training_step_in_np_mode_matches_nd_mode(np_mode, hybridize):
    X = onp.random.uniform(size=(8, 1, 8, 8)).astype(onp.float32)
    y = onp.arange(8) % 10
    results = []
    for mode in ("np", "nd"):
        if mode == "nd":
            npx.reset_np()
        mx.random.seed(1)
        net = _net()
        net.initialize(init.Xavier())
        if hybridize:
            net.hybridize()
        loss = gluon.loss.SoftmaxCrossEntropyLoss()
        trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.5})
        xs = np.array(X) if mode == "np" else mx.nd.array(X)
        ys = np.array(y) if mode == "np" else mx.nd.array(y)
        for _ in range(3):
            with autograd.record():
                out = net(xs)
                ls = loss(out, ys)
            ls.backward()
            trainer.step(8)
        if mode == "np":
            assert isinstance(out, np.ndarray) and isinstance(ls, np.ndarray)
            assert isinstance(net[0].weight.data(), np.ndarray)
            assert isinstance(net[0].weight.grad(), np.ndarray)
        results.append(net(xs).asnumpy())
        npx.set_np()
    onp.testing.assert_allclose(results[0], results[1], rtol=1e-5, atol=1e-6)


def test_dataloader_batches_are_np_arrays(np_mode):
    ds = gluon.data.ArrayDataset(onp.ones((10, 2), onp.float32), onp.arange(10))
    batches = list(gluon.data.DataLoader(ds, batch_size=4))
    assert len(batches) == 3
    for xb, yb in batches:
        assert isinstance(xb, np.ndarray) and isinstance(yb, np.ndarray)
    assert batches[-1][0].shape == (2, 2)


def test_nd_mode_unchanged_outside_np_mode():
    npx.reset_np()
    net = nn.Dense(3)
    net.initialize()
    out = net(mx.nd.ones((2, 4)))
    assert type(out) is mx.nd.NDArray


class _Pair(gluon.HybridBlock):
    def hybrid_forward(self, F, x):
        return F.np.add(x, x), F.np.multiply(x, x)


@pytest.mark.parametrize("hybridize", [False, True])
def test_use_np_block_class_returns_np_arrays_outside_np_mode(hybridize):
    # the decorator covers inherited methods (__call__, forward), as MXNet's does
    net = mx.util.use_np(type("NpPair", (_Pair,), {}))()
    if hybridize:
        net.hybridize()
    outs = net(np.ones((2, 3)))
    assert [type(o) for o in outs] == [np.ndarray, np.ndarray]
    onp.testing.assert_array_equal(outs[1].asnumpy(), onp.ones((2, 3)))
    assert not mx.util.is_np_array()


@pytest.mark.parametrize("hybridize", [False, True])
def test_mixed_np_and_classic_outputs_are_a_type_error(hybridize):
    @mx.util.use_np
    class Mixed(gluon.HybridBlock):
        def hybrid_forward(self, F, x):
            return x.as_nd_ndarray() + x.as_nd_ndarray(), F.np.multiply(x, x)
    net = Mixed()
    if hybridize:
        net.hybridize()
    with pytest.raises(TypeError):
        net(np.ones((2, 3)))


def test_deferred_weight_shape_through_ndarray_dot(np_mode):
    class Linear(gluon.HybridBlock):
        def __init__(self):
            super().__init__()
            with self.name_scope():
                self.w = self.params.get("w", shape=(0, 5), allow_deferred_init=True)

        def hybrid_forward(self, F, x, w):
            return F.npx.relu(x.dot(w))
    net = Linear()
    net.initialize(mx.init.One())
    net.hybridize()
    x = np.ones((2, 7))
    out = net(x)
    assert net.w.shape == (7, 5)
    onp.testing.assert_array_equal(out.asnumpy(), onp.full((2, 5), 7.0))
