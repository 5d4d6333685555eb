"""Connectionist Temporal Classification loss, ``CTCLoss`` (aliases ``ctc_loss``,
``_contrib_CTCLoss``, ``_contrib_ctc_loss``), as in MXNet 1.9.1.

``data`` holds unnormalised activations of shape (sequence length, batch, alphabet
size); the operator applies softmax itself. ``label`` is (batch, max label length),
padded with 0 when ``blank_label="first"`` (channel 0 is the blank) or with -1 when
``blank_label="last"`` (channel alphabet_size-1 is the blank), unless
``use_label_lengths`` gives the lengths. The loss per example is -log p(label | data).

The forward-backward recursions run in log space over the extended label (blanks
between and around the labels), vectorised over the batch, one step per time frame.
As in MXNet, the gradient with respect to ``data`` (softmax minus the state
posteriors gathered per class) is a second, hidden output computed in training; an
example whose label cannot fit in its data length gets loss 0 and gradient 0 (MXNet
returns loss 0 and leaves that gradient undefined).
"""
import numpy as np

from ...base import MXNetError
from ..params import Bool, Enum, Schema
from ..registry import Op, ShapeError, register

__all__ = ["CTCLoss"]


def _log_softmax(xp, x):
    z = x - x.max(axis=-1, keepdims=True)
    z -= xp.log(xp.exp(z).sum(axis=-1, keepdims=True))
    return z


def _logsumexp3(xp, a, b, c):
    """log(exp(a) + exp(b) + exp(c)) elementwise, -inf where all three are -inf (three
    exps and a log: several times faster than chained logaddexp)."""
    m = xp.maximum(xp.maximum(a, b), c)
    m = xp.where(m == -np.inf, 0, m)
    r = xp.exp(a - m)
    r += xp.exp(b - m)
    r += xp.exp(c - m)
    with np.errstate(divide="ignore"):
        xp.log(r, out=r)
    r += m
    return r


def _shift(xp, a, k, fill):
    """a (N, S) moved k states to the right, the first k filled with fill."""
    out = xp.empty_like(a)
    out[:, :k] = fill
    out[:, k:] = a[:, :-k]
    return out


def _lengths(xp, p, inputs, T, N, Lmax, C):
    """Per-example data lengths, label lengths and the label matrix as int64."""
    label = inputs[1].astype(np.int64)
    blank_first = p.blank_label == "first"
    k = 2
    if p.use_data_lengths:
        dlen = inputs[k].reshape(-1).astype(np.int64)
        k += 1
        if int(dlen.min()) < 0 or int(dlen.max()) > T:
            raise MXNetError(f"CTCLoss: data_lengths must lie in [0, {T}] (the sequence "
                             "length of data)")
    else:
        dlen = xp.full((N,), T, np.int64)
    if p.use_label_lengths:
        llen = inputs[k].reshape(-1).astype(np.int64)
        if int(llen.min()) < 0 or int(llen.max()) > Lmax:
            raise MXNetError(f"CTCLoss: label_lengths must lie in [0, {Lmax}] (the "
                             "padded label length)")
    else:
        is_pad = label == (0 if blank_first else -1)
        llen = xp.where(is_pad.any(axis=1), is_pad.argmax(axis=1), Lmax)
    inside = xp.arange(Lmax)[None, :] < llen[:, None]
    # A label may even name the blank's class (MXNet takes it as an ordinary label
    # state), so only the alphabet bounds it.
    bad = inside & ((label < 0) | (label >= C))
    if bool(bad.any()):
        raise MXNetError(f"CTCLoss: label values must lie in [0, {C - 1}] for an "
                         f"alphabet of {C}")
    return dlen, llen, label, inside


def ctc_forward_backward(xp, data, p, inputs, want_grad):
    """(loss (N,), gradient of the loss w.r.t. data (T, N, C) or None)."""
    T, N, C = data.shape
    Lmax = inputs[1].shape[1]
    work = np.dtype(np.float32 if data.dtype == np.float16 else data.dtype)
    lp = _log_softmax(xp, data.astype(work, copy=False))
    dlen, llen, label, inside = _lengths(xp, p, inputs, T, N, Lmax, C)
    blank = 0 if p.blank_label == "first" else C - 1
    S = 2 * Lmax + 1
    ext = xp.full((N, S), blank, np.int64)
    ext[:, 1::2] = xp.where(inside, label, blank)
    s_idx = xp.arange(S)[None, :]
    # A label state may be entered from two states back unless it repeats that label.
    skip = xp.zeros((N, S), bool)
    skip[:, 3::2] = ext[:, 3::2] != ext[:, 1:-2:2]
    n_states = 2 * llen + 1
    lpe = lp[:, xp.arange(N)[:, None], ext]                    # (T, N, S)
    ninf = work.type(-np.inf)

    alpha = xp.full((T, N, S), ninf, work)
    alpha[0, :, 0] = lpe[0, :, 0]
    alpha[0, :, 1] = xp.where(llen > 0, lpe[0, :, 1], ninf)
    for t in range(1, T):
        a = alpha[t - 1]
        acc = _logsumexp3(xp, a, _shift(xp, a, 1, ninf),
                          xp.where(skip, _shift(xp, a, 2, ninf), ninf))
        xp.add(acc, lpe[t], out=alpha[t])

    n = xp.arange(N)
    t_end = xp.maximum(dlen - 1, 0)
    a_end = alpha[t_end, n]                                    # (N, S)
    last = a_end[n, n_states - 1]
    prev = xp.where(llen > 0, a_end[n, xp.maximum(n_states - 2, 0)], ninf)
    logp = xp.logaddexp(last, prev)
    feasible = (dlen > 0) & xp.isfinite(logp)
    loss = xp.where(feasible, -logp, 0).astype(data.dtype)
    if not want_grad:
        return loss, None

    # beta[t, s]: log probability of finishing the label from state s at time t,
    # not counting the emission at t.
    ends = (s_idx == n_states[:, None] - 1) | ((s_idx == n_states[:, None] - 2)
                                               & (llen[:, None] > 0))
    init = xp.where(ends, work.type(0), ninf)
    beta = xp.empty((T, N, S), work)
    b = xp.full((N, S), ninf, work)
    for t in range(T - 1, -1, -1):
        if t < T - 1:
            e = beta[t + 1] + lpe[t + 1]
            rec = _logsumexp3(xp, e, _shift_left(xp, e, 1, ninf),
                              _shift_left(xp, xp.where(skip, e, ninf), 2, ninf))
            b = xp.where((t < dlen - 1)[:, None], rec, ninf)
        beta[t] = xp.where((t == dlen - 1)[:, None], init, b)

    logp_safe = xp.where(feasible, logp, 0)
    occ = alpha
    occ += beta
    occ -= logp_safe[None, :, None]
    xp.exp(occ, out=occ)                                       # state posteriors
    del beta
    by_class = _scatter_classes(xp, occ, ext, T, N, C, blank)
    grad = xp.exp(lp)
    grad -= by_class
    live = (xp.arange(T)[:, None] < dlen[None, :]) & feasible[None, :]
    # where, not a product: frames past an example's length may hold anything (NaN)
    grad = xp.where(live[:, :, None], grad, work.type(0))
    return loss, grad.astype(data.dtype, copy=False)


def _shift_left(xp, a, k, fill):
    out = xp.empty_like(a)
    out[:, -k:] = fill
    out[:, :-k] = a[:, k:]
    return out


def _scatter_classes(xp, occ, ext, T, N, C, blank):
    """Sum state posteriors (T, N, S) into their classes (T, N, C)."""
    lab_occ = occ[:, :, 1::2]
    idx = (xp.arange(T * N).reshape(T, N, 1) * C + ext[None, :, 1::2]).reshape(-1)
    out = xp.bincount(idx, weights=lab_occ.reshape(-1).astype(np.float64),
                      minlength=T * N * C).reshape(T, N, C).astype(occ.dtype)
    out[:, :, blank] += occ[:, :, 0::2].sum(axis=-1)
    return out


@register
class CTCLoss(Op):
    """Connectionist Temporal Classification loss of unnormalised activations
    ``data`` (sequence length, batch, alphabet size) against padded ``label`` (batch,
    max label length); returns one loss per example. Softmax is applied internally."""
    name = "CTCLoss"
    aliases = ("ctc_loss", "_contrib_CTCLoss", "_contrib_ctc_loss")
    params = Schema(use_data_lengths=Bool(False), use_label_lengths=Bool(False),
                    blank_label=Enum(("first", "last"), "first"))
    backward_uses = ("out_grad", "in_data", "out_data")

    def arguments(self, p):
        names = ["data", "label"]
        if p.use_data_lengths:
            names.append("data_lengths")
        if p.use_label_lengths:
            names.append("label_lengths")
        return names

    def outputs(self, p):
        return ["output0", "output1"]          # loss, and the hidden gradient

    def num_visible_outputs(self, p):
        return 1

    def infer_shape(self, p, in_shapes):
        d, lab = in_shapes[0], in_shapes[1]
        if d is not None and len(d) != 3:
            raise ShapeError(f"CTCLoss: data must be 3-D (sequence length, batch, alphabet "
                             f"size), got shape {tuple(d)}")
        if lab is not None and len(lab) != 2:
            raise ShapeError(f"CTCLoss: label must be 2-D (batch, label length), got shape "
                             f"{tuple(lab)}")
        if d is None:
            return list(in_shapes), [None, None], []
        T, N, _ = d
        if lab is not None:
            if lab[0] != N:
                raise ShapeError(f"CTCLoss: label batch size {lab[0]} differs from data's "
                                 f"{N} (data {tuple(d)}, label {tuple(lab)})")
            if lab[1] > T:
                raise ShapeError(f"CTCLoss: the label length {lab[1]} exceeds the sequence "
                                 f"length {T} of data")
        full = [tuple(d), None if lab is None else tuple(lab)]
        for s in in_shapes[2:]:
            if s is not None and tuple(s) != (N,):
                raise ShapeError(f"CTCLoss: data_lengths/label_lengths must have shape "
                                 f"({N},), got {tuple(s)}")
            full.append((N,))
        return full, [(N,), tuple(d)], []

    def infer_type(self, p, in_types):
        t = in_types[0]
        return [t if x is None else x for x in in_types], [t, t], []

    def forward(self, ctx, p, inputs, aux):
        self.infer_shape(p, [a.shape for a in inputs])
        data = inputs[0]
        loss, grad = ctc_forward_backward(ctx.xp, data, p, inputs, ctx.is_train)
        if grad is None:
            grad = ctx.xp.zeros(data.shape, data.dtype)
        return [loss, grad]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux):
        grad = outputs[1] if ctx.is_train else None
        if grad is None:            # forward ran outside training: recompute
            grad = ctc_forward_backward(ctx.xp, inputs[0], p, inputs, True)[1]
        return [grad * out_grads[0][None, :, None]] + [None] * (len(inputs) - 1)
