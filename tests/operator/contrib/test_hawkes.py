"""hawkesll against a per-event loop written from the Hawkes likelihood, and numeric
gradients for lda, alpha and beta."""
import math

import numpy as np

import mxnet as mx
from mxnet.test_utils import assert_almost_equal, check_numeric_gradient

nd = mx.nd


def ref_hawkes(lda, alpha, beta, state, lags, marks, valid, max_time):
    N, K = lda.shape
    ll, out = np.zeros(N), np.zeros((N, K))
    for n in range(N):
        times = {k: [] for k in range(K)}
        t = 0.0
        total = 0.0
        for j in range(int(valid[n])):
            t += lags[n, j]
            k = int(marks[n, j])
            mem = state[n, k] * math.exp(-beta[k] * t) + sum(
                math.exp(-beta[k] * (t - u)) for u in times[k])
            total += math.log(lda[n, k] + alpha[k] * beta[k] * mem)
            times[k].append(t)
        T = max_time[n]
        for k in range(K):
            # integral of the intensity over (0, T]
            total -= lda[n, k] * T + alpha[k] * state[n, k] * (1 - math.exp(-beta[k] * T))
            total -= sum(alpha[k] * (1 - math.exp(-beta[k] * (T - u))) for u in times[k])
            out[n, k] = state[n, k] * math.exp(-beta[k] * T) + sum(
                math.exp(-beta[k] * (T - u)) for u in times[k])
        ll[n] = total
    return ll, out


def _inputs():
    r = np.random.RandomState(0)
    N, K, T = 3, 2, 5
    return [r.uniform(0.5, 2, (N, K)), r.uniform(0.1, 0.5, K), r.uniform(0.5, 3, K),
            r.uniform(0, 1, (N, K)), r.uniform(0.1, 1, (N, T)), r.randint(0, K, (N, T)),
            np.array([5, 3, 0]), np.array([6.0, 4.0, 2.0])]


def test_matches_definition():
    x = _inputs()
    arrs = [nd.array(a, dtype="float64") for a in x[:5]] + \
        [nd.array(x[5], dtype="int32"), nd.array(x[6]), nd.array(x[7], dtype="float64")]
    ll, st = nd.contrib.hawkesll(*arrs)
    rl, rs = ref_hawkes(*x)
    assert_almost_equal(ll.asnumpy(), rl, rtol=1e-10, atol=1e-10)
    assert_almost_equal(st.asnumpy(), rs, rtol=1e-10, atol=1e-12)


def test_numeric_gradient():
    x = _inputs()
    rest = [nd.array(x[3], dtype="float64"), nd.array(x[4], dtype="float64"),
            nd.array(x[5], dtype="int32"), nd.array(x[6]), nd.array(x[7], dtype="float64")]
    check_numeric_gradient(lambda a, b, c: nd.contrib.hawkesll(a, b, c, *rest)[0],
                           x[:3], numeric_eps=1e-6, rtol=1e-4, atol=1e-6)
