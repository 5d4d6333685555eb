"""AMP's casts of the weights gathered into one call each way (GPU executors).

AMP (contrib.amp) puts an ``amp_cast`` in front of each weight a low-precision
operator reads: in hybridized ResNet-50, 88 casts of float32 weights and biases to
bfloat16 in every forward and 88 casts of their gradients back in every backward. Each
was its own CuPy kernel launch (session 12's no-graph profile: ~28 us of host time a
call, 176 a step; in a CUDA graph, 176 launches of a few microseconds of GPU time each).
A cast of a weight depends on nothing the step computes, and its gradient's cast back
is read by nothing in the step. So:

- the executor's graph lists those casts first, right after the variables
  (``hoisted_order``: a topological order still, the variables keeping their order, so
  the arguments and auxiliary states bind as before), and the memory plan, which
  follows that order, keeps their outputs from the step's start; in training they were
  alive until their operators' backward anyway;
- the forward's leading run of such casts becomes one call (``gather_forward``) and,
  since backward runs the nodes in reverse order, the backward's trailing run of their
  gradient casts becomes one call (``gather_backward``), each one multi-tensor kernel
  launch per (source, destination) dtype pair (operator/kernels_gpu_multi.multi_cast).

When the kernel declines (arrays it does not take; inside a CUDA-graph capture, a
launch table not made before it), the gathered call runs the plain calls it stands
for. Gathered are casts whose input is an argument variable (not an auxiliary state)
that nothing else reads, between float32 and float16 / bfloat16, whose output is no
graph output and is written, and, backward, whose gradient is a plain write ('add'
requests keep their own calls). Only executors with a backward reorder: in an
inference executor the casts' outputs would otherwise all live from the start (in
training they live until their operators' backward anyway). Monitors and the profiler
run the plain steps, in the graph's order, so on a GPU they report these casts first.
``MXNET_GPU_AMP_CAST_GATHER=0`` turns it off.
"""
import os

from ..operator.kernels_gpu_multi import CAST_PAIRS, DeviceTables, multi_cast
from .prepared import BwdCall, FwdCall

__all__ = ["enabled", "applies", "hoisted_casts", "hoisted_order", "gather_forward",
           "gather_backward", "GatheredForward", "GatheredBackward"]

_CAST = "amp_cast"


def enabled():
    """Whether GPU executors gather AMP's weight casts (MXNET_GPU_AMP_CAST_GATHER,
    default on)."""
    return os.environ.get("MXNET_GPU_AMP_CAST_GATHER", "1").strip() != "0"


def applies(device):
    """Whether executors on ``device`` gather: GPUs (where each cast is a kernel launch
    of its own), unless switched off."""
    return device == "gpu" and enabled()


def hoisted_casts(g):
    """Node ids of the casts to gather in graph ``g`` (dtypes inferred): amp_cast of an
    argument variable that nothing else reads (so that its gradient has this one
    contribution, whose place in backward does not change a sum's order), between
    dtypes the multi-tensor kernel takes, its output not a graph output."""
    args, heads = set(g.arg_nodes), set(g.heads)
    found = []
    for nid, node in enumerate(g.nodes):
        if node.op is None or node.op.name != _CAST:
            continue
        src = g.node_inputs[nid][0]
        out = g.row_ptr[nid]
        if g.entry_node[src] in args and out not in heads and len(g.users[src]) == 1 \
                and (g.dtypes[src], g.dtypes[out]) in CAST_PAIRS:
            found.append(nid)
    return found


def hoisted_order(g):
    """The nodes of graph ``g`` (dtypes inferred) with the weight casts right after
    the variables: [variables] + [weight casts] + [the other operators], each part in
    its old order; None when fewer than two casts would be gathered or the order
    would not change."""
    casts = hoisted_casts(g)
    if len(casts) < 2:
        return None
    cast_set = set(casts)
    variables = [n for n in g.nodes if n.op is None]
    rest = [n for i, n in enumerate(g.nodes) if n.op is not None and i not in cast_set]
    order = variables + [g.nodes[i] for i in casts] + rest
    if all(a is b for a, b in zip(order, g.nodes)):
        return None
    return order


def _leading_casts(calls, none_slot, sources):
    n = 0
    for c in calls:
        if c.op.name != _CAST or c.fused is not None or c.lay is not None or \
                c.ins[0] not in sources or c.outs[0] == none_slot or \
                c.req[0] not in ("write", "inplace"):
            break
        n += 1
    return n


def gather_forward(calls, none_slot, sources):
    """``calls`` (prepared forward calls) with their leading run of weight casts
    (``sources``: the casts' input entries) as one call; a new list, or ``calls``
    itself when fewer than two lead."""
    n = _leading_casts(calls, none_slot, sources)
    if n < 2:
        return calls
    run = calls[:n]
    c = FwdCall()
    c.op, c.p, c.name = run[0].op, run[0].p, f"{run[0].name} (+{n - 1} weight casts)"
    c.key = run[0].key
    c.body, c.wo = run[0].body, run[0].wo
    c.ins = [r.ins[0] for r in run]
    c.aux0 = n
    c.outs = [r.outs[0] for r in run]
    c.req = ["write"] * n
    c.fused, c.then = GatheredForward(), tuple(run)
    c.lay, c.agnostic, c.convert, c.scheme = None, False, False, run[0].scheme
    c.low_precision = False
    return [c] + list(calls[n:])


def _trailing_casts(calls, none_slot, sources):
    n = 0
    for c in reversed(calls):
        if c.op.name != _CAST or c.fused is not None or c.lay is not None or \
                c.slow or not c.ins or c.ins[0] not in sources or c.ograds is None or \
                c.zeros or c.ograds[0] == none_slot or c.tgts[0] == none_slot or \
                c.req[0] != "write":
            break
        n += 1
    return n


def gather_backward(calls, none_slot, sources):
    """``calls`` (prepared backward calls) with their trailing run of weight-cast
    gradients as one call; a new list, or ``calls`` itself when fewer than two end
    it."""
    n = _trailing_casts(calls, none_slot, sources)
    if n < 2:
        return calls
    run = calls[len(calls) - n:]
    c = BwdCall()
    first = run[0]
    c.op, c.p, c.name, c.octx = first.op, first.p, f"{first.name} (+{n - 1} weight casts)", \
        first.octx
    c.key, c.body, c.wo = first.key, first.body, first.wo
    c.slow, c.low_precision, c.out_meta = False, False, None
    c.ograds = [r.ograds[0] for r in run]
    c.zeros = []
    c.ins, c.outd, c.aux = [], [], []
    c.tgts = [r.tgts[0] for r in run]
    c.req = ["write"] * n
    c.given = None
    c.lay, c.agnostic, c.convert, c.scheme = None, False, False, first.scheme
    c.fused, c.then = GatheredBackward(), tuple(run)
    return list(calls[:len(calls) - n]) + [c]


def _multi_cast(xp, pairs, tables):
    """Cast each source into its destination with the multi-tensor kernel (``xp``:
    the executor's array module; ``tables``: the call's DeviceTables); False when it
    declines (not CuPy arrays, arrays it does not take, a capture finding no table)."""
    if not type(pairs[0][0]).__module__.startswith("cupy"):
        return False
    return multi_cast(xp, pairs, tables)


class GatheredForward:
    """The gathered forward call's kernel: every weight cast into its planned output.
    Each call keeps its own launch tables (same pointers every step: copied to the
    device once, and there before a CUDA graph captures the call)."""

    def __init__(self):
        self.tables = DeviceTables()

    def __call__(self, octx, p, args, aux, out):
        if not _multi_cast(octx.xp, list(zip(args, out)), self.tables):
            return NotImplemented
        return out


class GatheredBackward:
    """The gathered backward call's kernel: every weight-cast gradient cast back into
    the weight's gradient."""

    def __init__(self):
        self.tables = DeviceTables()

    def __call__(self, octx, p, ograds, ins, outd, aux, tgts):
        if not _multi_cast(octx.xp, list(zip(ograds, tgts)), self.tables):
            return NotImplemented
        return tgts
