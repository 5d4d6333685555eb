"""Crop: cut a (h, w) window out of NCHW data, at ``offset`` (y, x), at the centre
(``center_crop``), or to the spatial size of a second input (``num_args=2``)."""
from ...base import MXNetError
from ..params import Bool, Int, Schema, Shape
from ..registry import Op, ShapeError, register
from ..dtypes import F32, restrict_dtypes
from ..out_contract import adopt_out_contract


@register
@restrict_dtypes(F32)
class Crop(Op):
    """Spatial crop of NCHW data; the gradient is zero outside the window and for the
    shape-giving second input."""
    name = "Crop"
    params = Schema(num_args=Int(low=1, high=2), offset=Shape((0, 0)), h_w=Shape((0, 0)),
                    center_crop=Bool(False))
    variadic = "num_args"
    backward_uses = ("out_grad",)

    def _window(self, p, shapes):
        d = shapes[0]
        if len(d) != 4:
            raise ShapeError(f"Crop: data must be 4-d NCHW, got shape {tuple(d)}")
        if len(shapes) != p.num_args:
            raise MXNetError(f"Crop: num_args={p.num_args} but {len(shapes)} inputs given")
        if p.num_args == 2:
            like = shapes[1]
            if like is None:
                return None
            h, w = like[2], like[3]
        else:
            h, w = p.h_w
        if len(p.offset) != 2 or (p.num_args == 1 and len(p.h_w) != 2):
            raise MXNetError("Crop: offset and h_w need two values (y, x) and (h, w)")
        if p.center_crop:
            y, x = (d[2] - h) // 2, (d[3] - w) // 2
        else:
            y, x = p.offset
        if h <= 0 or w <= 0 or y < 0 or x < 0 or y + h > d[2] or x + w > d[3]:
            raise ShapeError(f"Crop: a {h}x{w} window at ({y}, {x}) does not fit data of "
                             f"shape {tuple(d)}")
        return y, x, h, w

    def infer_shape(self, p, in_shapes):
        d = in_shapes[0]
        if d is None:
            return in_shapes, [None], []
        win = self._window(p, in_shapes)
        if win is None:
            return in_shapes, [None], []
        return in_shapes, [tuple(d[:2]) + win[2:]], []

    def infer_type(self, p, in_types):
        return [in_types[0]] * len(in_types), [in_types[0]], []

    def forward(self, ctx, p, inputs, aux, out=None):
        y, x, h, w = self._window(p, [a.shape for a in inputs])
        return [ctx.xp.ascontiguousarray(inputs[0][:, :, y:y + h, x:x + w])]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux, in_grad=None):
        xp, g = ctx.xp, out_grads[0]
        shapes = [tuple(s) for s in ctx.in_shapes]
        y, x, h, w = self._window(p, shapes)
        gd = xp.zeros(shapes[0], g.dtype)
        gd[:, :, y:y + h, x:x + w] = g
        return [gd] + [xp.zeros(s, g.dtype) for s in shapes[1:]]


adopt_out_contract(__name__)
