"""Shape-manipulation operators (MXNet's matrix_op family): Flatten, transpose,
expand_dims, squeeze, SwapAxis, reverse, tile, repeat, Concat, stack, SliceChannel,
_split_v2, slice, slice_axis, slice_like, broadcast_to/axis/like, reshape_like, diag,
shape_array, size_array, depth_to_space, space_to_depth, and the input-less creation
operators (_zeros, _ones, _full, _arange, _linspace, _eye, _zeros_without_dtype).

Shapes may be partial during symbolic inference: an unknown shape is None and an
unknown dimension inside a shape is None.
"""
import math

import numpy as np

from ...base import MXNetError
from ..params import (Bool, DType, Field, Float, FloatOrNone, Int, IntOrNone, Schema,
                      Shape, ShapeOrNone)
from ..registry import Op, ShapeError, register
from ..simple import reduce_to_shape

# ----------------------------------------------------------------------------------------
# helpers shared with indexing.py and sort.py


def norm_axis(opname, axis, ndim, name="axis", extra=0):
    """axis as a non-negative int for an ndim-d input; ``extra`` admits positions past
    the last axis (expand_dims and stack insert a new one)."""
    n = ndim + extra
    if not -n <= axis < n:
        raise MXNetError(f"{opname}: {name}={axis} is out of range for a {ndim}-d input "
                         f"(expected {-n} <= {name} < {n})")
    return axis + n if axis < 0 else axis


def prod(dims):
    """Product of dims, None when any is unknown."""
    out = 1
    for d in dims:
        if d is None:
            return None
        out *= d
    return out


def merge_shapes(opname, a, b):
    """The common refinement of two partial shapes (a contradiction is a ShapeError)."""
    if a is None:
        return None if b is None else tuple(b)
    if b is None:
        return tuple(a)
    if len(a) != len(b):
        raise ShapeError(f"{opname}: shapes {tuple(a)} and {tuple(b)} are incompatible")
    out = []
    for x, y in zip(a, b):
        if x is not None and y is not None and x != y:
            raise ShapeError(f"{opname}: shapes {tuple(a)} and {tuple(b)} are incompatible")
        out.append(x if x is not None else y)
    return tuple(out)


def legacy(shape):
    """Legacy shape semantics: a 0-d result is reported as (1,)."""
    return tuple(shape) if len(shape) else (1,)


def zeros_if(ctx, i, shape, dtype):
    """A zero gradient for argument i when it is wanted (index inputs: MXNet writes 0)."""
    if ctx.need_grad is not None and not ctx.need_grad[i]:
        return None
    return ctx.xp.zeros(shape, dtype)


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


class _ShapeOnlyBackward(Op):
    """Ops whose gradient needs only the head gradient and the input shapes."""
    backward_uses = ("out_grad",)


# ----------------------------------------------------------------------------------------
# reshaping and axis permutations


@register
class Flatten(_ShapeOnlyBackward):
    """Collapse every axis but the first: (d0, d1, ..., dk) -> (d0, d1*...*dk)."""
    name = "Flatten"
    aliases = ("flatten",)
    params = Schema()
    inplace = ((0, 0),)

    def infer_shape(self, p, in_shapes):
        s = in_shapes[0]
        if s is None:
            return in_shapes, [None], []
        if len(s) == 0:
            raise ShapeError("Flatten: the input must have at least one dimension")
        return in_shapes, [(s[0], prod(s[1:]))], []

    def forward(self, ctx, p, inputs, aux):
        x = inputs[0]
        return [x.reshape(x.shape[0], -1) if x.ndim else x.reshape(1, 1)]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux):
        return [out_grads[0].reshape(ctx.in_shapes[0])]


def _transpose_axes(p, ndim):
    if not p.axes:
        return tuple(range(ndim - 1, -1, -1))
    axes = tuple(p.axes)
    if len(axes) != ndim:
        raise ShapeError(f"transpose: axes={axes} must give every axis of the {ndim}-d input")
    for a in axes:
        if not 0 <= a < ndim:
            raise MXNetError(f"transpose: axis {a} in axes={axes} must be in range [0, {ndim})")
    if len(set(axes)) != ndim:
        raise MXNetError(f"transpose: axes={axes} repeats an axis")
    return axes


@register
class Transpose(_ShapeOnlyBackward):
    """Permute the axes (reverse them when ``axes`` is empty)."""
    name = "transpose"
    params = Schema(axes=Shape(()))

    def infer_shape(self, p, in_shapes):
        s = in_shapes[0]
        if s is None:
            return in_shapes, [None], []
        return in_shapes, [tuple(s[a] for a in _transpose_axes(p, len(s)))], []

    def forward(self, ctx, p, inputs, aux):
        x = inputs[0]
        return [x.transpose(_transpose_axes(p, x.ndim))]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux):
        axes = _transpose_axes(p, len(ctx.in_shapes[0]))
        return [out_grads[0].transpose(tuple(int(a) for a in np.argsort(axes)))]


@register
class ExpandDims(_ShapeOnlyBackward):
    """Insert a new axis of size 1 at ``axis`` (in [-ndim-1, ndim])."""
    name = "expand_dims"
    params = Schema(axis=Int())
    inplace = ((0, 0),)

    def _shape(self, p, s):
        a = norm_axis(self.name, p.axis, len(s), extra=1)
        return tuple(s[:a]) + (1,) + tuple(s[a:])

    def infer_shape(self, p, in_shapes):
        s = in_shapes[0]
        return in_shapes, [None if s is None else self._shape(p, s)], []

    def forward(self, ctx, p, inputs, aux):
        x = inputs[0]
        return [x.reshape(self._shape(p, x.shape))]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux):
        return [out_grads[0].reshape(ctx.in_shapes[0])]


@register
class Squeeze(_ShapeOnlyBackward):
    """Remove axes of size 1 (all of them, or those in ``axis``); a result with no axes
    left has shape (1,)."""
    name = "squeeze"
    params = Schema(axis=ShapeOrNone(None))
    inplace = ((0, 0),)

    def _shape(self, p, s):
        if p.axis is None:
            if any(d is None for d in s):
                return None
            return legacy([d for d in s if d != 1])
        drop = set()
        for a in p.axis:
            a = norm_axis(self.name, a, len(s))
            if a in drop:
                raise MXNetError(f"squeeze: duplicate value in axis={p.axis}")
            if s[a] is not None and s[a] != 1:
                raise ShapeError(f"squeeze: cannot select an axis to squeeze out which has "
                                 f"size={s[a]} not equal to one (axis {a} of {tuple(s)})")
            drop.add(a)
        return legacy([d for i, d in enumerate(s) if i not in drop])

    def infer_shape(self, p, in_shapes):
        s = in_shapes[0]
        return in_shapes, [None if s is None else self._shape(p, s)], []

    def forward(self, ctx, p, inputs, aux):
        x = inputs[0]
        return [x.reshape(self._shape(p, x.shape))]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux):
        return [out_grads[0].reshape(ctx.in_shapes[0])]


@register
class SwapAxis(_ShapeOnlyBackward):
    """Interchange axes ``dim1`` and ``dim2``."""
    name = "SwapAxis"
    aliases = ("swapaxes",)
    params = Schema(dim1=Int(0), dim2=Int(0))

    def _dims(self, p, ndim):
        return (norm_axis(self.name, p.dim1, ndim, "dim1"),
                norm_axis(self.name, p.dim2, ndim, "dim2"))

    def infer_shape(self, p, in_shapes):
        s = in_shapes[0]
        if s is None:
            return in_shapes, [None], []
        a, b = self._dims(p, len(s))
        out = list(s)
        out[a], out[b] = s[b], s[a]
        return in_shapes, [tuple(out)], []

    def forward(self, ctx, p, inputs, aux):
        x = inputs[0]
        return [x.swapaxes(*self._dims(p, x.ndim))]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux):
        return [out_grads[0].swapaxes(*self._dims(p, len(ctx.in_shapes[0])))]


def _check_axes_nonneg(opname, axes, ndim, name="axis"):
    for a in axes:
        if not 0 <= a < ndim:
            raise MXNetError(f"{opname}: {name}={tuple(axes)}: index {a} must be in range "
                             f"[0, {ndim})")
    return tuple(axes)


@register
class Reverse(_ShapeOnlyBackward):
    """Reverse the order of elements along the given axes (non-negative, as MXNet)."""
    name = "reverse"
    aliases = ("flip",)
    params = Schema(axis=Shape())

    def infer_shape(self, p, in_shapes):
        s = in_shapes[0]
        if s is not None:
            _check_axes_nonneg(self.name, p.axis, len(s))
        return in_shapes, [s], []

    def forward(self, ctx, p, inputs, aux):
        x = inputs[0]
        return [ctx.xp.flip(x, _check_axes_nonneg(self.name, p.axis, x.ndim))]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux):
        return [ctx.xp.flip(out_grads[0], tuple(p.axis))]


# ----------------------------------------------------------------------------------------
# tile, repeat


def _tile_shapes(p, s):
    for r in p.reps:
        if r <= 0:
            raise MXNetError(f"tile: reps={p.reps} must contain only positive values")
    n = max(len(s), len(p.reps))
    s = (1,) * (n - len(s)) + tuple(s)
    r = (1,) * (n - len(p.reps)) + tuple(p.reps)
    return s, r


@register
class Tile(_ShapeOnlyBackward):
    """Repeat the whole array ``reps`` times along each axis (numpy.tile)."""
    name = "tile"
    params = Schema(reps=Shape())

    def infer_shape(self, p, in_shapes):
        s = in_shapes[0]
        if s is None:
            return in_shapes, [None], []
        s, r = _tile_shapes(p, s)
        return in_shapes, [tuple(None if d is None else d * k for d, k in zip(s, r))], []

    def forward(self, ctx, p, inputs, aux):
        _tile_shapes(p, inputs[0].shape)
        return [ctx.xp.tile(inputs[0], p.reps)]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux):
        in_shape = tuple(ctx.in_shapes[0])
        s, r = _tile_shapes(p, in_shape)
        inter = [x for pair in zip(r, s) for x in pair]
        g = out_grads[0].reshape(inter).sum(axis=tuple(range(0, len(inter), 2)))
        return [g.reshape(in_shape)]


@register
class Repeat(_ShapeOnlyBackward):
    """Repeat each element ``repeats`` times along ``axis`` (the flattened array when
    axis is None)."""
    name = "repeat"
    params = Schema(repeats=Int(), axis=IntOrNone(None))

    def _check(self, p, ndim):
        if p.repeats < 0:
            raise MXNetError(f"repeat: repeats={p.repeats} cannot be a negative number")
        return None if p.axis is None else norm_axis(self.name, p.axis, ndim)

    def infer_shape(self, p, in_shapes):
        s = in_shapes[0]
        if s is None:
            return in_shapes, [None], []
        a = self._check(p, len(s))
        if a is None:
            n = prod(s)
            return in_shapes, [(None if n is None else n * p.repeats,)], []
        out = list(s)
        out[a] = None if s[a] is None else s[a] * p.repeats
        return in_shapes, [tuple(out)], []

    def forward(self, ctx, p, inputs, aux):
        x = inputs[0]
        a = self._check(p, x.ndim)
        return [ctx.xp.repeat(x.reshape(-1) if a is None else x, p.repeats, axis=a or 0)]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux):
        in_shape = tuple(ctx.in_shapes[0])
        a = self._check(p, len(in_shape))
        g = out_grads[0]
        if a is None:
            return [g.reshape(-1, p.repeats).sum(axis=1).reshape(in_shape)]
        split = in_shape[:a + 1] + (p.repeats,) + in_shape[a + 1:]
        return [g.reshape(split).sum(axis=a + 1)]


# ----------------------------------------------------------------------------------------
# joining and splitting


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
class Concat(_ShapeOnlyBackward):
    """Join arrays along axis ``dim``; every other axis must agree."""
    name = "Concat"
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
class Stack(_ShapeOnlyBackward):
    """Join arrays of one shape along a new axis ``axis``."""
    name = "stack"
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


class _SplitBase(_ShapeOnlyBackward):
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


# ----------------------------------------------------------------------------------------
# slicing


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
class Slice(_ShapeOnlyBackward):
    """Basic slicing: ``data[begin[0]:end[0]:step[0], ...]`` with Python's rules for
    None and negative entries; axes past ``len(begin)`` are kept whole."""
    name = "slice"
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
class SliceAxis(_ShapeOnlyBackward):
    """``data`` restricted to [begin, end) along ``axis`` (negative values count from
    the end; end=None means the end of the axis)."""
    name = "slice_axis"
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


# ----------------------------------------------------------------------------------------
# broadcasting


def _broadcast_dim(opname, have, want, axis, src, dst):
    if have is None or want is None:
        return want
    if have != want and have != 1:
        raise ShapeError(f"{opname}: cannot broadcast {tuple(src)} to {tuple(dst)} "
                         f"(axis {axis}: {have} is neither 1 nor {want})")
    return want


class _BroadcastBase(Op):
    """Broadcast ops: forward is numpy broadcasting, backward sums back to the input."""
    backward_uses = ("out_grad",)

    def target(self, p, shape, other=None):
        raise NotImplementedError

    def infer_shape(self, p, in_shapes):
        if any(s is None for s in in_shapes):
            return in_shapes, [None], []
        return in_shapes, [self.target(p, *in_shapes)], []

    def infer_type(self, p, in_types):
        return in_types, [in_types[0]], []

    def forward(self, ctx, p, inputs, aux):
        x = inputs[0]
        out = self.target(p, *[a.shape for a in inputs])
        return [ctx.xp.broadcast_to(x, out)]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux):
        g = out_grads[0]
        grads = [reduce_to_shape(ctx.xp, g, ctx.in_shapes[0])]
        for i in range(1, len(ctx.in_shapes)):
            grads.append(zeros_if(ctx, i, ctx.in_shapes[i], g.dtype))
        return grads


@register
class BroadcastTo(_BroadcastBase):
    """Broadcast to ``shape`` (same number of axes; a 0 keeps the input's size)."""
    name = "broadcast_to"
    params = Schema(shape=Shape(()))

    def target(self, p, s, other=None):
        if len(p.shape) != len(s):
            raise ShapeError(f"broadcast_to: shape={p.shape} must have as many axes as the "
                             f"input {tuple(s)}")
        want = tuple(d if w == 0 else w for w, d in zip(p.shape, s))
        return tuple(_broadcast_dim(self.name, d, w, i, s, want)
                     for i, (d, w) in enumerate(zip(s, want)))


@register
class BroadcastAxis(_BroadcastBase):
    """Broadcast axes ``axis`` (each of size 1) to sizes ``size``."""
    name = "broadcast_axis"
    aliases = ("broadcast_axes",)
    params = Schema(axis=Shape(()), size=Shape(()))

    def target(self, p, s, other=None):
        if len(p.axis) != len(p.size):
            raise MXNetError(f"broadcast_axis: axis={p.axis} and size={p.size} must have "
                             "the same length")
        out = list(s)
        for a, n in zip(_check_axes_nonneg(self.name, p.axis, len(s)), p.size):
            if s[a] is not None and s[a] != 1:
                raise ShapeError(f"broadcast_axis: axis {a} of {tuple(s)} must have size 1 "
                                 "to be broadcast")
            out[a] = n
        return tuple(out)


@register
class BroadcastLike(_BroadcastBase):
    """Broadcast ``lhs`` to the shape of ``rhs`` (on ``lhs_axes`` from ``rhs_axes`` when
    given)."""
    name = "broadcast_like"
    params = Schema(lhs_axes=ShapeOrNone(None), rhs_axes=ShapeOrNone(None))

    def arguments(self, p):
        return ["lhs", "rhs"]

    def target(self, p, s, r=None):
        if p.lhs_axes is None and p.rhs_axes is None:
            if len(s) != len(r):
                raise ShapeError(f"broadcast_like: lhs {tuple(s)} and rhs {tuple(r)} must "
                                 "have the same number of axes")
            return tuple(_broadcast_dim(self.name, d, w, i, s, r)
                         for i, (d, w) in enumerate(zip(s, r)))
        if p.lhs_axes is None or p.rhs_axes is None or len(p.lhs_axes) != len(p.rhs_axes):
            raise MXNetError(f"broadcast_like: lhs_axes={p.lhs_axes} and rhs_axes="
                             f"{p.rhs_axes} must both be given, with the same length")
        out = list(s)
        for la, ra in zip(p.lhs_axes, p.rhs_axes):
            la = norm_axis(self.name, la, len(s), "lhs_axes")
            ra = norm_axis(self.name, ra, len(r), "rhs_axes")
            out[la] = _broadcast_dim(self.name, s[la], r[ra], la, s, r)
        return tuple(out)


def _like_range(opname, begin, end, ndim, which):
    b = 0 if begin is None else (begin + ndim if begin < 0 else begin)
    e = ndim if end is None else (end + ndim if end < 0 else end)
    if not (0 <= b < e <= ndim):
        raise MXNetError(f"{opname}: invalid {which}_begin={begin}, {which}_end={end} for "
                         f"a {ndim}-d {which}")
    return b, e


@register
class ReshapeLike(Op):
    """Reshape ``lhs`` so that lhs.shape[lhs_begin:lhs_end] becomes
    rhs.shape[rhs_begin:rhs_end] (the whole shapes by default)."""
    name = "reshape_like"
    params = Schema(lhs_begin=IntOrNone(None), lhs_end=IntOrNone(None),
                    rhs_begin=IntOrNone(None), rhs_end=IntOrNone(None))
    backward_uses = ("out_grad",)
    inplace = ((0, 0),)

    def arguments(self, p):
        return ["lhs", "rhs"]

    def _shape(self, p, l, r):
        lb, le = _like_range(self.name, p.lhs_begin, p.lhs_end, len(l), "lhs")
        rb, re = _like_range(self.name, p.rhs_begin, p.rhs_end, len(r), "rhs")
        out = tuple(l[:lb]) + tuple(r[rb:re]) + tuple(l[le:])
        a, b = prod(l), prod(out)
        if a is not None and b is not None and a != b:
            raise ShapeError(f"reshape_like: cannot reshape lhs {tuple(l)} to {out} "
                             f"(from rhs {tuple(r)}): sizes differ")
        return out

    def infer_shape(self, p, in_shapes):
        l, r = in_shapes
        if l is None or r is None:
            return in_shapes, [None], []
        return in_shapes, [self._shape(p, l, r)], []

    def infer_type(self, p, in_types):
        return in_types, [in_types[0]], []

    def forward(self, ctx, p, inputs, aux):
        l, r = inputs
        return [l.reshape(self._shape(p, l.shape, r.shape))]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux):
        g = out_grads[0]
        return [g.reshape(ctx.in_shapes[0]), zeros_if(ctx, 1, ctx.in_shapes[1], g.dtype)]


# ----------------------------------------------------------------------------------------
# diag, shape/size, depth <-> space


def _diag_axes(p, shape):
    nd = len(shape)
    a1 = norm_axis("diag", p.axis1, nd, "axis1")
    a2 = norm_axis("diag", p.axis2, nd, "axis2")
    if a1 == a2:
        raise MXNetError(f"diag: axis1 and axis2 must differ, both are {a1}")
    d1, d2 = shape[a1], shape[a2]
    if d1 is not None and d2 is not None and (p.k > d2 or -p.k > d1):
        raise MXNetError(f"diag: k={p.k} is out of range for axes of sizes {d1} and {d2}")
    return a1, a2


def _diag_index(xp, k, d1, d2):
    n = max(0, min(d1 + min(k, 0), d2 - max(k, 0)))
    i = xp.arange(n)
    return i - min(k, 0), i + max(k, 0)


@register
class Diag(_ShapeOnlyBackward):
    """A 1-D input becomes a matrix with it on diagonal ``k``; an N-D input gives its
    diagonal ``k`` over (axis1, axis2), appended as the last axis."""
    name = "diag"
    params = Schema(k=Int(0), axis1=Int(0), axis2=Int(1))

    def infer_shape(self, p, in_shapes):
        s = in_shapes[0]
        if s is None:
            return in_shapes, [None], []
        if len(s) == 1:
            n = None if s[0] is None else s[0] + abs(p.k)
            return in_shapes, [(n, n)], []
        a1, a2 = _diag_axes(p, s)
        d1, d2 = s[a1], s[a2]
        n = None if d1 is None or d2 is None else \
            max(0, min(d1 + min(p.k, 0), d2 - max(p.k, 0)))
        rest = tuple(d for i, d in enumerate(s) if i not in (a1, a2))
        return in_shapes, [rest + (n,)], []

    def forward(self, ctx, p, inputs, aux):
        x, xp = inputs[0], ctx.xp
        if x.ndim == 1:
            return [xp.diag(x, p.k)]
        a1, a2 = _diag_axes(p, x.shape)
        return [xp.diagonal(x, p.k, a1, a2)]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux):
        g, xp = out_grads[0], ctx.xp
        in_shape = tuple(ctx.in_shapes[0])
        if len(in_shape) == 1:
            return [xp.diagonal(g, p.k).copy()]
        a1, a2 = _diag_axes(p, in_shape)
        out = xp.zeros(in_shape, g.dtype)
        view = xp.moveaxis(out, (a1, a2), (-2, -1))
        rows, cols = _diag_index(xp, p.k, in_shape[a1], in_shape[a2])
        view[..., rows, cols] = g
        return [out]


@register
class ShapeArray(Op):
    """The input's shape as a 1-D int64 array."""
    name = "shape_array"
    params = Schema()
    zero_grad = True
    backward_uses = ()

    def infer_shape(self, p, in_shapes):
        s = in_shapes[0]
        return in_shapes, [None if s is None else (len(s),)], []

    def infer_type(self, p, in_types):
        return in_types, [np.dtype(np.int64)], []

    def forward(self, ctx, p, inputs, aux):
        return [ctx.xp.asarray(np.array(inputs[0].shape, dtype=np.int64))]


@register
class SizeArray(Op):
    """The input's number of elements as a (1,) int64 array."""
    name = "size_array"
    params = Schema()
    zero_grad = True
    backward_uses = ()

    def infer_shape(self, p, in_shapes):
        return in_shapes, [(1,)], []

    def infer_type(self, p, in_types):
        return in_types, [np.dtype(np.int64)], []

    def forward(self, ctx, p, inputs, aux):
        return [ctx.xp.asarray(np.array([inputs[0].size], dtype=np.int64))]


def _d2s_shape(p, s, inverse):
    name = "space_to_depth" if inverse else "depth_to_space"
    b = p.block_size
    if b <= 0:
        raise MXNetError(f"{name}: block_size={b} must be positive")
    if len(s) != 4:
        raise ShapeError(f"{name}: the input must be 4-D (N, C, H, W), got {tuple(s)}")
    n, c, h, w = s
    if not inverse:
        if c is not None and c % (b * b):
            raise ShapeError(f"{name}: channels ({c}) must be divisible by "
                             f"block_size**2 ({b * b})")
        return (n, None if c is None else c // (b * b),
                None if h is None else h * b, None if w is None else w * b)
    for d, nm in ((h, "height"), (w, "width")):
        if d is not None and d % b:
            raise ShapeError(f"{name}: {nm} ({d}) must be divisible by block_size ({b})")
    return (n, None if c is None else c * b * b,
            None if h is None else h // b, None if w is None else w // b)


def _depth_to_space(x, b):
    n, c, h, w = x.shape
    y = x.reshape(n, b, b, c // (b * b), h, w).transpose(0, 3, 4, 1, 5, 2)
    return y.reshape(n, c // (b * b), h * b, w * b)


def _space_to_depth(x, b):
    n, c, h, w = x.shape
    y = x.reshape(n, c, h // b, b, w // b, b).transpose(0, 3, 5, 1, 2, 4)
    return y.reshape(n, c * b * b, h // b, w // b)


class _DepthSpace(_ShapeOnlyBackward):
    params = Schema(block_size=Int())
    inverse = False

    def infer_shape(self, p, in_shapes):
        s = in_shapes[0]
        return in_shapes, [None if s is None else _d2s_shape(p, s, self.inverse)], []

    def forward(self, ctx, p, inputs, aux):
        x = inputs[0]
        _d2s_shape(p, x.shape, self.inverse)
        f = _space_to_depth if self.inverse else _depth_to_space
        return [f(x, p.block_size)]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux):
        f = _depth_to_space if self.inverse else _space_to_depth
        return [f(out_grads[0], p.block_size)]


@register
class DepthToSpace(_DepthSpace):
    """Move blocks of channels into spatial blocks: (N, C, H, W) ->
    (N, C/b^2, H*b, W*b)."""
    name = "depth_to_space"


@register
class SpaceToDepth(_DepthSpace):
    """Move spatial blocks into channels: (N, C, H, W) -> (N, C*b^2, H/b, W/b)."""
    name = "space_to_depth"
    inverse = True


# ----------------------------------------------------------------------------------------
# creation operators (no inputs; the front end passes ``ctx`` to the dispatcher)

_ALL_TYPES = ("float16", "float32", "float64", "int32", "int64", "int8", "uint8", "bool")
_NUM_TYPES = _ALL_TYPES[:-1]


class _Creation(Op):
    backward_uses = ()
    zero_grad = True

    def arguments(self, p):
        return []

    def shape(self, p):
        raise NotImplementedError

    def infer_shape(self, p, in_shapes):
        return [], [tuple(None if d == 0 else d for d in self.shape(p))], []

    def infer_type(self, p, in_types):
        return [], [np.dtype(self.dtype(p))], []

    def dtype(self, p):
        return p.dtype

    def values(self, xp, p):
        raise NotImplementedError

    def forward(self, ctx, p, inputs, aux):
        return [self.values(ctx.xp, p)]


class _Filled(_Creation):
    fill = 0

    def shape(self, p):
        if not p.shape:
            raise MXNetError(f"{self.name}: a shape is required")
        return p.shape

    def values(self, xp, p):
        return xp.full(self.shape(p), self.fill, dtype=self.dtype(p))


@register
class Zeros(_Filled):
    """An array of zeros."""
    name = "_zeros"
    params = Schema(shape=Shape(()), dtype=DType("float32", enum=_ALL_TYPES))


@register
class Ones(_Filled):
    """An array of ones."""
    name = "_ones"
    params = Schema(shape=Shape(()), dtype=DType("float32", enum=_ALL_TYPES))
    fill = 1


@register
class Full(_Filled):
    """An array filled with ``value``."""
    name = "_full"
    params = Schema(shape=Shape(()), dtype=DType("float32", enum=_ALL_TYPES), value=Float())

    def values(self, xp, p):
        return xp.full(self.shape(p), p.value, dtype=self.dtype(p))


@register
class ZerosWithoutDType(_Filled):
    """Zeros whose dtype is a type flag (-1: float32)."""
    name = "_zeros_without_dtype"
    params = Schema(shape=Shape(()), dtype=Int(-1))

    def dtype(self, p):
        if p.dtype < 0:
            return "float32"
        from ...base import FLAG_TO_DTYPE
        try:
            return FLAG_TO_DTYPE[p.dtype]
        except KeyError:
            raise MXNetError(f"_zeros_without_dtype: unknown dtype flag {p.dtype}") from None


@register
class Arange(_Creation):
    """Values start, start+step, ... below stop (0..start when stop is None), each
    repeated ``repeat`` times."""
    name = "_arange"
    params = Schema(start=Float(), stop=FloatOrNone(None), step=Float(1.0), repeat=Int(1),
                    infer_range=Bool(False), dtype=DType("float32", enum=_NUM_TYPES))

    def _range(self, p):
        if p.infer_range:
            raise MXNetError("_arange: infer_range=True (stop inferred from the output "
                             "shape) is not supported")
        start, stop = (0.0, p.start) if p.stop is None else (p.start, p.stop)
        if p.step == 0:
            raise MXNetError("_arange: step cannot be 0")
        if p.repeat < 1:
            raise MXNetError(f"_arange: repeat={p.repeat} must be positive")
        n = int(math.ceil((stop - start) / p.step))
        if n <= 0:
            raise MXNetError(f"_arange: the range start={start}, stop={stop}, "
                             f"step={p.step} is empty")
        return start, n

    def shape(self, p):
        return (self._range(p)[1] * p.repeat,)

    def values(self, xp, p):
        start, n = self._range(p)
        v = (start + xp.arange(n, dtype=np.float64) * p.step).astype(p.dtype)
        return xp.repeat(v, p.repeat) if p.repeat > 1 else v


@register
class Linspace(_Creation):
    """``num`` evenly spaced values from start to stop (stop excluded when
    endpoint=False)."""
    name = "_linspace"
    params = Schema(start=Float(), stop=Float(), num=Int(low=0), endpoint=Bool(True),
                    dtype=DType("float32", enum=_NUM_TYPES))

    def shape(self, p):
        return (p.num,)

    def values(self, xp, p):
        return xp.linspace(p.start, p.stop, p.num, endpoint=p.endpoint).astype(p.dtype)


@register
class Eye(_Creation):
    """An N x M matrix (M=0 means N) with ones on diagonal k."""
    name = "_eye"
    params = Schema(N=Int(low=0), M=Int(0, low=0), k=Int(0),
                    dtype=DType("float32", enum=_NUM_TYPES))

    def shape(self, p):
        return (p.N, p.M or p.N)

    def values(self, xp, p):
        return xp.eye(p.N, p.M or p.N, p.k, dtype=p.dtype)
