"""A float16 cumulative sum on the GPU that rounds as MXNet's kernel and NumPy do.

MXNet's cumsum kernel runs one thread per lane (every position off the summed axis),
adding one element at a time in the output type: each partial sum is rounded to
float16 before the next element is added, which is also what NumPy's
``add.accumulate`` does (each float16 addition is computed in float32 and rounded).
CuPy's ``cumsum`` scans in parallel, a tree of float16 additions whose roundings
differ from that order by several float16 steps after a few dozen elements. This
kernel keeps MXNet's order: thread = lane, a loop along the axis, the running sum
held as float16 bits and each step computed in float32 then rounded to nearest even.

The source uses no headers (``nvcc --ptx`` compiles it without a GPU; the CPU tests
run it compiled for the host).
"""
import numpy as np

from .cuda_kernels import BITS_SOURCE, grid_stride_blocks, raw_kernel

__all__ = ["source", "cumsum_half"]

_THREADS = 256
_MAX_BLOCKS = 65535


def source():
    """(kernel name, CUDA source): y[o, k, i] = sum of x[o, 0..k, i] for a
    C-contiguous (outer, n, inner) float16 array x (its bits), each partial sum
    rounded to float16."""
    kname = "mxnet_cumsum_half_sequential"
    src = BITS_SOURCE + f"""
extern "C" __global__ void {kname}(const unsigned short* x, unsigned short* y,
                                   long long lanes, long long n, long long inner) {{
    for (long long lane = (long long)blockIdx.x * blockDim.x + threadIdx.x; lane < lanes;
         lane += (long long)gridDim.x * blockDim.x) {{
        const long long o = lane / inner, i = lane - o * inner;
        const long long base = o * n * inner + i;
        unsigned short acc = x[base];
        y[base] = acc;
        for (long long k = 1; k < n; ++k) {{
            const long long at = base + k * inner;
            acc = mx_to_half(mx_half_to_float(acc) + mx_half_to_float(x[at]));
            y[at] = acc;
        }}
    }}
}}
"""
    return kname, src


def cumsum_half(cp, a, axis, out):
    """Write the cumulative sum of float16 CuPy array ``a`` along ``axis`` into
    ``out`` (float16, a's shape), rounding every partial sum to float16."""
    x = cp.ascontiguousarray(a)
    shape = x.shape
    n = shape[axis]
    inner = int(np.prod(shape[axis + 1:], dtype=np.int64))
    lanes = int(np.prod(shape, dtype=np.int64)) // max(n, 1)
    y = out if out.flags.c_contiguous else cp.empty(shape, np.float16)
    if x.size:
        k = raw_kernel(cp, ("cumsum_half_sequential",), source)
        blocks = grid_stride_blocks(lanes, _THREADS, _MAX_BLOCKS)
        k((blocks,), (_THREADS,), (x.view(np.uint16), y.view(np.uint16),
                                   np.int64(lanes), np.int64(n), np.int64(inner)))
    if y is not out:
        out[...] = y
    return out
