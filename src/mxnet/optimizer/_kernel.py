"""Run an in-place update rule on NDArrays' device arrays, ordered by the engine.

MXNet writes the optimizers that have no fused update operator (AdaGrad, AdaDelta,
Adamax, Nadam, DCASGD, SGLD, ...) as a chain of NDArray expressions, each a kernel and
a temporary. Here such a rule is one function over the raw arrays (NumPy or CuPy, via
``xp``) that updates its state arrays in place: one engine step, no temporaries beyond
what the function makes. The engine sees the arrays it reads as const and the arrays it
updates as mutated, so it is ordered exactly like an operator with aux states.
"""
from .. import engine
from ..backend import array_module
from ..base import MXNetError

__all__ = ["apply_inplace"]


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

    chunks = [a._chunk for a in list(reads) + list(writes)]
    if all(not c.num_pending and c.exception is None and c.data is not None
           for c in chunks):
        run()                         # everything is ready: skip the thread hand-off
        return
    engine.get().push_sync(run, ctx, [a._chunk for a in reads],
                           [w._chunk for w in writes], 0, name)

