"""A Convolution's bias folded into the BatchNorm that follows it (GPU executors).

In training, BatchNorm subtracts each channel's batch mean, so a per-channel constant
added before it changes only that mean: BN(x + b) = BN(x) and mean(x + b) = mean(x) + b.
The bias of a Convolution whose output only a BatchNorm reads (the 1x1 convolutions of
ResNet v1 in MXNet's model zoo) is therefore work whose only effect is on the moving
mean. On a GPU that work is a read and a write of the whole convolution output (cuDNN's
AddTensor: ~1.6 ms of an 18 ms ResNet-50 AMP step on an H100). So in a training forward
the convolution runs without its bias, and a step right after the BatchNorm adds to the
moving mean the part of MXNet's update the bias would have given: (1 - momentum) * b.

Nothing else changes: the BatchNorm's output; its backward, which reads the
convolution's output and the batch mean it saved, both without the bias (it cancels);
the convolution's backward, whose bias gradient is the sum of its output gradient as
before. A forward that is not training runs both steps as usual (the moving statistics
are used then, and the bias matters), and so does one whose convolution kernel declines
(the convolution then adds the bias and the moving mean is left alone).

The fold applies only where nothing can see the difference: the convolution's output
is read by that BatchNorm alone (not a graph output, no other node, no other backward
step); the BatchNorm uses batch statistics (not ``use_global_stats``) over the
convolution's channel axis; its batch mean and variance outputs are read by nothing but
its own backward. Monitors and the profiler run the plain steps and see the biased
output. ``MXNET_GPU_CONV_BIAS_FOLD=0`` turns it off.
"""
import copy
import os

from ..operator.params import _make_params
from .prepared import _KERNELS, FwdCall, _settle_unless_written

__all__ = ["fold_conv_bias", "enabled", "applies"]

_CHANNELS_FIRST = (None, "NCW", "NCHW", "NCDHW")


def enabled():
    """Whether GPU executors fold (MXNET_GPU_CONV_BIAS_FOLD, default on)."""
    return os.environ.get("MXNET_GPU_CONV_BIAS_FOLD", "1").strip() != "0"


def applies(device):
    """Whether executors on ``device`` fold: GPUs (where the bias is a pass of its
    own; oneDNN adds it inside the convolution), unless switched off."""
    return device == "gpu" and enabled()


def fold_conv_bias(g, calls):
    """``calls`` (prepared forward calls of graph ``g``) with every foldable
    Convolution -> BatchNorm pair rewritten: the convolution's call runs its kernel
    without its bias in training, and a call after the BatchNorm's shifts the moving
    mean. Returns a new list, or ``calls`` itself when nothing folds."""
    by_data = {}
    for i, c in enumerate(calls):
        if c.op.name == "BatchNorm" and c.ins:
            by_data[c.ins[0]] = i
    out = list(calls)
    shifts = {}
    for i, c in enumerate(calls):
        if c.op.name != "Convolution" or c.fused is not None or c.p.no_bias:
            continue
        e = c.outs[0]
        j = by_data.get(e)
        if j is None or not _foldable(g, c, calls[j], e):
            continue
        folded = [False]        # whether this forward's convolution left out the bias
        out[i] = _wrapped(c, _UnbiasedConvolution(c, folded))
        bn = calls[j]
        shifts[j] = _shift_call(bn, c.ins[2], folded)
    if not shifts:
        return calls
    res = []
    for j, c in enumerate(out):
        res.append(c)
        if j in shifts:
            res.append(shifts[j])
    return res


def _foldable(g, conv, bn, e):
    """The conditions of the module docstring, on graph ``g``'s entries."""
    if e >= g.num_entries or e in g.heads:
        return False
    users = g.users[e]
    if len(users) != 1 or users[0][1] != 0:
        return False
    bn_nid = users[0][0]
    p = bn.p
    if p.use_global_stats or getattr(p, "output_mean_var", False):
        return False
    ndim = len(g.shapes[e])
    if getattr(conv.p, "layout", None) not in _CHANNELS_FIRST or ndim < 3 or \
            int(p.axis) % ndim != 1:
        return False
    for o in range(g.row_ptr[bn_nid] + 1, g.row_ptr[bn_nid + 1]):
        if g.users[o] or o in g.heads:
            return False
    if g.backward is not None:
        for st in g.backward.steps:
            if st.nid == bn_nid:
                continue
            for group in (st.in_data, st.out_data, st.aux):
                if group and e in group:
                    return False
    return True


def _wrapped(c, fn):
    """A copy of forward call ``c`` that tries ``fn`` first and runs ``c`` when it
    declines (prepared.run_forward's fused-call path)."""
    w = copy.copy(c)
    w.fused, w.then = fn, (c,)
    return w


class _UnbiasedConvolution:
    """The convolution of a folded pair: in training, its kernel without the bias."""
    __slots__ = ("call", "folded", "p")

    def __init__(self, call, folded):
        self.call, self.folded = call, folded
        p = call.p
        self.p = _make_params(dict(p, no_bias=True), dict(getattr(p, "given", {})))

    def __call__(self, octx, p, args, aux, out):
        self.folded[0] = False
        c = self.call
        if not octx.is_train or c.convert:
            return NotImplemented
        kern = _KERNELS.get(c.key)
        res = NotImplemented if kern is None else kern(octx, self.p, args[:2], aux, out)
        if res is NotImplemented:
            if not _body_takes(c):
                return NotImplemented
            res = c.body(octx, self.p, args[:2], aux, out) if c.wo else \
                c.body(octx, self.p, args[:2], aux)
        _settle_unless_written(res, out, c, " (bias folded into the BatchNorm)")
        self.folded[0] = True
        return None


def _body_takes(c):
    """Whether the operator's own body can run call ``c`` when its kernel declines:
    plain arrays of a type it computes (the others take the executor's conversions,
    which the plain call has)."""
    return c.lay is None and not c.low_precision


def _shift_call(bn, bias_entry, folded):
    """The call after BatchNorm ``bn`` that adds (1 - momentum) * bias to its moving
    mean when the convolution before it left the bias out."""
    c = FwdCall()
    c.op, c.p, c.name, c.key = bn.op, bn.p, bn.name, None
    c.body, c.wo = None, True
    c.ins = [bn.ins[bn.aux0], bias_entry]      # the moving mean, the bias
    c.aux0 = 2
    c.outs, c.req = [], []
    c.fused, c.then = _MeanShift(1.0 - float(bn.p.momentum), folded), ()
    c.lay, c.agnostic, c.convert, c.low_precision = None, False, False, False
    c.scheme = bn.scheme
    return c


class _MeanShift:
    """moving_mean += (1 - momentum) * bias, after a training BatchNorm whose input
    was computed without the bias."""
    __slots__ = ("k", "folded")

    def __init__(self, k, folded):
        self.k, self.folded = k, folded

    def __call__(self, octx, p, args, aux, out):
        if not self.folded[0]:
            return None
        moving_mean, bias = args
        t = moving_mean.dtype
        moving_mean += t.type(self.k) * bias.reshape(moving_mean.shape).astype(t, copy=False)
        return None
