"""mx.nd.random and the random operators: seeding, moments, shapes, dtypes, errors."""
import numpy as np
import pytest

import mxnet as mx
from mxnet.base import MXNetError

nd = mx.nd
N = 200000          # draws for moment checks (fixed seeds: deterministic)


def draws(fn, seed=11):
    mx.random.seed(seed)
    return fn().asnumpy().astype(np.float64)


SCALAR_CASES = [
    # (call, mean, variance)
    (lambda: nd.random.uniform(-2, 3, shape=N), 0.5, 25 / 12),
    (lambda: nd.random.normal(1.5, 2.0, shape=N), 1.5, 4.0),
    (lambda: nd.random.exponential(0.5, shape=N), 0.5, 0.25),
    (lambda: nd.random.gamma(2.0, 1.5, shape=N), 3.0, 4.5),
    (lambda: nd.random.poisson(4.0, shape=N), 4.0, 4.0),
    (lambda: nd.random.negative_binomial(3, 0.4, shape=N), 4.5, 11.25),
    (lambda: nd.random.generalized_negative_binomial(2.0, 0.5, shape=N), 2.0, 4.0),
    (lambda: nd.random.generalized_negative_binomial(2.0, 0.0, shape=N), 2.0, 2.0),
    (lambda: nd.random.randint(-3, 7, shape=N), 1.5, (10 ** 2 - 1) / 12),
    (lambda: nd.random.randn(N, loc=-1, scale=0.5), -1.0, 0.25),
]


@pytest.mark.parametrize("i", range(len(SCALAR_CASES)))
def test_moments(i):
    fn, mean, var = SCALAR_CASES[i]
    x = draws(fn)
    assert x.shape == (N,)
    se = np.sqrt(var / N)
    assert abs(x.mean() - mean) < 6 * se + 1e-12, (x.mean(), mean)
    assert abs(x.var() / var - 1) < 0.05, (x.var(), var)


@pytest.mark.parametrize("i", range(len(SCALAR_CASES)))
def test_same_seed_same_numbers(i):
    fn = SCALAR_CASES[i][0]
    a, b = draws(fn, 5), draws(fn, 5)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, draws(fn, 6))


def test_seed_reproduces_a_sequence():
    def run():
        mx.random.seed(123)
        return [nd.random.uniform(shape=(3,)).asnumpy(), nd.random.normal(shape=(2, 2)).asnumpy(),
                nd.random.shuffle(nd.arange(8)).asnumpy(),
                nd.random.multinomial(nd.array([0.3, 0.7]), shape=5).asnumpy(),
                nd.random.uniform(nd.array([0, 1]), nd.array([1, 2]), shape=3).asnumpy()]
    for a, b in zip(run(), run()):
        np.testing.assert_array_equal(a, b)


def test_seed_reproduces_engine_pushed_draws(monkeypatch):
    """Inputs above MXNET_ASYNC_MIN_ELEMS go through the threaded engine."""
    from mxnet.ndarray import dispatch
    monkeypatch.setattr(dispatch, "ASYNC_MIN_ELEMS", 1 << 17)

    def run():
        mx.random.seed(5)
        a = nd.random.uniform(nd.zeros((300000,)), nd.ones((300000,)), shape=2)
        b = nd.random.shuffle(nd.arange(300000))
        c = nd.random.multinomial(nd.ones((200000, 3)), shape=1)
        return [x.asnumpy() for x in (a, b, c)]
    for a, b in zip(run(), run()):
        np.testing.assert_array_equal(a, b)


def test_uniform_range():
    x = draws(lambda: nd.random.uniform(2, 5, shape=(1000,)))
    assert x.min() >= 2 and x.max() < 5
    x = draws(lambda: nd.random.randint(2, 5, shape=(1000,)))
    assert set(np.unique(x)) == {2, 3, 4}


@pytest.mark.parametrize("dtype", [None, "float16", "float32", "float64"])
def test_dtypes_and_shapes(dtype):
    kw = {} if dtype is None else {"dtype": dtype}
    want = np.dtype(dtype or "float32")
    for fn in (nd.random.uniform, nd.random.normal, nd.random.exponential, nd.random.gamma,
               nd.random.poisson, nd.random.negative_binomial,
               nd.random.generalized_negative_binomial):
        out = fn(shape=(2, 3), **kw)
        assert out.shape == (2, 3) and np.dtype(out.dtype) == want, fn.__name__
    out = nd.random.normal(nd.array([0, 1]), nd.array([1, 2]), shape=(3, 4), **kw)
    assert out.shape == (2, 3, 4) and np.dtype(out.dtype) == want


def test_defaults_like_mxnet():
    assert nd.random.uniform().shape == (1,)            # front end: shape (1,) by default
    assert nd.random.randint(0, 4).dtype == np.int32
    assert nd.random.randint(0, 4, shape=(2,), dtype="int64").dtype == np.int64
    assert nd.random.uniform(nd.array([0, 1]), nd.array([1, 2])).shape == (2,)
    assert nd.random.poisson(nd.array([1, 2], dtype="float64"), shape=3).dtype == np.float32
    assert nd.random.uniform(0, 1, 5).shape == (5,)
    out = nd.zeros((2, 3))
    assert nd.random.uniform(out=out) is out and out.asnumpy().max() > 0


def test_sample_ops_per_element():
    mx.random.seed(3)
    low, high = nd.array([0, 10, -5]), nd.array([1, 20, -4])
    x = nd.random.uniform(low, high, shape=(4000,)).asnumpy()
    assert x.shape == (3, 4000)
    for i, (lo, hi) in enumerate([(0, 1), (10, 20), (-5, -4)]):
        assert lo <= x[i].min() and x[i].max() < hi
        assert abs(x[i].mean() - (lo + hi) / 2) < 0.05 * (hi - lo)
    mu, sigma = nd.array([[0.0, 5.0]]), nd.array([[1.0, 0.1]])
    x = nd.sample_normal(mu, sigma, shape=(2, 5000)).asnumpy()
    assert x.shape == (1, 2, 2, 5000)
    np.testing.assert_allclose(x.reshape(2, -1).mean(1), [0, 5], atol=0.05)
    np.testing.assert_allclose(x.reshape(2, -1).std(1), [1, 0.1], rtol=0.05)
    lam = nd.array([1.0, 30.0])
    x = nd.sample_poisson(lam, shape=(20000,)).asnumpy()
    np.testing.assert_allclose(x.mean(1), [1, 30], rtol=0.03)
    x = nd.sample_exponential(nd.array([0.5]), shape=(20000,)).asnumpy()   # rate 0.5
    np.testing.assert_allclose(x.mean(), 2.0, rtol=0.05)
    x = nd.sample_gamma(nd.array([2.0]), nd.array([3.0]), shape=(20000,)).asnumpy()
    np.testing.assert_allclose(x.mean(), 6.0, rtol=0.05)
    x = nd.sample_negative_binomial(nd.array([3.0]), nd.array([0.4]), shape=(20000,))
    np.testing.assert_allclose(x.asnumpy().mean(), 4.5, rtol=0.05)
    x = nd.sample_generalized_negative_binomial(nd.array([2.0, 3.0]), nd.array([0.5, 0.0]),
                                                shape=(20000,)).asnumpy()
    np.testing.assert_allclose(x.mean(1), [2, 3], rtol=0.05)
    np.testing.assert_allclose(x.var(1), [4, 3], rtol=0.1)


def test_exponential_array_scale():
    from mxnet.operator.registry import all_ops
    if "_rdiv_scalar" not in all_ops():
        pytest.skip("needs the elementwise scalar operators (1 / scale)")
    x = nd.random.exponential(nd.array([2.0]), shape=(20000,)).asnumpy()   # scale 2
    np.testing.assert_allclose(x.mean(), 2.0, rtol=0.05)


def test_like_ops():
    data = nd.zeros((3, 4), dtype="float64")
    out = nd.random.uniform_like(data, low=2, high=3)
    assert out.shape == (3, 4) and out.dtype == np.float64
    assert 2 <= out.asnumpy().min() and out.asnumpy().max() < 3
    assert nd.random.normal_like(data).shape == (3, 4)
    assert nd.random.poisson_like(nd.zeros((5,)), lam=2).shape == (5,)
    x = nd.random.uniform_like(data, 5, 6).asnumpy()         # positional low, high
    assert 5 <= x.min() and x.max() < 6


def test_multinomial():
    mx.random.seed(1)
    prob = np.array([[0.1, 0.2, 0.7], [0.5, 0.0, 0.5]])
    x = nd.random.multinomial(nd.array(prob), shape=20000).asnumpy()
    assert x.shape == (2, 20000) and x.dtype == np.int32
    for r in range(2):
        freq = np.bincount(x[r], minlength=3) / x.shape[1]
        np.testing.assert_allclose(freq, prob[r], atol=0.015)
    assert (x[1] != 1).all()                                # zero probability never drawn
    assert nd.random.multinomial(nd.array([0.5, 0.5])).shape == (1,)
    s, lp = nd.random.multinomial(nd.array(prob), shape=(2, 3), get_prob=True, dtype="float32")
    assert s.shape == lp.shape == (2, 2, 3) and s.dtype == np.float32
    np.testing.assert_allclose(
        lp.asnumpy(), np.log(np.take_along_axis(prob, s.asnumpy().reshape(2, -1).astype(int),
                                                axis=1)).reshape(2, 2, 3), rtol=1e-6)


def test_multinomial_gradient():
    prob = np.array([[0.2, 0.3, 0.5], [0.1, 0.1, 0.8]])
    p = nd.array(prob)
    p.attach_grad()
    with mx.autograd.record():
        s, lp = nd.random.multinomial(p, shape=4, get_prob=True)
    head = np.random.rand(2, 4)
    lp.backward(nd.array(head))
    idx = s.asnumpy()
    want = np.zeros_like(prob)
    for r in range(2):                 # d/dp sum(head * log p[idx]) = sum head / p[idx]
        np.add.at(want[r], idx[r], head[r] / prob[r, idx[r]])
    np.testing.assert_allclose(p.grad.asnumpy(), want, rtol=1e-5)


def test_shuffle_is_permutation():
    x = nd.random.shuffle(nd.arange(100)).asnumpy()
    assert sorted(x) == list(range(100)) and not (x == np.arange(100)).all()
    m = np.arange(30).reshape(10, 3)
    y = nd.shuffle(nd.array(m)).asnumpy()
    assert sorted(map(tuple, y)) == sorted(map(tuple, m))    # rows kept whole


def test_legacy_aliases_and_ops():
    for name in ["random_uniform", "random_normal", "random_randint", "random_exponential",
                 "random_gamma", "random_poisson", "random_negative_binomial",
                 "random_generalized_negative_binomial", "sample_uniform", "sample_normal",
                 "sample_exponential", "sample_gamma", "sample_poisson",
                 "sample_negative_binomial", "sample_generalized_negative_binomial",
                 "sample_multinomial", "shuffle", "uniform", "normal"]:
        assert callable(getattr(nd, name)), name
    assert nd.random_uniform(low=0, high=1, shape=(2, 2)).shape == (2, 2)
    assert nd.random_normal(shape=(3,), dtype="float64").dtype == np.float64
    assert nd._internal._random_randint(low=0, high=3, shape=(2,)).dtype == np.int32
    assert nd.sample_uniform(nd.array([0, 1]), nd.array([1, 2]), 3).shape == (2, 3)
    for name in ["uniform", "normal", "randn", "randint", "exponential", "gamma", "poisson",
                 "negative_binomial", "generalized_negative_binomial", "multinomial",
                 "shuffle", "seed"]:
        assert callable(getattr(mx.random, name)), name
    mx.random.seed(9)
    a = mx.random.uniform(shape=(4,)).asnumpy()
    mx.random.seed(9)
    np.testing.assert_array_equal(a, nd.random.uniform(shape=(4,)).asnumpy())


def test_ctx_keyword():
    out = nd.random.uniform(shape=(2,), ctx=mx.cpu(0))
    assert out.context == mx.cpu(0)
    assert nd.random.normal(shape=(2,), ctx="cpu(0)").context == mx.cpu(0)
    assert nd.random_uniform(shape=(2,), ctx=mx.cpu(0)).context == mx.cpu(0)
    with mx.cpu(0):
        assert nd.random_uniform(shape=(2,)).context == mx.cpu(0)


@pytest.mark.parametrize("call", [
    lambda: nd.random.uniform(2, 1, shape=(2,)),
    lambda: nd.random.normal(0, -1, shape=(2,)),
    lambda: nd.random.gamma(-1, 1, shape=(2,)),
    lambda: nd.random.gamma(1, 0, shape=(2,)),
    lambda: nd.random.exponential(-1, shape=(2,)),
    lambda: nd.random.poisson(-1, shape=(2,)),
    lambda: nd.random.negative_binomial(-1, 0.5, shape=(2,)),
    lambda: nd.random.generalized_negative_binomial(-1, 1, shape=(2,)),
    lambda: nd.random.randint(5, 2, shape=(2,)),
    lambda: nd.random.randint(2, 2, shape=(2,)),
    lambda: nd.random.uniform(shape=(2,), dtype="int32"),
    lambda: nd.random.randint(0, 2, shape=(2,), dtype="float32"),
    lambda: nd.random.uniform(nd.array([1]), 2),
    lambda: nd.random.uniform(nd.array([0, 1]), nd.array([1, 2, 3])),
    lambda: nd.random_uniform(),
    lambda: nd.random.uniform(shape=(2, 0)),
    lambda: nd.random.randn(),
    lambda: nd.random.multinomial(nd.array([0.5, 0.5]), dtype="int64"),
])
def test_errors(call):
    with pytest.raises(MXNetError):
        call()
        mx.nd.waitall()      # a failure while computing surfaces at the sync point


@pytest.mark.parametrize("dtype, limit", [("uint8", 255), ("float16", 2 ** 11),
                                          ("float32", 2 ** 24)])
def test_multinomial_refuses_a_dtype_that_cannot_hold_the_indices(dtype, limit):
    # limit is the largest integer the dtype holds exactly (NumPy agrees: limit + 1
    # rounds back to limit in the float types, wraps in uint8)
    assert int(np.array(limit + 1).astype(dtype)) != limit + 1
    assert int(np.array(limit).astype(dtype)) == limit
    probs = mx.nd.ones((1, limit + 1)) / (limit + 1)
    draws = mx.nd.random.multinomial(probs, shape=4, dtype=dtype).asnumpy()
    assert ((draws >= 0) & (draws <= limit)).all()
    with pytest.raises(MXNetError, match="cannot hold the category indices"):
        mx.nd.random.multinomial(mx.nd.ones((limit + 2,)), dtype=dtype)
