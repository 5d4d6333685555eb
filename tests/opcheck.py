"""The operator check (Chainer-style): a test states an operator call, its inputs and a
NumPy reference; ``check`` derives the rest.

    CASES = [Case("hard_sigmoid", lambda x: np.clip(0.2 * x + 0.5, 0, 1), [(3, 4)])]

    @pytest.mark.parametrize("case, shapes, dtype, ctx", opcheck.params(CASES))
    def test_ops(case, shapes, dtype, ctx):
        opcheck.check(case, shapes, dtype, ctx)

For every shape set x dtype x available context (``mx.gpu(i)`` too when there is one,
which makes it MXNet's check_consistency for free), ``check`` runs:

1. the imperative forward ``mx.nd.<op>`` against the reference (computed in float64);
2. the symbolic ``mx.sym.<op>`` through ``simple_bind``: forward, then backward with
   random head gradients, once with grad_req 'write' and once with 'add' (gradient
   buffers pre-filled, so 'add' must accumulate onto them);
3. those gradients against central differences of the imperative operator in float64.

Inputs come from a RandomState whose seed is derived from the case and logged (set
MXNET_TEST_SEED to vary it); a failure message names the seed.
"""
import logging
import os
import zlib

import numpy as np

import mxnet as mx

__all__ = ["Case", "check", "params", "contexts"]
log = logging.getLogger("opcheck")

_F16, _F32, _F64 = np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)
_FWD_TOL = {_F16: 2e-2, _F32: 1e-5, _F64: 1e-10}
_GRAD_TOL = {_F16: 5e-2, _F32: 2e-3, _F64: 1e-5}


def uniform(low=-2.0, high=2.0):
    """Sampler of values in [low, high)."""
    return lambda shape, rng: rng.uniform(low, high, shape)


def away_from(points, low=-2.0, high=2.0, margin=0.05):
    """Sampler in [low, high) keeping ``margin`` away from ``points`` (kinks)."""
    def sample(shape, rng):
        x = rng.uniform(low, high, shape)
        for pt in points:
            near = np.abs(x - pt) < margin
            x[near] = pt + np.where(x[near] >= pt, margin, -margin)
        return x
    return sample


class Case:
    """One operator call to check.

    op: the operator's name (in mx.nd.op / mx.sym.op); ref(*inputs, **kwargs): the NumPy
    reference (float64 inputs; an array or a list of arrays); shapes: a list of shape
    sets (one shape per input); kwargs: the operator's parameters (given to ref too
    unless ``ref_kwargs=False``); sample(shape, rng): input values (or a list, one
    sampler per input); dtypes: those the
    operator allows; grad: check gradients (False for non-differentiable ops); grad_inputs:
    positions of the inputs that get gradients (default all); tol: scale on the
    per-dtype tolerances; eps: the finite-difference step.
    """

    def __init__(self, op, ref, shapes, kwargs=None, sample=None,
                 dtypes=("float16", "float32", "float64"), grad=True, grad_inputs=None,
                 tol=1.0, eps=1e-6, ref_kwargs=True, name=None):
        self.op, self.ref, self.shapes = op, ref, [list(map(tuple, s)) for s in shapes]
        self.kwargs = dict(kwargs or {})
        self.sample = sample or uniform()
        self.dtypes = [np.dtype(d) for d in dtypes]
        self.grad, self.grad_inputs, self.tol, self.eps = grad, grad_inputs, tol, eps
        self.ref_kwargs = ref_kwargs
        self.name = name or op + "".join(f"-{k}={v}" for k, v in self.kwargs.items())

    def __repr__(self):
        return self.name


def contexts():
    """The contexts to check on: the CPU, and every GPU."""
    return [mx.cpu()] + [mx.gpu(i) for i in range(mx.context.num_gpus())]


def params(cases, dtypes=None):
    """pytest parameters (case, shapes, dtype, ctx) for every combination."""
    import pytest
    out = []
    for case in cases:
        for shapes in case.shapes:
            for dt in case.dtypes:
                if dtypes is not None and dt.name not in dtypes:
                    continue
                for ctx in contexts():
                    out.append(pytest.param(case, shapes, dt, ctx,
                                            id=f"{case.name}-{shapes}-{dt.name}-{ctx}"))
    return out


def _listed(x):
    return list(x) if isinstance(x, (list, tuple)) else [x]


def _close(got, want, tol, what):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    assert got.shape == want.shape, f"{what}: shape {got.shape}, expected {want.shape}"
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol, equal_nan=True, err_msg=what)


def check(case, shapes, dtype, ctx):
    """Run every check of ``case`` for one shape set, dtype and context."""
    dtype = np.dtype(dtype)
    seed = zlib.crc32(f"{case.name}{shapes}{dtype}".encode()) ^ \
        int(os.environ.get("MXNET_TEST_SEED", "0"))
    log.info("opcheck %s shapes=%s dtype=%s ctx=%s seed=%d", case.name, shapes, dtype,
             ctx, seed)
    where = f"{case.name} shapes={shapes} dtype={dtype.name} ctx={ctx} seed={seed}"
    rng = np.random.RandomState(seed)
    samplers = case.sample if isinstance(case.sample, (list, tuple)) else \
        [case.sample] * len(shapes)
    xs = [np.asarray(f(s, rng)).astype(dtype) for f, s in zip(samplers, shapes)]
    rkw = case.kwargs if case.ref_kwargs else {}
    want = [np.asarray(r) for r in _listed(case.ref(*[x.astype(_F64) for x in xs], **rkw))]
    tol = _FWD_TOL[dtype] * case.tol

    # 1. imperative forward
    got = _listed(getattr(mx.nd.op, case.op)(*[mx.nd.array(x, ctx=ctx, dtype=dtype)
                                             for x in xs], **case.kwargs))
    assert len(got) == len(want), f"{where}: {len(got)} outputs, reference {len(want)}"
    for i, (g, w) in enumerate(zip(got, want)):
        assert g.dtype == dtype, f"{where}: output {i} has dtype {g.dtype}"
        _close(g.asnumpy(), w, tol, f"{where}: imperative output {i}")

    # 2. symbolic forward and backward, grad_req write and add
    names = [f"in{i}" for i in range(len(xs))]
    sym = getattr(mx.sym.op, case.op)(*[mx.sym.var(n) for n in names], **case.kwargs)
    wanted = range(len(xs)) if case.grad_inputs is None else case.grad_inputs
    heads = [rng.uniform(-1, 1, w.shape) for w in want]
    grads = {}
    for req in ("write", "add"):
        reqs = {n: (req if case.grad and i in wanted else "null") for i, n in enumerate(names)}
        ex = sym.simple_bind(ctx, grad_req=reqs, type_dict={n: dtype for n in names},
                             **dict(zip(names, shapes)))
        for n, x in zip(names, xs):
            ex.arg_dict[n][:] = x
        start = {}
        for n in names:
            g = ex.grad_dict.get(n)
            if g is not None:
                start[n] = rng.uniform(-1, 1, g.shape).astype(dtype)
                g[:] = start[n]
        outs = ex.forward(is_train=True)
        for i, (o, w) in enumerate(zip(outs, want)):
            _close(o.asnumpy(), w, tol, f"{where}: symbolic output {i} (grad_req {req})")
        if not case.grad:
            return
        ex.backward([mx.nd.array(h, ctx=ctx, dtype=dtype) for h in heads])
        grads[req] = {n: ex.grad_dict[n].asnumpy().astype(_F64) - (start[n] if req == "add"
                                                                    else 0)
                      for n in start}

    # 3. numeric gradient of the operator in float64
    x64 = [x.astype(_F64) for x in xs]

    def loss(values):
        outs = _listed(getattr(mx.nd.op, case.op)(*[mx.nd.array(v, ctx=ctx, dtype=_F64)
                                                    for v in values], **case.kwargs))
        return sum(float((o.asnumpy() * h).sum()) for o, h in zip(outs, heads))
    gtol = _GRAD_TOL[dtype] * case.tol
    for i in wanted:
        num = np.zeros_like(x64[i])
        flat = x64[i].reshape(-1)
        for j in range(flat.size):
            keep = flat[j]
            flat[j] = keep + case.eps
            up = loss(x64)
            flat[j] = keep - case.eps
            down = loss(x64)
            flat[j] = keep
            num.reshape(-1)[j] = (up - down) / (2 * case.eps)
        for req in ("write", "add"):
            _close(grads[req][names[i]], num, gtol,
                   f"{where}: gradient of input {i} (grad_req {req}) vs numeric")


# ---------------------------------------------------------------------------
# check_op: the name-based form (an operator name, numpy inputs, a reference), used by
# the operator families added for the public-name surface; it drives mx.nd and mx.sym in
# each dtype and checks gradients by central differences.
from mxnet.test_utils import assert_almost_equal, check_numeric_gradient

_TOL = {np.dtype(np.float16): (1e-2, 1e-2), np.dtype(np.float32): (1e-4, 1e-5),
        np.dtype(np.float64): (1e-8, 1e-10)}


def resolve(namespace, name):
    """``mx.nd``/``mx.sym`` attribute by dotted name ('linalg.det', 'image.crop')."""
    obj = namespace
    for part in name.split("."):
        obj = getattr(obj, part)
    return obj


def _as_list(x):
    return list(x) if isinstance(x, (list, tuple)) else [x]


def check_op(name, inputs, reference, kwargs=None, grad=True, grad_nodes=None,
             dtypes=(np.float32, np.float64), rtol=None, atol=None, grad_rtol=1e-2,
             grad_atol=1e-4, eps=1e-4, sym=True, out_dtypes=None, grad_dtype=np.float64):
    """Check operator ``name`` on numpy ``inputs`` against ``reference(*inputs)``.

    ``reference`` gets the inputs cast to each dtype and returns the expected visible
    outputs (one array or a list). ``out_dtypes`` (optional, callable of the input
    dtype) gives the expected output dtypes; by default outputs keep the input dtype.
    """
    kwargs = kwargs or {}
    nd_fn, sym_fn = resolve(mx.nd, name), resolve(mx.sym, name) if sym else None
    for dt in dtypes:
        dt = np.dtype(dt)
        r_tol, a_tol = _TOL[dt]
        r_tol, a_tol = rtol or r_tol, atol or a_tol
        cast = [np.asarray(x).astype(dt) for x in inputs]
        refs = [np.asarray(r) for r in _as_list(reference(*cast))]
        want_types = _as_list(out_dtypes(dt)) if out_dtypes else [dt] * len(refs)
        outs = _as_list(nd_fn(*[mx.nd.array(x, dtype=dt) for x in cast], **kwargs))
        _compare(name, "nd", dt, outs, refs, want_types, r_tol, a_tol)
        if sym:
            names = [f"in{i}" for i in range(len(cast))]
            s = sym_fn(*[mx.sym.var(n) for n in names], **kwargs)
            outs = s.eval(ctx=mx.cpu(), **{n: mx.nd.array(x, dtype=dt)
                                           for n, x in zip(names, cast)})
            _compare(name, "sym", dt, outs, refs, want_types, r_tol, a_tol)
    if grad:
        check_numeric_gradient(lambda *xs: nd_fn(*xs, **kwargs), inputs, numeric_eps=eps,
                               rtol=grad_rtol, atol=grad_atol, grad_nodes=grad_nodes,
                               dtype=grad_dtype)
        if sym:
            names = [f"in{i}" for i in range(len(inputs))]
            s = sym_fn(*[mx.sym.var(n) for n in names], **kwargs)
            nodes = None if grad_nodes is None else [names[i] for i in grad_nodes]
            # MXNet's check_numeric_gradient projects one output: check each in turn
            for k in range(len(s.list_outputs())):
                check_numeric_gradient(s[k] if len(s.list_outputs()) > 1 else s,
                                       [np.asarray(x, grad_dtype) for x in inputs],
                                       numeric_eps=eps, rtol=grad_rtol, atol=grad_atol,
                                       grad_nodes=nodes, dtype=grad_dtype)


def _compare(name, path, dt, outs, refs, want_types, rtol, atol):
    assert len(outs) == len(refs), \
        f"{name} ({path}, {dt}): {len(outs)} outputs, reference has {len(refs)}"
    for i, (o, r, t) in enumerate(zip(outs, refs, want_types)):
        assert tuple(o.shape) == r.shape, \
            f"{name} ({path}, {dt}) output {i}: shape {o.shape} vs reference {r.shape}"
        assert np.dtype(o.dtype) == np.dtype(t), \
            f"{name} ({path}, {dt}) output {i}: dtype {np.dtype(o.dtype)}, expected {t}"
        assert_almost_equal(o.asnumpy(), r, rtol=rtol, atol=atol,
                            names=(f"{name} {path} {dt} output {i}", "reference"))
