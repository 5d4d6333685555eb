"""``hawkesll`` (contrib): log likelihood of K independent univariate Hawkes processes
with exponential kernels, as in MXNet 1.9.1.

Intensity of process k: lda_k + alpha_k * beta_k * sum_{t_i < t, mark k}
exp(-beta_k (t - t_i)); the memory s_k(t) = sum exp(-beta_k (t - t_i)) starts from
``state``. Per sequence the log likelihood adds log(intensity) at every event and
subtracts the compensator (the integrated intensity) over (0, max_time]; the memory at
max_time is the second output. The loop runs over event positions, vectorised over the
batch; backward carries d/d(lda, alpha, beta) forward through the same loop. As in
MXNet, the gradient flows from the log likelihood only (state gets 0, the observation
inputs none).
"""
import numpy as np

from ..params import Schema
from ..registry import Op, ShapeError, register
from ._common import store, store_all

__all__ = ["HawkesLL"]


def _run(xp, inputs, with_grad):
    lda, alpha, beta, state, lags, marks, valid, max_time = inputs
    f = np.float64
    N, K = lda.shape
    T = lags.shape[1]
    lda, alpha, beta = lda.astype(f), alpha.astype(f), beta.astype(f)
    s = state.astype(f).copy()
    last = xp.zeros((N, K))
    t = xp.zeros(N)
    ll = xp.zeros(N)
    rows = xp.arange(N)
    valid = valid.astype(np.int64)
    marks = marks.astype(np.int64)
    if with_grad:
        g_lda, g_alpha, g_beta = xp.zeros((N, K)), xp.zeros((N, K)), xp.zeros((N, K))
        ds = xp.zeros((N, K))                   # d s / d beta (per row, own process)
    for j in range(T):
        live = j < valid
        if not bool(live.any()):
            break
        k = xp.where(live, marks[:, j], 0)
        t = t + xp.where(live, lags[:, j].astype(f), 0)
        d = t - last[rows, k]
        b, a, lam, sk = beta[k], alpha[k], lda[rows, k], s[rows, k]
        ed = xp.exp(-b * d)
        inten = lam + a * b * sk * ed
        comp = lam * d + a * sk * (1 - ed)
        ll = ll + xp.where(live, xp.log(inten) - comp, 0)
        if with_grad:
            dsk = ds[rows, k]
            upd = live.astype(f)
            xp.add.at(g_lda, (rows, k), upd * (1 / inten - d))
            xp.add.at(g_alpha, (rows, k), upd * (b * sk * ed / inten - sk * (1 - ed)))
            dinten = a * ed * (sk + b * dsk - b * sk * d)
            dcomp = a * (dsk * (1 - ed) + sk * d * ed)
            xp.add.at(g_beta, (rows, k), upd * (dinten / inten - dcomp))
            ds[rows, k] = xp.where(live, ed * (dsk - sk * d), dsk)
        s[rows, k] = xp.where(live, sk * ed + 1, sk)
        last[rows, k] = xp.where(live, t, last[rows, k])
    d = max_time.astype(f)[:, None] - last
    ed = xp.exp(-beta[None] * d)
    ll = ll - (lda * d + alpha[None] * s * (1 - ed)).sum(axis=1)
    out_state = s * ed
    if not with_grad:
        return ll, out_state
    g_lda -= d
    g_alpha -= s * (1 - ed)
    g_beta -= alpha[None] * (ds * (1 - ed) + s * d * ed)
    return ll, out_state, g_lda, g_alpha, g_beta


@register
class HawkesLL(Op):
    """Hawkes process log likelihood: inputs lda (N, K), alpha (K,), beta (K,), state
    (N, K), lags (N, T), marks (N, T) process ids, valid_length (N,), max_time (N,);
    outputs the log likelihood (N,) and the memory at max_time (N, K)."""
    name = "_contrib_hawkesll"
    writes_outputs = True
    params = Schema()
    backward_uses = ("out_grad", "in_data")

    def arguments(self, p):
        return ["lda", "alpha", "beta", "state", "lags", "marks", "valid_length",
                "max_time"]

    def outputs(self, p):
        return ["output", "out_state"]

    def infer_shape(self, p, in_shapes):
        lda = in_shapes[0]
        if lda is None:
            return list(in_shapes), [None, None], []
        if len(lda) != 2:
            raise ShapeError(f"hawkesll: lda must be (N, K), got {tuple(lda)}")
        N, K = lda
        lags = in_shapes[4]
        T = lags[1] if lags is not None else None
        want = [(N, K), (K,), (K,), (N, K), None if T is None else (N, T),
                None if T is None else (N, T), (N,), (N,)]
        names = self.arguments(p)
        for nm, s, w in zip(names, in_shapes, want):
            if s is not None and w is not None and tuple(s) != w:
                raise ShapeError(f"hawkesll: {nm} must have shape {w}, got {tuple(s)}")
        return [w if w is not None else s for w, s in zip(want, in_shapes)], \
            [(N,), (N, K)], []

    def infer_type(self, p, in_types):
        t = in_types[0]
        ins = [x if x is not None else t for x in in_types]
        return ins, [t, t], []

    def forward(self, ctx, p, inputs, aux, out=None):
        self.infer_shape(p, [a.shape for a in inputs])
        ll, st = _run(ctx.xp, inputs, False)
        dt = inputs[0].dtype
        return store_all(out, [ll.astype(dt), st.astype(dt)])

    def backward(self, ctx, p, out_grads, inputs, outputs, aux, in_grad=None):
        xp = ctx.xp
        _, _, g_lda, g_alpha, g_beta = _run(xp, inputs, True)
        g = out_grads[0].astype(np.float64)[:, None]
        dt = inputs[0].dtype
        grads = [store(in_grad, 0, (g_lda * g).astype(dt)),
                 store(in_grad, 1, (g_alpha * g).sum(0).astype(dt)),
                 store(in_grad, 2, (g_beta * g).sum(0).astype(dt)),
                 store(in_grad, 3, xp.zeros(inputs[3].shape, dt))]
        return grads + [None] * 4
