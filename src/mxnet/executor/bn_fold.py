"""An inference BatchNorm folded into the Convolution before it (CPU executors).

With its moving statistics (a forward that is not training, or ``use_global_stats``),
BatchNorm is a fixed affine map per channel: y = x * s + t with
s = gamma / sqrt(moving_var + eps) (gamma taken as 1 under ``fix_gamma``) and
t = beta - moving_mean * s. After a Convolution it can be applied to the convolution's
result before it is ever stored, together with what usually follows it in a ResNet:
the residual addition and the ReLU. So the chain

    Convolution -> BatchNorm [-> elemwise add with another array] [-> relu]

runs as one call: on oneDNN, one convolution primitive whose post-ops scale and shift
each channel (binary mul and add with s and t), add the residual (a binary add of the
whole tensor, on channel-blocked arrays; on plain ones the addition and the ReLU
follow in place) and apply the ReLU; otherwise (oneDNN declines: off, below its
break-even) the convolution's NumPy body, then the scale, shift, addition and ReLU in
place. The convolution's bias, if any, becomes part of t: t + bias * s. s and t are
recomputed from the parameters at every call (a few operations on vectors of the
channel count), so parameters changed between calls are always seen. A hybridized
ResNet-50's inference call runs 53 folded calls instead of 171 operator calls.

It applies only where no one can see the difference: the executor has no backward
step that reads the chain's intermediate entries (an inference executor: a training
executor's BatchNorm backward reads the convolution's output); each intermediate is
read by the next operator of the chain alone and is no graph output; BatchNorm's mean
and variance outputs are read by nothing; the operators are channels-first and
float32 or float64, their calls neither low-precision nor fused otherwise. The folded
call runs where the chain's last operator ran and reads there what the convolution
and the BatchNorm read (the data, and a weight or gamma a node computes) and the
residual, so the memory planner keeps those alive until then (``plan_chains``:
``Graph.held_reads``), which also keeps the result out of their buffers; the prepared
calls check the plan again.

A training forward (batch statistics, moving statistics updated) and a call whose
arrays the kernels do not take run the chain's own calls instead. The results agree
with the unfolded chain to float32 rounding (the scale is applied to the convolution's
sums rather than to the stored output). Monitors and the profiler run the plain steps.
``MXNET_CPU_BN_FOLD=0`` turns it off.
"""
import math
import os

import numpy as np

from ..operator import kernels_onednn
from ..operator.kernels_cpu import PARALLEL_MIN_WORK
from ..operator.nn import im2col
from ..operator.nn.convolution import conv_windows
from ..operator.params import _make_params
from .fusion import _backward_reads
from .prepared import _KERNELS, FwdCall

__all__ = ["enabled", "applies", "fold_batchnorm"]

_CHANNELS_FIRST = (None, "NCW", "NCHW", "NCDHW")
_ADDS = ("elemwise_add", "_plus", "_Plus", "_add", "broadcast_add")
_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def enabled():
    """Whether CPU executors fold (MXNET_CPU_BN_FOLD, default on)."""
    return os.environ.get("MXNET_CPU_BN_FOLD", "1").strip() != "0"


def applies(device):
    """Whether executors on ``device`` fold: the CPU (the oneDNN post-ops and the NumPy
    in-place passes are the CPU's), unless switched off."""
    return device == "cpu" and enabled()


def plan_chains(g):
    """Find the foldable chains of graph ``g`` (shapes, dtypes and backward planned;
    memory not yet): ``g.bn_chains``, each a list of node ids (convolution, batch norm
    [, addition] [, relu]), and ``g.held_reads``, {node id: entries its forward step
    keeps alive}: a folded chain reads the convolution's and the BatchNorm's inputs and
    the residual where its last node runs, so the memory planner must keep those it
    plans (the data, and any weight, gamma or beta a node computes) until then."""
    reads = _backward_reads(g) if g.backward is not None else set(g.heads)
    chains, claimed = [], set()
    for nid, node in enumerate(g.nodes):
        if node.op is None or node.op.name != "Convolution":
            continue
        chain = _chain(g, nid, reads)
        if chain is None:
            continue
        # an addition another chain took (the two BatchNorms of a downsampling
        # block's sum) ends this one before it
        for n, j in enumerate(chain):
            if j in claimed:
                chain = chain[:n]
                break
        if len(chain) < 2:
            continue
        claimed.update(chain)
        chains.append(chain)
    g.bn_chains = chains
    g.held_reads = {c[-1]: _chain_reads(g, c) for c in chains}
    return g


def _chain_reads(g, chain):
    """The entries the folded call reads: the convolution's inputs, the BatchNorm's
    parameters and statistics, the residual."""
    conv_in = g.node_inputs[chain[0]]
    bn_in = g.node_inputs[chain[1]][1:]
    return list(conv_in) + list(bn_in) + _residual_of(g, chain)


def _residual_of(g, chain):
    """[the entry a chain's addition adds], or []. Kept alive until the chain's last
    node, it never shares the result's buffer: oneDNN reads it as a post-op operand
    while it writes the result, and may write partial sums there first."""
    if len(chain) < 3 or g.nodes[chain[2]].op.name not in _ADDS:
        return []
    bn_out = g.row_ptr[chain[1]]
    return [e for e in g.node_inputs[chain[2]] if e != bn_out][:1]


def fold_batchnorm(g, calls):
    """``calls`` (prepared forward calls of graph ``g``, whose chains ``plan_chains``
    found) with each chain replaced by one call at the place of its last operator.
    Returns a new list, or ``calls`` itself when nothing folds."""
    chains = getattr(g, "bn_chains", None)
    if not chains:
        return calls
    at = {}
    for i, c in enumerate(calls):
        for e in c.outs:
            if e < g.num_entries:
                at[g.entry_node[e]] = i
                break
    plan = g.memory
    step_of = {} if plan is None else \
        {st.nid: k for k, st in enumerate(plan.steps) if st.kind == "forward"}
    replaced, gone = {}, set()
    for chain in chains:
        idx = [at.get(n) for n in chain]
        if None in idx or not all(_plain(calls[j]) for j in idx):
            continue
        folded = _folded_call(g, calls, idx, step_of.get(chain[-1]))
        if folded is None:
            continue
        gone.update(idx[:-1])
        replaced[idx[-1]] = folded
    if not replaced:
        return calls
    return [replaced.get(j, c) for j, c in enumerate(calls) if j not in gone]


def _plain(c):
    return c.fused is None and not c.convert and not c.low_precision


def _sole_reader(g, e, reads, pos=None):
    """The node id of the one node that reads entry e (at input ``pos`` when given),
    or None when e is read elsewhere too (another node, a graph output, a backward
    step)."""
    if e in reads:
        return None
    users = g.users[e]
    if len(users) != 1 or (pos is not None and users[0][1] != pos):
        return None
    return users[0][0]


def _is_relu(name, p):
    return name == "relu" or (name == "Activation" and p.act_type == "relu")


def _chain(g, nid, reads):
    """[conv, bn (, add) (, relu)] node ids starting with the Convolution nid, or
    None."""
    conv = g.nodes[nid]
    if getattr(conv.params, "layout", None) not in _CHANNELS_FIRST or \
            conv.num_outputs() != 1:
        return None
    e = g.row_ptr[nid]
    b = _sole_reader(g, e, reads, pos=0)
    if b is None:
        return None
    bn = g.nodes[b]
    ndim = len(g.shapes[e])
    if bn.op is None or bn.op.name != "BatchNorm" or \
            getattr(bn.params, "output_mean_var", False) or \
            int(bn.params.axis) % ndim != 1 or g.dtypes[e] not in _FLOATS:
        return None
    for o in range(g.row_ptr[b] + 1, g.row_ptr[b + 1]):      # mean, var: unread
        if g.users[o] or o in reads:
            return None
    chain = [nid, b]
    k = _sole_reader(g, g.row_ptr[b], reads)
    if k is not None and g.nodes[k].op.name in _ADDS and \
            all(tuple(g.shapes[a]) == tuple(g.shapes[e]) for a in g.node_inputs[k]):
        chain.append(k)
        k = _sole_reader(g, g.row_ptr[k], reads)
    if k is not None and _is_relu(g.nodes[k].op.name, g.nodes[k].params):
        chain.append(k)
    return chain


def _span(g, e):
    """(start, end) bytes of planned entry e in the arena, or None (the caller's)."""
    plan = g.memory
    if plan is None or e not in plan.offset_of:
        return None
    start = plan.offset_of[e]
    return start, start + plan.entry_bytes[e]


def _apart(g, a, b):
    sa, sb = _span(g, a), _span(g, b)
    return sa is None or sb is None or sa[1] <= sb[0] or sb[1] <= sa[0]


def _alive_until(g, entries, step):
    """Whether each of ``entries`` is the caller's or planned to live until ``step``
    (what plan_chains' held reads ask of the memory planner)."""
    plan = g.memory
    if plan is None:
        return True
    return step is not None and all(plan.last[e] >= step for e in entries
                                    if e in plan.entry_bytes)


def _folded_call(g, calls, chain, last_step):
    """The FwdCall standing for the chain, or None when the memory plan, the layouts
    or the types rule it out; ``last_step``: the planner's step of the chain's last
    node."""
    conv, bn = calls[chain[0]], calls[chain[1]]
    last = calls[chain[-1]]
    add = calls[chain[2]] if len(chain) > 2 and calls[chain[2]].op.name in _ADDS else None
    relu = _is_relu(last.op.name, last.p)
    x, f = conv.ins[0], last.outs[0]
    if f >= g.num_entries or x >= g.num_entries:
        return None
    dt = g.dtypes[x]
    if dt not in _FLOATS or g.dtypes[f] != dt or \
            any(g.dtypes[e] != dt for e in conv.ins[:conv.aux0]):
        return None
    residual = None
    if add is not None:
        residual = add.ins[1] if add.ins[0] == bn.outs[0] else add.ins[0]
        if g.dtypes[residual] != dt:
            return None
    # what the folded call reads must survive until it runs (plan_chains' held
    # reads), and the result it writes must lie apart from it (the residual too: a
    # post-op operand)
    read = [e for e in conv.ins + bn.ins[1:] + ([residual] if add is not None else [])
            if e < g.num_entries]
    if not all(_apart(g, e, f) for e in read) or not _alive_until(g, read, last_step):
        return None
    lay = _layout(conv, add, last, residual)
    if lay is False:
        return None
    c = FwdCall()
    c.op, c.p, c.name, c.key = conv.op, conv.p, conv.name, conv.key
    c.body, c.wo = conv.body, conv.wo
    nconv = conv.aux0
    args = list(conv.ins[:nconv]) + list(bn.ins[1:3]) + \
        ([residual] if residual is not None else [])
    c.ins = args + list(bn.ins[bn.aux0:bn.aux0 + 2])
    c.aux0 = len(args)
    c.outs, c.req = [f], list(last.req[:1])
    c.fused = _FoldedBatchNorm(conv, bn.p, nconv, residual is not None, relu)
    c.then = tuple(calls[j] for j in chain)
    c.lay, c.agnostic, c.convert, c.low_precision = lay, False, False, False
    c.scheme = conv.scheme
    return c


def _layout(conv, add, last, residual):
    """The folded call's layout flags (inputs, outputs), None when all plain, False
    when the chain's layouts do not fit one oneDNN call (a residual in another layout
    than the result)."""
    if conv.lay is None and last.lay is None and (add is None or add.lay is None):
        return None
    x_flag = bool(conv.lay and conv.lay[0][0])
    f_flag = bool(last.lay and last.lay[1][0])
    flags = [x_flag] + [False] * (conv.aux0 - 1) + [False, False]
    if residual is not None:
        r_flag = bool(add.lay and add.lay[0][list(add.ins).index(residual)])
        if r_flag != f_flag:
            return False
        flags.append(r_flag)
    return tuple(flags), (f_flag,)


class _FoldedBatchNorm:
    """The folded chain's kernel: (octx, p, args, aux, out) with args = the
    convolution's (data, weight[, bias]), gamma, beta[, residual]; aux = moving mean,
    moving variance; out = [the chain's result]. NotImplemented (nothing written that
    the plain calls would not overwrite) when it declines."""
    __slots__ = ("conv", "p", "nconv", "residual", "relu", "eps", "fix_gamma",
                 "global_stats", "windows", "split")

    def __init__(self, conv, bn_p, nconv, residual, relu):
        self.conv, self.nconv, self.residual, self.relu = conv, nconv, residual, relu
        p = conv.p
        self.p = _make_params(dict(p, no_bias=True), dict(getattr(p, "given", {})))
        self.eps = float(bn_p.eps)
        self.fix_gamma = bool(bn_p.fix_gamma)
        self.global_stats = bool(bn_p.use_global_stats)
        self.windows = self.split = None

    def _affine(self, args, aux):
        """Per-channel (scale, shift) of the BatchNorm with the convolution's bias."""
        n = self.nconv
        gamma, beta = args[n], args[n + 1]
        mean, var = aux
        dt = args[0].dtype
        scale = 1.0 / np.sqrt(var.astype(dt, copy=False) + dt.type(self.eps))
        if not self.fix_gamma:
            scale *= gamma
        shift = beta - mean * scale
        if n == 3:                  # the convolution's bias, scaled like its sums
            shift += args[2].reshape(-1) * scale
        return scale.reshape(-1), shift.reshape(-1)

    def __call__(self, octx, p, args, aux, out):
        if octx.is_train and not self.global_stats:
            return NotImplemented
        x, w, y = args[0], args[1], out[0]
        if not isinstance(x, np.ndarray) or not y.flags.c_contiguous:
            return NotImplemented
        scale, shift = self._affine(args, aux)
        residual = args[self.nconv + 2] if self.residual else None
        res = kernels_onednn.conv_affine_forward(octx, self.p, x, w, y, scale, shift,
                                                 self.relu, residual)
        if res is not NotImplemented:
            return None
        if octx.layout is not None:
            return NotImplemented
        return self._numpy(octx, x, w, y, scale, shift, residual)

    def _numpy(self, octx, x, w, y, scale, shift, residual):
        """The convolution's NumPy body, then the affine map, the residual and the ReLU
        in place."""
        z = y if residual is None else np.empty(y.shape, y.dtype)
        self._convolve(octx, x, w, z)
        bshape = (1, -1) + (1,) * (y.ndim - 2)
        z *= scale.reshape(bshape)
        z += shift.reshape(bshape)
        if residual is not None:
            np.add(z, residual, out=y)
        if self.relu:
            np.maximum(y, 0, out=y)
        return None

    def _convolve(self, octx, x, w, z):
        """z = conv(x, w): the im2col body on the windows worked out for this shape
        once (the executor checked the shapes when it bound), or, for a call large
        enough to split over the CPU's threads, the kernel table's batch split."""
        p = self.p
        if self.windows is None or self.windows[0] != x.shape:
            self.windows = (x.shape, conv_windows(p, x.shape))
            self.split = PARALLEL_MIN_WORK <= w.size * math.prod(x.shape[2:]) * x.shape[0]
        if not self.split:
            res = im2col.conv_forward(octx, self.windows[1], x, w, p.num_group, None,
                                      p.workspace, z)
        else:
            c = self.conv
            kern = _KERNELS.get(c.key)
            res = NotImplemented if kern is None else kern(octx, p, [x, w], [], [z])
            if res is NotImplemented:
                res = c.body(octx, p, [x, w], [], [z]) if c.wo else c.body(octx, p, [x, w], [])
            res = res[0]
        if res is not z:
            z[...] = res
