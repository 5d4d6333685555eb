"""mx.sym.random: samplers. Each picks ``_random_<dist>`` when its distribution
parameters are numbers and ``_sample_<dist>`` (one draw set per parameter element)
when they are symbols, as MXNet does."""
from .symbol import Symbol

__all__ = ["uniform", "normal", "randn", "gamma", "exponential", "poisson",
           "negative_binomial", "generalized_negative_binomial", "randint", "multinomial",
           "shuffle"]


def _sampler(dist, names, defaults):
    def fn(*args, shape=None, dtype=None, **kwargs):
        from . import _internal
        values = dict(zip(names, args))
        for n, d in zip(names, defaults):
            values.setdefault(n, kwargs.pop(n, d))
        extra = {} if dtype is None else {"dtype": dtype}
        if any(isinstance(v, Symbol) for v in values.values()):
            if shape is not None:
                extra["shape"] = shape
            return getattr(_internal, f"_sample_{dist}")(*values.values(), **extra, **kwargs)
        if shape is not None:
            extra["shape"] = shape
        return getattr(_internal, f"_random_{dist}")(**values, **extra, **kwargs)
    fn.__name__ = dist
    fn.__doc__ = f"Draw samples from the {dist} distribution ({', '.join(names)})."
    return fn


uniform = _sampler("uniform", ("low", "high"), (0.0, 1.0))
normal = _sampler("normal", ("loc", "scale"), (0.0, 1.0))
gamma = _sampler("gamma", ("alpha", "beta"), (1.0, 1.0))
_exponential = _sampler("exponential", ("lam",), (1.0,))


def exponential(scale=1, shape=None, dtype=None, **kwargs):
    """Draw samples from the exponential distribution with mean ``scale`` (a number or
    a Symbol; the operators take the rate 1/scale)."""
    return _exponential(1.0 / scale, shape=shape, dtype=dtype, **kwargs)
poisson = _sampler("poisson", ("lam",), (1.0,))
negative_binomial = _sampler("negative_binomial", ("k", "p"), (1, 1.0))
generalized_negative_binomial = _sampler("generalized_negative_binomial",
                                         ("mu", "alpha"), (1.0, 1.0))


def randn(*shape, loc=0.0, scale=1.0, dtype=None, **kwargs):
    return normal(loc, scale, shape=shape, dtype=dtype, **kwargs)


def randint(low, high, shape=None, dtype=None, **kwargs):
    from . import _internal
    extra = {} if dtype is None else {"dtype": dtype}
    if shape is not None:
        extra["shape"] = shape
    return _internal._random_randint(low=low, high=high, **extra, **kwargs)


def multinomial(data, shape=None, get_prob=False, dtype="int32", **kwargs):
    from . import _internal
    extra = {} if shape is None else {"shape": shape}
    return _internal._sample_multinomial(data, get_prob=get_prob, dtype=dtype, **extra,
                                         **kwargs)


def shuffle(data, **kwargs):
    from . import _internal
    return _internal._shuffle(data, **kwargs)


def _like(dist, names):
    """sym.random.<dist>_like(data, *params): samples shaped like ``data``."""
    def fn(data=None, *args, name=None, attr=None, out=None, **kwargs):
        from . import _internal
        if len(args) > len(names):
            raise TypeError(f"{dist}_like takes at most {len(names)} distribution "
                            f"parameters ({', '.join(names)}), got {len(args)}")
        params = dict(zip(names, args))
        params.update(kwargs)
        inputs = [] if data is None else [data]
        return getattr(_internal, f"_random_{dist}_like")(*inputs, name=name, attr=attr,
                                                           out=out, **params)
    fn.__name__ = fn.__qualname__ = f"{dist}_like"
    fn.__doc__ = (f"Samples of the {dist} distribution ({', '.join(names)}) with the "
                  "shape and dtype of ``data``.")
    return fn


uniform_like = _like("uniform", ("low", "high"))
normal_like = _like("normal", ("loc", "scale"))
gamma_like = _like("gamma", ("alpha", "beta"))
exponential_like = _like("exponential", ("lam",))
poisson_like = _like("poisson", ("lam",))
negative_binomial_like = _like("negative_binomial", ("k", "p"))
generalized_negative_binomial_like = _like("generalized_negative_binomial", ("mu", "alpha"))
__all__ += [f"{d}_like" for d in ("uniform", "normal", "gamma", "exponential", "poisson",
                                  "negative_binomial", "generalized_negative_binomial")]
