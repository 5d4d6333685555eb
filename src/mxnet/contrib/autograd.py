"""mx.contrib.autograd: MXNet's first autograd interface (before mx.autograd).

``train_section()``/``test_section()`` scopes record operations (training or not),
``mark_variables``/``backward``/``compute_gradient`` and the functional ``grad`` and
``grad_and_loss`` wrap a function so calling it returns gradients. Everything is done by
:mod:`mxnet.autograd`.
"""
import functools

from .. import autograd as _ag
from ..ndarray import NDArray, zeros_like

__all__ = ["set_is_training", "TrainingStateScope", "train_section", "test_section",
           "mark_variables", "backward", "compute_gradient", "grad_and_loss", "grad"]


def set_is_training(is_train):
    """Turn recording (and training mode) on or off; returns the previous state."""
    prev = _ag.is_recording()
    _ag.set_recording(is_train)
    _ag.set_training(is_train)
    return prev


class TrainingStateScope:
    """Scope that records operations (enter_state True) or not, restoring on exit."""

    def __init__(self, enter_state):
        self._enter_state = enter_state
        self._prev = None
        self._prev_train = None

    def __enter__(self):
        self._prev_train = _ag.is_training()
        self._prev = set_is_training(self._enter_state)
        return self

    def __exit__(self, *exc):
        _ag.set_recording(self._prev)
        _ag.set_training(self._prev_train)


def train_section():
    """Scope in which operations are recorded for gradients (training mode)."""
    return TrainingStateScope(True)


def test_section():
    """Scope in which operations are not recorded (inference mode)."""
    return TrainingStateScope(False)


def mark_variables(variables, gradients, grad_reqs="write"):
    """Mark NDArrays as variables whose gradients go into gradients."""
    return _ag.mark_variables(variables, gradients, grad_reqs)


def backward(outputs, out_grads=None, retain_graph=False):
    """Backpropagate from outputs (with head gradients out_grads) into marked variables."""
    if isinstance(outputs, NDArray):
        outputs = [outputs]
    if isinstance(out_grads, NDArray):
        out_grads = [out_grads]
    return _ag.backward(outputs, out_grads, retain_graph=retain_graph)


def compute_gradient(outputs):
    """Backpropagate from outputs with unit head gradients (kept for old code)."""
    backward(outputs)


def grad_and_loss(func, argnum=None):
    """Wrap func so that calling it returns (gradients of its arguments, its output).

    argnum (an int or a list of ints) picks which positional arguments are
    differentiated; all by default. Those arguments must be NDArrays.
    """
    @functools.wraps(func)
    def wrapped(*args):
        variables = list(args)
        if argnum is not None:
            picks = argnum if isinstance(argnum, list) else [argnum]
            variables = [args[i] for i in picks]
        for x in variables:
            if not isinstance(x, NDArray):
                raise TypeError(f"grad_and_loss: the differentiated arguments must be "
                                f"NDArrays, got {type(x).__name__}")
        grads = [zeros_like(x) for x in variables]
        mark_variables(variables, grads)
        with train_section():
            outputs = func(*args)
        compute_gradient([outputs] if isinstance(outputs, NDArray) else outputs)
        return grads, outputs
    return wrapped


def grad(func, argnum=None):
    """Wrap func so that calling it returns the gradients of its arguments."""
    grad_with_loss = grad_and_loss(func, argnum)

    @functools.wraps(grad_with_loss)
    def wrapped(*args):
        return grad_with_loss(*args)[0]
    return wrapped
