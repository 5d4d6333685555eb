"""Higher-order gradients: ``autograd.grad(..., create_graph=True)``.

With ``create_graph=True`` the backward pass is itself recorded: each tape node's
input gradients are computed from NDArray operations (``mx.nd.cos(x) * g`` for
``sin``) while recording, so the gradients it returns are on the tape and can be
differentiated again. The rules below give, per operator, its gradient as such a
computation (MXNet's FGradient written with differentiable operators); each is a few
lines of math and reads only what the operator's node keeps (its inputs or its
outputs, as ``backward_uses`` says).

An operator without a rule still gets the right first gradient (its ordinary
backward), but that gradient is recorded as the output of a node whose own gradient
raises an MXNetError naming the operator: a higher-order gradient through it is
refused, never silently treated as a constant.
"""
import math

from . import tape as _tape
from .base import MXNetError
from .operator.registry import Op

__all__ = ["run_backward_graph", "on_tape", "RULES"]


def _nd():
    from . import ndarray as nd
    return nd


# --- unary elementwise: y = f(x); each entry gives f' from x (in) or y (out) --------
def _d_in(fn):
    return lambda nd, p, x, y: fn(nd, p, x)


def _d_out(fn):
    return lambda nd, p, x, y: fn(nd, p, y)


_LN2, _LN10 = math.log(2.0), math.log(10.0)
_UNARY = {
    "sin": _d_in(lambda nd, p, x: nd.cos(x)),
    "cos": _d_in(lambda nd, p, x: -nd.sin(x)),
    "tan": _d_out(lambda nd, p, y: y * y + 1),
    "sinh": _d_in(lambda nd, p, x: nd.cosh(x)),
    "cosh": _d_in(lambda nd, p, x: nd.sinh(x)),
    "tanh": _d_out(lambda nd, p, y: 1 - y * y),
    "arcsin": _d_in(lambda nd, p, x: nd.rsqrt(1 - x * x)),
    "arccos": _d_in(lambda nd, p, x: -nd.rsqrt(1 - x * x)),
    "arctan": _d_in(lambda nd, p, x: nd.reciprocal(x * x + 1)),
    "arcsinh": _d_in(lambda nd, p, x: nd.rsqrt(x * x + 1)),
    "arccosh": _d_in(lambda nd, p, x: nd.rsqrt(x * x - 1)),
    "arctanh": _d_in(lambda nd, p, x: nd.reciprocal(1 - x * x)),
    "relu": _d_out(lambda nd, p, y: y > 0),
    "log": _d_in(lambda nd, p, x: nd.reciprocal(x)),
    "log2": _d_in(lambda nd, p, x: nd.reciprocal(x * _LN2)),
    "log10": _d_in(lambda nd, p, x: nd.reciprocal(x * _LN10)),
    "square": _d_in(lambda nd, p, x: x * 2),
    "exp": _d_out(lambda nd, p, y: y),
    "expm1": _d_out(lambda nd, p, y: y + 1),
    "log1p": _d_in(lambda nd, p, x: nd.reciprocal(x + 1)),
    "reciprocal": _d_in(lambda nd, p, x: -nd.square(nd.reciprocal(x))),
    "abs": _d_in(lambda nd, p, x: nd.sign(x)),
    "clip": _d_in(lambda nd, p, x: (x >= p.a_min) * (x <= p.a_max)),
    "sigmoid": _d_out(lambda nd, p, y: y * (1 - y)),
    "sqrt": _d_out(lambda nd, p, y: nd.reciprocal(y) * 0.5),
    "cbrt": _d_out(lambda nd, p, y: nd.reciprocal(nd.square(y) * 3)),
    "rsqrt": _d_out(lambda nd, p, y: y * y * y * -0.5),
    "rcbrt": _d_out(lambda nd, p, y: nd.square(nd.square(y)) * (-1.0 / 3)),
    "_power_scalar": _d_in(lambda nd, p, x: (x ** (p.scalar - 1)) * p.scalar),
    "_rdiv_scalar": _d_in(lambda nd, p, x: -nd.square(nd.reciprocal(x)) * p.scalar),
}
# Gradients that are a constant times the head gradient.
_SCALE = {
    "negative": lambda p: -1.0,
    "radians": lambda p: math.pi / 180,
    "degrees": lambda p: 180 / math.pi,
    "_copy": lambda p: 1.0,
    "_plus_scalar": lambda p: 1.0,
    "_minus_scalar": lambda p: 1.0,
    "_rminus_scalar": lambda p: -1.0,
    "_mul_scalar": lambda p: p.scalar,
    "_div_scalar": lambda p: 1.0 / p.scalar,
}


def _unbroadcast(nd, g, shape):
    """g summed down to ``shape`` (the gradient of a broadcast)."""
    shape = tuple(shape)
    if tuple(g.shape) == shape:
        return g
    lead = g.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(lead + i for i, d in enumerate(shape)
                                      if d == 1 and g.shape[lead + i] != 1)
    return nd.reshape(nd.sum(g, axis=axes, keepdims=True), shape=shape)


def _binary(name):
    def rule(nd, node, g, ins, outs):
        a, b = ins if ins is not None else (None, None)
        sa, sb = node.in_shapes
        if name == "add":
            da, db = g, g
        elif name == "sub":
            da, db = g, -g
        elif name == "mul":
            da, db = g * b, g * a
        else:                                   # div
            da, db = g / b, -(g * a) / (b * b)
        return [_unbroadcast(nd, da, sa), _unbroadcast(nd, db, sb)]
    return rule


def _fully_connected(nd, node, g, ins, outs):
    p = node.p
    x, w = ins[0], ins[1]
    xs, hidden = tuple(x.shape), g.shape[-1]
    x2 = nd.reshape(x, shape=(xs[0], -1)) if p.flatten else nd.reshape(x, shape=(-1, xs[-1]))
    g2 = nd.reshape(g, shape=(-1, hidden))
    dx = nd.reshape(nd.dot(g2, w), shape=xs)
    dw = nd.dot(g2, x2, transpose_a=True)
    grads = [dx, dw]
    if not p.no_bias:
        grads.append(nd.sum(g2, axis=0))
    return grads


def _dot(nd, node, g, ins, outs):
    a, b = ins
    p = node.p
    ta, tb = p.transpose_a, p.transpose_b
    if b.ndim != 2 or (a.ndim != 2 and ta):
        return None                             # not written: refused at higher order
    sa = tuple(a.shape)
    a2 = a if a.ndim == 2 else nd.reshape(a, shape=(-1, sa[-1]))
    g2 = g if g.ndim == 2 else nd.reshape(g, shape=(-1, g.shape[-1]))
    if not ta and not tb:       # C = A B
        da, db = nd.dot(g2, b, transpose_b=True), nd.dot(a2, g2, transpose_a=True)
    elif ta and not tb:         # C = A^T B
        da, db = nd.dot(b, g2, transpose_b=True), nd.dot(a2, g2)
    elif not ta and tb:         # C = A B^T
        da, db = nd.dot(g2, b), nd.dot(g2, a2, transpose_a=True)
    else:                       # C = A^T B^T
        da = nd.dot(b, g2, transpose_a=True, transpose_b=True)
        db = nd.dot(g2, a2, transpose_a=True, transpose_b=True)
    return [nd.reshape(da, shape=sa) if a.ndim != 2 else da, db]


def _reshape_back(nd, node, g, ins, outs):
    return [nd.reshape(g, shape=tuple(node.in_shapes[0]))]


def _sum(nd, node, g, ins, outs):
    p, shape = node.p, tuple(node.in_shapes[0])
    if p.axis is None or p.axis == ():
        axes = set(range(len(shape)))
    else:
        axes = {a % len(shape) for a in (p.axis if isinstance(p.axis, tuple) else (p.axis,))}
    if getattr(p, "exclude", False):
        axes = set(range(len(shape))) - axes
    kept = tuple(1 if i in axes else d for i, d in enumerate(shape))
    return [nd.broadcast_to(nd.reshape(g, shape=kept), shape=shape)]


def _broadcast_to(nd, node, g, ins, outs):
    return [_unbroadcast(nd, g, node.in_shapes[0])]


def _dropout(nd, node, g, ins, outs):
    p = node.p
    if not (p.mode == "always" or node.is_train):
        return [g]
    return [g * outs[1].detach()]


RULES = {
    "FullyConnected": _fully_connected,
    "dot": _dot,
    "Reshape": _reshape_back,
    "Flatten": _reshape_back,
    "expand_dims": _reshape_back,
    "sum": _sum,
    "broadcast_to": _broadcast_to,
    "Dropout": _dropout,
}
for _n in ("add", "sub", "mul", "div"):
    RULES[f"elemwise_{_n}"] = RULES[f"broadcast_{_n}"] = _binary(_n)


def _rule(op):
    """The differentiable gradient of ``op``: fn(nd, node, g, ins, outs) -> grads."""
    name = op.name
    if name in RULES:
        return RULES[name]
    if name in _UNARY:
        deriv = _UNARY[name]

        def unary(nd, node, g, ins, outs):
            x = ins[0] if ins is not None else None
            y = outs[0] if outs is not None else None
            return [g * deriv(nd, node.p, x, y)]
        return unary
    if name in _SCALE:
        scale = _SCALE[name]

        def scaled(nd, node, g, ins, outs):
            s = scale(node.p)
            return [g if s == 1.0 else g * s]
        return scaled
    return None


class _NoHigherOrder(Op):
    """Stands for the backward of an operator without a differentiable rule: its
    result is recorded so that differentiating it again fails with a clear error."""
    backward_uses = ()

    def __init__(self, name):
        self.name = f"_backward_{name}"
        self._of = name

    def backward(self, ctx, p, out_grads, inputs, outputs, aux):
        raise MXNetError(f"autograd.grad(create_graph=True): the gradient of operator "
                         f"{self._of} is not differentiable in pymxnet (no higher-order "
                         "rule for it): a higher-order gradient through it is not "
                         "implemented")


def _node_grads(node, ograds, train_mode, need, xp_of):
    """NDArray gradients for the arguments of tape node ``node`` (None where none)."""
    from .ndarray.ndarray import from_data
    from .operator import runner
    nd, op = _nd(), node.op
    if op.zero_grad:
        return [None] * len(node.parents)
    rule = _rule(op)
    g = ograds[0]
    if g is None and rule is not None:
        g = nd.zeros(node.out_meta[0][0], ctx=node.ctx, dtype=node.out_meta[0][1])
    if rule is not None and all(o is None for o in ograds[1:]):
        with _tape._Scope(True, None):
            res = rule(nd, node, g, node.in_data, node.out_data)
        if res is not None:
            return list(res) + [None] * (len(node.parents) - len(res))
    if op.backward is None:
        raise MXNetError(f"Operator {op.name} is non-differentiable because it didn't "
                         "register FGradient attribute.")
    # No rule: the ordinary backward, its results recorded as a node that refuses to
    # be differentiated again.
    raw_og = [None if o is None else o._read() for o in ograds]
    octx = runner.op_context(xp_of(node), node.ctx, node.is_train if train_mode else False,
                             need, node.in_shapes, ["write" if w else "null" for w in need])
    # What the operator does not keep for its backward is passed as Nones, one per
    # input/output, as the first-order pass does (a kernel may index them)
    read = lambda arrs, n: [None] * n if arrs is None else \
        [None if a is None else a._read() for a in arrs]  # noqa: E731
    raw = runner.backward(op, octx, node.p, raw_og, read(node.in_data, len(node.parents)),
                          read(node.out_data, node.n_out), read(node.aux, 0),
                          out_meta=node.out_meta)
    if getattr(op, "borrowed_results", False):       # the op reuses them: keep copies
        raw = [None if r is None else r.copy() for r in raw]
    grads = [None if r is None else from_data(r, node.ctx) for r in raw]
    made = [x for x in grads if x is not None]
    sources = [o for o in ograds if o is not None] + list(node.in_data or []) + \
        list(node.out_data or [])
    if made:
        _tape.record_call(_NoHigherOrder(op.name), None, sources, [], made, node.is_train,
                          node.ctx)
    return grads


def run_backward_graph(heads, head_grads, train_mode, walk):
    """Propagate gradients as recorded NDArray computations; returns
    {id(VarNode): (VarNode, NDArray)}. The tape is kept (create_graph implies
    retain_graph). ``walk``: autograd's tape helpers (heads_and_grads, topo_order,
    wants_grad, xp_of), passed in so this module does not import autograd."""
    _heads_and_grads, _topo_order, _wants_grad, xp_of = walk
    nd = _nd()
    heads, head_grads = _heads_and_grads(heads, head_grads)
    grads = {}

    def accumulate(key, g):
        prev = grads.get(key)
        if prev is None:
            grads[key] = g
        else:
            with _tape._Scope(True, None):
                grads[key] = prev + g

    for h, g in zip(heads, head_grads):
        h._read()
        accumulate((id(h._ag[0]), h._ag[1]),
                   g if g is not None else nd.ones(h.shape, ctx=h.context, dtype=h.dtype))
    result = {}
    for node in _topo_order([h._ag for h in heads]):
        if isinstance(node, _tape.VarNode):
            g = grads.get((id(node), 0))
            if g is not None:
                result[id(node)] = (node, g)
            continue
        ograds = [grads.pop((id(node), i), None) for i in range(node.n_out)]
        if all(o is None for o in ograds):
            continue
        need = [par is not None and _wants_grad(par) for par in node.parents]
        if not any(need):
            continue
        for par, g, wanted in zip(node.parents,
                                  _node_grads(node, ograds, train_mode, need, xp_of), need):
            if wanted and g is not None:
                accumulate((id(par[0]), par[1]), g)
    return result


def on_tape(grad, variable):
    """``grad`` (a gradient returned with create_graph=True) as a tape entry: one that
    does not depend on the variables (the gradient of ``radians``, a constant) is
    recorded as a function of ``variable`` with zero derivative, so differentiating it
    again gives zeros, as in MXNet, instead of "not in a computational graph"."""
    if grad._ag is not None:
        return grad
    from .operator.registry import get_op
    with _tape._Scope(False, None):
        grad = grad.copy()          # never tag the caller's head gradient itself
    op = get_op("zeros_like")
    _tape.record_call(op, op._default_params(), [variable], [], [grad], False,
                      variable.context)
    return grad
