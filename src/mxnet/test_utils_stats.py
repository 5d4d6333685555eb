"""Statistical checks of random generators for ``mx.test_utils`` (MXNet 1.9.1 names).

A generator is a function ``generator(n)`` returning n samples. ``chi_square_check``
compares the sample counts per bucket with expected probabilities (Pearson's
chi-square test, SciPy); ``verify_generator`` repeats it and asks that enough
repetitions pass; ``mean_check``/``var_check`` compare the sample mean and variance
with the expected ones within confidence bounds.
"""
import numpy as np

__all__ = ["gen_buckets_probs_with_ppf", "mean_check", "var_check", "chi_square_check",
           "verify_generator"]


def _scipy_stats():
    try:
        import scipy.stats
    except ImportError as err:
        raise ImportError("the generator checks of mx.test_utils need scipy "
                          "(pip install scipy)") from err
    return scipy.stats


def gen_buckets_probs_with_ppf(ppf, nbuckets):
    """nbuckets equal-probability buckets [(lo, hi), ...] of a continuous distribution
    given its inverse CDF ppf, and their probabilities (1 / nbuckets each)."""
    if nbuckets <= 0:
        raise ValueError("gen_buckets_probs_with_ppf: nbuckets must be positive")
    probs = [1.0 / nbuckets] * nbuckets
    buckets = [(ppf(i / float(nbuckets)), ppf((i + 1) / float(nbuckets)))
               for i in range(nbuckets)]
    return buckets, probs


def mean_check(generator, mu, sigma, nsamples=1000000):
    """Whether the mean of nsamples samples lies within mu +- 3 sigma / sqrt(nsamples)."""
    samples = np.array(generator(nsamples))
    half_width = 3.0 * sigma / np.sqrt(nsamples)
    mean = samples.mean()
    return bool(mu - half_width < mean < mu + half_width)


def var_check(generator, sigma, nsamples=1000000):
    """Whether the sample variance lies inside the 99.7% chi-square interval of sigma**2."""
    stats = _scipy_stats()
    samples = np.array(generator(nsamples))
    dof = nsamples - 1
    low = sigma ** 2 * stats.chi2.ppf(0.0015, dof) / dof
    high = sigma ** 2 * stats.chi2.ppf(0.9985, dof) / dof
    return bool(low < samples.var(ddof=1) < high)


def chi_square_check(generator, buckets, probs, nsamples=1000000):
    """Pearson's chi-square test of generator against bucket probabilities.

    buckets is a list of (low, high) intervals (continuous: ascending, disjoint) or a
    list of values (discrete). Returns (p value, observed counts, expected counts).
    """
    stats = _scipy_stats()
    if not isinstance(buckets, list):
        raise TypeError("chi_square_check: buckets must be a list")
    if len(probs) != len(buckets):
        raise ValueError("chi_square_check: one probability per bucket is required")
    samples = np.asarray(generator(nsamples))
    expected = (nsamples * np.array(probs, dtype=np.float32)).astype(np.int32)
    observed = np.zeros(len(buckets), dtype=np.int64)
    if isinstance(buckets[0], (list, tuple)):
        edges = np.zeros(len(buckets) * 2, dtype=np.float32)
        for i, (low, high) in enumerate(buckets):
            if low > high or (i + 1 < len(buckets) and high > buckets[i + 1][0]):
                raise ValueError("chi_square_check: buckets must be ascending and disjoint")
            edges[2 * i], edges[2 * i + 1] = low, high
        # searchsorted gives 2i+1 inside bucket i; a sample in the gap before bucket i
        # (or below the first) gives 2i and is counted with bucket i, as MXNet does
        ids = np.searchsorted(edges, samples, side="right") // 2
        for i in range(len(buckets)):
            observed[i] = int(np.sum(ids == i))
    else:
        for i, value in enumerate(buckets):
            observed[i] = int(np.sum(samples == value))
    # SciPy (>= 1.9) requires both frequency vectors to have the same total; MXNet's
    # truncated integer expectations rarely do. Compare the observed counts with the
    # bucket probabilities scaled to the same total: the same test, conditioned on
    # the sample landing in one of the buckets.
    probs = np.asarray(probs, dtype=np.float64)
    scaled = probs / probs.sum() * observed.sum()
    _, p = stats.chisquare(f_obs=observed, f_exp=scaled)
    return p, observed, expected


def verify_generator(generator, buckets, probs, nsamples=1000000, nrepeat=5,
                     success_rate=0.2, alpha=0.05):
    """Run chi_square_check nrepeat times; fail unless at least success_rate of the runs
    have p > alpha. Returns the list of p values."""
    results = [chi_square_check(generator, buckets, probs, nsamples)
               for _ in range(nrepeat)]
    p_values = [r[0] for r in results]
    passed = int((np.array(p_values) > alpha).sum())
    if passed < nrepeat * success_rate:
        raise AssertionError(
            f"Generator test fails, Chi-square p={p_values}, "
            f"obs_freq={[r[1].tolist() for r in results]}, "
            f"expected_freq={[r[2].tolist() for r in results]}\n"
            f"buckets={buckets}, probs={probs}")
    return p_values
