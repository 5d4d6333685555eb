"""Multi-head attention kernels over MXNet's interleaved projections (contrib):
``interleaved_matmul_selfatt_qk``, ``interleaved_matmul_selfatt_valatt``,
``interleaved_matmul_encdec_qk`` and ``interleaved_matmul_encdec_valatt``.

Self-attention input (seq, batch, heads * 3 * d) holds, per head, the query, key and
value projections side by side ((heads, 3, d) on the last axis); encoder-decoder keys
and values come as (seq, batch, heads * 2 * d) and queries as (seq, batch, heads * d).
Scores are (batch * heads, q_seq, k_seq), queries scaled by 1/sqrt(d); attended values
come back as (q_seq, batch, heads * d).
"""
import math

from ..params import Int, Schema
from ..registry import Op, ShapeError, register
from ._common import store

__all__ = ["SelfAttQK", "SelfAttValAtt", "EncDecQK", "EncDecValAtt"]


def _split(name, x, heads, parts):
    """(seq, batch, heads*parts*d) -> (batch*heads, seq, parts, d) view order."""
    S, B, E = x.shape
    if E % (heads * parts):
        raise ShapeError(f"{name}: last dimension {E} is not a multiple of heads x {parts} "
                         f"({heads} x {parts})")
    d = E // (heads * parts)
    return x.reshape(S, B, heads, parts, d).transpose(1, 2, 0, 3, 4).reshape(
        B * heads, S, parts, d), d


def _merge(x, heads):
    """(batch*heads, seq, d) -> (seq, batch, heads*d)."""
    BH, S, d = x.shape
    return x.reshape(BH // heads, heads, S, d).transpose(2, 0, 1, 3).reshape(
        S, BH // heads, heads * d)


class _Interleaved(Op):
    writes_outputs = True
    params = Schema(heads=Int(low=1))
    backward_uses = ("out_grad", "in_data")

    def _check3(self, shape, what):
        if shape is not None and len(shape) != 3:
            raise ShapeError(f"{self.name}: {what} must be 3-D (seq, batch, features), got "
                             f"{tuple(shape)}")


def _scatter_parts(xp, grads, shape, heads, parts):
    """Per-part gradients (batch*heads, seq, d) (None: zero) -> (seq, batch, E)."""
    S, B, E = shape
    d = E // (heads * parts)
    dt = next(g.dtype for g in grads if g is not None)
    full = xp.zeros((B, heads, S, parts, d), dt)
    for i, g in enumerate(grads):
        if g is not None:
            full[:, :, :, i, :] = g.reshape(B, heads, S, d)
    return full.transpose(2, 0, 1, 3, 4).reshape(S, B, E)


@register
class SelfAttQK(_Interleaved):
    """Attention scores q k^T / sqrt(d) of interleaved self-attention projections."""
    name = "_contrib_interleaved_matmul_selfatt_qk"

    def arguments(self, p):
        return ["queries_keys_values"]

    def infer_shape(self, p, in_shapes):
        s = in_shapes[0]
        self._check3(s, "queries_keys_values")
        if s is None:
            return [None], [None], []
        if s[2] % (p.heads * 3):
            raise ShapeError(f"{self.name}: last dimension {s[2]} is not a multiple of "
                             f"3 x heads ({p.heads})")
        return [tuple(s)], [(s[1] * p.heads, s[0], s[0])], []

    def forward(self, ctx, p, inputs, aux, out=None):
        xp = ctx.xp
        self.infer_shape(p, [inputs[0].shape])
        x, d = _split(self.name, inputs[0], p.heads, 3)
        q = x[:, :, 0] / x.dtype.type(math.sqrt(d))
        return [store(out, 0, xp.matmul(q, x[:, :, 1].transpose(0, 2, 1)))]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux, in_grad=None):
        xp = ctx.xp
        x, d = _split(self.name, inputs[0], p.heads, 3)
        g = out_grads[0]
        s = x.dtype.type(math.sqrt(d))
        gq = xp.matmul(g, x[:, :, 1]) / s
        gk = xp.matmul(g.transpose(0, 2, 1), x[:, :, 0]) / s
        return [store(in_grad, 0, _scatter_parts(xp, [gq, gk, None], inputs[0].shape,
                                                 p.heads, 3))]


@register
class SelfAttValAtt(_Interleaved):
    """Attention-weighted values of interleaved self-attention projections."""
    name = "_contrib_interleaved_matmul_selfatt_valatt"

    def arguments(self, p):
        return ["queries_keys_values", "attention"]

    def infer_shape(self, p, in_shapes):
        s, a = in_shapes
        self._check3(s, "queries_keys_values")
        if s is None:
            return list(in_shapes), [None], []
        att = (s[1] * p.heads, s[0], s[0])
        if a is not None and tuple(a) != att:
            raise ShapeError(f"{self.name}: attention must be {att}, got {tuple(a)}")
        return [tuple(s), att], [(s[0], s[1], s[2] // 3)], []

    def forward(self, ctx, p, inputs, aux, out=None):
        xp = ctx.xp
        self.infer_shape(p, [a.shape for a in inputs])
        x, _ = _split(self.name, inputs[0], p.heads, 3)
        return [store(out, 0, _merge(xp.matmul(inputs[1], x[:, :, 2]), p.heads))]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux, in_grad=None):
        xp = ctx.xp
        x, d = _split(self.name, inputs[0], p.heads, 3)
        att = inputs[1]
        g, _ = _split(self.name, out_grads[0], p.heads, 1)
        g = g[:, :, 0]
        gv = xp.matmul(att.transpose(0, 2, 1), g)
        gatt = xp.matmul(g, x[:, :, 2].transpose(0, 2, 1))
        return [store(in_grad, 0, _scatter_parts(xp, [None, None, gv], inputs[0].shape,
                                                 p.heads, 3)),
                store(in_grad, 1, gatt)]


@register
class EncDecQK(_Interleaved):
    """Attention scores q k^T / sqrt(d) of decoder queries against interleaved encoder
    keys/values."""
    name = "_contrib_interleaved_matmul_encdec_qk"

    def arguments(self, p):
        return ["queries", "keys_values"]

    def infer_shape(self, p, in_shapes):
        q, kv = in_shapes
        self._check3(q, "queries")
        self._check3(kv, "keys_values")
        if q is None or kv is None:
            return list(in_shapes), [None], []
        if kv[2] != 2 * q[2] or kv[1] != q[1]:
            raise ShapeError(f"{self.name}: keys_values {tuple(kv)} must be (seq, "
                             f"{q[1]}, {2 * q[2]}) for queries {tuple(q)}")
        return [tuple(q), tuple(kv)], [(q[1] * p.heads, q[0], kv[0])], []

    def forward(self, ctx, p, inputs, aux, out=None):
        xp = ctx.xp
        self.infer_shape(p, [a.shape for a in inputs])
        q, d = _split(self.name, inputs[0], p.heads, 1)
        kv, _ = _split(self.name, inputs[1], p.heads, 2)
        qs = q[:, :, 0] / q.dtype.type(math.sqrt(d))
        return [store(out, 0, xp.matmul(qs, kv[:, :, 0].transpose(0, 2, 1)))]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux, in_grad=None):
        xp = ctx.xp
        q, d = _split(self.name, inputs[0], p.heads, 1)
        kv, _ = _split(self.name, inputs[1], p.heads, 2)
        g = out_grads[0]
        s = q.dtype.type(math.sqrt(d))
        gq = xp.matmul(g, kv[:, :, 0]) / s
        gk = xp.matmul(g.transpose(0, 2, 1), q[:, :, 0]) / s
        return [store(in_grad, 0, _scatter_parts(xp, [gq], inputs[0].shape, p.heads, 1)),
                store(in_grad, 1, _scatter_parts(xp, [gk, None], inputs[1].shape, p.heads,
                                                 2))]


@register
class EncDecValAtt(_Interleaved):
    """Attention-weighted encoder values (interleaved keys/values)."""
    name = "_contrib_interleaved_matmul_encdec_valatt"

    def arguments(self, p):
        return ["keys_values", "attention"]

    def infer_shape(self, p, in_shapes):
        kv, a = in_shapes
        self._check3(kv, "keys_values")
        if kv is None or a is None:
            return list(in_shapes), [None], []
        if len(a) != 3 or a[0] != kv[1] * p.heads or a[2] != kv[0]:
            raise ShapeError(f"{self.name}: attention {tuple(a)} must be "
                             f"({kv[1] * p.heads}, q_seq, {kv[0]})")
        return [tuple(kv), tuple(a)], [(a[1], kv[1], kv[2] // 2)], []

    def forward(self, ctx, p, inputs, aux, out=None):
        xp = ctx.xp
        self.infer_shape(p, [a.shape for a in inputs])
        kv, _ = _split(self.name, inputs[0], p.heads, 2)
        return [store(out, 0, _merge(xp.matmul(inputs[1], kv[:, :, 1]), p.heads))]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux, in_grad=None):
        xp = ctx.xp
        kv, _ = _split(self.name, inputs[0], p.heads, 2)
        att = inputs[1]
        g, _ = _split(self.name, out_grads[0], p.heads, 1)
        g = g[:, :, 0]
        gv = xp.matmul(att.transpose(0, 2, 1), g)
        gatt = xp.matmul(g, kv[:, :, 1].transpose(0, 2, 1))
        return [store(in_grad, 0, _scatter_parts(xp, [None, gv], inputs[0].shape, p.heads,
                                                 2)),
                store(in_grad, 1, gatt)]
