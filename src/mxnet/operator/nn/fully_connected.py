"""FullyConnected: out = data @ weight.T + bias, one BLAS GEMM each way."""
from ...backend import parallel
from ...base import MXNetError
from ..params import Bool, Int, Schema
from ..registry import Op, register
from .convolution import check_provided, same_dtype

__all__ = ["FullyConnected"]


def _as_matrix(shape, flatten):
    """(rows, features) of the data as the GEMM sees it."""
    if flatten:
        rest = 1
        for d in shape[1:]:
            rest *= d
        return shape[0], rest
    rows = 1
    for d in shape[:-1]:
        rows *= d
    return rows, shape[-1]


@register
class FullyConnected(Op):
    """Apply a linear transformation: out = data @ weight.T + bias.

    With ``flatten=True`` (default) data (N, d1, d2, ...) is treated as (N, d1*d2*...)
    and the output is (N, num_hidden); with ``flatten=False`` the transformation applies
    to the last axis and the other axes are kept. weight is (num_hidden, features),
    bias (num_hidden,)."""
    name = "FullyConnected"
    float_only = True
    checks_types = True
    params = Schema(num_hidden=Int(low=1), no_bias=Bool(False), flatten=Bool(True))
    backward_uses = ("out_grad", "in_data")
    writes_outputs = True

    def arguments(self, p):
        return ["data", "weight"] if p.no_bias else ["data", "weight", "bias"]

    def infer_shape(self, p, in_shapes):
        d = in_shapes[0]
        nh = p.num_hidden
        if d is None:
            return list(in_shapes), [None], []
        d = tuple(d)
        if not d:
            raise MXNetError("FullyConnected: data must have at least one dimension")
        feat = d[1:] if p.flatten else d[-1:]
        ins = [d]
        if all(feat):
            w = (nh, _as_matrix(d, p.flatten)[1] if p.flatten else d[-1])
            check_provided(self.name, "weight", in_shapes[1], w)
            ins.append(w)
        else:
            ins.append(in_shapes[1])
        if not p.no_bias:
            b = in_shapes[2]
            if b is not None and all(b) and _size(b) != nh:
                raise MXNetError(f"FullyConnected: unexpected shape for bias {tuple(b)}, "
                                 f"expected ({nh},)")
            ins.append((nh,) if b is None or _size(b) != nh else tuple(b))
        out = (d[0], nh) if p.flatten else d[:-1] + (nh,)
        return ins, [out], []

    def infer_type(self, p, in_types):
        t = same_dtype(self.name, self.arguments(p), in_types)
        return [t] * len(in_types), [t], []

    def forward(self, ctx, p, inputs, aux, out=None):
        x, w = inputs[0], inputs[1]
        rows, feat = _as_matrix(x.shape, p.flatten)
        nh = p.num_hidden
        dt = x.dtype
        if w.shape != (nh, feat) or w.dtype != dt or (not p.no_bias and (
                inputs[2].dtype != dt or inputs[2].size != nh)):
            # the full checks (and MXNet's messages) only when something is off
            same_dtype(self.name, self.arguments(p), [a.dtype for a in inputs])
            self.infer_shape(p, [a.shape for a in inputs])
        oshape = (x.shape[0], nh) if p.flatten else x.shape[:-1] + (nh,)
        x2 = x.reshape(rows, feat)
        dst = _rows(out, 0, rows, nh)
        y = parallel.matmul(ctx.xp, x2, w.T, dst)
        if not p.no_bias:
            y += inputs[2].reshape(1, -1)
        return [out[0] if dst is not None else y.reshape(oshape)]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux, in_grad=None):
        xp = ctx.xp
        x, w = inputs[0], inputs[1]
        need = ctx.need_grad
        x2 = x.reshape(_as_matrix(x.shape, p.flatten))
        dy = out_grads[0].reshape(x2.shape[0], w.shape[0])   # sizes: a zero batch
        dx = dw = None
        if need[0]:
            dst = _rows(in_grad, 0, x2.shape[0], x2.shape[1])
            dx = parallel.matmul(xp, dy, w, dst)
            dx = in_grad[0] if dst is not None else dx.reshape(x.shape)
        if need[1]:
            dst = _rows(in_grad, 1, w.shape[0], w.shape[1])
            dw = parallel.matmul(xp, dy.T, x2, dst)
            if dst is not None:
                dw = in_grad[1]
        if p.no_bias:
            return [dx, dw]
        db = None
        if need[2]:
            dst = None if in_grad is None or in_grad[2] is None else in_grad[2].reshape(-1)
            db = dy.sum(axis=0, out=dst)
            db = in_grad[2] if dst is not None else db.reshape(inputs[2].shape)
        return [dx, dw, db]


def _rows(dst, i, rows, cols):
    """Destination i as a (rows, cols) matrix view, or None (then the caller's result
    is fresh and the runner copies it). Sizes spelled out: a zero batch makes -1
    ambiguous."""
    if dst is None or dst[i] is None or not dst[i].flags.c_contiguous:
        return None
    return dst[i].reshape(rows, cols)


def _size(shape):
    n = 1
    for d in shape:
        n *= d
    return n
