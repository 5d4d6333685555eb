"""Imperative dispatch: run one registered operator on NDArrays.

The path, step by step: parse parameters (cached per keyword set) -> split arguments
from auxiliary states -> if every input is idle and the work is small or on a GPU, run
the operator body now in this thread (the engine would do the same work at once; this
skips a thread hand-off that costs more than a small kernel or a GPU launch) ->
otherwise infer output shapes/dtypes, allocate the outputs and push the body to the
engine, which runs it once its inputs are ready -> record a node on the autograd tape
when recording.
"""
import numpy as np

from .. import tape as _tape
from .. import engine
from ..engine import base as _engine_base
from ..backend import device_scope
from ..base import MXNetError, env_int, numeric_types
from ..operator import runner
from ..operator.registry import ShapeError, get_op
from ..resource import rng_var
from .chunk import Chunk
from .failures import failed_outputs
from .ndarray import NDArray

__all__ = ["invoke", "invoke_by_name", "binary", "inplace_binary", "inplace_short", "store"]

_np = np
_ndarray = np.ndarray
# Inputs with more elements than this go through the engine asynchronously. Below it,
# idle work runs at once in the calling thread. Measured (2 cores): a hand-off to an
# engine worker costs ~50 us under the GIL, and queueing brought no overlap that paid
# for it: d2l's 3-layer MLP on one sample ran 3x faster inline (a 512x256 weight is
# 131k elements), Gluon CNN/ResNet training within noise. 4M elements (16 MB float32)
# keeps very large work off the calling thread.
ASYNC_MIN_ELEMS = env_int("MXNET_ASYNC_MIN_ELEMS", 1 << 22)
_ops = {}
_fwd_ctx = {}
_ag_state = _tape._state
_forward = runner.forward
# Operators whose sparse kernel may give sparse results from dense inputs.
from ..operator.kernels_sparse import (SPARSE_FROM_DENSE as _SPARSE_OUT_OPS,  # noqa: E402
                                       sparse_requested as _sparse_requested)


def invoke_by_name(name, inputs, kwargs, out=None, ctx=None):
    return invoke(_ops.get(name) or _resolve(name), inputs, kwargs, out, ctx)


def _op_context(xp, ctx, is_train):
    key = (ctx.device_typeid, ctx.device_id, is_train)
    oc = _fwd_ctx.get(key)
    if oc is None:
        oc = _fwd_ctx[key] = runner.op_context(xp, ctx, is_train)
    return oc


def _xp(ctx):
    if ctx.device_typeid != 2:           # cpu, cpu_pinned, cpu_shared: host memory
        return _np
    from ..backend import array_module
    return array_module(ctx)


# (n_args, nvis) of calls with non-default parameters, by id of the Params object:
# a layer calls its operator with the same parsed Params every step (the generated
# functions remember them per keyword set, the Schema caches its parses), and asking
# the operator for its argument and output lists each call costs more than a small
# kernel. Each entry holds its Params and operator, so the id cannot be reused while
# the entry exists; Params are never changed once parsed (the same assumption as the
# defaults' ``_default_meta``).
_META = {}
_META_MAX = 1024


def _call_meta(op, p):
    """(number of arguments or None for variadic ops, number of visible outputs)."""
    if p is op.__dict__.get("_defaults"):
        meta = op.__dict__.get("_default_meta")
        if meta is None:
            meta = op._default_meta = (None if op.variadic is not None else
                                       len(op.arguments(p)), op.num_visible_outputs(p))
        return meta
    hit = _META.get(id(p))
    if hit is not None and hit[0] is p and hit[1] is op:
        return hit[2]
    meta = (None if op.variadic is not None else len(op.arguments(p)),
            op.num_visible_outputs(p))
    if len(_META) >= _META_MAX:
        _META.clear()
    _META[id(p)] = (p, op, meta)
    return meta


def invoke(op, inputs, kwargs, out=None, ctx=None, p=None, _dense_only=False,
           _on_device=False):
    """Run op on NDArray inputs (arguments then aux states). Returns an NDArray, or a
    list when the operator has several visible outputs, or ``out`` when given."""
    if p is None:
        p = op.parse(kwargs) if kwargs else op._default_params()
    # --- sparse storage: calls with a sparse array go to ndarray.sparse_dispatch ---
    if not _dense_only and (_has_sparse(inputs, out) or (
            op.name in _SPARSE_OUT_OPS and _sparse_requested(op.name, p))):
        from .sparse_dispatch import sparse_invoke
        return sparse_invoke(op, p, inputs, out, ctx)
    n_args, nvis = _call_meta(op, p)
    if op.permutes_inputs:          # (auxiliary states among the inputs: subgraph nodes)
        inputs = [inputs[j] for j in op.input_order(p)]
    if n_args is None or n_args == len(inputs):
        args, aux = inputs, ()
    else:
        args, aux = inputs[:n_args], inputs[n_args:]
    if ctx is None:
        ctx = inputs[0]._ctx if inputs else _default_ctx()
    if ctx.device_typeid == 2 and not _on_device:
        # CuPy allocates and launches on the thread's current device: gpu(k)'s call
        # (its outputs, its kernels, what it records) runs with device k current
        with device_scope(ctx):
            return invoke(op, inputs, kwargs, out, ctx, p, _dense_only, True)
    state = _ag_state
    is_train = state.training

    idle = True
    size = 0
    for a in inputs:
        c = a._chunk
        if c.num_pending or c.exception is not None or (a._ctx is not ctx and
                                                         not _same_device(a._ctx, ctx)):
            idle = False
            break
        d = c.data
        if d is not None:
            size += d.size
    if idle and op.resources and "random" in op.resources and (
            rng_var(ctx).num_pending or rng_var(ctx).exception is not None):
        idle = False          # earlier draws on this generator are queued (or failed)
    if out is not None:
        outs_given = out if isinstance(out, (list, tuple)) else [out]
        if _ag_state.recording:
            _tape.refuse_recorded_destinations(outs_given, inputs)
        _check_out_dtypes(op, p, args, outs_given)
        for o in outs_given:
            if o._chunk.num_pending:
                idle = False
    else:
        outs_given = None

    # GPU work runs in this thread whatever its size: its kernels are queued on the
    # device's stream and return at once, so an engine worker would only add a thread
    # hand-off (and contend for the GIL) per call
    if idle and (size <= ASYNC_MIN_ELEMS or ctx.device_typeid == 2):
        # keyed by the context's numbers: a tuple of Context objects would hash
        # through Context.__hash__, a Python call, on every operator call
        octx = _fwd_ctx.get((ctx.device_typeid, ctx.device_id, is_train))
        if octx is None:
            octx = _op_context(_xp(ctx), ctx, is_train)
        dst = None
        if outs_given is not None and op.writes_outputs:
            dst = _destinations(op, p, args, aux, outs_given)
        try:
            # _on_device: a GPU call entered its device's scope above; the runner
            # need not ask the driver again
            results = _forward(op, octx, p, [a._data for a in args],
                               [a._data for a in aux] if aux else [],
                               dst, _on_device=_on_device)
        except NotImplementedError:     # a missing feature, not a computing error
            raise
        except Exception as err:        # raised at the sync point, as on the engine
            outputs = failed_outputs(op, p, args, aux, ctx, outs_given, err)
        else:
            if outs_given is None and len(results) == 1:
                d = _fresh(results[0], args)
                outputs = [NDArray(Chunk(d), d.shape, d.dtype, ctx)]
            else:
                outputs = _wrap_results(results, args, ctx, outs_given, dst)
    else:
        outputs = _push(op, p, args, aux, ctx, is_train, outs_given)

    if state.recording:
        _tape.record_call(op, p, args, aux, outputs, is_train, ctx)
    if out is not None:
        return out
    return outputs[0] if nvis == 1 else outputs[:nvis]


def _has_sparse(inputs, out):
    for a in inputs:
        if a._sparse:
            return True
    if out is not None:
        for o in (out if isinstance(out, (list, tuple)) else (out,)):
            if o._sparse:
                return True
    return False


def _same_device(a, b):
    """cpu, cpu_pinned and cpu_shared arrays all live in host memory and mix freely."""
    return a == b or (a.device_typeid != 2 and b.device_typeid != 2)


def _default_ctx():
    from ..context import current_context
    return current_context()


def _fresh(r, args):
    """r as an array this call owns: contiguous, not sharing memory with an input."""
    if not isinstance(r, _ndarray):
        if isinstance(r, (np.generic, numeric_types)):
            return _np.asarray(r)
        return r.copy() if getattr(r, "base", None) is not None else r   # cupy
    if r.base is not None:
        for a in args:
            if _np.may_share_memory(r, a._chunk.data):
                return r.copy()
    if not r.flags.c_contiguous:
        return _np.ascontiguousarray(r)
    return r


def _check_out_dtypes(op, p, args, outs_given):
    """An ``out=`` must have the dtype the call's output has, as in MXNet 1.9.1 (whose
    type inference refuses the call rather than cast). Where the operator leaves its
    output type open (a ``dtype`` parameter of None: the random samplers), the given
    array decides it, as MXNet's inference does from a provided output."""
    if getattr(p, "dtype", 0) is None:
        return
    _, types, _ = op.infer_type(p, [a._dtype for a in args])
    for i, (o, t) in enumerate(zip(outs_given, types)):
        if t is not None and o._dtype != t:
            raise MXNetError(
                f"{op.name}: out= has dtype {np.dtype(o._dtype).name}, but output {i} of "
                f"this call is {np.dtype(t).name} (incompatible attr at {i}-th output: "
                f"expected {np.dtype(t).name}, got {np.dtype(o._dtype).name})")


def _destinations(op, p, args, aux, outs_given):
    """The given output arrays' memory for a write-into-outputs operator: each one of
    the inferred shape and dtype that shares no memory with an input (else None, and
    the result is copied)."""
    shapes, types = infer_output_meta(op, p, args, aux)
    dst = []
    for o, s, t in zip(outs_given, shapes, types):
        d = o._chunk.data
        if d is None or o._shape != s or o._dtype != t:
            dst.append(None)
            continue
        d = o._data
        # an out= that overlaps an input gets the result copied (operators may read an
        # input after writing part of their output); unknown overlap counts as overlap
        overlaps = getattr(_xp(o._ctx), "may_share_memory", None)
        shared = overlaps is None or any(overlaps(d, a._chunk.data) for a in args
                                         if a._chunk.data is not None)
        dst.append(None if shared else d)
    return dst


def _wrap_results(results, args, ctx, outs_given, dst=None):
    if outs_given is None:
        return [NDArray(Chunk(d), d.shape, d.dtype, ctx)
                for d in (_fresh(r, args) for r in results)]
    for k, (o, r) in enumerate(zip(outs_given, results)):
        if dst is None or dst[k] is None:      # else the runner wrote it already
            store(o, r, args)
    return list(outs_given) + [NDArray(Chunk(d), d.shape, d.dtype, ctx)
                               for d in (_fresh(r, args) for r in results[len(outs_given):])]


def store(dst, value, sources=()):
    """Write value into NDArray dst: swap the buffer when dst owns its whole chunk,
    else copy into dst's memory (views, pooled buffers)."""
    c = dst._chunk
    if dst._ctx.device_typeid == 2:
        if isinstance(value, _ndarray):
            # a host result for a GPU array (a Python operator computed it with NumPy):
            # the array must keep device memory, or the next GPU kernel gets NumPy data
            from ..backend import device_put
            value = device_put(value, dst._ctx)
    elif not isinstance(value, (_ndarray, _np.generic)) and hasattr(value, "get"):
        value = value.get()         # a CuPy result for a host array
    # a whole fresh result replaces the buffer (no copy), except a cpu_pinned array's
    # (its page-locked memory is what makes its GPU copies fast) and memory shared
    # with another library (Chunk.exported): those are written into
    if (dst._view is None and c.block is None and not c.exported
            and isinstance(value, _ndarray)
            and value.shape == dst._shape and value.dtype == dst._dtype
            and dst._ctx.device_typeid != 3):
        c.data = _fresh(value, sources)
        return
    if value.shape != dst._shape and value.size != dst.size:
        try:
            fits = _np.broadcast_shapes(value.shape, dst._shape) == dst._shape
        except ValueError:          # (NumPy's word for shapes that do not broadcast)
            fits = False
        if not fits:
            raise MXNetError(f"cannot write an array of shape {value.shape} into one of "
                             f"shape {dst._shape}")
    if c.data is None:
        c.data = _xp(dst._ctx).empty(dst._shape if dst._view is None else value.shape,
                                     dst._dtype)
    target = dst._data
    target[...] = value.reshape(target.shape) if value.size == target.size else value


def infer_output_meta(op, p, args, aux):
    """Output shapes and dtypes from the operator's inference functions."""
    in_shapes = [a.shape for a in args]
    _, out_shapes, _ = op.infer_shape(p, in_shapes)
    _, out_types, _ = op.infer_type(p, [a._dtype for a in args])
    for i, s in enumerate(out_shapes):
        if s is None or any(d is None for d in s):
            raise ShapeError(f"{op.name}: cannot infer the shape of output {i} from input "
                             f"shapes {in_shapes}")
    return [tuple(s) for s in out_shapes], [np.dtype(t if t is not None else np.float32)
                                            for t in out_types]


def _push(op, p, args, aux, ctx, is_train, outs_given):
    """Allocate outputs from inferred shapes and let the engine run the body."""
    if ctx.device_typeid == 2:
        from ..backend import check_context
        check_context(ctx)
    for a in list(args) + list(aux):
        if not _same_device(a._ctx, ctx):
            raise MXNetError(f"operator {op.name}: all inputs must be on the same context; "
                             f"got {a._ctx} and {ctx}")
    out_shapes, out_types = infer_output_meta(op, p, args, aux)
    n_given = 0 if outs_given is None else len(outs_given)
    outputs = list(outs_given or []) + [NDArray(Chunk(), s, t, ctx)
                                        for s, t in zip(out_shapes[n_given:],
                                                        out_types[n_given:])]
    xp = _xp(ctx)

    def run(rctx):
        dst = None
        if op.writes_outputs:
            # the outputs' memory, allocated here and written by the operator itself
            dst = _destinations(op, p, args, aux, outputs[:n_given]) if n_given else []
            for o in outputs[n_given:]:
                d = o._chunk.data = xp.empty(o._shape, o._dtype)
                dst.append(d)
        # profile=False: the engine push below is what the profiler records
        results = _forward(op, runner.op_context(xp, ctx, is_train), p,
                           [a._data for a in args], [a._data for a in aux], dst,
                           profile=False)
        for k, (o, r) in enumerate(zip(outputs, results)):
            if dst is None or dst[k] is None:
                store(o, r, args)

    const = [a._chunk for a in args]
    mutate = [o._chunk for o in outputs] + [a._chunk for a in aux]
    if op.resources and "random" in op.resources:
        mutate.append(rng_var(ctx))
    engine.get().push_sync(run, ctx, const, mutate, 0, op.name)
    return outputs


def _resolve(name):
    op = _ops.get(name)
    if op is None:
        op = _ops[name] = get_op(name)
    return op


# ``a + b``, ``a - b``, ``a * b`` on two host arrays of one shape and dtype: the
# operator's forward is exactly this ufunc, so the short path calls it directly.
_SHORT = {name: (fn, (name, "cpu", False)) for name, fn in (
    ("broadcast_add", _np.add), ("broadcast_sub", _np.subtract),
    ("broadcast_mul", _np.multiply))}
_SHORT_KINDS = "fiu"            # bool arithmetic differs between NumPy and MXNet
# Array classes whose same-shape, same-dtype ``+ - *`` is exactly the ufunc's result in
# the operands' class: NDArray, and mx.np.ndarray (numpy/multiarray.py adds itself)
SHORT_CLASSES = {NDArray}
_KERNELS = runner._KERNELS


# ``a += 1.0`` and friends on a float array: the scalar operators' forward there is the
# ufunc with the number cast to the array's dtype
_SHORT_SCALAR = {"_plus_scalar": _np.add, "_minus_scalar": _np.subtract,
                 "_mul_scalar": _np.multiply, "_div_scalar": _np.divide}


def inplace_short(lhs, rhs, op, scalar_op):
    """Write ``lhs <op>= rhs`` with the ufunc into lhs's memory and return True, where
    that is exactly what the operator gives: the conditions of ``binary``'s short path
    (rhs an array of lhs's class, shape and dtype), or rhs a Python number and lhs a
    float array (the scalar operators cast the number to lhs's dtype). Else False."""
    cls = lhs.__class__
    if cls not in SHORT_CLASSES or _ag_state.recording or \
            _engine_base.profile_hook is not None:
        return False
    cl = lhs._chunk
    ctx = lhs._ctx
    if cl.num_pending or cl.exception is not None or cl.data is None or \
            ctx.device_typeid == 2 or not lhs._shape:
        return False
    if rhs.__class__ is cls:
        short = _SHORT.get(op)
        cr = rhs._chunk
        if short is None or cr.num_pending or cr.exception is not None or \
                cr.data is None or rhs._shape != lhs._shape or \
                lhs._dtype is not rhs._dtype or lhs._dtype.kind not in _SHORT_KINDS or \
                not (rhs._ctx is ctx or rhs._ctx == ctx) or short[1] in _KERNELS or \
                lhs.size * 2 > ASYNC_MIN_ELEMS:
            return False
        target = lhs._data
        short[0](target, rhs._data, out=target)
        return True
    if rhs.__class__ in (int, float) and lhs._dtype.kind == "f":
        fn = _SHORT_SCALAR.get(scalar_op)
        if fn is None or (scalar_op, "cpu", False) in _KERNELS or \
                lhs.size > ASYNC_MIN_ELEMS:
            return False
        target = lhs._data
        fn(target, lhs._dtype.type(rhs), out=target)
        return True
    return False


def inplace_binary(lhs, rhs, op, scalar_op):
    """``lhs <op>= rhs`` (rhs an NDArray or a number), written into lhs; returns lhs:
    the short path where it applies (``inplace_short``), else the operator with
    ``out=lhs``."""
    if inplace_short(lhs, rhs, op, scalar_op):
        return lhs
    if isinstance(rhs, NDArray):
        return invoke(_ops.get(op) or _resolve(op), [lhs, rhs], None, out=lhs)
    if isinstance(rhs, numeric_types):
        return invoke(_ops.get(scalar_op) or _resolve(scalar_op), [lhs],
                      {"scalar": float(rhs)}, out=lhs)
    raise TypeError(f"type {type(rhs).__name__} not supported")


def binary(lhs, rhs, op, scalar_op, reflect=False):
    """lhs (an NDArray) <op> rhs (NDArray or number); reflect: rhs <op> lhs.

    The short path: when both arrays are plain dense host NDArrays of one shape (not
    0-d: the ufunc would give a scalar), dtype and context, idle (no pending writes, no failure) and small, and nothing watches
    the call (autograd recording, the profiler, a registered kernel), the ufunc runs
    here and its fresh result is wrapped; everything else goes through ``invoke``."""
    cls = lhs.__class__
    if rhs.__class__ is cls and cls in SHORT_CLASSES:
        short = _SHORT.get(op)
        if short is not None:
            cl, cr = lhs._chunk, rhs._chunk
            ctx = lhs._ctx
            shape = lhs._shape
            if not (cl.num_pending or cr.num_pending or _ag_state.recording) \
                    and cl.exception is None and cr.exception is None \
                    and (rhs._ctx is ctx or rhs._ctx == ctx) and rhs._shape == shape \
                    and shape \
                    and lhs._dtype is rhs._dtype and ctx.device_typeid != 2 \
                    and lhs._dtype.kind in _SHORT_KINDS \
                    and _engine_base.profile_hook is None and short[1] not in _KERNELS \
                    and cl.data is not None and cr.data is not None:
                x, y = lhs._data, rhs._data
                if x.size * 2 <= ASYNC_MIN_ELEMS:
                    fn = short[0]
                    return cls(Chunk(fn(y, x) if reflect else fn(x, y)), shape,
                               lhs._dtype, ctx)
    if isinstance(rhs, NDArray):
        return invoke(_ops.get(op) or _resolve(op), [rhs, lhs] if reflect else [lhs, rhs],
                      None)
    if isinstance(rhs, numeric_types):
        return invoke(_ops.get(scalar_op) or _resolve(scalar_op), [lhs],
                      {"scalar": float(rhs)})
    if isinstance(rhs, np.ndarray):
        from .creation import array
        other = array(rhs, ctx=lhs._ctx, dtype=lhs._dtype)
        return invoke_by_name(op, [other, lhs] if reflect else [lhs, other], {})
    return NotImplemented
