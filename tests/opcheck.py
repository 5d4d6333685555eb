"""The operator check (Chainer-style): a test states an operator call, its inputs and a
NumPy reference; ``check`` derives the rest. One entry point, two ways to drive it:

    CASES = [Case("hard_sigmoid", lambda x: np.clip(0.2 * x + 0.5, 0, 1), [[(3, 4)]])]

    test_ops = opcheck.cases_test(CASES)          # one pytest item per combination

    def test_det():                                 # every combination in one test
        opcheck.check(Case("linalg.det", np.linalg.det, inputs=[well_conditioned(2, 3)]))

For every shape set x dtype x context (``mx.gpu(0)`` too: a skipped item without a
GPU, a run with one, which makes it MXNet's check_consistency for free), ``check`` runs:

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

__all__ = ["Case", "check", "params", "cases_test", "contexts", "uniform", "away_from",
           "FLOATS", "F32_64"]
log = logging.getLogger("opcheck")

FLOATS = ("float16", "float32", "float64")
F32_64 = ("float32", "float64")
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


def _given(values):
    """Sampler list returning fixed arrays (``Case(inputs=...)``)."""
    return [lambda shape, rng, v=np.asarray(v): v for v in values]


class Case:
    """One operator call to check.

    op: the operator's name in mx.nd / mx.sym (dotted for a namespace: 'linalg.det',
    'image.crop'; else looked up in ``.op`` too, for hidden names); ref(*inputs,
    **kwargs): the NumPy reference (float64 inputs; an array or a list of arrays);
    shapes: a list of shape sets (one shape per input) to sample, or ``inputs``: fixed
    input arrays (one shape set); kwargs: the operator's parameters (given to ref too
    unless ``ref_kwargs=False``); sample(shape, rng): input values (or a list, one
    sampler per input); dtypes: those the operator allows; out_dtype(dtype): the
    outputs' dtype (default: the inputs'); grad: check gradients (False for
    non-differentiable ops); grad_inputs: positions of the inputs that get gradients
    (default all); tol / grad_tol: scales on the per-dtype forward / gradient
    tolerances; eps: the finite-difference step (in float64; 1e-2 for an operator
    without float64, whose numeric gradient is taken in its widest dtype);
    input_dtypes: {position: dtype} for inputs whose dtype is fixed (an int32 length).
    An input that gets no gradient (``grad_inputs``) keeps its values in every check.
    """

    def __init__(self, op, ref, shapes=None, kwargs=None, *, inputs=None, sample=None,
                 dtypes=FLOATS, out_dtype=None, grad=True, grad_inputs=None, tol=1.0,
                 grad_tol=None, eps=1e-6, ref_kwargs=True, input_dtypes=None, name=None):
        if (shapes is None) == (inputs is None):
            raise ValueError("Case: give either shapes or inputs")
        if inputs is not None:
            shapes, sample = [[np.shape(x) for x in inputs]], _given(inputs)
        self.op, self.ref, self.shapes = op, ref, [list(map(tuple, s)) for s in shapes]
        self.kwargs = dict(kwargs or {})
        self.sample = sample or uniform()
        self.dtypes = [np.dtype(d) for d in dtypes]
        self.out_dtype = out_dtype
        self.grad, self.grad_inputs, self.eps = grad, grad_inputs, eps
        self.tol, self.grad_tol = tol, tol if grad_tol is None else grad_tol
        self.ref_kwargs = ref_kwargs
        self.input_dtypes = {i: np.dtype(t) for i, t in (input_dtypes or {}).items()}
        self.name = name or op + "".join(f"-{k}={v}" for k, v in self.kwargs.items())

    def __repr__(self):
        return self.name

    def functions(self):
        """(imperative, symbolic) callables of the operator."""
        return _resolve(mx.nd, self.op), _resolve(mx.sym, self.op)


def _resolve(namespace, name):
    obj = namespace if "." in name or hasattr(namespace, name) else namespace.op
    for part in name.split("."):
        obj = getattr(obj, part)
    return obj


def contexts():
    """The contexts to check on: the CPU, and every GPU."""
    return [mx.cpu()] + [mx.gpu(i) for i in range(mx.context.num_gpus())]


def params(cases, dtypes=None):
    """pytest parameters (case, shapes, dtype, ctx) for every combination; the GPU
    ones are there (skipped) without a GPU, so a run with one shows what it added."""
    import pytest
    no_gpu = pytest.mark.skipif(mx.context.num_gpus() == 0, reason="no GPU")
    out = []
    for case in cases:
        for shapes in case.shapes:
            for dt in case.dtypes:
                if dtypes is not None and dt.name not in dtypes:
                    continue
                for ctx in (mx.cpu(), mx.gpu(0)):
                    out.append(pytest.param(case, shapes, dt, ctx,
                                            marks=(no_gpu,) if ctx.device_type == "gpu"
                                            else (),
                                            id=f"{case.name}-{shapes}-{dt.name}-{ctx}"))
    return out


def cases_test(cases, dtypes=None):
    """A pytest test (bind it to a module-level ``test_*`` name) running ``check`` once
    per item of ``params(cases, dtypes)``."""
    import pytest

    @pytest.mark.parametrize("case, shapes, dtype, ctx", params(cases, dtypes))
    def test(case, shapes, dtype, ctx):
        check(case, shapes, dtype, ctx)
    return test


def _listed(x):
    return list(x) if isinstance(x, (list, tuple)) else [x]


def _close(got, want, tol, what):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    assert got.shape == want.shape, f"{what}: shape {got.shape}, expected {want.shape}"
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol, equal_nan=True, err_msg=what)


def check(case, shapes=None, dtype=None, ctx=None):
    """Run every check of ``case``: for one shape set, dtype and context, or (each left
    out) for all of the case's shape sets, dtypes and available contexts."""
    if shapes is None or dtype is None or ctx is None:
        for s in ([shapes] if shapes is not None else case.shapes):
            for dt in ([dtype] if dtype is not None else case.dtypes):
                for c in ([ctx] if ctx is not None else contexts()):
                    check(case, s, dt, c)
        return
    dtype = np.dtype(dtype)
    seed = zlib.crc32(f"{case.name}{shapes}{dtype}".encode()) ^ \
        int(os.environ.get("MXNET_TEST_SEED", "0"))
    log.info("opcheck %s shapes=%s dtype=%s ctx=%s seed=%d", case.name, shapes, dtype,
             ctx, seed)
    where = f"{case.name} shapes={shapes} dtype={dtype.name} ctx={ctx} seed={seed}"
    rng = np.random.RandomState(seed)
    samplers = case.sample if isinstance(case.sample, (list, tuple)) else \
        [case.sample] * len(shapes)
    types = [case.input_dtypes.get(i, dtype) for i in range(len(shapes))]
    xs = [np.asarray(f(s, rng)).astype(t) for f, s, t in zip(samplers, shapes, types)]
    rkw = case.kwargs if case.ref_kwargs else {}
    want = [np.asarray(r) for r in _listed(case.ref(*[x.astype(_F64) for x in xs], **rkw))]
    out_types = [np.dtype(t) for t in _listed(case.out_dtype(dtype))] \
        if case.out_dtype else [dtype] * len(want)
    tol = _FWD_TOL[dtype] * case.tol
    nd_fn, sym_fn = case.functions()

    # 1. imperative forward
    got = _listed(nd_fn(*[mx.nd.array(x, ctx=ctx, dtype=x.dtype) for x in xs], **case.kwargs))
    assert len(got) == len(want), f"{where}: {len(got)} outputs, reference {len(want)}"
    for i, (g, w, t) in enumerate(zip(got, want, out_types)):
        assert g.dtype == t, f"{where}: output {i} has dtype {g.dtype}, expected {t}"
        _close(g.asnumpy(), w, tol, f"{where}: imperative output {i}")

    # 2. symbolic forward and backward, grad_req write and add
    names = [f"in{i}" for i in range(len(xs))]
    sym = sym_fn(*[mx.sym.var(n) for n in names], **case.kwargs)
    wanted = range(len(xs)) if case.grad_inputs is None else case.grad_inputs
    heads = [rng.uniform(-1, 1, w.shape) for w in want]
    grads = {}
    for req in ("write", "add"):
        reqs = {n: (req if case.grad and i in wanted else "null") for i, n in enumerate(names)}
        ex = sym.simple_bind(ctx, grad_req=reqs, type_dict=dict(zip(names, types)),
                             **dict(zip(names, shapes)))
        for n, x in zip(names, xs):
            ex.arg_dict[n][:] = x
        start = {}
        for n in names:
            g = ex.grad_dict.get(n)
            if g is not None:
                start[n] = rng.uniform(-1, 1, g.shape).astype(g.dtype)
                g[:] = start[n]
        outs = ex.forward(is_train=True)
        for i, (o, w) in enumerate(zip(outs, want)):
            _close(o.asnumpy(), w, tol, f"{where}: symbolic output {i} (grad_req {req})")
        if not case.grad:
            return
        ex.backward([mx.nd.array(h, ctx=ctx, dtype=t) for h, t in zip(heads, out_types)])
        grads[req] = {n: ex.grad_dict[n].asnumpy().astype(_F64) - (start[n] if req == "add"
                                                                    else 0)
                      for n in start}

    # 3. numeric gradient of the operator in float64 (in float32 with a wider step, for
    # an operator that takes no float64)
    wide = _F64 if _F64 in case.dtypes else max(case.dtypes, key=lambda t: t.itemsize)
    eps = case.eps if wide == _F64 else 1e-2
    x64 = [x.astype(case.input_dtypes.get(i, wide)) for i, x in enumerate(xs)]

    def loss(values):
        outs = _listed(nd_fn(*[mx.nd.array(v, ctx=ctx, dtype=v.dtype) for v in values],
                             **case.kwargs))
        return sum(float((o.asnumpy() * h).sum()) for o, h in zip(outs, heads))
    gtol = _GRAD_TOL[dtype] * case.grad_tol
    for i in wanted:
        num = np.zeros_like(x64[i])
        flat = x64[i].reshape(-1)
        for j in range(flat.size):
            keep = flat[j]
            flat[j] = keep + eps
            up = loss(x64)
            flat[j] = keep - eps
            down = loss(x64)
            flat[j] = keep
            num.reshape(-1)[j] = (up - down) / (2 * eps)
        for req in ("write", "add"):
            _close(grads[req][names[i]], num, gtol,
                   f"{where}: gradient of input {i} (grad_req {req}) vs numeric")
