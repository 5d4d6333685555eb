"""SVMOutput: identity forward, hinge-loss gradient (L1 and squared) independent of the
head gradient; checked against the loss's derivative computed by finite differences."""
import numpy as np
import pytest

import mxnet as mx


def svm_loss(x, label, margin, reg, linear):
    """sum over samples/classes of the one-vs-all hinge terms, times reg."""
    k = x.shape[1]
    y = np.where(np.arange(k)[None] == label[:, None], 1.0, -1.0)
    h = np.maximum(0.0, margin - y * x)
    return reg * (h.sum() if linear else (h ** 2).sum())


@pytest.mark.parametrize("linear", [False, True])
def test_svm_gradient_is_hinge_derivative(linear):
    rs = np.random.RandomState(13)
    x = rs.uniform(-2, 2, (4, 3))
    label = np.array([0, 2, 1, 1.0])
    xa = mx.nd.array(x, dtype="float64")
    xa.attach_grad()
    with mx.autograd.record():
        out = mx.nd.SVMOutput(xa, mx.nd.array(label, dtype="float64"), margin=1.0,
                              regularization_coefficient=0.5, use_linear=linear)
    out.backward(mx.nd.ones_like(out) * 7)      # the head gradient is ignored
    np.testing.assert_array_equal(out.asnumpy(), x)
    eps = 1e-6
    num = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        d = np.zeros_like(x)
        d[i] = eps
        num[i] = (svm_loss(x + d, label, 1.0, 0.5, linear) -
                  svm_loss(x - d, label, 1.0, 0.5, linear)) / (2 * eps)
    np.testing.assert_allclose(xa.grad.asnumpy(), num, rtol=1e-5, atol=1e-6)


def test_svm_symbol_has_label_argument():
    s = mx.sym.SVMOutput(mx.sym.var("data"), name="svm")
    assert s.list_arguments() == ["data", "svm_label"]
