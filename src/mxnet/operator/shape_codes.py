"""MXNet's reshape special codes (0, -1, -2, -3, -4, and reverse=True)."""
from ..base import MXNetError

__all__ = ["infer_reshape"]


def _prod(xs):
    n = 1
    for x in xs:
        n *= x
    return n


def infer_reshape(dshape, shape, reverse=False):
    """The output shape of Reshape(shape) applied to an input of shape dshape.

    0 copies the input dim, -1 infers one dim, -2 copies all remaining dims, -3 merges
    two input dims, -4 splits one input dim into the next two values (one may be -1).
    With reverse=True the codes are matched from the right.
    """
    dshape, shape = list(dshape), list(shape)
    if reverse:
        dshape.reverse()
        shape.reverse()
    out, src, inf_idx, i = [], 0, -1, 0
    try:
        while i < len(shape):
            code = shape[i]
            if code > 0:
                out.append(code)
                src += 1
            elif code == 0:
                out.append(dshape[src])
                src += 1
            elif code == -1:
                if inf_idx >= 0:
                    raise MXNetError(f"Reshape: only one dim can be inferred (-1) in {tuple(shape)}")
                inf_idx = len(out)
                out.append(1)
                src += 1
            elif code == -2:
                out.extend(dshape[src:])
                src = len(dshape)
            elif code == -3:
                out.append(dshape[src] * dshape[src + 1])
                src += 2
            elif code == -4:
                d0 = dshape[src]
                src += 1
                d1, d2 = shape[i + 1], shape[i + 2]
                i += 2
                if d1 == -1:
                    d1 = d0 // d2
                if d2 == -1:
                    d2 = d0 // d1
                if d1 * d2 != d0:
                    raise MXNetError(f"Reshape: -4 split {d0} into {d1}x{d2} does not match")
                out.extend([d1, d2])
            else:
                raise MXNetError(f"Reshape: invalid code {code} in {tuple(shape)}")
            i += 1
    except IndexError:
        raise MXNetError(f"Reshape: target {tuple(shape)} uses more dims than the input "
                         f"shape {tuple(dshape)} has") from None
    if inf_idx >= 0:
        rest = _prod(out[:inf_idx] + out[inf_idx + 1:])
        total = _prod(dshape)
        if rest == 0 or total % rest:
            raise MXNetError(f"Reshape: cannot reshape {tuple(dshape)} into {tuple(shape)}")
        out[inf_idx] = total // rest
    if reverse:
        out.reverse()
    if _prod(out) != _prod(dshape):
        raise MXNetError(f"Reshape: target shape {tuple(out)} (from {tuple(shape)}) has "
                         f"{_prod(out)} elements, input shape {tuple(dshape if not reverse else dshape[::-1])} "
                         f"has {_prod(dshape)}")
    return tuple(out)
