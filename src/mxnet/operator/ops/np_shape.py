"""Shape operators of MXNet's NumPy mode: ``_np_reshape`` reshapes with NumPy's rules
(a target of ``()`` is a zero-dim array; -1 is inferred; no MXNet special codes);
``_npx_reshape`` with the NumPy extension's codes (``npx_target``)."""
import numpy as np

from ...base import MXNetError
from ..contrib._common import store
from ..params import Bool, Schema, Shape, Str
from ..registry import Op, ShapeError, register


def _np_target(shape, newshape):
    size = int(np.prod(shape, dtype=np.int64))
    known = int(np.prod([d for d in newshape if d != -1], dtype=np.int64))
    if list(newshape).count(-1) > 1 or (-1 in newshape and (known == 0 or size % known)) \
            or (-1 not in newshape and known != size):
        raise ShapeError(f"_np_reshape: cannot reshape array of shape {tuple(shape)} into "
                         f"shape {tuple(newshape)}")
    return tuple(size // known if d == -1 else d for d in newshape)


@register
class NumpyReshape(Op):
    """Reshape with NumPy's rules (``mx.np.reshape`` under autograd)."""
    name = "_np_reshape"
    params = Schema(newshape=Shape(), order=Str("C"))
    backward_uses = ("out_grad",)
    inplace = ((0, 0),)
    writes_outputs = True

    def target(self, p, shape):
        """The output shape for an input of this shape."""
        return _np_target(shape, p.newshape)

    def infer_shape(self, p, in_shapes):
        s = in_shapes[0]
        return [s], [None if s is None else self.target(p, tuple(s))], []

    def forward(self, ctx, p, inputs, aux, out=None):
        y = inputs[0].reshape(self.target(p, inputs[0].shape))
        return [store(out, 0, y)]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux, in_grad=None):
        return [out_grads[0].reshape(ctx.in_shapes[0])]


def npx_target(src, codes, reverse=False):
    """The shape ``npx.reshape`` gives an array of shape src. Each code consumes input
    axes left to right (right to left with reverse): d > 0 is a new axis of size d and
    -1 an inferred one (each consumes one input axis), -2 copies one input axis, -3
    drops a size-1 input axis, -4 copies all remaining input axes, -5 merges two
    input axes, -6 splits one input axis into the next two codes (one may be -1)."""
    src, codes = tuple(src), [int(c) for c in codes]
    if reverse:
        src, codes = src[::-1], codes[::-1]
    out, j, infer, i = [], 0, None, 0

    def take(n):
        nonlocal j
        if j + n > len(src):
            raise MXNetError(f"npx.reshape: codes {tuple(codes)} use more axes than the "
                             f"input shape {src} has")
        j += n
        return src[j - n:j]
    while i < len(codes):
        c = codes[i]
        if c >= 0:
            j = min(j + 1, len(src))     # a new size stands for one input axis, if any
            out.append(c)
        elif c == -1:
            if infer is not None:
                raise MXNetError("npx.reshape: only one -1 may be inferred")
            j = min(j + 1, len(src))
            infer = len(out)
            out.append(-1)
        elif c == -2:
            out.append(take(1)[0])
        elif c == -3:
            if take(1)[0] != 1:
                raise MXNetError(f"npx.reshape: -3 drops an axis of size 1, the input "
                                 f"axis {j - 1} of {src} is not 1")
        elif c == -4:
            out.extend(take(len(src) - j))
        elif c == -5:
            a, b = take(2)
            out.append(a * b)
        elif c == -6:
            if i + 2 >= len(codes):
                raise MXNetError("npx.reshape: -6 needs two sizes after it")
            d = take(1)[0]
            a, b = codes[i + 1], codes[i + 2]
            if a == -1:
                a = d // b if b else 0
            elif b == -1:
                b = d // a if a else 0
            if a * b != d:
                raise MXNetError(f"npx.reshape: cannot split an axis of size {d} into "
                                 f"({codes[i + 1]}, {codes[i + 2]})")
            out.extend([a, b])
            i += 2
        else:
            raise MXNetError(f"npx.reshape: unknown code {c} in {tuple(codes)}")
        i += 1
    size = int(np.prod(src, dtype=np.int64))
    if infer is not None:
        known = int(np.prod([d for k, d in enumerate(out) if k != infer], dtype=np.int64))
        if known == 0 or size % known:
            raise MXNetError(f"npx.reshape: cannot infer -1 reshaping {src} by "
                             f"{tuple(codes)}")
        out[infer] = size // known
    elif int(np.prod(out, dtype=np.int64)) != size:
        raise MXNetError(f"npx.reshape: cannot reshape {src} into {tuple(out)}")
    if reverse:
        out = out[::-1]
    return tuple(out)


@register
class NumpyXReshape(NumpyReshape):
    """Reshape with the NumPy extension's codes (``npx.reshape``, ``mx.sym.npx.reshape``):
    the target is found from the input shape by ``npx_target``."""
    name = "_npx_reshape"
    params = Schema(newshape=Shape(), reverse=Bool(False), order=Str("C"))

    def target(self, p, shape):
        return npx_target(shape, p.newshape, p.reverse)
