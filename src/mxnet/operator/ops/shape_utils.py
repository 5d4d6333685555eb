"""Shape helpers shared by the shape-manipulation operators (shape_ops, broadcast,
concat_split, slicing, diag) and by indexing and sort.

Shapes may be partial during symbolic inference: an unknown shape is None and an
unknown dimension inside a shape is None.
"""
from ...base import MXNetError
from ..registry import Op, ShapeError

__all__ = ["norm_axis", "prod", "merge_shapes", "legacy", "zeros_if", "ShapeOnlyBackward",
           "check_axes_nonneg", "write_view"]


def write_view(ctx, view, dst):
    """Result of a reshaping operator (``view``: its input seen in the new shape) for a
    write-into-outputs call: ``view`` itself without a destination; nothing to move
    when the destination is the input's own buffer ('inplace'); else a copy into it."""
    if dst is None:
        return view
    if ctx.req is None or ctx.req[0] != "inplace":
        dst[...] = view
    return dst


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


class ShapeOnlyBackward(Op):
    """Ops whose gradient needs only the head gradient and the input shapes."""
    backward_uses = ("out_grad",)


def check_axes_nonneg(opname, axes, ndim, name="axis"):
    for a in axes:
        if not 0 <= a < ndim:
            raise MXNetError(f"{opname}: {name}={tuple(axes)}: index {a} must be in range "
                             f"[0, {ndim})")
    return tuple(axes)
