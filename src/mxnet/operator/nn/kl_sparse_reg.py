"""IdentityAttachKLSparseReg: identity forward that, in training, adds to the gradient
the derivative of a KL sparseness penalty pulling each unit's average activation (a
moving average over batches, auxiliary state ``moving_avg``) towards
``sparseness_target``."""
from ..params import Float, Schema
from ..registry import Op, register
from ..out_contract import adopt_out_contract


@register
class IdentityAttachKLSparseReg(Op):
    """y = x; grad += penalty * (-target / avg + (1 - target) / (1 - avg))."""
    name = "IdentityAttachKLSparseReg"
    params = Schema(sparseness_target=Float(0.1), penalty=Float(0.001),
                    momentum=Float(0.9))
    backward_uses = ("out_grad", "in_data")

    def aux_states(self, p):
        return ["moving_avg"]

    def infer_shape(self, p, in_shapes):
        d = in_shapes[0]
        return [d], [d], [None if d is None else (d[1],)]

    def infer_type(self, p, in_types):
        return [in_types[0]], [in_types[0]], [in_types[0]]

    def forward(self, ctx, p, inputs, aux, out=None):
        x = inputs[0]
        if ctx.is_train and aux:
            avg = aux[0]
            axes = tuple(i for i in range(x.ndim) if i != 1)
            avg *= avg.dtype.type(p.momentum)
            avg += (x.mean(axis=axes) * (1 - p.momentum)).astype(avg.dtype)
        return [x.copy()]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux, in_grad=None):
        g = out_grads[0]
        avg = aux[0]
        t = p.sparseness_target
        reg = p.penalty * (-t / avg + (1 - t) / (1 - avg))
        shape = [1] * g.ndim
        shape[1] = -1
        return [(g + reg.reshape(shape)).astype(g.dtype)]


adopt_out_contract(__name__)
