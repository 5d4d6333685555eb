"""One operator check for both front ends: ``check_op`` runs an operator through
``mx.nd`` and ``mx.sym`` in each dtype, compares every visible output with a NumPy
reference, and checks its gradient against central differences (imperatively through
autograd and symbolically through an executor), in float64."""
import numpy as np

import mxnet as mx
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
            outs = s.list_outputs()
            if len(outs) > 1:
                s = mx.sym.Group([s[i] for i in range(len(outs))])
            nodes = None if grad_nodes is None else [names[i] for i in grad_nodes]
            check_numeric_gradient(s, [np.asarray(x, grad_dtype) for x in inputs],
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
