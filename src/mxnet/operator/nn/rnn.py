"""The fused recurrent operator ``RNN`` (modes rnn_relu, rnn_tanh, lstm, gru), as
MXNet 1.9.1 defines it: layout TNC, stacked and optionally bidirectional layers, one
flat ``parameters`` vector, dropout between layers, variable sequence lengths.

Flat parameter layout (what MXNet and cuDNN use): first every weight, layer by layer
and within a layer the forward direction then the backward one, each as the i2h
matrix (G*H, in) then the h2h matrix (G*H, H), row-major; then every bias in the same
order, i2h (G*H) then h2h (G*H). Gates: LSTM i, f, g, o (G=4); GRU r, z, n (G=3) with
n = tanh(W_in x + b_in + r * (W_hn h + b_hn)); plain RNNs G=1.

LSTM with ``projection_size`` P (LSTMP): the hidden state is the cell output projected,
h = W_hr (o * tanh(c)), of size P; per layer and direction the weights are i2h
(4H, in), h2h (4H, P) and h2r (P, H), in that order; states h (L*D, N, P) and
c (L*D, N, H); a layer's output and the next layer's input have D*P features.

Forward runs the recurrence step by step, each step one batched matmul, and keeps
what BPTT needs (activated gates, cell states, hidden states, each layer's input and
dropout mask) in a hidden output, the way cuDNN keeps a reserve space; the hand-written
backward walks it in reverse. ``use_sequence_length`` and the LSTM state clipping
follow cuDNN's semantics (MXNet's CPU kernels ignore both).

On a GPU each step's elementwise work is one generated kernel (backend/rnn_cells.py)
instead of the ufuncs here, the dropout between layers one draw from the device's
Philox stream (operator/kernels_gpu_dropout.py), and every matmul goes through the
path a CUDA graph can capture.
"""
import numpy as np

from ...backend import rnn_cells
from ...backend.parallel import matmul
from ...base import MXNetError
from .. import kernels_gpu_dropout as gpu_dropout
from ..params import Bool, Enum, Float, FloatOrNone, Int, IntOrNone, Schema
from ..registry import Op, ShapeError, register
from .convolution import same_dtype

__all__ = ["RNN"]

_GATES = {"rnn_relu": 1, "rnn_tanh": 1, "lstm": 4, "gru": 3}
# Per layer and direction the reserve keeps K*H values per (time, batch) entry:
# LSTM gates + cell + hidden, GRU gates + (W_hn h + b_hn) + hidden, RNN hidden.
_RESERVE_K = {"rnn_relu": 1, "rnn_tanh": 1, "lstm": 6, "gru": 5}


def _sigmoid_(xp, x):
    """In-place logistic sigmoid as 0.5 * (1 + tanh(x / 2)), which cannot overflow."""
    x *= 0.5
    xp.tanh(x, out=x)
    x += 1
    x *= 0.5
    return x


class _Plan:
    """Sizes and offsets for one (mode, layers, directions, input size, state size)."""

    def __init__(self, p, T, N, I):
        self.mode, self.L, self.H = p.mode, p.num_layers, p.state_size
        self.proj = p.projection_size is not None
        self.P = p.projection_size if self.proj else self.H     # size of h
        self.D = 2 if p.bidirectional else 1
        self.G = _GATES[p.mode]
        self.T, self.N, self.I = T, N, I
        self.dropout = p.p > 0 and self.L > 1
        G, H, P = self.G, self.H, self.P
        self.weights, off = [], 0
        for l in range(self.L):
            n_in = I if l == 0 else self.D * P
            for _ in range(self.D):
                self.weights.append((off, (G * H, n_in), off + G * H * n_in, (G * H, P),
                                     off + G * H * (n_in + P) if self.proj else None))
                off += G * H * (n_in + P) + (P * H if self.proj else 0)
        self.biases = []
        for _ in range(self.L * self.D):
            self.biases.append((off, off + G * H))
            off += 2 * G * H
        self.n_params = off
        step = T * N * H
        self.block = _RESERVE_K[self.mode] * step            # per layer and direction
        if self.proj:               # + the projection's input m = o * tanh(c); h is P wide
            self.block += T * N * (P - H) + step
        self.layer_in = T * N * self.D * P                   # inputs of layers 1..L-1
        self.n_reserve = (self.L * self.D * self.block
                          + (self.L - 1) * self.layer_in * (2 if self.dropout else 1))

    def params_of(self, flat, k):
        """(Wx, Wh, bx, bh, Wr) views of layer-direction k in a flat parameter vector
        (Wr, the projection, None without one)."""
        wo, ws, ho, hs, ro = self.weights[k]
        bo, bho = self.biases[k]
        GH = self.G * self.H
        wr = None if ro is None else flat[ro:ro + self.P * self.H].reshape(self.P, self.H)
        return (flat[wo:wo + ws[0] * ws[1]].reshape(ws), flat[ho:ho + hs[0] * hs[1]].reshape(hs),
                flat[bo:bo + GH], flat[bho:bho + GH], wr)

    def reserve_of(self, res, k):
        """Views of layer-direction k's block of the reserve."""
        T, N, H, G = self.T, self.N, self.H, self.G
        blk = res[k * self.block:(k + 1) * self.block]
        step = T * N * H
        if self.mode == "lstm":
            views = {"gates": blk[:4 * step].reshape(T, N, 4 * H),
                     "c": blk[4 * step:5 * step].reshape(T, N, H)}
            if self.proj:
                views["m"] = blk[5 * step:6 * step].reshape(T, N, H)
                views["h"] = blk[6 * step:].reshape(T, N, self.P)
            else:
                views["h"] = blk[5 * step:].reshape(T, N, H)
            return views
        if self.mode == "gru":
            return {"gates": blk[:3 * step].reshape(T, N, 3 * H),
                    "hn": blk[3 * step:4 * step].reshape(T, N, H),
                    "h": blk[4 * step:].reshape(T, N, H)}
        return {"h": blk.reshape(T, N, H)}

    def layer_input(self, res, l):
        """The input of layer l >= 1 (after dropout) and its dropout mask (or None)."""
        base = self.L * self.D * self.block
        shape = (self.T, self.N, self.D * self.P)
        o = base + (l - 1) * self.layer_in
        x = res[o:o + self.layer_in].reshape(shape)
        if not self.dropout:
            return x, None
        o = base + (self.L - 1 + l - 1) * self.layer_in
        return x, res[o:o + self.layer_in].reshape(shape)


def _clip(xp, c, lo, hi, keep_nan):
    if keep_nan:                        # clip_nan: NaN becomes the lower bound (fmax/fmin)
        xp.fmax(c, lo, out=c)
        return xp.fmin(c, hi, out=c)
    return xp.clip(c, lo, hi, out=c)


# --- one direction of one layer: forward ----------------------------------------------
def _forward_dir(xp, plan, x, w, h, c, r, mask, clip):
    """Run the recurrence over x (T, N, in), already in processing order, writing the
    reserve views r. Returns the final (h, c)."""
    _project_inputs(xp, plan, x, w, r)
    steps = rnn_cells.forward_steps if rnn_cells.usable(xp, plan, x.dtype) else _forward_steps
    return steps(xp, plan, w, h, c, r, mask, clip)


def _mm(xp, a, b, out=None):
    """a @ b; on a GPU through backend/parallel.matmul, whose cuBLAS call a CUDA graph
    can capture (CuPy refuses cuBLAS inside a capture), so a graph holding the fused
    cells' recurrence can be recorded."""
    return xp.matmul(a, b, out=out) if xp is np else matmul(xp, a, b, out)


def _project_inputs(xp, plan, x, w, r):
    """Every step's input projection in one matmul, into the reserve: x Wx^T plus the
    biases that do not depend on the hidden state (GRU's bh does, through r)."""
    T, N = plan.T, plan.N
    wx, _, bx, bh, _ = w
    GH = plan.G * plan.H
    dst = r["h"] if plan.G == 1 else r["gates"]
    _mm(xp, x.reshape(T * N, -1), wx.T, out=dst.reshape(T * N, GH))
    dst += bx if plan.mode == "gru" else bx + bh


def _forward_steps(xp, plan, w, h, c, r, mask, clip):
    """The recurrence with ufuncs, step by step, over the projected inputs in r.
    Returns the final (h, c)."""
    T, H = plan.T, plan.H
    _, wh, _, bh, wr = w
    hs = r["h"]
    if plan.mode == "lstm":
        g_all = r["gates"]
        cs = r["c"]
        for t in range(T):
            g = g_all[t]
            g += h @ wh.T
            _sigmoid_(xp, g[:, :2 * H])
            xp.tanh(g[:, 2 * H:3 * H], out=g[:, 2 * H:3 * H])
            _sigmoid_(xp, g[:, 3 * H:])
            c_new = g[:, H:2 * H] * c
            c_new += g[:, :H] * g[:, 2 * H:3 * H]
            if clip is not None:
                _clip(xp, c_new, *clip)
            h_new = xp.tanh(c_new)
            h_new *= g[:, 3 * H:]
            if wr is not None:              # LSTMP: h = W_hr m, m = o * tanh(c)
                r["m"][t] = h_new
                h_new = h_new @ wr.T
            if mask is not None:
                c_new = xp.where(mask[t], c_new, c)
                h_new = xp.where(mask[t], h_new, h)
            cs[t] = c_new
            hs[t] = h_new
            h, c = hs[t], cs[t]
        return h, c
    if plan.mode == "gru":
        g_all, hns = r["gates"], r["hn"]
        for t in range(T):
            g = g_all[t]
            hg = h @ wh.T
            hg += bh
            g[:, :2 * H] += hg[:, :2 * H]
            _sigmoid_(xp, g[:, :2 * H])
            hns[t] = hg[:, 2 * H:]
            n = g[:, 2 * H:]
            n += g[:, :H] * hns[t]
            xp.tanh(n, out=n)
            z = g[:, H:2 * H]
            h_new = n + z * (h - n)             # (1 - z) * n + z * h
            if mask is not None:
                h_new = xp.where(mask[t], h_new, h)
            hs[t] = h_new
            h = hs[t]
        return h, None
    relu = plan.mode == "rnn_relu"
    for t in range(T):
        a = hs[t]
        a += h @ wh.T
        if relu:
            xp.maximum(a, 0, out=a)
        else:
            xp.tanh(a, out=a)
        if mask is not None:
            hs[t] = xp.where(mask[t], a, h)
        h = hs[t]
    return h, None


# --- one direction of one layer: backward ---------------------------------------------
def _backward_dir(xp, plan, x, w, h0, c0, r, mask, clip, dy, dh, dc, need_dx, dw):
    """BPTT through one direction. dy (T, N, H) is the gradient of the hidden sequence
    in processing order; dh/dc the gradients of the final states. Accumulates weight
    gradients into the views dw = (dWx, dWh, dbx, dbh, dWr) (or skips them when dw is
    None). Returns (dx or None, dh0, dc0)."""
    if rnn_cells.usable(xp, plan, x.dtype):
        dX, dH, dh, dc = rnn_cells.backward_steps(xp, plan, w, h0, c0, r, mask, clip,
                                                  dy, dh, dc)
    else:
        dX, dH, dh, dc = _backward_steps(xp, plan, w, h0, c0, r, mask, clip, dy, dh, dc,
                                         None if dw is None else dw[4])
    T, N, P = plan.T, plan.N, plan.P
    GH = dX.shape[-1]
    dX2 = dX.reshape(T * N, GH)
    if dw is not None:
        dwx, dwh, dbx, dbh, _ = dw
        dwx += _mm(xp, dX2.T, x.reshape(T * N, -1))
        dH2 = dH.reshape(T * N, GH)
        dwh += _mm(xp, dH[0].T, xp.ascontiguousarray(h0))
        if T > 1:
            dwh += _mm(xp, dH2[N:].T, r["h"][:-1].reshape((T - 1) * N, P))
        sx = dX2.sum(axis=0)
        dbx += sx
        dbh += sx if dH is dX else dH2.sum(axis=0)
    dx = _mm(xp, dX2, w[0]).reshape(T, N, -1) if need_dx else None
    return dx, dh, dc


def _backward_steps(xp, plan, w, h0, c0, r, mask, clip, dy, dh, dc, dwr):
    """BPTT's step loop with ufuncs. Returns (dX, dH, dh0, dc0): the gradients of the
    input projections and of the recurrent projections per step (one array for LSTMs
    and RNNs), and of the initial states; accumulates the projection's weight gradient
    into dwr (LSTMP, when not None)."""
    T, N, H = plan.T, plan.N, plan.H
    _, wh, _, _, wr = w
    hs = r["h"]
    dt = hs.dtype
    if plan.mode == "lstm":
        gates, cs = r["gates"], r["c"]
        dG = xp.empty((T, N, 4 * H), dt)
        for t in range(T - 1, -1, -1):
            dh = dh + dy[t]
            g = gates[t]
            i, f, gg, o = g[:, :H], g[:, H:2 * H], g[:, 2 * H:3 * H], g[:, 3 * H:]
            c_prev = cs[t - 1] if t else c0
            tc = xp.tanh(cs[t])
            d = dG[t]
            dm = dh                         # gradient of o * tanh(c)
            if wr is not None:
                dhp = dh if mask is None else xp.where(mask[t], dh, 0)
                if dwr is not None:
                    dwr += dhp.T @ r["m"][t]
                dm = dhp @ wr
            xp.multiply(dm, tc, out=d[:, 3 * H:])
            d[:, 3 * H:] *= o * (1 - o)
            dcc = dm * o
            dcc *= 1 - tc * tc
            dcc += dc
            if clip is not None:
                lo, hi, _ = clip
                dcc *= (cs[t] > lo) & (cs[t] < hi)
            xp.multiply(dcc, gg * i * (1 - i), out=d[:, :H])
            xp.multiply(dcc, c_prev * f * (1 - f), out=d[:, H:2 * H])
            xp.multiply(dcc, i * (1 - gg * gg), out=d[:, 2 * H:3 * H])
            dc_prev = dcc * f
            dh_prev = d @ wh
            if mask is not None:
                m = mask[t]
                d[...] = xp.where(m, d, 0)
                dh_prev = xp.where(m, dh_prev, dh)
                dc_prev = xp.where(m, dc_prev, dc)
            dh, dc = dh_prev, dc_prev
        dX = dH = dG
    elif plan.mode == "gru":
        gates, hns = r["gates"], r["hn"]
        dX = xp.empty((T, N, 3 * H), dt)
        dH = xp.empty((T, N, 3 * H), dt)
        for t in range(T - 1, -1, -1):
            dh = dh + dy[t]
            g = gates[t]
            rr, z, n = g[:, :H], g[:, H:2 * H], g[:, 2 * H:]
            h_prev = hs[t - 1] if t else h0
            dnp = dh * (1 - z)
            dnp *= 1 - n * n
            dX[t, :, 2 * H:] = dnp
            xp.multiply(dnp, rr, out=dH[t, :, 2 * H:])
            xp.multiply(dnp * hns[t], rr * (1 - rr), out=dX[t, :, :H])
            xp.multiply(dh * (h_prev - n), z * (1 - z), out=dX[t, :, H:2 * H])
            dH[t, :, :2 * H] = dX[t, :, :2 * H]
            dh_prev = dH[t] @ wh
            dh_prev += dh * z
            if mask is not None:
                m = mask[t]
                dX[t] = xp.where(m, dX[t], 0)
                dH[t] = xp.where(m, dH[t], 0)
                dh_prev = xp.where(m, dh_prev, dh)
            dh = dh_prev
    else:
        dX = dH = xp.empty((T, N, H), dt)
        relu = plan.mode == "rnn_relu"
        for t in range(T - 1, -1, -1):
            dh = dh + dy[t]
            d = dX[t]
            if relu:
                xp.multiply(dh, hs[t] > 0, out=d)
            else:
                xp.multiply(dh, 1 - hs[t] * hs[t], out=d)
            dh_prev = d @ wh
            if mask is not None:
                m = mask[t]
                d[...] = xp.where(m, d, 0)
                dh_prev = xp.where(m, dh_prev, dh)
            dh = dh_prev
    return dX, dH, dh, (dc if plan.mode == "lstm" else None)


def _reverse(xp, a, rev):
    """a (T, N, ...) with each sequence reversed within its length (all of T when rev
    is None). The permutation is its own inverse."""
    if rev is None:
        return a[::-1]
    return a[rev, xp.arange(a.shape[1])[None, :]]


def _lengths(xp, p, inputs, T, N):
    """(mask (T, N, 1) bool, reverse index (T, N)) for use_sequence_length, else Nones."""
    if not p.use_sequence_length:
        return None, None
    seq = inputs[-1]
    lens = seq.astype(np.int64).reshape(-1)
    if lens.shape[0] != N:
        raise ShapeError(f"RNN: sequence_length must have shape ({N},), got {seq.shape}")
    if int(lens.min()) < 0 or int(lens.max()) > T:
        raise MXNetError(f"RNN: sequence_length values must lie in [0, {T}] "
                         "(the sequence axis of data)")
    t = xp.arange(T)[:, None]
    valid = t < lens[None, :]
    rev = xp.where(valid, lens[None, :] - 1 - t, t)
    return valid[:, :, None], rev


@register
class RNN(Op):
    """Applies a recurrent layer (vanilla RNN with relu/tanh, LSTM or GRU) to data of
    layout (sequence length, batch, input size), stacking ``num_layers`` layers of
    ``state_size`` units, in both directions when ``bidirectional``. Returns the
    output sequence and, with ``state_outputs``, the final hidden (and LSTM cell)
    states of shape (num_layers * directions, batch, state_size)."""
    name = "RNN"
    float_only = True
    checks_types = True
    params = Schema(
        state_size=Int(low=0), num_layers=Int(low=0), bidirectional=Bool(False),
        mode=Enum(("gru", "lstm", "rnn_relu", "rnn_tanh")), p=Float(0.0, low=0.0, high=1.0),
        state_outputs=Bool(False), projection_size=IntOrNone(None),
        lstm_state_clip_min=FloatOrNone(None), lstm_state_clip_max=FloatOrNone(None),
        lstm_state_clip_nan=Bool(False), use_sequence_length=Bool(False))
    backward_uses = ("out_grad", "in_data", "out_data")
    resources = ("random",)

    def arguments(self, p):
        names = ["data", "parameters", "state"]
        if p.mode == "lstm":
            names.append("state_cell")
        if p.use_sequence_length:
            names.append("sequence_length")
        return names

    def outputs(self, p):
        names = ["output"]
        if p.state_outputs:
            names.append("state_output")
            if p.mode == "lstm":
                names.append("statecell_output")
        return names + ["reserve_space"]

    def num_visible_outputs(self, p):
        return len(self.outputs(p)) - 1

    # --- inference --------------------------------------------------------------------
    def check_params(self, p):
        if p.projection_size is not None:
            if p.mode != "lstm":
                raise MXNetError("RNN: projection_size is only supported for mode='lstm'")
            if p.projection_size < 1:
                raise MXNetError("RNN: projection_size must be positive")
        if (p.lstm_state_clip_min is None) != (p.lstm_state_clip_max is None):
            raise MXNetError("RNN: lstm_state_clip_min and lstm_state_clip_max must be "
                             "given together")
        if p.lstm_state_clip_min is not None and p.lstm_state_clip_min > p.lstm_state_clip_max:
            raise MXNetError("RNN: lstm_state_clip_min must not exceed lstm_state_clip_max")
        if p.state_size < 1 or p.num_layers < 1:
            raise MXNetError("RNN: state_size and num_layers must be positive")

    def infer_shape(self, p, in_shapes):
        names = self.arguments(p)
        n_out = len(self.outputs(p))
        d = in_shapes[0]
        if d is None:
            return list(in_shapes), [None] * n_out, []
        if len(d) != 3:
            raise ShapeError(f"RNN: data must be 3-D (sequence length, batch, input size) "
                             f"in layout TNC, got shape {tuple(d)}")
        T, N, I = d
        plan = _Plan(p, T, N, I)
        S = (plan.L * plan.D, N, plan.P)
        SC = (plan.L * plan.D, N, plan.H)
        want = {"data": tuple(d), "parameters": (plan.n_params,), "state": S,
                "state_cell": SC, "sequence_length": (N,)}
        full = []
        for name, got in zip(names, in_shapes):
            if got is not None and tuple(got) != want[name]:
                raise ShapeError(f"RNN: {name} has shape {tuple(got)}, expected "
                                 f"{want[name]} for data {tuple(d)}, mode={p.mode}, "
                                 f"state_size={p.state_size}, num_layers={p.num_layers}, "
                                 f"bidirectional={p.bidirectional}")
            full.append(want[name])
        outs = [(T, N, plan.D * plan.P)] + [S, SC][:n_out - 2] + [(plan.n_reserve,)]
        return full, outs, []

    def infer_type(self, p, in_types):
        n_float = 4 if p.mode == "lstm" else 3
        t = same_dtype(self.name, self.arguments(p)[:n_float], in_types[:n_float])
        ins = [t if x is None else x for x in in_types]
        if p.use_sequence_length and in_types[-1] is not None:
            ins[-1] = in_types[-1]
        return ins, [t] * len(self.outputs(p)), []

    # --- compute ------------------------------------------------------------------------
    def _setup(self, ctx, p, inputs):
        xp = ctx.xp
        x = inputs[0]
        self.infer_shape(p, [a.shape for a in inputs])
        T, N, I = x.shape
        plan = _Plan(p, T, N, I)
        mask, rev = _lengths(xp, p, inputs, T, N)
        clip = None
        if p.mode == "lstm" and p.lstm_state_clip_min is not None:
            clip = (p.lstm_state_clip_min, p.lstm_state_clip_max, p.lstm_state_clip_nan)
        return xp, plan, mask, rev, clip

    def forward(self, ctx, p, inputs, aux):
        xp, plan, mask, rev, clip = self._setup(ctx, p, inputs)
        x, flat, h0 = inputs[0], inputs[1], inputs[2]
        c0 = inputs[3] if p.mode == "lstm" else None
        T, N, H, D, P = plan.T, plan.N, plan.H, plan.D, plan.P
        dt = x.dtype
        res = xp.empty((plan.n_reserve,), dt)
        hy = xp.empty((plan.L * D, N, P), dt)
        cy = xp.empty((plan.L * D, N, H), dt) if p.mode == "lstm" else None
        layer_x = x
        for l in range(plan.L):
            last = l == plan.L - 1
            if last:
                y = xp.empty((T, N, D * P), dt)
            else:
                y, drop = plan.layer_input(res, l + 1)
            for d in range(D):
                k = l * D + d
                r = plan.reserve_of(res, k)
                xin = layer_x if d == 0 else _reverse(xp, layer_x, rev)
                h, c = _forward_dir(xp, plan, xin, plan.params_of(flat, k), h0[k],
                                    None if c0 is None else c0[k], r, mask, clip)
                hy[k] = h
                if cy is not None:
                    cy[k] = c
                seq = r["h"] if mask is None else xp.where(mask, r["h"], 0)
                y[:, :, d * P:(d + 1) * P] = seq if d == 0 else _reverse(xp, seq, rev)
            if not last and plan.dropout:
                if not ctx.is_train:
                    drop.fill(1)
                    y *= drop
                elif gpu_dropout.usable(y, p.p):    # the device's Philox stream
                    gpu_dropout.draw(xp, ctx.ctx, y, y, drop, p.p)
                else:
                    keep = ctx.rng.random(drop.shape) >= p.p
                    scale = dt.type(1 / (1 - p.p)) if p.p < 1 else dt.type(0)
                    drop[...] = xp.asarray(keep, dtype=dt) * scale
                    y *= drop
            layer_x = y
        outs = [layer_x]
        if p.state_outputs:
            outs.append(hy)
            if cy is not None:
                outs.append(cy)
        return outs + [res]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux):
        xp, plan, mask, rev, clip = self._setup(ctx, p, inputs)
        x, flat, h0 = inputs[0], inputs[1], inputs[2]
        c0 = inputs[3] if p.mode == "lstm" else None
        res = outputs[-1]
        T, N, H, D, L, P = plan.T, plan.N, plan.H, plan.D, plan.L, plan.P
        need = ctx.need_grad or [True] * len(inputs)
        dhy = out_grads[1] if p.state_outputs else None
        dcy = out_grads[2] if (p.state_outputs and p.mode == "lstm") else None
        zeros = xp.zeros((N, P), x.dtype)
        zeros_c = xp.zeros((N, H), x.dtype)
        dflat = xp.zeros_like(flat) if need[1] else None
        dh0 = xp.empty_like(h0)
        dc0 = xp.empty_like(c0) if c0 is not None else None
        dy = out_grads[0]
        dx = None
        for l in range(L - 1, -1, -1):
            if l:
                layer_x, drop = plan.layer_input(res, l)
            else:
                layer_x, drop = x, None
            need_dx = l > 0 or need[0]
            dx = xp.zeros(layer_x.shape, x.dtype) if need_dx else None
            for d in range(D):
                k = l * D + d
                r = plan.reserve_of(res, k)
                dyd = dy[:, :, d * P:(d + 1) * P]
                if d:
                    dyd = _reverse(xp, dyd, rev)
                if mask is not None:
                    dyd = xp.where(mask, dyd, 0)
                xin = layer_x if d == 0 else _reverse(xp, layer_x, rev)
                dw = None
                if dflat is not None:
                    dw = plan.params_of(dflat, k)
                dxk, dh0[k], dck = _backward_dir(
                    xp, plan, xin, plan.params_of(flat, k), h0[k],
                    None if c0 is None else c0[k], r, mask, clip, dyd,
                    zeros if dhy is None else dhy[k],
                    None if c0 is None else (zeros_c if dcy is None else dcy[k]),
                    need_dx, dw)
                if dc0 is not None:
                    dc0[k] = dck
                if need_dx:
                    dx += dxk if d == 0 else _reverse(xp, dxk, rev)
            if l:
                dy = dx * drop if drop is not None else dx
        grads = [dx if need[0] else None, dflat, dh0 if need[2] else None]
        if p.mode == "lstm":
            grads.append(dc0 if need[3] else None)
        if p.use_sequence_length:
            grads.append(None)
        return grads
