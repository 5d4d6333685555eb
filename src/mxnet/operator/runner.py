"""The operator runner: the one place an operator's forward or backward is run, for
imperative calls (``ndarray.dispatch``), autograd and the executor.

It builds the OpContext, picks the device kernel from the kernel table (falling back
to the operator's ``xp`` body), hands write-into-outputs operators the arrays to write
into, applies each output's req (``apply_req``), fills missing output gradients with
zeros, answers ``zero_grad`` operators without calling them, and turns a failure
inside an operator body into one MXNetError format (operator, node, input shapes).

Requests: ``out``/``in_grad`` is None (the caller takes fresh results) or a list with
one destination array (or None) per result, and ``req`` a matching list of 'null',
'write', 'inplace' or 'add' (None: all 'write'). A write-into-outputs operator
(``Op.writes_outputs``) receives the destinations whose req is write/inplace; for
'add' it gets None and the runner adds its result; 'null' results are dropped. When
the operator returns the very array it was given, nothing is copied.
"""
import numpy as np

from ..backend import device_scope
from ..base import MXNetError
from ..engine import base as _engine_base
from ..engine.errors import operator_error
from .. import base as _base
from . import bfloat16 as _bf16
from .kernels import _TABLE as _KERNELS, same_memory
from .registry import REQ_ADD, REQ_NULL, OpContext, apply_req

__all__ = ["op_context", "forward", "backward", "op_error"]

_WRITE_REQS = ("write", "inplace")
_F16 = np.dtype(np.float16)
_DEVICES = {}


def op_context(xp, ctx, is_train=False, need_grad=None, in_shapes=None, req=None):
    """An OpContext for a call on ``ctx`` (``xp``: its array module)."""
    return OpContext(xp, ctx, is_train, need_grad, in_shapes, req)


def _given(dst, req):
    """What the operator may write into: destinations whose req is write/inplace."""
    if req is None:
        return list(dst)
    return [d if r in _WRITE_REQS else None for d, r in zip(dst, req)]


def _settle(results, dst, req, what):
    """Apply each result to its destination as its req says (no copy when the
    operator wrote into the destination itself). 'inplace' destinations, which share
    an input's buffer, are written last: another result may still be a view of it."""
    order = range(len(dst))
    if req is not None and "inplace" in req:
        order = sorted(order, key=lambda k: req[k] == "inplace")
    for k in order:
        d = dst[k]
        if d is None:
            continue
        v = results[k] if k < len(results) else None
        if v is d:
            continue
        r = "write" if req is None else req[k]
        if r == REQ_NULL:
            continue
        if v is None:
            if r != REQ_ADD:
                d[...] = 0
            continue
        if v.shape != d.shape:
            if v.size != d.size:
                raise MXNetError(f"{what}: result {k} has shape {tuple(v.shape)}, its "
                                 f"destination {tuple(d.shape)}")
            v = v.reshape(d.shape)
        if r == "inplace" and same_memory(v, d):
            continue        # e.g. add's gradient planned over its output gradient
        apply_req(d, r, v)


def _compute(op, body, octx, is_backward, args, given):
    """The device kernel from the table (unless it declines with NotImplemented), else
    the operator's own body; ``given``: the destinations (out= / in_grad=). bfloat16
    arrays go only to kernels and operators that take them; the rest compute them in
    float32 (operator/bfloat16.py)."""
    c = octx.ctx
    device = "gpu" if c is not None and c.device_typeid == 2 else "cpu"
    kern = _KERNELS and _KERNELS.get((op.name, device, is_backward))
    if _base.BFLOAT16_IN_USE and _bf16.involved(*args[1:]):
        if kern and getattr(kern, "bfloat16", False):
            res = kern(octx, *args, given)
            if res is not NotImplemented:
                return res
        if not _bf16.native(op, octx, is_backward, args, device == "gpu"):
            return _bf16.run_widened(_compute, op, body, octx, is_backward, args, given)
        kern = None
    if kern:
        res = kern(octx, *args, given)
        if res is not NotImplemented:
            return res
        if device == "cpu" and _bf16.involved(*args[1:], low=_F16):
            # float16 that the CPU kernel declined: in float32 (operator/bfloat16.py)
            return _bf16.run_widened(_compute, op, body, octx, is_backward, args, given,
                                     low=_F16)
    if op.writes_outputs:
        return body(octx, *args, given)
    return body(octx, *args)


def _profiled(name, octx, node):
    """_compute, wrapped by the profiler's hook when the profiler is on."""
    hook = _engine_base.profile_hook
    if hook is None:
        return _compute
    return hook(_compute, name, octx.ctx, "imperative" if node is None else "symbolic")


def before_forward(op, p, inputs):
    """What an operator asks to run before every forward: the run-time dtype checks
    (``Op.float_only``, ``Op.checks_types``), then its input rewrite
    (``Op.rewrites_inputs``)."""
    if op.float_only and inputs:
        t = inputs[0].dtype
        if t.kind != "f" and t != _base.bfloat16:
            raise MXNetError(f"{op.name}: only floating point types are supported, got "
                             f"{t.name}")
    if op.checks_types:
        # inputs of one dtype pass every such operator's inference: it runs (some
        # microseconds) only when they differ
        t0 = inputs[0].dtype if inputs else None
        if any(a.dtype != t0 for a in inputs):
            op.infer_type(p, [a.dtype for a in inputs])
    if op.rewrites_inputs:
        op.rewrite_inputs(p, inputs)


def forward(op, octx, p, inputs, aux, out=None, req=None, node=None, profile=True,
            _on_device=False):
    """Run op's forward; returns its results (the ``out`` arrays where it wrote into
    them). With ``out``, every result is also applied to its destination. When the
    profiler is on (``engine.base.profile_hook``), the call is recorded under the
    operator's name ("symbolic" for executor nodes, "imperative" otherwise);
    ``profile=False`` when the caller's engine push is recorded already. A GPU
    context's device is current while the operator runs (it allocates and launches
    there)."""
    c = octx.ctx
    if not _on_device and c is not None and c.device_typeid == 2:
        with device_scope(c):
            return forward(op, octx, p, inputs, aux, out, req, node, profile, True)
    try:
        if op.float_only or op.checks_types or op.rewrites_inputs:
            before_forward(op, p, inputs)
        given = None if out is None else _given(out, req)
        compute = _profiled(op.name, octx, node) if profile and \
            _engine_base.profile_hook is not None else _compute
        res = compute(op, op.forward, octx, False, (p, inputs, aux), given)
        if out is not None:
            _settle(res, out, req, f"operator {op.name}")
        return res
    except (MXNetError, NotImplementedError):   # a missing feature keeps its type
        raise
    except Exception as err:
        raise op_error(op, p, [a.shape for a in inputs], err, node) from err


def backward(op, octx, p, out_grads, inputs, outputs, aux, in_grad=None, req=None,
             out_meta=None, node=None, _on_device=False):
    """Run op's backward; returns one gradient (or None) per argument.

    ``out_grads`` entries that are None become zeros of ``out_meta[i]`` ((shape,
    dtype) per output) when the operator reads out_grad. ``octx.need_grad`` defaults to
    every argument; ``octx.in_shapes`` must be set. ``in_grad``/``req``: destinations
    as for ``forward`` (a 'write' gradient that the operator leaves None is zeroed).
    """
    c = octx.ctx
    if not _on_device and c is not None and c.device_typeid == 2:
        with device_scope(c):
            return backward(op, octx, p, out_grads, inputs, outputs, aux, in_grad, req,
                            out_meta, node, True)
    need = octx.need_grad
    if need is None:
        need = octx.need_grad = [True] * len(octx.in_shapes)
    xp = octx.xp
    if out_grads is not None and out_meta is not None:
        for i, g in enumerate(out_grads):
            if g is None:
                shape, dtype = out_meta[i]
                out_grads[i] = xp.zeros(shape, dtype)
    try:
        if op.zero_grad:
            # A defined, zero gradient: 'write' destinations receive zeros, as in MXNet.
            dt = next((g.dtype for g in out_grads or () if g is not None), np.float32)
            res = [xp.zeros(s, dt) if w else None for s, w in zip(octx.in_shapes, need)]
        elif op.backward is None:
            raise MXNetError(f"Operator {op.name} is non-differentiable because it didn't "
                             "register FGradient attribute.")
        else:
            given = None if in_grad is None else _given(in_grad, req)
            # (the name is built only for the profiler, not on every call)
            compute = _compute if _engine_base.profile_hook is None else \
                _profiled("_backward_" + op.name, octx, node)
            res = compute(op, op.backward, octx, True, (p, out_grads, inputs, outputs, aux),
                          given)
        if in_grad is not None:
            _settle(res, in_grad, req, f"operator {op.name} backward")
        return res
    except (MXNetError, NotImplementedError):   # a missing feature keeps its type
        raise
    except Exception as err:
        raise op_error(op, p, octx.in_shapes, err, node, "backward") from err


def op_error(op, p, in_shapes, err, node=None, phase="forward"):
    """The MXNetError for a failure inside an operator body: the operator's own shape
    check when it rejects the shapes, else one line naming the operator, the node
    (when there is one), the input shapes and the original error."""
    shapes = [None if s is None else tuple(s) for s in in_shapes]
    if phase == "forward" and op.params is not None:
        try:
            n = len(shapes) if op.variadic is not None else len(op.arguments(p))
            op.infer_shape(p, shapes[:n])
        except MXNetError as shape_err:
            return shape_err
        except Exception:
            pass
    where = f"operator {op.name}" + (f" (node {node})" if node else "")
    return operator_error(err, f"Error in {where} {phase}, inputs of shape {shapes}: "
                               f"{type(err).__name__}: {err}")
