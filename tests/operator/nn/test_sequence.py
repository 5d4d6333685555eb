"""SequenceMask, SequenceLast and SequenceReverse against NumPy references written
with plain loops over the batch, numeric gradients and MXNet 1.9.1's behaviour."""
import numpy as np
import pytest

import mxnet as mx
from mxnet.base import MXNetError
from mxnet.test_utils import assert_almost_equal, check_numeric_gradient

nd = mx.nd
RS = np.random.RandomState(0)
X = RS.uniform(-1, 1, (4, 3, 2))


def ref_mask(x, lens, value, axis):
    out = x.copy()
    for b, n in enumerate(lens):
        if axis == 0:
            out[int(n):, b] = value
        else:
            out[b, int(n):] = value
    return out


def ref_last(x, lens, axis):
    return np.stack([x[int(n) - 1, b] if axis == 0 else x[b, int(n) - 1]
                     for b, n in enumerate(lens)])


def ref_reverse(x, lens):
    out = x.copy()
    for b, n in enumerate(lens):
        out[:int(n), b] = x[:int(n), b][::-1]
    return out


@pytest.mark.parametrize("axis,lens", [(0, [1, 0, 5]), (0, [1.7, 2.2, 4]), (1, [1, 4, 0])])
def test_sequence_mask(axis, lens):
    x = X if axis == 0 else X.transpose(1, 0, 2).copy()
    seq = nd.array(lens)
    out = nd.SequenceMask(nd.array(x), seq, use_sequence_length=True, value=-1.5, axis=axis)
    assert_almost_equal(out.asnumpy(), ref_mask(x, lens, -1.5, axis))
    check_numeric_gradient(lambda d: nd.SequenceMask(d, seq, use_sequence_length=True,
                                                     axis=axis), [x], numeric_eps=1e-4)


def test_sequence_mask_without_lengths_is_identity():
    assert_almost_equal(nd.SequenceMask(nd.array(X)).asnumpy(), X)
    # MXNet: float lengths truncate (1.7 keeps one step, 0.5 none)
    out = nd.SequenceMask(nd.arange(24).reshape((4, 3, 2)), nd.array([1.7, 2.2, 0.5]),
                          use_sequence_length=True).asnumpy().ravel()
    assert out.tolist() == [0, 1, 2, 3, 0, 0, 0, 0, 8, 9] + [0] * 14


@pytest.mark.parametrize("axis,lens", [(0, [1, 4, 2]), (0, [1.7, 2.2, 3.9]), (1, [1, 4, 3])])
def test_sequence_last(axis, lens):
    x = X if axis == 0 else X.transpose(1, 0, 2).copy()
    seq = nd.array(lens)
    out = nd.SequenceLast(nd.array(x), seq, use_sequence_length=True, axis=axis)
    assert out.shape == (x.shape[1 - axis], 2)
    assert_almost_equal(out.asnumpy(), ref_last(x, lens, axis))
    check_numeric_gradient(lambda d: nd.SequenceLast(d, seq, use_sequence_length=True,
                                                     axis=axis), [x], numeric_eps=1e-4)


def test_sequence_last_defaults():
    assert_almost_equal(nd.SequenceLast(nd.array(X)).asnumpy(), X[-1])
    assert_almost_equal(nd.SequenceLast(nd.array(X), axis=1).asnumpy(), X[:, -1])
    x2 = np.arange(6.0).reshape(3, 2)
    out = nd.SequenceLast(nd.array(x2), nd.array([1, 2]), use_sequence_length=True)
    assert out.asnumpy().tolist() == [0.0, 3.0]


@pytest.mark.parametrize("lens", [[1, 0, 4], [2.5, 3, 1]])
def test_sequence_reverse(lens):
    seq = nd.array(lens)
    out = nd.SequenceReverse(nd.array(X), seq, use_sequence_length=True)
    assert_almost_equal(out.asnumpy(), ref_reverse(X, lens))
    check_numeric_gradient(lambda d: nd.SequenceReverse(d, seq, use_sequence_length=True),
                           [X], numeric_eps=1e-4)
    assert_almost_equal(nd.SequenceReverse(nd.array(X)).asnumpy(), X[::-1])


def test_sequence_length_gradient_is_zero():
    x, seq = nd.array(X), nd.array([1, 2, 3])
    x.attach_grad()
    seq.attach_grad()
    with mx.autograd.record():
        y = nd.SequenceLast(x, seq, use_sequence_length=True)
    y.backward(nd.ones(y.shape))
    expect = np.zeros_like(X)
    for b, n in enumerate([1, 2, 3]):
        expect[n - 1, b] = 1
    assert_almost_equal(x.grad.asnumpy(), expect)
    assert (seq.grad.asnumpy() == 0).all()


def test_dtypes():
    for op in (nd.SequenceMask, nd.SequenceLast, nd.SequenceReverse):
        out = op(nd.array(X, dtype="float64"), nd.array([1, 2, 3], dtype="int32"),
                 use_sequence_length=True)
        assert out.dtype == np.float64


def test_bad_input():
    with pytest.raises(MXNetError, match="rank 2"):
        nd.SequenceMask(nd.arange(3), nd.array([1]), use_sequence_length=True)
        mx.nd.waitall()   # computing errors surface at the sync point
    with pytest.raises(MXNetError, match="rank 2"):
        nd.SequenceLast(nd.arange(3))
        mx.nd.waitall()   # computing errors surface at the sync point
    with pytest.raises(MXNetError, match="axis"):
        nd.SequenceMask(nd.array(X), axis=2)
        mx.nd.waitall()   # computing errors surface at the sync point
    with pytest.raises(MXNetError, match="axis"):
        nd.SequenceReverse(nd.array(X), axis=1)
        mx.nd.waitall()   # computing errors surface at the sync point
    with pytest.raises(MXNetError, match="sequence_length"):
        nd.SequenceMask(nd.array(X), nd.array([1, 2]), use_sequence_length=True)
        mx.nd.waitall()   # computing errors surface at the sync point
    with pytest.raises(MXNetError, match="sequence_length"):
        nd.SequenceLast(nd.array(X), nd.array([0, 1, 2]), use_sequence_length=True)
        mx.nd.waitall()   # computing errors surface at the sync point
    with pytest.raises(MXNetError, match="sequence_length"):
        nd.SequenceReverse(nd.array(X), nd.array([5, 1, 2]), use_sequence_length=True)
        mx.nd.waitall()   # computing errors surface at the sync point
    with pytest.raises(MXNetError):
        nd.SequenceMask(nd.array(X), nd.array([1, 2, 3]))  # an input it does not take
        mx.nd.waitall()   # computing errors surface at the sync point
