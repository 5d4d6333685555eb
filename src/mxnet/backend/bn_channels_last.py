"""BatchNorm on channels-last data on the GPU: pymxnet's own CUDA kernels for the
executor's NHWC layout (executor/layout.py).

Why not cuDNN: its legacy batch-norm calls, given NHWC descriptors, run generic
kernels (``bn_fw_tr_1C11_singleread``, ``bn_bw_1C11_singleread``): on an H100 they took
1.0 and 1.6 ms per call in a bfloat16 ResNet-50 step, 141 of its 156 GPU ms; its fast
NHWC kernels need the Ex API, float16 only, and a reserve buffer carried from forward
to backward.

Seen as a (rows, channels) matrix - rows = N*H*W, channels innermost - batch norm is
column statistics and a per-column affine map:

* statistics: each thread takes two neighbouring channels (one 32-bit load for the
  16-bit types, so a warp reads 128 contiguous bytes of a row) and a strided slice of
  a block's rows, summing in float32 the shifted values ``x - x[row 0]`` and their
  squares (the shift keeps E[d^2] - E[d]^2 clear of cancellation when the mean is large
  against the spread); the block's row lanes meet in shared memory, the blocks with one
  atomic add per channel;
* finalize (a thread per channel): mean, 1/sqrt(var + eps) (the biased variance, as
  MXNet), ``gamma * invstd``, and MXNet's moving-statistics rule;
* normalize: ``y = (x - mean) * gamma * invstd + beta``, two channels per thread, the
  same two on every step of its grid-stride loop; optionally through MXNet's relu
  (BatchNorm -> relu fused in GPU executors, operator/kernels_cudnn.bn_relu_forward);
* backward: the column sums ``sum(dy)`` and ``sum(dy * (x - mean))`` the same way, then
  ``dx = k1 * dy + k2 * (x - mean) + k3`` per channel, with dgamma, dbeta from the sums.

float16 and bfloat16 are read and written as their bits (backend/cuda_kernels.py); the
arithmetic is float32 (the finalize double). The sources use no headers: ``nvcc --ptx``
compiles them without a GPU, and the CPU tests run them compiled for the host.
"""
import math

import numpy as np

from ..base import bfloat16
from .cuda_kernels import BITS_SOURCE, grid_stride_blocks, raw_kernel

__all__ = ["TYPES", "source", "stats_shape", "elementwise_blocks", "rows_of", "usable",
           "forward_training", "forward_inference", "backward"]

_THREADS = 256                  # the statistics kernels' shared memory assumes <= 256
_TARGET_BLOCKS = 512            # statistics blocks: a few per SM of a large GPU
_MIN_ROWS_PER_THREAD = 16
_MAX_ELEMENTWISE_BLOCKS = 4096  # grid-stride loops beyond this

# dtype -> the element's C type and its conversions from and to float
_ELEM = {np.dtype(np.float32): ("float", "v", "v")}
_ELEM[np.dtype(np.float16)] = ("unsigned short", "mx_half_to_float(v)", "mx_to_half(v)")
if bfloat16 is not None:
    _ELEM[np.dtype(bfloat16)] = ("unsigned short", "mx_bf16(v)", "mx_store_bf16(v)")
TYPES = tuple(_ELEM)

KINDS = ("stats", "finalize", "normalize", "grad_stats", "grad_input")
FLOAT_KINDS = ("affine", "grad_finalize")   # parameter-only kernels, one per GPU


def _element_code(dtype):
    ctype, read, write = _ELEM[np.dtype(dtype)]
    if ctype == "float":
        pair = """
__device__ __forceinline__ void mx_load2(const mx_elem* p, long long i, float& a, float& b) {
    const float2 w = ((const float2*)p)[i];
    a = w.x;
    b = w.y;
}
__device__ __forceinline__ void mx_store2(mx_elem* p, long long i, float a, float b) {
    float2 w;
    w.x = a;
    w.y = b;
    ((float2*)p)[i] = w;
}"""
    else:           # two 16-bit elements in one 32-bit word, the first in the low half
        pair = """
__device__ __forceinline__ void mx_load2(const mx_elem* p, long long i, float& a, float& b) {
    const unsigned int w = ((const unsigned int*)p)[i];
    a = mx_read((unsigned short)(w & 0xffffu));
    b = mx_read((unsigned short)(w >> 16));
}
__device__ __forceinline__ void mx_store2(mx_elem* p, long long i, float a, float b) {
    ((unsigned int*)p)[i] = (unsigned int)mx_write(a) | ((unsigned int)mx_write(b) << 16);
}"""
    return BITS_SOURCE + f"""
typedef {ctype} mx_elem;
__device__ __forceinline__ float mx_read(mx_elem v) {{ return {read}; }}
__device__ __forceinline__ mx_elem mx_write(float v) {{ return {write}; }}
""" + pair


# Column sums of two quantities per channel over a block's rows, met in shared memory,
# then added to acc[0:C] and acc[C:2C]. {load} sets float a0, a1 (first quantity's pair)
# and b0, b1 from row r; {prologue} runs once per active thread.
_COLUMN_SUMS = """
extern "C" __global__ void {kname}({params}, long long rows, int pairs, int lanes,
                                   long long rows_per_block, float* acc) {{
    __shared__ float part[4 * 256];
    const int t = threadIdx.x;
    const int lane = t % lanes, rl = t / lanes, nrl = blockDim.x / lanes;
    const int p = blockIdx.x * lanes + lane;
    const bool active = rl < nrl && p < pairs;
    float s0 = 0.0f, s1 = 0.0f, q0 = 0.0f, q1 = 0.0f;
    if (active) {{
        {prologue}
        const long long r0 = (long long)blockIdx.y * rows_per_block;
        long long r1 = r0 + rows_per_block;
        if (r1 > rows) r1 = rows;
        const long long stride = (long long)nrl * pairs;
        long long i = (r0 + rl) * pairs + p;
#pragma unroll 4
        for (long long r = r0 + rl; r < r1; r += nrl, i += stride) {{
            {load}
            s0 += a0;
            s1 += a1;
            q0 += b0;
            q1 += b1;
        }}
    }}
    part[t] = s0;
    part[256 + t] = s1;
    part[512 + t] = q0;
    part[768 + t] = q1;
    __syncthreads();
    if (active && rl == 0) {{
        for (int j = 1; j < nrl; ++j) {{
            const int u = t + j * lanes;
            s0 += part[u];
            s1 += part[256 + u];
            q0 += part[512 + u];
            q1 += part[768 + u];
        }}
        const int C = 2 * pairs;
        atomicAdd(acc + 2 * p, s0);
        atomicAdd(acc + 2 * p + 1, s1);
        atomicAdd(acc + C + 2 * p, q0);
        atomicAdd(acc + C + 2 * p + 1, q1);
    }}
}}
"""

# A grid-stride loop over channel pairs whose step is a multiple of ``pairs``
# (elementwise_blocks makes it so): a thread keeps its channels, so their parameters
# load once and no 64-bit remainder runs per element.
_GRID_STRIDE = """
    const long long first = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long step = (long long)gridDim.x * blockDim.x;
    const int c = 2 * (int)(first % pairs);
    {setup}
    for (long long i = first; i < n_pairs; i += step) {{
        {body}
    }}
"""


def _stats(kname):
    return _COLUMN_SUMS.format(
        kname=kname, params="const mx_elem* x",
        prologue="float k0, k1;\n        mx_load2(x, p, k0, k1);   /* the shift: row 0 */",
        load="float a0, a1;\n            mx_load2(x, i, a0, a1);\n"
             "            a0 -= k0;\n            a1 -= k1;\n"
             "            const float b0 = a0 * a0, b1 = a1 * a1;")


# BatchNorm -> relu's backward folded into BatchNorm's (``relu`` set): the gradient
# ``dy`` is the relu output's, masked where the stored relu output is not positive. That
# output is recomputed from what the backward reads anyway - x, the saved mean, gamma *
# invstd (the forward's scale, the same float product), beta - with the normalize
# kernel's own expression (one fused multiply-add) and rounded through the element type,
# so the mask is the stored value's sign: y is not read, and no separate relu pass runs.
_RELU_PARAMS = "const float* gamma, const float* invstd, const float* beta, int relu"
_RELU_SETUP = """float g0 = 0.0f, g1 = 0.0f, h0 = 0.0f, h1 = 0.0f;
    if (relu) {{
        g0 = gamma[{c}] * invstd[{c}];
        g1 = gamma[{c} + 1] * invstd[{c} + 1];
        h0 = beta[{c}];
        h1 = beta[{c} + 1];
    }}"""
# multiplied by 0, not set to 0: an inf or NaN gradient where the relu output is not
# positive gives NaN, as the unfused backward's g * (y > 0) does
_RELU_MASK = """if (relu) {{
            if (!(mx_read(mx_write(fmaf(x0 - m0, g0, h0))) > 0.0f)) {d0} *= 0.0f;
            if (!(mx_read(mx_write(fmaf(x1 - m1, g1, h1))) > 0.0f)) {d1} *= 0.0f;
        }}"""


def _grad_stats(kname):
    return _COLUMN_SUMS.format(
        kname=kname,
        params="const mx_elem* x, const mx_elem* dy, const float* mean, " + _RELU_PARAMS,
        prologue="const float m0 = mean[2 * p], m1 = mean[2 * p + 1];\n        " +
                 _RELU_SETUP.format(c="2 * p"),
        load="float x0, x1, a0, a1;\n            mx_load2(x, i, x0, x1);\n"
             "            mx_load2(dy, i, a0, a1);\n            " +
             _RELU_MASK.format(d0="a0", d1="a1") +
             "\n            const float b0 = a0 * (x0 - m0), b1 = a1 * (x1 - m1);")


def _finalize(kname):
    return f"""
extern "C" __global__ void {kname}(const mx_elem* x, const float* acc, int C, long long rows,
                                   double eps, const float* gamma, float* mean,
                                   float* invstd, float* scale, float* moving_mean,
                                   float* moving_var, float momentum, int update) {{
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= C) return;
    const double n = (double)rows;
    const double s = (double)acc[c] / n;
    double var = (double)acc[C + c] / n - s * s;
    if (var < 0.0) var = 0.0;
    const double m = (double)mx_read(x[c]) + s;
    const float inv = (float)(1.0 / sqrt(var + eps));
    mean[c] = (float)m;
    invstd[c] = inv;
    scale[c] = gamma[c] * inv;
    if (update) {{
        moving_mean[c] = moving_mean[c] * momentum + (1.0f - momentum) * (float)m;
        moving_var[c] = moving_var[c] * momentum + (1.0f - momentum) * (float)var;
    }}
}}
"""


def _normalize(kname):
    setup = """const float m0 = mean[c], m1 = mean[c + 1], s0 = scale[c], s1 = scale[c + 1];
    const float b0 = beta[c], b1 = beta[c + 1];"""
    # relu: MXNet's (maximum(v, 0): NaN stays NaN), for BatchNorm -> relu fused
    # one fused multiply-add, written out: the folded relu backward recomputes it
    body = """float a, b;
        mx_load2(x, i, a, b);
        a = fmaf(a - m0, s0, b0);
        b = fmaf(b - m1, s1, b1);
        if (relu) {
            a = (a > 0.0f || a != a) ? a : 0.0f;
            b = (b > 0.0f || b != b) ? b : 0.0f;
        }
        mx_store2(y, i, a, b);"""
    return f"""
extern "C" __global__ void {kname}(const mx_elem* x, mx_elem* y, long long n_pairs, int pairs,
                                   const float* mean, const float* scale,
                                   const float* beta, int relu) {{""" + \
        _GRID_STRIDE.format(setup=setup, body=body) + "}\n"


def _grad_input(kname):
    setup = """const float m0 = mean[c], m1 = mean[c + 1], a0 = k1[c], a1 = k1[c + 1];
    const float b0 = k2[c], b1 = k2[c + 1], e0 = k3[c], e1 = k3[c + 1];
    """ + _RELU_SETUP.format(c="c")
    body = """float x0, x1, d0, d1;
        mx_load2(x, i, x0, x1);
        mx_load2(dy, i, d0, d1);
        """ + _RELU_MASK.format(d0="d0", d1="d1") + """
        mx_store2(dx, i, a0 * d0 + b0 * (x0 - m0) + e0, a1 * d1 + b1 * (x1 - m1) + e1);"""
    return f"""
extern "C" __global__ void {kname}(const mx_elem* x, const mx_elem* dy, mx_elem* dx,
                                   long long n_pairs, int pairs, const float* mean,
                                   const float* k1, const float* k2, const float* k3,
                                   {_RELU_PARAMS}) {{""" + \
        _GRID_STRIDE.format(setup=setup, body=body) + "}\n"


_AFFINE = """
extern "C" __global__ void mxnet_bn_nhwc_affine(const float* moving_mean,
                                                const float* moving_var, const float* gamma,
                                                double eps, int C, float* mean,
                                                float* invstd, float* scale) {
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= C) return;
    const float inv = (float)(1.0 / sqrt((double)moving_var[c] + eps));
    mean[c] = moving_mean[c];
    invstd[c] = inv;
    scale[c] = gamma[c] * inv;
}
"""

_GRAD_FINALIZE = """
extern "C" __global__ void mxnet_bn_nhwc_grad_finalize(const float* acc, int C, long long rows,
                                                       const float* gamma,
                                                       const float* invstd, float* dgamma,
                                                       float* dbeta, float* k) {
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= C) return;
    const float n = (float)rows;
    const float sdy = acc[c], sdx = acc[C + c], inv = invstd[c], k1 = gamma[c] * inv;
    dbeta[c] = sdy;
    dgamma[c] = sdx * inv;
    k[c] = k1;
    k[C + c] = -k1 * inv * inv * sdx / n;
    k[2 * C + c] = -k1 * sdy / n;
}
"""

_MAKERS = {"stats": _stats, "grad_stats": _grad_stats, "finalize": _finalize,
           "normalize": _normalize, "grad_input": _grad_input}


def source(kind, dtype=None):
    """(kernel name, CUDA source) of kernel ``kind`` (KINDS: per element ``dtype``;
    FLOAT_KINDS: float32 parameters only, ``dtype`` unused)."""
    if kind == "affine":
        return "mxnet_bn_nhwc_affine", BITS_SOURCE + _AFFINE
    if kind == "grad_finalize":
        return "mxnet_bn_nhwc_grad_finalize", BITS_SOURCE + _GRAD_FINALIZE
    kname = f"mxnet_bn_nhwc_{kind}_{np.dtype(dtype).name}"
    return kname, _element_code(dtype) + _MAKERS[kind](kname)


def _kernel(cp, kind, dtype=None):
    key = ("bn_nhwc", kind, None if dtype is None else np.dtype(dtype))
    return raw_kernel(cp, key, lambda: source(kind, dtype))


# --- launch shapes ------------------------------------------------------------------------
def stats_shape(rows, pairs):
    """(grid x, grid y, threads, lanes, rows per block) of a statistics kernel: ``lanes``
    channel pairs per block side by side, threads // lanes row lanes under them."""
    lanes = min(32, pairs)
    gx = -(-pairs // lanes)
    row_lanes = _THREADS // lanes
    per = max(_MIN_ROWS_PER_THREAD * row_lanes, -(-rows * gx // _TARGET_BLOCKS))
    return gx, max(1, -(-rows // per)), _THREADS, lanes, per


def elementwise_blocks(n_pairs, pairs):
    """Blocks of an elementwise kernel over ``n_pairs`` channel pairs, ``pairs`` per
    row: enough for one pair a thread up to a cap (then grid-stride), rounded up so
    that the threads in all are a multiple of ``pairs`` (the kernels rely on it)."""
    blocks = grid_stride_blocks(n_pairs, _THREADS, _MAX_ELEMENTWISE_BLOCKS)
    unit = pairs // math.gcd(pairs, _THREADS)
    return -(-blocks // unit) * unit


def _per_channel_blocks(c):
    threads = min(_THREADS, -(-c // 32) * 32)
    return -(-c // threads), threads


# --- launchers --------------------------------------------------------------------------------
def rows_of(v):
    """The (rows, channels) C-contiguous matrix behind ``v``: a logical (N, C, H, W)
    view whose memory is packed NHWC; None when it is not one."""
    if v is None or v.ndim != 4:
        return None
    t = v.transpose(0, 2, 3, 1)
    if not t.flags.c_contiguous:
        return None
    return t.reshape(-1, v.shape[1])


def _f32_vectors(c, arrays):
    return all(a.dtype == np.float32 and a.shape == (c,) and a.flags.c_contiguous
               for a in arrays)


def _address(a):
    """The device (CuPy) or host (NumPy, for the host-run tests) address of ``a``."""
    if isinstance(a, np.ndarray):
        return a.__array_interface__["data"][0]
    return a.data.ptr


def usable(x, *others):
    """The (rows, C) matrices of channels-last views ``x`` and ``others`` (None among
    them stays None) when these kernels take them: a dtype of TYPES, an even channel
    count, NHWC-packed memory starting on a channel pair's alignment (the kernels load
    pairs as one word), one shape; else None."""
    if np.dtype(x.dtype) not in _ELEM or x.ndim != 4 or x.shape[1] % 2 or x.size == 0:
        return None
    mats = [rows_of(a) if a is not None else None for a in (x,) + others]
    pair_bytes = 2 * np.dtype(x.dtype).itemsize
    if mats[0] is None or any(m is None or m.shape != mats[0].shape or m.dtype != x.dtype
                              for m, a in zip(mats[1:], others) if a is not None) or \
            any(_address(m) % pair_bytes for m in mats if m is not None):
        return None
    return mats


def _column_sums(cp, kind, dtype, mats, extra, rows, c):
    acc = cp.zeros(2 * c, np.float32)
    gx, gy, threads, lanes, per = stats_shape(rows, c // 2)
    _kernel(cp, kind, dtype)((gx, gy), (threads,),
                             tuple(mats) + tuple(extra) +
                             (np.int64(rows), np.int32(c // 2), np.int32(lanes),
                              np.int64(per), acc))
    return acc


def _affine_map(cp, kernel, src, dst, mean, scale, beta_or_k, rows, c):
    n_pairs = rows * (c // 2)
    kernel((elementwise_blocks(n_pairs, c // 2),), (_THREADS,),
           tuple(src) + (dst, np.int64(n_pairs), np.int32(c // 2), mean, scale) +
           tuple(beta_or_k))


def forward_training(cp, x, y, gamma, beta, eps, mean, invstd, moving=None, relu=False):
    """Batch statistics of channels-last ``x`` into float32 ``mean``, ``invstd`` (=
    1/sqrt(var + eps), biased variance), ``y`` normalised (``relu``: then through
    MXNet's relu); ``moving`` = (moving_mean, moving_var, momentum) updated by MXNet's
    rule. False (nothing done) for what ``usable`` declines or parameters that are not
    contiguous float32 (C,) vectors."""
    mats = usable(x, y)
    c = x.shape[1]
    vectors = [gamma, beta, mean, invstd] + (list(moving[:2]) if moving else [])
    if mats is None or not _f32_vectors(c, vectors):
        return False
    xm, ym = mats
    rows = xm.shape[0]
    acc = _column_sums(cp, "stats", x.dtype, [xm], [], rows, c)
    scale = cp.empty(c, np.float32)
    mm, mv, momentum = moving if moving else (scale, scale, 0.0)
    blocks, threads = _per_channel_blocks(c)
    _kernel(cp, "finalize", x.dtype)((blocks,), (threads,),
                                     (xm, acc, np.int32(c), np.int64(rows), np.float64(eps),
                                      gamma, mean, invstd, scale, mm, mv,
                                      np.float32(momentum), np.int32(moving is not None)))
    _affine_map(cp, _kernel(cp, "normalize", x.dtype), [xm], ym, mean, scale,
                [beta, np.int32(relu)], rows, c)
    return True


def forward_inference(cp, x, y, gamma, beta, moving_mean, moving_var, eps, mean, invstd,
                      relu=False):
    """``y`` normalised with the moving statistics (copied to ``mean``, and
    1/sqrt(moving_var + eps) to ``invstd``; ``relu`` as in ``forward_training``);
    False as ``forward_training``."""
    mats = usable(x, y)
    c = x.shape[1]
    if mats is None or not _f32_vectors(c, (gamma, beta, moving_mean, moving_var, mean,
                                            invstd)):
        return False
    xm, ym = mats
    scale = cp.empty(c, np.float32)
    blocks, threads = _per_channel_blocks(c)
    _kernel(cp, "affine")((blocks,), (threads,),
                          (moving_mean, moving_var, gamma, np.float64(eps), np.int32(c),
                           mean, invstd, scale))
    _affine_map(cp, _kernel(cp, "normalize", x.dtype), [xm], ym, mean, scale,
                [beta, np.int32(relu)], xm.shape[0], c)
    return True


def backward(cp, x, dy, dx, gamma, mean, invstd, dgamma, dbeta, relu_beta=None):
    """Training-formula gradients of channels-last ``x`` from the saved statistics:
    float32 ``dgamma``, ``dbeta`` written, ``dx`` (x's layout; None: not wanted) too.
    ``relu_beta``: BatchNorm's beta when a relu followed it in the forward
    (``forward_training(relu=True)``) and ``dy`` is the relu output's gradient: the
    relu's backward is folded in (see _RELU_MASK). False (nothing done) as
    ``forward_training``."""
    mats = usable(x, dy, dx)
    c = x.shape[1]
    vectors = (gamma, mean, invstd, dgamma, dbeta) + \
        (() if relu_beta is None else (relu_beta,))
    if mats is None or not _f32_vectors(c, vectors):
        return False
    xm, dym, dxm = mats
    rows = xm.shape[0]
    relu = [gamma, invstd, gamma if relu_beta is None else relu_beta,
            np.int32(relu_beta is not None)]
    acc = _column_sums(cp, "grad_stats", x.dtype, [xm, dym], [mean] + relu, rows, c)
    k = cp.empty(3 * c, np.float32)
    blocks, threads = _per_channel_blocks(c)
    _kernel(cp, "grad_finalize")((blocks,), (threads,),
                                 (acc, np.int32(c), np.int64(rows), gamma, invstd, dgamma,
                                  dbeta, k))
    if dxm is not None:
        _affine_map(cp, _kernel(cp, "grad_input", x.dtype), [xm, dym], dxm, mean, k[:c],
                    [k[c:2 * c], k[2 * c:]] + relu, rows, c)
    return True
