"""Joining and splitting (part of MXNet's matrix_op family): Concat, stack,
SliceChannel/split and _split_v2, with ``split_v2_params``, the translation of the
front ends' ``split_v2(ary, indices_or_sections, ...)`` arguments."""
import numpy as np

from ...base import MXNetError
from ..params import Bool, Int, Schema, Shape
from ..registry import ShapeError, register
from .shape_utils import ShapeOnlyBackward, legacy, merge_shapes, norm_axis

__all__ = ["split_v2_params"]


def _check_variadic(opname, p, n):
    if p.num_args != n:
        raise MXNetError(f"{opname}: num_args={p.num_args} but {n} inputs were given")
    if n < 1:
        raise MXNetError(f"{opname}: needs at least one input")


def _same_dtype(opname, arrays):
    dt = arrays[0].dtype
    for i, a in enumerate(arrays[1:], 1):
        if a.dtype != dt:
            raise MXNetError(f"{opname}: non-uniform data type, expected {dt}, got "
                             f"{a.dtype} for input {i}")


def _uniform_types(opname, in_types):
    known = next((t for t in in_types if t is not None), None)
    for i, t in enumerate(in_types):
        if t is not None and np.dtype(t) != np.dtype(known):
            raise MXNetError(f"{opname}: non-uniform data type, expected "
                             f"{np.dtype(known).name}, got {np.dtype(t).name} for input {i}")
    return [known] * len(in_types), [known], []


@register
class Concat(ShapeOnlyBackward):
    """Join arrays along axis ``dim``; every other axis must agree."""
    name = "Concat"
    bfloat16_native = True     # moves or casts values: any type alike
    aliases = ("concat",)
    params = Schema(num_args=Int(low=1), dim=Int(1))
    variadic = "num_args"

    def infer_shape(self, p, in_shapes):
        _check_variadic(self.name, p, len(in_shapes))
        known = [s for s in in_shapes if s is not None]
        if not known:
            return in_shapes, [None], []
        ndim = len(known[0])
        axis = norm_axis(self.name, p.dim, ndim, "dim")
        common = [None] * ndim
        for s in known:
            if len(s) != ndim:
                raise ShapeError(f"Concat: all inputs must have the same number of "
                                 f"dimensions, got {[tuple(k) for k in known]}")
            for i, d in enumerate(s):
                if i == axis or d is None:
                    continue
                if common[i] is not None and common[i] != d:
                    raise ShapeError(f"Concat: shapes {[tuple(k) for k in known]} differ "
                                     f"outside the concat axis {axis}")
                common[i] = d
        ins = []
        for s in in_shapes:
            filled = list(common)
            filled[axis] = None if s is None else s[axis]
            ins.append(tuple(filled))
        sizes = [s[axis] for s in ins]
        total = None if any(d is None for d in sizes) else sum(sizes)
        out = list(common)
        out[axis] = total
        return ins, [tuple(out)], []

    def infer_type(self, p, in_types):
        return _uniform_types(self.name, in_types)

    def forward(self, ctx, p, inputs, aux):
        _check_variadic(self.name, p, len(inputs))
        _same_dtype(self.name, inputs)
        shapes = [a.shape for a in inputs]
        self.infer_shape(p, shapes)
        axis = norm_axis(self.name, p.dim, inputs[0].ndim, "dim")
        return [ctx.xp.concatenate(inputs, axis=axis)]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux):
        shapes = ctx.in_shapes
        axis = norm_axis(self.name, p.dim, len(shapes[0]), "dim")
        cuts = np.cumsum([s[axis] for s in shapes])[:-1].tolist()
        return ctx.xp.split(out_grads[0], cuts, axis=axis)


@register
class RNNParamConcat(Concat):
    """Concat for the flat parameter vector of the fused RNN: when the result's length
    is known and some inputs' lengths are not, they share what is left equally (the
    per-direction weights of a layer have one size), so a gluon RNN layer learns its
    input size from the data through the RNN operator."""
    name = "_rnn_param_concat"
    aliases = ()

    def infer_shape_partial(self, p, arg_shapes, out_shapes):
        """Concat's rule on the complete inputs, then the residual split (see the class
        docstring); shapes use 0 for an unknown dimension (executor/partial_shape)."""
        complete = [s if s is not None and all(s) else None for s in arg_shapes]
        ins, outs, aux = self.infer_shape(p, complete)
        out = out_shapes[0] if out_shapes else None
        shaped = [s for s in arg_shapes if s is not None]
        if out is None or not shaped:
            return ins, outs, aux
        axis = norm_axis(self.name, p.dim, len(shaped[0]), "dim")
        if not out[axis]:
            return ins, outs, aux
        unknown = [i for i, s in enumerate(arg_shapes) if s is None or not s[axis]]
        if not unknown:
            return ins, outs, aux
        rest = out[axis] - sum(arg_shapes[i][axis] for i in range(len(arg_shapes))
                               if i not in unknown)
        if rest <= 0 or rest % len(unknown):
            raise ShapeError(f"{self.name}: cannot split the remaining {rest} elements of "
                             f"{tuple(out)} equally among {len(unknown)} inputs of unknown "
                             "length")
        ins = list(ins)
        for i in unknown:
            base = arg_shapes[i] if arg_shapes[i] is not None else out
            ins[i] = tuple(rest // len(unknown) if k == axis else (d or out[k])
                           for k, d in enumerate(base))
        return ins, outs, aux


@register
class Stack(ShapeOnlyBackward):
    """Join arrays of one shape along a new axis ``axis``."""
    name = "stack"
    bfloat16_native = True     # moves or casts values: any type alike
    params = Schema(axis=Int(0), num_args=Int(low=1))
    variadic = "num_args"

    def infer_shape(self, p, in_shapes):
        _check_variadic(self.name, p, len(in_shapes))
        common = None
        for s in in_shapes:
            common = merge_shapes(self.name, common, s)
        if common is None:
            return in_shapes, [None], []
        axis = norm_axis(self.name, p.axis, len(common), extra=1)
        out = common[:axis] + (len(in_shapes),) + common[axis:]
        return [common] * len(in_shapes), [out], []

    def infer_type(self, p, in_types):
        return _uniform_types(self.name, in_types)

    def forward(self, ctx, p, inputs, aux):
        _check_variadic(self.name, p, len(inputs))
        _same_dtype(self.name, inputs)
        self.infer_shape(p, [a.shape for a in inputs])
        axis = norm_axis(self.name, p.axis, inputs[0].ndim, extra=1)
        return [ctx.xp.stack(inputs, axis=axis)]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux):
        g = out_grads[0]
        axis = norm_axis(self.name, p.axis, len(ctx.in_shapes[0]), extra=1)
        lead = (slice(None),) * axis
        return [g[lead + (i,)] for i in range(g.shape[axis])]


def _split_parts(opname, dim, squeeze, sizes):
    if squeeze and any(n != 1 for n in sizes if n is not None):
        raise ShapeError(f"{opname}: squeeze_axis=True needs every output to have size 1 "
                         f"along the split axis, got sizes {sizes}")


class _SplitBase(ShapeOnlyBackward):
    """Shared by SliceChannel and _split_v2: outputs are consecutive pieces along axis."""

    def outputs(self, p):
        return [f"output{i}" for i in range(self._count(p))]

    def _sizes(self, p, dim):
        raise NotImplementedError

    def _out_shape(self, p, s, axis, n):
        if p.squeeze_axis:
            return legacy(tuple(s[:axis]) + tuple(s[axis + 1:]))
        out = list(s)
        out[axis] = n
        return tuple(out)

    def infer_shape(self, p, in_shapes):
        s = in_shapes[0]
        if s is None:
            return in_shapes, [None] * self._count(p), []
        axis = norm_axis(self.name, p.axis, len(s))
        sizes = self._sizes(p, s[axis])
        _split_parts(self.name, s[axis], p.squeeze_axis, sizes)
        return in_shapes, [self._out_shape(p, s, axis, n) for n in sizes], []

    def forward(self, ctx, p, inputs, aux):
        x = inputs[0]
        axis = norm_axis(self.name, p.axis, x.ndim)
        sizes = self._sizes(p, x.shape[axis])
        _split_parts(self.name, x.shape[axis], p.squeeze_axis, sizes)
        cuts = np.cumsum(sizes)[:-1].tolist()
        parts = ctx.xp.split(x, cuts, axis=axis)
        return [a.reshape(self._out_shape(p, x.shape, axis, a.shape[axis])) for a in parts]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux):
        in_shape = tuple(ctx.in_shapes[0])
        axis = norm_axis(self.name, p.axis, len(in_shape))
        sizes = self._sizes(p, in_shape[axis])
        pieces = []
        for g, n in zip(out_grads, sizes):
            shape = list(in_shape)
            shape[axis] = n
            pieces.append(g.reshape(shape))
        return [ctx.xp.concatenate(pieces, axis=axis)]


@register
class SliceChannel(_SplitBase):
    """Split into ``num_outputs`` equal parts along ``axis``; ``squeeze_axis`` drops the
    split axis (each part must then have size 1 there)."""
    name = "SliceChannel"
    bfloat16_native = True     # moves or casts values: any type alike
    aliases = ("split",)
    params = Schema(num_outputs=Int(low=1), axis=Int(1), squeeze_axis=Bool(False))

    def _count(self, p):
        return p.num_outputs

    def _sizes(self, p, dim):
        n = p.num_outputs
        if dim is None:
            return [None] * n
        if dim % n:
            raise ShapeError(f"SliceChannel: the size of axis {p.axis} ({dim}) must be "
                             f"divisible by num_outputs={n}")
        return [dim // n] * n


@register
class SplitV2(_SplitBase):
    """Split along ``axis`` at ``indices`` (starting offsets, the first being 0) or into
    ``sections`` equal parts (the back end of ``mx.nd.split_v2``)."""
    name = "_split_v2"
    params = Schema(indices=Shape(), axis=Int(1), squeeze_axis=Bool(False),
                    sections=Int(0, low=0))

    def _count(self, p):
        return p.sections if p.sections > 0 else len(p.indices)

    def _sizes(self, p, dim):
        n = self._count(p)
        if n < 1:
            raise MXNetError("_split_v2: give indices or sections > 0")
        if dim is None:
            return [None] * n
        if p.sections > 0:
            if dim % n:
                raise ShapeError(f"_split_v2: the size of axis {p.axis} ({dim}) must be "
                                 f"divisible by sections={n}")
            return [dim // n] * n
        bounds = list(p.indices) + [dim]
        sizes = [b - a for a, b in zip(bounds[:-1], bounds[1:])]
        if any(s < 0 for s in sizes) or sum(sizes) != dim:
            raise ShapeError(f"_split_v2: indices={p.indices} do not split an axis of size "
                             f"{dim} (they must start at 0 and increase)")
        return sizes


def split_v2_params(indices_or_sections):
    """The ``_split_v2`` parameters for the front ends' ``split_v2(ary,
    indices_or_sections, ...)`` (numpy.split's convention): an int asks for that many
    equal sections, a tuple gives the indices to split at (the operator wants the
    starting offsets, so 0 goes first). Lists as MXNet stores them in symbol JSON."""
    if isinstance(indices_or_sections, int):
        return {"indices": [], "sections": indices_or_sections}
    if isinstance(indices_or_sections, tuple):
        return {"indices": [0] + list(indices_or_sections), "sections": 0}
    raise ValueError("indices_or_sections must either int or tuple of ints")
