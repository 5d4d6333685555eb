"""mx.contrib.autograd, MXNet's first autograd interface, against hand-derived
gradients."""
import numpy as np

import mxnet as mx
from mxnet.contrib import autograd as cag


def test_sections_and_training_state():
    assert not mx.autograd.is_recording()
    with cag.train_section():
        assert mx.autograd.is_recording() and mx.autograd.is_training()
        with cag.test_section():
            assert not mx.autograd.is_recording()
    with cag.TrainingStateScope(True):
        assert mx.autograd.is_recording()
    assert not mx.autograd.is_recording()
    prev = cag.set_is_training(True)
    assert prev is False and mx.autograd.is_recording()
    assert cag.set_is_training(False) is True
    assert not mx.autograd.is_recording()


def test_mark_variables_and_compute_gradient():
    x = mx.nd.array([1.0, -2.0, 3.0])
    g = mx.nd.zeros(3)
    cag.mark_variables([x], [g])
    with cag.train_section():
        y = x * x * 2
    cag.compute_gradient([y])
    np.testing.assert_allclose(g.asnumpy(), 4 * x.asnumpy())


def test_grad_and_loss():
    def f(a, b):
        return (a * b).sum() + (a ** 2).sum()
    a, b = mx.nd.array([1.0, 2.0]), mx.nd.array([3.0, -1.0])
    grads, loss = cag.grad_and_loss(f)(a, b)
    np.testing.assert_allclose(grads[0].asnumpy(), b.asnumpy() + 2 * a.asnumpy())
    np.testing.assert_allclose(grads[1].asnumpy(), a.asnumpy())
    assert loss.asscalar() == (1 * 3 + 2 * -1) + (1 + 4)
    only = cag.grad(f, argnum=1)(a, b)
    np.testing.assert_allclose(only[0].asnumpy(), a.asnumpy())


def test_mx_autograd_mark_variables():
    x = mx.nd.array([0.5, 2.0])
    g = mx.nd.ones(2)
    mx.autograd.mark_variables([x], [g], grad_reqs="add")
    with mx.autograd.record():
        y = (x * 3).sum()
    y.backward()
    np.testing.assert_allclose(g.asnumpy(), [4.0, 4.0])     # 1 + 3: accumulated
