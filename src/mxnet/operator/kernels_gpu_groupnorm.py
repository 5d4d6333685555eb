"""GroupNorm and InstanceNorm on the GPU as generated kernels (the kernel table's 'gpu'
entries): a forward of one launch, a backward of one launch (two with the parameters'
gradients).

Why: run by CuPy, the operator bodies make a launch for each step of the formula (the
mean, the centring, the square, the variance, the square root, the division, the
scale and the shift forward; some twenty backward), each a pass over the data.

Both normalise contiguous rows of a C-contiguous (N, C, ...) array: GroupNorm a
(sample, group) row of ``C / num_groups`` channels times the spatial positions,
InstanceNorm a (sample, channel) row of the spatial positions. Unlike LayerNorm's, the
scale and shift are one value per row: ``gamma[r % P]``, P the number of groups (MXNet
1.9.1's GroupNorm has gamma and beta of shape (num_groups,)) or of channels. So the
kernels are LayerNorm's row kernels (operator/kernels_gpu_layernorm.py) with a scalar
per row:

* forward: a block per row; the mean, then the mean of the squared deviations (two
  passes, no cancellation); ``y = (x - mean) / std * gamma + beta``; per row the mean
  and, as the operators' hidden outputs are, GroupNorm's ``std = sqrt(var + eps)`` or
  InstanceNorm's ``var``.
* backward: a block per row computes dx from the row sums of ``dy`` and
  ``dy * xhat`` and writes those two sums per row to a float32 buffer; a second kernel
  adds them over the samples per group or channel, in double, into dgamma and dbeta.
  No atomics: the result does not depend on the blocks' order.

Arithmetic is float32; float16 and bfloat16 are read and written as their bits. The
sources use no headers: ``nvcc --ptx`` compiles them without a GPU, and the CPU tests
run them compiled for the host (tests/cuda_on_host.py) through this module's launch
code. ``MXNET_GPU_GROUPNORM_KERNEL=0`` runs the operator bodies instead.
"""
import os

import numpy as np

from ..backend.cuda_kernels import compile_refused, raw_kernel
from .kernels import OutputBuffers
from .kernels_gpu_layernorm import (BLOCK_SUM, MAX_ROW_THREADS, TYPES, element_code,
                                    grad_destinations, row_grid, row_threads)

__all__ = ["OPS", "KINDS", "source", "enabled", "forward", "backward", "register_all"]

_SUM_THREADS = 128
# operator -> what its second hidden output holds per row
OPS = {"GroupNorm": "std", "InstanceNorm": "var"}
KINDS = ("forward", "backward", "param_sum")


def _forward(kname, stat):
    store = "sd" if stat == "std" else "sd * sd - eps"
    return BLOCK_SUM + f"""
extern "C" __global__ void {kname}(const mx_elem* x, const mx_elem* gamma,
                                   const mx_elem* beta, mx_elem* y, mx_elem* mean,
                                   mx_elem* stat, long long rows, long long d, int P,
                                   float eps) {{
    __shared__ float red[{MAX_ROW_THREADS}];
    for (long long r = blockIdx.x; r < rows; r += gridDim.x) {{
        const mx_elem* xr = x + r * d;
        mx_elem* yr = y + r * d;
        float s = 0.0f;
        for (long long j = threadIdx.x; j < d; j += blockDim.x) s += mx_read(xr[j]);
        const float m = mx_block_sum(red, s) / (float)d;
        float q = 0.0f;
        for (long long j = threadIdx.x; j < d; j += blockDim.x) {{
            const float c = mx_read(xr[j]) - m;
            q += c * c;
        }}
        const float sd = sqrtf(mx_block_sum(red, q) / (float)d + eps);
        const float scale = mx_read(gamma[r % P]) / sd, shift = mx_read(beta[r % P]);
        for (long long j = threadIdx.x; j < d; j += blockDim.x)
            yr[j] = mx_write((mx_read(xr[j]) - m) * scale + shift);
        if (threadIdx.x == 0) {{
            mean[r] = mx_write(m);
            stat[r] = mx_write({store});
        }}
    }}
}}
"""


def _backward(kname, stat):
    inv = "1.0f / mx_read(stat[r])" if stat == "std" else \
        "1.0f / sqrtf(mx_read(stat[r]) + eps)"
    return BLOCK_SUM + f"""
extern "C" __global__ void {kname}(const mx_elem* x, const mx_elem* dy,
                                   const mx_elem* gamma, const mx_elem* mean,
                                   const mx_elem* stat, mx_elem* dx, float* sums,
                                   long long rows, long long d, int P, float eps,
                                   int want_dx, int want_sums) {{
    __shared__ float red[{MAX_ROW_THREADS}];
    for (long long r = blockIdx.x; r < rows; r += gridDim.x) {{
        const long long o = r * d;
        const float m = mx_read(mean[r]), inv = {inv};
        float a = 0.0f, b = 0.0f;
        for (long long j = threadIdx.x; j < d; j += blockDim.x) {{
            const float g = mx_read(dy[o + j]);
            a += g;
            b += g * ((mx_read(x[o + j]) - m) * inv);
        }}
        const float sa = mx_block_sum(red, a), sb = mx_block_sum(red, b);
        if (want_dx) {{
            const float ga = mx_read(gamma[r % P]);
            const float ma = sa / (float)d, mb = sb / (float)d;
            for (long long j = threadIdx.x; j < d; j += blockDim.x) {{
                const float xh = (mx_read(x[o + j]) - m) * inv;
                dx[o + j] = mx_write(ga * (mx_read(dy[o + j]) - ma - xh * mb) * inv);
            }}
        }}
        if (want_sums && threadIdx.x == 0) {{
            sums[2 * r] = sb;
            sums[2 * r + 1] = sa;
        }}
    }}
}}
"""


def _param_sum(kname, stat):
    return f"""
extern "C" __global__ void {kname}(const float* sums, long long n, int P, mx_elem* dgamma,
                                   mx_elem* dbeta, int want_gamma, int want_beta) {{
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= P) return;
    double sg = 0.0, sb = 0.0;
    for (long long i = 0; i < n; ++i) {{
        sg += (double)sums[2 * (i * P + c)];
        sb += (double)sums[2 * (i * P + c) + 1];
    }}
    if (want_gamma) dgamma[c] = mx_write((float)sg);
    if (want_beta) dbeta[c] = mx_write((float)sb);
}}
"""


_MAKERS = {"forward": _forward, "backward": _backward, "param_sum": _param_sum}


def source(op, kind, dtype):
    """(kernel name, CUDA source) of kernel ``kind`` (KINDS) of ``op`` (OPS) for
    elements of ``dtype``."""
    kname = f"mxnet_{op.lower()}_{kind}_{np.dtype(dtype).name}"
    return kname, element_code(dtype) + _MAKERS[kind](kname, OPS[op])


def enabled():
    """Whether GPU GroupNorm / InstanceNorm calls use these kernels
    (``MXNET_GPU_GROUPNORM_KERNEL``, on by default; 0 runs the operator bodies)."""
    return os.environ.get("MXNET_GPU_GROUPNORM_KERNEL", "1").strip() != "0"


def _is_device_array(a):
    return type(a).__module__.startswith("cupy")


def _rows(op, p, x, params, *others):
    """(samples, P, rows, d) of a call these kernels take: a C-contiguous device array
    of TYPES with at least 3 axes whose rows are not empty, contiguous (P,) parameters
    and other arrays of its dtype; None for what the operator body computes (its
    shape errors included)."""
    if not enabled() or not _is_device_array(x) or x.ndim < 3 or x.size == 0 or \
            np.dtype(x.dtype) not in TYPES or not x.flags.c_contiguous:
        return None
    n, c = x.shape[:2]
    P = p.num_groups if op == "GroupNorm" else c
    if P < 1 or c % P:
        return None
    for a in params:
        if a.shape != (P,):
            return None
    for a in params + others:
        if not _is_device_array(a) or a.dtype != x.dtype or not a.flags.c_contiguous:
            return None
    return n, P, n * P, x.size // (n * P)


_REFUSED = set()        # (op, dtype) pairs the device's compiler refused


def _kernel(xp, op, kind, dtype):
    return raw_kernel(xp, (op, kind, np.dtype(dtype)), lambda: source(op, kind, dtype))


def _launch(op, dtype, launches):
    """Run the launches; False where NVRTC refused a source (the body then computes
    this call and the later ones of that operator and dtype; one warning)."""
    try:
        for launch in launches:
            launch()
    except Exception as err:  # noqa: BLE001  (CuPy's CompileException: NVRTC refused it)
        if compile_refused(err, _REFUSED, (op, np.dtype(dtype)), f"{op}'s GPU kernels"):
            return False
        raise
    return True


def forward(op):
    """The forward adapter of ``op``: [y, mean, std or var] (written into ``out``'s
    arrays where they fit); NotImplemented for what ``_rows`` declines."""
    def run(ctx, p, inputs, aux, out=None):
        x, gamma, beta = inputs
        geo = _rows(op, p, x, (gamma, beta))
        if geo is None or (op, np.dtype(x.dtype)) in _REFUSED:
            return NotImplemented
        n, P, rows, d = geo
        xp = ctx.xp
        dst = OutputBuffers(xp, out, 3, (x, gamma, beta), x.dtype)
        y, mean, stat = dst.get(0, x.shape), dst.get(1, (n, P)), dst.get(2, (n, P))
        kernel = _kernel(xp, op, "forward", x.dtype)
        ok = _launch(op, x.dtype, [lambda: kernel(
            row_grid(rows), (row_threads(d),),
            (x, gamma, beta, y, mean, stat, np.int64(rows), np.int64(d), np.int32(P),
             np.float32(p.eps)))])
        return dst.done() if ok else NotImplemented
    run.__name__ = run.__qualname__ = f"{op.lower()}_forward"
    run.bfloat16 = True          # bfloat16 is read and written as its bits
    return run


def backward(op):
    """The backward adapter of ``op``: dx, dgamma and dbeta (each only where wanted)
    from the stored statistics; NotImplemented for what ``forward`` declines."""
    def run(ctx, p, out_grads, inputs, outputs, aux, in_grad=None):
        dy = out_grads[0]
        x, gamma, _ = inputs
        mean, stat = outputs[1], outputs[2]
        if dy is None or mean is None or stat is None:
            return NotImplemented
        geo = _rows(op, p, x, (gamma,), dy, mean, stat)
        if geo is None or dy.shape != x.shape or mean.size != geo[2] or \
                stat.size != geo[2] or (op, np.dtype(x.dtype)) in _REFUSED:
            return NotImplemented
        n, P, rows, d = geo
        xp = ctx.xp
        dst, dx, dgamma, dbeta = grad_destinations(ctx, in_grad, (x, dy, gamma, mean, stat))
        want_sums = dgamma is not None or dbeta is not None
        if dx is None and not want_sums:
            return dst.done()
        sums = xp.empty(2 * rows if want_sums else 1, np.float32)
        row_kernel = _kernel(xp, op, "backward", x.dtype)
        launches = [lambda: row_kernel(
            row_grid(rows), (row_threads(d),),
            (x, dy, gamma, mean, stat, dx if dx is not None else x, sums,
             np.int64(rows), np.int64(d), np.int32(P), np.float32(p.eps),
             np.int32(dx is not None), np.int32(want_sums)))]
        if want_sums:
            sum_kernel = _kernel(xp, op, "param_sum", x.dtype)
            # a pointer the kernel skips: the parameter gradient not wanted
            launches.append(lambda: sum_kernel(
                (-(-P // _SUM_THREADS),), (_SUM_THREADS,),
                (sums, np.int64(n), np.int32(P),
                 dgamma if dgamma is not None else dbeta,
                 dbeta if dbeta is not None else dgamma,
                 np.int32(dgamma is not None), np.int32(dbeta is not None))))
        return dst.done() if _launch(op, x.dtype, launches) else NotImplemented
    run.__name__ = run.__qualname__ = f"{op.lower()}_backward"
    run.bfloat16 = True
    return run


def register_all(register_kernel, device="gpu"):
    """Register GroupNorm's and InstanceNorm's forward and backward kernels for
    ``device``."""
    for op in OPS:
        register_kernel(op, device, forward(op))
        register_kernel(op, device, backward(op), backward=True)
    return list(OPS)
