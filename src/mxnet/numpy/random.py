"""mx.np.random: samplers with NumPy's signatures (``size`` is the output shape), drawn
from the context's generator through the registered sampling operators, so
``mx.np.random.seed`` / ``mx.random.seed`` make draws reproducible."""
import numpy as _onp

from .. import ndarray as _nd
from .. import random as _mxrandom
from ..base import MXNetError, dtype_np
from ..ndarray.ndarray import NDArray
from .multiarray import wrap

__all__ = ["seed", "uniform", "normal", "randn", "rand", "randint", "choice", "shuffle",
           "multinomial", "gamma", "beta", "exponential", "poisson", "permutation",
           "lognormal", "rayleigh", "weibull", "pareto", "chisquare", "multivariate_normal",
           "power", "logistic", "gumbel"]


def _size(size):
    if size is None:
        return ()
    if isinstance(size, (int, _onp.integer)):
        return (int(size),)
    return tuple(int(d) for d in size)


def _scalar(x, name):
    if isinstance(x, NDArray):
        raise NotImplementedError(f"mx.np.random: array-valued {name} is not implemented "
                                  "in pymxnet yet (pass a number)")
    return float(x)


def _draw(nd_fn, size, dtype, ctx, **kwargs):
    shape = _size(size)
    if 0 in shape:                    # NumPy shapes: an empty draw is a valid result
        from .creation import zeros
        return zeros(shape, dtype=dtype_np(dtype or "float32"), ctx=ctx)
    out = nd_fn(shape=shape if shape else (1,), dtype=dtype_np(dtype or "float32").name,
                ctx=ctx, **kwargs)
    return wrap(out if shape else out.reshape(()))


def seed(seed=None, ctx="all"):
    """Seed the generators (all contexts by default), like ``mx.random.seed``."""
    if seed is None:
        seed = int(_onp.random.randint(0, 2 ** 31 - 1))
    _mxrandom.seed(int(seed), ctx)


def _affine(base, shift, scale, size, dtype, ctx):
    """shift + scale * draws of base(0, 1) for array-valued parameters (broadcast
    together with size), differentiable in shift and scale as MXNet's samplers are."""
    from . import math as m
    shape = _onp.broadcast_shapes(*[_onp.shape(v) if not isinstance(v, NDArray) else v.shape
                                    for v in (shift, scale)])
    if size is not None:
        shape = _onp.broadcast_shapes(shape, _size(size))
    for v in (shift, scale):
        if isinstance(v, NDArray):
            ctx = ctx or v.context
            dtype = dtype or v.dtype
    draws = base(0.0, 1.0, shape, dtype, ctx)
    return m.add(m.multiply(draws, scale), shift)


def uniform(low=0.0, high=1.0, size=None, dtype=None, ctx=None, out=None):
    """Samples from U[low, high)."""
    if isinstance(low, NDArray) or isinstance(high, NDArray):
        from .math import subtract
        return _affine(uniform, low, subtract(high, low), size, dtype, ctx)
    return _draw(_nd.random.uniform, size, dtype, ctx, low=_scalar(low, "low"),
                 high=_scalar(high, "high"))


def normal(loc=0.0, scale=1.0, size=None, dtype=None, ctx=None, out=None):
    """Samples from N(loc, scale^2)."""
    if not isinstance(scale, NDArray) and scale < 0:
        from ..base import InvalidArgument          # MXNetError and ValueError
        raise InvalidArgument(f"mx.np.random.normal: scale must be >= 0, got {scale}")
    if isinstance(loc, NDArray) or isinstance(scale, NDArray):
        return _affine(normal, loc, scale, size, dtype, ctx)
    return _draw(_nd.random.normal, size, dtype, ctx, loc=_scalar(loc, "loc"),
                 scale=_scalar(scale, "scale"))


def randn(*size, **kwargs):
    """Standard normal samples of the given shape."""
    return normal(0.0, 1.0, size, **kwargs)


def rand(*size, **kwargs):
    """U[0, 1) samples of the given shape."""
    return uniform(0.0, 1.0, size, **kwargs)


def randint(low, high=None, size=None, dtype=None, ctx=None, out=None):
    """Integers from [low, high) (int64 unless dtype is given)."""
    if high is None:
        low, high = 0, low
    if high <= low:
        raise MXNetError(f"mx.np.random.randint: low >= high ({low} >= {high})")
    shape = _size(size)
    if 0 in shape:
        from .creation import zeros
        return zeros(shape, dtype=dtype_np(dtype or _onp.int64), ctx=ctx)
    out = _nd.random.randint(int(low), int(high), shape=shape if shape else (1,),
                             dtype="int32", ctx=ctx)
    out = wrap(out if shape else out.reshape(()))
    return out.astype(dtype_np(dtype or _onp.int64))


def _non_negative(name, value):
    if not isinstance(value, NDArray) and value < 0:
        raise ValueError(f"mx.np.random: {name} must be non-negative, got {value}")


def exponential(scale=1.0, size=None, dtype=None, ctx=None, out=None):
    _non_negative("scale", scale)
    if isinstance(scale, NDArray):
        from . import math as m
        return m.multiply(_neg_log1m(_unit(size, dtype, ctx, scale)), scale)
    return _draw(_nd.random.exponential, size, dtype, ctx, lam=1.0 / _scalar(scale, "scale"))


def _check_positive(what, name, value):
    """MXNet's np samplers reject non-positive parameters with a ValueError (checked on
    the host for array-valued parameters too)."""
    from ..base import InvalidArgument          # MXNetError and ValueError
    host = value.asnumpy() if isinstance(value, NDArray) else _onp.asarray(value)
    if not _onp.all(host > 0):
        raise InvalidArgument(f"mx.np.random.{what}: {name} must be > 0, got {value}")


def _out_shape(params, size):
    """The shape of draws of array-valued parameters: size if given (the parameters
    must broadcast to it), else the parameters' broadcast shape."""
    shapes = [p.shape if isinstance(p, NDArray) else () for p in params]
    try:
        shape = _onp.broadcast_shapes(*shapes)
        if size is not None:
            target = _size(size)
            if _onp.broadcast_shapes(shape, target) != target:
                raise ValueError
            shape = target
    except ValueError:
        raise MXNetError(f"mx.np.random: parameters of shapes {shapes} cannot be broadcast "
                         f"to size {size}") from None
    return shape


def gamma(shape, scale=1.0, size=None, dtype=None, ctx=None, out=None):
    """Gamma(shape, scale) samples; array-valued parameters broadcast elementwise."""
    _check_positive("gamma", "shape", shape)
    _check_positive("gamma", "scale", scale)
    if not (isinstance(shape, NDArray) or isinstance(scale, NDArray)):
        return _draw(_nd.random.gamma, size, dtype, ctx, alpha=_scalar(shape, "shape"),
                     beta=_scalar(scale, "scale"))
    from .creation import array, zeros
    from .manipulation import broadcast_to
    params = (shape, scale)
    out_shape = _out_shape(params, size)
    ctx = ctx or next(p.context for p in params if isinstance(p, NDArray))
    dt = dtype_np(dtype or "float32")
    if 0 in out_shape:
        return zeros(out_shape, dtype=dt, ctx=ctx)
    alpha, beta_ = (broadcast_to(p.astype(_onp.float32) if isinstance(p, NDArray) else
                                 array(float(p), ctx=ctx), out_shape).reshape(-1)
                    for p in params)
    # one draw per (alpha, beta) pair: the per-parameter sampler with an empty shape
    draws = _nd._internal._sample_gamma(alpha, beta_, shape=(), dtype=dt.name)
    return wrap(draws).reshape(out_shape)


def beta(a, b, size=None, dtype=None, ctx=None):
    """Beta(a, b) samples, as X / (X + Y) of two gamma draws."""
    x = gamma(a, 1.0, size, dtype, ctx)
    y = gamma(b, 1.0, size, dtype, ctx)
    from .math import add, true_divide
    return true_divide(x, add(x, y))


def poisson(lam=1.0, size=None, dtype=None, ctx=None):
    return _draw(_nd.random.poisson, size, dtype, ctx, lam=_scalar(lam, "lam"))


def multinomial(n, pvals, size=None):
    """Counts of n draws over len(pvals) outcomes (int64)."""
    from .creation import array
    p = _onp.asarray(pvals.asnumpy() if isinstance(pvals, NDArray) else pvals, _onp.float64)
    if p.ndim != 1 or _onp.any(p < 0) or (p.size and p[:-1].sum() > 1 + 1e-6):
        raise MXNetError("mx.np.random.multinomial: pvals must be a 1-d probability vector")
    shape = _size(size)
    k = len(p)
    if k == 0 or 0 in shape:
        return array(_onp.zeros(shape + (k,), dtype=_onp.int64), dtype=_onp.int64)
    draws = choice(k, size=shape + (int(n),), p=p)
    counts = _onp.stack([(draws.asnumpy() == j).sum(axis=-1) for j in range(k)], axis=-1)
    return array(counts, dtype=_onp.int64)


def choice(a, size=None, replace=True, p=None, ctx=None, out=None):
    """Random samples from arange(a) (or from the 1-d array a), optionally weighted."""
    from .creation import array
    pool = _onp.arange(a) if isinstance(a, (int, _onp.integer)) else \
        _onp.asarray(a.asnumpy() if isinstance(a, NDArray) else a)
    n = len(pool)
    shape = _size(size)
    count = int(_onp.prod(shape, dtype=_onp.int64)) if shape else 1
    probs = None if p is None else _onp.asarray(p.asnumpy() if isinstance(p, NDArray) else p,
                                                _onp.float64)
    if replace:
        if probs is None:
            idx = randint(0, n, (count,), ctx=ctx).asnumpy()
        else:
            u = uniform(0, 1, (count,), ctx=ctx).asnumpy().astype(_onp.float64)
            idx = _onp.minimum(_onp.searchsorted(_onp.cumsum(probs) / probs.sum(), u,
                                                 side="right"), n - 1)
    else:
        if count > n:
            raise MXNetError("Cannot take a larger sample than population when "
                             "'replace=False'")
        keys = uniform(0, 1, (n,), ctx=ctx).asnumpy().astype(_onp.float64)
        if probs is not None:             # weighted sampling without replacement
            keys = _onp.log(keys) / _onp.maximum(probs, 1e-300)
        idx = _onp.argsort(-keys)[:count]
    values = pool[idx].reshape(shape)
    dtype = _onp.int64 if isinstance(a, (int, _onp.integer)) else pool.dtype
    return array(values, dtype=dtype, ctx=ctx)


def permutation(x):
    from .creation import array
    if isinstance(x, (int, _onp.integer)):
        return choice(int(x), size=int(x), replace=False)
    arr = x if isinstance(x, NDArray) else array(x)
    order = choice(arr.shape[0], size=arr.shape[0], replace=False)
    return arr[order]


def shuffle(x):
    """Shuffle x in place along its first axis."""
    order = choice(x.shape[0], size=x.shape[0], replace=False)
    x[...] = x[order].copy()


def _unit(size, dtype, ctx, *params):
    """U[0, 1) draws of size (or the parameters' broadcast shape)."""
    if size is None:
        shapes = [p.shape for p in params if isinstance(p, NDArray)]
        size = _onp.broadcast_shapes(*shapes) if shapes else None
    for p in params:
        if isinstance(p, NDArray):
            ctx = ctx or p.context
    return uniform(0.0, 1.0, size, dtype, ctx)


def _neg_log1m(u):
    """-log(1 - u): a standard exponential draw from a uniform one."""
    from . import math as m
    return m.negative(m.log1p(m.negative(u)))


def lognormal(mean=0.0, sigma=1.0, size=None, dtype=None, ctx=None, out=None):
    """exp of N(mean, sigma^2) samples (differentiable in mean and sigma)."""
    from . import math as m
    return m.exp(normal(mean, sigma, size, dtype, ctx))


def rayleigh(scale=1.0, size=None, ctx=None, out=None):
    """Rayleigh samples scale * sqrt(2 E), E standard exponential."""
    _non_negative("scale", scale)
    from . import math as m
    e = _neg_log1m(_unit(size, None, ctx, scale))
    return m.multiply(m.sqrt(m.multiply(e, 2.0)), scale)


def _positive_a(name, a):
    if not isinstance(a, NDArray) and not a > 0:
        from ..base import InvalidArgument          # MXNetError and ValueError
        raise InvalidArgument(f"mx.np.random.{name}: a must be > 0, got {a}")


def weibull(a, size=None, ctx=None, out=None):
    """Weibull samples E ** (1 / a), E standard exponential."""
    _positive_a("weibull", a)
    from . import math as m
    e = _neg_log1m(_unit(size, None, ctx, a))
    return m.power(e, m.true_divide(1.0, a) if isinstance(a, NDArray) else 1.0 / a)


def pareto(a, size=None, ctx=None, out=None):
    """Pareto II (Lomax) samples exp(E / a) - 1, as NumPy's pareto."""
    _positive_a("pareto", a)
    from . import math as m
    e = _neg_log1m(_unit(size, None, ctx, a))
    return m.subtract(m.exp(m.true_divide(e, a)), 1.0)


def chisquare(df, size=None, dtype=None, ctx=None):
    """Chi-square samples with df degrees of freedom (gamma(df / 2, 2))."""
    if isinstance(df, NDArray):
        from .math import true_divide
        return gamma(true_divide(df.astype(_onp.float32), 2.0), 2.0, size, dtype, ctx)
    return gamma(_scalar(df, "df") / 2.0, 2.0, size, dtype, ctx)


def power(a, size=None, ctx=None, out=None):
    """Power-distribution samples on [0, 1] (density a x^(a-1)): U ** (1 / a)."""
    _positive_a("power", a)
    from . import math as m
    u = m.subtract(1.0, _unit(size, None, ctx, a))      # in (0, 1]
    return m.power(u, m.true_divide(1.0, a) if isinstance(a, NDArray) else 1.0 / a)


def _location_scale(standard, loc, scale, size, ctx):
    """loc + scale * standard(u) for U[0, 1) draws u, differentiable in loc and scale
    (array-valued ones broadcast with size)."""
    if not isinstance(scale, NDArray) and scale < 0:
        raise ValueError(f"mx.np.random: scale must be non-negative, got {scale}")

    def base(_lo, _hi, shape, dtype, ctx_):
        return standard(uniform(0.0, 1.0, shape, dtype, ctx_))
    if isinstance(loc, NDArray) or isinstance(scale, NDArray):
        return _affine(base, loc, scale, size, None, ctx)
    from . import math as m
    return m.add(m.multiply(base(0.0, 1.0, size, None, ctx), float(scale)), float(loc))


def logistic(loc=0.0, scale=1.0, size=None, ctx=None, out=None):
    """Logistic samples loc + scale * log(u / (1 - u))."""
    from . import math as m
    return _location_scale(lambda u: m.log(m.true_divide(u, m.subtract(1.0, u))),
                           loc, scale, size, ctx)


def gumbel(loc=0.0, scale=1.0, size=None, ctx=None, out=None):
    """Gumbel samples loc - scale * log(-log(u))."""
    from . import math as m
    return _location_scale(lambda u: m.negative(m.log(_neg_log1m(u))), loc, scale, size,
                           ctx)


def multivariate_normal(mean, cov, size=None, check_valid=None, tol=None):
    """Samples of N(mean, cov): mean + L z with L the Cholesky factor of cov (computed on
    the host) and z standard normal; mean (..., k) and cov (..., k, k) broadcast over
    their batch axes, the result has shape size + batch + (k,)."""
    from . import math as m
    from .creation import array
    mean = mean if isinstance(mean, NDArray) else array(mean)
    cov_h = cov.asnumpy() if isinstance(cov, NDArray) else _onp.asarray(cov)
    if mean.ndim < 1 or cov_h.ndim < 2 or cov_h.shape[-1] != cov_h.shape[-2] or \
            cov_h.shape[-1] != mean.shape[-1]:
        raise MXNetError(f"multivariate_normal: mean of shape {mean.shape} and cov of shape "
                         f"{cov_h.shape} do not describe the same k-dimensional normal")
    try:
        batch = _onp.broadcast_shapes(mean.shape[:-1], cov_h.shape[:-2])
    except ValueError:
        raise MXNetError(f"multivariate_normal: batch shapes of mean {mean.shape} and cov "
                         f"{cov_h.shape} cannot be broadcast together") from None
    k = mean.shape[-1]
    chol = array(_onp.linalg.cholesky(cov_h.astype(_onp.float64)), dtype=mean.dtype,
                 ctx=mean.context)
    z = normal(0.0, 1.0, _size(size) + batch + (k, 1), dtype=mean.dtype, ctx=mean.context)
    return m.add(m.matmul(chol, z).reshape(_size(size) + batch + (k,)), mean)


def __dir__():
    # dir(mx.np.random) lists the samplers, as in MXNet, not the helpers imported above
    return sorted(set(__all__) | {name for name in globals() if name.startswith("_")})
