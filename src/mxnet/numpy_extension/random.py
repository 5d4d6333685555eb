"""``mx.npx.random``: MXNet's extra samplers of NumPy mode — ``bernoulli`` and the
``*_n`` forms whose output shape is ``batch_shape`` followed by the parameters' shape."""
import numpy as _onp

from ..ndarray.ndarray import NDArray
from ..numpy import random as _nprandom
from ..numpy.random import seed  # noqa: F401

__all__ = ["bernoulli", "normal_n", "uniform_n", "seed"]


def _batch(batch_shape, *params):
    shape = _onp.broadcast_shapes(*[p.shape if isinstance(p, NDArray) else _onp.shape(p)
                                    for p in params])
    if batch_shape is None:
        return shape
    batch = (batch_shape,) if isinstance(batch_shape, int) else tuple(batch_shape)
    return batch + shape


def normal_n(loc=0.0, scale=1.0, batch_shape=None, dtype=None, ctx=None):
    """Normal samples of shape batch_shape + broadcast(loc, scale).shape."""
    return _nprandom.normal(loc, scale, _batch(batch_shape, loc, scale), dtype, ctx)


def uniform_n(low=0.0, high=1.0, batch_shape=None, dtype=None, ctx=None):
    """Uniform samples of shape batch_shape + broadcast(low, high).shape."""
    return _nprandom.uniform(low, high, _batch(batch_shape, low, high), dtype, ctx)


def bernoulli(prob=None, logit=None, size=None, dtype=None, ctx=None, out=None):
    """1 with probability prob (or sigmoid(logit)), else 0 (float32 by default)."""
    from ..numpy import math as _m
    if (prob is None) == (logit is None):
        raise ValueError("Either `prob` or `logit` must be specified, but not both. "
                         f"Received prob={prob}, logit={logit}")
    p = prob
    if prob is not None:
        host = prob.asnumpy() if isinstance(prob, NDArray) else _onp.asarray(prob)
        if host.size and (host.min() < 0 or host.max() > 1):
            raise ValueError("npx.random.bernoulli: prob must be in [0, 1]")
    if logit is not None:
        p = 1.0 / (1.0 + _onp.exp(-logit)) if not isinstance(logit, NDArray) else \
            _m.reciprocal(_m.add(_m.exp(_m.negative(logit)), 1.0))
    shape = size if size is not None else (p.shape if isinstance(p, NDArray) else None)
    u = _nprandom.uniform(0.0, 1.0, shape, None, ctx or (p.context if isinstance(
        p, NDArray) else None))
    res = _m.less(u, p)
    return res.astype(dtype or _onp.float32)
