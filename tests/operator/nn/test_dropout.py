"""Dropout: identity in inference (MXNet 1.9.1's golden case), mask statistics in
training, backward through the same mask, axes, mode='always' and seeding."""
import numpy as np
import pytest

import mxnet as mx
from mxnet.base import MXNetError
from mxnet.operator.registry import get_op
from mxnet.test_utils import assert_almost_equal
from common import fixture_cases_for, run_fixture_case

nd = mx.nd
rs = np.random.RandomState(17)


@pytest.mark.parametrize("case", fixture_cases_for("Dropout"))
def test_fixture(case):
    run_fixture_case(case)


def forward_backward(x, head, train=True, **kw):
    a = nd.array(x)
    a.attach_grad()
    with mx.autograd.record(train_mode=train):
        y = nd.Dropout(a, **kw)
    y.backward(nd.array(head))
    return y.asnumpy(), a.grad.asnumpy()


@pytest.mark.parametrize("p", [0.2, 0.5, 0.8])
def test_training_mask_statistics_and_backward(p):
    x = rs.uniform(1.0, 2.0, (200, 100))
    head = rs.randn(200, 100)
    y, g = forward_backward(x, head, p=p)
    kept = y != 0
    # each element survives with probability 1 - p (20000 draws: 5 sigma < 0.02)
    assert abs(kept.mean() - (1 - p)) < 0.02
    assert_almost_equal(y[kept], x[kept] / (1 - p), rtol=1e-5)
    # backward multiplies by the same scaled mask the forward drew
    assert_almost_equal(g, head * (y / x), rtol=1e-5, atol=1e-6)


def test_p_zero_is_identity():
    x, head = rs.randn(4, 5), rs.randn(4, 5)
    y, g = forward_backward(x, head, p=0.0)
    assert_almost_equal(y, x.astype(np.float32))
    assert_almost_equal(g, head.astype(np.float32))


def test_p_one_is_nan_as_in_mxnet():
    # the scale 1/(1-p) is infinite: MXNet 1.9.1 gives NaN output and gradient
    y, g = forward_backward(rs.randn(3, 4), rs.randn(3, 4), p=1.0)
    assert np.all(np.isnan(y)) and np.all(np.isnan(g))


@pytest.mark.parametrize("mode", ["training", "always"])
def test_inference(mode):
    x, head = rs.randn(6, 7), rs.randn(6, 7)
    y, g = forward_backward(x, head, train=False, p=0.5, mode=mode)
    if mode == "training":
        assert_almost_equal(y, x.astype(np.float32))
        assert_almost_equal(g, head.astype(np.float32))
    else:       # 'always' drops in inference too
        kept = y != 0
        assert 0 < kept.mean() < 1
        assert_almost_equal(g, head * (y / x), rtol=1e-5, atol=1e-6)
    y = nd.Dropout(nd.array(x), p=0.5).asnumpy()      # not recording: inference
    assert_almost_equal(y, x.astype(np.float32))


def test_axes_share_mask():
    x = np.ones((8, 5, 6))
    y, g = forward_backward(x, np.ones_like(x), p=0.5, axes=(1,))
    # one draw per (sample, last-axis position), shared along axis 1
    assert np.all(y == y[:, :1, :])
    assert set(np.unique(y)) <= {0.0, 2.0}
    assert_almost_equal(g, y)


def test_seed_reproducible():
    x = nd.array(rs.randn(10, 10))
    with mx.autograd.train_mode():
        mx.random.seed(42)
        a = nd.Dropout(x).asnumpy()
        mx.random.seed(42)
        b = nd.Dropout(x).asnumpy()
        c = nd.Dropout(x).asnumpy()
    assert_almost_equal(a, b)
    assert not np.array_equal(b, c)


def test_dtype_and_names():
    with mx.autograd.train_mode():
        y = nd.Dropout(nd.array(rs.randn(3, 4), dtype="float16"))
    assert y.dtype == np.float16
    op = get_op("Dropout")
    p = op.parse({})
    assert op.outputs(p) == ["output", "mask"] and op.num_visible_outputs(p) == 1
    assert op.infer_shape(p, [(3, 4)]) == ([(3, 4)], [(3, 4), (3, 4)], [])
    assert op.params.fields["p"].default == 0.5
    assert op.params.fields["mode"].default == "training"


def test_errors():
    with pytest.raises(MXNetError):
        nd.Dropout(nd.ones((2, 3)), p=1.5)
    with pytest.raises(MXNetError):
        nd.Dropout(nd.ones((2, 3)), mode="sometimes")
    with pytest.raises(MXNetError):
        with mx.autograd.train_mode():
            nd.Dropout(nd.ones((2, 3)), axes=(4,))
