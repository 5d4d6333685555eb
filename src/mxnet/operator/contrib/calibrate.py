"""Entropy (KL-divergence) calibration of quantization thresholds: the
``calibrate_entropy`` operator and the NumPy function ``optimal_threshold`` that
``mx.contrib.quantization`` uses for ``calib_mode='entropy'``.

Given a symmetric histogram of a layer's outputs (an odd number of bins around zero),
every candidate threshold t (the edge of a window of 2i + 1 central bins, i from
num_quantized_bins // 2 to the middle) is scored: the reference distribution p is the
window with the outside counts folded into its end bins; q merges the window into
``num_quantized_bins`` bins and spreads each merged count evenly over its non-empty
bins. Both are smoothed (empty bins get a small mass taken from the others) and the
candidate with the least KL(p || q) wins.
"""
import numpy as np

from ...base import MXNetError
from ..params import Int, Schema
from ..registry import Op, ShapeError, register
from ._common import store_all

__all__ = ["CalibrateEntropy", "optimal_threshold", "smooth_distribution"]


def smooth_distribution(p, eps=0.0001):
    """p with every zero bin raised to eps and the same total taken evenly from the
    non-zero bins; ValueError when p is all zeros or a bin would turn negative."""
    zeros = p == 0
    n_zeros = int(zeros.sum())
    n_nonzeros = p.size - n_zeros
    if not n_nonzeros:
        raise ValueError("the distribution has no mass")
    eps1 = eps * n_zeros / n_nonzeros
    out = p.astype(np.float32) + np.where(zeros, eps, -eps1).astype(np.float32)
    if (out <= 0).any():
        raise ValueError("smoothing made a bin non-positive")
    return out


def _kl(p, q):
    """KL(p || q) of two unnormalised distributions (normalised first)."""
    p = p.astype(np.float64) / p.sum()
    q = q.astype(np.float64) / q.sum()
    mask = p > 0
    return float(np.sum(p[mask] * np.log(p[mask] / q[mask])))


def optimal_threshold(hist, hist_edges, num_quantized_bins=255):
    """(threshold, divergence) minimising KL(p || q) over the candidate windows of the
    symmetric histogram ``hist`` (``hist_edges``: its num_bins + 1 edges)."""
    hist = np.asarray(hist, np.float64).reshape(-1)
    edges = np.asarray(hist_edges, np.float64).reshape(-1)
    nb = hist.size
    if edges.size != nb + 1:
        raise MXNetError(f"calibrate_entropy: hist_edges must have {nb + 1} elements for "
                         f"{nb} bins, got {edges.size}")
    zero = nb // 2
    half = num_quantized_bins // 2
    if zero < half:
        raise MXNetError(f"calibrate_entropy: {nb} bins are fewer than "
                         f"num_quantized_bins={num_quantized_bins}")
    csum = np.concatenate([[0.0], np.cumsum(hist)])
    best_th, best_div = None, None
    for i in range(half, zero + 1):
        start, stop = zero - i, zero + i + 1
        window = hist[start:stop]
        p = window.copy()
        p[0] += csum[start]
        p[-1] += csum[-1] - csum[stop]
        nonzero = p != 0
        merged = window.size // num_quantized_bins
        # merged bins: num_quantized_bins groups of `merged`, the remainder to the last
        group = np.minimum(np.arange(window.size) // merged, num_quantized_bins - 1)
        counts = np.bincount(group, weights=window, minlength=num_quantized_bins)
        norms = np.bincount(group, weights=nonzero, minlength=num_quantized_bins)
        per_bin = np.divide(counts, norms, out=np.zeros_like(counts), where=norms != 0)
        q = np.where(nonzero, per_bin[group], 0.0)
        p = smooth_distribution(p)
        try:
            q = smooth_distribution(q)
        except ValueError:
            div = float("inf")
        else:
            div = _kl(p, q)
        if best_div is None or div < best_div:
            best_th, best_div = float(edges[stop]), div
    return best_th, best_div


@register
class CalibrateEntropy(Op):
    """The entropy-calibrated threshold of a symmetric histogram (``hist``, its edges
    ``hist_edges``) and its KL divergence, as two one-element float32 arrays."""
    name = "_contrib_calibrate_entropy"
    writes_outputs = True
    backward_uses = ()
    params = Schema(num_quantized_bins=Int(255, low=1))

    def arguments(self, p):
        return ["hist", "hist_edges"]

    def outputs(self, p):
        return ["threshold", "divergence"]

    def infer_shape(self, p, in_shapes):
        h, e = in_shapes
        if h is not None and len(h) != 1:
            raise ShapeError(f"calibrate_entropy: hist must be 1-D, got {tuple(h)}")
        if h is not None and e is not None and tuple(e) != (h[0] + 1,):
            raise ShapeError(f"calibrate_entropy: hist_edges must be ({h[0] + 1},) for "
                             f"hist {tuple(h)}, got {tuple(e)}")
        return [h and tuple(h), e and tuple(e)], [(1,), (1,)], []

    def infer_type(self, p, in_types):
        f = np.dtype(np.float32)
        return [in_types[0] or f, in_types[1] or f], [f, f], []

    def forward(self, ctx, p, inputs, aux, out=None):
        xp = ctx.xp
        from ...backend import to_numpy
        th, div = optimal_threshold(to_numpy(inputs[0]), to_numpy(inputs[1]),
                                    p.num_quantized_bins)
        return store_all(out, [xp.full((1,), th, np.float32),
                               xp.full((1,), div, np.float32)])
