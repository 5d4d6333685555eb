"""bfloat16 operators computed in float32: how the runner runs an operator that is
given bfloat16 arrays.

A bfloat16 NDArray holds a NumPy (or CuPy) array of ml_dtypes' ``bfloat16`` type.
NumPy knows that type only through ml_dtypes' loops, which cover part of NumPy and
are silently wrong elsewhere (``np.floor`` hands back its input, ``np.finfo`` refuses
the type, a Python float promotes it to float32). MXNet's CPU kernels computed
bfloat16 in float32 and rounded the results, so pymxnet does the same: an operator
called with a bfloat16 array runs on float32 copies of its bfloat16 arrays, its
results are rounded back to bfloat16 (into the given outputs, or as fresh arrays of
the inferred output type), and auxiliary states it updated (BatchNorm's moving
statistics) are written back. Two kinds of operator take bfloat16 arrays as they are:

- a device kernel with the attribute ``bfloat16 = True`` (on the CPU oneDNN's
  convolution, inner product, pooling, batch norm and activations; on the GPU cuDNN's
  convolution, pooling and batch norm); when it declines (NotImplemented) the float32
  route runs;
- an operator with ``bfloat16_native = True``: casts and data movement (reshape,
  transpose, slicing, concatenation), where every type is moved the same way; on the
  GPU an operator with ``bfloat16_gpu = True`` (elemwise add, sub, mul: CuPy's
  bfloat16 ufuncs round each element once, as the float32 route does); and the
  backward of an operator whose gradients are its output gradient passed through
  (elemwise_add's).

float16 on the CPU takes the same float32 route where an operator has a CPU kernel
(oneDNN's convolution, inner product, batch norm, softmax, activations) that declines
float16: NumPy's float16 matrix products have no BLAS behind them (a float16 LeNet
trained ~100x slower than in float32), and MXNet's kernels accumulated float16 in
float32 as well.
"""
import numpy as np

from ..base import bfloat16

__all__ = ["involved", "run_widened", "native"]

_F32 = np.dtype(np.float32)


def involved(*groups, low=bfloat16):
    """Whether any array in the lists ``groups`` has the dtype ``low`` (bfloat16)."""
    for group in groups:
        if group:
            for a in group:
                if a is not None and a.dtype == low:
                    return True
    return False


def native(op, octx, is_backward, args, on_gpu=False):
    """Whether the call takes bfloat16 arrays as they are: operators that move or cast
    values (``bfloat16_native``), on the GPU the elementwise arithmetic CuPy rounds
    once per element (``bfloat16_gpu``), and a backward whose every gradient is the
    output gradient passed through (``backward_identity`` covering each argument,
    shapes equal: elemwise_add's), which is data movement too."""
    if op.bfloat16_native or (on_gpu and op.bfloat16_gpu):
        return True
    if not is_backward or not op.backward_identity:
        return False
    g = args[1][0] if args[1] else None
    shapes = octx.in_shapes
    return (g is not None and shapes is not None
            and {i for i, _ in op.backward_identity} >= set(range(len(shapes)))
            and all(s is not None and tuple(s) == g.shape for s in shapes))


def _widen(arrays, low):
    return [a.astype(_F32) if a is not None and a.dtype == low else a for a in arrays]


def _narrow(results, dtypes, low):
    """Each float32 result whose wanted dtype is ``low``, rounded to it."""
    out = list(results)
    for k, (r, t) in enumerate(zip(out, dtypes)):
        if r is not None and t == low and getattr(r, "dtype", None) == _F32:
            out[k] = r.astype(low)
    return out


def _write_back(originals, widened):
    """Auxiliary states the operator updated on their float32 copies."""
    for o, w in zip(originals, widened):
        if o is not w and o is not None:
            o[...] = w


def _forward_types(op, p, inputs, low):
    """The inferred output dtypes for these inputs (None where inference cannot tell:
    a float32 result is then taken to be the widening's, ``low`` wanted)."""
    try:
        _, out_types, _ = op.infer_type(p, [a.dtype for a in inputs])
    except Exception:   # inference refusing a type: its operator body would too
        return []
    return [low if t is None else np.dtype(t) for t in out_types or ()]


def run_widened(compute, op, body, octx, is_backward, args, given, low=bfloat16):
    """``compute(op, body, octx, is_backward, args, given)`` (the runner's) on float32
    copies of the ``low`` (bfloat16, or float16 on the CPU) arrays in ``args``. A result
    with a given destination is rounded when the runner applies it to that
    destination; the others come back rounded to ``low`` where that is their type
    (forward: the inferred output type; backward: the input's type). ``octx`` goes on
    marked as widened (OpContext.widened)."""
    octx = octx.widened(low)
    if is_backward:
        p, out_grads, inputs, outputs, aux = args
        w_aux = _widen(aux, low)
        res = compute(op, body, octx, True,
                      (p, None if out_grads is None else _widen(out_grads, low),
                       _widen(inputs, low), _widen(outputs, low), w_aux), None)
        wanted = [None if a is None else a.dtype for a in inputs]
    else:
        p, inputs, aux = args
        w_aux = _widen(aux, low)
        res = compute(op, body, octx, False, (p, _widen(inputs, low), w_aux), None)
        wanted = _forward_types(op, p, inputs, low)
    _write_back(aux, w_aux)
    wanted = list(wanted[:len(res)]) + [low] * (len(res) - len(wanted))
    for k, g in enumerate(given or ()):
        if g is not None and k < len(wanted):
            wanted[k] = None
    return _narrow(res, wanted, low)
