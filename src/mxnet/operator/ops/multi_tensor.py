"""Operators over lists of arrays, used by optimizers that update many weights in one
call: all_finite / multi_all_finite, multi_sum_sq, reset_arrays, multi_lars, and the
multi_*sgd* updates (plain, momentum, multi-precision; ``preloaded_*`` take the
learning rates and weight decays as the last two input arrays instead of parameters).

Inputs are interleaved per weight as MXNet orders them: (weight, grad) for sgd,
(weight, grad, mom), (weight, grad, weight32), (weight, grad, mom, weight32). The
update writes the new weights as outputs (callers pass ``out=weights``) and updates
momentum / float32 master copies in place, as MXNet's kernels mutate those inputs.
"""
from types import SimpleNamespace

import numpy as np

from ...base import MXNetError
from ..params import Bool, Field, Float, Int, Schema
from ..registry import Op, ShapeError, register
from .optimizer_ops import _sgd, _sgd_mom
from ..dtypes import F16_32_64, restrict_dtypes
from ..out_contract import adopt_out_contract


@register
@restrict_dtypes(F16_32_64, inputs="all")
class AllFinite(Op):
    """1.0 (float32, shape (1,)) when every element is finite, else 0.0. With
    ``init_output=False`` a given output keeps its value unless a non-finite is found."""
    name = "all_finite"
    params = Schema(init_output=Bool(True))
    backward_uses = ()

    def infer_shape(self, p, in_shapes):
        return in_shapes, [(1,)], []

    def infer_type(self, p, in_types):
        return in_types, [np.dtype(np.float32)], []

    def forward(self, ctx, p, inputs, aux, out=None):
        return [_finite_flag(ctx.xp, p, inputs, out)]


def _finite_flag(xp, p, arrays, out):
    # the answer stays an array of xp: on a GPU the host never waits for it (AMP's
    # deferred check hands the flag to the update kernels)
    ok = xp.ones((), dtype=bool)
    for a in arrays:
        ok &= xp.isfinite(a).all()
    prev = out[0] if out is not None and out[0] is not None and not p.init_output else None
    if prev is not None:
        prev[...] = xp.where(ok, prev, 0)
        return prev
    return ok.astype(np.float32).reshape(1)


@register
@restrict_dtypes(F16_32_64, inputs="all")
class MultiAllFinite(Op):
    """all_finite over ``num_arrays`` arrays at once."""
    name = "multi_all_finite"
    params = Schema(num_arrays=Int(1, low=1), init_output=Bool(True))
    variadic = "num_arrays"
    backward_uses = ()

    def infer_shape(self, p, in_shapes):
        _check_count(self.name, p, in_shapes)
        return in_shapes, [(1,)], []

    def infer_type(self, p, in_types):
        return in_types, [np.dtype(np.float32)], []

    def forward(self, ctx, p, inputs, aux, out=None):
        return [_finite_flag(ctx.xp, p, inputs, out)]


def _check_count(name, p, in_shapes):
    """A wrong number of arrays is a shape error (a call's is raised when it is bound,
    by operator.call; this one is for graphs loaded from JSON)."""
    if len(in_shapes) != p.num_arrays:
        raise ShapeError(f"{name}: num_arrays={p.num_arrays} but {len(in_shapes)} arrays "
                         "were given")


@register
@restrict_dtypes(F16_32_64, inputs="all")
class MultiSumSq(Op):
    """The sum of squares of each of ``num_arrays`` arrays, as a float32 vector."""
    name = "multi_sum_sq"
    params = Schema(num_arrays=Int(low=1))
    variadic = "num_arrays"
    backward_uses = ()

    def infer_shape(self, p, in_shapes):
        _check_count(self.name, p, in_shapes)
        return in_shapes, [(p.num_arrays,)], []

    def infer_type(self, p, in_types):
        return in_types, [np.dtype(np.float32)], []

    def forward(self, ctx, p, inputs, aux, out=None):
        xp = ctx.xp
        vals = [xp.square(a.astype(np.float32)).sum() for a in inputs]
        return [xp.asarray(xp.stack(vals), dtype=np.float32)]


@register
class ResetArrays(Op):
    """Set every input array to zero, in place; no outputs."""
    name = "reset_arrays"
    params = Schema(num_arrays=Int(low=1))
    variadic = "num_arrays"
    backward_uses = ()

    def outputs(self, p):
        return []

    def infer_shape(self, p, in_shapes):
        _check_count(self.name, p, in_shapes)
        return in_shapes, [], []

    def infer_type(self, p, in_types):
        return in_types, [], []

    def forward(self, ctx, p, inputs, aux, out=None):
        for a in inputs:
            a[...] = 0
        return []


@register
class MultiLars(Op):
    """LARS learning rates: lr * eta * |w| / (|g| * rescale_grad + wd * |w| + eps)
    where both norms are positive, else lr (norms from the sums of squares given)."""
    name = "multi_lars"
    params = Schema(eta=Float(), eps=Float(), rescale_grad=Float(1.0))
    backward_uses = ()

    def arguments(self, p):
        return ["lrs", "weights_sum_sq", "grads_sum_sq", "wds"]

    def infer_shape(self, p, in_shapes):
        s = next((x for x in in_shapes if x is not None), None)
        for x in in_shapes:
            if x is not None and tuple(x) != tuple(s):
                raise ShapeError(f"multi_lars: inputs must have one shape, got "
                                 f"{[None if y is None else tuple(y) for y in in_shapes]}")
        return [s] * 4, [s], []

    def forward(self, ctx, p, inputs, aux, out=None):
        xp = ctx.xp
        lrs, wsq, gsq, wds = inputs
        self.infer_shape(p, [a.shape for a in inputs])
        wn, gn = xp.sqrt(wsq), xp.sqrt(gsq)
        with np.errstate(divide="ignore", invalid="ignore"):
            scaled = lrs * p.eta * wn / (gn * p.rescale_grad + wds * wn + p.eps)
        return [xp.where((wn > 0) & (gn > 0), scaled, lrs).astype(lrs.dtype)]


class _MultiSGD(Op):
    """Shared parts of the multi_*sgd* updates (see the module docstring)."""
    momentum = False
    mp = False
    preloaded = False
    backward_uses = ()

    @property
    def per_weight(self):
        return 2 + self.momentum + self.mp

    def outputs(self, p):
        return [f"output{i}" for i in range(p.num_weights)]

    def _n_inputs(self, p):
        return p.num_weights * self.per_weight + (2 if self.preloaded else 0)

    def arguments(self, p):
        return [f"arg{i}" for i in range(self._n_inputs(p))]

    def check_params(self, p):
        if not self.preloaded and (len(p.lrs) != p.num_weights or
                                   len(p.wds) != p.num_weights):
            raise MXNetError(f"{self.name}: lrs and wds need num_weights="
                             f"{p.num_weights} values, got {len(p.lrs)} and {len(p.wds)}")

    def infer_shape(self, p, in_shapes):
        k = self.per_weight
        if len(in_shapes) != self._n_inputs(p):
            raise MXNetError(f"{self.name}: expected {self._n_inputs(p)} inputs for "
                             f"num_weights={p.num_weights}, got {len(in_shapes)}")
        outs = [in_shapes[i * k] for i in range(p.num_weights)]
        return in_shapes, outs, []

    def infer_type(self, p, in_types):
        k = self.per_weight
        return in_types, [in_types[i * k] for i in range(p.num_weights)], []

    def forward(self, ctx, p, inputs, aux, out=None):
        xp, k = ctx.xp, self.per_weight
        lrs, wds = (a.tolist() for a in inputs[-2:]) if self.preloaded else (p.lrs, p.wds)
        results = []
        for i in range(p.num_weights):
            group = inputs[i * k:(i + 1) * k]
            w, g = group[0], group[1]
            for a in group[1:]:
                if a.shape != w.shape:
                    raise ShapeError(f"{self.name}: weight {i} has shape {w.shape} but a "
                                     f"state or gradient has shape {a.shape}")
            hp = SimpleNamespace(lr=float(lrs[i]), wd=float(wds[i]),
                                 momentum=getattr(p, "momentum", 0.0),
                                 rescale_grad=p.rescale_grad, clip_gradient=p.clip_gradient)
            if self.mp:
                w32 = group[-1]
                g32 = g.astype(np.float32)
                new = (_sgd_mom(xp, hp, w32, g32, group[2]) if self.momentum
                       else _sgd(xp, hp, w32, g32))
                w32[...] = new
                results.append(new.astype(w.dtype))
            else:
                results.append(_sgd_mom(xp, hp, w, g, group[2]) if self.momentum
                               else _sgd(xp, hp, w, g))
        return results


_RULE = dict(rescale_grad=Float(1.0), clip_gradient=Float(-1.0), num_weights=Int(1, low=1))


class _FloatTuple(Field):
    """A tuple of floats (one number becomes a 1-tuple)."""
    kind = "tuple of <float>"

    def convert(self, v):
        if isinstance(v, (int, float)):
            return (float(v),)
        return tuple(float(x) for x in v)


def _multi(name, momentum, mp, preloaded, doc):
    fields = {}
    if not preloaded:
        fields.update(lrs=_FloatTuple(), wds=_FloatTuple())
    if momentum:
        fields["momentum"] = Float(0.0)
    fields.update(_RULE)
    register(type(f"Op_{name}", (_MultiSGD,), {
        "name": name, "momentum": momentum, "mp": mp, "preloaded": preloaded,
        "params": Schema(**fields), "__doc__": doc}))


for _pre in (False, True):
    _prefix = "preloaded_" if _pre else ""
    _multi(f"{_prefix}multi_sgd_update", False, False, _pre,
           "SGD on several weights: w = (1 - lr*wd) w - lr clip(rescale * g).")
    _multi(f"{_prefix}multi_sgd_mom_update", True, False, _pre,
           "SGD with momentum on several weights: mom = momentum*mom - lr*(wd*w + g); "
           "w += mom.")
    _multi(f"{_prefix}multi_mp_sgd_update", False, True, _pre,
           "Multi-precision SGD: the float32 master weights are updated in place and "
           "the outputs are their casts to the weights' type.")
    _multi(f"{_prefix}multi_mp_sgd_mom_update", True, True, _pre,
           "Multi-precision SGD with momentum (float32 momentum and master weights).")


adopt_out_contract(__name__)
