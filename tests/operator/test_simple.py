"""SimpleOp short forms (seed 002): a binary operator declared with just its function
and partial derivatives gets shape checks, broadcasting and gradients."""
import numpy as np
import pytest

import mxnet as mx
from mxnet.base import MXNetError
from mxnet.operator.simple import binary, broadcast_shape

binary("_test_simple_weighted_diff", lambda xp, a, b, p: 2 * a - b * b,
       grad_lhs=lambda xp, g, a, b, y, p: 2 * g,
       grad_rhs=lambda xp, g, a, b, y, p: -2 * b * g, broadcast=True)
binary("_test_simple_same_shape_mul", lambda xp, a, b, p: a * b,
       grad_lhs=lambda xp, g, a, b, y, p: g * b,
       grad_rhs=lambda xp, g, a, b, y, p: g * a)


def test_broadcasting_binary_forward_and_reduced_gradients():
    a = np.random.rand(3, 4).astype(np.float32)
    b = np.random.rand(1, 4).astype(np.float32)
    x, y = mx.nd.array(a), mx.nd.array(b)
    x.attach_grad()
    y.attach_grad()
    with mx.autograd.record():
        out = mx.nd._internal._test_simple_weighted_diff(x, y)
    out.backward()
    np.testing.assert_allclose(out.asnumpy(), 2 * a - b * b, rtol=1e-6)
    np.testing.assert_allclose(x.grad.asnumpy(), np.full((3, 4), 2.0))
    np.testing.assert_allclose(y.grad.asnumpy(), (-2 * b * 3), rtol=1e-6)   # summed rows


def test_same_shape_binary_checks_numeric_gradient_and_shapes():
    mx.test_utils.check_numeric_gradient(
        lambda a, b: mx.nd._internal._test_simple_same_shape_mul(a, b),
        [np.random.rand(2, 3), np.random.rand(2, 3)])
    with pytest.raises(MXNetError, match="same shape"):
        mx.nd._internal._test_simple_same_shape_mul(mx.nd.ones((2, 3)), mx.nd.ones((3,)))


def test_broadcast_shape_rule():
    assert broadcast_shape("op", (3, 1, 5), (4, 1)) == (3, 4, 5)
    with pytest.raises(MXNetError, match="could not be broadcast"):
        broadcast_shape("op", (3, 2), (4,))
