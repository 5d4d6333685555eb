"""The backward counterpart of the fusion pass: a relu's backward folded into the
backward of the operator before it (GPU executors: BatchNorm -> relu).

Where a device registers a kernel for the pair's backward (operator/kernels.py
``register_backward_fusion``), a prepared backward call of the relu directly followed by
the call of the operator whose output it read, with that gradient passing only between
the two, becomes one call: the second operator's kernel given the relu output's
gradient (BatchNorm's recomputes where the relu output is positive from what its own
backward reads, backend/bn_channels_last.py), so the relu's pass over the gradient goes.
When the kernel declines, the two plain calls run, as before.

The conditions, on the prepared calls: the relu's data gradient is written by the
relu's backward alone (a plain write, or in place over the relu output's gradient) and
read by the next call alone, as its first output gradient; the relu output's gradient exists (not zeros); both calls hold their
arrays in the device layout (the kernels are channels-last ones). The two calls are
adjacent, so moving the read of the relu output's gradient from the first to the second
crosses no other call: the memory plan may have given that buffer to the second call's
own results, which the fused kernels write element by element after reading them.
"""
import copy

from ..operator.kernels import lookup_backward_fusion

__all__ = ["fold_relu_backward"]

_RELU = ("relu", "Activation")


def fold_relu_backward(calls, none_slot, device):
    """``calls`` (prepared backward calls) with each foldable relu -> producer pair
    replaced by one fused call; a new list, or ``calls`` itself when nothing folds."""
    writers, readers = {}, {}
    for i, c in enumerate(calls):
        for e in c.tgts:
            writers.setdefault(e, []).append(i)
        for group in (c.ograds or (), c.ins, c.outd, c.aux):
            for e in group:
                readers.setdefault(e, []).append(i)
    out, drop = list(calls), set()
    for i in range(len(calls) - 1):
        r, b = calls[i], calls[i + 1]
        if r.op.name not in _RELU or r.fused is not None or b.fused is not None or \
                i in drop or len(r.tgts) != 1:
            continue
        fn = lookup_backward_fusion(b.op, r.op, device, b.p, r.p)
        if fn is None:
            continue
        g = r.tgts[0]
        # (an 'inplace' write goes to the relu output gradient's own buffer)
        if g == none_slot or r.req[0] not in ("write", "inplace") or \
                writers.get(g) != [i] or \
                readers.get(g) != [i + 1] or not b.ograds or b.ograds[0] != g:
            continue
        if r.ograds is None or r.ograds[0] == none_slot or r.zeros or \
                r.lay is None or b.lay is None:
            continue
        out[i + 1] = _fused(b, r, fn)
        drop.add(i)
    if not drop:
        return calls
    return [c for k, c in enumerate(out) if k not in drop]


def _fused(b, r, fn):
    """A copy of ``b`` reading the relu output's gradient, with ``fn`` as its kernel
    and the plain pair to fall back on."""
    c = copy.copy(b)
    c.ograds = [r.ograds[0]] + list(b.ograds[1:])
    og_flags, *rest = b.lay
    c.lay = ((r.lay[0][0],) + tuple(og_flags[1:]), *rest)
    c.fused, c.then = fn, (r, b)
    return c
