"""_sample_unique_zipfian against the log-uniform law written here with NumPy."""
import numpy as np
import pytest

import mxnet as mx
from mxnet.base import MXNetError


def _zipf_law(range_max):
    k = np.arange(range_max, dtype=np.float64)
    return (np.log(k + 2) - np.log(k + 1)) / np.log(range_max + 1)


def test_single_draws_follow_the_log_uniform_law():
    range_max, rows = 12, 30000
    classes, trials = mx.nd._internal._sample_unique_zipfian(range_max, shape=(rows, 1))
    assert classes.dtype == np.int64 and trials.dtype == np.int64
    assert classes.shape == (rows, 1) and trials.shape == (rows,)
    np.testing.assert_array_equal(trials.asnumpy(), 1)      # one draw is always new
    counts = np.bincount(classes.asnumpy().ravel(), minlength=range_max)
    expected = _zipf_law(range_max) * rows
    chi2 = ((counts - expected) ** 2 / expected).sum()
    assert chi2 < 40            # 11 degrees of freedom: p < 1e-4 beyond this


def test_rows_are_distinct_and_trials_count_the_draws():
    classes, trials = mx.nd._internal._sample_unique_zipfian(50, shape=(6, 20))
    c, t = classes.asnumpy(), trials.asnumpy()
    for row in c:
        assert np.unique(row).size == 20 and row.min() >= 0 and row.max() < 50
    assert (t >= 20).all()
    # every class available: all of them come up, after at least range_max draws
    classes, trials = mx.nd._internal._sample_unique_zipfian(8, shape=(3, 8))
    for row in classes.asnumpy():
        np.testing.assert_array_equal(np.sort(row), np.arange(8))
    assert (trials.asnumpy() >= 8).all()


def test_seed_replays_and_errors():
    mx.random.seed(7)
    a = mx.nd._internal._sample_unique_zipfian(100, shape=(2, 10))[0].asnumpy()
    mx.random.seed(7)
    b = mx.nd._internal._sample_unique_zipfian(100, shape=(2, 10))[0].asnumpy()
    np.testing.assert_array_equal(a, b)
    sym = mx.sym._internal._sample_unique_zipfian(10, shape=(2, 5))
    assert len(sym.list_outputs()) == 2
    with pytest.raises(MXNetError):
        mx.nd._internal._sample_unique_zipfian(10, shape=(5,))
    with pytest.raises(MXNetError, match="distinct"):
        mx.nd._internal._sample_unique_zipfian(3, shape=(1, 5))[0].asnumpy()
