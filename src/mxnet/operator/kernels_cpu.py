"""CPU kernels for the kernel table (``operator.kernels``): NumPy-specific paths that
beat the operators' single ``xp`` bodies on the host.

Convolution: BLAS runs on one thread (backend/cpu_threads.py), so a large convolution
uses the machine's cores by splitting its batch; each part runs the operator's own
im2col kernel on the backend's thread pool and the parts' results are joined (data)
or summed (weight, bias). Small convolutions return NotImplemented: the ``xp`` body
runs, one thread being faster below ``PARALLEL_MIN_WORK``.

Pooling, Embedding, sort/argsort/topk, gather_nd/scatter_nd: the operator's own body
with a NumPy-specific primitive swapped in (cache-blocked passes, a sort-and-reduceat
scatter-add, packed-key sorting, index range checks that would cost a device
synchronisation elsewhere).
"""
import copy

import numpy as np

from ..backend import parallel
from .kernels import register_kernel
from .nn import im2col
from .nn.convolution import conv_windows
from .nn.embedding import sorted_scatter_add
from .nn.pooling import cache_blocked
from .ops.sort import packed_order
from .registry import get_op

PARALLEL_MIN_WORK = 1 << 24        # multiply-adds below which one thread is faster


def _parts(n, work):
    if parallel.num_parts() < 2 or n < 2 or work < PARALLEL_MIN_WORK:
        return None
    return parallel.split(n)


def conv_forward(ctx, p, inputs, aux, out=None):
    x, w = inputs[0], inputs[1]
    n = x.shape[0]
    win = conv_windows(p, x.shape)
    parts = _parts(n, w.size * win.L * n)
    if parts is None:
        return NotImplemented
    bias = None if p.no_bias else inputs[2]
    y = out[0] if out is not None and out[0] is not None else \
        np.empty((n, w.shape[0]) + win.out_size, dtype=x.dtype)

    def run(a, b):
        im2col.conv_forward(ctx, win, x[a:b], w, p.num_group, bias, p.workspace,
                            out=y[a:b])
    parallel.run_parts(run, parts)
    return [y]


def conv_backward(ctx, p, out_grads, inputs, outputs, aux, in_grad=None):
    x, w = inputs[0], inputs[1]
    dy = out_grads[0]
    n = dy.shape[0]
    win = conv_windows(p, x.shape)
    parts = _parts(n, w.size * win.L * n)
    if parts is None:
        return NotImplemented
    need = ctx.need_grad
    need_bias = not p.no_bias and need[2]
    dx = None
    if need[0]:
        dx = in_grad[0] if in_grad is not None and in_grad[0] is not None else \
            np.empty(x.shape, dtype=dy.dtype)

    def run(a, b):
        _, gw, gb = im2col.conv_backward(ctx, win, dy[a:b], x[a:b], w, p.num_group,
                                         need[0], need[1], need_bias, None, p.workspace,
                                         None if dx is None else dx[a:b])
        return gw, gb
    results = parallel.run_parts(run, parts)
    dw = sum(r[0] for r in results) if need[1] else None
    db = sum(r[1] for r in results) if need_bias else None
    return [dx, dw] if p.no_bias else [dx, dw, db]


register_kernel("Convolution", "cpu", conv_forward)
register_kernel("Convolution", "cpu", conv_backward, backward=True)


def register_variant(op_name, backward=True, **primitives):
    """Register, as op_name's CPU kernels, its own forward (and backward) run with
    ``primitives`` (attributes of the operator) replaced."""
    variant = copy.copy(get_op(op_name))
    variant.__dict__.update(primitives)
    if variant.writes_outputs:
        register_kernel(op_name, "cpu", variant.forward)
        if backward and variant.backward is not None:
            register_kernel(op_name, "cpu", variant.backward, backward=True)
        return
    register_kernel(op_name, "cpu",
                    lambda ctx, p, inputs, aux, out=None: variant.forward(ctx, p, inputs, aux))
    if backward and variant.backward is not None:
        register_kernel(op_name, "cpu",
                        lambda ctx, p, og, inputs, outputs, aux, in_grad=None:
                        variant.backward(ctx, p, og, inputs, outputs, aux), backward=True)


register_variant("Pooling", chunk=cache_blocked)
register_variant("Embedding", scatter_add=sorted_scatter_add)
for _name in ("sort", "argsort", "topk"):
    register_variant(_name, backward=False, order=packed_order)
for _name in ("gather_nd", "scatter_nd"):
    register_variant(_name, backward=False, check_range=True)
