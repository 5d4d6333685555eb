"""The executor's steady-state loops: forward and backward as prepared call lists.

Everything that does not change between runs is worked out once, when the executor is
bound: per node, the kernel-table key, the operator body, the requests, the OpContext,
and every array it reads or writes as an index into one flat value list (``vals``:
the graph's entries, then the gradient entries, then one slot per argument gradient,
then a slot that always holds None). A run then only refreshes the slots of the arrays
the caller may have replaced (arguments, outputs, gradients), and each node's call is a
few list gathers and one function call: no shape or dtype inference, no dicts, no
closures, no per-node try blocks (a failure is traced back to its node once, after the
fact, with the runner's message).

The runner's semantics are kept: the device kernel from the kernel table first (looked
up at every call, so kernels registered later are seen), the operator's body when it
declines; results that are not the destination array are applied with the runner's
``_settle``; operators without a backward or with a defined zero gradient, and runs
that a monitor or the profiler watches, go through ``operator.runner`` itself.

This is also the seam for whole-step capture (CUDA graphs): ``run_forward(calls,
vals, octx)`` and ``run_backward(calls, vals, is_train)`` run one phase from the value
list alone; once the executor has refreshed ``vals`` they touch only the arrays it
holds. A device module that captures or replays whole phases sets ``step_hook``: the
executor then calls ``step_hook(executor, phase, run)`` ('forward' / 'backward', with
``run()`` the phase's prepared loop over the refreshed ``executor._vals``) instead of
``run()``. The hook runs inside the engine operation of the phase, after the refresh;
it sees the planned buffers (fixed for the executor's life) and the caller's arrays
(arguments, outputs, gradients, which a CachedOp re-points at every call).
"""
import numpy as np

from ..base import MXNetError, bfloat16
from ..operator import runner
from . import layout
from ..operator.kernels import _TABLE as _KERNELS
from .fusion import FusedStep

__all__ = ["FwdCall", "BwdCall", "prepare_forward", "prepare_backward", "run_forward",
           "run_backward", "step_hook", "low_precision"]

step_hook = None        # see the module docstring: whole-phase capture/replay

_WRITES = ("write", "inplace")
_F16 = np.dtype(np.float16)


class FwdCall:
    """One forward node: ``ins``/``outs`` index ``vals`` (the None slot for an output
    nothing reads); ``aux0``: where the auxiliary states start in ``ins``."""
    __slots__ = ("op", "p", "name", "key", "body", "wo", "ins", "aux0", "outs", "req",
                 "fused", "then", "lay", "agnostic", "convert", "low_precision", "scheme")


class BwdCall:
    """One backward node: indices into ``vals`` for the output gradients, inputs,
    outputs, auxiliary states and gradient destinations; ``given``: the destinations
    the operator writes itself (None: all of them); ``zeros``: (position, shape, dtype)
    of output gradients nothing sends; ``slow``: run through ``runner.backward``;
    ``low_precision``: the node has bfloat16 (or, on the CPU, float16) arrays (see
    ``low_precision``); ``fused``: a kernel standing for more than one backward
    (executor/backward_fusion.py), with ``then`` the plain calls it replaces, run when
    it declines."""
    __slots__ = ("op", "p", "name", "key", "body", "wo", "octx", "ograds", "ins", "outd",
                 "aux", "tgts", "req", "given", "zeros", "slow", "out_meta", "lay",
                 "agnostic", "convert", "low_precision", "scheme", "fused", "then")


def _key(op, device, backward):
    return (op.name, device, backward)


def _layout(c, parts, blocked, in_shapes, out_shapes, scheme):
    """Set the call's layout flags (OpContext.layout: per part, which arrays are
    blocked; None when none is), whether the operator is layout-agnostic, and whether
    it must run on plain copies (an agnostic operator whose arrays differ in layout,
    which only a fused pair's fallback meets)."""
    flags = tuple(tuple(e in blocked for e in part) for part in parts)
    c.scheme = scheme
    if not any(any(f) for f in flags):
        c.lay, c.agnostic, c.convert = None, False, False
        return
    c.lay = flags
    c.agnostic = scheme.agnostic(c.op.name, c.p, in_shapes, out_shapes)
    present = [f for part, fl in zip(parts, flags) for e, f in zip(part, fl) if e is not None]
    c.convert = c.agnostic and not all(present)


def prepare_forward(steps, none_slot, device, blocked=frozenset(), graph=None,
                    scheme=None):
    """FwdCalls for the executor's forward steps (``_FwdStep``s and ``FusedStep``s);
    ``blocked``: the entries held in ``scheme``'s layout (executor/layout.py; default:
    oneDNN's channel-blocked one), with ``graph`` for their shapes."""
    scheme = layout.ONEDNN_BLOCKED if scheme is None else scheme
    calls = []
    for s in steps:
        c = FwdCall()
        first = s.first if s.__class__ is FusedStep else s
        then = s.then if s.__class__ is FusedStep else s
        c.op, c.p, c.name = first.op, first.p, first.node.name
        c.key = _key(first.op, device, False)
        c.body, c.wo = first.op.forward, first.op.writes_outputs
        c.ins = list(first.inputs)
        c.aux0 = first.n_args
        c.outs = [none_slot if e is None else e for e in then.outs]
        c.req = then.req
        c.fused = s.fn if s.__class__ is FusedStep else None
        extra = range(0)
        if c.fused is not None and len(first.outs) > 1:
            # a multi-output producer's other outputs, which its fused kernel writes
            c.outs += [none_slot if e is None else e for e in first.outs[1:]]
            c.req = list(then.req) + list(first.req[1:])
            extra = range(graph.row_ptr[first.nid] + 1, graph.row_ptr[first.nid + 1]) \
                if graph is not None else range(0)
        # bfloat16 (and CPU float16) nodes: the runner, which computes them in float32
        # unless a kernel takes the type (see low_precision)
        c.low_precision = graph is not None and low_precision(
            [graph.dtypes[e] for e in c.ins + c.outs if e != none_slot], device)
        c.then = (_single(first, none_slot, device, blocked, graph, scheme),
                  _single(then, none_slot, device, blocked, graph, scheme)) \
            if c.fused is not None else None
        if blocked:
            args = c.ins[:c.aux0]
            _layout(c, (args, [None if e == none_slot else e for e in c.outs]), blocked,
                    [graph.shapes[e] for e in args],
                    [graph.shapes[e] for e in range(graph.row_ptr[then.nid],
                                                    graph.row_ptr[then.nid + 1])] +
                    [graph.shapes[e] for e in extra], scheme)
        else:
            c.lay, c.agnostic, c.convert, c.scheme = None, False, False, scheme
        calls.append(c)
    return calls


def _single(s, none_slot, device, blocked, graph, scheme):
    """The plain call of one step of a fused pair (run when the fused kernel declines)."""
    return prepare_forward([s], none_slot, device, blocked, graph, scheme)[0]


def prepare_backward(ex_bsteps, none_slot, grad_slot, device, blocked=frozenset(),
                     scheme=None):
    """BwdCalls for the executor's ``_BwdStep``s; ``grad_slot(target)``: the vals
    index of a gradient target (kind, index, req); ``blocked`` and ``scheme`` as for
    prepare_forward."""
    scheme = layout.ONEDNN_BLOCKED if scheme is None else scheme
    calls = []
    for b in ex_bsteps:
        c = BwdCall()
        op = b.op
        c.op, c.p, c.name, c.octx = op, b.p, b.name, b.octx
        c.key = _key(op, device, True)
        c.body, c.wo = op.backward, op.writes_outputs
        c.slow = op.zero_grad or op.backward is None
        c.low_precision = b.low_precision
        c.out_meta = b.out_meta
        c.ograds = None if b.ograds is None else \
            [none_slot if e is None else e for e in b.ograds]
        c.zeros = [] if b.ograds is None else \
            [(i, *b.out_meta[i]) for i, e in enumerate(b.ograds) if e is None]
        c.ins = [none_slot] * b.n_args if b.in_data is None else list(b.in_data)
        c.outd = [none_slot] * b.n_out if b.out_data is None else \
            [none_slot if e is None else e for e in b.out_data]
        c.aux = list(b.aux)
        c.tgts = [none_slot if t is None else grad_slot(t) for t in b.targets]
        c.req = b.req
        # what the operator may write itself: 'write'/'inplace' destinations
        c.given = None if all(r in _WRITES or r == "null" for r in b.req) else \
            [r in _WRITES for r in b.req]
        if blocked and not c.slow:
            # argument gradients ('arg' targets) are the caller's plain arrays
            tg = [None if t is None or t[0] == "arg" else t[1] for t in b.targets]
            none = lambda es: [None if e == none_slot else e for e in es]  # noqa: E731
            shapes = list(b.octx.in_shapes)
            _layout(c, (none(c.ograds or []), none(c.ins), none(c.outd), tg), blocked,
                    shapes, shapes[:1], scheme)
        else:
            c.lay, c.agnostic, c.convert, c.scheme = None, False, False, scheme
        c.fused = c.then = None
        calls.append(c)
    return calls


def _forward_one(c, vals, octx):
    ins = [vals[e] for e in c.ins]
    out = [vals[e] for e in c.outs]
    octx.req = c.req
    octx.layout = c.lay
    if c.aux0 == len(ins):
        args, aux = ins, []
    else:
        args, aux = ins[:c.aux0], ins[c.aux0:]
    if c.convert:
        return _plain_forward(c, args, aux, out, octx)
    if c.low_precision and (c.lay is None or c.agnostic):
        # the runner computes it in float32 unless a kernel takes the type; on
        # blocked arrays (only bfloat16 kernels see them) the path below is the same
        return runner.forward(c.op, octx, c.p, args, aux, out, c.req, c.name, profile=False)
    if c.op.rewrites_inputs:        # (the two runner routes above do it themselves)
        c.op.rewrite_inputs(c.p, args)
    res = NotImplemented
    if _KERNELS:
        kern = _KERNELS.get(c.key)
        if kern is not None:
            res = kern(octx, c.p, args, aux, out)
    if res is NotImplemented:
        if c.lay is not None and not c.agnostic:
            return _plain_forward(c, args, aux, out, octx)
        res = c.body(octx, c.p, args, aux, out) if c.wo else c.body(octx, c.p, args, aux)
    _settle_unless_written(res, out, c, "")


def low_precision(dtypes, device):
    """Whether a node with entries of these dtypes runs through the runner's
    low-precision route: bfloat16 anywhere, float16 on the CPU (operator/bfloat16.py).
    A node on blocked arrays (bfloat16 only: float16 entries stay plain) takes the
    ordinary path instead: its kernel is a bfloat16 one (executor/layout.py blocks only
    for oneDNN's), and a decline converts to plain and then reaches the runner."""
    return any(t == bfloat16 or (device == "cpu" and t == _F16) for t in dtypes)


def _plain(arrays, flags, scheme):
    return [scheme.to_plain(a) if f and a is not None else a for a, f in zip(arrays, flags)]


def _plain_forward(c, args, aux, out, octx):
    """A call with blocked arrays that its kernel declined: the runner on plain copies,
    the results reordered into the blocked destinations."""
    f_in, f_out = c.lay
    octx.layout = None
    xp, sch = octx.xp, c.scheme
    tmp = [xp.empty(o.shape, o.dtype) if f and o is not None else o
           for o, f in zip(out, f_out)]
    runner.forward(c.op, octx, c.p, _plain(args, f_in, sch), aux, tmp, c.req, c.name,
                   profile=False)
    for o, t, f, r in zip(out, tmp, f_out, c.req):
        if f and o is not None and r != "null":
            sch.into_blocked(t, o)


def _plain_backward(c, octx, ograds, ins, outd, aux, tgts):
    """The backward counterpart of ``_plain_forward`` (an 'add' request adds the
    reordered gradient)."""
    f_og, f_in, f_out, f_tg = c.lay
    octx.layout = None
    xp, sch = octx.xp, c.scheme
    tmp = [xp.empty(t.shape, t.dtype) if f and t is not None else t
           for t, f in zip(tgts, f_tg)]
    req = [("write" if r != "null" else r) if f else r for r, f in zip(c.req, f_tg)]
    runner.backward(c.op, octx, c.p, _plain(ograds, f_og, sch), _plain(ins, f_in, sch),
                    _plain(outd, f_out, sch), aux, tmp, req, c.out_meta, c.name)
    for d, t, f, r in zip(tgts, tmp, f_tg, c.req):
        if not f or d is None or r == "null":
            continue
        if r == "add":
            b = xp.empty_like(d)
            sch.into_blocked(t, b)
            d += b
        else:
            sch.into_blocked(t, d)


def _settle_unless_written(res, dst, c, what):
    """Apply the results to their destinations (``runner._settle``) unless the operator
    wrote every one of them itself, the steady state of a converted operator."""
    if len(res) == len(dst):
        for d, v in zip(dst, res):
            if v is not d and d is not None:
                break
        else:
            return
    runner._settle(res, dst, c.req, f"operator {c.op.name}{what}")


def run_forward(calls, vals, octx):
    """Run the prepared forward calls on ``vals`` (refreshed by the caller)."""
    try:
        _run_forward(calls, vals, octx)
    finally:
        octx.layout = None


def _run_forward(calls, vals, octx):
    c = None
    try:
        for c in calls:
            if c.fused is not None:
                ins = [vals[e] for e in c.ins]
                octx.req = c.req
                octx.layout = c.lay
                if c.op.rewrites_inputs:
                    c.op.rewrite_inputs(c.p, ins[:c.aux0])
                if c.fused(octx, c.p, ins[:c.aux0], ins[c.aux0:],
                           [vals[e] for e in c.outs]) is not NotImplemented:
                    continue
                for c in c.then:        # declined: the plain call(s) it stands for
                    _forward_one(c, vals, octx)
                continue
            _forward_one(c, vals, octx)
    except (MXNetError, NotImplementedError):    # a missing feature keeps its type
        raise
    except Exception as err:
        shapes = [None if vals[e] is None else vals[e].shape for e in c.ins[:c.aux0]]
        raise runner.op_error(c.op, c.p, shapes, err, c.name) from err


def run_backward(calls, vals, is_train):
    """Run the prepared backward calls on ``vals`` (refreshed by the caller)."""
    c = None
    try:
        for c in calls:
            if c.fused is not None:
                if _backward_one(c, vals, is_train, c.fused) is not NotImplemented:
                    continue
                for c in c.then:        # declined: the plain calls it stands for
                    _backward_one(c, vals, is_train)
                continue
            _backward_one(c, vals, is_train)
    except (MXNetError, NotImplementedError):
        raise
    except Exception as err:
        raise runner.op_error(c.op, c.p, c.octx.in_shapes, err, c.name,
                              "backward") from err


def _backward_one(c, vals, is_train, fused=None):
    """One backward call; with ``fused`` (a fused call's kernel), that kernel only:
    NotImplemented, nothing written, when it declines."""
    octx = c.octx
    octx.is_train = is_train
    tgts = [vals[e] for e in c.tgts]
    if c.ograds is None:
        ograds = [None] * len(c.outd)
    else:
        ograds = [vals[e] for e in c.ograds]
        if c.zeros:
            xp = octx.xp
            for i, shape, dtype in c.zeros:
                ograds[i] = xp.zeros(shape, dtype)
    ins = [vals[e] for e in c.ins]
    outd = [vals[e] for e in c.outd]
    aux = [vals[e] for e in c.aux]
    if fused is None and c.slow:
        runner.backward(c.op, octx, c.p, ograds, ins, outd, aux, tgts, c.req,
                        c.out_meta, c.name)
        return None
    octx.layout = c.lay
    if fused is None and c.convert:
        _plain_backward(c, octx, ograds, ins, outd, aux, tgts)
        return None
    if fused is None and c.low_precision and (c.lay is None or c.agnostic):
        runner.backward(c.op, octx, c.p, ograds, ins, outd, aux, tgts, c.req,
                        c.out_meta, c.name)
        return None
    given = tgts if c.given is None else \
        [d if w else None for d, w in zip(tgts, c.given)]
    kern = fused
    if kern is None and _KERNELS:
        kern = _KERNELS.get(c.key)
    res = NotImplemented
    if kern is not None:
        # an ``accumulates`` kernel adds into 'add' destinations itself
        res = kern(octx, c.p, ograds, ins, outd, aux,
                   tgts if getattr(kern, "accumulates", False) else given)
    if res is NotImplemented:
        if fused is not None:
            return NotImplemented
        if c.lay is not None and not c.agnostic:
            _plain_backward(c, octx, ograds, ins, outd, aux, tgts)
            return None
        res = c.body(octx, c.p, ograds, ins, outd, aux, given) if c.wo else \
            c.body(octx, c.p, ograds, ins, outd, aux)
    if c.given is not None:     # some requests are not plain writes
        runner._settle(res, tgts, c.req, f"operator {c.op.name} backward")
    else:
        _settle_unless_written(res, tgts, c, " backward")
    return None
