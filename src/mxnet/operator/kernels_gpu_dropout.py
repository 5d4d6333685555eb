"""Dropout's forward on a GPU as one generated kernel (the kernel table's "gpu" entry).

The operator's body draws a float32 uniform array from CuPy's generator, compares,
casts, scales and multiplies: five launches and a full-size temporary per call, and a
CUDA graph cannot replay it (CuPy's generator keeps its position on the host, so the
replay would repeat one mask). Here one kernel draws from the device's Philox stream
(backend/philox.py), whose key and position are read and advanced on the device, and
writes both results: the output x * mask and the hidden mask output (1/(1-p) where an
element is kept, 0 elsewhere) that backward multiplies the gradient by. A graph that
captured it draws a new mask on every replay (executor/cuda_graph.py lets such graphs
be captured), and ``mx.random.seed`` makes the masks reproducible.

Element e keeps its value when the float32 uniform of Philox word e % 4 of block
(e // 4, offset) is below 1 - p, the operator body's rule for its generator's draws; the
mask value and the product are rounded to the array's type as the body rounds them
(bfloat16's body computes in float32: its product is x times float32's 1/(1-p)). A
factor 1/(1-p) that overflows the type (float16, p within 2^-16 of 1) is the body's.
float32, float64, float16 and bfloat16 (the last two read and written as their bits,
multiplied in float32); ``axes`` (one draw shared along axes), p = 1, and inference
calls run the operator's body. The RNN operator draws its dropout between layers here
too (``draw``). ``MXNET_GPU_FUSED_DROPOUT=0`` runs the bodies always.
"""
import contextlib
import os

import numpy as np

from ..backend.cuda_kernels import BITS_SOURCE, grid_stride_blocks, raw_kernel
from ..backend.philox import PHILOX_SOURCE
from ..base import bfloat16

__all__ = ["source", "TYPES", "enabled", "graph_safe", "dropout_forward", "usable", "draw",
           "register_all"]

_THREADS = 256
_MAX_BLOCKS = 4096
# dtype: (element C type, compute type, load as compute, store)
_TYPES = {np.dtype(np.float32): ("float", "float", "(v)", "(v)"),
          np.dtype(np.float64): ("double", "double", "(v)", "(v)"),
          np.dtype(np.float16): ("unsigned short", "float", "mx_half_to_float(v)",
                                 "mx_to_half(v)")}
if bfloat16 is not None:
    _TYPES[np.dtype(bfloat16)] = ("unsigned short", "float", "mx_bf16(v)",
                                  "mx_store_bf16(v)")
TYPES = tuple(_TYPES)


def source(dtype):
    """(kernel name, CUDA source) of the dropout forward for ``dtype``."""
    dt = np.dtype(dtype)
    real, acc, load, store = _TYPES[dt]
    kname = f"mxnet_dropout_{dt.name}"
    return kname, BITS_SOURCE + PHILOX_SOURCE + f"""
typedef {real} real;
typedef {acc} acc;
#define LD(v) {load}
#define ST(v) {store}
extern "C" __global__ void {kname}(const real* x, real* y, real* mask,
                                   const unsigned long long* state, double keep,
                                   acc scale, long long n) {{
    const unsigned long long key = state[0], offset = state[1];
    const real kept = ST(scale), dropped = ST((acc)0);
    const acc zero = (acc)0;
    const long long blocks = (n + 3) / 4;
    for (long long b = (long long)blockIdx.x * blockDim.x + threadIdx.x; b < blocks;
         b += (long long)gridDim.x * blockDim.x) {{
        const mx_philox_words w = mx_philox4x32_10(
            (unsigned int)b, (unsigned int)((unsigned long long)b >> 32),
            (unsigned int)offset, (unsigned int)(offset >> 32),
            (unsigned int)key, (unsigned int)(key >> 32));
        for (int k = 0; k < 4; ++k) {{
            const long long e = 4 * b + k;
            if (e >= n) break;
            const int on = (double)mx_philox_uniform(w.v[k]) < keep;
            mask[e] = on ? kept : dropped;
            y[e] = ST(LD(x[e]) * (on ? scale : zero));
        }}
    }}
}}
"""


def enabled():
    """Whether GPU Dropout calls use the kernel (``MXNET_GPU_FUSED_DROPOUT``, on by
    default)."""
    return os.environ.get("MXNET_GPU_FUSED_DROPOUT", "1") != "0"


def graph_safe(p):
    """Whether a training Dropout with parameters ``p`` runs as this kernel on a GPU,
    so that a CUDA graph replaying it draws new masks (executor/cuda_graph.py)."""
    return enabled() and not tuple(p.axes or ())


def _is_device_array(a):
    return type(a).__module__.startswith("cupy")


def _fits(a, like):
    return (a is not None and _is_device_array(a) and a.shape == like.shape
            and a.dtype == like.dtype and a.flags.c_contiguous)


def dropout_forward(ctx, p, inputs, aux, out=None):
    """Dropout's forward (kernel-table signature): [output, mask] written by one
    kernel for a training (or mode='always') call with 0 <= p < 1, no ``axes``, on a
    C-contiguous device array of a type in TYPES; NotImplemented otherwise (the
    operator's body runs)."""
    x = inputs[0]
    if not (p.mode == "always" or ctx.is_train) or tuple(p.axes or ()):
        return NotImplemented
    if not usable(x, p.p):
        return NotImplemented
    xp = ctx.xp
    y = out[0] if out and _fits(out[0], x) else xp.empty(x.shape, x.dtype)
    mask = out[1] if out and len(out) > 1 and _fits(out[1], x) else xp.empty(x.shape, x.dtype)
    draw(xp, ctx.ctx, x, y, mask, p.p)
    return [y, mask]


def _scale(dt, p):
    """The factor a kept element is multiplied by, in the compute type: 1/(1-p) in the
    array's type, as the operator body's mask holds it (bfloat16's body runs in
    float32, operator/bfloat16.py, so its factor is float32's)."""
    if dt == np.float64:
        return np.float64(1.0 / (1.0 - p))
    store = dt.type if dt == np.float16 else np.float32
    with np.errstate(over="ignore"):        # float16: inf, declined by usable()
        return np.float32(store(1.0 / (1.0 - p)))


def usable(x, p):
    """Whether ``draw`` takes x: a C-contiguous device array of a type in TYPES,
    0 <= p < 1 with a finite 1/(1-p) in that type, and the switch on."""
    if not (_is_device_array(x) and enabled() and 0.0 <= p < 1.0):
        return False
    dt = np.dtype(x.dtype)
    return dt in _TYPES and x.flags.c_contiguous and bool(np.isfinite(_scale(dt, p)))


def draw(xp, device_ctx, x, y, mask, p):
    """y = x * mask with a fresh mask (1/(1-p) kept, 0 dropped) from ``device_ctx``'s
    Philox stream, which then moves on (x may be y; see ``usable``)."""
    from ..resource import counter_stream
    dt = np.dtype(x.dtype)
    keep = 1.0 - p
    n = x.size
    if not n:
        return
    stream = counter_stream(device_ctx)
    k = raw_kernel(xp, ("dropout", dt), lambda: source(dt))
    grid = (grid_stride_blocks((n + 3) // 4, _THREADS, _MAX_BLOCKS),)  # 4 elements a thread
    device = x.device if hasattr(x.device, "__enter__") else contextlib.nullcontext()
    with device:
        k(grid, (_THREADS,), (x, y, mask, stream.state, np.float64(keep), _scale(dt, p),
                              np.int64(n)))
        stream.advance()


dropout_forward.bfloat16 = True


def register_all(register_kernel, device="gpu"):
    """Register the Dropout forward kernel for ``device``."""
    register_kernel("Dropout", device, dropout_forward)
    return ["Dropout"]
