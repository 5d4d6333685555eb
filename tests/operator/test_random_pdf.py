"""random_pdf_* against SciPy's densities (is_log too) and numeric gradients with
respect to the sample and every parameter, nd and sym paths."""
import numpy as np
import pytest

import mxnet as mx

stats = pytest.importorskip("scipy.stats")
from opcheck import F32_64, Case, check  # noqa: E402

rs = np.random.RandomState(8)
B, N = 2, 3


def _cols(v):
    return v[:, None]


CASES = {
    "normal": ([rs.normal(size=(B, N)), rs.normal(size=B), rs.uniform(0.5, 2, B)],
               lambda x, mu, s: stats.norm.logpdf(x, _cols(mu), _cols(s))),
    "uniform": ([rs.uniform(0.2, 0.8, (B, N)), rs.uniform(-1, 0, B), rs.uniform(1, 2, B)],
                lambda x, lo, hi: stats.uniform.logpdf(x, _cols(lo), _cols(hi - lo))),
    "gamma": ([rs.uniform(0.5, 3, (B, N)), rs.uniform(1, 3, B), rs.uniform(0.5, 2, B)],
              lambda x, a, b: stats.gamma.logpdf(x, _cols(a), scale=1 / _cols(b))),
    "exponential": ([rs.uniform(0.1, 3, (B, N)), rs.uniform(0.5, 2, B)],
                    lambda x, lam: stats.expon.logpdf(x, scale=1 / _cols(lam))),
    "poisson": ([rs.randint(0, 6, (B, N)).astype(float), rs.uniform(1, 4, B)],
                lambda x, lam: stats.poisson.logpmf(x, _cols(lam))),
    "negative_binomial": ([rs.randint(0, 6, (B, N)).astype(float), rs.uniform(1, 4, B),
                           rs.uniform(0.2, 0.8, B)],
                          lambda x, k, p: stats.nbinom.logpmf(x, _cols(k), _cols(p))),
    "generalized_negative_binomial": (
        [rs.randint(0, 6, (B, N)).astype(float), rs.uniform(1, 4, B), rs.uniform(0.2, 1, B)],
        lambda x, mu, al: stats.nbinom.logpmf(x, 1 / _cols(al), 1 / (1 + _cols(mu) * _cols(al)))),
}


@pytest.mark.parametrize("dist", sorted(CASES))
@pytest.mark.parametrize("is_log", [False, True])
def test_pdf(dist, is_log):
    inputs, logpdf = CASES[dist]

    def ref(*xs):
        lp = logpdf(*[x.astype(np.float64) for x in xs])
        return lp if is_log else np.exp(lp)
    # the sample of a discrete distribution is not differentiable in SciPy's sense
    nodes = None if dist not in ("poisson", "negative_binomial",
                                 "generalized_negative_binomial") else \
        list(range(1, len(inputs)))
    check(Case(f"random_pdf_{dist}", ref, kwargs={"is_log": is_log}, ref_kwargs=False,
               inputs=inputs, grad_inputs=nodes))


@pytest.mark.parametrize("dist", ["poisson", "negative_binomial",
                                  "generalized_negative_binomial"])
def test_discrete_samples_get_zero_gradient(dist):
    import mxnet as mx
    inputs = [mx.nd.array(x, dtype="float64") for x in CASES[dist][0]]
    for a in inputs:
        a.attach_grad()
    with mx.autograd.record():
        out = getattr(mx.nd, f"random_pdf_{dist}")(*inputs)
    out.backward()
    assert not inputs[0].grad.asnumpy().any()
    assert inputs[1].grad.asnumpy().any()


def test_pdf_dirichlet():
    alpha = rs.uniform(0.5, 3, (B, 3))
    sample = rs.dirichlet([1, 1, 1], size=(B, N))

    def ref(x, a):
        # scipy wants the sample on the simplex to the last bit; float32 rounding moves
        # it off by ~1e-8, far below float32's tolerance
        return np.array([[stats.dirichlet.pdf(x[i, j] / x[i, j].sum(), a[i]) for j in range(N)]
                         for i in range(B)])
    check(Case("random_pdf_dirichlet", ref, inputs=[sample, alpha], dtypes=F32_64))


def test_every_pdf_operator_is_checked():
    """The operators test_pdf covers, by their registered names."""
    names = {"random_pdf_uniform", "random_pdf_normal", "random_pdf_gamma",
             "random_pdf_exponential", "random_pdf_poisson", "random_pdf_negative_binomial",
             "random_pdf_generalized_negative_binomial"}
    assert names <= {f"random_pdf_{d}" for d in CASES}
    for name in names:
        assert callable(getattr(mx.nd, name)) and callable(getattr(mx.sym, name))


def test_parameters_lead_the_sample_shape():
    # one parameter set per leading index, any number of draw axes after it
    from scipy import stats
    rs = np.random.RandomState(2)
    sample = rs.normal(size=(2, 2, 3, 4))
    mu, sigma = rs.normal(size=(2, 2)), rs.uniform(0.5, 2, size=(2, 2))
    got = mx.nd.random_pdf_normal(mx.nd.array(sample, dtype="float64"),
                                  mx.nd.array(mu, dtype="float64"),
                                  mx.nd.array(sigma, dtype="float64")).asnumpy()
    want = stats.norm.pdf(sample, mu[..., None, None], sigma[..., None, None])
    np.testing.assert_allclose(got, want, rtol=1e-10)
    # gradients of the parameters sum over their draws (numeric check)
    sym = mx.sym.random_pdf_normal(mx.sym.var("s"), mx.sym.var("m"), mx.sym.var("d"))
    mx.test_utils.check_numeric_gradient(sym, [sample, mu, sigma], grad_nodes=["m", "d"],
                                         rtol=1e-3, atol=1e-4, dtype=np.float64)
    alpha = rs.uniform(0.5, 2, size=(2, 3))
    x = rs.dirichlet([1, 1, 1], size=(2, 5, 4))
    got = mx.nd.random_pdf_dirichlet(mx.nd.array(x, dtype="float64"),
                                     mx.nd.array(alpha, dtype="float64")).asnumpy()
    want = np.array([[[stats.dirichlet.pdf(x[i, j, k], alpha[i]) for k in range(4)]
                      for j in range(5)] for i in range(2)])
    np.testing.assert_allclose(got, want, rtol=1e-8)
    with pytest.raises(mx.base.MXNetError):
        mx.nd.random_pdf_normal(mx.nd.ones((2, 2, 3)), mx.nd.zeros((2, 3)), mx.nd.ones((2, 3)))
