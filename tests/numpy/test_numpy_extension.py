"""mx.npx: mode switches and the NN operators of NumPy mode, checked against NumPy
references."""
import numpy as onp
import pytest

import mxnet as mx
from mxnet import np, npx
from mxnet.base import MXNetError


def test_mode_switches():
    npx.reset_np()
    assert not npx.is_np_array()
    npx.set_np()
    assert npx.is_np_array() and npx.is_np_shape()
    npx.reset_np()
    assert not npx.is_np_array()


def test_nn_operators_against_numpy():
    x = onp.random.uniform(-1, 1, (2, 5)).astype(onp.float32)
    a = np.array(x)
    onp.testing.assert_allclose(npx.relu(a).asnumpy(), onp.maximum(x, 0))
    e = onp.exp(x - x.max(axis=-1, keepdims=True))
    onp.testing.assert_allclose(npx.softmax(a).asnumpy(), e / e.sum(-1, keepdims=True),
                                rtol=1e-5)
    onp.testing.assert_allclose(npx.sigmoid(a).asnumpy(), 1 / (1 + onp.exp(-x)), rtol=1e-5)
    w = onp.random.uniform(-1, 1, (3, 5)).astype(onp.float32)
    fc = npx.fully_connected(a, np.array(w), num_hidden=3, no_bias=True)
    onp.testing.assert_allclose(fc.asnumpy(), x @ w.T, rtol=1e-5)
    assert isinstance(fc, np.ndarray)
    oh = npx.one_hot(np.array([0, 2]), 3)
    onp.testing.assert_array_equal(oh.asnumpy(), onp.eye(3)[[0, 2]])


def test_npx_reshape_special_codes():
    # the NumPy extension's codes, not the legacy Reshape's (MXNet 1.9.1 refuses these
    # two: 0 is a size there and -3 only drops a size-1 axis)
    assert npx.reshape(np.ones((2, 3, 4)), (-2, -1)).shape == (2, 12)
    assert npx.reshape(np.ones((2, 3, 4)), (-5, -2)).shape == (6, 4)
    for codes in [(0, -1), (-3, 0)]:
        with pytest.raises(MXNetError):
            npx.reshape(np.ones((2, 3, 4)), codes)


def test_missing_npx_names_say_so():
    with pytest.raises(NotImplementedError, match="mx.npx.not_there"):
        npx.not_there
