"""Elementwise operators of MXNet's NumPy interface that the classic operator set lacks:
``arctan2``, ``copysign`` (both differentiable), the integer functions ``lcm`` and the
bitwise family (``nan_to_num`` is in elemwise_unary). Names follow MXNet 1.9.1's ``_npi_*`` operators;
``mx.np`` front ends call them.
"""
from ..params import Int, Schema
from ..simple import binary, unary


def _same(xp, r, like):
    return r if r.dtype == like.dtype else r.astype(like.dtype)


# arctan2(y, x): d/dy = x / (x^2 + y^2), d/dx = -y / (x^2 + y^2)
binary("_npi_arctan2",
       lambda xp, a, b, p: _same(xp, xp.arctan2(a, b), a),
       grad_lhs=lambda xp, g, a, b, y, p: g * b / (a * a + b * b),
       grad_rhs=lambda xp, g, a, b, y, p: -g * a / (a * a + b * b),
       broadcast=True, doc="Elementwise arc tangent of lhs / rhs choosing the quadrant.")

# copysign(a, b) = |a| with b's sign: d/da = sign(a) * sign(b) (per NumPy's signbit),
# no gradient flows to b
binary("_npi_copysign",
       lambda xp, a, b, p: _same(xp, xp.copysign(a, b), a),
       grad_lhs=lambda xp, g, a, b, y, p: g * xp.where(xp.signbit(a) == xp.signbit(b),
                                                        1, -1).astype(g.dtype),
       grad_rhs=lambda xp, g, a, b, y, p: xp.zeros_like(g),
       broadcast=True, doc="Elementwise magnitude of lhs with the sign of rhs.")

binary("_npi_lcm", lambda xp, a, b, p: xp.lcm(a, b), broadcast=True,
       doc="Elementwise least common multiple of integers.")
binary("_npi_bitwise_and", lambda xp, a, b, p: xp.bitwise_and(a, b), broadcast=True,
       doc="Elementwise bitwise AND of integer (or bool) arrays.")
binary("_npi_bitwise_or", lambda xp, a, b, p: xp.bitwise_or(a, b), broadcast=True,
       doc="Elementwise bitwise OR of integer (or bool) arrays.")
binary("_npi_bitwise_xor", lambda xp, a, b, p: xp.bitwise_xor(a, b), broadcast=True,
       doc="Elementwise bitwise XOR of integer (or bool) arrays.")
unary("_npi_bitwise_not", lambda xp, x, p: xp.invert(x), inplace=False,
      doc="Elementwise bitwise NOT (logical NOT for bool).")


# NumPy's rounding (half to even at the given decimal), which MXNet's classic
# round/rint do not do; its gradient is zero, as MXNet's _npi_around's
unary("_npi_around", lambda xp, x, p: xp.around(x, p.decimals), inplace=False,
      params=Schema(decimals=Int(0)), zero_grad=True,
      doc="Round to the given number of decimals, half to even (NumPy's around).")
