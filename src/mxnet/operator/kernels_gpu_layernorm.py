"""LayerNorm over the last axis on the GPU as three generated kernels (the kernel
table's 'gpu' entries): a forward of one launch, a backward of two (three with the
parameters' gradients).

Why: the operator body, run by CuPy, makes a launch for each step of the formula - the
mean, the centring, the square, the variance, the square root, the division, the scale
and the shift forward (about ten), some twenty backward - each a pass over the data.
Transformer models (BERT in GluonNLP, the d2l transformer) call LayerNorm twice per
layer. Here each pass over the data is one kernel.

Seen as a (rows, d) matrix, d the normalised (last) axis:

* forward: a block per row (grid-stride over rows). The row's mean, then the mean of
  its squared deviations (two passes over the row, the second from cache: no
  cancellation), block sums through shared memory; ``y = (x - mean) / std * gamma +
  beta`` with ``std = sqrt(var + eps)``, the biased variance, as the operator body;
  ``mean`` and ``std`` stored per row in the data type (the operator's hidden outputs).
* backward, data: a block per row. From the stored mean and std, ``xhat = (x - mean) *
  (1 / std)`` and ``dxhat = dy * gamma``; the row sums of ``dxhat`` and ``dxhat * xhat``;
  ``dx = (dxhat - sum(dxhat) / d - xhat * sum(dxhat * xhat) / d) / std``.
* backward, parameters: a thread per column over a slice of the rows (a warp reads
  consecutive columns of one row), the partial sums of ``dy * xhat`` and ``dy`` per
  slice written to a float32 buffer; a second kernel adds the slices per column in
  double and stores ``dgamma`` and ``dbeta``. No atomics: the result does not depend on
  the blocks' order.

Arithmetic is float32 (the parameter sums' last step double); float16 and bfloat16 are
read and written as their bits (backend/cuda_kernels.py). The sources use no headers:
``nvcc --ptx`` compiles them without a GPU, and the CPU tests run them compiled for the
host (tests/cuda_on_host.py), through this module's own launch code.
"""
import os

import numpy as np

from ..backend.cuda_kernels import BITS_SOURCE, compile_refused, raw_kernel
from ..base import bfloat16
from .kernels import OutputBuffers

__all__ = ["TYPES", "KINDS", "MAX_ROW_THREADS", "BLOCK_SUM", "element_code", "source",
           "row_threads",
           "row_grid", "param_slices", "enabled", "grad_destinations", "layer_norm_forward",
           "layer_norm_backward", "register_all"]

MAX_ROW_THREADS = 256           # the row kernels' shared memory holds this many sums
_COLUMN_THREADS = 256
_ROW_BLOCKS = 65535             # rows beyond this many blocks: grid-stride
_TARGET_SLICES = 1024           # parameter-gradient blocks: a few per SM of a large GPU
_MIN_ROWS_PER_SLICE = 8

# dtype -> the element's C type and its conversions from and to float
_ELEM = {np.dtype(np.float32): ("float", "v", "v"),
         np.dtype(np.float16): ("unsigned short", "mx_half_to_float(v)", "mx_to_half(v)")}
if bfloat16 is not None:
    _ELEM[np.dtype(bfloat16)] = ("unsigned short", "mx_bf16(v)", "mx_store_bf16(v)")
TYPES = tuple(_ELEM)
KINDS = ("forward", "grad_data", "grad_params", "grad_params_sum")


def element_code(dtype):
    ctype, read, write = _ELEM[np.dtype(dtype)]
    return BITS_SOURCE + f"""
typedef {ctype} mx_elem;
__device__ __forceinline__ float mx_read(mx_elem v) {{ return {read}; }}
__device__ __forceinline__ mx_elem mx_write(float v) {{ return {write}; }}
"""


# The sum of every thread's v over the block (blockDim.x a power of two, at most
# MAX_ROW_THREADS), returned to all of them; ``red`` is free again on return.
BLOCK_SUM = """
__device__ __forceinline__ float mx_block_sum(float* red, float v) {
    red[threadIdx.x] = v;
    __syncthreads();
    for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) red[threadIdx.x] += red[threadIdx.x + s];
        __syncthreads();
    }
    const float total = red[0];
    __syncthreads();
    return total;
}
"""


def _forward(kname):
    return BLOCK_SUM + f"""
extern "C" __global__ void {kname}(const mx_elem* x, const mx_elem* gamma,
                                   const mx_elem* beta, mx_elem* y, mx_elem* mean,
                                   mx_elem* std, long long rows, int d, float eps) {{
    __shared__ float red[{MAX_ROW_THREADS}];
    for (long long r = blockIdx.x; r < rows; r += gridDim.x) {{
        const mx_elem* xr = x + r * d;
        mx_elem* yr = y + r * d;
        float s = 0.0f;
        for (int j = threadIdx.x; j < d; j += blockDim.x) s += mx_read(xr[j]);
        const float m = mx_block_sum(red, s) / (float)d;
        float q = 0.0f;
        for (int j = threadIdx.x; j < d; j += blockDim.x) {{
            const float c = mx_read(xr[j]) - m;
            q += c * c;
        }}
        const float sd = sqrtf(mx_block_sum(red, q) / (float)d + eps);
        for (int j = threadIdx.x; j < d; j += blockDim.x)
            yr[j] = mx_write((mx_read(xr[j]) - m) / sd * mx_read(gamma[j]) +
                             mx_read(beta[j]));
        if (threadIdx.x == 0) {{
            mean[r] = mx_write(m);
            std[r] = mx_write(sd);
        }}
    }}
}}
"""


def _grad_data(kname):
    return BLOCK_SUM + f"""
extern "C" __global__ void {kname}(const mx_elem* x, const mx_elem* dy,
                                   const mx_elem* gamma, const mx_elem* mean,
                                   const mx_elem* std, mx_elem* dx, long long rows, int d) {{
    __shared__ float red[{MAX_ROW_THREADS}];
    for (long long r = blockIdx.x; r < rows; r += gridDim.x) {{
        const long long o = r * d;
        const float m = mx_read(mean[r]), inv = 1.0f / mx_read(std[r]);
        float a = 0.0f, b = 0.0f;
        for (int j = threadIdx.x; j < d; j += blockDim.x) {{
            const float g = mx_read(dy[o + j]) * mx_read(gamma[j]);
            a += g;
            b += g * ((mx_read(x[o + j]) - m) * inv);
        }}
        const float ma = mx_block_sum(red, a) / (float)d;
        const float mb = mx_block_sum(red, b) / (float)d;
        for (int j = threadIdx.x; j < d; j += blockDim.x) {{
            const float g = mx_read(dy[o + j]) * mx_read(gamma[j]);
            const float xh = (mx_read(x[o + j]) - m) * inv;
            dx[o + j] = mx_write((g - ma - xh * mb) * inv);
        }}
    }}
}}
"""


def _grad_params(kname):
    return f"""
extern "C" __global__ void {kname}(const mx_elem* x, const mx_elem* dy, const mx_elem* mean,
                                   const mx_elem* std, float* part, long long rows, int d,
                                   long long rows_per_slice) {{
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= d) return;
    const long long r0 = (long long)blockIdx.y * rows_per_slice;
    long long r1 = r0 + rows_per_slice;
    if (r1 > rows) r1 = rows;
    float sg = 0.0f, sb = 0.0f;
    for (long long r = r0; r < r1; ++r) {{
        const float g = mx_read(dy[r * d + c]);
        const float xh = (mx_read(x[r * d + c]) - mx_read(mean[r])) / mx_read(std[r]);
        sg += g * xh;
        sb += g;
    }}
    part[(long long)blockIdx.y * 2 * d + c] = sg;
    part[(long long)blockIdx.y * 2 * d + d + c] = sb;
}}
"""


def _grad_params_sum(kname):
    return f"""
extern "C" __global__ void {kname}(const float* part, int slices, int d, mx_elem* dgamma,
                                   mx_elem* dbeta, int want_gamma, int want_beta) {{
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= d) return;
    double sg = 0.0, sb = 0.0;
    for (int k = 0; k < slices; ++k) {{
        sg += (double)part[(long long)k * 2 * d + c];
        sb += (double)part[(long long)k * 2 * d + d + c];
    }}
    if (want_gamma) dgamma[c] = mx_write((float)sg);
    if (want_beta) dbeta[c] = mx_write((float)sb);
}}
"""


_MAKERS = {"forward": _forward, "grad_data": _grad_data, "grad_params": _grad_params,
           "grad_params_sum": _grad_params_sum}


def source(kind, dtype):
    """(kernel name, CUDA source) of kernel ``kind`` (KINDS) for elements of ``dtype``."""
    kname = f"mxnet_layer_norm_{kind}_{np.dtype(dtype).name}"
    return kname, element_code(dtype) + _MAKERS[kind](kname)


# --- launch shapes ------------------------------------------------------------------------
def row_threads(d):
    """Threads of a row kernel's block for rows of ``d`` elements: a power of two from
    32 to MAX_ROW_THREADS, about four elements a thread."""
    t = 32
    while t < MAX_ROW_THREADS and 4 * t < d:
        t *= 2
    return t


def param_slices(rows, d):
    """(column blocks, row slices, rows per slice) of the parameter-gradient kernel:
    enough blocks to fill a large GPU, each thread summing at least
    _MIN_ROWS_PER_SLICE rows of its column."""
    gx = -(-d // _COLUMN_THREADS)
    per = max(_MIN_ROWS_PER_SLICE, -(-rows * gx // _TARGET_SLICES))
    return gx, -(-rows // per), per


# --- adapters (kernel-table signature) -------------------------------------------------------
def enabled():
    """Whether GPU LayerNorm calls use these kernels (``MXNET_GPU_LAYERNORM_KERNEL``, on
    by default; 0 runs the operator body)."""
    return os.environ.get("MXNET_GPU_LAYERNORM_KERNEL", "1").strip() != "0"


def _is_device_array(a):
    return type(a).__module__.startswith("cupy")


def _geometry(p, x, *others):
    """(rows, d) of a call these kernels take: normalising the last axis of a
    C-contiguous device array of TYPES, with contiguous (d,) parameters and other
    arrays of the same dtype; None for what the operator body computes (any other axis,
    a zero-size row, float64)."""
    if not enabled() or not _is_device_array(x) or x.ndim == 0 or \
            np.dtype(x.dtype) not in _ELEM or not x.flags.c_contiguous:
        return None
    nd = x.ndim
    if not -nd <= p.axis < nd or p.axis % nd != nd - 1:
        return None
    d = x.shape[-1]
    if d == 0 or x.size == 0:
        return None
    for a in others:
        if not _is_device_array(a) or a.dtype != x.dtype or not a.flags.c_contiguous:
            return None
    return x.size // d, d


_REFUSED = set()        # dtypes the device's compiler refused (the body runs them)


def _kernel(xp, kind, dtype):
    return raw_kernel(xp, ("layer_norm", kind, np.dtype(dtype)),
                      lambda: source(kind, dtype))


def _refused(err, dtype):
    """Whether ``err`` is NVRTC refusing a source: the body then computes this call and
    the later ones of that dtype (compile_refused warns once)."""
    return compile_refused(err, _REFUSED, np.dtype(dtype), "LayerNorm's GPU kernels")


def row_grid(rows):
    return (min(rows, _ROW_BLOCKS),)


def layer_norm_forward(ctx, p, inputs, aux, out=None):
    """LayerNorm's forward over the last axis in one kernel: [y, mean, std] (written
    into ``out``'s arrays where they fit); NotImplemented for what ``_geometry``
    declines."""
    x, gamma, beta = inputs
    geo = _geometry(p, x, gamma, beta)
    if geo is None or gamma.shape != (geo[1],) or beta.shape != (geo[1],) or \
            np.dtype(x.dtype) in _REFUSED:
        return NotImplemented
    rows, d = geo
    xp = ctx.xp
    stat = x.shape[:-1] + (1,)
    dst = OutputBuffers(xp, out, 3, (x, gamma, beta), x.dtype)
    y, mean, std = dst.get(0, x.shape), dst.get(1, stat), dst.get(2, stat)
    try:
        _kernel(xp, "forward", x.dtype)(row_grid(rows), (row_threads(d),),
                                        (x, gamma, beta, y, mean, std, np.int64(rows),
                                         np.int32(d), np.float32(p.eps)))
    except Exception as err:  # noqa: BLE001  (CuPy's CompileException: NVRTC refused it)
        if _refused(err, x.dtype):
            return NotImplemented
        raise
    return dst.done()


def grad_destinations(ctx, in_grad, sources):
    """(buffers, dx, dgamma, dbeta) of an affine normalisation's backward (sources: x,
    dy, gamma, then the statistics): each gradient the call wants, in ``in_grad``'s
    array where it fits (kernels.OutputBuffers), else None."""
    x, gamma = sources[0], sources[2]
    need = ctx.need_grad if ctx.need_grad is not None else [True, True, True]
    dst = OutputBuffers(ctx.xp, in_grad, 3, sources, x.dtype)
    return (dst, dst.get(0, x.shape) if need[0] else None,
            dst.get(1, gamma.shape) if need[1] else None,
            dst.get(2, gamma.shape) if need[2] else None)


def layer_norm_backward(ctx, p, out_grads, inputs, outputs, aux, in_grad=None):
    """LayerNorm's gradients over the last axis from the stored mean and std: dx in one
    kernel, dgamma and dbeta in two (each only where wanted); NotImplemented for what
    ``layer_norm_forward`` declines."""
    dy = out_grads[0]
    x, gamma, _ = inputs
    mean, std = outputs[1], outputs[2]
    if dy is None or mean is None or std is None:
        return NotImplemented
    geo = _geometry(p, x, dy, gamma, mean, std)
    if geo is None or dy.shape != x.shape or gamma.shape != (geo[1],) or \
            mean.size != geo[0] or std.size != geo[0] or np.dtype(x.dtype) in _REFUSED:
        return NotImplemented
    rows, d = geo
    xp = ctx.xp
    dst, dx, dgamma, dbeta = grad_destinations(ctx, in_grad, (x, dy, gamma, mean, std))
    try:
        if dx is not None:
            _kernel(xp, "grad_data", x.dtype)(row_grid(rows), (row_threads(d),),
                                              (x, dy, gamma, mean, std, dx,
                                               np.int64(rows), np.int32(d)))
        if dgamma is not None or dbeta is not None:
            gx, slices, per = param_slices(rows, d)
            part = xp.empty(slices * 2 * d, np.float32)
            _kernel(xp, "grad_params", x.dtype)((gx, slices), (_COLUMN_THREADS,),
                                                (x, dy, mean, std, part, np.int64(rows),
                                                 np.int32(d), np.int64(per)))
            # a pointer the kernel skips: the parameter gradient not wanted
            _kernel(xp, "grad_params_sum", x.dtype)(
                (gx,), (_COLUMN_THREADS,),
                (part, np.int32(slices), np.int32(d),
                 dgamma if dgamma is not None else dbeta,
                 dbeta if dbeta is not None else dgamma,
                 np.int32(dgamma is not None), np.int32(dbeta is not None)))
    except Exception as err:  # noqa: BLE001
        if _refused(err, x.dtype):
            return NotImplemented
        raise
    return dst.done()


# the kernels read and write bfloat16 as its bits (float32 arithmetic)
layer_norm_forward.bfloat16 = True
layer_norm_backward.bfloat16 = True


def register_all(register_kernel, device="gpu"):
    """Register LayerNorm's forward and backward kernels for ``device``."""
    register_kernel("LayerNorm", device, layer_norm_forward)
    register_kernel("LayerNorm", device, layer_norm_backward, backward=True)
    return ["LayerNorm"]
