"""SyncBatchNorm is BatchNorm on axis 1 in one process; BatchNormWithReLU is
relu(BatchNorm) with the ReLU mask on the gradient."""
import numpy as np
import pytest

import mxnet as mx
from mxnet.base import MXNetError
from mxnet.test_utils import assert_almost_equal, check_numeric_gradient

nd = mx.nd


def _inputs(seed=0):
    r = np.random.RandomState(seed)
    return (r.randn(4, 3, 5, 2).astype(np.float32), r.uniform(0.5, 1.5, 3).astype(np.float32),
            r.randn(3).astype(np.float32), (r.randn(3) * 0.1).astype(np.float32),
            r.uniform(0.5, 1.5, 3).astype(np.float32))


@pytest.mark.parametrize("train", [True, False])
def test_sync_batch_norm_equals_batch_norm(train):
    x, g, b, mm, mv = _inputs()
    outs = []
    for fn, extra in ((nd.contrib.SyncBatchNorm, {"key": "bn0", "ndev": 1}),
                      (nd.BatchNorm, {})):
        arrs = [nd.array(a) for a in (x, g, b, mm, mv)]
        arrs[0].attach_grad()
        with mx.autograd.record(train_mode=train):
            y = fn(*arrs, fix_gamma=False, momentum=0.8, **extra)
        y.backward(nd.array(np.arange(y.size, dtype=np.float32).reshape(y.shape) / 100))
        outs.append([y.asnumpy(), arrs[0].grad.asnumpy(), arrs[3].asnumpy(),
                     arrs[4].asnumpy()])
    for a, b in zip(*outs):
        assert_almost_equal(a, b)
    # The batch statistics are really used in training.
    if train:
        mean = x.mean(axis=(0, 2, 3))
        assert_almost_equal(outs[0][2], 0.8 * mm + 0.2 * mean, atol=1e-6)


def test_sync_batch_norm_parameters():
    s = mx.sym.contrib.SyncBatchNorm(mx.sym.var("data"), key="k")
    assert s.list_arguments() == ["data", s.name + "_gamma", s.name + "_beta"]
    assert s.list_auxiliary_states() == [s.name + "_moving_mean", s.name + "_moving_var"]
    with pytest.raises(MXNetError, match="key"):
        nd.contrib.SyncBatchNorm(*[nd.array(a) for a in _inputs()])
    with pytest.raises(MXNetError, match="ndev"):
        nd.contrib.SyncBatchNorm(*[nd.array(a) for a in _inputs()], key="k", ndev=0)


def test_batch_norm_with_relu():
    x, g, b, mm, mv = _inputs(1)
    arrs = [nd.array(a) for a in (x, g, b, mm, mv)]
    with mx.autograd.record(train_mode=False):
        y = nd.contrib.BatchNormWithReLU(*arrs, fix_gamma=False)
    ref = nd.BatchNorm(*[nd.array(a) for a in (x, g, b, mm, mv)], fix_gamma=False)
    assert_almost_equal(y.asnumpy(), np.maximum(ref.asnumpy(), 0))
    check_numeric_gradient(
        lambda d, ga, be: nd.contrib.BatchNormWithReLU(d, ga, be, nd.array(mm), nd.array(mv),
                                                       fix_gamma=False),
        [x.astype(np.float64), g.astype(np.float64), b.astype(np.float64)],
        numeric_eps=1e-4, rtol=2e-2, atol=1e-4)


def test_sync_batch_norm_outputs_the_variance():
    # with output_mean_var, SyncBatchNorm's third output is the variance (BatchNorm's
    # is 1/sqrt(var + eps)); the gradient is BatchNorm's all the same
    x, g, b, mm, mv = _inputs()
    res = []
    for fn, extra in ((nd.contrib.SyncBatchNorm, {"key": "bn1"}), (nd.BatchNorm, {})):
        arrs = [nd.array(a) for a in (x, g, b, mm, mv)]
        arrs[0].attach_grad()
        with mx.autograd.record():
            y, mean, var = fn(*arrs, fix_gamma=False, eps=1e-3, output_mean_var=True,
                              **extra)
        y.backward()
        res.append((mean.asnumpy(), var.asnumpy(), arrs[0].grad.asnumpy()))
    assert_almost_equal(res[0][0], x.mean(axis=(0, 2, 3)), atol=1e-6)
    assert_almost_equal(res[0][1], x.var(axis=(0, 2, 3)), rtol=1e-4, atol=1e-6)
    assert_almost_equal(res[1][1], 1 / np.sqrt(x.var(axis=(0, 2, 3)) + 1e-3), rtol=1e-4)
    assert_almost_equal(res[0][2], res[1][2], rtol=1e-4, atol=1e-5)
