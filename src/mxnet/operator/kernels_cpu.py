"""CPU kernels for the kernel table (``operator.kernels``): NumPy-specific paths that
beat the operators' single ``xp`` bodies on the host.

Convolution, Deconvolution: BLAS runs on one thread (backend/cpu_threads.py), so a
large convolution uses the machine's cores by splitting its batch; each part runs the
operator's own body on the backend's thread pool and the parts' results are joined
(data) or summed (weight, bias). Small ones return NotImplemented: the ``xp`` body runs,
one thread being faster below ``PARALLEL_MIN_WORK``.

Pooling, Embedding, sort/argsort/topk, gather_nd/scatter_nd: the operator's own body
with a NumPy-specific primitive swapped in (cache-blocked passes, a sort-and-reduceat
scatter-add, packed-key sorting, index range checks that would cost a device
synchronisation elsewhere).
"""
import copy
import math

import numpy as np

from ..backend import parallel
from .kernels import output_shapes, register_kernel
from .nn.embedding import sorted_scatter_add
from .nn.pooling import cache_blocked
from .ops.sort import packed_order
from .registry import OpContext, get_op

PARALLEL_MIN_WORK = 1 << 24        # multiply-adds below which one thread is faster


def _parts(n, work):
    if parallel.num_parts() < 2 or n < 2 or work < PARALLEL_MIN_WORK:
        return None
    return parallel.split(n)


def _work(inputs, out_shape):
    """Multiply-adds of a convolution-like call: weight size x the larger spatial size
    x batch."""
    x, w = inputs[0], inputs[1]
    spatial = max(math.prod(x.shape[2:]), math.prod(out_shape[2:]))
    return w.size * spatial * x.shape[0]


def _body(op, name):
    """op's own forward/backward as fn(ctx, *args, given)."""
    fn = getattr(op, name)
    if op.writes_outputs:
        return fn
    return lambda ctx, *args: fn(ctx, *args[:-1])


def register_batch_split(op_name):
    """CPU kernels for a convolution-like operator (argument 0 the batch, weights
    after it): its own body run on batch slices on the thread pool, data results
    joined, weight and bias gradients summed."""
    op = get_op(op_name)
    fwd, bwd = _body(op, "forward"), _body(op, "backward")

    def forward(ctx, p, inputs, aux, out=None):
        x = inputs[0]
        if parallel.num_parts() < 2 or x.shape[0] < 2:
            return NotImplemented       # (before inferring the output's shape)
        out_shape = output_shapes(op, p, [a.shape for a in inputs])[0]
        parts = _parts(x.shape[0], _work(inputs, out_shape))
        if parts is None:
            return NotImplemented
        y = out[0] if out is not None and out[0] is not None else \
            np.empty(out_shape, dtype=x.dtype)

        def run(a, b):
            r = fwd(ctx, p, [x[a:b]] + list(inputs[1:]), aux, [y[a:b]])
            if r[0] is not y[a:b]:
                y[a:b] = r[0]
        parallel.run_parts(run, parts)
        return [y]

    def backward(ctx, p, out_grads, inputs, outputs, aux, in_grad=None):
        x, dy = inputs[0], out_grads[0]
        parts = _parts(x.shape[0], _work(inputs, dy.shape))
        if parts is None:
            return NotImplemented
        need = ctx.need_grad
        dx = None
        if need[0]:
            dx = in_grad[0] if in_grad is not None and in_grad[0] is not None else \
                np.empty(x.shape, dtype=dy.dtype)
        n_args = len(inputs)

        def run(a, b):
            part_ctx = OpContext(ctx.xp, ctx.ctx, ctx.is_train, need,
                                 [(b - a,) + tuple(ctx.in_shapes[0][1:])] +
                                 list(ctx.in_shapes[1:]))
            given = [None if dx is None else dx[a:b]] + [None] * (n_args - 1)
            r = bwd(part_ctx, p, [dy[a:b]], [x[a:b]] + list(inputs[1:]),
                    [None] * len(outputs), aux, given)
            if dx is not None and r[0] is not given[0]:
                dx[a:b] = r[0]
            return r[1:]
        results = parallel.run_parts(run, parts)
        rest = [sum(r[i] for r in results) if need[i + 1] else None
                for i in range(n_args - 1)]
        return [dx] + rest
    register_kernel(op_name, "cpu", forward)
    register_kernel(op_name, "cpu", backward, backward=True)


register_batch_split("Convolution")
register_batch_split("Deconvolution")


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
register_variant("scatter_nd", backward=False, check_range=True)
