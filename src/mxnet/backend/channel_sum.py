"""Per-channel sums of channels-last data on the GPU: the bias gradient of a
convolution whose output gradient lies NHWC (the executor's GPU layout,
executor/layout.py).

Seen as a (rows, channels) matrix - rows = N*H*W, channels innermost - the sum runs
down each column. A generic reduction over axes (0, 1, 2) of such an array has each
thread stride through memory by the channel count; this kernel gives consecutive
threads consecutive channels (coalesced reads), each thread summing a slice of rows
in float32, and the slices meet with one atomic add per thread. float16 and bfloat16
are read as their bits (no copy to float32 first).

The sources use no headers: ``nvcc --ptx`` compiles them on a machine without a GPU,
and the CPU tests run the same source compiled for the host.
"""
import numpy as np

from ..base import bfloat16
from .cuda_kernels import BITS_SOURCE, raw_kernel

__all__ = ["source", "launch_shape", "channel_sum", "TYPES"]

_THREADS = 256
_TARGET_BLOCKS = 1024         # enough blocks to fill a large GPU several times over
_MIN_ROWS = 16                # rows per block at least: each thread's run amortises it

# dtype -> (C type of an element, expression turning element ``v`` into a float)
_READ = {np.dtype(np.float32): ("float", "v"),
         np.dtype(np.float16): ("unsigned short", "mx_half_to_float(v)")}
if bfloat16 is not None:
    _READ[np.dtype(bfloat16)] = ("unsigned short", "mx_bf16(v)")
TYPES = tuple(_READ)


def source(dtype):
    """(kernel name, CUDA source) summing a C-contiguous (rows, cols) array of
    ``dtype`` down its columns into a float32 vector (added to what it holds)."""
    ctype, read = _READ[np.dtype(dtype)]
    kname = f"mxnet_channel_sum_{np.dtype(dtype).name}"
    src = BITS_SOURCE + f"""
extern "C" __global__ void {kname}(const {ctype}* x, long long rows, int cols,
                                   long long rows_per_block, float* out) {{
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= cols) return;
    const long long r0 = (long long)blockIdx.y * rows_per_block;
    long long r1 = r0 + rows_per_block;
    if (r1 > rows) r1 = rows;
    float acc = 0.0f;
    for (long long r = r0; r < r1; ++r) {{
        const {ctype} v = x[r * cols + c];
        acc += {read};
    }}
    if (r1 > r0) atomicAdd(out + c, acc);
}}
"""
    return kname, src


def launch_shape(rows, cols):
    """(grid x, grid y, threads, rows per block) for a (rows, cols) sum."""
    threads = min(_THREADS, max(32, -(-cols // 32) * 32))
    gx = -(-cols // threads)
    per = max(_MIN_ROWS, -(-rows * gx // _TARGET_BLOCKS))
    gy = max(1, -(-rows // per))
    return gx, gy, threads, per


def channel_sum(cp, m, out):
    """Add the column sums of C-contiguous (rows, cols) CuPy array ``m`` to float32
    vector ``out`` (cols,). Returns False (nothing done) for what it does not take."""
    dt = np.dtype(m.dtype)
    if dt not in _READ or m.ndim != 2 or not m.flags.c_contiguous or \
            out.dtype != np.float32 or out.shape != (m.shape[1],) or m.size == 0:
        return False
    k = raw_kernel(cp, ("channel_sum", dt), lambda: source(dt))
    rows, cols = m.shape
    gx, gy, threads, per = launch_shape(rows, cols)
    k((gx, gy), (threads,), (m, np.int64(rows), np.int32(cols), np.int64(per), out))
    return True
