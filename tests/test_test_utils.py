"""mx.test_utils: MXNet 1.9.1's helpers (tolerances, comparisons, generators, optimizer
comparison, environment) checked against what they must detect."""
import os

import numpy as np
import pytest

import mxnet as mx
from mxnet import test_utils as tu


def test_star_import_exposes_public_names_like_mxnet():
    namespace = {}
    exec("from mxnet.test_utils import *", namespace)   # noqa: S102
    for name in ("assert_almost_equal", "check_symbolic_forward", "verify_generator",
                 "environment", "retry", "np", "mx", "default_context", "rand_shape_nd"):
        assert name in namespace, name


def test_default_tolerances_follow_dtype():
    assert tu.get_tols(np.float16(1), np.float16(1), None, None) == (1e-2, 1e-1)
    assert tu.get_tols(np.zeros(1, np.float32), np.zeros(1, np.float64), None, None) == \
        (1e-4, 1e-3)
    assert tu.get_rtol() == 1e-5 and tu.get_atol(0.5) == 0.5


def test_assert_almost_equal_detects_and_reports():
    tu.assert_almost_equal(np.ones(3), np.ones(3) + 1e-9)
    with pytest.raises(AssertionError, match="Location of maximum error: \\(2,\\)"):
        tu.assert_almost_equal(np.array([1., 2., 3.]), np.array([1., 2., 4.]),
                               rtol=1e-5, atol=1e-5)
    with pytest.raises(AssertionError):
        tu.assert_almost_equal(np.ones((2, 1)), np.ones((2, 2)), use_broadcast=False)
    tu.assert_almost_equal_ignore_nan(np.array([np.nan, 1.]), np.array([5., 1.]))
    tu.assert_almost_equal_with_err(np.array([1., 2., 3., 9.]), np.array([1., 2., 3., 4.]),
                                    rtol=1e-5, atol=1e-5, etol=0.3)
    with pytest.raises(AssertionError):
        tu.assert_almost_equal_with_err(np.array([1., 9.]), np.array([1., 4.]),
                                        rtol=1e-5, atol=1e-5, etol=0.3)


def test_retry_reruns_until_success():
    calls = []

    @tu.retry(3)
    def flaky():
        calls.append(1)
        assert len(calls) >= 2
    flaky()
    assert len(calls) == 2

    @tu.retry(2)
    def always():
        raise AssertionError("no")
    with pytest.raises(AssertionError):
        always()


def test_environment_sets_and_restores(monkeypatch):
    monkeypatch.setenv("MXNET_CONF_A", "old")
    monkeypatch.delenv("MXNET_CONF_B", raising=False)
    with tu.environment({"MXNET_CONF_A": "new", "MXNET_CONF_B": "1"}):
        assert os.environ["MXNET_CONF_A"] == "new" and os.environ["MXNET_CONF_B"] == "1"
    assert os.environ["MXNET_CONF_A"] == "old" and "MXNET_CONF_B" not in os.environ
    with tu.environment("MXNET_CONF_A", None):
        assert "MXNET_CONF_A" not in os.environ
    assert os.environ["MXNET_CONF_A"] == "old"


def test_verify_generator_accepts_right_and_rejects_wrong_distribution():
    buckets, probs = tu.gen_buckets_probs_with_ppf(lambda q: q, 5)   # uniform on [0, 1)
    assert probs == [0.2] * 5 and buckets[0] == (0.0, 0.2)
    tu.verify_generator(lambda n: np.random.uniform(size=n), buckets, probs,
                        nsamples=20000, nrepeat=3)
    with pytest.raises(AssertionError, match="Generator test fails"):
        tu.verify_generator(lambda n: np.random.uniform(size=n) ** 2, buckets, probs,
                            nsamples=20000, nrepeat=3)
    p, obs, _ = tu.chi_square_check(lambda n: np.random.randint(0, 2, size=n), [0, 1],
                                    [0.5, 0.5], nsamples=1000)
    assert obs.sum() == 1000 and 0 <= p <= 1


def test_mean_and_var_checks():
    gen = lambda n: np.random.normal(2.0, 3.0, size=n)   # noqa: E731
    assert tu.mean_check(gen, 2.0, 3.0, nsamples=50000)
    assert not tu.mean_check(gen, 3.0, 3.0, nsamples=50000)
    assert tu.var_check(gen, 3.0, nsamples=50000)
    assert not tu.var_check(gen, 1.0, nsamples=50000)


def test_compare_optimizer_catches_a_different_update():
    tu.compare_optimizer(mx.optimizer.SGD(learning_rate=0.1),
                         mx.optimizer.SGD(learning_rate=0.1), (3, 4), np.float32)
    with pytest.raises(AssertionError):
        tu.compare_optimizer(mx.optimizer.SGD(learning_rate=0.1),
                             mx.optimizer.SGD(learning_rate=0.5), (3, 4), np.float32)


def test_check_numeric_gradient_mxnet_form():
    x = mx.sym.Variable("x")
    tu.check_numeric_gradient(mx.sym.square(x), [np.random.uniform(1, 2, (3, 2))],
                              rtol=1e-2, atol=1e-3)
    wrong = mx.sym.BlockGrad(x) * x          # backward misses half of d(x^2)/dx
    with pytest.raises(AssertionError):
        tu.check_numeric_gradient(wrong, [np.random.uniform(1, 2, (3, 2))],
                                  rtol=1e-2, atol=1e-3)


def test_shapes_and_random_helpers():
    for _ in range(20):
        s = tu.rand_shape_nd(3, dim=4)
        assert len(s) == 3 and all(1 <= d <= 4 for d in s)
        a, b = tu.rand_shape_2d(3, 5)
        assert 1 <= a <= 3 and 1 <= b <= 5
    arr = tu.rand_ndarray((4, 5), dtype="float64")
    assert arr.shape == (4, 5) and arr.dtype == np.float64
    assert tu.random_sample(list(range(10)), 4).__len__() == 4
    assert tu.collapse_sum_like(np.ones((2, 3, 4)), (3, 1)).tolist() == [[8.]] * 3
    sparse = tu.rand_ndarray((6, 5), stype="csr", density=0.5)
    assert sparse.stype == "csr" and sparse.shape == (6, 5)
    rsp, (values, rows) = tu.rand_sparse_ndarray((6, 5), "row_sparse", density=0.5)
    assert rsp.stype == "row_sparse" and values.shape == (len(rows), 5)
    np.testing.assert_array_equal(rsp.asnumpy()[rows], values)


def test_same_array_detects_shared_memory():
    a = mx.nd.zeros((4, 2))
    assert tu.same_array(a, a[0:4])
    assert not tu.same_array(a, a.copy())


def test_comparisons_of_large_arrays_match_numpy_isclose(monkeypatch):
    # blocks of a few elements exercise the blockwise comparison on small arrays
    monkeypatch.setattr("mxnet.test_utils_compare._CHUNK", 7)
    rng = np.random.RandomState(0)
    a = rng.uniform(-1, 1, (5, 6, 4)).astype(np.float32)
    b = a + rng.uniform(-2e-5, 2e-5, a.shape).astype(np.float32)
    want = np.isclose(a.astype(np.float64), b.astype(np.float64), rtol=1e-5, atol=1e-6)
    assert not want.all() and want.any()
    assert tu.almost_equal(a, b, rtol=1e-5, atol=1e-6) == bool(want.all())
    bad = np.argwhere(~want)
    with pytest.raises(AssertionError, match=f"{len(bad)} of {a.size} elements differ"):
        tu.assert_almost_equal(a, b, rtol=1e-5, atol=1e-6)
    tu.assert_almost_equal(a, a.copy(), rtol=0, atol=0)
    tu.assert_almost_equal(a.transpose(2, 0, 1), np.ascontiguousarray(a.transpose(2, 0, 1)))
