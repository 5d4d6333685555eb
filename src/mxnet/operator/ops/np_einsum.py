"""``_npi_einsum``: Einstein summation (``mx.np.einsum``), differentiable.

The subscripts are made explicit first (``...`` becomes letters, an implicit output
the letters used once, in order); the gradient of each operand is then another einsum
of the output gradient with the other operands, broadcast over the operand's letters
that appear nowhere else and summed over its broadcast (size-1) dimensions; an operand
with a repeated letter ('ii') gets that gradient on its diagonal.
"""
import string

from ...base import MXNetError
from ..params import Int, Schema, Str
from ..registry import Op, register
from ..simple import reduce_to_shape


def explicit(subscripts, ndims):
    """(list of operand subscripts, output subscript) with no '...' and an output."""
    subscripts = subscripts.replace(" ", "")
    lhs, arrow, out = subscripts.partition("->")
    ins = lhs.split(",")
    if len(ins) != len(ndims):
        raise MXNetError(f"einsum: {len(ins)} operands in the subscripts "
                         f"{subscripts!r}, {len(ndims)} given")
    free = [c for c in string.ascii_uppercase + string.ascii_lowercase
            if c not in subscripts]
    n_ell = 0
    for sub, nd in zip(ins, ndims):
        if "..." in sub:
            n_ell = max(n_ell, nd - (len(sub) - 3))
    ell = "".join(free[:n_ell])
    fixed = []
    for sub, nd in zip(ins, ndims):
        if "..." in sub:
            k = nd - (len(sub) - 3)
            sub = sub.replace("...", ell[n_ell - k:] if k else "")
        if len(sub) != nd:
            raise MXNetError(f"einsum: subscripts {sub!r} do not match an operand of "
                             f"{nd} dimensions")
        fixed.append(sub)
    if arrow:
        out = out.replace("...", ell)
    else:
        letters = "".join(fixed)
        out = ell + "".join(sorted(c for c in set(letters) if letters.count(c) == 1
                                   and c not in ell))
    return fixed, out


@register
class Einsum(Op):
    """Einstein summation over any number of operands (NumPy's subscripts)."""
    name = "_npi_einsum"
    params = Schema(num_args=Int(low=1), subscripts=Str(""), optimize=Int(0))
    variadic = "num_args"
    backward_uses = ("out_grad", "in_data")
    writes_outputs = True

    def infer_shape(self, p, in_shapes):
        if any(s is None for s in in_shapes):
            return in_shapes, [None], []
        ins, out = explicit(p.subscripts, [len(s) for s in in_shapes])
        sizes = {}
        for sub, shape in zip(ins, in_shapes):
            for c, d in zip(sub, shape):
                if sizes.get(c, 1) != 1 and d != 1 and sizes[c] != d:
                    raise MXNetError(f"einsum: dimension {c!r} has sizes {sizes[c]} and {d}")
                sizes[c] = max(sizes.get(c, 1), d) if d != 0 else 0
        return in_shapes, [tuple(sizes[c] for c in out)], []

    def infer_type(self, p, in_types):
        t = next((x for x in in_types if x is not None), None)
        return [t] * len(in_types), [t], []

    def forward(self, ctx, p, inputs, aux, out=None):
        ins, o = explicit(p.subscripts, [x.ndim for x in inputs])
        res = ctx.xp.einsum(",".join(ins) + "->" + o, *inputs, optimize=bool(p.optimize))
        res = res.astype(inputs[0].dtype, copy=False)
        if out is not None and out[0] is not None:
            out[0][...] = res
            return [out[0]]
        return [ctx.xp.ascontiguousarray(res)]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux, in_grad=None):
        xp, g = ctx.xp, out_grads[0]
        ins, o = explicit(p.subscripts, [x.ndim for x in inputs])
        if g.ndim != len(o):             # a 0-d result's gradient may come as (1,)
            sizes = {c: d for sub, x in zip(ins, inputs) for c, d in zip(sub, x.shape)}
            g = g.reshape([sizes[c] for c in o])
        grads = []
        for i, (sub, x) in enumerate(zip(ins, inputs)):
            if ctx.need_grad is not None and not ctx.need_grad[i]:
                grads.append(None)
                continue
            # a repeated letter ('ii') reads the operand's diagonal: the gradient is
            # worked out for that diagonal (one axis per distinct letter) and written
            # back onto it, zero elsewhere
            diag = "".join(dict.fromkeys(sub))
            shape = tuple(x.shape[sub.index(c)] for c in diag)
            others = [(s, y) for j, (s, y) in enumerate(zip(ins, inputs)) if j != i]
            seen = set(o).union(*[set(s) for s, _ in others])
            kept = "".join(c for c in diag if c in seen)
            spec = ",".join([o] + [s for s, _ in others]) + "->" + kept
            gi = xp.einsum(spec, g, *[y for _, y in others])
            # letters only this operand has: the gradient is constant along them
            if kept != diag:
                gi = gi.reshape([gi.shape[kept.index(c)] if c in seen else 1 for c in diag])
                gi = xp.broadcast_to(gi, [gi.shape[k] if c in seen else shape[k]
                                          for k, c in enumerate(diag)])
            gi = reduce_to_shape(xp, gi, shape).astype(x.dtype, copy=False)
            if diag != sub:
                full = xp.zeros(x.shape, x.dtype)
                full[tuple(xp.arange(x.shape[k]).reshape(
                    [-1 if m == diag.index(c) else 1 for m in range(len(diag))])
                    for k, c in enumerate(sub))] = gi
                gi = full
            grads.append(gi)
        return grads
