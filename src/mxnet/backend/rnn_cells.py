"""Fused recurrent cells for the ``RNN`` operator on a GPU: one generated CUDA kernel
per time step instead of a dozen CuPy ufuncs.

The operator (operator/nn/rnn.py) runs its recurrence step by step: per step one
matmul of the previous hidden state, then the cell's elementwise work. Written with
ufuncs, that work is ~18 launches per LSTM step forward and ~25 backward (sigmoid as
four in-place passes, the cell update, copies into the reserve, the mask's ``where``),
and on a GPU each launch costs more host time than the kernel takes at the sizes
recurrent models use (d2l's language model: batch 32, 256 units, 35 steps). Here a
step is the matmul and one kernel, forward and backward, for every mode (LSTM without a
projection, GRU, relu and tanh RNNs), with sequence-length masks and LSTM state clipping.

The kernels compute what the ufunc body computes, in the same order of operations
(sigmoid as 0.5 * (1 + tanh(x / 2)); masked entries keep the previous state and get a
zero gradient; clipping as ``clip`` or, with ``lstm_state_clip_nan``, NaN to the
bound). The backward carries the part of the hidden state's gradient that does not come
through the next step's matmul (GRU's z * dh, a masked entry's whole gradient) in a
separate buffer added to the matmul's output by the next step's kernel, so no ``where``
is needed. float32, float64 and float16 (read and written as its bits, computed in
float32, rounded where the ufunc body stores: gates, states, gradients; the clipping
bounds rounded to float16 as the ufunc body's comparisons round them); LSTMs with a
projection keep the ufunc body. The sources use no headers: ``nvcc --ptx`` and a host compiler check them
without a GPU (tests/cuda_on_host.py), through this module's own launch code.

``MXNET_GPU_RNN_FUSED_CELLS=0`` runs the ufunc body on the GPU as well.
"""
import os

import numpy as np

from .cuda_kernels import BITS_SOURCE, grid_stride_blocks, raw_kernel
from .parallel import matmul        # cuBLAS through a capturable handle in CUDA graphs

__all__ = ["TYPES", "KERNELS", "source", "usable", "forward_steps", "backward_steps"]

_THREADS = 256
_MAX_BLOCKS = 4096
_F32 = ("float", "tanhf", "fmaxf", "fminf")
# dtype: (element C type, compute type, tanh, fmax, fmin, load as compute, store)
_MATH = {np.dtype(np.float32): ("float",) + _F32 + ("(v)", "(v)"),
         np.dtype(np.float64): ("double", "double", "tanh", "fmax", "fmin", "(v)", "(v)"),
         np.dtype(np.float16): ("unsigned short",) + _F32
         + ("mx_half_to_float(v)", "mx_to_half(v)")}
TYPES = tuple(_MATH)       # (bfloat16 calls reach RNN as float32: operator/bfloat16.py)

# 16-bit types are read and written as their bits and computed in float32.
_PRELUDE = r"""
typedef {real} real;
typedef {acc} acc;
#define LD(v) {load}
#define ST(v) {store}
__device__ __forceinline__ acc mx_sigmoid(acc x) {{
    return ({tanh}(x * (acc)0.5) + (acc)1) * (acc)0.5;
}}
__device__ __forceinline__ acc mx_clip(acc c, acc lo, acc hi, int clip_nan) {{
    if (clip_nan) return {fmin}({fmax}(c, lo), hi);   /* NaN becomes lo */
    return c < lo ? lo : (c > hi ? hi : c);              /* NaN stays NaN */
}}
"""

# Every kernel walks the N * H elements (row n of the batch, unit j) of one step.
_LOOP = """
    for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x; e < N * H;
         e += (long long)gridDim.x * blockDim.x) {
        const long long n = e / H, j = e - n * H;
        const int keep = has_mask && !mask[n];       /* past this sequence's end */
"""

_BODIES = {
    # gates (N, 4H): in, the input projection with both biases; out, the activated
    # gates i, f, g, o. hg (N, 4H) = h_prev Wh^T.
    "lstm_fwd": ("""real* gates, const real* hg, const real* c_prev, const real* h_prev,
        real* c_out, real* h_out, const unsigned char* mask, int has_mask, int has_clip,
        acc lo, acc hi, int clip_nan, long long N, long long H""", """
        real* g = gates + n * 4 * H;
        const real* q = hg + n * 4 * H;
        const acc gi = mx_sigmoid(LD(g[j]) + LD(q[j]));
        const acc gf = mx_sigmoid(LD(g[H + j]) + LD(q[H + j]));
        const acc gg = {tanh}(LD(g[2 * H + j]) + LD(q[2 * H + j]));
        const acc go = mx_sigmoid(LD(g[3 * H + j]) + LD(q[3 * H + j]));
        g[j] = ST(gi); g[H + j] = ST(gf); g[2 * H + j] = ST(gg); g[3 * H + j] = ST(go);
        acc c = gf * LD(c_prev[e]);
        c = c + gi * gg;
        if (has_clip) c = mx_clip(c, lo, hi, clip_nan);
        const acc h = {tanh}(c) * go;
        c_out[e] = keep ? c_prev[e] : ST(c);
        h_out[e] = keep ? h_prev[e] : ST(h);"""),
    # dh = dh_mm (the next step's matmul, or the final state's gradient) + carry + dy;
    # d (N, 4H) the gates' gradients; dc updated in place; carry_out: a masked entry's dh.
    "lstm_bwd": ("""const real* gates, const real* c_t, const real* c_prev,
        const real* dh_mm, real* carry, int has_carry, const real* dy, real* dc, real* d,
        const unsigned char* mask, int has_mask, int has_clip, acc lo, acc hi,
        long long N, long long H""", """
        acc dh = LD(dh_mm[e]);
        if (has_carry) dh = dh + LD(carry[e]);
        dh = dh + LD(dy[e]);
        const real* g = gates + n * 4 * H;
        const acc gi = LD(g[j]), gf = LD(g[H + j]), gg = LD(g[2 * H + j]), go = LD(g[3 * H + j]);
        const acc c = LD(c_t[e]);
        const acc tc = {tanh}(c);
        acc dgo = dh * tc;
        dgo = dgo * (go * ((acc)1 - go));
        acc dcc = dh * go;
        dcc = dcc * ((acc)1 - tc * tc);
        dcc = dcc + LD(dc[e]);
        if (has_clip) dcc = dcc * (acc)((c > lo) && (c < hi));
        const acc dgi = dcc * (gg * gi * ((acc)1 - gi));
        const acc dgf = dcc * (LD(c_prev[e]) * gf * ((acc)1 - gf));
        const acc dgg = dcc * (gi * ((acc)1 - gg * gg));
        real* o = d + n * 4 * H;
        if (keep) {{
            o[j] = ST(0); o[H + j] = ST(0); o[2 * H + j] = ST(0); o[3 * H + j] = ST(0);
            carry[e] = ST(dh);                   /* dc keeps its value */
        }} else {{
            o[j] = ST(dgi); o[H + j] = ST(dgf); o[2 * H + j] = ST(dgg); o[3 * H + j] = ST(dgo);
            dc[e] = ST(dcc * gf);
            if (has_mask) carry[e] = ST(0);
        }}"""),
    # gates (N, 3H): in, the input projection with its bias; out, r, z, n.
    # hg (N, 3H) = h_prev Wh^T without its bias bh; hn_out = W_hn h + b_hn.
    "gru_fwd": ("""real* gates, const real* hg, const real* bh, const real* h_prev,
        real* hn_out, real* h_out, const unsigned char* mask, int has_mask,
        long long N, long long H""", """
        real* g = gates + n * 3 * H;
        const real* q = hg + n * 3 * H;
        const acc hr = LD(q[j]) + LD(bh[j]), hz = LD(q[H + j]) + LD(bh[H + j]);
        const real hn = ST(LD(q[2 * H + j]) + LD(bh[2 * H + j]));  /* kept as stored */
        const acc r = mx_sigmoid(LD(g[j]) + hr);
        const acc z = mx_sigmoid(LD(g[H + j]) + hz);
        const acc nn = {tanh}(LD(g[2 * H + j]) + r * LD(hn));
        g[j] = ST(r); g[H + j] = ST(z); g[2 * H + j] = ST(nn);
        hn_out[e] = hn;
        const acc hp = LD(h_prev[e]);
        h_out[e] = keep ? h_prev[e] : ST(nn + z * (hp - nn));"""),
    # dX (N, 3H) the gradients of the input projections, dH (N, 3H) of W_h h + b_h;
    # carry_out: z * dh (a masked entry's whole dh), the part of h_prev's gradient
    # that does not go through the matmul.
    "gru_bwd": ("""const real* gates, const real* hn, const real* h_prev,
        const real* dh_mm, real* carry, int has_carry, const real* dy, real* dX, real* dH,
        const unsigned char* mask, int has_mask, long long N, long long H""", """
        acc dh = LD(dh_mm[e]);
        if (has_carry) dh = dh + LD(carry[e]);
        dh = dh + LD(dy[e]);
        const real* g = gates + n * 3 * H;
        const acc r = LD(g[j]), z = LD(g[H + j]), nn = LD(g[2 * H + j]);
        acc dnp = dh * ((acc)1 - z);
        dnp = dnp * ((acc)1 - nn * nn);
        const acc dr = (dnp * LD(hn[e])) * (r * ((acc)1 - r));
        const acc dz = (dh * (LD(h_prev[e]) - nn)) * (z * ((acc)1 - z));
        real* x = dX + n * 3 * H;
        real* y = dH + n * 3 * H;
        if (keep) {{
            x[j] = ST(0); x[H + j] = ST(0); x[2 * H + j] = ST(0);
            y[j] = ST(0); y[H + j] = ST(0); y[2 * H + j] = ST(0);
            carry[e] = ST(dh);
        }} else {{
            x[j] = ST(dr); x[H + j] = ST(dz); x[2 * H + j] = ST(dnp);
            y[j] = ST(dr); y[H + j] = ST(dz); y[2 * H + j] = ST(dnp * r);
            carry[e] = ST(dh * z);
        }}"""),
    # a (N, H): in, the input projection with both biases; out, the new hidden state.
    "rnn_fwd": ("""real* a, const real* hg, const real* h_prev, const unsigned char* mask,
        int has_mask, int relu, long long N, long long H""", """
        acc v = LD(a[e]) + LD(hg[e]);
        if (relu) v = (v > (acc)0 || v != v) ? v : (acc)0;     /* NaN stays NaN */
        else v = {tanh}(v);
        a[e] = keep ? h_prev[e] : ST(v);"""),
    "rnn_bwd": ("""const real* h_t, const real* dh_mm, real* carry, int has_carry,
        const real* dy, real* d, const unsigned char* mask, int has_mask, int relu,
        long long N, long long H""", """
        acc dh = LD(dh_mm[e]);
        if (has_carry) dh = dh + LD(carry[e]);
        dh = dh + LD(dy[e]);
        const acc h = LD(h_t[e]);
        const acc v = relu ? dh * (acc)(h > (acc)0) : dh * ((acc)1 - h * h);
        if (keep) {{ d[e] = ST(0); carry[e] = ST(dh); }}
        else {{ d[e] = ST(v); if (has_mask) carry[e] = ST(0); }}"""),
}
KERNELS = tuple(_BODIES)


def source(kind, dtype):
    """(kernel name, CUDA source) of one step of ``kind`` (a key of KERNELS) for
    ``dtype``."""
    dt = np.dtype(dtype)
    real, acc, tanh, fmax, fmin, load, store = _MATH[dt]
    params, body = _BODIES[kind]
    kname = f"mxnet_rnn_{kind}_{dt.name}"
    return kname, (BITS_SOURCE
                   + _PRELUDE.format(real=real, acc=acc, tanh=tanh, fmax=fmax, fmin=fmin,
                                     load=load, store=store)
                   + f'extern "C" __global__ void {kname}({params}) {{'
                   + _LOOP + body.format(tanh=tanh) + "\n    }\n}\n")


def usable(xp, plan, dtype):
    """Whether the fused cells run this recurrence: CuPy arrays of a type in TYPES,
    no LSTM projection, and the switch on."""
    return (xp.__name__ == "cupy" and np.dtype(dtype) in TYPES and not plan.proj
            and os.environ.get("MXNET_GPU_RNN_FUSED_CELLS", "1") != "0")


class _Launcher:
    """Launches one step's kernel over N * H elements; scalars as the kernel's types."""

    def __init__(self, xp, dtype, N, H):
        self.xp, self.dt = xp, np.dtype(dtype)
        self.NH = (np.int64(N), np.int64(H))
        self.grid = (grid_stride_blocks(N * H, _THREADS, _MAX_BLOCKS),)

    def __call__(self, kind, *args):
        k = raw_kernel(self.xp, ("rnn_cell", kind, self.dt),
                       lambda: source(kind, self.dt))
        k(self.grid, (_THREADS,), args + self.NH)

    def real(self, v):
        """v as the kernels' compute type (float32 for float16), rounded through the
        array's type first, as the ufunc body's comparisons with it round it."""
        return (np.float64 if self.dt == np.float64 else np.float32)(self.dt.type(v))


def _mask_args(mask, dummy):
    """``at(t)``: step t's (mask row as bytes, has_mask) kernel arguments; ``dummy``
    (any step's array, never read) stands for the mask when there is none."""
    if mask is None:
        return lambda t: (dummy[t], np.int32(0))
    T, N = mask.shape[:2]
    rows = mask.reshape(T, N).astype(np.uint8)
    return lambda t: (rows[t], np.int32(1))


def forward_steps(xp, plan, w, h, c, r, mask, clip):
    """The recurrence of one layer and direction (operator/nn/rnn.py's step loop) over
    the reserve views r, whose gates (or RNN hidden states) already hold the input
    projection. Returns the final (h, c)."""
    T, N, H = plan.T, plan.N, plan.H
    _, wh, _, bh, _ = w
    dt = r["h"].dtype
    run = _Launcher(xp, dt, N, H)
    hs = r["h"]
    masked = _mask_args(mask, hs)
    h = xp.ascontiguousarray(h)
    hg = xp.empty((N, plan.G * H), dt)
    if plan.mode == "lstm":
        c = xp.ascontiguousarray(c)
        gates, cs = r["gates"], r["c"]
        lo, hi, clip_nan = clip if clip is not None else (0, 0, False)
        for t in range(T):
            matmul(xp, h, wh.T, out=hg)
            run("lstm_fwd", gates[t], hg, c, h, cs[t], hs[t], *masked(t),
                np.int32(clip is not None),
                run.real(lo), run.real(hi), np.int32(bool(clip_nan)))
            h, c = hs[t], cs[t]
        return h, c
    if plan.mode == "gru":
        bh = xp.ascontiguousarray(bh)
        for t in range(T):
            matmul(xp, h, wh.T, out=hg)
            run("gru_fwd", r["gates"][t], hg, bh, h, r["hn"][t], hs[t], *masked(t))
            h = hs[t]
        return h, None
    relu = np.int32(plan.mode == "rnn_relu")
    for t in range(T):
        matmul(xp, h, wh.T, out=hg)
        run("rnn_fwd", hs[t], hg, h, *masked(t), relu)
        h = hs[t]
    return h, None


def backward_steps(xp, plan, w, h0, c0, r, mask, clip, dy, dh, dc):
    """BPTT through the steps of one layer and direction (operator/nn/rnn.py's
    backward loop): dy (T, N, H) the hidden sequence's gradient in processing order,
    dh / dc the final states'. Returns (dX, dH, dh0, dc0): the gradients of the input
    projections and of the recurrent projections per step (the same array for LSTMs
    and RNNs), and of the initial states."""
    T, N, H = plan.T, plan.N, plan.H
    _, wh, _, _, _ = w
    hs = r["h"]
    dt = hs.dtype
    run = _Launcher(xp, dt, N, H)
    masked = _mask_args(mask, hs)
    has_mask = mask is not None
    dy = xp.ascontiguousarray(dy)
    dh_mm = xp.array(dh, dtype=dt, copy=True)       # the matmul's output, step by step
    carry = xp.zeros((N, H), dt)
    if plan.mode == "lstm":
        gates, cs = r["gates"], r["c"]
        c0 = xp.ascontiguousarray(c0)
        dc = xp.array(dc, dtype=dt, copy=True)
        lo, hi, _ = clip if clip is not None else (0, 0, False)
        dX = dH = xp.empty((T, N, 4 * H), dt)
        for t in range(T - 1, -1, -1):
            run("lstm_bwd", gates[t], cs[t], cs[t - 1] if t else c0, dh_mm, carry,
                np.int32(has_mask and t < T - 1), dy[t], dc, dX[t], *masked(t),
                np.int32(clip is not None), run.real(lo), run.real(hi))
            matmul(xp, dX[t], wh, out=dh_mm)
    elif plan.mode == "gru":
        gates, hns = r["gates"], r["hn"]
        dX = xp.empty((T, N, 3 * H), dt)
        dH = xp.empty((T, N, 3 * H), dt)
        h0 = xp.ascontiguousarray(h0)
        for t in range(T - 1, -1, -1):
            run("gru_bwd", gates[t], hns[t], hs[t - 1] if t else h0, dh_mm, carry,
                np.int32(t < T - 1), dy[t], dX[t], dH[t], *masked(t))
            matmul(xp, dH[t], wh, out=dh_mm)
        return dX, dH, dh_mm + carry, None      # (GRU's carry is z * dh at every step)
    else:
        relu = np.int32(plan.mode == "rnn_relu")
        dX = dH = xp.empty((T, N, H), dt)
        dc = None
        for t in range(T - 1, -1, -1):
            run("rnn_bwd", hs[t], dh_mm, carry, np.int32(has_mask and t < T - 1), dy[t],
                dX[t], *masked(t), relu)
            matmul(xp, dX[t], wh, out=dh_mm)
    return dX, dH, (dh_mm + carry if has_mask else dh_mm), dc
