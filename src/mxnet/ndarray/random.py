"""mx.nd.random: samplers (uniform, normal, randint, ...), as in MXNet 1.9.1.

Each distribution function takes either numbers or NDArrays as its parameters. With
numbers it runs ``_random_<dist>`` and draws an array of ``shape`` on ``ctx``; with
NDArrays it runs ``_sample_<dist>``, drawing ``shape`` samples per parameter element
(output shape ``param.shape + shape``, on the parameters' context). Mixing numbers and
NDArrays is an error. Numbers come from the context's generator: ``mx.random.seed(s)``
makes them reproducible.
"""
from ..base import MXNetError, numeric_types
from .dispatch import invoke_by_name
from .ndarray import NDArray, _check_ctx

__all__ = ["uniform", "normal", "randn", "poisson", "exponential", "gamma", "multinomial",
           "negative_binomial", "generalized_negative_binomial", "shuffle", "randint",
           "uniform_like", "normal_like", "exponential_like", "gamma_like", "poisson_like",
           "negative_binomial_like", "generalized_negative_binomial_like"]


class _NullType:
    """The "not given" default of MXNet's generated signatures."""
    __slots__ = ()

    def __repr__(self):
        return "_Null"

    def __bool__(self):
        return False


_Null = _NullType()


def _given(v):
    return v is not _Null and v is not None


def _random_helper(dist, params, shape, dtype, ctx, out, kwargs):
    """Dispatch to ``_random_<dist>`` (numbers) or ``_sample_<dist>`` (NDArrays)."""
    values = list(params.values())
    if all(isinstance(v, NDArray) for v in values):
        if dist == "randint":
            raise MXNetError("randint: low and high must be numbers, not NDArrays")
        if _given(shape):
            kwargs["shape"] = shape
        if _given(dtype):
            kwargs["dtype"] = dtype
        return invoke_by_name(f"_sample_{dist}", values, kwargs, out=out)
    if all(isinstance(v, numeric_types) for v in values):
        if _given(shape):
            kwargs["shape"] = shape
        elif out is not None:
            kwargs["shape"] = out.shape
        else:
            kwargs["shape"] = (1,)
        if _given(dtype):
            kwargs["dtype"] = dtype
        kwargs.update(params)
        ctx = out.context if (ctx is None and out is not None) else _check_ctx(ctx)
        return invoke_by_name(f"_random_{dist}", [], kwargs, out=out, ctx=ctx)
    raise MXNetError(f"Distribution parameters must all have the same type (numbers or "
                     f"NDArrays), but got {', '.join(type(v).__name__ for v in values)}")


def uniform(low=0, high=1, shape=_Null, dtype=_Null, ctx=None, out=None, **kwargs):
    """Samples from the uniform distribution on [low, high).

    low, high: numbers, or NDArrays of one shape (then ``shape`` samples are drawn per
    element). shape: the output shape (numbers) or the samples per element (NDArrays).
    dtype: 'float16', 'float32' (default) or 'float64'. ctx: device (numbers only).
    """
    return _random_helper("uniform", {"low": low, "high": high}, shape, dtype, ctx, out,
                          kwargs)


def normal(loc=0, scale=1, shape=_Null, dtype=_Null, ctx=None, out=None, **kwargs):
    """Samples from the normal distribution with mean ``loc`` and standard deviation
    ``scale`` (numbers or NDArrays; see ``uniform`` for shape, dtype and ctx)."""
    return _random_helper("normal", {"loc": loc, "scale": scale}, shape, dtype, ctx, out,
                          kwargs)


def randn(*shape, **kwargs):
    """Samples from the normal distribution, the shape given positionally:
    ``randn(2, 3, loc=0, scale=1, dtype=None, ctx=None)``."""
    loc = kwargs.pop("loc", 0)
    scale = kwargs.pop("scale", 1)
    dtype = kwargs.pop("dtype", _Null)
    ctx = kwargs.pop("ctx", None)
    out = kwargs.pop("out", None)
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    if not shape and out is None:
        raise MXNetError("randn: the output shape is unknown: pass the dimensions, e.g. "
                         "randn(2, 3)")
    return _random_helper("normal", {"loc": loc, "scale": scale}, shape or _Null, dtype,
                          ctx, out, kwargs)


def poisson(lam=1, shape=_Null, dtype=_Null, ctx=None, out=None, **kwargs):
    """Samples from the Poisson distribution with rate ``lam`` (as floats)."""
    return _random_helper("poisson", {"lam": lam}, shape, dtype, ctx, out, kwargs)


def exponential(scale=1, shape=_Null, dtype=_Null, ctx=None, out=None, **kwargs):
    """Samples from the exponential distribution with mean ``scale`` (rate 1/scale)."""
    lam = 1.0 / scale if isinstance(scale, (NDArray,) + numeric_types) else scale
    return _random_helper("exponential", {"lam": lam}, shape, dtype, ctx, out, kwargs)


def gamma(alpha=1, beta=1, shape=_Null, dtype=_Null, ctx=None, out=None, **kwargs):
    """Samples from the gamma distribution with shape ``alpha`` and scale ``beta``."""
    return _random_helper("gamma", {"alpha": alpha, "beta": beta}, shape, dtype, ctx, out,
                          kwargs)


def negative_binomial(k=1, p=1, shape=_Null, dtype=_Null, ctx=None, out=None, **kwargs):
    """Samples from the negative binomial distribution: failures before the k-th
    success, each trial succeeding with probability p."""
    return _random_helper("negative_binomial", {"k": k, "p": p}, shape, dtype, ctx, out,
                          kwargs)


def generalized_negative_binomial(mu=1, alpha=1, shape=_Null, dtype=_Null, ctx=None,
                                  out=None, **kwargs):
    """Samples from the generalized negative binomial distribution with mean ``mu``
    and dispersion ``alpha`` (alpha = 0 is Poisson(mu))."""
    return _random_helper("generalized_negative_binomial", {"mu": mu, "alpha": alpha},
                          shape, dtype, ctx, out, kwargs)


def multinomial(data, shape=_Null, get_prob=False, out=None, dtype="int32", **kwargs):
    """Samples category indices from the multinomial distributions on the last axis of
    ``data``; output shape ``data.shape[:-1] + shape``. ``get_prob=True`` also returns the
    log probability of each sample (differentiable with respect to data)."""
    if _given(shape):
        kwargs["shape"] = shape
    kwargs.update(get_prob=get_prob, dtype=dtype)
    return invoke_by_name("_sample_multinomial", [data], kwargs, out=out)


def shuffle(data, **kwargs):
    """A copy of data with its elements randomly permuted along the first axis."""
    out = kwargs.pop("out", None)
    return invoke_by_name("_shuffle", [data], kwargs, out=out)


def randint(low, high, shape=_Null, dtype=_Null, ctx=None, out=None, **kwargs):
    """Samples integers uniformly from [low, high) (int32 unless dtype='int64')."""
    return _random_helper("randint", {"low": low, "high": high}, shape, dtype, ctx, out,
                          kwargs)


def _like(dist, names):
    def fn(data=None, *args, out=None, name=None, **kwargs):
        if not isinstance(data, NDArray):
            raise MXNetError(f"{dist}_like: data must be an NDArray")
        if len(args) > len(names):
            raise MXNetError(f"{dist}_like takes at most {len(names)} parameters "
                             f"({', '.join(names)}), got {len(args)}")
        kwargs.update(zip(names, args))
        params = {k: v for k, v in kwargs.items() if v is not _Null}
        return invoke_by_name(f"_random_{dist}_like", [data], params, out=out)
    fn.__name__ = fn.__qualname__ = f"{dist}_like"
    fn.__doc__ = (f"Samples of the {dist.replace('_', ' ')} distribution (parameters "
                  f"{', '.join(names)}) with the shape and dtype of ``data``.")
    return fn


uniform_like = _like("uniform", ("low", "high"))
normal_like = _like("normal", ("loc", "scale"))
exponential_like = _like("exponential", ("lam",))
gamma_like = _like("gamma", ("alpha", "beta"))
poisson_like = _like("poisson", ("lam",))
negative_binomial_like = _like("negative_binomial", ("k", "p"))
generalized_negative_binomial_like = _like("generalized_negative_binomial",
                                           ("mu", "alpha"))
