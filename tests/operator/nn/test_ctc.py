"""CTCLoss against a brute-force sum over every alignment (tiny inputs), numeric
gradients, and MXNet 1.9.1's numbers."""
import itertools

import numpy as np
import pytest

import mxnet as mx
from mxnet.base import MXNetError
from mxnet.test_utils import assert_almost_equal, check_numeric_gradient

nd = mx.nd


def softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def collapse(path, blank):
    out, prev = [], None
    for k in path:
        if k != prev and k != blank:
            out.append(k)
        prev = k
    return out


def brute_force_ctc(data, labels, blank, data_lengths=None):
    """-log of the summed probability of every alignment that collapses to the label."""
    T, N, C = data.shape
    prob = softmax(data.astype(np.float64))
    losses = []
    for n in range(N):
        Tn = T if data_lengths is None else data_lengths[n]
        total = 0.0
        for path in itertools.product(range(C), repeat=Tn):
            if collapse(path, blank) == list(labels[n]):
                total += np.prod([prob[t, n, k] for t, k in enumerate(path)])
        losses.append(-np.log(total) if total > 0 else 0.0)
    return np.array(losses)


RS = np.random.RandomState(0)
DATA = RS.randn(4, 3, 4).astype(np.float32)


def ctc(data, label, **kw):
    return nd.CTCLoss(nd.array(data), nd.array(label), **kw).asnumpy()


def test_blank_first_padded_with_zero():
    label = [[1, 2, 0], [3, 3, 0], [1, 0, 0]]
    ref = brute_force_ctc(DATA, [[1, 2], [3, 3], [1]], blank=0)
    assert_almost_equal(ctc(DATA, label), ref, rtol=1e-5, atol=1e-5)
    # MXNet 1.9.1 gives these numbers for the same input
    assert_almost_equal(ref, [3.9904215, 3.2031727, 5.1413875], rtol=1e-5)


def test_blank_last_padded_with_minus_one():
    label = [[1, 2, -1], [2, 2, -1], [0, -1, -1]]
    ref = brute_force_ctc(DATA, [[1, 2], [2, 2], [0]], blank=3)
    assert_almost_equal(ctc(DATA, label, blank_label="last"), ref, rtol=1e-5, atol=1e-5)
    # with blank last, 0 is a real label and only -1 pads
    ref = brute_force_ctc(DATA, [[1, 2, 0], [2, 2, 0], [1, 0, 0]], blank=3)
    assert_almost_equal(ctc(DATA, [[1, 2, 0], [2, 2, 0], [1, 0, 0]], blank_label="last"),
                        ref, rtol=1e-5, atol=1e-5)
    assert_almost_equal(ref, [4.284597, 9.590612, 8.330896], rtol=1e-5)


def test_data_and_label_lengths():
    label = np.array([[1, 2, 0], [3, 3, 1], [1, 1, 2]])
    out = nd.CTCLoss(nd.array(DATA), nd.array(label), nd.array([3, 4, 2]), nd.array([2, 3, 0]),
                     use_data_lengths=True, use_label_lengths=True).asnumpy()
    ref = brute_force_ctc(DATA, [[1, 2], [3, 3, 1], []], blank=0, data_lengths=[3, 4, 2])
    assert_almost_equal(out, ref, rtol=1e-5, atol=1e-5)
    assert_almost_equal(out, [3.6508014, 8.492132, 6.2952027], rtol=1e-5)


def test_infeasible_label_gives_zero_loss_and_gradient():
    data = nd.array(DATA)
    data.attach_grad()
    with mx.autograd.record():
        # [3, 3, 1] needs 4 frames (a blank between the repeats); example 1 has 2
        loss = nd.CTCLoss(data, nd.array([[1, 2, 0], [3, 3, 1], [1, 0, 0]]),
                          nd.array([4, 2, 3]), use_data_lengths=True)
    loss.backward()
    assert loss.asnumpy()[1] == 0
    assert (data.grad.asnumpy()[:, 1] == 0).all()
    assert np.isfinite(data.grad.asnumpy()).all()


def test_gradient_beyond_data_length_is_zero_and_matches_mxnet():
    data = nd.array(DATA)
    data.attach_grad()
    with mx.autograd.record():
        loss = nd.CTCLoss(data, nd.array([[1, 2, 0], [3, 1, 0], [1, 0, 0]]),
                          nd.array([4, 3, 1]), use_data_lengths=True)
    loss.backward(nd.array([1.0, 2.0, 3.0]))
    g = data.grad.asnumpy()
    assert (g[3, 1] == 0).all() and (g[1:, 2] == 0).all()
    # row t=0 of example 0 as MXNet 1.9.1 computes it
    assert_almost_equal(g[0, 0], [-0.0463, -0.5758, 0.1372, 0.4849], atol=1e-4, rtol=0)


@pytest.mark.parametrize("kw,label,extra", [
    ({}, [[1, 2, 0], [2, 2, 1], [1, 0, 0]], []),
    ({"blank_label": "last"}, [[1, 2, -1], [0, 0, 1], [2, -1, -1]], []),
    ({"use_data_lengths": True, "use_label_lengths": True}, [[1, 2, 0], [2, 2, 1], [3, 1, 2]],
     [[4, 3, 2], [2, 1, 1]]),
])
def test_gradient_numeric(kw, label, extra):
    lab = nd.array(label)
    extra = [nd.array(e) for e in extra]
    check_numeric_gradient(lambda d: nd.CTCLoss(d, lab, *extra, **kw), [DATA],
                           numeric_eps=1e-5, rtol=1e-4, atol=1e-6)


def test_backward_after_predict_mode_forward():
    label = nd.array([[1, 2, 0], [3, 3, 0], [1, 0, 0]])
    grads = []
    for train in (True, False):
        data = nd.array(DATA)
        data.attach_grad()
        with mx.autograd.record(train_mode=train):
            loss = nd.CTCLoss(data, label)
        loss.backward()
        grads.append(data.grad.asnumpy())
    assert_almost_equal(grads[1], grads[0], rtol=1e-6, atol=1e-7)


def test_aliases_and_dtypes():
    label = nd.array([[1, 2, 0], [3, 3, 0], [1, 0, 0]])
    ref = nd.CTCLoss(nd.array(DATA), label).asnumpy()
    for fn in (nd.ctc_loss, nd.contrib.CTCLoss, nd.contrib.ctc_loss):
        assert_almost_equal(fn(nd.array(DATA), label).asnumpy(), ref)
    out = nd.CTCLoss(nd.array(DATA, dtype="float64"), label)
    assert out.dtype == np.float64 and out.shape == (3,)
    assert_almost_equal(out.asnumpy(), ref, rtol=1e-5)
    out = nd.CTCLoss(nd.array(DATA), nd.array([[1, 2, 0], [3, 3, 0], [1, 0, 0]], dtype="int32"))
    assert_almost_equal(out.asnumpy(), ref)


def test_bad_input():
    data = nd.array(DATA)
    with pytest.raises(MXNetError, match="3-D"):
        nd.CTCLoss(data[0], nd.array([[1, 2], [1, 0], [1, 1]]))
        mx.nd.waitall()   # computing errors surface at the sync point
    with pytest.raises(MXNetError, match="2-D"):
        nd.CTCLoss(data, nd.array([1, 2, 1]))
        mx.nd.waitall()   # computing errors surface at the sync point
    with pytest.raises(MXNetError, match="batch"):
        nd.CTCLoss(data, nd.array([[1, 2], [1, 0]]))
        mx.nd.waitall()   # computing errors surface at the sync point
    with pytest.raises(MXNetError, match="exceeds"):
        nd.CTCLoss(data, nd.ones((3, 5)))
        mx.nd.waitall()   # computing errors surface at the sync point
    with pytest.raises(MXNetError, match="label values"):
        nd.CTCLoss(data, nd.array([[1, 4], [1, 0], [1, 1]]))
        mx.nd.waitall()   # computing errors surface at the sync point
    with pytest.raises(MXNetError, match="data_lengths"):
        nd.CTCLoss(data, nd.array([[1, 2], [1, 0], [1, 1]]), nd.array([5, 1, 1]),
                   use_data_lengths=True)
        mx.nd.waitall()   # computing errors surface at the sync point
    with pytest.raises(MXNetError, match="label_lengths"):
        nd.CTCLoss(data, nd.array([[1, 2], [1, 0], [1, 1]]), label_lengths=nd.array([3, 1, 1]),
                   use_label_lengths=True)
        mx.nd.waitall()   # computing errors surface at the sync point


def test_frames_past_length_may_hold_nan():
    # MXNet ignores the data past each sequence's length, NaN included
    rs = np.random.RandomState(3)
    data = rs.randn(6, 2, 4).astype(np.float32)
    full = data.copy()
    data[4:] = np.nan
    label = nd.array([[1, 2], [3, 0]])
    lens = nd.array([4, 4])
    results = []
    for d in (data, full):
        x = nd.array(d)
        x.attach_grad()
        with mx.autograd.record():
            loss = nd.CTCLoss(x, label, lens, use_data_lengths=True)
        loss.backward()
        results.append((loss.asnumpy(), x.grad.asnumpy()))
    assert_almost_equal(results[0][0], results[1][0])
    assert not np.isnan(results[0][1]).any()
    assert_almost_equal(results[0][1], results[1][1])
    assert (results[0][1][4:] == 0).all()


def test_label_may_name_the_blank_class():
    # a label equal to the blank's class is an ordinary label state in MXNet: with
    # uniform activations only the label's length and repeats matter
    data = nd.ones((20, 2, 4))
    a = nd.CTCLoss(data, nd.array([[2, 1, 0], [3, 2, 2]]), nd.array([2, 3]),
                   use_label_lengths=True, blank_label="last")
    b = nd.CTCLoss(data, nd.array([[2, 1, 0], [1, 2, 2]]), nd.array([2, 3]),
                   use_label_lengths=True, blank_label="last")
    assert_almost_equal(a.asnumpy(), b.asnumpy())
    with pytest.raises(MXNetError, match="label values"):
        nd.CTCLoss(data, nd.array([[4, 1], [1, 1]]), blank_label="last").asnumpy()
