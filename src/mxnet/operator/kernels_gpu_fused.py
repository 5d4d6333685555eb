"""Fused elementwise kernels for GPU executors (the fusion table, operator/kernels.py).

``add -> relu``: a residual network ends every block with ``relu(x + shortcut)``. Run
as two operators, the sum is written to memory and read back by the relu: for
ResNet-50 at batch 64 that pass moves ~200 MB in each of the largest blocks (session
8's profile of a bfloat16 step: 16 additions of ~106 us and a relu after each). The
fused kernel reads both addends once and writes only the relu's output; the sum is
never stored (executor/fusion.py fuses a pair only when backward does not read the
intermediate: relu's gradient comes from its output, the addition's is the identity).

The result equals the two operators': the sum rounded to the array's type, then
relu as the ``relu`` operator computes it (``maximum(s, 0)``: NaN stays NaN, as MXNet
1.9.1's ``relu``; a NaN comes out as bfloat16's canonical quiet NaN).
float32 and bfloat16 (read and written as their bits; the sum rounded to nearest even,
as a bfloat16 addition rounds); other types decline and run unfused. The sources use
no headers, so ``nvcc --ptx`` and a host compiler check them without a GPU.
"""
import numpy as np

from ..backend.cuda_kernels import BITS_SOURCE, grid_stride_blocks, raw_kernel
from ..base import bfloat16

__all__ = ["source", "add_relu", "register_all", "TYPES"]

_THREADS = 256
_MAX_BLOCKS = 4096

_BODY = {
    np.dtype(np.float32): ("float", "const float s = a[i] + b[i];\n"
                                    "        y[i] = (s > 0.0f || s != s) ? s : 0.0f;"),
}
if bfloat16 is not None:
    _BODY[np.dtype(bfloat16)] = (
        "unsigned short",
        "const float s = mx_bf16(a[i]) + mx_bf16(b[i]);\n"
        "        y[i] = s != s ? (unsigned short)0x7fc0u :\n"
        "               s > 0.0f ? mx_to_bf16(s) : (unsigned short)0;")
TYPES = tuple(_BODY)


def source(dtype):
    """(kernel name, CUDA source) of y = relu(a + b) over n elements of ``dtype``."""
    ctype, body = _BODY[np.dtype(dtype)]
    kname = f"mxnet_add_relu_{np.dtype(dtype).name}"
    return kname, BITS_SOURCE + f"""
extern "C" __global__ void {kname}(const {ctype}* a, const {ctype}* b, {ctype}* y,
                                   long long n) {{
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) {{
        {body}
    }}
}}
"""


def launch_blocks(n):
    """Blocks of ``_THREADS`` threads for n elements (each thread strides on)."""
    return grid_stride_blocks(n, _THREADS, _MAX_BLOCKS)


def add_relu(octx, p, args, aux, out):
    """The fused ``add -> relu`` kernel (fusion-table signature): ``out[0] =
    relu(args[0] + args[1])`` for same-shape, same-dtype, C-contiguous CuPy arrays of
    a type in TYPES; NotImplemented otherwise (the pair then runs unfused)."""
    if len(args) != 2 or not out or out[0] is None:
        return NotImplemented
    a, b = args
    y = out[0]
    if not type(a).__module__.startswith("cupy"):
        return NotImplemented
    dt = np.dtype(a.dtype)
    if dt not in _BODY or b.dtype != dt or y.dtype != dt or a.shape != b.shape or \
            y.shape != a.shape or not (a.flags.c_contiguous and b.flags.c_contiguous
                                       and y.flags.c_contiguous):
        return NotImplemented
    import cupy
    if not (isinstance(b, cupy.ndarray) and isinstance(y, cupy.ndarray)):
        return NotImplemented
    k = raw_kernel(cupy, ("add_relu", dt), lambda: source(dt))
    n = a.size
    if n:
        with a.device:
            k((launch_blocks(n),), (_THREADS,), (a, b, y, np.int64(n)))
    return [y]


add_relu.bfloat16 = True
_ADDS = ("elemwise_add", "_plus", "broadcast_add")


def _relu_activation(p_add, p_act):
    return p_act.act_type == "relu"


def register_all(register_fusion, device="gpu"):
    """Register ``add -> relu`` (relu and Activation(relu)) for ``device``."""
    for add in _ADDS:
        register_fusion(add, "relu", device, add_relu)
        register_fusion(add, "Activation", device, add_relu, _relu_activation)
    return list(_ADDS)
