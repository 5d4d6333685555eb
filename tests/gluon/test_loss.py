"""gluon.loss against NumPy references, imperative and hybridized, with weight,
sample_weight and batch_axis; numeric gradients for the differentiable ones."""
import numpy as np
import pytest

import mxnet as mx
from mxnet import autograd, gluon
from mxnet.gluon import loss as gloss
from mxnet.test_utils import assert_almost_equal, check_numeric_gradient

R = np.random.RandomState(3)
PRED = R.randn(4, 5).astype(np.float32)
LAB = R.rand(4, 5).astype(np.float32)
IDX = np.array([0, 3, 4, 1], np.float32)
SW = R.rand(4, 1).astype(np.float32)
SIGN = np.sign(R.randn(4, 5)).astype(np.float32)
OTHER = R.randn(4, 5).astype(np.float32)


def _mean0(v):
    return v.reshape(v.shape[0], -1).mean(axis=1)


def _log_softmax(v, axis=-1):
    m = v.max(axis=axis, keepdims=True)
    return v - m - np.log(np.exp(v - m).sum(axis=axis, keepdims=True))


def _softplus(v):
    return np.log1p(np.exp(-np.abs(v))) + np.maximum(v, 0)


CASES = {
    "l2": (lambda: gloss.L2Loss(), (PRED, LAB), lambda p, l: _mean0(0.5 * (l - p) ** 2)),
    "l2_w_sw": (lambda: gloss.L2Loss(weight=3.0), (PRED, LAB, SW),
                lambda p, l, s: _mean0(1.5 * (l - p) ** 2 * s)),
    "l1": (lambda: gloss.L1Loss(weight=2.0), (PRED, LAB, SW),
           lambda p, l, s: _mean0(2 * np.abs(l - p) * s)),
    "sbce": (lambda: gloss.SigmoidBCELoss(), (PRED, (LAB > 0.5).astype(np.float32)),
             lambda p, l: _mean0(_softplus(p) - p * l)),
    "sbce_pos_weight": (lambda: gloss.SigmoidBinaryCrossEntropyLoss(),
                        (PRED, LAB, None, R.rand(5).astype(np.float32) + 0.5),
                        lambda p, l, _, w: _mean0(-(w * l * np.log(1 / (1 + np.exp(-p)))
                                                    + (1 - l) * np.log(1 - 1 / (1 + np.exp(-p)))))),
    "sbce_from_sigmoid": (lambda: gloss.SigmoidBCELoss(from_sigmoid=True),
                          (1 / (1 + np.exp(-PRED)), LAB),
                          lambda p, l: _mean0(-(np.log(p + 1e-12) * l
                                                + np.log(1 - p + 1e-12) * (1 - l)))),
    "sce": (lambda: gloss.SoftmaxCrossEntropyLoss(), (PRED, IDX),
            lambda p, l: -_log_softmax(p)[np.arange(4), l.astype(int)]),
    "sce_dense": (lambda: gloss.SoftmaxCELoss(sparse_label=False),
                  (PRED, LAB / LAB.sum(1, keepdims=True)),
                  lambda p, l: -(_log_softmax(p) * l).sum(1)),
    "sce_from_logits_axis": (lambda: gloss.SoftmaxCELoss(from_logits=True, axis=1, weight=0.5),
                             (PRED, IDX, SW),
                             lambda p, l, s: -0.5 * p[np.arange(4), l.astype(int)] * s[:, 0]),
    "sce_batch_axis1": (lambda: gloss.SoftmaxCELoss(axis=0, batch_axis=1), (PRED.T, IDX),
                        lambda p, l: -_log_softmax(p, 0)[l.astype(int), np.arange(4)]),
    "kl": (lambda: gloss.KLDivLoss(), (PRED, LAB),
           lambda p, l: (l * (np.log(l + 1e-12) - p)).sum(1)),
    "kl_logits": (lambda: gloss.KLDivLoss(from_logits=False), (PRED, LAB),
                  lambda p, l: (l * (np.log(l + 1e-12) - _log_softmax(p))).sum(1)),
    "huber": (lambda: gloss.HuberLoss(rho=0.5), (PRED, LAB),
              lambda p, l: _mean0(np.where(np.abs(l - p) > 0.5, np.abs(l - p) - 0.25,
                                           (l - p) ** 2))),
    "hinge": (lambda: gloss.HingeLoss(), (PRED, SIGN),
              lambda p, l: _mean0(np.maximum(0, 1 - p * l))),
    "sqhinge": (lambda: gloss.SquaredHingeLoss(margin=0.5), (PRED, SIGN),
                lambda p, l: _mean0(np.maximum(0, 0.5 - p * l) ** 2)),
    "logistic": (lambda: gloss.LogisticLoss(), (PRED, SIGN),
                 lambda p, l: _mean0(np.log1p(np.exp(-p * l)))),
    "logistic_binary": (lambda: gloss.LogisticLoss(label_format="binary"),
                        (PRED, (SIGN > 0).astype(np.float32)),
                        lambda p, l: _mean0(np.log1p(np.exp(-p * (2 * l - 1))))),
    "triplet": (lambda: gloss.TripletLoss(margin=0.3), (PRED, LAB, OTHER),
                lambda p, a, b: np.maximum(0, ((a - p) ** 2 - (b - p) ** 2).sum(1) + 0.3)),
    "poisson": (lambda: gloss.PoissonNLLLoss(), (PRED, LAB * 3),
                lambda p, t: np.array([(np.exp(p) - t * p).mean()])),
    "poisson_prob": (lambda: gloss.PoissonNLLLoss(from_logits=False), (np.abs(PRED) + 0.1,
                                                                       LAB * 3),
                     lambda p, t: np.array([(p - t * np.log(p + 1e-8)).mean()])),
    "cosine": (lambda: gloss.CosineEmbeddingLoss(margin=0.1),
               (PRED, OTHER, np.array([1, -1, 1, -1], np.float32)),
               lambda a, b, y: _cosine_ref(a, b, y, 0.1)),
}


def _cosine_ref(a, b, y, margin):
    cos = (a * b).sum(1) / np.maximum(np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1),
                                      1e-12)
    return np.where(y == 1, 1 - cos, np.maximum(0, cos - margin))[:, None]


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("hybridize", [False, True])
def test_loss_forward(name, hybridize):
    make, args, ref = CASES[name]
    loss = make()
    if hybridize:
        loss.hybridize()
    nds = [None if a is None else mx.nd.array(a) for a in args]
    for _ in range(2):                     # the second hybridized call reuses the executor
        out = loss(*nds).asnumpy()
        expected = ref(*[None if a is None else a.astype(np.float64) for a in args])
        assert_almost_equal(out, expected, rtol=1e-4, atol=1e-5, names=(name, "numpy"))


@pytest.mark.parametrize("name", ["l2", "l1", "sbce", "sce", "sce_dense", "kl_logits",
                                  "huber", "logistic", "triplet", "cosine"])
def test_loss_gradient(name):
    make, args, _ = CASES[name]
    loss = make()
    nargs = len(args)
    check_numeric_gradient(lambda *a: loss(*a), list(args), grad_nodes=[0], numeric_eps=1e-4,
                           rtol=1e-2, atol=1e-4)
    assert nargs >= 2


def test_poisson_compute_full():
    p, t = np.abs(PRED) + 0.1, np.floor(LAB * 4) + 1
    out = gloss.PoissonNLLLoss(from_logits=False, compute_full=True)(
        mx.nd.array(p), mx.nd.array(t)).asnumpy()
    stirling = (t * np.log(t) - t + 0.5 * np.log(2 * t * np.pi)) * (t > 1)
    assert_almost_equal(out, np.array([(p - t * np.log(p + 1e-8) + stirling).mean()]),
                        rtol=1e-4)


def test_sdml_loss():
    x1, x2 = PRED, OTHER
    out = gloss.SDMLLoss()(mx.nd.array(x1), mx.nd.array(x2)).asnumpy()
    dist = ((x1[:, None, :] - x2[None, :, :]) ** 2).sum(-1)
    logp = _log_softmax(-dist, axis=1)
    n = x1.shape[0]
    labels = np.eye(n) * 0.7 + (1 - np.eye(n)) * 0.3 / (n - 1)
    ref = (labels * (np.log(labels + 1e-12) - logp)).sum(1)
    assert_almost_equal(out, ref, rtol=1e-4, atol=1e-5)


def _ctc_ref(logits, label):
    """Negative log-likelihood of label under CTC (blank = last class), by the
    forward algorithm over the extended label sequence."""
    T, C = logits.shape
    probs = np.exp(_log_softmax(logits.astype(np.float64)))
    blank = C - 1
    ext = [blank]
    for c in label:
        ext += [int(c), blank]
    alpha = np.zeros(len(ext))
    alpha[0], alpha[1] = probs[0, blank], probs[0, ext[1]]
    for t in range(1, T):
        new = np.zeros_like(alpha)
        for s in range(len(ext)):
            a = alpha[s] + (alpha[s - 1] if s > 0 else 0)
            if s > 1 and ext[s] != blank and ext[s] != ext[s - 2]:
                a += alpha[s - 2]
            new[s] = a * probs[t, ext[s]]
        alpha = new
    return -np.log(alpha[-1] + alpha[-2])


def test_ctc_loss_layouts_and_lengths():
    pred = R.randn(2, 6, 4).astype(np.float32)
    label = np.array([[1, 2, -1], [0, 1, 1]], np.float32)
    refs = [_ctc_ref(pred[0], [1, 2]), _ctc_ref(pred[1], [0, 1, 1])]
    out = gloss.CTCLoss()(mx.nd.array(pred), mx.nd.array(label)).asnumpy()
    assert_almost_equal(out, np.array(refs), rtol=1e-4)
    tnc = gloss.CTCLoss(layout="TNC", label_layout="TN")
    tnc.hybridize()
    out = tnc(mx.nd.array(pred.transpose(1, 0, 2)), mx.nd.array(label.T)).asnumpy()
    assert_almost_equal(out, np.array(refs), rtol=1e-4)
    lens = gloss.CTCLoss()(mx.nd.array(pred), mx.nd.array(np.array([[1, 2, 0], [0, 1, 1]])),
                           mx.nd.array([5, 6]), mx.nd.array([2, 3])).asnumpy()
    assert_almost_equal(lens, np.array([_ctc_ref(pred[0, :5], [1, 2]), refs[1]]), rtol=1e-4)
    with pytest.raises(AssertionError, match="Only 'NTC' and 'TNC' layouts"):
        gloss.CTCLoss(layout="NCT")


def test_loss_in_training_loop_and_errors():
    loss = gloss.SoftmaxCELoss()
    pred = mx.nd.array(PRED)
    pred.attach_grad()
    with autograd.record():
        out = loss(pred, mx.nd.array(IDX))
    out.backward()
    sm = np.exp(_log_softmax(PRED.astype(np.float64)))
    sm[np.arange(4), IDX.astype(int)] -= 1
    assert_almost_equal(pred.grad.asnumpy(), sm, rtol=1e-4, atol=1e-6)
    with pytest.raises(ValueError, match="label_format can only be signed or binary"):
        gloss.LogisticLoss(label_format="x")
    with pytest.raises(AssertionError, match="weight must be a number"):
        gloss.L1Loss(weight=mx.nd.ones(1))(pred, pred)
    assert gloss.SigmoidBCELoss is gloss.SigmoidBinaryCrossEntropyLoss
    assert gloss.SoftmaxCELoss is gloss.SoftmaxCrossEntropyLoss
    assert isinstance(gloss.L2Loss(), gluon.HybridBlock)


def test_triplet_loss_takes_no_sample_weight():
    # MXNet 1.9.1's TripletLoss has exactly three inputs (pred, positive, negative)
    a, p, n = (mx.nd.array(np.random.RandomState(s).uniform(-1, 1, (3, 4))) for s in (1, 2, 3))
    out = gloss.TripletLoss(margin=0.5)(a, p, n).asnumpy()
    an, pn, nn_ = a.asnumpy(), p.asnumpy(), n.asnumpy()
    ref = np.maximum(((pn - an) ** 2).sum(1) - ((nn_ - an) ** 2).sum(1) + 0.5, 0)
    assert_almost_equal(out, ref, rtol=1e-5, atol=1e-6)
    with pytest.raises(TypeError):
        gloss.TripletLoss()(a, p, n, mx.nd.ones((3,)))
