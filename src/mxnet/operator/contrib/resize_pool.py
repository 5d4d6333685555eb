"""``AdaptiveAvgPooling2D`` and ``BilinearResize2D`` (contrib), as in MXNet 1.9.1.

Both are linear maps applied separately to the rows and the columns of each
(batch, channel) plane: ``out = A @ x @ B.T`` with A (out_h, in_h) and B (out_w, in_w)
built once per call, so forward and backward (``A.T @ g @ B``) are two matrix products.
"""

import numpy as np

from ...base import MXNetError
from ..params import Bool, Enum, FloatOrNone, Int, Schema, Shape
from ..registry import Op, ShapeError, register
from ._common import store

__all__ = ["AdaptiveAvgPooling2D", "BilinearResize2D"]


def _apply(xp, x, a, b):
    """a @ x @ b.T over the last two axes, in x's dtype (float32 math for float16)."""
    ct = np.float32 if x.dtype == np.float16 else x.dtype
    y = xp.matmul(xp.matmul(a.astype(ct), x.astype(ct, copy=False)), b.astype(ct).T)
    return y.astype(x.dtype, copy=False)


def _check4d(name, shape):
    if shape is not None and len(shape) != 4:
        raise ShapeError(f"{name}: data must be 4-D (batch, channel, height, width), got "
                         f"shape {tuple(shape)}")


def _pool_matrix(xp, n_in, n_out):
    """(n_out, n_in): row i averages input cells floor(i*n/o) .. ceil((i+1)*n/o)-1."""
    i = np.arange(n_out)
    start = (i * n_in) // n_out
    end = -((-(i + 1) * n_in) // n_out)
    cells = np.arange(n_in)
    inside = (cells[None, :] >= start[:, None]) & (cells[None, :] < end[:, None])
    m = inside / (end - start)[:, None]
    return xp.asarray(m)


@register
class AdaptiveAvgPooling2D(Op):
    """Average pooling to a fixed ``output_size`` (h, w): output cell (i, j) averages
    input rows floor(i*H/h) .. ceil((i+1)*H/h)-1 and the matching columns. An empty
    ``output_size`` means (1, 1); one number means a square."""
    name = "_contrib_AdaptiveAvgPooling2D"
    named_inputs = False
    writes_outputs = True
    params = Schema(output_size=Shape(()))
    backward_uses = ("out_grad",)

    def _size(self, p):
        s = p.output_size
        if len(s) == 0:
            return 1, 1
        if len(s) == 1:
            return s[0], s[0]
        if len(s) == 2:
            return s
        raise MXNetError(f"AdaptiveAvgPooling2D: output_size must have 1 or 2 values, got "
                         f"{s}")

    def infer_shape(self, p, in_shapes):
        d = in_shapes[0]
        _check4d("AdaptiveAvgPooling2D", d)
        if d is None:
            return [None], [None], []
        return [tuple(d)], [tuple(d[:2]) + tuple(self._size(p))], []

    def forward(self, ctx, p, inputs, aux, out=None):
        xp = ctx.xp
        x = inputs[0]
        _check4d("AdaptiveAvgPooling2D", x.shape)
        oh, ow = self._size(p)
        y = _apply(xp, x, _pool_matrix(xp, x.shape[2], oh), _pool_matrix(xp, x.shape[3], ow))
        return [store(out, 0, y)]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux, in_grad=None):
        xp = ctx.xp
        g = out_grads[0]
        shape = ctx.in_shapes[0]
        a = _pool_matrix(xp, shape[2], g.shape[2])
        b = _pool_matrix(xp, shape[3], g.shape[3])
        return [store(in_grad, 0, _apply(xp, g, a.T, b.T))]


def _resize_matrix(xp, n_in, n_out, align_corners):
    """(n_out, n_in) bilinear interpolation weights along one axis."""
    if n_out > 1:
        ratio = (n_in - 1) / (n_out - 1) if align_corners else n_in / n_out
    else:
        ratio = 0.0
    i = np.arange(n_out, dtype=np.float64)
    src = ratio * i if align_corners else np.maximum(ratio * (i + 0.5) - 0.5, 0.0)
    lo = np.minimum(np.floor(src).astype(np.int64), n_in - 1)
    hi = np.minimum(lo + 1, n_in - 1)
    frac = src - lo
    m = np.zeros((n_out, n_in))
    np.add.at(m, (np.arange(n_out), lo), 1 - frac)
    np.add.at(m, (np.arange(n_out), hi), frac)
    return xp.asarray(m)


_MODES = ("like", "odd_scale", "size", "to_even_down", "to_even_up", "to_odd_down",
          "to_odd_up")


@register
class BilinearResize2D(Op):
    """Bilinear resize of 4-D ``data`` (batch, channel, height, width). The output size
    comes from ``mode``: 'size' uses (height, width), or int(in * scale) when
    ``scale_height``/``scale_width`` are given; 'like' takes the spatial size of the
    second input ``like``; 'odd_scale' scales an odd size as (n-1)*scale+1; the
    'to_even/odd_down/up' modes move an odd/even size by one. ``align_corners`` maps the
    corner pixels onto each other; otherwise pixel centres are aligned."""
    name = "_contrib_BilinearResize2D"
    writes_outputs = True
    params = Schema(height=Int(1), width=Int(1), scale_height=FloatOrNone(None),
                    scale_width=FloatOrNone(None), mode=Enum(_MODES, "size"),
                    align_corners=Bool(True))
    backward_uses = ("out_grad",)

    def arguments(self, p):
        return ["data", "like"] if p.mode == "like" else ["data"]

    def _out_hw(self, p, d, like=None):
        h, w = d[2], d[3]
        sh, sw = p.scale_height, p.scale_width
        if (sh is None) != (sw is None) and p.mode in ("size", "odd_scale"):
            raise MXNetError("BilinearResize2D: scale_height and scale_width must be given "
                             "together")
        if p.mode == "like":
            if like is None:
                return None
            return like[2], like[3]
        if p.mode == "size":
            if sh is not None:
                return int(h * sh), int(w * sw)
            return p.height, p.width
        if p.mode == "odd_scale":
            if sh is None:
                raise MXNetError("BilinearResize2D: mode 'odd_scale' needs scale_height and "
                                 "scale_width")
            return (int((h - 1) * sh) + 1 if h % 2 else int(h * sh),
                    int((w - 1) * sw) + 1 if w % 2 else int(w * sw))
        want_even = p.mode.startswith("to_even")
        step = -1 if p.mode.endswith("down") else 1

        def fix(n):
            return n if (n % 2 == 0) == want_even else n + step
        return fix(h), fix(w)

    def infer_shape(self, p, in_shapes):
        d = in_shapes[0]
        _check4d("BilinearResize2D", d)
        like = in_shapes[1] if p.mode == "like" else None
        if like is not None:
            _check4d("BilinearResize2D (like)", like)
        if d is None:
            return list(in_shapes), [None], []
        hw = self._out_hw(p, d, like)
        if hw is None:
            return list(in_shapes), [None], []
        if min(hw) <= 0:
            raise ShapeError(f"BilinearResize2D: output size {hw} must be positive")
        return [tuple(d)] + ([tuple(like)] if p.mode == "like" else []), \
            [tuple(d[:2]) + tuple(hw)], []

    def forward(self, ctx, p, inputs, aux, out=None):
        xp = ctx.xp
        x = inputs[0]
        _, (oshape,), _ = self.infer_shape(p, [a.shape for a in inputs])
        a = _resize_matrix(xp, x.shape[2], oshape[2], p.align_corners)
        b = _resize_matrix(xp, x.shape[3], oshape[3], p.align_corners)
        return [store(out, 0, _apply(xp, x, a, b))]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux, in_grad=None):
        xp = ctx.xp
        g = out_grads[0]
        shape = ctx.in_shapes[0]
        a = _resize_matrix(xp, shape[2], g.shape[2], p.align_corners)
        b = _resize_matrix(xp, shape[3], g.shape[3], p.align_corners)
        grads = [store(in_grad, 0, _apply(xp, g, a.T, b.T))]
        if p.mode == "like":
            like = xp.zeros(ctx.in_shapes[1], g.dtype)
            grads.append(store(in_grad, 1, like))
        return grads
