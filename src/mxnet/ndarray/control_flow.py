"""Imperative control flow of ``mx.nd.contrib``: foreach, while_loop and cond.

They run the Python functions they are given step by step on NDArrays, so autograd
records whatever the steps compute. Return structures follow MXNet 1.9.1: a single
NDArray where the caller gave or returned one, else a list.
"""
from ..base import MXNetError
from .ndarray import NDArray

__all__ = ["foreach", "while_loop", "cond"]


def _as_list(x):
    """(list of NDArrays, whether x was a single NDArray)."""
    if isinstance(x, NDArray):
        return [x], True
    if isinstance(x, (list, tuple)):
        for v in x:
            if not isinstance(v, NDArray):
                raise TypeError(f"control flow: expected NDArrays, got {type(v).__name__}")
        return list(x), False
    raise TypeError(f"control flow: expected an NDArray or a list of NDArrays, got "
                    f"{type(x).__name__}")


def _restore(items, single):
    return items[0] if single else items


def foreach(body, data, init_states):
    """Run ``body(data[i], states) -> (outputs, new_states)`` for i over axis 0 of
    ``data`` (an NDArray or a list of them, sliced alike); return the step outputs
    stacked along a new axis 0, and the final states."""
    from . import stack
    items, data_single = _as_list(data)
    states, states_single = _as_list(init_states)
    n = items[0].shape[0]
    for d in items[1:]:
        if d.shape[0] != n:
            raise MXNetError(f"foreach: every data array needs the same length on axis 0, "
                             f"got {[x.shape[0] for x in items]}")
    steps, out_single = [], True
    for i in range(n):
        sl = _restore([d[i] for d in items], data_single)
        out, new_states = body(sl, _restore(states, states_single))
        out, out_single = _as_list(out) if out is not None else ([], False)
        states, _ = _as_list(new_states)
        steps.append(out)
    if not steps:
        raise MXNetError("foreach: data has length 0 on axis 0")
    outs = [stack(*[s[k] for s in steps], axis=0) for k in range(len(steps[0]))]
    return _restore(outs, out_single), _restore(states, states_single)


def while_loop(cond, func, loop_vars, max_iterations=None):
    """While ``cond(*loop_vars)`` is true (at most ``max_iterations`` times), run
    ``func(*loop_vars) -> (step_outputs, new_loop_vars)``. Returns the step outputs
    stacked on a new axis 0 and padded with zeros to max_iterations rows (MXNet leaves
    those rows undefined), and the final loop variables."""
    from . import stack, zeros
    if max_iterations is None:
        raise ValueError("while_loop: max_iterations should be specified")
    max_iterations = int(max_iterations)
    if max_iterations < 0:
        raise ValueError(f"while_loop: max_iterations must be >= 0, got {max_iterations}")
    vars_, vars_single = _as_list(loop_vars)

    def truth(v):
        v, _ = _as_list(v)
        if v[0].size != 1:
            raise MXNetError(f"while_loop: cond must return a scalar, got shape "
                             f"{v[0].shape}")
        return bool(v[0].asscalar())
    steps, out_single = [], False
    while len(steps) < max_iterations and truth(cond(*vars_)):
        out, new_vars = func(*vars_)
        out, out_single = _as_list(out) if out is not None else ([], False)
        new_vars, _ = _as_list(new_vars)
        if len(new_vars) != len(vars_):
            raise MXNetError(f"while_loop: func returned {len(new_vars)} loop variables, "
                             f"expected {len(vars_)}")
        vars_ = new_vars
        steps.append(out)
    outs = []
    if steps and steps[0]:
        for k in range(len(steps[0])):
            rows = [s[k] for s in steps]
            pad = max_iterations - len(rows)
            if pad:
                rows += [zeros(rows[0].shape, ctx=rows[0].context, dtype=rows[0].dtype)] * pad
            outs.append(stack(*rows, axis=0))
    return _restore(outs, out_single) if outs else [], _restore(vars_, vars_single)


def cond(pred, then_func, else_func):
    """``then_func()`` if the scalar NDArray ``pred`` is non-zero, else ``else_func()``."""
    p, _ = _as_list(pred)
    if p[0].size != 1:
        raise MXNetError(f"cond: pred must be a scalar, got shape {p[0].shape}")
    return then_func() if bool(p[0].asscalar()) else else_func()
