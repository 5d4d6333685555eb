"""Run an in-place update rule on NDArrays' device arrays, ordered by the engine.

MXNet writes the optimizers that have no fused update operator (AdaGrad, AdaDelta,
Adamax, Nadam, DCASGD, SGLD, ...) as a chain of NDArray expressions, each a kernel and
a temporary. Here such a rule is one function over the raw arrays (NumPy or CuPy, via
``xp``) that updates its state arrays in place: one engine step, no temporaries beyond
what the function makes. The engine sees the arrays it reads as const and the arrays it
updates as mutated, so it is ordered exactly like an operator with aux states.
"""
import numpy

from .. import engine
from ..backend import array_module, device_scope
from ..base import MXNetError

__all__ = ["apply_inplace", "fused_rule_on_gpu", "rule_in_place"]


def apply_inplace(name, fn, reads, writes, ctx=None, checked=False):
    """Call ``fn(xp, *read_arrays, *write_arrays)``; fn updates the write arrays in place.

    ``reads`` and ``writes`` are NDArrays on one context (``checked``: the caller has
    made sure of it). The call returns at once when the engine is asynchronous; later
    reads of ``writes`` wait for it.
    """
    ctx = ctx or writes[0].context
    if not checked:
        for a in list(reads) + list(writes):
            if a.context != ctx:
                raise MXNetError(f"{name}: all arrays must be on the same context; got "
                                 f"{a.context} and {ctx}")
    xp = array_module(ctx)

    def run(rctx=None):
        outs = [w._data for w in writes]
        fn(xp, *[a._data for a in reads], *outs)
        for w, d in zip(writes, outs):
            if w._sparse:       # a sparse array's _data is a dense copy: store it back
                w._set_dense(d)

    if _all_ready(reads) and _all_ready(writes):
        with device_scope(ctx):      # everything is ready: skip the thread hand-off
            run()
        return
    engine.get().push_sync(run, ctx, [a._chunk for a in reads],
                           [w._chunk for w in writes], 0, name)


def _all_ready(arrays):
    """Whether no array has pending work or a failure, and each holds its data."""
    for a in arrays:
        c = a._chunk
        if c.num_pending or c.exception is not None or c.data is None:
            return False
    return True


def fused_rule_on_gpu(name, weight, grad, states, params):
    """On a GPU, the update operator ``name`` (one of kernels_gpu_optim.RULES) written
    straight into ``weight`` and ``states`` as one engine step with one kernel launch:
    no temporary weight and no copy, which ``op(..., out=weight)`` needs (its result
    may not share memory with its inputs). Returns False, doing nothing, off the GPU,
    under the profiler (which shows the operator) and for arrays that are not plain
    dense NDArrays of one shape and float dtype; the caller then runs the operator."""
    from ..engine import base as engine_base
    if weight.context.device_typeid != 2 or engine_base.profile_hook is not None:
        return False
    return rule_in_place(name, weight, grad, states, params)


def rule_in_place(name, weight, grad, states, params):
    """``fused_rule_on_gpu`` on any context (the multi-tensor kernel where it takes the
    arrays, else the operator's own body written into the weight)."""
    from ..ndarray import NDArray
    from ..operator.kernels_gpu_optim import RULES
    from ..operator.registry import OpContext, get_op
    arrays = [weight, grad, *states]
    if any(type(a) is not NDArray or a.context != weight.context or a.shape != weight.shape
           or a.dtype != weight.dtype for a in arrays) or \
            numpy.dtype(weight.dtype) not in (numpy.dtype(numpy.float32),
                                              numpy.dtype(numpy.float64)):
        return False
    values = dict(params)
    values.setdefault("clip_gradient", -1.0)
    scalars = [[float(values[p]) for p in RULES[name][0]]]
    ctx = weight.context

    def run(xp, g, w, *st):
        from ..operator import kernels_gpu_multi
        if not kernels_gpu_multi.multi_update(xp, name, [[w, g, *st, w]], scalars):
            op = get_op(name)
            w[...] = op.forward(OpContext(xp, ctx), op.parse(values), [w, g], list(st))[0]
    apply_inplace(name, run, [grad], [weight, *states], ctx, checked=True)
    return True
