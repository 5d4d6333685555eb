"""SVMOutput: a multi-class SVM loss layer. The forward passes the scores through; the
backward ignores the head gradient and gives the hinge loss's gradient (squared hinge,
L2-SVM, unless ``use_linear``), one-vs-all against the integer labels."""
from ..params import Bool, Float, Schema
from ..registry import Op, ShapeError, register
from ..dtypes import F16_32_64, restrict_dtypes
from ..out_contract import adopt_out_contract


@register
@restrict_dtypes(F16_32_64)
class SVMOutput(Op):
    """Scores pass through; gradient of the (squared) hinge loss with ``margin``,
    scaled by ``regularization_coefficient``."""
    name = "SVMOutput"
    params = Schema(margin=Float(1.0), regularization_coefficient=Float(1.0),
                    use_linear=Bool(False))
    backward_uses = ("in_data",)

    def arguments(self, p):
        return ["data", "label"]

    def infer_shape(self, p, in_shapes):
        d, lab = in_shapes
        if d is None:
            return in_shapes, [None], []
        want = tuple(d[:1]) + tuple(d[2:])
        if lab is not None and tuple(lab) != want:
            raise ShapeError(f"SVMOutput: label shape {tuple(lab)} does not match data "
                             f"shape {tuple(d)} (expected {want})")
        return [d, want], [d], []

    def forward(self, ctx, p, inputs, aux, out=None):
        return [inputs[0].copy()]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux, in_grad=None):
        xp = ctx.xp
        x, label = inputs
        n, k = x.shape[0], x.shape[1]
        x2 = xp.moveaxis(x, 1, -1).reshape(-1, k)
        is_label = xp.arange(k)[None, :] == label.reshape(-1, 1).astype("int64")
        m, c = x.dtype.type(p.margin), x.dtype.type(p.regularization_coefficient)
        # the label's score should exceed margin, the others stay below -margin
        if p.use_linear:
            g = xp.where(is_label, -(m > x2).astype(x.dtype), (m > -x2).astype(x.dtype))
        else:
            g = xp.where(is_label, xp.where(m > x2, -2 * (m - x2), 0),
                         xp.where(m > -x2, 2 * (m + x2), 0))
        g = (g * c).astype(x.dtype)
        g = xp.moveaxis(g.reshape((n,) + x.shape[2:] + (k,)), -1, 1)
        return [xp.ascontiguousarray(g), xp.zeros(label.shape, label.dtype)]


adopt_out_contract(__name__)
