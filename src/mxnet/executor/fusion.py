"""The fusion pass: pairs of forward steps that run as one fused kernel.

Where a device registers a fused kernel for ``producer -> consumer`` (operator/
kernels.py ``register_fusion``; on CPU, Convolution or FullyConnected followed by
Activation(relu), one oneDNN primitive with a ReLU post-op), and the producer's output
is read by that consumer alone — not by another node, not as a graph output, not by any
backward step — the consumer's step is folded into the producer's: one call writes the
consumer's planned output and the intermediate is never computed. Backward is
unchanged: the ReLU's gradient reads only its output, which the fused call wrote, and
the producer's reads only its inputs.

A fused kernel may decline a call (NotImplemented: oneDNN off, a size below its
break-even, an unsupported case); the executor then runs the two steps as usual, so
the intermediate still has its planned buffer.

A producer with more outputs than the one the consumer reads (BatchNorm: its output,
and the batch mean and inverse deviation its backward reads) fuses when its fused
kernel says it writes them (``fn.producer_outputs``): the fused call then gets the
consumer's output followed by the producer's other outputs.
"""
from ..base import bfloat16
from ..operator.kernels import lookup_fusion

__all__ = ["fuse_forward_steps", "FusedStep"]


class FusedStep:
    """Two forward steps run as one call: ``fn`` computes ``then``'s output from
    ``first``'s inputs."""
    __slots__ = ("first", "then", "fn")

    def __init__(self, first, then, fn):
        self.first, self.then, self.fn = first, then, fn


def _backward_reads(g):
    reads = set(g.heads)
    for st in g.backward.steps:
        for group in (st.in_data, st.out_data, st.aux):
            if group:
                reads.update(e for e in group if e is not None)
    return reads


def fuse_forward_steps(g, steps, device):
    """``steps`` (prepared forward steps with ``op``, ``p``, ``node``, ``nid``,
    ``outs``) with each fusable pair replaced by a FusedStep at the producer's place
    (the consumer's step leaves the list). Returns a new list, or ``steps`` itself
    when nothing fuses; the steps themselves are not changed."""
    by_nid = {}
    for s in steps:
        by_nid[s.nid] = s
    reads = None
    folded, fused = set(), {}
    for s in steps:
        if s.nid in folded:
            continue
        e = g.row_ptr[s.nid]
        users = g.users[e]
        if len(users) != 1 or users[0][1] != 0:
            continue
        nxt = by_nid.get(users[0][0])
        if nxt is None or nxt.outs[0] is None:
            continue
        fn = lookup_fusion(s.op, nxt.op, device, s.p, nxt.p)
        if fn is None or (g.dtypes[e] == bfloat16 and not getattr(fn, "bfloat16", False)):
            continue
        if s.node.num_outputs() != 1 and not getattr(fn, "producer_outputs", False):
            continue
        if reads is None:
            reads = _backward_reads(g)
        if e in reads:
            continue
        fused[s.nid] = FusedStep(s, nxt, fn)
        folded.add(nxt.nid)
    if not folded:
        return steps
    return [fused.get(s.nid, s) for s in steps if s.nid not in folded]
