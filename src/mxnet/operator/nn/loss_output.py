"""Loss-output layers: ``SoftmaxOutput`` (alias ``Softmax``) and the regression outputs
(``LinearRegressionOutput``, ``LogisticRegressionOutput``, ``MAERegressionOutput``).

These are the heads of MXNet 1.x symbolic networks: forward returns the prediction and
backward returns the loss gradient directly, ignoring the head gradient (MXNet 1.9.1
behaviour; the label input gets a zero gradient). ``MakeLoss`` lives with the
elementwise operators (ops/elemwise_unary.py).
"""
import math

import numpy as np

from ...base import MXNetError
from ..params import Bool, Enum, Float, Schema
from ..registry import Op, ShapeError, register
from .softmax import softmax_forward

__all__ = ["SoftmaxOutput", "LinearRegressionOutput", "LogisticRegressionOutput",
           "MAERegressionOutput"]


def _uniform_type(name, in_types):
    t = next((x for x in in_types if x is not None), None)
    for x in in_types:
        if x is not None and np.dtype(x) != np.dtype(t):
            raise MXNetError(f"{name}: this layer requires uniform type; data is "
                             f"{np.dtype(in_types[0]) if in_types[0] is not None else t} "
                             f"but label is {np.dtype(x)}")
    return t


def _label_grad(ctx, label, in_grad=None):
    """The label's gradient: zeros (into its destination when one is given)."""
    if ctx.need_grad is not None and len(ctx.need_grad) > 1 and ctx.need_grad[1]:
        if in_grad is not None and len(in_grad) > 1 and in_grad[1] is not None:
            in_grad[1][...] = 0
            return in_grad[1]
        return ctx.xp.zeros(ctx.in_shapes[1], dtype=label.dtype if label is not None
                            else np.float32)
    return None


def _matrix(dst, i, shape):
    """Destination i viewed with ``shape`` (it is contiguous), or None."""
    if dst is None or dst[i] is None or not dst[i].flags.c_contiguous:
        return None
    return dst[i].reshape(shape)


@register
class SoftmaxOutput(Op):
    """Softmax with a cross-entropy gradient.

    Forward: softmax of ``data`` over axis 1 with ``multi_output`` (label shape
    (batch, prod(rest)) or (batch, rest...)), over the last axis with ``preserve_shape``
    (label: data shape without the last axis), else over everything but axis 0.
    Backward: (softmax - one_hot(label)) * grad_scale / norm, where norm is 1
    (``normalization='null'``), the batch size ('batch') or the number of labels not
    equal to ``ignore_label`` ('valid'); with ``multi_output`` 'null' and 'batch' also
    divide by the number of positions per sample. ``use_ignore`` zeroes the gradient
    of positions labelled ``ignore_label``; ``smooth_alpha`` smooths the one-hot target
    (except with ``multi_output``, where MXNet 1.9.1 ignores it).
    A label of the data's shape (without ``multi_output``) holds target probabilities:
    the gradient is then (softmax - label) * grad_scale, unnormalised.
    With ``out_grad=True`` MXNet 1.9.1 multiplies the gradient by the output itself
    (not the head gradient); that is reproduced.
    """
    name = "SoftmaxOutput"
    float_only = True
    aliases = ("Softmax",)
    params = Schema(grad_scale=Float(1.0), ignore_label=Float(-1.0),
                    multi_output=Bool(False), use_ignore=Bool(False),
                    preserve_shape=Bool(False),
                    normalization=Enum(("batch", "null", "valid"), "null"),
                    out_grad=Bool(False), smooth_alpha=Float(0.0))
    backward_uses = ("in_data", "out_data")
    writes_outputs = True

    def arguments(self, p):
        return ["data", "label"]

    def _label_shape(self, p, d):
        d = tuple(d)
        if p.multi_output:
            if len(d) < 2:
                raise ShapeError(f"SoftmaxOutput(multi_output=True): data must have at "
                                 f"least 2 dimensions, got {d}")
            return (d[0], math.prod(d[2:]))
        if len(d) == 1:
            return (1,)
        return d[:-1]

    def infer_shape(self, p, in_shapes):
        d, lab = in_shapes
        if d is None:
            return [d, lab], [None], []
        want = self._label_shape(p, d)
        if lab is None:
            lab = want
        else:
            lab = tuple(lab)
            ok = lab == want or (p.multi_output and lab == (d[0],) + tuple(d[2:])) \
                or self._soft_label(p, tuple(d), lab)
            if not ok:
                raise ShapeError(f"SoftmaxOutput: label shape inconsistent: provided {lab}, "
                                 f"inferred {want} from data shape {tuple(d)}")
        return [tuple(d), lab], [tuple(d)], []

    def infer_type(self, p, in_types):
        t = _uniform_type(self.name, in_types)
        return [t, t], [t], []

    @staticmethod
    def _soft_label(p, dshape, lshape):
        """A label of the data's own shape holds target probabilities (soft labels)."""
        return (not p.multi_output and len(dshape) >= 2
                and tuple(lshape) == tuple(dshape))

    def _rows(self, p, x):
        """(array view for the softmax, axis) per the layout parameters."""
        if p.multi_output:
            return x.reshape(x.shape[0], x.shape[1], -1), 1
        if p.preserve_shape:
            return x, x.ndim - 1
        if x.ndim == 1:
            return x.reshape(1, -1), 1
        return x.reshape(x.shape[0], -1), 1

    def forward(self, ctx, p, inputs, aux, out=None):
        x, label = inputs
        self.infer_shape(p, [x.shape, label.shape])
        v, axis = self._rows(p, x)
        dst = _matrix(out, 0, v.shape)
        y = softmax_forward(ctx.xp, v, axis, out=dst)
        return [y.reshape(x.shape) if dst is None else out[0]]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux, in_grad=None):
        xp, y, label = ctx.xp, outputs[0], inputs[1]
        if self._soft_label(p, y.shape, label.shape):
            # probabilities as targets: (softmax - label) * grad_scale, which MXNet
            # neither normalises nor masks with ignore_label
            dst = None if in_grad is None else in_grad[0]
            dx = xp.subtract(y, label, out=dst)
            if p.out_grad:              # MXNet's out_grad quirk: scaled by the output
                dx *= y
            dx *= dx.dtype.type(p.grad_scale)
            return [dx, _label_grad(ctx, label)]
        v, axis = self._rows(p, y)
        k = v.shape[axis]
        if p.multi_output:
            lab = label.reshape(v.shape[0], 1, -1)
        elif p.preserve_shape:
            lab = xp.expand_dims(label.reshape(v.shape[:-1]), -1)
        else:
            # MXNet reads the first `rows` labels of a flattened label array.
            lab = label.reshape(-1)[:v.shape[0]].reshape(-1, 1)
        cls_shape = [1] * v.ndim
        cls_shape[axis] = k
        classes = xp.arange(k, dtype=np.int64).reshape(cls_shape)
        onehot = lab.astype(np.int64) == classes
        dst = _matrix(in_grad, 0, v.shape)
        if dst is None:
            grad = v.copy()
        else:
            grad = dst
            grad[...] = v
        if p.smooth_alpha and not p.multi_output:     # MXNet ignores it with multi_output
            off = p.smooth_alpha / (k - 1) if k > 1 else 0.0
            grad -= xp.where(onehot, 1.0 - p.smooth_alpha, off).astype(grad.dtype)
        else:
            grad -= onehot
        keep = lab != p.ignore_label if p.use_ignore or p.normalization == "valid" else None
        if p.use_ignore:
            grad *= keep
        if p.out_grad:
            grad *= v
        positions = v.size // (v.shape[0] * k) if p.multi_output else 1
        if p.normalization == "valid":
            norm = max(int(keep.sum()), 1)
        elif p.normalization == "batch":
            rows = v.shape[0] if (p.multi_output or not p.preserve_shape) else \
                v.size // k
            norm = rows * positions
        else:
            norm = positions
        if p.grad_scale / norm != 1.0:
            grad *= grad.dtype.type(p.grad_scale / norm)
        dx = grad.reshape(y.shape) if dst is None else in_grad[0]
        return [dx, _label_grad(ctx, label, in_grad)]


class _Regression(Op):
    params = Schema(grad_scale=Float(1.0))
    backward_uses = ("in_data", "out_data")

    def arguments(self, p):
        return ["data", "label"]

    def infer_shape(self, p, in_shapes):
        d, lab = in_shapes
        if d is None:
            return [d, lab], [None], []
        d = tuple(d)
        if lab is None:
            lab = (d[0],) if (len(d) == 2 and d[1] == 1) else d
        else:
            lab = tuple(lab)
            if lab[0] != d[0] or math.prod(lab) != math.prod(d):
                raise ShapeError(f"{self.name}: label shape inconsistent: provided {lab}, "
                                 f"data shape {d}")
        return [d, lab], [d], []

    def infer_type(self, p, in_types):
        t = _uniform_type(self.name, in_types)
        return [t, t], [t], []

    def _predict(self, xp, x):
        return x.copy()

    def forward(self, ctx, p, inputs, aux):
        x, label = inputs
        self.infer_shape(p, [x.shape, label.shape])
        return [self._predict(ctx.xp, x)]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux):
        xp, y, label = ctx.xp, outputs[0], inputs[1]
        per_sample = label.size // label.shape[0] if label.ndim else 1
        diff = self._gradient(xp, y, label.reshape(y.shape).astype(y.dtype, copy=False))
        diff *= diff.dtype.type(p.grad_scale / per_sample)
        return [diff, _label_grad(ctx, label)]


@register
class LinearRegressionOutput(_Regression):
    """Identity forward; backward (out - label) * grad_scale / outputs-per-sample
    (a squared loss)."""
    name = "LinearRegressionOutput"

    def _gradient(self, xp, y, label):
        return y - label


@register
class LogisticRegressionOutput(_Regression):
    """Sigmoid forward; backward (out - label) * grad_scale / outputs-per-sample
    (a logistic loss)."""
    name = "LogisticRegressionOutput"

    def _predict(self, xp, x):
        with np.errstate(over="ignore"):
            y = xp.exp(-x)
        y += 1
        return xp.reciprocal(y, out=y)

    def _gradient(self, xp, y, label):
        return y - label


@register
class MAERegressionOutput(_Regression):
    """Identity forward; backward sign(out - label) * grad_scale / outputs-per-sample
    (an absolute loss), where the sign of a zero difference counts as -1."""
    name = "MAERegressionOutput"

    def _gradient(self, xp, y, label):
        # MXNet's sign here is 1 where out > label and -1 everywhere else (out == label
        # included), not numpy.sign's 0
        d = y - label
        one = d.dtype.type(1)
        return xp.where(d > 0, one, -one)

