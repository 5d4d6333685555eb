"""``pick`` on the GPU as one generated kernel each way (the kernel table's 'gpu' entries).

Every classification loss of Gluon (``SoftmaxCrossEntropyLoss``) picks the label's
log-probability per sample, so a training step calls ``pick`` and its backward once
each. The operator body does it with CuPy calls: the index cast and clipped,
``take_along_axis`` (index grids by ``arange`` and a fancy gather), and for the
gradient zeros plus a fancy scatter: about a dozen launches and their host time per
step, and a host-bound step (the seed CNN with CUDA graphs runs its loss outside the
graph) pays for each. Here the forward is one kernel and the backward a memset and one
kernel.

Seen as (outer, n, inner) with n the picked axis, lane ``i`` of the index holds the
position ``k`` along that axis for row ``i // inner``, column ``i % inner``:
``out[i] = data[(i // inner * n + k) * inner + i % inner]``, and the gradient is
``g[i]`` at that place, zero elsewhere (each lane owns its place: no two lanes write
the same element). ``k`` is the index value truncated toward zero, then clipped to
[0, n) (mode 'clip') or wrapped into it (mode 'wrap'), as the body computes it. The
elements are moved as their bits (1, 2, 4 or 8 bytes), so every data type is taken,
bfloat16 included; index types: the integer and floating types of _INDEX. The sources
use no headers: ``nvcc --ptx`` and a host compiler check them without a GPU.
"""
import math
import os

import numpy as np

from ..backend.cuda_kernels import BITS_SOURCE, compile_refused, grid_stride_blocks, \
    raw_kernel
from .kernels import OutputBuffers

__all__ = ["source", "pick_forward", "pick_backward", "register_all"]

_THREADS = 256
_MAX_BLOCKS = 4096

_ELEMENT = {1: "unsigned char", 2: "unsigned short", 4: "unsigned int",
            8: "unsigned long long"}
# index dtype -> (C type, its value as a number the cast truncates toward zero)
_INDEX = {np.dtype(np.float16): ("unsigned short", "mx_half_to_float(v)"),
          np.dtype(np.float32): ("float", "v"), np.dtype(np.float64): ("double", "v"),
          np.dtype(np.int8): ("signed char", "v"), np.dtype(np.uint8): ("unsigned char", "v"),
          np.dtype(np.int32): ("int", "v"), np.dtype(np.int64): ("long long", "v")}
_BOUND = {"clip": "if (k < 0) k = 0; else if (k >= n) k = n - 1;",
          "wrap": "k %= n; if (k < 0) k += n;"}


def source(direction, itemsize, index_dtype, mode):
    """(kernel name, CUDA source) of pick's ``direction`` ('forward': gather, else the
    gradient's scatter) for elements of ``itemsize`` bytes, an index of
    ``index_dtype`` and ``mode`` ('clip' or 'wrap')."""
    it = np.dtype(index_dtype)
    ictype, value = _INDEX[it]
    kname = f"mxnet_pick_{direction}_{itemsize}_{it.name}_{mode}"
    move = ("dst[i] = src[(o * n + k) * inner + (i - o * inner)];" if direction == "forward"
            else "dst[(o * n + k) * inner + (i - o * inner)] = src[i];")
    return kname, BITS_SOURCE + f"""
extern "C" __global__ void {kname}(const {_ELEMENT[itemsize]}* src, const {ictype}* index,
                                   {_ELEMENT[itemsize]}* dst, long long lanes, long long n,
                                   long long inner) {{
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < lanes;
         i += (long long)gridDim.x * blockDim.x) {{
        const {ictype} v = index[i];
        long long k = (long long)({value});
        {_BOUND[mode]}
        const long long o = i / inner;
        {move}
    }}
}}
"""


def _is_device_array(a):
    return type(a).__module__.startswith("cupy")


def _geometry(p, dshape, index):
    """(n, inner) of the picked axis, or None for what the body must handle (an axis
    it rejects, an index whose size is not one per lane)."""
    if p.axis is None or not dshape:
        return None
    ax = p.axis + len(dshape) if p.axis < 0 else p.axis
    if not 0 <= ax < len(dshape):
        return None
    n, inner = dshape[ax], math.prod(dshape[ax + 1:])
    if n == 0 or index.size != math.prod(dshape[:ax]) * inner:
        return None
    return n, inner


def _usable(data, index, p):
    return (enabled() and _is_device_array(data) and _is_device_array(index)
            and data.dtype.itemsize in _ELEMENT and np.dtype(index.dtype) in _INDEX
            and p.mode in _BOUND and data.flags.c_contiguous
            and index.flags.c_contiguous)


_REFUSED = set()     # kernel keys the device's compiler refused (the body runs them)


def _launch(xp, direction, src, index, dst, p, n, inner):
    """Queue the kernel; False where the device's compiler refused its source (once
    per key, with a warning: the operator body computes such calls)."""
    lanes = index.size
    if not lanes:
        return True
    dt = np.dtype(src.dtype)
    it = np.dtype(index.dtype)
    key = ("pick", direction, dt.itemsize, it, p.mode)
    if key in _REFUSED:
        return False
    k = raw_kernel(xp, key, lambda: source(direction, dt.itemsize, it, p.mode))
    try:
        k((grid_stride_blocks(lanes, _THREADS, _MAX_BLOCKS),), (_THREADS,),
          (src, index, dst, np.int64(lanes), np.int64(n), np.int64(inner)))
    except Exception as err:  # noqa: BLE001  (CuPy's CompileException: NVRTC refused it)
        if compile_refused(err, _REFUSED, key, "pick's GPU kernel"):
            return False
        raise
    return True


def enabled():
    """Whether GPU pick calls use these kernels (``MXNET_GPU_PICK_KERNEL``, on by
    default; 0 runs the operator body)."""
    return os.environ.get("MXNET_GPU_PICK_KERNEL", "1").strip() != "0"


def pick_forward(ctx, p, inputs, aux, out=None):
    """pick's forward (kernel-table signature): one gather kernel for C-contiguous device
    arrays; NotImplemented otherwise (the operator body runs)."""
    data, index = inputs
    if not _usable(data, index, p):
        return NotImplemented
    geo = _geometry(p, tuple(data.shape), index)
    if geo is None:
        return NotImplemented
    from .registry import get_op
    _, (oshape,), _ = get_op("pick").infer_shape(p, [tuple(data.shape), tuple(index.shape)])
    y = OutputBuffers(ctx.xp, out, 1, (data, index)).get(0, oshape, data.dtype)
    if not _launch(ctx.xp, "forward", data, index, y, p, *geo):
        return NotImplemented
    return [y]


def pick_backward(ctx, p, out_grads, inputs, outputs, aux, in_grad=None):
    """pick's backward (kernel-table signature): the data's gradient zeroed, then one
    scatter kernel of the output gradient; the index's gradient (when wanted) zeros, as
    the body gives it. NotImplemented for what ``pick_forward`` declines."""
    g, index = out_grads[0], inputs[1]
    d_shape = tuple(ctx.in_shapes[0])
    if g is None or not _usable(g, index, p) or g.size != index.size:
        return NotImplemented
    geo = _geometry(p, d_shape, index)
    if geo is None:
        return NotImplemented
    need = ctx.need_grad if ctx.need_grad is not None else [True, True]
    xp = ctx.xp
    dests = OutputBuffers(xp, in_grad, 2, (g, index))
    grad = None
    if need[0]:
        grad = dests.get(0, d_shape, g.dtype)
        grad.fill(0)
        if not _launch(xp, "backward", g, index, grad, p, *geo):
            return NotImplemented       # (the body rewrites every gradient)
    igrad = None
    if len(need) > 1 and need[1]:
        igrad = dests.get(1, index.shape, index.dtype)
        igrad.fill(0)
    return [grad, igrad]


# element moves: any dtype's bits, bfloat16 included
pick_forward.bfloat16 = True
pick_backward.bfloat16 = True


def register_all(register_kernel, device="gpu"):
    """Register pick's forward and backward kernels for ``device``."""
    register_kernel("pick", device, pick_forward)
    register_kernel("pick", device, pick_backward, backward=True)
    return ["pick"]
