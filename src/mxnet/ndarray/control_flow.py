"""Imperative control flow of ``mx.nd.contrib``: foreach, while_loop and cond.

They run the Python functions they are given step by step on NDArrays, so autograd
records whatever the steps compute. Inputs and results may be nested lists of NDArrays;
return structures follow MXNet 1.9.1: a single NDArray where the caller gave or
returned one, else (nested) lists.

The loops themselves (``foreach_steps``, ``while_steps``, ``stack_steps``) take flat
lists and a step function: the symbolic operators' runtime
(symbol/control_flow_runtime.py) runs their subgraphs through the same loops.
"""
from ..base import MXNetError
from .ndarray import NDArray

__all__ = ["foreach", "while_loop", "cond"]


# ------------------------------------------------------------ nested structures
def flatten(obj, what, is_leaf=None, leaf_name="an NDArray"):
    """(flat list of leaves, format) of a leaf or a nested list/tuple of leaves; the
    format is 0 for a leaf, else the list of its items' formats. ``is_leaf`` defaults
    to "is an NDArray"; anything else is a TypeError naming ``what``."""
    if (is_leaf(obj) if is_leaf is not None else isinstance(obj, NDArray)):
        return [obj], 0
    if isinstance(obj, (list, tuple)):
        flat, fmt = [], []
        for item in obj:
            f, sub = flatten(item, what, is_leaf, leaf_name)
            flat += f
            fmt.append(sub)
        return flat, fmt
    raise TypeError(f"{what} should be {leaf_name} or a nested list of them, got "
                    f"{type(obj).__name__}")


def regroup(flat, fmt):
    """The inverse of ``flatten``: ``flat`` laid out as ``fmt`` says (lists for
    lists and tuples alike)."""
    out, rest = _regroup(list(flat), fmt)
    if rest:
        raise MXNetError(f"control flow: {len(rest)} values left over regrouping")
    return out


def _regroup(flat, fmt):
    if fmt == 0:
        return flat[0], flat[1:]
    out = []
    for sub in fmt:
        item, flat = _regroup(flat, sub)
        out.append(item)
    return out, flat


def iteration_limit(max_iterations):
    """while_loop's ``max_iterations`` as an int (required, at least 0)."""
    if max_iterations is None:
        raise ValueError("max_iterations should be specified")
    max_iterations = int(max_iterations)
    if max_iterations < 0:
        raise ValueError(f"while_loop: max_iterations must be >= 0, got {max_iterations}")
    return max_iterations


# --------------------------------------------------------------------- the loops
def foreach_steps(step, data, states):
    """Run ``step(slices, states) -> (outputs, states)`` for i over axis 0 of every
    array in ``data`` (a non-empty list, sliced alike); states are passed through as
    the step returns them. Returns (the per-step output lists, the final states)."""
    n = data[0].shape[0] if data[0].ndim else 0
    for d in data[1:]:
        if (d.shape[0] if d.ndim else 0) != n:
            raise MXNetError(f"foreach: every data array needs the same length on axis 0, "
                             f"got {[x.shape[0] if x.ndim else 0 for x in data]}")
    if n == 0:
        raise MXNetError("foreach: data has length 0 on axis 0")
    steps = []
    for i in range(n):
        outs, states = step([d[i] for d in data], states)
        steps.append(outs)
    return steps, states


def truth(value, what):
    """Whether a condition's result (a one-element NDArray) is non-zero."""
    if not isinstance(value, NDArray):
        raise TypeError(f"{what} must return an NDArray, got {type(value).__name__}")
    if value.size != 1:
        raise MXNetError(f"{what} must return a scalar (one element), got shape "
                         f"{value.shape}")
    return bool(value.asscalar())


def while_steps(cond, step, loop_vars, max_iterations):
    """While ``cond(loop_vars)`` holds and fewer than ``max_iterations`` steps ran,
    ``step(loop_vars) -> (outputs, loop_vars)``. Returns (the per-step output lists,
    the final loop variables)."""
    steps = []
    while len(steps) < max_iterations and truth(cond(loop_vars), "while_loop: cond"):
        outs, new_vars = step(loop_vars)
        if len(new_vars) != len(loop_vars):
            raise MXNetError(f"while_loop: func returned {len(new_vars)} loop variables, "
                             f"expected {len(loop_vars)}")
        loop_vars = new_vars
        steps.append(outs)
    return steps, loop_vars


def stack_steps(steps, rows=None, meta=None):
    """The k-th outputs of every step stacked along a new axis 0, for each k; with
    ``rows``, padded with zero rows to that many (MXNet leaves them undefined).
    ``meta``: (shape, dtype, context) per output, for a loop that ran no step."""
    from . import stack, zeros
    n_out = len(steps[0]) if steps else (len(meta) if meta is not None else 0)
    outs = []
    for k in range(n_out):
        items = [s[k] for s in steps]
        if len({tuple(x.shape) for x in items}) > 1:
            raise MXNetError(f"control flow: output {k} changes shape between steps: "
                             f"{[tuple(x.shape) for x in items]}")
        pad = 0 if rows is None else rows - len(items)
        if items:
            ref = items[0]
            shape, dtype, ctx = ref.shape, ref.dtype, ref.context
        else:
            shape, dtype, ctx = meta[k]
        if pad:
            items = items + [zeros(shape, ctx=ctx, dtype=dtype)] * pad
        outs.append(stack(*items, axis=0) if items else
                    zeros((0,) + tuple(shape), ctx=ctx, dtype=dtype))
    return outs


# ------------------------------------------------------------ the public functions
def foreach(body, data, init_states):
    """Run ``body(data[i], states) -> (outputs, new_states)`` for i over axis 0 of
    ``data`` (an NDArray or a nested list of them, sliced alike); return the step
    outputs stacked along a new axis 0 (laid out as the body returns them), and the
    final states as the body returned them."""
    flat_data, data_fmt = flatten(data, "foreach: data")
    if not flat_data:
        raise MXNetError("foreach: data must hold at least one NDArray")
    flatten(init_states, "foreach: init_states")
    out_fmt = []

    def step(slices, states):
        nonlocal out_fmt
        outs, states = body(regroup(slices, data_fmt), states)
        flat, out_fmt = flatten([] if outs is None else outs, "foreach: body output")
        return flat, states
    steps, states = foreach_steps(step, flat_data, init_states)
    return regroup(stack_steps(steps), out_fmt), states


def while_loop(cond, func, loop_vars, max_iterations=None):
    """While ``cond(*loop_vars)`` is true (at most ``max_iterations`` times), run
    ``func(*loop_vars) -> (step_outputs, new_loop_vars)``. Returns the step outputs
    stacked on a new axis 0 and padded with zeros to max_iterations rows (MXNet leaves
    those rows undefined; ``[]`` when no step ran), and the final loop variables laid
    out as ``loop_vars``."""
    max_iterations = iteration_limit(max_iterations)
    flat_vars, var_fmt = flatten(loop_vars, "while_loop: loop_vars")

    def call(fn, flat):
        grouped = regroup(flat, var_fmt)
        return fn(*grouped) if var_fmt != 0 else fn(grouped)
    out_fmt = []

    def step(flat):
        nonlocal out_fmt
        res = call(func, flat)
        if not isinstance(res, (list, tuple)) or len(res) != 2:
            raise MXNetError("while_loop: func must return (outputs, new_loop_vars)")
        outs, new_vars = res
        flat_out, out_fmt = flatten([] if outs is None else outs, "while_loop: func output")
        new_flat, _ = flatten(new_vars, "while_loop: func's new loop_vars")
        return flat_out, new_flat

    def test(flat):
        res = call(cond, flat)
        flat_res, _ = flatten(res, "while_loop: cond output")
        if len(flat_res) != 1:
            raise MXNetError(f"while_loop: cond must return one NDArray, got {len(flat_res)}")
        return flat_res[0]
    steps, flat_vars = while_steps(test, step, flat_vars, max_iterations)
    outs = regroup(stack_steps(steps, max_iterations), out_fmt) if steps else []
    return outs, regroup(flat_vars, var_fmt)


def cond(pred, then_func, else_func):
    """``then_func()`` if the scalar NDArray ``pred`` is non-zero, else ``else_func()``."""
    flat, _ = flatten(pred, "cond: pred")
    if len(flat) != 1:
        raise MXNetError(f"cond: pred must be one NDArray, got {len(flat)}")
    return then_func() if truth(flat[0], "cond: pred") else else_func()
