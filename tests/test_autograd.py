"""autograd: recording scopes, backward/grad against analytic derivatives, grad_req,
retain_graph, custom Functions, and the error cases MXNet raises."""
import gc
import weakref

import numpy as np
import pytest

import mxnet as mx
from mxnet import autograd, nd
from mxnet.base import MXNetError
from mxnet.test_utils import assert_almost_equal


def test_scopes_set_and_restore_state():
    assert not autograd.is_recording() and not autograd.is_training()
    with autograd.record():
        assert autograd.is_recording() and autograd.is_training()
        with autograd.pause():
            assert not autograd.is_recording() and not autograd.is_training()
        with autograd.predict_mode():
            assert autograd.is_recording() and not autograd.is_training()
    with autograd.record(train_mode=False):
        assert autograd.is_recording() and not autograd.is_training()
    with autograd.train_mode():
        assert autograd.is_training() and not autograd.is_recording()
    assert autograd.set_recording(True) is False
    assert autograd.set_recording(False) is True
    assert autograd.set_training(True) is False
    assert autograd.set_training(False) is True


def test_backward_matches_analytic_gradient():
    a = np.array([[1.0, -2.0], [0.5, 3.0]], dtype=np.float32)
    x = nd.array(a)
    x.attach_grad()
    with autograd.record():
        y = nd.exp(x) * x + nd.relu(x)
    y.backward()
    assert_almost_equal(x.grad.asnumpy(), np.exp(a) * (1 + a) + (a > 0))


def test_head_gradient_and_multiple_heads():
    x = nd.array([1.0, 2.0, 3.0])
    x.attach_grad()
    with autograd.record():
        y1 = x * 2
        y2 = x * x
    autograd.backward([y1, y2], [nd.array([1, 1, 1]), nd.array([0.5, 0.5, 0.5])])
    assert_almost_equal(x.grad.asnumpy(), 2 + np.array([1, 2, 3.0]))


def test_grad_req_add_accumulates_and_null_skips():
    x = nd.array([1.0, 2.0])
    x.attach_grad(grad_req="add")
    for _ in range(3):
        with autograd.record():
            y = x * x
        y.backward()
    assert_almost_equal(x.grad.asnumpy(), 3 * 2 * np.array([1, 2.0]))
    z = nd.array([1.0, 2.0])
    z.attach_grad(grad_req="null")
    v = nd.array([1.0, 2.0])
    v.attach_grad()
    with autograd.record():
        w = z * 3 + v * 2
    w.backward()
    assert z.grad is None                   # MXNet 1.9.1: no gradient array for 'null'
    assert_almost_equal(v.grad.asnumpy(), [2, 2])
    # with no variable needing a gradient, backward is refused (MXNet 1.9.1: "There
    # are no inputs in computation graph that require gradients")
    with autograd.record():
        w = z * 3
    with pytest.raises(MXNetError, match="no inputs in computation graph"):
        w.backward()


def test_write_overwrites_previous_gradient():
    x = nd.array([1.0, 2.0])
    x.attach_grad()
    for _ in range(2):
        with autograd.record():
            y = x * 5
        y.backward()
    assert_almost_equal(x.grad.asnumpy(), [5, 5])


def test_errors_mxnet_raises():
    x = nd.array([1.0, 2.0])
    x.attach_grad()
    with autograd.record():
        y = x * x
    y.backward()
    with pytest.raises(MXNetError, match="retain_graph"):
        y.backward()                                   # graph already freed
    with pytest.raises(MXNetError, match="computational graph"):
        nd.array([1.0]).backward()                     # never recorded
    with autograd.record():
        y = x * x
    with pytest.raises(MXNetError, match="shape"):
        y.backward(nd.ones((3,)))


def test_retain_graph_allows_second_backward():
    x = nd.array([3.0])
    x.attach_grad(grad_req="add")
    with autograd.record():
        y = x * x * x
    y.backward(retain_graph=True)
    y.backward()
    assert_almost_equal(x.grad.asnumpy(), [2 * 27.0])


def test_autograd_grad_leaves_buffers_alone():
    x = nd.array([1.0, 2.0, 3.0])
    x.attach_grad()
    with autograd.record():
        y = nd.sum(x * x)
    g = autograd.grad(y, [x])[0]
    assert_almost_equal(g.asnumpy(), [2, 4, 6])
    assert_almost_equal(x.grad.asnumpy(), [0, 0, 0])
    with autograd.record():
        y = nd.sum(x * x)
    got = autograd.grad(y, x)           # one variable: still a list, as in MXNet
    assert isinstance(got, list) and len(got) == 1
    with pytest.raises(MXNetError, match="marked"):
        autograd.grad(y, [nd.ones((3,))])


def test_train_mode_reaches_operators():
    x = nd.ones((2000,))
    x.attach_grad()
    with autograd.record():                       # training: dropout drops ~half
        y = nd.Dropout(x, p=0.5)
    assert 0.3 < (y.asnumpy() == 0).mean() < 0.7
    with autograd.record(train_mode=False):       # predict: identity
        y = nd.Dropout(x, p=0.5)
    assert (y.asnumpy() == 1).all()


def test_custom_function():
    class Sigmoid(autograd.Function):
        def forward(self, x):
            y = 1 / (1 + nd.exp(-x))
            self.save_for_backward(y)
            return y

        def backward(self, dy):
            y, = self.saved_tensors
            return dy * y * (1 - y)
    a = np.array([-1.0, 0.0, 2.0], dtype=np.float32)
    x = nd.array(a)
    x.attach_grad()
    with autograd.record():
        z = Sigmoid()(x) * 2
    z.backward()
    s = 1 / (1 + np.exp(-a))
    assert_almost_equal(x.grad.asnumpy(), 2 * s * (1 - s))


def test_tape_keeps_only_declared_backward_dependencies():
    """FullyConnected's backward needs its input, not its output (seed 002): the
    output's memory is freed as soon as the caller drops it."""
    x = nd.ones((4, 8))
    w = nd.ones((3, 8))
    b = nd.zeros((3,))
    for a in (x, w, b):
        a.attach_grad()
    with autograd.record():
        h = nd.FullyConnected(x, w, b, num_hidden=3)
        node = h._ag[0]
        ref = weakref.ref(h._chunk)
        out = nd.sum(h)
    assert node.out_data is None and node.in_data is not None
    del h
    gc.collect()
    assert ref() is None            # h's buffer is gone, yet backward works
    out.backward()
    assert_almost_equal(w.grad.asnumpy(), np.full((3, 8), 4.0))


def test_non_differentiable_operator_raises():
    x = nd.array([1.0, 2.0])
    x.attach_grad()
    with autograd.record():
        y = nd.argmax(x.reshape((1, 2)), axis=1)
    y.backward()                    # argmax has a zero gradient, as in MXNet
    assert_almost_equal(x.grad.asnumpy(), [0, 0])


def test_gradient_written_into_the_buffer_without_aliasing_heads():
    """A 'write' gradient lands in the variable's own buffer (its memory is reused step
    after step) and is a copy: a pass-through gradient does not alias the head
    gradient, so changing the head afterwards leaves the gradient alone."""
    x = mx.nd.array([1.0, 2.0, 3.0])
    x.attach_grad()
    buf = x.grad._chunk.data
    head = mx.nd.array([4.0, 5.0, 6.0])
    with mx.autograd.record():
        y = mx.nd.identity(x)
    y.backward(head)
    assert x.grad._chunk.data is buf
    head[:] = 0
    np.testing.assert_array_equal(x.grad.asnumpy(), [4.0, 5.0, 6.0])
    with mx.autograd.record():
        y = x * 2
    y.backward()
    assert x.grad._chunk.data is buf
    np.testing.assert_array_equal(x.grad.asnumpy(), [2.0, 2.0, 2.0])


def _conv_then_fc(x, w, b, fw):
    """FullyConnected (no bias) over a 3x3 convolution of x."""
    y = nd.Convolution(x, w, b, kernel=(3, 3), pad=(1, 1), num_filter=w.shape[0])
    return nd.FullyConnected(y, fw, no_bias=True, num_hidden=fw.shape[0])


@pytest.mark.parametrize("req", ["write", "add"])
def test_operator_writes_straight_into_gradient_buffers(req):
    """backward() lets an operator write a variable's gradient into the buffer itself
    (no copy): the buffer keeps its memory, views of it see the new gradient, and the
    values equal autograd.grad's (fresh arrays) and, with grad_req 'add', accumulate."""
    rng = np.random.RandomState(0)
    x = nd.array(rng.standard_normal((2, 3, 5, 5)).astype(np.float32))
    w = nd.array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32))
    b = nd.array(rng.standard_normal((4,)).astype(np.float32))
    fw = nd.array(rng.standard_normal((6, 100)).astype(np.float32))
    for v in (x, w, b, fw):
        v.attach_grad(grad_req=req)
    bufs = [v.grad._chunk.data for v in (x, w, b, fw)]
    view = w.grad[1]
    with autograd.record():
        out = _conv_then_fc(x, w, b, fw)
    expect = [g.asnumpy() for g in autograd.grad(out, [x, w, b, fw], retain_graph=True)]
    for v in (x, w, b, fw):
        v.grad[:] = 1.0
    out.backward()
    base = 1.0 if req == "add" else 0.0
    for v, buf, e in zip((x, w, b, fw), bufs, expect):
        assert v.grad._chunk.data is buf
        assert_almost_equal(v.grad.asnumpy(), e + base, rtol=1e-5, atol=1e-5)
    assert_almost_equal(view.asnumpy(), expect[1][1] + base, rtol=1e-5, atol=1e-5)


def test_variable_used_twice_gets_the_sum_of_its_gradients():
    """A variable that feeds two operators (or one twice) has its gradients summed,
    not the last one written over the buffer."""
    rng = np.random.RandomState(1)
    x = nd.array(rng.standard_normal((3, 8)).astype(np.float32))
    w = nd.array(rng.standard_normal((5, 8)).astype(np.float32))
    x.attach_grad()
    w.attach_grad()
    with autograd.record():
        y = nd.FullyConnected(x, w, no_bias=True, num_hidden=5) + \
            nd.FullyConnected(x, w, no_bias=True, num_hidden=5) * 2
    y.backward()
    assert_almost_equal(w.grad.asnumpy(), 3 * np.ones((3, 5)).T @ x.asnumpy(), rtol=1e-5)
    assert_almost_equal(x.grad.asnumpy(), 3 * np.ones((3, 5)) @ w.asnumpy(), rtol=1e-5)
    with autograd.record():
        y = x * x
    y.backward()
    assert_almost_equal(x.grad.asnumpy(), 2 * x.asnumpy(), rtol=1e-6)


def test_gradient_buffer_passed_as_an_input_is_not_overwritten_early():
    """An operator that reads a gradient buffer as an input (here the weight's own
    gradient buffer used as data) gets its old values, not the gradient being written."""
    rng = np.random.RandomState(2)
    w = nd.array(rng.standard_normal((4, 4)).astype(np.float32))
    w.attach_grad()
    w.grad[:] = nd.array(rng.standard_normal((4, 4)).astype(np.float32))
    old = w.grad.asnumpy()
    with autograd.record():
        y = nd.FullyConnected(w.grad, w, no_bias=True, num_hidden=4)
    y.backward()
    assert_almost_equal(w.grad.asnumpy(), np.ones((4, 4)).T @ old, rtol=1e-5, atol=1e-6)


def test_freed_intermediate_is_a_constant_in_a_new_graph():
    # as MXNet: once a graph is differentiated without retain_graph its arrays carry
    # no history; a new graph built on them treats them as constants
    w = nd.array([2.0])
    w.attach_grad()
    with autograd.record():
        b = w * 3
        b.backward()
    assert w.grad.asnumpy().tolist() == [3.0]
    with autograd.record():
        c = (b + 1) * w
    c.backward()
    assert w.grad.asnumpy().tolist() == [7.0]     # d/dw of (b + 1) * w with b fixed
    with pytest.raises(MXNetError, match="already differentiated"):
        c.backward()


# --- the one-walk backward (gradient counts and order from one pass) ----------
def _counted_uses(order, heads):
    """The gradient counts by the plain definition: one per recorded consumer."""
    uses = {}
    for node in order:
        if node.__class__ is not autograd.VarNode:
            for par in node.parents:
                if par is not None:
                    uses[par[0]] = uses.get(par[0], 0) + 1
    for h in heads:
        uses[h._ag[0]] = uses.get(h._ag[0], 0) + 1
    return uses


def test_topo_walk_counts_uses_as_the_plain_count():
    x = nd.array([[1.0, 2.0], [3.0, 4.0]])
    w = nd.array([[0.5, -1.0], [2.0, 1.0]])
    x.attach_grad()
    w.attach_grad()
    with autograd.record():
        h = nd.dot(x, w)
        y = h * x + nd.relu(h) + w      # x, w and h each feed several nodes
    heads = [y]
    uses = {}
    order = autograd._topo_order([y._ag], uses)
    for hd in heads:
        uses[hd._ag[0]] = uses.get(hd._ag[0], 0) + 1
    assert uses == _counted_uses(order, heads)
    assert order == autograd._topo_order([y._ag])      # the same order either way
    # each node after every node that consumes it
    pos = {id(n): i for i, n in enumerate(order)}
    for n in order:
        if n.__class__ is autograd.Node:
            for par in n.parents:
                if par is not None:
                    assert pos[id(par[0])] > pos[id(n)]


def test_shared_variable_gradients_sum_and_direct_writes_stay_exact():
    xv = np.array([[1.0, -2.0, 3.0]], dtype=np.float32)
    wv = np.array([[0.5, 1.0, -1.0], [2.0, 0.0, 1.0]], dtype=np.float32)
    x, w = nd.array(xv), nd.array(wv)
    w.attach_grad()
    with autograd.record():
        a = nd.FullyConnected(x, w, no_bias=True, num_hidden=2)
        b = nd.FullyConnected(x, w, no_bias=True, num_hidden=2)   # w used twice
        loss = (a * b).sum()
    loss.backward()
    av = xv @ wv.T
    expect = 2 * (av.T @ xv)
    np.testing.assert_allclose(w.grad.asnumpy(), expect, rtol=1e-6)
    # a single use: the gradient is written straight into the buffer
    with autograd.record():
        loss = nd.FullyConnected(x, w, no_bias=True, num_hidden=2).sum()
    loss.backward()
    np.testing.assert_allclose(w.grad.asnumpy(), np.ones((2, 1)) @ xv, rtol=1e-6)


def test_grad_req_add_and_retain_graph_through_the_walk():
    x = nd.array([1.0, 2.0, 3.0])
    x.attach_grad(grad_req="add")
    with autograd.record():
        y = (x * x).sum()
    y.backward(retain_graph=True)
    y.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), 4 * np.array([1.0, 2.0, 3.0]))
