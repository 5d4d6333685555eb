"""The layout pass: which planned entries hold oneDNN's channel-blocked layout.

oneDNN's convolution, pooling and batch norm run on channel-blocked data (aBcd16b:
the channels in blocks of 16, innermost). Called on plain (C-order) arrays, each call
reorders its inputs into that layout and its outputs back: in a hybridized CNN about
a sixth of the training step (SimpleCNN, batch 64: ~1.4 ms of reorders in ~8.5 ms).
Between two such operators the plain array is only a detour, so on the CPU, with
oneDNN on, this pass keeps an intermediate entry blocked where every operator that
writes or reads it (forward and backward) works on blocked data:

* the oneDNN operators (``kernels_onednn.blocked_capable``) on their data input and
  output and the matching gradients, and
* elementwise operators over one shape (``kernels_onednn.layout_agnostic``: relu,
  Activation, additions), which compute the same on any element order: an entry
  they read and the entry they write must then share a layout, so they are joined
  in one group, which is blocked only as a whole.

An entry stays plain when a head (the caller reads it), a variable, an entry whose
channels do not fill whole blocks of 16 (its blocked form would need padding), neither
float32 nor bfloat16 (the latter where oneDNN has bfloat16 primitives), or when any
other operator touches it (Flatten, FullyConnected, a loss...).
A gradient entry has its forward entry's layout.

The kernels learn which of their arrays are blocked from ``OpContext.layout`` (set by
the prepared loops, executor/prepared.py); an operator that declines at run time
(its oneDNN kernel returns NotImplemented) is run on plain copies instead
(``prepared._plain_forward``/``_plain_backward``), so results never depend on the
layout.
``MXNET_ONEDNN_BLOCKED_LAYOUT=0`` turns the pass off.
"""
import os

import numpy as np

from ..base import bfloat16

__all__ = ["enabled", "blocked_entries", "to_plain", "into_blocked"]


def enabled(device):
    """Whether executors on ``device`` ('cpu'/'gpu') plan blocked entries. (Whether
    oneDNN is there is asked per operator, by ``blocked_capable``: a graph without an
    operator large enough for oneDNN never loads the library, as imperative calls.)"""
    return device == "cpu" and \
        os.environ.get("MXNET_ONEDNN_BLOCKED_LAYOUT", "1").strip() != "0"


def _fits(g, e):
    shape = g.shapes[e]
    return (3 <= len(shape) <= 5 and shape[1] % 16 == 0 and min(shape) > 0
            and (np.dtype(g.dtypes[e]) == np.float32 or
                 (g.dtypes[e] == bfloat16 and _bf16_primitives())))


def _bf16_primitives():
    from ..backend.onednn import kernels as K
    return K.bf16_supported()


def blocked_entries(g, steps):
    """The entries (forward entries and their gradient entries) to keep blocked, as a
    frozenset; ``steps``: the executor's forward steps after fusion (``_FwdStep``s and
    ``FusedStep``s)."""
    from ..operator import kernels_onednn as KO
    from .fusion import FusedStep
    n = g.num_entries
    parent = list(range(n))

    def find(e):
        while parent[e] != e:
            parent[e] = parent[parent[e]]
            e = parent[e]
        return e

    writer_ok = [False] * n      # its writer can write it blocked
    plain = [False] * n          # something needs it plain
    fused_mids = []              # (intermediate, output) of fused pairs
    for e in g.heads:
        plain[e] = True
    for s in steps:
        first, last = (s.first, s.then) if s.__class__ is FusedStep else (s, s)
        args = list(first.inputs[:first.n_args])
        for e in first.inputs[first.n_args:]:
            plain[e] = True
        outs = list(range(g.row_ptr[last.nid], g.row_ptr[last.nid + 1]))
        in_shapes = [g.shapes[e] for e in args]
        out_shapes = [g.shapes[e] for e in
                      range(g.row_ptr[first.nid], g.row_ptr[first.nid + 1])]
        if first is not last:
            # the intermediate of a fused pair: written only when the pair falls back
            mid = g.row_ptr[first.nid]
            plain[mid] = True
            fused_mids.append((mid, outs[0]))
        name = first.op.name
        if first is last and KO.layout_agnostic(name, first.p, in_shapes, out_shapes):
            for e in args:
                parent[find(e)] = find(outs[0])
            writer_ok[outs[0]] = True
            continue
        cap = KO.blocked_capable(name, first.p, in_shapes, out_shapes)
        ins_ok, outs_ok = cap if cap is not None else ((), ())
        for i, e in enumerate(args):
            if i not in ins_ok:
                plain[e] = True
        for k, e in enumerate(outs):
            writer_ok[e] = k in outs_ok
    ok = {}
    for e in range(n):
        if g.nodes[g.entry_node[e]].op is None:      # a variable: the caller's array
            plain[e] = True
        r = find(e)
        ok[r] = ok.get(r, True) and writer_ok[e] and not plain[e] and _fits(g, e)
    blocked = {e for e in range(n) if ok[find(e)]}
    grads = g.backward.grad_entry if g.backward is not None else {}
    blocked |= {grads[e] for e in blocked if e in grads}
    # A fused pair's intermediate is never computed, but its gradient is: the ReLU's
    # backward writes it (from the blocked output and its gradient) and the
    # producer's backward reads it, so it follows the pair's output.
    for mid, out in fused_mids:
        if out in blocked and mid in grads and _fits(g, mid):
            blocked.add(grads[mid])
    return frozenset(blocked)


def to_plain(a):
    """A plain copy of blocked ``a``."""
    from ..backend.onednn import kernels as K
    out = np.empty(a.shape, a.dtype)
    K.reorder(K.blocked_view(np.ascontiguousarray(a)), out)
    return out


def into_blocked(src, dst):
    """Write plain ``src`` into ``dst`` in the blocked layout."""
    from ..backend.onednn import kernels as K
    K.reorder(np.ascontiguousarray(src, dtype=dst.dtype).reshape(dst.shape),
              K.blocked_view(dst))
