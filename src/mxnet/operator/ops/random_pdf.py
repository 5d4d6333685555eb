"""random_pdf_<dist>: the density (or probability mass) of samples under
distributions whose parameters are arrays, and its gradients.

Shapes: the parameters have shape ``batch`` and ``sample`` has shape ``batch + (n,)``
(n draws per parameter set); the output has ``sample``'s shape. Dirichlet's ``alpha``
has shape ``batch + (k,)``, ``sample`` ``batch + (n, k)`` and the output ``batch +
(n,)``. ``is_log=True`` gives the log density. Conventions as in MXNet 1.9.1: gamma's
``beta`` is a rate, generalized negative binomial is negative binomial with k = 1/alpha
and p = 1/(1 + mu*alpha), uniform does not check the support.

Every distribution is written as its log density and the log density's partial
derivatives; pdf = exp(log pdf) and d pdf = pdf * d log pdf. As in MXNet, the samples
of the discrete distributions (counts) get a zero gradient.
"""
import math

import numpy as np

from ..dtypes import F16_32_64, restrict_dtypes
from ..params import Bool, Schema
from ..registry import Op, ShapeError, register
from ..special import digamma, gammaln
from ..out_contract import adopt_out_contract

_LOG_2PI = math.log(2 * math.pi)


def _lg(xp, x):
    return gammaln(xp, x)


def _psi(xp, x):
    return digamma(xp, x)


# name -> (parameter names, logpdf(xp, x, *params), grads(xp, x, *params) -> d/dx, d/dparam...)
def _normal(xp, x, mu, sigma):
    z = (x - mu) / sigma
    return -0.5 * z * z - xp.log(sigma) - 0.5 * _LOG_2PI


def _normal_grads(xp, x, mu, sigma):
    z = (x - mu) / sigma
    return -z / sigma, z / sigma, (z * z - 1) / sigma


def _uniform(xp, x, low, high):
    return -xp.log(high - low) + 0 * x


def _uniform_grads(xp, x, low, high):
    w = 1.0 / (high - low)
    return 0 * x, w + 0 * x, -w + 0 * x


def _gamma(xp, x, alpha, beta):
    return alpha * xp.log(beta) + (alpha - 1) * xp.log(x) - beta * x - _lg(xp, alpha)


def _gamma_grads(xp, x, alpha, beta):
    return ((alpha - 1) / x - beta, xp.log(beta) + xp.log(x) - _psi(xp, alpha),
            alpha / beta - x)


def _exponential(xp, x, lam):
    return xp.log(lam) - lam * x


def _exponential_grads(xp, x, lam):
    return -lam + 0 * x, 1.0 / lam - x


def _poisson(xp, x, lam):
    return x * xp.log(lam) - lam - _lg(xp, x + 1)


def _poisson_grads(xp, x, lam):
    return xp.log(lam) - _psi(xp, x + 1), x / lam - 1


def _negbin(xp, x, k, p):
    return (_lg(xp, x + k) - _lg(xp, x + 1) - _lg(xp, k) + k * xp.log(p)
            + x * xp.log1p(-p))


def _negbin_grads(xp, x, k, p):
    return (_psi(xp, x + k) - _psi(xp, x + 1) + xp.log1p(-p),
            _psi(xp, x + k) - _psi(xp, k) + xp.log(p), k / p - x / (1 - p))


def _gnb(xp, x, mu, alpha):
    return _negbin(xp, x, 1.0 / alpha, 1.0 / (1.0 + mu * alpha))


def _gnb_grads(xp, x, mu, alpha):
    k, p = 1.0 / alpha, 1.0 / (1.0 + mu * alpha)
    dx, dk, _ = _negbin_grads(xp, x, k, p)
    one = 1.0 + mu * alpha
    dmu = x / mu - (1.0 + x * alpha) / one
    dalpha = -dk / (alpha * alpha) - k * mu / one + x * (1.0 / alpha - mu / one)
    return dx, dmu, dalpha


def _dirichlet(xp, x, alpha):
    # x: batch + (n, k), alpha: batch + (1, k) -> batch + (n,)
    return (_lg(xp, alpha.sum(-1)) - _lg(xp, alpha).sum(-1)
            + ((alpha - 1) * xp.log(x)).sum(-1))


def _dirichlet_grads(xp, x, alpha):
    dx = (alpha - 1) / x
    da = _psi(xp, alpha.sum(-1, keepdims=True)) - _psi(xp, alpha) + xp.log(x)
    return dx, da


_DISTS = {
    "normal": (("mu", "sigma"), _normal, _normal_grads),
    "uniform": (("low", "high"), _uniform, _uniform_grads),
    "gamma": (("alpha", "beta"), _gamma, _gamma_grads),
    "exponential": (("lam",), _exponential, _exponential_grads),
    "poisson": (("lam",), _poisson, _poisson_grads),
    "negative_binomial": (("k", "p"), _negbin, _negbin_grads),
    "generalized_negative_binomial": (("mu", "alpha"), _gnb, _gnb_grads),
    "dirichlet": (("alpha",), _dirichlet, _dirichlet_grads),
}


_DISCRETE = ("poisson", "negative_binomial", "generalized_negative_binomial")


@restrict_dtypes(F16_32_64, inputs="all")
class _PdfOp(Op):
    params = Schema(is_log=Bool(False))
    backward_uses = ("out_grad", "in_data", "out_data")
    dist = None

    def arguments(self, p):
        return ["sample", *_DISTS[self.dist][0]]

    def infer_shape(self, p, in_shapes):
        # The parameters' shape is a leading part of the sample's (the sample adds any
        # number of draws per parameter set); for dirichlet both end in the k classes.
        sample, *params = in_shapes
        batch = next((s for s in params if s is not None), None)
        for s in params:
            if s is not None and tuple(s) != tuple(batch):
                raise ShapeError(f"{self.name}: parameters must have one shape, got "
                                 f"{[None if x is None else tuple(x) for x in params]}")
        if sample is None:
            return in_shapes, [None], []
        sample = tuple(sample)
        if self.dist == "dirichlet":
            if len(sample) < 2:
                raise ShapeError(f"{self.name}: sample must be at least 2-d, got {sample}")
            lead, out = sample[:-1], sample[:-1]
            ok = batch is None or (len(batch) >= 1 and batch[-1] == sample[-1]
                                   and tuple(batch[:-1]) == lead[:len(batch) - 1])
            want = (sample[:-2] + (sample[-1],)) if batch is None else tuple(batch)
        else:
            out = sample
            ok = batch is None or tuple(batch) == sample[:len(batch)]
            want = sample[:-1] if batch is None else tuple(batch)
        if not ok:
            raise ShapeError(f"{self.name}: parameters of shape {tuple(batch)} do not lead "
                             f"the sample's shape {sample}")
        return [sample] + [want] * len(params), [out], []

    def infer_type(self, p, in_types):
        t = next((x for x in in_types if x is not None), None)
        return [t] * len(in_types), [t], []

    def _expand(self, sample, params):
        # parameters batch -> batch + (1,) * draws (dirichlet: batch + (1,) * draws + (k,))
        out = []
        for a in params:
            if self.dist == "dirichlet":
                extra = sample.ndim - a.ndim
                out.append(a.reshape(a.shape[:-1] + (1,) * extra + a.shape[-1:]))
            else:
                out.append(a.reshape(a.shape + (1,) * (sample.ndim - a.ndim)))
        return out

    def forward(self, ctx, p, inputs, aux, out=None):
        xp = ctx.xp
        sample, *params = inputs
        self.infer_shape(p, [a.shape for a in inputs])
        f64 = [a.astype(np.float64) for a in [sample] + self._expand(sample, params)]
        with np.errstate(all="ignore"):
            lp = _DISTS[self.dist][1](xp, *f64)
            res = lp if p.is_log else xp.exp(lp)
        return [res.astype(sample.dtype)]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux, in_grad=None):
        xp = ctx.xp
        sample, *params = inputs
        f64 = [a.astype(np.float64) for a in [sample] + self._expand(sample, params)]
        g = out_grads[0].astype(np.float64)
        if not p.is_log:
            g = g * outputs[0].astype(np.float64)     # d pdf = pdf * d log pdf
        if self.dist == "dirichlet":
            g = g[..., None]
        with np.errstate(all="ignore"):
            parts = _DISTS[self.dist][2](xp, *f64)
        if self.dist in _DISCRETE:       # MXNet gives counts no gradient
            grads = [ctx.xp.zeros_like(sample)]
        else:
            grads = [(g * parts[0]).astype(sample.dtype)]
        for a, d in zip(params, parts[1:]):
            # sum over the draws each parameter set produced
            full = xp.broadcast_to(g * d, sample.shape)
            if self.dist == "dirichlet":
                axes = tuple(range(a.ndim - 1, sample.ndim - 1))
            else:
                axes = tuple(range(a.ndim, sample.ndim))
            grads.append(full.sum(axis=axes).reshape(a.shape).astype(a.dtype))
        return grads


for _dist in _DISTS:
    register(type(f"RandomPdf_{_dist}", (_PdfOp,), {
        "name": f"_random_pdf_{_dist}", "aliases": (f"random_pdf_{_dist}",),
        "dist": _dist,
        "__doc__": f"Density of samples under the {_dist} distribution "
                   f"({', '.join(_DISTS[_dist][0])}); log density with is_log."}))


adopt_out_contract(__name__)
