"""mx.sym.contrib: the ``_contrib_*`` operators (attached by symbol/__init__.py from the
registry) plus MXNet 1.9.1's Python-level helpers (rand_zipfian, AttrScope, uniform, and
the control flow foreach / while_loop / cond of symbol/control_flow.py)."""
import math

from ..attribute import AttrScope  # noqa: F401  (MXNet exposes it here too)
from ..ndarray.contrib import _NEEDS_SPARSE, _needs_sparse, _gradient_node
from .random import uniform
from .control_flow import foreach, while_loop, cond  # noqa: F401

backward_index_copy = _gradient_node("backward_index_copy", 4)
backward_hawkesll = _gradient_node("backward_hawkesll", 10)

__all__ = ["rand_zipfian", "foreach", "while_loop", "cond"]

for _name in _NEEDS_SPARSE:
    globals()[_name] = _needs_sparse(_name)


def rand_zipfian(true_classes, num_sampled, range_max):
    """Symbolic log-uniform candidate sampler; see ``mx.nd.contrib.rand_zipfian``."""
    log_range = math.log(range_max + 1)
    u = uniform(0, log_range, shape=(num_sampled,), dtype="float64")
    sampled = (u.exp() - 1).astype("int64") % range_max
    true = true_classes.astype("float64")
    count_true = ((true + 2.0) / (true + 1.0)).log() / log_range * num_sampled
    s = sampled.astype("float64")
    count_sampled = ((s + 2.0) / (s + 1.0)).log() / log_range * num_sampled
    return sampled, count_true, count_sampled


def adamw_update(weight, grad, mean, var, rescale_grad, lr, eta, beta1=0.9, beta2=0.999,
                 epsilon=1e-8, wd=0, clip_gradient=-1, name=None, **kwargs):
    """Symbolic AdamW step; ``rescale_grad`` must be a Symbol (see mx.nd.contrib)."""
    from .op import _adamw_update
    return _adamw_update(weight, grad, mean, var, rescale_grad, lr=lr, eta=eta, beta1=beta1,
                         beta2=beta2, epsilon=epsilon, wd=wd, clip_gradient=clip_gradient,
                         name=name, **kwargs)


def mp_adamw_update(weight, grad, mean, var, weight32, rescale_grad, lr, eta, beta1=0.9,
                    beta2=0.999, epsilon=1e-8, wd=0, clip_gradient=-1, name=None, **kwargs):
    """Symbolic multi-precision AdamW step (see mx.nd.contrib.mp_adamw_update)."""
    from .op import _mp_adamw_update
    return _mp_adamw_update(weight, grad, mean, var, weight32, rescale_grad, lr=lr, eta=eta,
                            beta1=beta1, beta2=beta2, epsilon=epsilon, wd=wd,
                            clip_gradient=clip_gradient, name=name, **kwargs)


def __getattr__(name):
    if name == "uniform":
        return uniform
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
