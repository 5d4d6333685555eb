"""im2col / col2im as operators: unfold every sliding window of an (N, C, *spatial)
array into a column, (N, C * prod(kernel), L) with L the number of window positions
(rows ordered channel, then kernel offsets), and the adjoint, which sums columns back
into an image of ``output_size`` (overlaps add)."""
import numpy as np

from ...base import MXNetError
from ..params import Schema, Shape
from ..registry import Op, ShapeError, register
from ..dtypes import F16_32_64, restrict_dtypes
from ..out_contract import adopt_out_contract


def _geometry(opname, p, spatial):
    k = len(p.kernel)
    if k not in (1, 2, 3):
        raise MXNetError(f"{opname}: kernel must have 1, 2 or 3 dimensions, got {p.kernel}")

    def tup(v, default):
        v = tuple(v) if v else (default,) * k
        if len(v) != k:
            raise MXNetError(f"{opname}: stride, dilate and pad need {k} values like kernel")
        return v
    stride, dilate, pad = tup(p.stride, 1), tup(p.dilate, 1), tup(p.pad, 0)
    for name, v in (("kernel", p.kernel), ("stride", stride), ("dilate", dilate)):
        if any(x <= 0 for x in v):      # MXNet refuses a zero size as well
            raise MXNetError(f"{opname}: incorrect {name} size {tuple(v)}")
    if len(spatial) != k:
        raise ShapeError(f"{opname}: {k}-d kernel for {len(spatial)} spatial dimensions")
    out = []
    for n, kk, s, d, pd in zip(spatial, p.kernel, stride, dilate, pad):
        span = d * (kk - 1) + 1
        o = (n + 2 * pd - span) // s + 1
        if o <= 0:
            raise ShapeError(f"{opname}: kernel {tuple(p.kernel)} (dilated) is larger than "
                             f"the padded input {tuple(spatial)}")
        out.append(o)
    return stride, dilate, pad, tuple(out)


def _flat_index(xp, p, spatial, stride, dilate, pad, out):
    """Flat index into the padded spatial block for each (kernel offset, position):
    shape (prod(kernel), prod(out))."""
    padded = [n + 2 * pd for n, pd in zip(spatial, pad)]
    k = len(spatial)
    idx = 0
    for d in range(k):
        per = (xp.arange(p.kernel[d]) * dilate[d])[:, None] + \
            (xp.arange(out[d]) * stride[d])[None, :]            # (K_d, O_d)
        shape = [1] * (2 * k)
        shape[d], shape[k + d] = p.kernel[d], out[d]
        mult = int(np.prod(padded[d + 1:])) if d + 1 < k else 1
        idx = idx + per.reshape(shape) * mult
    return idx.reshape(int(np.prod(p.kernel)), int(np.prod(out))), padded


def _pad(xp, x, pad):
    if not any(pad):
        return x
    return xp.pad(x, [(0, 0), (0, 0)] + [(q, q) for q in pad])


def _unfold(xp, p, x, opname):
    n, c = x.shape[:2]
    stride, dilate, pad, out = _geometry(opname, p, x.shape[2:])
    idx, padded = _flat_index(xp, p, x.shape[2:], stride, dilate, pad, out)
    xp_ = _pad(xp, x, pad).reshape(n, c, -1)
    cols = xp_[:, :, idx]                                   # (N, C, K, L)
    return cols.reshape(n, c * idx.shape[0], idx.shape[1])


def _fold(xp, p, col, spatial, opname):
    n = col.shape[0]
    stride, dilate, pad, out = _geometry(opname, p, spatial)
    idx, padded = _flat_index(xp, p, spatial, stride, dilate, pad, out)
    kk, length = idx.shape
    if col.shape[1] % kk or col.shape[2] != length:
        raise ShapeError(f"{opname}: input of shape {col.shape} does not match kernel "
                         f"{tuple(p.kernel)} and output_size {tuple(spatial)} "
                         f"(expected (N, C*{kk}, {length}))")
    c = col.shape[1] // kk
    size = int(np.prod(padded))
    offs = (xp.arange(n * c) * size).reshape(n, c, 1, 1)
    flat = (idx[None, None] + offs).ravel()
    img = xp.bincount(flat, weights=col.reshape(-1).astype(np.float64), minlength=n * c * size)
    img = img.reshape((n, c) + tuple(padded))
    sl = (slice(None), slice(None)) + tuple(slice(q, q + s) for q, s in zip(pad, spatial))
    return xp.ascontiguousarray(img[sl]).astype(col.dtype)


_PARAMS = dict(kernel=Shape(), stride=Shape(()), dilate=Shape(()), pad=Shape(()))


@register
@restrict_dtypes(F16_32_64)
class Im2col(Op):
    """Sliding windows of (N, C, *spatial) data as columns (N, C*prod(kernel), L)."""
    name = "im2col"
    params = Schema(**_PARAMS)
    backward_uses = ("out_grad",)

    def infer_shape(self, p, in_shapes):
        d = in_shapes[0]
        if d is None:
            return [None], [None], []
        if len(d) != len(p.kernel) + 2:
            raise ShapeError(f"im2col: data of shape {tuple(d)} does not match a "
                             f"{len(p.kernel)}-d kernel")
        _, _, _, out = _geometry(self.name, p, d[2:])
        return [d], [(d[0], d[1] * int(np.prod(p.kernel)), int(np.prod(out)))], []

    def forward(self, ctx, p, inputs, aux, out=None):
        x = inputs[0]
        self.infer_shape(p, [x.shape])
        return [ctx.xp.ascontiguousarray(_unfold(ctx.xp, p, x, self.name))]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux, in_grad=None):
        return [_fold(ctx.xp, p, out_grads[0], tuple(ctx.in_shapes[0][2:]), self.name)]


@register
@restrict_dtypes(F16_32_64)
class Col2im(Op):
    """Sum columns (N, C*prod(kernel), L) back into (N, C, *output_size) images."""
    name = "col2im"
    params = Schema(output_size=Shape(), **_PARAMS)
    backward_uses = ("out_grad",)

    def infer_shape(self, p, in_shapes):
        d = in_shapes[0]
        if len(p.output_size) != len(p.kernel):
            raise MXNetError(f"col2im: output_size {tuple(p.output_size)} and kernel "
                             f"{tuple(p.kernel)} need the same number of dimensions")
        _geometry(self.name, p, tuple(p.output_size))      # the window parameters' checks
        if d is None:
            return [None], [None], []
        kk = int(np.prod(p.kernel))
        if len(d) != 3 or d[1] % kk:
            raise ShapeError(f"col2im: input of shape {tuple(d)} is not (N, C*{kk}, L)")
        return [d], [(d[0], d[1] // kk) + tuple(p.output_size)], []

    def forward(self, ctx, p, inputs, aux, out=None):
        col = inputs[0]
        self.infer_shape(p, [col.shape])
        return [_fold(ctx.xp, p, col, tuple(p.output_size), self.name)]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux, in_grad=None):
        return [_unfold(ctx.xp, p, out_grads[0], self.name)]


adopt_out_contract(__name__)
