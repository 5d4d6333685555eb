"""mx.metric against NumPy references (local and global sums, reset_local, create)."""
import math

import numpy as np
import pytest

import mxnet as mx
from mxnet import metric


def probs(rng, n, c):
    p = rng.random((n, c)).astype(np.float32)
    return p / p.sum(axis=1, keepdims=True)


def nd(*arrays):
    return [mx.nd.array(a) for a in arrays]


@pytest.fixture
def rng():
    return np.random.default_rng(42)


def test_accuracy(rng):
    m = metric.create("acc")
    total_correct = total = 0
    for _ in range(3):
        label = rng.integers(0, 4, 6).astype(np.float32)
        pred = probs(rng, 6, 4)
        m.update(nd(label), nd(pred))
        total_correct += (pred.argmax(axis=1) == label).sum()
        total += 6
    assert m.get() == ("accuracy", pytest.approx(total_correct / total))
    # predicted labels of the label's shape are compared directly
    m2 = metric.Accuracy()
    m2.update(nd([0, 1, 2]), nd([0, 1, 1]))
    assert m2.get()[1] == pytest.approx(2 / 3)
    # axis picks the class axis
    m3 = metric.Accuracy(axis=0)
    pred = probs(rng, 4, 5)
    label = rng.integers(0, 4, 5).astype(np.float32)
    m3.update(nd(label), nd(pred))
    assert m3.get()[1] == pytest.approx((pred.argmax(axis=0) == label).mean())


def test_reset_local_and_global(rng):
    m = metric.Accuracy()
    m.update(nd([1, 1]), nd([1, 1]))
    m.reset_local()
    m.update(nd([1, 1]), nd([0, 1]))
    assert m.get()[1] == pytest.approx(0.5)
    assert m.get_global()[1] == pytest.approx(0.75)
    assert m.get_name_value() == [("accuracy", pytest.approx(0.5))]
    assert m.get_global_name_value() == [("accuracy", pytest.approx(0.75))]
    m.reset()
    assert math.isnan(m.get()[1]) and math.isnan(m.get_global()[1])


def test_top_k_accuracy(rng):
    m = metric.create("top_k_accuracy", top_k=3)
    assert m.name == "top_k_accuracy_3"
    hits = total = 0
    for _ in range(2):
        pred = probs(rng, 8, 6)
        label = rng.integers(0, 6, 8).astype(np.float32)
        m.update(nd(label), nd(pred))
        top = np.argsort(-pred, axis=1)[:, :3]
        hits += (top == label[:, None]).any(axis=1).sum()
        total += 8
    assert m.get()[1] == pytest.approx(hits / total)
    with pytest.raises(AssertionError):
        metric.TopKAccuracy(top_k=1)


def _binary_counts(label, pred):
    p = pred.argmax(axis=1) == 1
    t = label == 1
    return (p & t).sum(), (p & ~t).sum(), (~p & t).sum(), (~p & ~t).sum()


def _f1(tp, fp, fn):
    prec = tp / (tp + fp) if tp + fp else 0.0
    rec = tp / (tp + fn) if tp + fn else 0.0
    return 2 * prec * rec / (prec + rec) if prec + rec else 0.0


def _mcc(tp, fp, fn, tn):
    den = 1.0
    for t in (tp + fp, tp + fn, tn + fp, tn + fn):
        den *= t if t else 1.0
    return (tp * tn - fp * fn) / math.sqrt(den)


@pytest.mark.parametrize("average", ["macro", "micro"])
def test_f1_and_mcc(rng, average):
    batches = [(rng.integers(0, 2, 10).astype(np.float32), probs(rng, 10, 2))
               for _ in range(3)]
    f1, mcc = metric.F1(average=average), metric.MCC(average=average)
    for label, pred in batches:
        f1.update(nd(label), nd(pred))
        mcc.update(nd(label), nd(pred))
    counts = [_binary_counts(lb, pr) for lb, pr in batches]
    if average == "macro":
        want_f1 = np.mean([_f1(tp, fp, fn) for tp, fp, fn, _ in counts])
        want_mcc = np.mean([_mcc(*c) for c in counts])
    else:
        tp, fp, fn, tn = np.sum(counts, axis=0)
        want_f1, want_mcc = _f1(tp, fp, fn), _mcc(tp, fp, fn, tn)
    assert f1.get() == ("f1", pytest.approx(want_f1))
    assert mcc.get() == ("mcc", pytest.approx(want_mcc))
    with pytest.raises(ValueError, match="binary"):
        f1.update(nd([0, 1, 2]), nd(probs(rng, 3, 2)))


def test_pcc_matches_mcc_on_binary(rng):
    label = rng.integers(0, 2, 20).astype(np.float32)
    pred = probs(rng, 20, 2)
    pcc = metric.create("pcc")
    pcc.update(nd(label), nd(pred))
    assert pcc.get()[1] == pytest.approx(_mcc(*_binary_counts(label, pred)))


@pytest.mark.parametrize("ignore_label", [None, 1])
def test_perplexity(rng, ignore_label):
    m = metric.Perplexity(ignore_label=ignore_label)
    nll, n = 0.0, 0
    for _ in range(2):
        label = rng.integers(0, 4, 6).astype(np.float32)
        pred = probs(rng, 6, 4)
        m.update(nd(label), nd(pred))
        p = pred[np.arange(6), label.astype(int)]
        keep = np.ones(6, bool) if ignore_label is None else label != ignore_label
        nll -= np.log(np.maximum(p[keep], 1e-10)).sum()
        n += keep.sum()
    assert m.get() == ("perplexity", pytest.approx(math.exp(nll / n), rel=1e-5))


def test_regression_metrics(rng):
    mae, mse, rmse = metric.MAE(), metric.MSE(), metric.RMSE()
    errs = {"mae": [], "mse": [], "rmse": []}
    for _ in range(3):
        label = rng.standard_normal(5).astype(np.float32)
        pred = rng.standard_normal((5, 1)).astype(np.float32)
        for m in (mae, mse, rmse):
            m.update(nd(label), nd(pred))
        d = label.reshape(5, 1) - pred
        errs["mae"].append(np.abs(d).mean())
        errs["mse"].append((d ** 2).mean())
        errs["rmse"].append(np.sqrt((d ** 2).mean()))
    for m in (mae, mse, rmse):
        assert m.get()[1] == pytest.approx(np.mean(errs[m.name]), rel=1e-5)


@pytest.mark.parametrize("name,cls,eps", [("ce", metric.CrossEntropy, 1e-12),
                                          ("nll_loss", metric.NegativeLogLikelihood, 0.1)])
def test_log_losses(rng, name, cls, eps):
    m = metric.create(name, eps=eps)
    assert isinstance(m, cls)
    total, n = 0.0, 0
    for _ in range(2):
        label = rng.integers(0, 3, 7).astype(np.float32)
        pred = probs(rng, 7, 3)
        m.update(nd(label), nd(pred))
        total += -np.log(pred[np.arange(7), label.astype(int)] + eps).sum()
        n += 7
    assert m.get()[1] == pytest.approx(total / n, rel=1e-5)


@pytest.mark.parametrize("average", ["macro", "micro"])
def test_pearson_correlation(rng, average):
    m = metric.create("pearsonr", average=average)
    labels, preds, per_batch = [], [], []
    for _ in range(3):
        label = rng.standard_normal(6).astype(np.float32)
        pred = (label + rng.standard_normal(6)).astype(np.float32)
        m.update(nd(label), nd(pred))
        labels.append(label)
        preds.append(pred)
        per_batch.append(np.corrcoef(pred, label)[0, 1])
    want = np.mean(per_batch) if average == "macro" else \
        np.corrcoef(np.concatenate(preds), np.concatenate(labels))[0, 1]
    assert m.get()[1] == pytest.approx(want, rel=1e-6)


def test_loss_torch_caffe(rng):
    for name in ("loss", "torch", "caffe"):
        m = metric.create(name)
        a, b = rng.random(4).astype(np.float32), rng.random(3).astype(np.float32)
        m.update(None, nd(a, b))
        assert m.get() == (name, pytest.approx((a.sum() + b.sum()) / 7, rel=1e-6))


def test_custom_metric_and_np_wrapper(rng):
    def my_acc(label, pred):
        return (pred.argmax(axis=1) == label).sum(), label.size

    m = metric.create(my_acc)
    assert isinstance(m, metric.CustomMetric) and m.name == "my_acc"
    label, pred = rng.integers(0, 3, 8).astype(np.float32), probs(rng, 8, 3)
    m.update(nd(label), nd(pred))
    assert m.get()[1] == pytest.approx((pred.argmax(axis=1) == label).mean())
    lam = metric.create(lambda l, p: 0.5)
    assert lam.name == "custom(<lambda>)"
    lam.update(nd(label), nd(pred))
    assert lam.get()[1] == 0.5
    w = metric.np(lambda l, p: float(np.abs(l - p.argmax(axis=1)).mean()), name="dist")
    w.update(nd(label), nd(pred))
    assert w.get() == ("dist", pytest.approx(np.abs(label - pred.argmax(axis=1)).mean()))
    with pytest.raises(NotImplementedError):
        m.get_config()


def test_composite_and_create(rng):
    m = metric.create(["acc", "ce", metric.MSE()])
    assert isinstance(m, metric.CompositeEvalMetric)
    label, pred = rng.integers(0, 3, 6).astype(np.float32), probs(rng, 6, 3)
    m.update(nd(label), nd(pred))
    names, values = m.get()
    assert names == ["accuracy", "cross-entropy", "mse"]
    assert values[0] == pytest.approx((pred.argmax(axis=1) == label).mean())
    assert values[1] == pytest.approx(-np.log(pred[np.arange(6), label.astype(int)]).mean(),
                                      rel=1e-5)
    assert len(m.get_name_value()) == 3
    assert isinstance(m.get_metric(0), metric.Accuracy)
    assert isinstance(m.get_metric(9), ValueError)
    m.reset_local()
    assert all(math.isnan(v) for v in m.get()[1])
    assert not any(math.isnan(v) for v in m.get_global()[1])
    assert metric.create(m) is m
    assert isinstance(metric.create("composite"), metric.CompositeEvalMetric)
    cfg = metric.Accuracy(axis=2).get_config()
    assert cfg["metric"] == "Accuracy" and cfg["axis"] == 2
    assert isinstance(metric.create(cfg), metric.Accuracy)


def test_update_dict_and_names(rng):
    m = metric.Accuracy(output_names=["out"], label_names=["lab"])
    m.update_dict({"lab": mx.nd.array([1, 0]), "other": mx.nd.array([5, 5])},
                  {"out": mx.nd.array([1, 1])})
    assert m.get()[1] == pytest.approx(0.5)
    assert str(metric.MAE()).startswith("EvalMetric: {'mae'")


def test_shape_mismatch():
    with pytest.raises(ValueError, match="does not match"):
        metric.Accuracy().update(nd([1, 2]), nd([1, 2], [3]))
    with pytest.raises(ValueError):
        metric.check_label_shapes(np.zeros(2), np.zeros(3))
    labels, preds = metric.check_label_shapes(mx.nd.zeros(2), mx.nd.zeros(2), wrap=True)
    assert isinstance(labels, list) and isinstance(preds, list)


def test_numpy_inputs_are_accepted(rng):
    m = metric.MSE()
    m.update([np.ones(3)], [np.zeros(3)])
    assert m.get()[1] == 1.0


@pytest.mark.parametrize("name, labels, preds", [
    ("acc", [[0, 1, 2, 1]], [[[.6, .3, .1], [.2, .5, .3], [.1, .2, .7], [.5, .4, .1]]]),
    ("ce", [[0, 1, 2, 1]], [[[.6, .3, .1], [.2, .5, .3], [.1, .2, .7], [.5, .4, .1]]]),
    ("nll_loss", [[0, 1]], [[[.6, .4], [.2, .8]]]),
    ("perplexity", [[0, 1]], [[[.6, .4], [.2, .8]]]),
    ("mae", [[1., 2., 3.]], [[1.5, 2., 2.]]),
    ("mse", [[1., 2., 3.]], [[1.5, 2., 2.]]),
    ("rmse", [[1., 2., 3.]], [[1.5, 2., 2.]]),
    ("f1", [[0, 1, 1, 0]], [[[.3, .7], [.2, .8], [.9, .1], [.6, .4]]]),
    ("mcc", [[0, 1, 1, 0]], [[[.3, .7], [.2, .8], [.9, .1], [.6, .4]]]),
    ("pearsonr", [[1., 2., 3.]], [[1.5, 2., 2.]]),
])
def test_values_are_python_floats_summed_in_double(name, labels, preds):
    # MXNet 1.9.1 reports floats (float64 sums): json can write them, isinstance(v, float)
    import json
    m = mx.metric.create(name, **({"ignore_label": None} if name == "perplexity" else {}))
    for _ in range(3):
        m.update([mx.nd.array(x) for x in labels], [mx.nd.array(x) for x in preds])
    for _, value in (m.get(), m.get_global()):
        assert isinstance(value, float)
        json.dumps(value)
