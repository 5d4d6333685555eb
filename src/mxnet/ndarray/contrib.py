"""mx.nd.contrib: the ``_contrib_*`` operators (attached by ndarray/__init__.py from the
registry) plus MXNet 1.9.1's Python-level helpers: isfinite/isnan/isinf, the
log-uniform candidate sampler rand_zipfian and imperative control flow
(foreach/while_loop/cond)."""
import math

import numpy as _np

from .control_flow import foreach, while_loop, cond  # noqa: F401

__all__ = ["isfinite", "isnan", "isinf", "rand_zipfian", "foreach", "while_loop", "cond"]

# Graph operators of MXNet's DGL integration (on CSR storage): their symbolic forms
# (mx.sym.contrib takes this list) are not implemented, and calling them says so; the
# imperative ones below replace these placeholders.
_NEEDS_SPARSE = ("dgl_adjacency", "dgl_csr_neighbor_non_uniform_sample",
                 "dgl_csr_neighbor_uniform_sample", "dgl_graph_compact", "dgl_subgraph",
                 "edge_id")


def _needs_sparse(name):
    def fn(*args, **kwargs):
        raise NotImplementedError(f"mx.contrib.{name} (a CSR graph operator) is not "
                                  "implemented in pymxnet yet")
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"{name}: not implemented (needs CSR sparse storage)."
    return fn


for _name in _NEEDS_SPARSE:
    globals()[_name] = _needs_sparse(_name)
# the graph functions pymxnet has (imperative, on csr arrays)
from .dgl_graph import (edge_id, dgl_adjacency, dgl_subgraph,  # noqa: E402,F401
                        dgl_csr_neighbor_uniform_sample, dgl_csr_neighbor_non_uniform_sample,
                        dgl_graph_compact)


def _csr_getnnz(data=None, axis=None, out=None, name=None, **kwargs):
    """The number of values a csr array stores: in all (axis=None, shape (1,)) or per
    row (axis=1), as an int64 NDArray. A dense array is refused, as MXNet 1.9.1 does."""
    from ..base import MXNetError
    from .dispatch import invoke_by_name
    if getattr(data, "stype", None) != "csr":
        raise MXNetError(f"getnnz: data must be a csr array, got storage type "
                         f"{getattr(data, 'stype', type(data).__name__)}")
    return invoke_by_name("_contrib_getnnz", [data], {"axis": axis}, out=out)


def _gradient_node(name, n_inputs):
    """MXNet 1.9.1 lists the gradient nodes of index_copy and hawkesll in contrib, but
    their generated functions take no inputs (autograd feeds them), so any direct call
    fails; these fail the same way, with MXNet's error types."""
    def fn(out=None, name_=None, **kwargs):
        from ..base import MXNetError
        raise MXNetError(f"Operator _contrib_{name} expects {n_inputs} inputs, but got 0 "
                         "instead: it is the gradient node autograd runs, not callable "
                         "directly")
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"{name}: MXNet's internal gradient node (not callable directly)."
    return fn


backward_index_copy = _gradient_node("backward_index_copy", 4)
backward_hawkesll = _gradient_node("backward_hawkesll", 10)


def isnan(data):
    """1 where ``data`` is NaN, else 0 (in data's dtype)."""
    return data != data


def isinf(data):
    """1 where ``data`` is +/-infinity, else 0 (in data's dtype)."""
    return data.abs() == _np.inf


def isfinite(data):
    """1 where ``data`` is neither infinite nor NaN, else 0 (in data's dtype)."""
    # Both masks are 0/1 in data's dtype, so their product is their logical and.
    return (data.abs() != _np.inf) * (data == data)


def rand_zipfian(true_classes, num_sampled, range_max, ctx=None):
    """Draw ``num_sampled`` classes from the log-uniform (Zipfian) distribution over
    [0, range_max), P(c) = log((c + 2) / (c + 1)) / log(range_max + 1).

    Returns (sampled classes (int64), expected count of each true class, expected count
    of each sampled class), the counts being probability * num_sampled (float64)."""
    from .. import context
    from .random import uniform
    if ctx is None:
        ctx = context.current_context()
    log_range = math.log(range_max + 1)
    u = uniform(0, log_range, shape=(num_sampled,), dtype="float64", ctx=ctx)
    sampled = (u.exp() - 1).astype("int64") % range_max
    true = true_classes.as_in_context(ctx).astype("float64")
    count_true = ((true + 2.0) / (true + 1.0)).log() / log_range * num_sampled
    s = sampled.astype("float64")
    count_sampled = ((s + 2.0) / (s + 1.0)).log() / log_range * num_sampled
    return sampled, count_true, count_sampled


def _rescale_array(rescale_grad, like):
    from .ndarray import NDArray
    from . import full
    if isinstance(rescale_grad, NDArray):
        return rescale_grad
    return full((1,), rescale_grad, ctx=like.context, dtype="float32")


def adamw_update(weight, grad, mean, var, rescale_grad, lr, eta, beta1=0.9, beta2=0.999,
                 epsilon=1e-8, wd=0, clip_gradient=-1, out=None, name=None, **kwargs):
    """One AdamW step (see ``operator/contrib/adamw.py``); ``rescale_grad`` may be a
    number or a one-element NDArray (0/NaN/inf skips the step). Pass ``out=weight`` to
    update the weight in place."""
    from .op import _adamw_update
    return _adamw_update(weight, grad, mean, var, _rescale_array(rescale_grad, weight),
                         lr=lr, eta=eta, beta1=beta1, beta2=beta2, epsilon=epsilon, wd=wd,
                         clip_gradient=clip_gradient, out=out, name=name, **kwargs)


def mp_adamw_update(weight, grad, mean, var, weight32, rescale_grad, lr, eta, beta1=0.9,
                    beta2=0.999, epsilon=1e-8, wd=0, clip_gradient=-1, out=None, name=None,
                    **kwargs):
    """AdamW on the float32 master copy ``weight32``; the result is cast to weight's
    dtype. ``rescale_grad`` as in adamw_update."""
    from .op import _mp_adamw_update
    return _mp_adamw_update(weight, grad, mean, var, weight32,
                            _rescale_array(rescale_grad, weight), lr=lr, eta=eta,
                            beta1=beta1, beta2=beta2, epsilon=epsilon, wd=wd,
                            clip_gradient=clip_gradient, out=out, name=name, **kwargs)


def _as_outs(out, n):
    if out is None:
        return [None] * n
    return list(out) if isinstance(out, (list, tuple)) else [out]


def multi_adamw_update(weights, grads, mean, var, rescale_grad, lrs, wds, etas, out=None,
                       name=None, size=0, **kwargs):
    """adamw_update over lists of tensors (learning rate, weight decay and eta per
    tensor, one shared rescale_grad); returns the updated weights (written to ``out``
    when given)."""
    size = size or len(weights)
    outs = _as_outs(out, size)
    r = _rescale_array(rescale_grad, weights[0])
    return [adamw_update(weights[i], grads[i], mean[i], var[i], r, lr=lrs[i], wd=wds[i],
                         eta=etas[i], out=outs[i], **kwargs) for i in range(size)]


def multi_mp_adamw_update(weights, grads, mean, var, weights32, rescale_grad, lrs, wds,
                          etas, out=None, name=None, size=0, **kwargs):
    """mp_adamw_update over lists of tensors (see multi_adamw_update)."""
    size = size or len(weights)
    outs = _as_outs(out, size)
    r = _rescale_array(rescale_grad, weights[0])
    return [mp_adamw_update(weights[i], grads[i], mean[i], var[i], weights32[i], r,
                            lr=lrs[i], wd=wds[i], eta=etas[i], out=outs[i], **kwargs)
            for i in range(size)]


def _lamb_one(weight, grad, mean, var, step, lr, wd, out, weight32=None, beta1=0.9,
              beta2=0.999, epsilon=1e-6, rescale_grad=1.0, lower_bound=-1.0,
              upper_bound=-1.0, clip_gradient=-1.0, bias_correction=True):
    """One LAMB step from the registry's two LAMB phases: the Adam direction, then the
    trust ratio ||w|| / ||direction||."""
    from . import op as _op
    master = weight if weight32 is None else weight32
    g = _op.lamb_update_phase1(master, grad.astype(master.dtype, copy=False), mean, var,
                               beta1=beta1, beta2=beta2, epsilon=epsilon, t=int(step),
                               bias_correction=bias_correction, wd=wd,
                               rescale_grad=rescale_grad, clip_gradient=clip_gradient)
    r1, r2 = master.norm(), g.norm()
    new = _op.lamb_update_phase2(master, g, r1, r2, lr=lr, lower_bound=lower_bound,
                                 upper_bound=upper_bound)
    if weight32 is not None:
        weight32[:] = new
        new = new.astype(weight.dtype)
    if out is not None:
        out[:] = new
        return out
    return new


def multi_lamb_update(weights, grads, mean, var, step_count, lrs, wds, out=None,
                      num_tensors=0, **kwargs):
    """LAMB over lists of tensors (step count, learning rate and weight decay per
    tensor); returns the updated weights (written to ``out`` when given)."""
    n = num_tensors or len(weights)
    outs = _as_outs(out, n)
    return [_lamb_one(weights[i], grads[i], mean[i], var[i], step_count[i], lrs[i], wds[i],
                      outs[i], **kwargs) for i in range(n)]


def multi_mp_lamb_update(weights, grads, mean, var, weights32, step_count, lrs, wds,
                         out=None, num_tensors=0, **kwargs):
    """LAMB on float32 master copies ``weights32`` (see multi_lamb_update)."""
    n = num_tensors or len(weights)
    outs = _as_outs(out, n)
    return [_lamb_one(weights[i], grads[i], mean[i], var[i], step_count[i], lrs[i], wds[i],
                      outs[i], weight32=weights32[i], **kwargs) for i in range(n)]


def __getattr__(name):
    # mx.nd.contrib.uniform is mx.nd.random.uniform (imported late: random needs the
    # generated operator functions).
    if name == "uniform":
        from .random import uniform
        return uniform
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
