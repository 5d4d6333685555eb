"""Random samplers: ``_random_<dist>`` (scalar parameters, no inputs),
``_sample_<dist>`` (one draw set per element of parameter arrays), ``_random_<dist>_like``
(the shape and dtype of an input), ``_random_randint``, ``_sample_multinomial`` and
``_shuffle``.

All randomness comes from ``ctx.rng`` (the context's generator), so ``mx.random.seed``
reproduces a run. Draws are made in float32/float64 with the generator's own dtype
support (float16 outputs are drawn in float32 and rounded).
"""
import numpy as np

from ...base import MXNetError
from ..params import Bool, Field, Float, Int, Params, REQUIRED, Schema, Shape, ShapeOrNone
from ..registry import Op, ShapeError, register

_FLOAT_TYPES = ("float16", "float32", "float64")


class RandDType(Field):
    """MXNet's optional dtype enum: 'None' (or None) or one of the listed names."""
    kind = "dtype"

    def __init__(self, choices, default=None, doc=""):
        super().__init__(default, doc=doc)
        self.choices = tuple(choices)

    def convert(self, v):
        if v is None or v == "None":
            if None not in self.choices:
                raise ValueError("a dtype is required")
            return None
        name = np.dtype(v).name
        if name not in self.choices:
            raise ValueError(f"valid values are {[str(c) for c in self.choices]}")
        return name


def _prod(shape):
    n = 1
    for s in shape:
        n *= s
    return n


def _draw_type(dtype):
    """The dtype to draw in: generators make float32/float64 only."""
    dt = np.dtype(dtype)
    return np.dtype(np.float32) if dt.kind != "f" or dt.itemsize < 4 else dt


# --- samplers: (rng, size, fdt, *params) -> array of `size` in fdt; params are floats or
# arrays that broadcast against `size` -----------------------------------------------
def _uniform(xp, rng, size, fdt, low, high):
    return low + (high - low) * rng.random(size, dtype=fdt)


def _normal(xp, rng, size, fdt, loc, scale):
    return loc + scale * rng.standard_normal(size, dtype=fdt)


def _exponential(xp, rng, size, fdt, lam):
    return rng.standard_exponential(size, dtype=fdt) / lam


def _gamma(xp, rng, size, fdt, alpha, beta):
    return rng.standard_gamma(alpha, size, dtype=fdt) * beta


def _poisson(xp, rng, size, fdt, lam):
    return rng.poisson(lam, size).astype(fdt)


def _negative_binomial(xp, rng, size, fdt, k, p):
    # Failures before the k-th success: a Poisson draw whose rate is Gamma(k, (1-p)/p).
    rate = rng.standard_gamma(k, size, dtype=np.float64) * ((1.0 - p) / p)
    return rng.poisson(xp.maximum(rate, 0.0)).astype(fdt)


def _generalized_negative_binomial(xp, rng, size, fdt, mu, alpha):
    # Gamma-Poisson mixture with mean mu and dispersion alpha; alpha == 0 is Poisson(mu).
    if not hasattr(alpha, "shape") and alpha == 0:
        return rng.poisson(mu, size).astype(fdt)
    safe = xp.where(alpha > 0, alpha, 1.0) if hasattr(alpha, "shape") else alpha
    rate = rng.standard_gamma(1.0 / safe, size, dtype=np.float64) * (safe * mu)
    if hasattr(alpha, "shape"):
        rate = xp.where(alpha > 0, rate, mu)
    return rng.poisson(rate).astype(fdt)


def _positive(name, what):
    def check(v):
        if not v > 0:
            raise MXNetError(f"{what} parameter {name} has to be positive, got {v}")
    return check


def _non_negative(name, what):
    def check(v):
        if not v >= 0:
            raise MXNetError(f"{what} parameter {name} has to be non-negative, got {v}")
    return check


class _Dist:
    """One distribution: scalar parameter fields (name, field), the names of its
    ``_sample_`` inputs, the sampler and the checks MXNet makes on scalar parameters."""

    def __init__(self, name, fields, sample_args, sampler, check):
        self.name, self.fields, self.sample_args = name, fields, sample_args
        self.sampler, self.check = sampler, check


def _check_uniform(p):
    if not p.high >= p.low:
        raise MXNetError(f"low must be less or equal to high in uniform distribution, got "
                         f"low={p.low}, high={p.high}")


def _checks(**per_param):
    def check(p):
        for k, fn in per_param.items():
            fn(p[k])
    return check


def _check_negbin(p):
    _non_negative("k", "negative binomial")(p.k)
    if not 0 < p.p:
        raise MXNetError(f"p parameter in negative binomial distribution has to be "
                         f"positive, got {p.p}")


_DISTS = [
    _Dist("uniform", dict(low=Float(0.0), high=Float(1.0)), ("low", "high"), _uniform,
          _check_uniform),
    _Dist("normal", dict(loc=Float(0.0), scale=Float(1.0)), ("mu", "sigma"), _normal,
          _checks(scale=_positive("scale", "gaussian"))),
    _Dist("exponential", dict(lam=Float(1.0)), ("lam",), _exponential,
          _checks(lam=_positive("lam", "exponential distribution"))),
    _Dist("gamma", dict(alpha=Float(1.0), beta=Float(1.0)), ("alpha", "beta"), _gamma,
          _checks(alpha=_positive("alpha", "gamma distribution"),
                  beta=_positive("beta", "gamma distribution"))),
    _Dist("poisson", dict(lam=Float(1.0)), ("lam",), _poisson,
          _checks(lam=_non_negative("lam", "poisson distribution"))),
    _Dist("negative_binomial", dict(k=Int(1), p=Float(1.0)), ("k", "p"), _negative_binomial,
          _check_negbin),
    _Dist("generalized_negative_binomial", dict(mu=Float(1.0), alpha=Float(1.0)),
          ("mu", "alpha"), _generalized_negative_binomial,
          _checks(mu=_non_negative("mu", "generalized negative binomial distribution"),
                  alpha=_non_negative("alpha", "generalized negative binomial "
                                               "distribution"))),
]
_EXTRA_ALIASES = {"uniform": ("uniform",), "normal": ("normal",)}


def _drop_ctx(kwargs):
    """MXNet's scalar samplers carry the device as a ``ctx`` string parameter (symbol
    JSON may store it); here the device comes from the call, so it is dropped."""
    if "ctx" in kwargs:
        kwargs = {k: v for k, v in kwargs.items() if k != "ctx"}
    return kwargs


def _out_shape(opname, shape):
    from ...util import is_np_shape
    if is_np_shape() and shape is not None:     # NumPy shapes: () and 0 dims are real
        if any(s < 0 for s in shape):
            raise ShapeError(f"{opname}: invalid shape {tuple(shape)}: dimensions must "
                             "not be negative")
        return tuple(shape)
    if shape is None or len(shape) == 0:
        raise ShapeError(f"{opname}: the output shape is unknown: pass a non-empty shape")
    if any(s <= 0 for s in shape):
        raise ShapeError(f"{opname}: invalid shape {tuple(shape)}: every dimension must be "
                         "positive")
    return tuple(shape)


def _finish(out, dtype):
    return out if out.dtype == dtype else out.astype(dtype)


class _NoInputSampler(Op):
    """Shared by the scalar samplers: no inputs, shape/dtype from parameters."""
    backward_uses = ()
    resources = ("random",)
    default_dtype = "float32"

    def arguments(self, p):
        return []

    def parse(self, kwargs):
        return super().parse(_drop_ctx(kwargs))

    def infer_shape(self, p, in_shapes):
        if p.shape is None or len(p.shape) == 0:
            return [], [None], []
        return [], [_out_shape(self.name, p.shape)], []

    def infer_type(self, p, in_types):
        return [], [np.dtype(p.dtype or self.default_dtype)], []

    def needs_inferred_params(self, p):
        return p.shape is None or len(p.shape) == 0

    def complete_params(self, p, out_shapes):
        """Without a shape, the output takes the one the graph infers for it (from the
        operator consuming it), as MXNet's legacy shape inference allows."""
        if (p.shape is not None and len(p.shape) > 0) or out_shapes[0] is None:
            return p
        done = Params(p)
        done["shape"] = tuple(out_shapes[0])
        done.given = p.given
        return done


def _make_random(dist):
    class RandomOp(_NoInputSampler):
        name = f"_random_{dist.name}"
        aliases = (f"random_{dist.name}",) + _EXTRA_ALIASES.get(dist.name, ())
        params = Schema(**dist.fields, shape=ShapeOrNone(None),
                        dtype=RandDType((None,) + _FLOAT_TYPES))
        __doc__ = (f"Draw samples from a {dist.name.replace('_', ' ')} distribution with "
                   f"scalar parameters {', '.join(dist.fields)}; output of the given shape "
                   "and dtype (float32 by default).")

        def forward(self, ctx, p, inputs, aux):
            shape = _out_shape(self.name, p.shape)
            dist.check(p)
            dt = np.dtype(p.dtype or "float32")
            vals = [p[k] for k in dist.fields]
            return [_finish(dist.sampler(ctx.xp, ctx.rng, shape, _draw_type(dt), *vals), dt)]

    RandomOp.__name__ = RandomOp.__qualname__ = f"Op_random_{dist.name}"
    return register(RandomOp)


def _make_like(dist):
    class LikeOp(Op):
        name = f"_random_{dist.name}_like"
        params = Schema(**dist.fields)
        backward_uses = ()
        zero_grad = True
        resources = ("random",)
        __doc__ = (f"Samples of a {dist.name.replace('_', ' ')} distribution with the shape "
                   "and dtype of the input.")

        def infer_shape(self, p, in_shapes):
            return list(in_shapes), [in_shapes[0]], []

        def forward(self, ctx, p, inputs, aux):
            dist.check(p)
            x = inputs[0]
            vals = [p[k] for k in dist.fields]
            out = dist.sampler(ctx.xp, ctx.rng, x.shape, _draw_type(x.dtype), *vals)
            return [_finish(out, x.dtype)]

    LikeOp.__name__ = LikeOp.__qualname__ = f"Op_random_{dist.name}_like"
    return register(LikeOp)


def _make_sample(dist):
    class SampleOp(Op):
        name = f"_sample_{dist.name}"
        aliases = (f"sample_{dist.name}",)
        params = Schema(shape=Shape(()), dtype=RandDType((None,) + _FLOAT_TYPES))
        backward_uses = ()
        zero_grad = True
        resources = ("random",)
        __doc__ = (f"Draw ``shape`` samples of a {dist.name.replace('_', ' ')} "
                   f"distribution for each element of the parameter arrays "
                   f"({', '.join(dist.sample_args)}, all of one shape); the output shape "
                   "is the parameters' shape followed by ``shape``.")

        def arguments(self, p):
            return list(dist.sample_args)

        def infer_shape(self, p, in_shapes):
            known = next((s for s in in_shapes if s is not None), None)
            for s in in_shapes:
                if s is not None and tuple(s) != tuple(known):
                    raise ShapeError(f"{self.name}: the parameter arrays must have the same "
                                     f"shape, got {[tuple(x) for x in in_shapes if x]}")
            if known is None:
                return list(in_shapes), [None], []
            return [known] * len(in_shapes), [tuple(known) + tuple(p.shape)], []

        def infer_type(self, p, in_types):
            return list(in_types), [np.dtype(p.dtype or "float32")], []

        def forward(self, ctx, p, inputs, aux):
            self.infer_shape(p, [a.shape for a in inputs])
            dt = np.dtype(p.dtype or "float32")
            fdt = _draw_type(dt)
            pshape = inputs[0].shape
            size = tuple(pshape) + tuple(p.shape)
            expand = tuple(pshape) + (1,) * len(p.shape)
            vals = [a.astype(np.float64 if dist.name in _DOUBLE_PARAMS else fdt,
                             copy=False).reshape(expand) for a in inputs]
            return [_finish(dist.sampler(ctx.xp, ctx.rng, size, fdt, *vals), dt)]

    SampleOp.__name__ = SampleOp.__qualname__ = f"Op_sample_{dist.name}"
    return register(SampleOp)


# Gamma-Poisson mixtures compute their rates in float64 (the Poisson rate may be large).
_DOUBLE_PARAMS = ("negative_binomial", "generalized_negative_binomial", "poisson")

for _d in _DISTS:
    _make_random(_d)
    _make_like(_d)
    _make_sample(_d)


@register
class RandInt(_NoInputSampler):
    """Draw integers uniformly from [low, high) (int32 unless ``dtype`` says int64)."""
    name = "_random_randint"
    aliases = ("random_randint",)
    params = Schema(low=Int(REQUIRED), high=Int(REQUIRED), shape=ShapeOrNone(None),
                    dtype=RandDType((None, "int32", "int64")))
    default_dtype = "int32"

    def forward(self, ctx, p, inputs, aux):
        shape = _out_shape(self.name, p.shape)
        if not p.high > p.low:
            raise MXNetError(f"{self.name}: high must be greater than low (the range "
                             f"[low, high) is empty), got low={p.low}, high={p.high}")
        dt = np.dtype(p.dtype or "int32")
        if dt == np.int32 and (p.low < -2 ** 31 or p.high > 2 ** 31):
            raise MXNetError(f"{self.name}: [{p.low}, {p.high}) does not fit int32; "
                             "pass dtype='int64'")
        return [ctx.rng.integers(p.low, p.high, shape, dtype=dt)]


# The largest integer each output dtype of _sample_multinomial holds exactly.
_EXACT_MAX = {"uint8": 255, "int32": 2 ** 31 - 1, "float16": 2 ** 11, "float32": 2 ** 24,
              "float64": 2 ** 53}


def _check_index_dtype(opname, dtype, categories):
    """Every category index (0 .. categories-1) must be exact in the output dtype,
    else draws would come back as other categories (or inf)."""
    limit = _EXACT_MAX.get(str(np.dtype(dtype)))
    if limit is not None and categories - 1 > limit:
        raise ShapeError(f"{opname}: dtype {np.dtype(dtype).name} cannot hold the category "
                         f"indices of {categories} categories exactly (largest exact value "
                         f"{limit}); use dtype='int32' or 'float64'")


@register
class SampleMultinomial(Op):
    """Draw category indices from the discrete distributions on the last axis of
    ``data`` (probabilities, normalised per row). The output shape is
    ``data.shape[:-1] + shape``; with ``get_prob=True`` a second output holds the log
    probability of each draw (differentiable with respect to ``data``)."""
    name = "_sample_multinomial"
    aliases = ("sample_multinomial",)
    params = Schema(shape=Shape(()), get_prob=Bool(False),
                    dtype=RandDType(("float16", "float32", "float64", "int32", "uint8"),
                                    "int32"))
    backward_uses = ("out_grad", "in_data", "out_data")
    resources = ("random",)

    def outputs(self, p):
        return ["output", "prob"] if p.get_prob else ["output"]

    def _shape(self, p, dshape):
        return tuple(dshape[:-1]) + tuple(p.shape) or (1,)

    def infer_shape(self, p, in_shapes):
        s = in_shapes[0]
        out = None if s is None else self._shape(p, s)
        if s:
            _check_index_dtype(self.name, p.dtype, s[-1])
        return [s], [out] * len(self.outputs(p)), []

    def infer_type(self, p, in_types):
        t = in_types[0]
        outs = [np.dtype(p.dtype)] + ([t] if p.get_prob else [])
        return [t], outs, []

    def forward(self, ctx, p, inputs, aux):
        xp, rng, data = ctx.xp, ctx.rng, inputs[0]
        k = data.shape[-1]
        _check_index_dtype(self.name, p.dtype, k)      # imperative calls skip infer_shape
        b, s = _prod(data.shape[:-1]), _prod(p.shape)
        prob = data.reshape(b, k).astype(np.float64)
        cdf = xp.cumsum(prob, axis=1)
        cdf /= cdf[:, -1:]
        # One sorted search for every row: row r's CDF is shifted into [r, r + 1].
        offset = xp.arange(b, dtype=np.float64)[:, None]
        u = rng.random((b, s), dtype=np.float64) + offset
        idx = xp.searchsorted((cdf + offset).ravel(), u.ravel(), side="right").reshape(b, s)
        idx = xp.minimum(idx - xp.arange(b)[:, None] * k, k - 1)
        shape = self._shape(p, data.shape)
        outs = [idx.astype(p.dtype).reshape(shape)]
        if p.get_prob:
            picked = xp.take_along_axis(data.reshape(b, k), idx, axis=1)
            outs.append(xp.log(picked).reshape(shape))
        return outs

    def backward(self, ctx, p, out_grads, inputs, outputs, aux):
        xp, data = ctx.xp, inputs[0]
        k = data.shape[-1]
        b = _prod(data.shape[:-1])
        if not p.get_prob or len(out_grads) < 2 or out_grads[1] is None:
            return [xp.zeros(data.shape, dtype=data.dtype)]
        idx = outputs[0].reshape(b, -1).astype(np.int64)
        flat = (idx + xp.arange(b)[:, None] * k).ravel()
        d = data.reshape(b, k)
        # d log p[i] / d p[i] = 1 / p[i], summed over the draws that picked i.
        w = out_grads[1].reshape(b, -1) / xp.take_along_axis(d, idx, axis=1)
        g = xp.bincount(flat, weights=w.ravel().astype(np.float64), minlength=b * k)
        return [g.reshape(data.shape).astype(data.dtype)]


@register
class Shuffle(Op):
    """Randomly permute the elements along the first axis."""
    name = "_shuffle"
    aliases = ("shuffle",)
    params = Schema()
    backward_uses = ()
    resources = ("random",)

    def forward(self, ctx, p, inputs, aux):
        x = inputs[0]
        rng = ctx.rng
        perm = rng.permutation(x.shape[0]) if hasattr(rng, "permutation") else \
            ctx.xp.argsort(rng.random(x.shape[0]))
        return [x[perm]]
