"""Evaluation metrics (MXNet 1.9.1's ``mx.metric``).

A metric accumulates ``sum_metric`` and ``num_inst`` over ``update(labels, preds)``
calls (lists of NDArrays, one per output) and reports ``sum_metric / num_inst``.
Each also keeps "global" sums that ``reset_local`` leaves alone (Module's
``score`` vs. Speedometer's per-interval numbers). ``create`` builds a metric from a
name (``'acc'``, ``'ce'``, ...), a list of them, or a ``feval(label, pred)`` function.

The numbers are computed in NumPy on the host (``asnumpy()``), as MXNet does for most
metrics; NumPy arrays are accepted wherever NDArrays are.
"""
import math
from collections import OrderedDict

import numpy

from . import ndarray  # noqa: F401  (MXNet's metric module has it; GluonTS imports mxnet.metric.ndarray)
from . import registry
from .base import numeric_types, string_types

__all__ = ["EvalMetric", "CompositeEvalMetric", "Accuracy", "TopKAccuracy", "F1", "MCC",
           "Perplexity", "MAE", "MSE", "RMSE", "CrossEntropy", "NegativeLogLikelihood",
           "PearsonCorrelation", "PCC", "Loss", "Torch", "Caffe", "CustomMetric", "np",
           "create", "register", "alias", "check_label_shapes"]


def _is_array(x):
    return hasattr(x, "asnumpy") or isinstance(x, numpy.ndarray)


def _host(x):
    """x as a NumPy array (NDArrays are copied to the host)."""
    return x.asnumpy() if hasattr(x, "asnumpy") else numpy.asarray(x)


def check_label_shapes(labels, preds, wrap=False, shape=False):
    """Check that labels and preds have the same length (``shape=True``: the same
    shape); raise ValueError if not. ``wrap`` turns single arrays into lists."""
    if shape:
        label_shape, pred_shape = labels.shape, preds.shape
    else:
        label_shape, pred_shape = len(labels), len(preds)
    if label_shape != pred_shape:
        raise ValueError(f"Shape of labels {label_shape} does not match shape of "
                         f"predictions {pred_shape}")
    if wrap:
        if _is_array(labels):
            labels = [labels]
        if _is_array(preds):
            preds = [preds]
    return labels, preds


class EvalMetric:
    """Base class of metrics.

    Parameters
    ----------
    name : str
        The metric's name (``get()`` returns it with the value).
    output_names : list of str, optional
        With ``update_dict``: the predictions to use (default: all).
    label_names : list of str, optional
        With ``update_dict``: the labels to use (default: all).
    """

    def __init__(self, name, output_names=None, label_names=None, **kwargs):
        self.name = str(name)
        self.output_names = output_names
        self.label_names = label_names
        self._has_global_stats = kwargs.pop("has_global_stats", False)
        self._kwargs = kwargs
        self.reset()

    def __str__(self):
        return f"EvalMetric: {dict(self.get_name_value())}"

    def get_config(self):
        """The arguments that ``create`` needs to rebuild this metric."""
        config = self._kwargs.copy()
        config.update({"metric": self.__class__.__name__, "name": self.name,
                       "output_names": self.output_names, "label_names": self.label_names})
        return config

    def update_dict(self, label, pred):
        """Update from dicts name -> array (filtered by label_names/output_names)."""
        preds = [pred[n] for n in self.output_names] if self.output_names is not None \
            else list(pred.values())
        labels = [label[n] for n in self.label_names] if self.label_names is not None \
            else list(label.values())
        self.update(labels, preds)

    def update(self, labels, preds):
        """Accumulate one batch: lists of label and prediction arrays."""
        raise NotImplementedError()

    def _add(self, value, count):
        """Add to both the local and the global sums, as Python floats (double
        precision, as MXNet 1.9.1 sums; a NumPy float32 sum would also make ``get()``
        report a value that ``json`` cannot write and ``isinstance(v, float)`` rejects)."""
        value = float(value)
        self.sum_metric += value
        self.global_sum_metric += value
        self.num_inst += count
        self.global_num_inst += count

    def reset(self):
        """Clear the local and the global sums."""
        self.num_inst = 0
        self.sum_metric = 0.0
        self.global_num_inst = 0
        self.global_sum_metric = 0.0

    def reset_local(self):
        """Clear the local sums only."""
        self.num_inst = 0
        self.sum_metric = 0.0

    def get(self):
        """(name, value) of the local sums (NaN before any update)."""
        if self.num_inst == 0:
            return (self.name, float("nan"))
        return (self.name, self.sum_metric / self.num_inst)

    def get_global(self):
        """(name, value) of the global sums."""
        if not self._has_global_stats:
            return self.get()
        if self.global_num_inst == 0:
            return (self.name, float("nan"))
        return (self.name, self.global_sum_metric / self.global_num_inst)

    @staticmethod
    def _pairs(name, value):
        names = name if isinstance(name, list) else [name]
        values = value if isinstance(value, list) else [value]
        return list(zip(names, values))

    def get_name_value(self):
        """[(name, value), ...] of the local sums."""
        return self._pairs(*self.get())

    def get_global_name_value(self):
        """[(name, value), ...] of the global sums."""
        if not self._has_global_stats:
            return self.get_name_value()
        return self._pairs(*self.get_global())


register = registry.get_register_func(EvalMetric, "metric")
alias = registry.get_alias_func(EvalMetric, "metric")
_create = registry.get_create_func(EvalMetric, "metric")


def create(metric, *args, **kwargs):
    """A metric from a name (``'acc'``, ``'ce'``, ``'mse'``, ...), an EvalMetric, a
    ``feval(label, pred)`` function (a CustomMetric) or a list of those (a
    CompositeEvalMetric)."""
    if callable(metric):
        return CustomMetric(metric, *args, **kwargs)
    if isinstance(metric, list):
        composite = CompositeEvalMetric()
        for child in metric:
            composite.add(create(child, *args, **kwargs))
        return composite
    return _create(metric, *args, **kwargs)


@register
@alias("composite")
class CompositeEvalMetric(EvalMetric):
    """Several metrics updated together; ``get()`` returns lists of names and values."""

    def __init__(self, metrics=None, name="composite", output_names=None, label_names=None):
        super().__init__(name, output_names=output_names, label_names=label_names,
                         has_global_stats=True)
        self.metrics = [create(m) for m in (metrics or [])]

    def add(self, metric):
        """Add a child metric (anything ``create`` accepts)."""
        self.metrics.append(create(metric))

    def get_metric(self, index):
        """The child metric at index."""
        try:
            return self.metrics[index]
        except IndexError:
            # MXNet returns (does not raise) this error.
            return ValueError(f"Metric index {index} is out of range 0 and "
                              f"{len(self.metrics)}")

    def update_dict(self, labels, preds):
        if self.label_names is not None:
            labels = OrderedDict(i for i in labels.items() if i[0] in self.label_names)
        if self.output_names is not None:
            preds = OrderedDict(i for i in preds.items() if i[0] in self.output_names)
        for metric in self.metrics:
            metric.update_dict(labels, preds)

    def update(self, labels, preds):
        for metric in self.metrics:
            metric.update(labels, preds)

    def reset(self):
        for metric in getattr(self, "metrics", ()):   # reset() runs before metrics exist
            metric.reset()

    def reset_local(self):
        for metric in getattr(self, "metrics", ()):
            metric.reset_local()

    def _collect(self, getter):
        names, values = [], []
        for metric in self.metrics:
            name, value = getter(metric)
            names.extend([name] if isinstance(name, string_types) else name)
            values.extend([value] if isinstance(value, numeric_types) else value)
        return (names, values)

    def get(self):
        return self._collect(lambda m: m.get())

    def get_global(self):
        return self._collect(lambda m: m.get_global())

    def get_config(self):
        config = super().get_config()
        config.update({"metrics": [m.get_config() for m in self.metrics]})
        return config


# --- classification ------------------------------------------------------------------------

@register
@alias("acc")
class Accuracy(EvalMetric):
    """Classification accuracy. Predictions of a different shape than the labels are
    class scores: their argmax along ``axis`` is the predicted class.

    Parameters
    ----------
    axis : int, default 1
    name : str, default 'accuracy'
    """

    def __init__(self, axis=1, name="accuracy", output_names=None, label_names=None):
        super().__init__(name, axis=axis, output_names=output_names,
                         label_names=label_names, has_global_stats=True)
        self.axis = axis

    def update(self, labels, preds):
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            pred = _host(pred)
            label = _host(label)
            if pred.shape != label.shape:
                pred = numpy.argmax(pred, axis=self.axis)
            pred = pred.astype("int32").ravel()
            label = label.astype("int32").ravel()
            check_label_shapes(label, pred)
            self._add(int((pred == label).sum()), len(pred))


@register
@alias("top_k_accuracy", "top_k_acc")
class TopKAccuracy(EvalMetric):
    """Top-k accuracy: the label is among the k highest scores.

    Parameters
    ----------
    top_k : int, default 1 (must be > 1; use Accuracy for 1)
    name : str, default 'top_k_accuracy' (``_<k>`` is appended)
    """

    def __init__(self, top_k=1, name="top_k_accuracy", output_names=None, label_names=None):
        super().__init__(name, top_k=top_k, output_names=output_names,
                         label_names=label_names, has_global_stats=True)
        self.top_k = top_k
        if self.top_k <= 1:
            raise AssertionError("Please use Accuracy if top_k is no more than 1")
        self.name += f"_{self.top_k}"

    def update(self, labels, preds):
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            pred = _host(pred).astype("float32")
            if pred.ndim > 2:
                raise AssertionError("Predictions should be no more than 2 dims")
            label = _host(label).astype("int32")
            order = numpy.argpartition(pred, -self.top_k)
            check_label_shapes(label, order)
            if order.ndim == 1:
                correct = int((order.ravel() == label.ravel()).sum())
            else:
                k = min(order.shape[1], self.top_k)
                top = order[:, order.shape[1] - k:]
                correct = int((top == label.reshape(-1, 1)).sum())
            self._add(correct, order.shape[0])


class _BinaryStats:
    """Confusion counts of a binary classifier (local and global)."""

    _FIELDS = ("true_positives", "false_positives", "false_negatives", "true_negatives")

    def __init__(self):
        self.reset_stats()

    def update_binary_stats(self, label, pred):
        pred = _host(pred)
        label = _host(label).astype("int32")
        pred_label = numpy.argmax(pred, axis=1)
        check_label_shapes(label, pred)
        if len(numpy.unique(label)) > 2:
            raise ValueError(f"{self.__class__.__name__} currently only supports binary "
                             "classification.")
        pred_true = pred_label == 1
        label_true = label.ravel() == 1
        counts = {"true_positives": (pred_true & label_true).sum(),
                  "false_positives": (pred_true & ~label_true).sum(),
                  "false_negatives": (~pred_true & label_true).sum(),
                  "true_negatives": (~pred_true & ~label_true).sum()}
        for field, n in counts.items():
            setattr(self, field, getattr(self, field) + int(n))
            setattr(self, "global_" + field, getattr(self, "global_" + field) + int(n))

    def _counts(self, use_global):
        prefix = "global_" if use_global else ""
        return [float(getattr(self, prefix + f)) for f in self._FIELDS]

    @staticmethod
    def _ratio(a, b):
        return a / (a + b) if a + b > 0 else 0.0

    def _fscore(self, use_global):
        tp, fp, fn, _ = self._counts(use_global)
        p, r = self._ratio(tp, fp), self._ratio(tp, fn)
        return 2 * p * r / (p + r) if p + r > 0 else 0.0

    @property
    def precision(self):
        tp, fp, _, _ = self._counts(False)
        return self._ratio(tp, fp)

    @property
    def global_precision(self):
        tp, fp, _, _ = self._counts(True)
        return self._ratio(tp, fp)

    @property
    def recall(self):
        tp, _, fn, _ = self._counts(False)
        return self._ratio(tp, fn)

    @property
    def global_recall(self):
        tp, _, fn, _ = self._counts(True)
        return self._ratio(tp, fn)

    @property
    def fscore(self):
        return self._fscore(False)

    @property
    def global_fscore(self):
        return self._fscore(True)

    def matthewscc(self, use_global=False):
        """Matthews correlation coefficient (0 without examples; zero factors of the
        denominator are left out, as MXNet does)."""
        tp, fp, fn, tn = self._counts(use_global)
        if tp + fp + fn + tn == 0:
            return 0.0
        denom = 1.0
        for term in (tp + fp, tp + fn, tn + fp, tn + fn):
            if term != 0.0:
                denom *= term
        return (tp * tn - fp * fn) / math.sqrt(denom)

    @property
    def total_examples(self):
        return int(sum(self._counts(False)))

    @property
    def global_total_examples(self):
        return int(sum(self._counts(True)))

    def local_reset_stats(self):
        for f in self._FIELDS:
            setattr(self, f, 0)

    def reset_stats(self):
        for f in self._FIELDS:
            setattr(self, f, 0)
            setattr(self, "global_" + f, 0)


class _BinaryMetric(EvalMetric):
    """F1 and MCC: per-batch average ('macro') or over all examples ('micro')."""

    def __init__(self, name, output_names, label_names, average):
        self.average = average
        self.metrics = _BinaryStats()
        super().__init__(name, output_names=output_names, label_names=label_names,
                         has_global_stats=True)

    def _score(self, use_global):
        raise NotImplementedError

    def update(self, labels, preds):
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            self.metrics.update_binary_stats(label, pred)
        if self.average == "macro":
            self._add_macro()
        else:
            self.sum_metric = self._score(False) * self.metrics.total_examples
            self.global_sum_metric = self._score(True) * self.metrics.global_total_examples
            self.num_inst = self.metrics.total_examples
            self.global_num_inst = self.metrics.global_total_examples

    def _add_macro(self):
        self.sum_metric += float(self._score(False))
        self.global_sum_metric += float(self._score(True))
        self.num_inst += 1
        self.global_num_inst += 1
        self.metrics.reset_stats()

    def reset(self):
        self.sum_metric = 0.0
        self.num_inst = 0
        self.global_num_inst = 0
        self.global_sum_metric = 0.0
        self.metrics.reset_stats()

    def reset_local(self):
        self.sum_metric = 0.0
        self.num_inst = 0
        self.metrics.local_reset_stats()


@register
class F1(_BinaryMetric):
    """F1 score of a binary classifier (predictions: (N, 2) scores; class 1 positive).

    Parameters
    ----------
    average : {'macro', 'micro'}, default 'macro'
        'macro': the mean of per-batch F1; 'micro': F1 of all examples seen.
    """

    def __init__(self, name="f1", output_names=None, label_names=None, average="macro"):
        super().__init__(name, output_names, label_names, average)

    def _score(self, use_global):
        return self.metrics.global_fscore if use_global else self.metrics.fscore


@register
class MCC(_BinaryMetric):
    """Matthews correlation coefficient of a binary classifier.

    Parameters
    ----------
    average : {'macro', 'micro'}, default 'macro'
    """

    def __init__(self, name="mcc", output_names=None, label_names=None, average="macro"):
        super().__init__(name, output_names, label_names, average)

    @property
    def _average(self):
        return self.average

    @property
    def _metrics(self):
        return self.metrics

    def _score(self, use_global):
        return self.metrics.matthewscc(use_global)


@register
class PCC(EvalMetric):
    """Multiclass Pearson correlation coefficient (the multiclass MCC) from a confusion
    matrix that grows with the largest class seen."""

    def __init__(self, name="pcc", output_names=None, label_names=None,
                 has_global_stats=True):
        self.k = 2
        super().__init__(name=name, output_names=output_names, label_names=label_names,
                         has_global_stats=has_global_stats)

    def _grow(self, inc):
        self.lcm = numpy.pad(self.lcm, ((0, inc), (0, inc)), "constant")
        self.gcm = numpy.pad(self.gcm, ((0, inc), (0, inc)), "constant")
        self.k += inc

    @staticmethod
    def _calc_mcc(cmat):
        n = cmat.sum()
        x = cmat.sum(axis=1)
        y = cmat.sum(axis=0)
        cov_xx = numpy.sum(x * (n - x))
        cov_yy = numpy.sum(y * (n - y))
        if cov_xx == 0 or cov_yy == 0:
            return float("nan")
        cov_xy = numpy.sum(cmat.diagonal() * n - x * y)
        return cov_xy / (cov_xx * cov_yy) ** 0.5

    def update(self, labels, preds):
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            label = _host(label).astype("int32")
            pred = _host(pred)
            pred = pred.argmax(axis=1) if pred.shape != label.shape else pred.astype("int32")
            n = int(max(pred.max(), label.max()))
            if n >= self.k:
                self._grow(n + 1 - self.k)
            bcm = numpy.zeros((self.k, self.k))
            numpy.add.at(bcm, (pred.ravel(), label.ravel()), 1)
            self.lcm += bcm
            self.gcm += bcm
        self.num_inst += 1
        self.global_num_inst += 1

    @property
    def sum_metric(self):
        return self._calc_mcc(self.lcm) * self.num_inst

    @sum_metric.setter
    def sum_metric(self, _):
        pass                                   # derived from the confusion matrix

    @property
    def global_sum_metric(self):
        return self._calc_mcc(self.gcm) * self.global_num_inst

    @global_sum_metric.setter
    def global_sum_metric(self, _):
        pass

    def reset(self):
        self.global_num_inst = 0.
        self.gcm = numpy.zeros((self.k, self.k))
        self.reset_local()

    def reset_local(self):
        self.num_inst = 0.
        self.lcm = numpy.zeros((self.k, self.k))


# --- probabilities ----------------------------------------------------------------------------

@register
class Perplexity(EvalMetric):
    """Perplexity, exp(mean negative log-likelihood) of the labels' probabilities.

    Parameters
    ----------
    ignore_label : int or None
        Labels with this value are left out.
    axis : int, default -1
        The class axis of the predictions.
    """

    def __init__(self, ignore_label, axis=-1, name="perplexity", output_names=None,
                 label_names=None):
        super().__init__(name, ignore_label=ignore_label, output_names=output_names,
                         label_names=label_names, has_global_stats=True)
        self.ignore_label = ignore_label
        self.axis = axis

    def update(self, labels, preds):
        if len(labels) != len(preds):
            raise AssertionError("labels and preds must have the same length")
        loss, num = 0.0, 0
        for label, pred in zip(labels, preds):
            label, pred = _host(label), _host(pred)
            if label.size != pred.size / pred.shape[-1]:
                raise AssertionError(f"shape mismatch: {label.shape} vs. {pred.shape}")
            label = label.reshape(label.size).astype("int32")
            scores = numpy.moveaxis(pred, self.axis, -1).reshape(label.size, -1)
            # MXNet picks with clipping: out-of-range labels read the nearest class
            idx = numpy.clip(label, 0, scores.shape[1] - 1)
            prob = scores[numpy.arange(label.size), idx]
            if self.ignore_label is not None:
                ignore = label == self.ignore_label
                num -= int(ignore.sum())
                prob = numpy.where(ignore, prob.dtype.type(1), prob)
            loss -= float(numpy.log(numpy.maximum(prob, prob.dtype.type(1e-10))).sum())
            num += prob.size
        self._add(loss, num)

    def get(self):
        if self.num_inst == 0:
            return (self.name, float("nan"))
        return (self.name, math.exp(self.sum_metric / self.num_inst))

    def get_global(self):
        if self.global_num_inst == 0:
            return (self.name, float("nan"))
        return (self.name, math.exp(self.global_sum_metric / self.global_num_inst))


def _as_columns(x):
    """1-D arrays become (N, 1) (MXNet's regression metrics compare column vectors)."""
    x = _host(x)
    return x.reshape(x.shape[0], 1) if x.ndim == 1 else x


class _Regression(EvalMetric):
    """Per-batch mean of an error (each batch counts once)."""

    def __init__(self, name, output_names=None, label_names=None):
        super().__init__(name, output_names=output_names, label_names=label_names,
                         has_global_stats=True)

    def _error(self, label, pred):
        raise NotImplementedError

    def update(self, labels, preds):
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            self._add(self._error(_as_columns(label), _as_columns(pred)), 1)


@register
class MAE(_Regression):
    """Mean absolute error."""

    def __init__(self, name="mae", output_names=None, label_names=None):
        super().__init__(name, output_names, label_names)

    def _error(self, label, pred):
        return numpy.abs(label - pred).mean()


@register
class MSE(_Regression):
    """Mean squared error."""

    def __init__(self, name="mse", output_names=None, label_names=None):
        super().__init__(name, output_names, label_names)

    def _error(self, label, pred):
        return ((label - pred) ** 2.0).mean()


@register
class RMSE(_Regression):
    """Root mean squared error (per batch, then averaged over batches)."""

    def __init__(self, name="rmse", output_names=None, label_names=None):
        super().__init__(name, output_names, label_names)

    def _error(self, label, pred):
        return numpy.sqrt(((label - pred) ** 2.0).mean())


class _LogLoss(EvalMetric):
    """Mean of -log(p[label] + eps) over examples (pred: (N, classes))."""

    def __init__(self, eps, name, output_names, label_names):
        super().__init__(name, eps=eps, output_names=output_names, label_names=label_names,
                         has_global_stats=True)
        self.eps = eps

    def update(self, labels, preds):
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            label = _host(label).ravel()
            pred = _host(pred)
            n = pred.shape[0]
            if label.shape[0] != n:
                raise AssertionError((label.shape[0], n))
            prob = pred[numpy.arange(n, dtype=numpy.int64), numpy.int64(label)]
            self._add((-numpy.log(prob + self.eps)).sum(), n)


@register
@alias("ce")
class CrossEntropy(_LogLoss):
    """Cross entropy of predicted probabilities.

    Parameters
    ----------
    eps : float, default 1e-12
    """

    def __init__(self, eps=1e-12, name="cross-entropy", output_names=None, label_names=None):
        super().__init__(eps, name, output_names, label_names)


@register
@alias("nll_loss")
class NegativeLogLikelihood(_LogLoss):
    """Negative log-likelihood of predicted probabilities.

    Parameters
    ----------
    eps : float, default 1e-12
    """

    def __init__(self, eps=1e-12, name="nll-loss", output_names=None, label_names=None):
        super().__init__(eps, name, output_names, label_names)


@register
@alias("pearsonr")
class PearsonCorrelation(EvalMetric):
    """Pearson correlation of predictions and labels.

    Parameters
    ----------
    average : {'macro', 'micro'}, default 'macro'
        'macro': the mean of per-batch correlations; 'micro': the correlation of all
        values seen (streaming means and sums of squares).
    """

    def __init__(self, name="pearsonr", output_names=None, label_names=None, average="macro"):
        self.average = average
        super().__init__(name, output_names=output_names, label_names=label_names,
                         has_global_stats=True)
        if self.average == "micro":
            self.reset_micro()

    def reset_micro(self):
        self._sse_p = 0
        self._mean_p = 0
        self._sse_l = 0
        self._mean_l = 0
        self._pred_nums = 0
        self._label_nums = 0
        self._conv = 0

    def reset(self):
        super().reset()
        if self.average == "micro":
            self.reset_micro()

    @staticmethod
    def update_variance(new_values, *aggregate):
        """Welford-style batch update of (count, mean, sum of squared deviations)."""
        count, mean, m_2 = aggregate
        count += len(new_values)
        delta = new_values - mean
        mean += numpy.sum(delta / count)
        m_2 += numpy.sum(delta * (new_values - mean))
        return count, mean, m_2

    def update_cov(self, label, pred):
        self._conv = self._conv + numpy.sum((label - self._mean_l) * (pred - self._mean_p))

    def update(self, labels, preds):
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            check_label_shapes(label, pred, False, True)
            label = _host(label).ravel().astype(numpy.float64)
            pred = _host(pred).ravel().astype(numpy.float64)
            if self.average == "macro":
                self._add(numpy.corrcoef(pred, label)[0, 1], 1)
            else:
                self.global_num_inst += 1
                self.num_inst += 1
                self._label_nums, self._mean_l, self._sse_l = self.update_variance(
                    label, self._label_nums, self._mean_l, self._sse_l)
                self.update_cov(label, pred)
                self._pred_nums, self._mean_p, self._sse_p = self.update_variance(
                    pred, self._pred_nums, self._mean_p, self._sse_p)

    def get(self):
        if self.num_inst == 0:
            return (self.name, float("nan"))
        if self.average == "macro":
            return (self.name, self.sum_metric / self.num_inst)
        n = self._label_nums
        pearsonr = self._conv / ((n - 1) * numpy.sqrt(self._sse_p / (n - 1)) *
                                 numpy.sqrt(self._sse_l / (n - 1)))
        return (self.name, pearsonr)


# --- losses and custom metrics ----------------------------------------------------------------

@register
class Loss(EvalMetric):
    """The mean of the predictions themselves (for outputs that are losses)."""

    def __init__(self, name="loss", output_names=None, label_names=None):
        super().__init__(name, output_names=output_names, label_names=label_names,
                         has_global_stats=True)

    def update(self, _, preds):
        if _is_array(preds):
            preds = [preds]
        for pred in preds:
            pred = _host(pred)
            self._add(float(pred.sum()), pred.size)


@register
class Torch(Loss):
    """Dummy metric for torch criterions (a Loss)."""

    def __init__(self, name="torch", output_names=None, label_names=None):
        super().__init__(name, output_names=output_names, label_names=label_names)


@register
class Caffe(Loss):
    """Dummy metric for caffe criterions (a Loss)."""

    def __init__(self, name="caffe", output_names=None, label_names=None):
        super().__init__(name, output_names=output_names, label_names=label_names)


@register
class CustomMetric(EvalMetric):
    """A metric from ``feval(label, pred)`` on NumPy arrays, returning a value (one
    instance) or a ``(sum_metric, num_inst)`` pair.

    Parameters
    ----------
    feval : callable
    name : str, optional
        Default: feval's name (``custom(<lambda>)`` for lambdas).
    allow_extra_outputs : bool, default False
        Allow more predictions than labels.
    """

    def __init__(self, feval, name=None, allow_extra_outputs=False, output_names=None,
                 label_names=None):
        if name is None:
            name = feval.__name__
            if "<" in name:
                name = f"custom({name})"
        super().__init__(name, feval=feval, allow_extra_outputs=allow_extra_outputs,
                         output_names=output_names, label_names=label_names,
                         has_global_stats=True)
        self._feval = feval
        self._allow_extra_outputs = allow_extra_outputs

    def update(self, labels, preds):
        if not self._allow_extra_outputs:
            labels, preds = check_label_shapes(labels, preds, True)
        for pred, label in zip(preds, labels):
            reval = self._feval(_host(label), _host(pred))
            if isinstance(reval, tuple):
                self._add(*reval)
            else:
                self._add(reval, 1)

    def get_config(self):
        raise NotImplementedError("CustomMetric cannot be serialized")


def np(numpy_feval, name=None, allow_extra_outputs=False):  # pylint: disable=invalid-name
    """A CustomMetric from a function of NumPy arrays ``(label, pred) -> value``."""
    def feval(label, pred):
        return numpy_feval(label, pred)
    feval.__name__ = numpy_feval.__name__
    return CustomMetric(feval, name, allow_extra_outputs)
