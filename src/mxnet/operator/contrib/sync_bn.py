"""``SyncBatchNorm`` and ``BatchNormWithReLU`` (contrib), built on BatchNorm.

SyncBatchNorm in MXNet 1.9.1 reduces the batch statistics over the ``ndev`` devices
that share ``key``. In one process with one device per call that reduction is the
identity, so it computes exactly BatchNorm over the channel axis 1; ``ndev``/``key`` are
accepted and checked. Its third output (with ``output_mean_var``) is the variance the
data was normalised with, where BatchNorm gives the inverse standard deviation. BatchNormWithReLU is BatchNorm followed by max(., 0), with the
ReLU's mask applied to the gradient.
"""
from ...base import MXNetError
from ..nn.batch_norm import BatchNorm
from ..params import Bool, Float, Int, Schema, Str
from ..registry import register
from ._common import store_all

__all__ = ["SyncBatchNorm", "BatchNormWithReLU"]


def _written(out, values):
    return store_all(out, values) if out is not None else values


@register
class SyncBatchNorm(BatchNorm):
    """Batch normalisation over channel axis 1 whose statistics would be shared by
    ``ndev`` devices under ``key``; with one device per process, plain BatchNorm."""
    name = "_contrib_SyncBatchNorm"
    aliases = ()
    writes_outputs = True
    params = Schema(eps=Float(1e-3), momentum=Float(0.9), fix_gamma=Bool(True),
                    use_global_stats=Bool(False), output_mean_var=Bool(False),
                    ndev=Int(1, low=1), key=Str())

    def _axis(self, p, ndim):
        if ndim < 2:
            raise MXNetError(f"SyncBatchNorm: data must have a channel axis 1, got "
                             f"{ndim} dimension(s)")
        return 1

    def forward(self, ctx, p, inputs, aux, out=None):
        # unlike BatchNorm, the third output is the variance itself, not 1/sqrt(var+eps)
        y, mean, var, _ = self._normalize(ctx, p, inputs, aux, out)
        return _written(out, [y, mean, var])

    def _saved_invstd(self, xp, p, saved):
        return 1.0 / xp.sqrt(saved + saved.dtype.type(p.eps))

    def backward(self, ctx, p, out_grads, inputs, outputs, aux, in_grad=None):
        return _written(in_grad, super().backward(ctx, p, out_grads, inputs, outputs, aux))


@register
class BatchNormWithReLU(BatchNorm):
    """BatchNorm (same parameters) followed by a ReLU on the normalised output."""
    name = "_contrib_BatchNormWithReLU"
    aliases = ()
    writes_outputs = True
    backward_out_data = None            # the ReLU's mask comes from y

    def forward(self, ctx, p, inputs, aux, out=None):
        y, mean, invstd = super().forward(ctx, p, inputs, aux)
        y = ctx.xp.maximum(y, 0)
        return _written(out, [y, mean, invstd])

    def backward(self, ctx, p, out_grads, inputs, outputs, aux, in_grad=None):
        g = out_grads[0] * (outputs[0] > 0)
        grads = super().backward(ctx, p, [g] + list(out_grads[1:]), inputs, outputs, aux)
        return _written(in_grad, grads)
