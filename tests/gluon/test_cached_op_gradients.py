"""A hybridized block's backward writes its parameters' gradients straight into their
gradient buffers (gluon/_cached_op._GraphOp with autograd's _direct_grads), as MXNet's
CachedOp does: no copy per parameter and step, no second gradient-sized buffer in the
executor. The gradients equal the imperative block's, for grad_req 'write' and 'add',
a switch between them, and a parameter two blocks share; with CUDA graphs (the CPU
stand-in backend) a graph writes only into the buffers it was captured with."""
import numpy as np
import pytest

import mxnet as mx
from mxnet import autograd, gluon
from mxnet.executor import cuda_graph
from mxnet.gluon import nn

from executor.test_cuda_graph import FakeBackend


def _net(seed=0, ctx=None):
    mx.random.seed(seed)
    net = nn.HybridSequential()
    net.add(nn.Dense(8, activation="relu", in_units=5), nn.BatchNorm(in_channels=8),
            nn.Dense(3, in_units=8))
    net.initialize(mx.init.Xavier(), ctx=ctx)
    return net


def _params(net):
    return [p for p in net.collect_params().values() if p.grad_req != "null"]


def _step(net, k, ctx=None):
    x = mx.nd.array(np.random.RandomState(k).randn(4, 5), ctx=ctx)
    with autograd.record():
        y = (net(x) ** 2).sum()
    y.backward()


def _assert_same_grads(net, ref, ctx=None, tol=1e-5):
    for p, q in zip(_params(net), _params(ref)):
        np.testing.assert_allclose(p.grad(ctx).asnumpy(), q.grad(ctx).asnumpy(),
                                   rtol=tol, atol=tol / 10)


def _entries(net):
    return [e for pool in net._cached_op._pools.values() for e in pool]


@pytest.mark.parametrize("static", [False, True])
def test_gradients_land_in_the_parameter_buffers(static):
    net, ref = _net(), _net()
    net.hybridize(static_alloc=static, static_shape=static)
    buffers = [p.grad()._chunk.data for p in _params(net)]
    for k in range(3):
        _step(net, k)
        _step(ref, k)
        for p, buf in zip(_params(net), buffers):
            assert p.grad()._chunk.data is buf          # written there, not replaced
        _assert_same_grads(net, ref)
    # the executor holds no gradient buffers of its own for them: its gradient arrays
    # are the parameters'
    (entry,) = _entries(net)
    assert {id(g._chunk.data) for g in entry.grads if g is not None} == \
        {id(b) for b in buffers}


def test_no_gradient_copy_per_step(monkeypatch):
    net = _net()
    net.hybridize(static_alloc=True, static_shape=True)
    copies = []
    write_grad = autograd._write_grad

    def counting(buf, g):
        if g is not buf._chunk.data:
            copies.append(buf.shape)
        return write_grad(buf, g)
    monkeypatch.setattr(autograd, "_write_grad", counting)
    for k in range(3):
        _step(net, k)
    assert copies == []


def test_add_requests_accumulate_and_a_switch_from_write_keeps_them_apart():
    net, ref = _net(), _net()
    net.hybridize(static_alloc=True, static_shape=True)
    for k in range(2):                       # 'write' steps: buffers written directly
        _step(net, k)
        _step(ref, k)
    for n in (net, ref):
        for p in _params(n):
            p.grad_req = "add"
        n.collect_params().zero_grad()
    for k in range(2, 5):
        _step(net, k)
        _step(ref, k)
    _assert_same_grads(net, ref)
    # and back to 'write'
    for n in (net, ref):
        for p in _params(n):
            p.grad_req = "write"
    _step(net, 7)
    _step(ref, 7)
    _assert_same_grads(net, ref)


def test_a_parameter_two_blocks_share_gets_the_sum():
    def pair(seed):
        mx.random.seed(seed)
        a = nn.Dense(4, in_units=5)
        a.initialize(mx.init.Xavier())
        b = nn.Dense(4, in_units=5, params=a.collect_params())
        return a, b
    a, b = pair(0)
    ra, rb = pair(0)
    a.hybridize(static_alloc=True, static_shape=True)
    b.hybridize(static_alloc=True, static_shape=True)
    x = mx.nd.array(np.random.RandomState(0).randn(3, 5))
    for blocks in ((a, b), (ra, rb)):
        with autograd.record():
            y = (blocks[0](x) * blocks[1](x * 2)).sum()
        y.backward()
    np.testing.assert_allclose(a.weight.grad().asnumpy(), ra.weight.grad().asnumpy(),
                               rtol=1e-5, atol=1e-6)


def test_with_graphs_a_new_gradient_buffer_gets_its_own_graph(monkeypatch):
    backend = FakeBackend()
    monkeypatch.setenv("MXNET_ENABLE_CUDA_GRAPHS", "1")
    monkeypatch.setattr(cuda_graph, "_test_backend", backend)
    net, ref = _net(), _net()
    net.hybridize(static_alloc=True, static_shape=True)
    for k in range(5):
        _step(net, k)
        _step(ref, k)
    assert backend.launched > 0
    captured = len(backend.captures)
    # new gradient buffers (grad_req off and on again): a replay of the old graph
    # would write into the old ones
    for p in _params(net):
        p.grad_req = "null"
        p.grad_req = "write"
    for k in range(5, 9):
        _step(net, k)
        _step(ref, k)
        _assert_same_grads(net, ref)
    assert len(backend.captures) > captured


@pytest.mark.skipif(mx.context.num_gpus() == 0, reason="no GPU")
@pytest.mark.parametrize("graphs", ["0", "1"])
def test_on_gpu_gradients_land_in_the_parameter_buffers(monkeypatch, graphs):
    """The same on a GPU, with and without CUDA graphs (captured after the warm-up:
    the replays write into the parameters' buffers)."""
    monkeypatch.setenv("MXNET_ENABLE_CUDA_GRAPHS", graphs)
    gpu = mx.gpu(0)
    net, ref = _net(ctx=gpu), _net(ctx=gpu)
    net.hybridize(static_alloc=True, static_shape=True)
    buffers = [p.grad(gpu)._chunk.data for p in _params(net)]
    for k in range(6):
        _step(net, k, gpu)
        _step(ref, k, gpu)
        for p, buf in zip(_params(net), buffers):
            assert p.grad(gpu)._chunk.data is buf
        _assert_same_grads(net, ref, gpu, tol=1e-4)
    (entry,) = _entries(net)
    if graphs == "1":
        assert entry.graph is not None and entry.graph.replays > 0
