"""The layout pass: which planned entries hold a device's preferred layout.

Two schemes, one per device, share the pass (``scheme(device)``):

* CPU: oneDNN's channel-blocked layout (below);
* GPU: channels-last (NHWC), cuDNN's native layout for tensor-core convolutions
  (``CHANNELS_LAST`` further down).

oneDNN's convolution, pooling and batch norm run on channel-blocked data (aBcd8b
with AVX2, aBcd16b with AVX-512: the channels in blocks of ``block_width()``,
innermost). Called on plain (C-order) arrays, each call
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
channels do not fill whole blocks (its blocked form would need padding), neither
float32 nor bfloat16 (the latter where oneDNN has bfloat16 primitives), or when any
other operator touches it (Flatten, FullyConnected, a loss...).
A gradient entry has its forward entry's layout.

The kernels learn which of their arrays are blocked from ``OpContext.layout`` (set by
the prepared loops, executor/prepared.py); an operator that declines at run time
(its oneDNN kernel returns NotImplemented) is run on plain copies instead
(``prepared._plain_forward``/``_plain_backward``), so results never depend on the
layout.
``MXNET_ONEDNN_BLOCKED_LAYOUT=0`` turns the pass off.

On the GPU the same pass keeps 4-D entries channels-last: a "blocked" entry there is
an array of the entry's logical (N, C, H, W) shape whose memory holds the NHWC order
(the same bytes as ``x.transpose(0, 2, 3, 1)``). cuDNN's tensor-core convolutions work
in NHWC; called on NCHW arrays, cuDNN transposes each input and output around every
convolution (session 8's profile of bfloat16 ResNet-50 on an H100: 432 transpose
kernels, ~3.5 ms of a 38 ms step), and its NCHW batch norm kernels are its slow ones.
The capable operators are the cuDNN adapters' Convolution (2-D, ungrouped), BatchNorm
and Pooling (``kernels_cudnn.channels_last_capable``), the agnostic ones the same
elementwise set as on the CPU plus ``amp_cast`` (and a fused pair of two of them, the
GPU's add -> relu). An entry qualifies when it is 4-D, float16, bfloat16 or float32,
with a channel count that is a multiple of 8 (tensor-core alignment) and more than
one spatial position (with one, both layouts are the same bytes).
``MXNET_CUDNN_CHANNELS_LAST=0`` turns it off. Results never depend on it: a kernel
that declines a call runs on plain copies, as on the CPU.
"""
import os

import numpy as np

from ..base import bfloat16

__all__ = ["enabled", "scheme", "blocked_entries", "channels_last_entries", "to_plain",
           "into_blocked", "ONEDNN_BLOCKED", "CHANNELS_LAST"]


def enabled(device):
    """Whether executors on ``device`` ('cpu'/'gpu') plan blocked entries. (Whether
    oneDNN is there is asked per operator, by ``blocked_capable``: a graph without an
    operator large enough for oneDNN never loads the library, as imperative calls.)"""
    return scheme(device) is not None


def _env_on(name):
    return os.environ.get(name, "1").strip() != "0"


def scheme(device):
    """The layout scheme executors on ``device`` plan with (``ONEDNN_BLOCKED`` on the
    CPU, ``CHANNELS_LAST`` on the GPU), or None when its switch is off."""
    if device == "cpu" and _env_on("MXNET_ONEDNN_BLOCKED_LAYOUT"):
        return ONEDNN_BLOCKED
    if device == "gpu" and _env_on("MXNET_CUDNN_CHANNELS_LAST"):
        return CHANNELS_LAST
    return None


def _fits(g, e):
    shape = g.shapes[e]
    return (3 <= len(shape) <= 5 and shape[1] % _block_width() == 0 and min(shape) > 0
            and (np.dtype(g.dtypes[e]) == np.float32 or
                 (g.dtypes[e] == bfloat16 and _bf16_primitives())))


def _block_width():
    from ..backend.onednn import kernels as K
    return K.block_width()


def _bf16_primitives():
    from ..backend.onednn import kernels as K
    return K.bf16_supported()


def _onednn_agnostic(name, p, in_shapes, out_shapes):
    """The CPU scheme's elementwise operators (``kernels_onednn.layout_agnostic``)."""
    from ..operator.kernels_onednn import layout_agnostic
    return layout_agnostic(name, p, in_shapes, out_shapes)


def blocked_entries(g, steps):
    """The entries (forward entries and their gradient entries) to keep blocked, as a
    frozenset; ``steps``: the executor's forward steps after fusion (``_FwdStep``s and
    ``FusedStep``s)."""
    from ..operator import kernels_onednn as KO
    return _plan(g, steps, KO.blocked_capable, _onednn_agnostic, _fits)


def _plan(g, steps, capable, agnostic, fits):
    """The entries to keep in a scheme's layout: ``capable(name, p, in_shapes,
    out_shapes)`` gives the argument and output positions an operator's kernels take in
    that layout (or None), ``agnostic(...)`` whether it computes the same on any element
    order, ``fits(g, e)`` whether an entry may hold it."""
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
        if agnostic(name, first.p, in_shapes, out_shapes) and (
                first is last or agnostic(last.op.name, last.p, out_shapes[:1],
                                          [g.shapes[e] for e in outs])):
            # one elementwise operator, or a fused pair of two (add -> relu on the
            # GPU): its arguments and its output share a layout (a pair's
            # intermediate stays out of the group: it is never computed)
            for e in args:
                parent[find(e)] = find(outs[0])
            writer_ok[outs[0]] = True
            continue
        cap = capable(name, first.p, in_shapes, out_shapes)
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
        ok[r] = ok.get(r, True) and writer_ok[e] and not plain[e] and fits(g, e)
    blocked = {e for e in range(n) if ok[find(e)]}
    grads = g.backward.grad_entry if g.backward is not None else {}
    blocked |= {grads[e] for e in blocked if e in grads}
    # A fused pair's intermediate is never computed, but its gradient is: the ReLU's
    # backward writes it (from the blocked output and its gradient) and the
    # producer's backward reads it, so it follows the pair's output.
    for mid, out in fused_mids:
        if out in blocked and mid in grads and fits(g, mid):
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


# --- the GPU scheme: channels-last ---------------------------------------------------------
_CL_DTYPES = (np.dtype(np.float16), np.dtype(np.float32), bfloat16)
CL_CHANNEL_MULTIPLE = 8


def _fits_channels_last(g, e):
    shape = g.shapes[e]
    return (len(shape) == 4 and min(shape) > 0 and shape[1] % CL_CHANNEL_MULTIPLE == 0
            and shape[2] * shape[3] > 1 and np.dtype(g.dtypes[e]) in _CL_DTYPES)


def channels_last_agnostic(name, p, in_shapes, out_shapes):
    """Operators that compute the same whatever order their same-shaped arrays' elements
    lie in: the CPU scheme's set and AMP's casts."""
    if name == "amp_cast":
        return len(out_shapes) == 1 and tuple(in_shapes[0]) == tuple(out_shapes[0])
    return _onednn_agnostic(name, p, in_shapes, out_shapes)


def channels_last_entries(g, steps):
    """The 4-D entries (and their gradients) a GPU executor keeps channels-last."""
    from ..operator.kernels_cudnn import channels_last_capable
    return _plan(g, steps, channels_last_capable, channels_last_agnostic,
                 _fits_channels_last)


def _nhwc(a):
    n, c, h, w = a.shape
    return a.reshape(n, h, w, c)


def channels_last_to_plain(a):
    """A plain (NCHW) copy of channels-last ``a`` (NumPy or CuPy)."""
    return _nhwc(a).transpose(0, 3, 1, 2).copy()


def channels_last_into(src, dst):
    """Write plain ``src`` into channels-last ``dst``."""
    _nhwc(dst)[...] = src.reshape(dst.shape).transpose(0, 2, 3, 1)


class Scheme:
    """One device's layout: ``entries(g, steps)`` plans it, ``agnostic(name, p,
    in_shapes, out_shapes)`` says which operators compute the same on it as on plain
    arrays, ``to_plain(a)`` copies an array in it to plain C order,
    ``into_blocked(src, dst)`` writes plain ``src`` into ``dst`` in it."""

    def __init__(self, name, entries, agnostic, to_plain_fn, into_fn):
        self.name, self.entries, self.agnostic = name, entries, agnostic
        self.to_plain, self.into_blocked = to_plain_fn, into_fn

    def __repr__(self):
        return f"<layout scheme {self.name}>"


ONEDNN_BLOCKED = Scheme("onednn-blocked", blocked_entries, _onednn_agnostic, to_plain,
                        into_blocked)
CHANNELS_LAST = Scheme("channels-last", channels_last_entries, channels_last_agnostic,
                       channels_last_to_plain, channels_last_into)
