"""An operator that fails while computing, run inline in the calling thread, fails
the way it would on an engine worker: its outputs carry the error, raised at the first
sync point that depends on them (``wait_to_read``, ``asnumpy``, ``waitall``).

Parameter and shape errors are not computing errors: they still raise at the call.
"""
from .. import engine
from ..base import MXNetError
from ..engine.errors import describe_failure
from .chunk import Chunk
from .ndarray import NDArray
from ..resource import rng_var

__all__ = ["failed_outputs", "zero_fill"]


def failed_outputs(op, p, args, aux, ctx, outs_given, err):
    """The outputs of ``op`` whose body raised ``err``, poisoned with it. Raises at
    once instead when the inputs do not pass the operator's shape/type inference (the
    same check that raises at the call on the engine path)."""
    from .dispatch import infer_output_meta
    in_shapes = [a.shape for a in (*args, *aux)]
    try:
        shapes, dtypes = infer_output_meta(op, p, args, aux)
    except MXNetError as shape_err:
        raise shape_err from err
    except Exception:           # no usable inference: nothing to attach the error to
        raise describe_failure(err, op.name, in_shapes) from err
    n_given = 0 if outs_given is None else len(outs_given)
    outputs = list(outs_given or ()) + [NDArray(Chunk(), s, t, ctx)
                                        for s, t in zip(shapes[n_given:], dtypes[n_given:])]
    mutated = [o._chunk for o in outputs] + [a._chunk for a in aux]
    if op.resources and "random" in op.resources:
        mutated.append(rng_var(ctx))     # as on the engine path: the generator is written
    engine.get().record_failure(err, mutated, op.name, in_shapes)
    return outputs


def zero_fill(arr):
    """Give arr's chunk a zero buffer when nothing ever wrote it (see NDArray._unwritten);
    a view's chunk gets a flat buffer reaching the end of the view."""
    from .dispatch import _xp
    c = arr._chunk
    if c.data is None:
        if arr._view is None:
            c.data = _xp(arr._ctx).zeros(arr._shape, arr._dtype)
        else:
            off, shape = arr._view
            n = 1
            for s in shape:
                n *= s
            c.data = _xp(arr._ctx).zeros((off + n,), arr._dtype)
    return c.data
