"""mx.nd.contrib.foreach / while_loop / cond against plain Python loops, including
gradients through the steps (autograd records them)."""
import numpy as np
import pytest

import mxnet as mx
from mxnet.test_utils import assert_almost_equal

nd = mx.nd


def test_foreach_cumulative_sum_and_gradient():
    x = np.random.RandomState(0).randn(4, 3).astype(np.float32)
    data = nd.array(x)
    data.attach_grad()
    with mx.autograd.record():
        outs, state = nd.contrib.foreach(lambda d, s: (d * s[0], [s[0] + d]), data,
                                         [nd.ones(3)])
        loss = outs.sum()
    loss.backward()
    s, ref = np.ones(3, np.float32), []
    for row in x:
        ref.append(row * s)
        s = s + row
    assert_almost_equal(outs.asnumpy(), np.stack(ref))
    assert isinstance(state, list) and len(state) == 1
    assert_almost_equal(state[0].asnumpy(), s)
    # d/dx_i of sum_i x_i * (1 + sum_{j<i} x_j) = (1 + sum_{j<i} x_j) + sum_{k>i} x_k
    csum = np.concatenate([np.zeros((1, 3)), np.cumsum(x, 0)[:-1]])
    after = x[::-1].cumsum(0)[::-1] - x
    assert_almost_equal(data.grad.asnumpy(), 1 + csum + after, atol=1e-5)


def test_foreach_structures():
    a, b = nd.arange(6).reshape((3, 2)), nd.ones((3, 2))
    outs, st = nd.contrib.foreach(lambda d, s: ([d[0], d[1] * 2], s), [a, b], nd.zeros(1))
    assert isinstance(outs, list) and len(outs) == 2 and isinstance(st, nd.NDArray)
    assert_almost_equal(outs[1].asnumpy(), 2 * np.ones((3, 2)))


def test_while_loop_outputs_padded_and_final_vars():
    out, (i, s) = nd.contrib.while_loop(
        lambda i, s: i < 3, lambda i, s: ([i + s, i * 2], [i + 1, s + i]),
        [nd.array([0]), nd.array([1])], max_iterations=5)
    assert out[0].shape == (5, 1)
    assert out[0].asnumpy().ravel().tolist() == [1, 2, 4, 0, 0]
    assert out[1].asnumpy().ravel().tolist() == [0, 2, 4, 0, 0]
    assert float(i.asscalar()) == 3 and float(s.asscalar()) == 4
    out, i = nd.contrib.while_loop(lambda i: i < 10, lambda i: ([], i + 1), nd.array([0]),
                                   max_iterations=4)
    assert out == [] and float(i.asscalar()) == 4
    with pytest.raises(ValueError, match="max_iterations"):
        nd.contrib.while_loop(lambda i: i < 3, lambda i: ([], i + 1), nd.array([0]))


def test_while_loop_gradient():
    x = nd.array([1.5])
    x.attach_grad()
    with mx.autograd.record():
        _, (i, y) = nd.contrib.while_loop(lambda i, y: i < 3, lambda i, y: ([], [i + 1, y * x]),
                                          [nd.array([0]), nd.array([1])], max_iterations=10)
    y.backward()
    assert_almost_equal(y.asnumpy(), [1.5 ** 3])
    assert_almost_equal(x.grad.asnumpy(), [3 * 1.5 ** 2])


def test_cond():
    a = nd.array([2.0])
    assert float(nd.contrib.cond(a > 1, lambda: a * 3, lambda: a - 1).asscalar()) == 6
    assert float(nd.contrib.cond(a > 5, lambda: a * 3, lambda: a - 1).asscalar()) == 1


def test_nested_structures_keep_their_layout():
    # (MXNet 1.9.1's layouts: a tuple of loop vars comes back as a list, a single
    # array as itself; nested state lists stay nested)
    d, s = nd.ones((3, 2)), nd.ones((2,))
    outs, st = nd.contrib.foreach(lambda x, st: ([x], st), d, [s, [s + 1]])
    assert isinstance(outs, list) and isinstance(st[1], list)
    assert_almost_equal(st[1][0].asnumpy(), 2 * np.ones(2))
    outs, st = nd.contrib.foreach(lambda x, st: ((x[0], x[1] * 2), st), [d, d + 1], s)
    assert isinstance(outs, list) and isinstance(st, nd.NDArray)
    assert_almost_equal(outs[1].asnumpy(), 4 * np.ones((3, 2)))
    out, vars_ = nd.contrib.while_loop(lambda a, b: a.sum() < 5,
                                       lambda a, b: (a * 1, [a + 1, [b[0] * 2]]),
                                       [s, [s]], max_iterations=4)
    assert isinstance(out, nd.NDArray) and out.shape == (4, 2)
    assert_almost_equal(out.asnumpy()[:, 0], [1, 2, 0, 0])
    assert_almost_equal(vars_[1][0].asnumpy(), [4, 4])
    out, v = nd.contrib.while_loop(lambda a: a.sum() < 5, lambda a: (None, a + 1), (s,),
                                   max_iterations=4)
    assert out == [] and isinstance(v, list)


def test_bad_arguments_say_what_is_wrong():
    with pytest.raises(TypeError, match="NDArray"):
        nd.contrib.foreach(lambda x, st: (x, st), [nd.ones((2, 2)), 3], nd.ones(1))
    with pytest.raises(mx.base.MXNetError, match="same length"):
        nd.contrib.foreach(lambda x, st: (x[0], st), [nd.ones((2, 2)), nd.ones((3, 2))],
                           nd.ones(1))
    with pytest.raises(mx.base.MXNetError, match="scalar"):
        nd.contrib.cond(nd.ones((2,)), lambda: 1, lambda: 2)
    with pytest.raises(mx.base.MXNetError, match="loop variables"):
        nd.contrib.while_loop(lambda a: a.sum() < 5, lambda a: (None, [a, a]), [nd.ones(1)],
                              max_iterations=2)
