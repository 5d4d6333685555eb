"""Slicing (part of MXNet's matrix_op family): slice/crop, slice_axis and
slice_like."""
import numpy as np

from ...base import MXNetError
from ..params import Field, Float, Int, IntOrNone, Schema, Shape
from ..registry import Op, ShapeError, register
from .shape_utils import ShapeOnlyBackward, norm_axis, write_view, zeros_if


class OptIntTuple(Field):
    """A tuple whose entries are ints or None (slice's begin/end/step)."""
    kind = "Shape(tuple) with None entries"

    def convert(self, v):
        if v is None:
            return ()
        if isinstance(v, (int, np.integer)):
            return (int(v),)
        out = []
        for x in v:
            if x is None:
                out.append(None)
            elif isinstance(x, (int, np.integer)) or (isinstance(x, float) and x.is_integer()):
                out.append(int(x))
            else:
                raise ValueError(f"{x!r} is not an int or None")
        return tuple(out)


def _slice_key(p, shape):
    begin, end, step = p.begin, p.end, p.step
    if len(begin) != len(end):
        raise MXNetError(f"slice: begin={begin} and end={end} must have the same length")
    if step and len(step) != len(begin):
        raise MXNetError(f"slice: step={step} must be empty or as long as begin={begin}")
    if len(begin) > len(shape):
        raise MXNetError(f"slice: begin={begin} has more entries than the input has "
                         f"dimensions ({tuple(shape)})")
    key = []
    for i, (b, e) in enumerate(zip(begin, end)):
        s = step[i] if step else None
        if s == 0:
            raise MXNetError(f"slice: step[{i}] cannot be 0")
        key.append(slice(b, e, s))
    return tuple(key)


def _sliced_dim(sl, d):
    return None if d is None else len(range(*sl.indices(d)))


@register
class Slice(ShapeOnlyBackward):
    """Basic slicing: ``data[begin[0]:end[0]:step[0], ...]`` with Python's rules for
    None and negative entries; axes past ``len(begin)`` are kept whole."""
    name = "slice"
    bfloat16_native = True     # moves or casts values: any type alike
    named_inputs = False
    narrows_input_axes = True   # an axis of unknown length stays unknown (partial_shape)
    aliases = ("crop",)
    params = Schema(begin=OptIntTuple(), end=OptIntTuple(), step=OptIntTuple(()))

    def infer_shape(self, p, in_shapes):
        s = in_shapes[0]
        if s is None:
            return in_shapes, [None], []
        key = _slice_key(p, s)
        out = tuple(_sliced_dim(k, d) for k, d in zip(key, s)) + tuple(s[len(key):])
        return in_shapes, [out], []

    def forward(self, ctx, p, inputs, aux):
        x = inputs[0]
        return [x[_slice_key(p, x.shape)]]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux):
        g = out_grads[0]
        in_shape = ctx.in_shapes[0]
        out = ctx.xp.zeros(in_shape, g.dtype)
        out[_slice_key(p, in_shape)] = g
        return [out]


def _axis_range(p, shape):
    axis = norm_axis("slice_axis", p.axis, len(shape))
    dim = shape[axis]
    if dim is None:
        return axis, None
    b = p.begin + dim if p.begin < 0 else p.begin
    e = dim if p.end is None else (p.end + dim if p.end < 0 else p.end)
    if not (0 <= b < e <= dim):
        raise MXNetError(f"slice_axis: invalid begin={p.begin}, end={p.end} for axis "
                         f"{axis} of size {dim}")
    return axis, slice(b, e)


@register
class SliceAxis(ShapeOnlyBackward):
    """``data`` restricted to [begin, end) along ``axis`` (negative values count from
    the end; end=None means the end of the axis)."""
    name = "slice_axis"
    bfloat16_native = True     # moves or casts values: any type alike
    named_inputs = False
    narrows_input_axes = True   # an axis of unknown length stays unknown (partial_shape)
    params = Schema(axis=Int(), begin=Int(), end=IntOrNone())

    def infer_shape(self, p, in_shapes):
        s = in_shapes[0]
        if s is None:
            return in_shapes, [None], []
        axis, sl = _axis_range(p, s)
        out = list(s)
        out[axis] = None if sl is None else sl.stop - sl.start
        return in_shapes, [tuple(out)], []

    def forward(self, ctx, p, inputs, aux):
        x = inputs[0]
        axis, sl = _axis_range(p, x.shape)
        return [x[(slice(None),) * axis + (sl,)]]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux):
        g = out_grads[0]
        in_shape = ctx.in_shapes[0]
        axis, sl = _axis_range(p, in_shape)
        out = ctx.xp.zeros(in_shape, g.dtype)
        out[(slice(None),) * axis + (sl,)] = g
        return [out]


def _like_key(p, dshape, lshape):
    """Per axis of data, the size to keep (None: the whole axis)."""
    nd = len(dshape)
    if not p.axes:
        if len(lshape) != nd:
            raise ShapeError(f"slice_like: data {tuple(dshape)} and shape_like "
                             f"{tuple(lshape)} must have the same number of dimensions "
                             "when axes is empty")
        axes = range(nd)
    else:
        axes = [norm_axis("slice_like", a, nd, "axes") for a in p.axes]
    keep = [None] * nd
    for a in axes:
        if a >= len(lshape):
            raise ShapeError(f"slice_like: axis {a} is beyond shape_like {tuple(lshape)}")
        want, have = lshape[a], dshape[a]
        if want is not None and have is not None and want > have:
            raise ShapeError(f"slice_like: shape_like {tuple(lshape)} is larger than data "
                             f"{tuple(dshape)} along axis {a}")
        keep[a] = want if want is not None else -1
    return keep


@register
class SliceLike(Op):
    """Slice ``data`` to the shape of ``shape_like`` on ``axes`` (all axes when empty),
    starting at 0."""
    name = "slice_like"
    params = Schema(axes=Shape(()))
    backward_uses = ("out_grad",)

    def arguments(self, p):
        return ["data", "shape_like"]

    def infer_shape(self, p, in_shapes):
        d, l = in_shapes
        if d is None or l is None:
            return in_shapes, [None], []
        keep = _like_key(p, d, l)
        out = tuple(dd if k is None else (None if k == -1 else k) for dd, k in zip(d, keep))
        return in_shapes, [out], []

    def infer_type(self, p, in_types):
        return in_types, [in_types[0]], []

    def forward(self, ctx, p, inputs, aux):
        x, like = inputs
        keep = _like_key(p, x.shape, like.shape)
        return [x[tuple(slice(None) if k is None else slice(0, k) for k in keep)]]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux):
        g = out_grads[0]
        dshape, lshape = ctx.in_shapes
        keep = _like_key(p, dshape, lshape)
        out = ctx.xp.zeros(dshape, g.dtype)
        out[tuple(slice(None) if k is None else slice(0, k) for k in keep)] = g
        return [out, zeros_if(ctx, 1, lshape, g.dtype)]


def _assign_target(p, lshape):
    """The shape of lhs[begin:end:step], what the assigned value must have."""
    key = _slice_key(p, lshape)
    return key, tuple(_sliced_dim(k, d) for k, d in zip(key, lshape)) + tuple(lshape[len(key):])


class _SliceAssignBase(Op):
    """lhs with the region lhs[begin:end:step] replaced (not differentiable, as in
    MXNet); written in place when the output is lhs itself (``out=lhs``)."""
    inplace = ((0, 0),)
    writes_outputs = True
    backward_uses = ()

    def _value(self, p, inputs):
        raise NotImplementedError

    def forward(self, ctx, p, inputs, aux, out=None):
        lhs = inputs[0]
        res = lhs.copy() if out is None or out[0] is None else write_view(ctx, lhs, out[0])
        res[_slice_key(p, lhs.shape)] = self._value(p, inputs)
        return [res]


@register
class SliceAssign(_SliceAssignBase):
    """``lhs`` with lhs[begin:end:step] set to ``rhs`` (of that region's shape)."""
    name = "_slice_assign"
    aliases = ("_crop_assign",)
    params = Schema(begin=OptIntTuple(), end=OptIntTuple(), step=OptIntTuple(()))

    def arguments(self, p):
        return ["lhs", "rhs"]

    def infer_shape(self, p, in_shapes):
        lhs, rhs = in_shapes
        if lhs is None:
            return in_shapes, [None], []
        _, want = _assign_target(p, lhs)
        if rhs is not None and None not in want and tuple(rhs) != want:
            raise ShapeError(f"{self.name}: rhs of shape {tuple(rhs)} does not fit the region "
                             f"{want} of lhs {tuple(lhs)} (begin={p.begin}, end={p.end}, "
                             f"step={p.step})")
        return [tuple(lhs), want], [tuple(lhs)], []

    def _value(self, p, inputs):
        return inputs[1]


@register
class SliceAssignScalar(_SliceAssignBase):
    """``data`` with data[begin:end:step] set to ``scalar``."""
    name = "_slice_assign_scalar"
    aliases = ("_crop_assign_scalar",)
    params = Schema(scalar=Float(0.0), begin=OptIntTuple(), end=OptIntTuple(),
                    step=OptIntTuple(()))

    def infer_shape(self, p, in_shapes):
        d = in_shapes[0]
        if d is not None:
            _assign_target(p, d)
        return [d], [d], []

    def _value(self, p, inputs):
        return inputs[0].dtype.type(p.scalar)
