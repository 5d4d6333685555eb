"""mx.np.random samplers added for NumPy's signatures (numpy/random.py): array-valued
gamma/beta/chisquare parameters, power/logistic/gumbel, batched multivariate_normal.
Shapes against NumPy's rules, values against the distributions' moments."""
import numpy as np
import pytest

import mxnet as mx
from mxnet import np as mnp
from mxnet.base import MXNetError

N = 20000


@pytest.fixture(autouse=True)
def _seeded():
    mx.random.seed(123)


@mx.util.use_np
def test_gamma_with_array_parameters_broadcasts_and_has_the_right_means():
    shape = mnp.array([1.0, 4.0])
    out = mnp.random.gamma(shape, 2.0, size=(N, 2), dtype="float64")
    assert out.shape == (N, 2) and out.dtype == np.float64
    np.testing.assert_allclose(out.asnumpy().mean(axis=0), [2.0, 8.0], rtol=0.05)
    assert mnp.random.gamma(shape).shape == (2,)
    assert mnp.random.gamma(shape, size=(4, 0, 2)).shape == (4, 0, 2)
    with pytest.raises(MXNetError):
        mnp.random.gamma(shape, size=(3,))


@mx.util.use_np
def test_beta_and_chisquare_with_array_parameters():
    a = mnp.array([2.0])
    b = mnp.random.beta(a, mnp.array([6.0]), size=(N,))
    assert b.shape == (N,)
    v = b.asnumpy()
    assert (v > 0).all() and (v < 1).all()
    assert v.mean() == pytest.approx(0.25, rel=0.05)
    c = mnp.random.chisquare(mnp.array([3.0]).astype("float16"), size=(N,), dtype="float64")
    assert c.dtype == np.float64
    assert c.asnumpy().mean() == pytest.approx(3.0, rel=0.05)
    assert mnp.random.chisquare(mnp.array([1.0])).shape == (1,)


@pytest.mark.parametrize("name", ["power", "pareto", "weibull"])
def test_one_parameter_samplers_need_positive_a(name):
    fn = getattr(mnp.random, name)
    for bad in (0, -1):
        with pytest.raises(ValueError):
            fn(bad)


def test_power_distribution():
    v = mnp.random.power(3.0, size=(N,)).asnumpy()
    assert (v >= 0).all() and (v <= 1).all()
    assert v.mean() == pytest.approx(3.0 / 4.0, rel=0.02)          # a / (a + 1)


@pytest.mark.parametrize("name,mean,var", [
    ("logistic", 1.0, (np.pi * 2.0) ** 2 / 3), ("gumbel", 1.0 + 2.0 * np.euler_gamma,
                                                (np.pi * 2.0) ** 2 / 6)])
def test_location_scale_samplers_moments(name, mean, var):
    v = getattr(mnp.random, name)(1.0, 2.0, size=(4 * N,)).asnumpy().astype(np.float64)
    assert v.mean() == pytest.approx(mean, abs=0.1)
    assert v.var() == pytest.approx(var, rel=0.08)


@pytest.mark.parametrize("name", ["normal", "logistic", "gumbel"])
def test_location_scale_gradients(name):
    loc, scale = mnp.zeros((4, 1)), mnp.ones((3,))
    loc.attach_grad()
    scale.attach_grad()
    with mx.autograd.record():
        draws = getattr(mnp.random, name)(loc=loc, scale=scale, size=(2, 4, 3))
    draws.backward()
    assert draws.shape == (2, 4, 3)
    # d(sum)/d(loc) counts the draws each loc entry moves; d/d(scale) sums the
    # standardised draws (draws - loc) / scale = draws here
    np.testing.assert_allclose(loc.grad.asnumpy(), np.full((4, 1), 6.0))
    np.testing.assert_allclose(scale.grad.asnumpy(), draws.asnumpy().sum(axis=(0, 1)),
                               rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("mean_shape,cov_shape,size", [
    ((2,), (2, 2), None), ((3, 2), (2, 2), (5,)), ((2,), (3, 2, 2), 1),
    ((3, 2), (4, 3, 2, 2), (2, 0))])
@mx.util.use_np
def test_multivariate_normal_shapes(mean_shape, cov_shape, size):
    mean = mnp.zeros(mean_shape)
    cov = mnp.array(np.broadcast_to(np.array([[1.0, 0.5], [0.5, 2.0]]), cov_shape))
    out = mnp.random.multivariate_normal(mean, cov, size)
    batch = np.broadcast_shapes(mean_shape[:-1], cov_shape[:-2])
    extra = () if size is None else ((size,) if isinstance(size, int) else size)
    assert out.shape == tuple(extra) + batch + (2,)


def test_multivariate_normal_covariance():
    cov = np.array([[1.0, 0.5], [0.5, 2.0]])
    out = mnp.random.multivariate_normal(mnp.array([1.0, -1.0]), mnp.array(cov), (N,))
    v = out.asnumpy().astype(np.float64)
    np.testing.assert_allclose(v.mean(axis=0), [1.0, -1.0], atol=0.05)
    np.testing.assert_allclose(np.cov(v.T), cov, atol=0.08)


def test_dir_lists_the_samplers_not_imported_helpers():
    # MXNet 1.9.1: the public names of dir(mx.np.random) are samplers only
    # (no MXNetError / NDArray / helper imports), as the d2l "Documentation" page shows.
    public = [n for n in dir(mnp.random) if not n.startswith("_")]
    assert public == sorted(mnp.random.__all__)
    for name in ("normal", "uniform", "multinomial", "randint", "choice", "shuffle"):
        assert name in public
    for helper in ("MXNetError", "NDArray", "dtype_np", "wrap"):
        assert helper not in public
