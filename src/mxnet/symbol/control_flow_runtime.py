"""How the control-flow operators (operator/control_flow.py) run and infer.

A node's subgraphs run operator by operator on NDArrays, through the imperative
dispatcher, inside the loops of ndarray/control_flow.py; a control-flow node inside a
subgraph runs the same way, so a whole nest of loops is one sequence of ordinary
operator calls. A forward in training mode records those calls with autograd, the
node's inputs marked as variables; the node's backward is autograd's backward through
that recording, from the output gradients to the inputs. The recording is kept on the
node's (per-executor) parameters until the next forward; a backward whose inputs are
not the recorded forward's runs the forward again first.

Shape and type inference run the executor's passes over each subgraph, with what is
known of the node's inputs and outputs fed in and carried states fed back (a state's
shape is the one the body returns for it).

The operator layer reaches this module through ``frontend.provide``; it is installed
when ``mxnet.symbol`` is imported.
"""
import sys

import numpy as np

from .. import engine, tape
from ..base import MXNetError, env_int
from ..executor.graph import Graph, topo_order
from ..executor.infer import infer_shape_pass, infer_type_pass
from ..executor.partial_shape import UNKNOWN, merge_dims
from ..ndarray.control_flow import foreach_steps, stack_steps, truth, while_steps
from ..ndarray.dispatch import invoke
from ..operator import frontend
from ..operator.control_flow import ControlFlowOp
from ..operator.registry import store
from ..util import is_np_shape

__all__ = ["check", "infer_shape", "infer_type", "forward", "backward", "input_names",
           "input_order", "in_subgraph_order", "n_outputs", "load_json"]


# ------------------------------------------------------------------ a subgraph
class _Plan:
    """A subgraph prepared for running: its nodes in order, its input variables
    (``list_inputs()`` order) and its output entries."""

    def __init__(self, symbol):
        self.symbol = symbol
        self.order = topo_order(symbol._head_nodes())
        self.inputs = [n for n in self.order if n.op is None]
        self.heads = list(symbol._outputs)
        self._graph = None
        self.order_of_inputs = None     # arguments, then auxiliary states (input_order)

    def run(self, feed):
        """The outputs (NDArrays) for ``feed``, one NDArray per input."""
        values = {id(n): [v] for n, v in zip(self.inputs, feed)}
        for node in self.order:
            if node.op is None:
                continue
            args = [values[id(src)][k] for src, k in node.inputs]
            if isinstance(node.op, ControlFlowOp):
                res = _RUN[node.op.kind](node.params, args)
            else:
                res = invoke(node.op, args, None, p=node.params)
                if not isinstance(res, list):
                    res = [res]
            values[id(node)] = res
        return [values[id(n)][k] for n, k in self.heads]

    def input_names(self):
        """(argument names, auxiliary-state names) of the subgraph's inputs, in
        ``list_inputs()`` order."""
        g = self._entries()
        aux = {g.nodes[i].name for i in g.aux_nodes}
        return ([n.name for n in self.inputs if n.name not in aux],
                [n.name for n in self.inputs if n.name in aux])

    def has_aux(self):
        """Whether an operator of the subgraph has auxiliary states."""
        return bool(self.input_names()[1])

    def _entries(self):
        g = self._graph
        if g is None:
            g = self._graph = Graph(self.symbol)
            index = {id(n): i for i, n in enumerate(g.nodes)}
            g.input_entries = [g.entry(index[id(n)]) for n in self.inputs]
        return g

    def infer_shapes(self, in_shapes, out_shapes):
        """(input shapes, output shapes) given what is known of each (None or
        partial shapes)."""
        g = self._entries()
        given = {e: s for e, s in zip(g.input_entries, in_shapes) if s is not None}
        given.update((e, s) for e, s in zip(g.heads, out_shapes) if s is not None)
        infer_shape_pass(g, given)
        return [g.shapes[e] for e in g.input_entries], [g.shapes[e] for e in g.heads]

    def infer_types(self, in_types):
        g = self._entries()
        infer_type_pass(g, {e: t for e, t in zip(g.input_entries, in_types)
                            if t is not None})
        return [g.dtypes[e] for e in g.input_entries], [g.dtypes[e] for e in g.heads]


def _plans(p):
    if p.plans is None:
        p.plans = tuple(_Plan(s) for s in p.subgraphs)
    return p.plans


# ------------------------------------------------------------------ checks
def check(op, p):
    """MXNetError unless the parameters' positions fit the subgraphs."""
    plans = _plans(p)

    def positions(locs, size, what):
        if any(not 0 <= i < size for i in locs):
            raise MXNetError(f"{op.name}: {what} {list(locs)} point outside 0..{size - 1}")
    if op.kind == "subgraph":
        return
    n_in = op.n_inputs(p)
    if op.kind == "foreach":
        (body,) = plans
        parts = list(p.in_data_locs) + list(p.in_state_locs) + list(p.remain_locs)
        if sorted(parts) != list(range(len(body.inputs))) or len(parts) != n_in:
            raise MXNetError(f"{op.name}: in_data_locs, in_state_locs and remain_locs must "
                             f"place the {n_in} inputs on the body's {len(body.inputs)} "
                             "inputs, each once")
        if not p.in_data_locs:
            raise MXNetError(f"{op.name}: needs at least one data input")
        n_states = len(p.in_state_locs)
        if p.num_outputs != p.num_out_data + n_states or len(body.heads) != p.num_outputs:
            raise MXNetError(f"{op.name}: the body has {len(body.heads)} outputs; "
                             f"num_outputs={p.num_outputs} must be num_out_data="
                             f"{p.num_out_data} plus the {n_states} states")
    elif op.kind == "while_loop":
        cond_g, func_g = plans
        for locs, g, what in ((p.cond_input_locs, cond_g, "cond_input_locs"),
                              (p.func_input_locs, func_g, "func_input_locs")):
            if len(locs) != len(g.inputs):
                raise MXNetError(f"{op.name}: {what} has {len(locs)} entries for "
                                 f"{len(g.inputs)} subgraph inputs")
            positions(locs, n_in, what)
        positions(p.func_var_locs, len(func_g.inputs), "func_var_locs")
        if len(cond_g.heads) != 1:
            raise MXNetError(f"{op.name}: the condition must have one output")
        if len(func_g.heads) != p.num_outputs or \
                p.num_outputs != p.num_out_data + len(p.func_var_locs):
            raise MXNetError(f"{op.name}: the body has {len(func_g.heads)} outputs; "
                             f"num_outputs={p.num_outputs} must be num_out_data="
                             f"{p.num_out_data} plus the {len(p.func_var_locs)} loop vars")
    else:
        for locs, g, what in zip((p.cond_input_locs, p.then_input_locs, p.else_input_locs),
                                 plans, ("cond_input_locs", "then_input_locs",
                                         "else_input_locs")):
            if len(locs) != len(g.inputs):
                raise MXNetError(f"{op.name}: {what} has {len(locs)} entries for "
                                 f"{len(g.inputs)} subgraph inputs")
            positions(locs, n_in, what)
        if len(plans[0].heads) != 1:
            raise MXNetError(f"{op.name}: the predicate must have one output")
        if not len(plans[1].heads) == len(plans[2].heads) == p.num_outputs:
            raise MXNetError(f"{op.name}: then and else must both have num_outputs="
                             f"{p.num_outputs} outputs")


# ------------------------------------------------------------------ running
def _run_foreach(p, args):
    (body,) = _plans(p)
    n_data, n_states = len(p.in_data_locs), len(p.in_state_locs)
    data, states, free = args[:n_data], args[n_data:n_data + n_states], \
        args[n_data + n_states:]
    feed = [None] * len(body.inputs)
    for loc, v in zip(p.remain_locs, free):
        feed[loc] = v
    n_out = p.num_out_data

    def step(slices, states):
        for loc, v in zip(p.in_data_locs, slices):
            feed[loc] = v
        for loc, v in zip(p.in_state_locs, states):
            feed[loc] = v
        res = body.run(feed)
        return res[:n_out], res[n_out:]
    steps, states = foreach_steps(step, data, list(states))
    return stack_steps(steps) + list(states)


def _run_while_loop(p, args):
    cond_g, func_g = _plans(p)
    values = list(args)
    var_pos = [p.func_input_locs[loc] for loc in p.func_var_locs]
    n_out = p.num_out_data

    def place(loop_vars):
        for pos, v in zip(var_pos, loop_vars):
            values[pos] = v

    def test(loop_vars):
        place(loop_vars)
        return cond_g.run([values[i] for i in p.cond_input_locs])[0]

    def step(loop_vars):
        place(loop_vars)
        res = func_g.run([values[i] for i in p.func_input_locs])
        return res[:n_out], res[n_out:]
    steps, loop_vars = while_steps(test, step, [args[i] for i in var_pos],
                                   p.max_iterations)
    meta = None
    if not steps and n_out:          # no step ran: the outputs' shapes come from inference
        ctx = args[0].context
        shapes = infer_shape(None, p, [a.shape for a in args], [None] * p.num_outputs,
                             kind="while_loop")[1]
        types = infer_type(None, p, [a.dtype for a in args], kind="while_loop")[1]
        meta = []
        for s, t in list(zip(shapes, types))[:n_out]:
            if s is None or any(d < 0 for d in s) or t is None:
                raise MXNetError("while_loop ran no step and the shape of its outputs "
                                 "cannot be inferred")
            meta.append((tuple(s[1:]), t, ctx))
    return stack_steps(steps, p.max_iterations, meta) + list(loop_vars)


def _run_cond(p, args):
    pred_g, then_g, else_g = _plans(p)
    pred = pred_g.run([args[i] for i in p.cond_input_locs])[0]
    if truth(pred, "cond: the predicate"):
        return then_g.run([args[i] for i in p.then_input_locs])
    return else_g.run([args[i] for i in p.else_input_locs])


def _run_subgraph(p, args):
    return _plans(p)[0].run(args)


_RUN = {"foreach": _run_foreach, "while_loop": _run_while_loop, "cond": _run_cond,
        "subgraph": _run_subgraph}


def _record(op, octx, p, inputs):
    """Run the node on device arrays ``inputs``: (their NDArrays, the output
    NDArrays), recorded by autograd in training mode."""
    wrap = frontend.need("wrap_array")
    args = [wrap(x, octx.ctx) for x in inputs]
    if octx.is_train:
        tape.mark_variables(args, [None] * len(args))
        with tape.record(train_mode=True):
            res = _RUN[op.kind](p, args)
    else:
        with tape.pause(train_mode=False):
            res = _RUN[op.kind](p, args)
    return args, res


def forward(op, octx, p, inputs, out):
    """The node's forward on device arrays; in training mode the recording (or the
    step executors, which hold each step's values) stays on ``p`` for backward."""
    p.state = None
    with engine.get().blocking_section():
        steps = _step_executors(op, octx, p, inputs)
        if steps is not None:
            res = steps.forward(inputs)
            args = None
        else:
            args, res = _record(op, octx, p, inputs)
        values = [r._read() for r in res]
    if octx.is_train:
        p.state = (list(inputs), args, res) if steps is None else \
            (list(inputs), steps, None)
    results = []
    for i, v in enumerate(values):
        # a loop that ran no step returns its inputs, and step executors' outputs are
        # their own buffers, rewritten by their next run: a result kept as it is (no
        # destination to write into) must be a copy
        if (out is None or out[i] is None) and (steps is not None or
                                                any(v is x for x in inputs)):
            v = v.copy()
        results.append(store(out, i, v))
    return results


def backward(op, octx, p, out_grads, inputs):
    """Gradients of the node's inputs: autograd's backward through the forward's
    recording (made again when it is not this call's)."""
    state = p.state
    with engine.get().blocking_section():
        if state is not None and isinstance(state[1], _ForeachSteps) and \
                len(state[0]) == len(inputs) and \
                all(a is b for a, b in zip(state[0], inputs)):
            return state[1].backward(octx, out_grads)
        if state is None or len(state[0]) != len(inputs) or \
                not isinstance(state[1], list) or \
                any(a is not b for a, b in zip(state[0], inputs)):
            train = octx.is_train
            octx.is_train = True
            try:
                args, res = _record(op, octx, p, inputs)
            finally:
                octx.is_train = train
        else:
            _, args, res = state
        wrap = frontend.need("wrap_array")
        heads, head_grads = [], []
        for r, g in zip(res, out_grads):
            if r._ag is not None and g is not None:
                heads.append(r)
                head_grads.append(wrap(g, octx.ctx))
        need = octx.need_grad or [True] * len(args)
        # fresh gradient buffers, written by autograd's backward ('write')
        for a in args:
            a._ag[0].grad = wrap(octx.xp.zeros(a.shape, a.dtype), octx.ctx)
        if heads:
            tape.backward(heads, head_grads, retain_graph=True,
                          train_mode=bool(octx.is_train))
        grads = [a._ag[0].grad._read() if wanted else None for a, wanted in zip(args, need)]
    return grads


# ------------------------------------------------------------------ step executors
def _step_executors(op, octx, p, inputs):
    """The foreach body's step executors for these inputs (made once per shapes,
    types, mode and the gradients the last backward wanted; kept on ``p``), or None
    where the body runs operator by operator: another operator than foreach, a body
    with auxiliary states (their updates would have to pass from step to step), or
    MXNET_FOREACH_STEP_EXECUTORS=0."""
    if op.kind != "foreach" or not env_int("MXNET_FOREACH_STEP_EXECUTORS", 1):
        return None
    (body,) = _plans(p)
    if body.has_aux():
        return None
    key = (octx.ctx, bool(octx.is_train)) + tuple((tuple(x.shape), str(x.dtype))
                                                  for x in inputs)
    cache = p.plans_cache if p.plans_cache is not None else {}
    p.plans_cache = cache
    need = cache.get("need")        # the inputs the last backward wanted gradients for
    steps = cache.get(key)
    if steps is None or (steps.train and need is not None and steps.need != need):
        if len(cache) >= 8:
            cache.clear()
        steps = cache[key] = _ForeachSteps(p, body, octx, inputs, need)
    return steps


class _ForeachSteps:
    """A foreach body bound once per step (training) or once (inference).

    In training, step t's executor takes its data slice as a view of one buffer
    holding the whole data (one copy per forward), the free inputs from arrays all
    steps share, and its states straight from step t-1's outputs, so a forward copies
    nothing per step; backward runs the executors in reverse, passing state gradients
    down and summing the free inputs' gradients. MXNet's foreach keeps each
    iteration's state the same way. In inference one executor runs every step, its
    states copied back into it. Inputs get gradients as the last backward wanted
    (all floating-point ones before the first)."""

    def __init__(self, p, body, octx, inputs, need):
        from .. import ndarray as nd
        self.p, self.ctx, self.train = p, octx.ctx, bool(octx.is_train)
        n_data, n_states = len(p.in_data_locs), len(p.in_state_locs)
        self.length = inputs[0].shape[0] if len(inputs[0].shape) else 0
        if self.length == 0:
            raise MXNetError("foreach: data has length 0 on axis 0")
        self.input_meta = [(tuple(x.shape), np.dtype(x.dtype)) for x in inputs]
        self.need = need
        locs = list(p.in_data_locs) + list(p.in_state_locs) + list(p.remain_locs)
        names = [n.name for n in body.inputs]
        step_shapes = [_step_shape(x.shape) if k < n_data else tuple(x.shape)
                       for k, x in enumerate(inputs)]
        types = [np.dtype(x.dtype) for x in inputs]

        def zeros(shape, dtype):
            return nd.zeros(shape, ctx=self.ctx, dtype=dtype)
        # the node inputs' arrays the executors read, filled by forward
        self.data_in = [zeros(x.shape, t) for x, t in zip(inputs[:n_data], types)]
        self.state_in = [zeros(x.shape, t) for x, t in
                         zip(inputs[n_data:n_data + n_states], types[n_data:])]
        self.free_in = [zeros(x.shape, t) for x, t in
                        zip(inputs[n_data + n_states:], types[n_data + n_states:])]
        grads_wanted = [np.issubdtype(t, np.floating) and self.train and
                        (need is None or k >= n_data and k < n_data + n_states or need[k])
                        for k, t in enumerate(types)]
        req = {names[loc]: "write" if w else "null" for loc, w in zip(locs, grads_wanted)}
        self.executors = []
        states = self.state_in
        for t in range(self.length if self.train else 1):
            args = [None] * len(names)
            for k, loc in enumerate(p.in_data_locs):
                args[loc] = self.data_in[k][t].reshape(step_shapes[k]) if self.train \
                    else zeros(step_shapes[k], types[k])
            for loc, a in zip(p.in_state_locs, states):
                args[loc] = a
            for loc, a in zip(p.remain_locs, self.free_in):
                args[loc] = a
            grads = {names[loc]: zeros(a.shape, a.dtype)
                     for loc, a, w in zip(locs, [args[loc] for loc in locs], grads_wanted)
                     if w}
            ex = body.symbol.bind(self.ctx, dict(zip(names, args)), args_grad=grads or None,
                                  grad_req=req)
            self.executors.append(ex)
            states = ex.outputs[p.num_out_data:]

    def forward(self, inputs):
        from .. import ndarray as nd
        p = self.p
        wrap = frontend.need("wrap_array")
        arrays = [wrap(x, self.ctx) for x in inputs]
        n_data, n_states, n_out = len(p.in_data_locs), len(p.in_state_locs), p.num_out_data
        for a, dst in zip(arrays, self.data_in + self.state_in + self.free_in):
            a.copyto(dst)
        if self.train:
            for ex in self.executors:
                ex.forward(is_train=True)
            steps = [ex.outputs[:n_out] for ex in self.executors]
            states = self.executors[-1].outputs[n_out:]
        else:
            ex = self.executors[0]
            steps = []
            for t in range(self.length):
                for loc, d in zip(p.in_data_locs, self.data_in):
                    d[t].reshape(ex.arg_arrays[loc].shape).copyto(ex.arg_arrays[loc])
                if t:
                    for loc, s in zip(p.in_state_locs, states):
                        s.copyto(ex.arg_arrays[loc])
                outs = ex.forward(is_train=False)
                # (its outputs are rewritten by the next step)
                steps.append([o.copy() for o in outs[:n_out]])
                states = outs[n_out:]
        stacked = [nd.stack(*[s[k] for s in steps], axis=0) for k in range(n_out)]
        return stacked + list(states)

    def backward(self, octx, out_grads):
        from .. import ndarray as nd
        p = self.p
        xp = octx.xp
        wrap = frontend.need("wrap_array")
        n_data, n_states, n_out = len(p.in_data_locs), len(p.in_state_locs), p.num_out_data
        need = list(octx.need_grad or [True] * len(self.input_meta))
        if self.p.plans_cache is not None:
            self.p.plans_cache["need"] = tuple(need)
        og = list(out_grads)
        last = self.executors[-1].outputs
        for k in range(n_out + n_states):
            if og[k] is None:
                o = self.executors[0].outputs[k] if k < n_out else last[k]
                og[k] = xp.zeros(((self.length,) if k < n_out else ()) + tuple(o.shape),
                                 o.dtype)
        state_grads = [wrap(g, self.ctx) for g in og[n_out:]]
        data_grads = [[None] * self.length for _ in range(n_data)]
        free_grads = [None] * len(p.remain_locs)
        for t in reversed(range(self.length)):
            ex = self.executors[t]
            ex.backward([wrap(og[k][t], self.ctx) for k in range(n_out)] + state_grads)
            grads = ex.grad_arrays
            for k, loc in enumerate(p.in_data_locs):
                data_grads[k][t] = grads[loc]
            state_grads = [grads[loc] if grads[loc] is not None else
                           nd.zeros(ex.arg_arrays[loc].shape, ctx=self.ctx,
                                    dtype=ex.arg_arrays[loc].dtype)
                           for loc in p.in_state_locs]
            for k, loc in enumerate(p.remain_locs):
                g = grads[loc]
                if g is not None:
                    free_grads[k] = g.copy() if free_grads[k] is None else free_grads[k] + g
        result = [None if rows[0] is None else
                  nd.stack(*rows, axis=0).reshape(self.input_meta[k][0])
                  for k, rows in enumerate(data_grads)]
        result += state_grads + free_grads
        out = []
        for g, wanted, (shape, dtype) in zip(result, need, self.input_meta):
            if not wanted:
                out.append(None)
            elif g is None:             # an integer input: no gradient flows to it
                out.append(xp.zeros(shape, dtype))
            else:       # (a copy: the executors' gradient buffers are rewritten)
                out.append(g._read().astype(dtype, copy=True))
        return out


# ------------------------------------------------------------------ inference
def _merge(a, b, what):
    try:
        return merge_dims(a, b)
    except ValueError:
        raise MXNetError(f"{what}: shapes {a} and {b} disagree") from None


def _step_shape(s):
    """The shape of one step's slice of an array of shape s (axis 0 taken away; a
    1-d array's slices are (1,) under MXNet's legacy shapes)."""
    if s is None or len(s) == 0:
        return None
    rest = tuple(s[1:])
    return rest if rest or is_np_shape() else (1,)


def _stacked(length, s):
    return None if s is None else (length,) + tuple(s)


def infer_shape(op, p, arg_shapes, out_shapes, kind=None):
    """(argument shapes, output shapes, []) of a control-flow node."""
    kind = kind or op.kind
    return _SHAPE[kind](p, list(arg_shapes), list(out_shapes))


def _foreach_shapes(p, arg_shapes, out_shapes):
    (body,) = _plans(p)
    n_data, n_states, n_out = len(p.in_data_locs), len(p.in_state_locs), p.num_out_data
    u = UNKNOWN()
    lengths = [s[0] for s in arg_shapes[:n_data] + out_shapes[:n_out]
               if s is not None and len(s) and s[0] != u]
    length = lengths[0] if lengths else u
    sub_in = [None] * len(body.inputs)
    for k, loc in enumerate(p.in_data_locs):
        sub_in[loc] = _step_shape(arg_shapes[k])
    for k, loc in enumerate(p.in_state_locs):
        sub_in[loc] = arg_shapes[n_data + k]
    for k, loc in enumerate(p.remain_locs):
        sub_in[loc] = arg_shapes[n_data + n_states + k]
    sub_out = [None if s is None else tuple(s[1:]) for s in out_shapes[:n_out]] + \
        list(out_shapes[n_out:])
    for _ in range(n_states + 2):
        ins, outs = body.infer_shapes(sub_in, sub_out)
        fed_back = False
        for k, loc in enumerate(p.in_state_locs):
            merged = _merge(ins[loc], outs[n_out + k], f"foreach: state {k} and the body's "
                            "new value for it")
            fed_back |= merged != ins[loc]
            ins[loc] = outs[n_out + k] = merged
        sub_in, sub_out = ins, outs
        if not fed_back:
            break
    args = [arg_shapes[k] if arg_shapes[k] is not None else _stacked(length, sub_in[loc])
            for k, loc in enumerate(p.in_data_locs)]
    args += [sub_in[loc] for loc in p.in_state_locs]
    args += [sub_in[loc] for loc in p.remain_locs]
    outs = [_stacked(length, s) for s in sub_out[:n_out]] + sub_out[n_out:]
    return args, outs, []


def _while_loop_shapes(p, arg_shapes, out_shapes):
    cond_g, func_g = _plans(p)
    n_out, n_vars = p.num_out_data, len(p.func_var_locs)
    values = list(arg_shapes)
    var_pos = [p.func_input_locs[loc] for loc in p.func_var_locs]
    sub_out = [None if s is None else tuple(s[1:]) for s in out_shapes[:n_out]] + \
        list(out_shapes[n_out:])

    def take(locs, shapes, what):
        for pos, s in zip(locs, shapes):
            values[pos] = _merge(values[pos], s, f"while_loop: {what}")
    for _ in range(n_vars + 2):
        before = list(values)
        ins, outs = func_g.infer_shapes([values[i] for i in p.func_input_locs], sub_out)
        take(p.func_input_locs, ins, "the body's inputs")
        take(var_pos, outs[n_out:], "a loop variable and the body's new value for it")
        sub_out = outs[:n_out] + [values[i] for i in var_pos]
        ins, _ = cond_g.infer_shapes([values[i] for i in p.cond_input_locs], [None])
        take(p.cond_input_locs, ins, "the condition's inputs")
        if values == before:
            break
    outs = [_stacked(p.max_iterations, s) for s in sub_out[:n_out]] + \
        [values[i] for i in var_pos]
    return values, outs, []


def _cond_shapes(p, arg_shapes, out_shapes):
    pred_g, then_g, else_g = _plans(p)
    values = list(arg_shapes)
    outs = list(out_shapes)
    for g, locs in ((pred_g, p.cond_input_locs), (then_g, p.then_input_locs),
                    (else_g, p.else_input_locs)):
        ins, got = g.infer_shapes([values[i] for i in locs],
                                  [None] if g is pred_g else outs)
        for pos, s in zip(locs, ins):
            values[pos] = _merge(values[pos], s, "cond: a subgraph's input")
        if g is not pred_g:
            outs = [_merge(a, b, f"cond: output {i} of then and else")
                    for i, (a, b) in enumerate(zip(outs, got))]
    return values, outs, []


def in_subgraph_order(p, values):
    """A subgraph node's values, given as arguments then auxiliary states (all of them,
    or the arguments alone), in the node's (its subgraph's) input order; None for the
    ones not given."""
    order = input_order(p)
    given = [None] * len(order)
    for j, v in zip(order, values):
        given[j] = v
    return given


def _as_arguments_and_aux(p, values):
    """The inverse of ``in_subgraph_order``: (arguments, auxiliary states)."""
    order = input_order(p)
    n_args = len(input_names(p)[0])
    ordered = [values[j] for j in order]
    return ordered[:n_args], ordered[n_args:]


def _subgraph_shapes(p, arg_shapes, out_shapes):
    (sub,) = _plans(p)
    n_args = len(sub.input_names()[0])
    ins, outs = sub.infer_shapes(in_subgraph_order(p, arg_shapes[:n_args]), out_shapes)
    args, aux = _as_arguments_and_aux(p, ins)
    return args, outs, aux


_SHAPE = {"foreach": _foreach_shapes, "while_loop": _while_loop_shapes,
          "cond": _cond_shapes, "subgraph": _subgraph_shapes}


def _merge_type(a, b, what):
    if a is None:
        return b
    if b is None or np.dtype(a) == np.dtype(b):
        return a
    raise MXNetError(f"{what}: types {np.dtype(a).name} and {np.dtype(b).name} disagree")


def infer_type(op, p, in_types, kind=None):
    """(argument types, output types, []) of a control-flow node."""
    kind = kind or op.kind
    plans = _plans(p)
    values = list(in_types)
    if kind == "subgraph":
        n_args = len(plans[0].input_names()[0])
        ins, outs = plans[0].infer_types(in_subgraph_order(p, values[:n_args]))
        args, aux = _as_arguments_and_aux(p, ins)
        return args, outs, aux
    if kind == "foreach":
        (body,) = plans
        n_data, n_states, n_out = len(p.in_data_locs), len(p.in_state_locs), p.num_out_data
        locs = list(p.in_data_locs) + list(p.in_state_locs) + list(p.remain_locs)
        sub_in = [None] * len(body.inputs)
        for t, loc in zip(values, locs):
            sub_in[loc] = t
        ins, outs = body.infer_types(sub_in)
        for k, loc in enumerate(p.in_state_locs):
            ins[loc] = _merge_type(ins[loc], outs[n_out + k], f"foreach: state {k}")
        values = [ins[loc] for loc in locs]
        return values, outs[:n_out] + [ins[loc] for loc in p.in_state_locs], []
    if kind == "while_loop":
        cond_g, func_g = plans
        n_out = p.num_out_data
        var_pos = [p.func_input_locs[loc] for loc in p.func_var_locs]
        ins, outs = func_g.infer_types([values[i] for i in p.func_input_locs])
        for pos, t in zip(p.func_input_locs, ins):
            values[pos] = _merge_type(values[pos], t, "while_loop: the body's inputs")
        for pos, t in zip(var_pos, outs[n_out:]):
            values[pos] = _merge_type(values[pos], t, "while_loop: a loop variable")
        ins, _ = cond_g.infer_types([values[i] for i in p.cond_input_locs])
        for pos, t in zip(p.cond_input_locs, ins):
            values[pos] = _merge_type(values[pos], t, "while_loop: the condition's inputs")
        return values, outs[:n_out] + [values[i] for i in var_pos], []
    outs = [None] * p.num_outputs
    for g, locs in zip(plans, (p.cond_input_locs, p.then_input_locs, p.else_input_locs)):
        ins, got = g.infer_types([values[i] for i in locs])
        for pos, t in zip(locs, ins):
            values[pos] = _merge_type(values[pos], t, "cond: a subgraph's input")
        if g is not plans[0]:
            outs = [_merge_type(a, b, "cond: then and else outputs")
                    for a, b in zip(outs, got)]
    return values, outs, []


def input_names(p):
    """(argument names, auxiliary-state names) of a subgraph node's one subgraph."""
    return _plans(p)[0].input_names()


def input_order(p):
    """The positions of a subgraph node's inputs that are arguments, then those that
    are auxiliary states."""
    (sub,) = _plans(p)
    order = sub.order_of_inputs
    if order is None:
        args, aux = sub.input_names()
        names = [n.name for n in sub.inputs]
        order = sub.order_of_inputs = [names.index(n) for n in args + aux]
    return order


def n_outputs(p):
    return len(_plans(p)[0].heads)


def load_json(text):
    """The Symbol of a ``subgraph`` parameter's JSON text."""
    from .json_io import load_json as load
    if not isinstance(text, str):
        raise MXNetError(f"subgraph must be a symbol's JSON text, got {type(text).__name__}")
    return load(text)


frontend.provide(control_flow_runtime=sys.modules[__name__])
