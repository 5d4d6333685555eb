"""The control-flow operators ``_foreach``, ``_while_loop`` and ``_cond``.

A node of one of these holds subgraphs besides its parameters: Symbols built by
``mx.sym.contrib.foreach/while_loop/cond`` (one for foreach: the loop body; two for
while_loop: condition and body; three for cond: predicate, then and else branches) or
read from the ``subgraphs`` key of a symbol JSON node. The parameters are MXNet 1.9.1's
and say which node input feeds which subgraph input:

* ``_foreach``: inputs are the sliced data, the initial states, then the free values;
  ``in_data_locs``/``in_state_locs``/``remain_locs`` give their positions among the
  body's inputs (``list_inputs()`` order). Outputs: the ``num_out_data`` step outputs
  stacked along a new axis 0, then the final states.
* ``_while_loop``: ``cond_input_locs``/``func_input_locs`` give, per subgraph input,
  the node input feeding it; ``func_var_locs[k]`` is loop variable k's position among
  the body's inputs. Outputs: the step outputs stacked into ``max_iterations`` rows
  (rows after the last step are zero), then the final loop variables.
* ``_cond``: ``cond_input_locs``/``then_input_locs``/``else_input_locs`` as above;
  outputs are the chosen branch's.

MXNet counts the subgraphs in ``num_args`` (inputs + 1, + 2, + 3), and so does the
JSON; ``arguments`` follow the inputs alone.

Running and inferring a subgraph needs Symbols, NDArrays and autograd, all above this
layer: the symbol front end installs that runtime (``frontend.provide(
control_flow_runtime=...)``, symbol/control_flow_runtime.py) and the operators here
only declare themselves and hand their calls to it, as ``Custom`` hands its calls to
the user's Python class.
"""
from ..base import MXNetError
from . import frontend
from .params import Int, Params, Schema, Shape
from .registry import Op, register

__all__ = ["ControlFlowOp", "with_subgraphs"]


class _ControlFlowParams(Params):
    """Parameters plus the node's subgraphs (Symbols) and the runtime's per-node data:
    ``state`` (what a training forward recorded for backward), ``plans`` (the
    subgraphs prepared for running) and ``plans_cache`` (executors bound for them).
    Compared by identity: two nodes with equal attributes hold different subgraphs."""

    __slots__ = ("subgraphs", "state", "plans", "plans_cache")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.subgraphs, self.state, self.plans, self.plans_cache = None, None, None, None

    def __eq__(self, other):
        return self is other

    def __ne__(self, other):
        return self is not other

    __hash__ = object.__hash__

    def clone(self):
        """The same parameters and subgraphs with state of its own (one per executor
        node: a forward's recording belongs to that executor's backward)."""
        q = _ControlFlowParams(self)
        q.given = self.given
        q.subgraphs, q.plans = self.subgraphs, self.plans
        return q


def _runtime():
    return frontend.need("control_flow_runtime")


class ControlFlowOp(Op):
    """What the three control-flow operators share; see the module docstring."""

    kind = None                  # 'foreach', 'while_loop', 'cond'
    n_subgraphs = 0
    backward_uses = ("out_grad", "in_data")
    writes_outputs = True
    bfloat16_native = True       # the subgraphs' own operators handle bfloat16
    named_inputs = False

    def parse(self, kwargs):
        shared = self.params.parse(self.name, kwargs)     # (cached: copied below)
        p = _ControlFlowParams(shared)
        p.given = shared.given
        self.check_params(p)
        return p

    def check_params(self, p):
        if p.num_args < self.n_subgraphs:
            raise MXNetError(f"{self.name}: num_args={p.num_args} counts the "
                             f"{self.n_subgraphs} subgraph(s) and the inputs")

    def n_inputs(self, p):
        return p.num_args - self.n_subgraphs

    def arguments(self, p):
        return [f"arg{i}" for i in range(self.n_inputs(p))]

    def outputs(self, p):
        return [f"output{i}" for i in range(p.num_outputs)]

    def complete_params(self, p, out_shapes):
        return p.clone()

    def subgraphs(self, p):
        subs = getattr(p, "subgraphs", None)
        if subs is None:
            raise MXNetError(f"operator {self.name} needs its subgraphs: build it with "
                             f"mx.sym.contrib.{self.kind} (or load a symbol JSON that "
                             "holds them)")
        return subs

    def infer_shape_partial(self, p, arg_shapes, out_shapes):
        self.subgraphs(p)
        return _runtime().infer_shape(self, p, list(arg_shapes), list(out_shapes))

    # the rule reads the pass's own unknown-dimension marker (executor/partial_shape)
    partial_rule_any_marker = True

    def infer_shape(self, p, in_shapes):
        return self.infer_shape_partial(p, in_shapes, [None] * p.num_outputs)

    def infer_type(self, p, in_types):
        self.subgraphs(p)
        return _runtime().infer_type(self, p, list(in_types))

    def forward(self, ctx, p, inputs, aux, out=None):
        self.subgraphs(p)
        return _runtime().forward(self, ctx, p, inputs, out)

    def backward(self, ctx, p, out_grads, inputs, outputs, aux, in_grad=None):
        self.subgraphs(p)
        return _runtime().backward(self, ctx, p, out_grads, inputs)


def with_subgraphs(op, p, subgraphs):
    """Parameters ``p`` of control-flow operator ``op`` holding ``subgraphs``
    (Symbols), checked against the parameters: their number, and every input
    position the parameters name."""
    subgraphs = tuple(subgraphs)
    if len(subgraphs) != op.n_subgraphs:
        raise MXNetError(f"operator {op.name} holds {op.n_subgraphs} subgraph(s), got "
                         f"{len(subgraphs)}")
    q = _ControlFlowParams(p)
    q.given = p.given
    q.subgraphs = subgraphs
    _runtime().check(op, q)
    return q


_LOC = dict(default=(), doc="positions (see the module docstring)")


@register
class _Foreach(ControlFlowOp):
    """Run a subgraph over slices of the data along axis 0, carrying states
    (``mx.sym.contrib.foreach``)."""

    name = "_foreach"
    kind = "foreach"
    n_subgraphs = 1
    params = Schema(
        num_args=Int(low=1, doc="Number of inputs, plus one for the subgraph"),
        num_outputs=Int(low=0, doc="Number of outputs"),
        num_out_data=Int(low=0, doc="Number of step outputs (the rest are states)"),
        in_state_locs=Shape(**_LOC), in_data_locs=Shape(**_LOC),
        remain_locs=Shape(**_LOC))


@register
class _WhileLoop(ControlFlowOp):
    """Run a body subgraph while a condition subgraph holds, at most
    ``max_iterations`` times (``mx.sym.contrib.while_loop``)."""

    name = "_while_loop"
    kind = "while_loop"
    n_subgraphs = 2
    params = Schema(
        num_args=Int(low=2, doc="Number of inputs, plus two for the subgraphs"),
        num_outputs=Int(low=0, doc="Number of outputs"),
        num_out_data=Int(low=0, doc="Number of step outputs (the rest are loop variables)"),
        max_iterations=Int(low=0, doc="Most iterations the loop may run"),
        cond_input_locs=Shape(**_LOC), func_input_locs=Shape(**_LOC),
        func_var_locs=Shape(**_LOC))


@register
class _Cond(ControlFlowOp):
    """Run the then or the else subgraph as a predicate subgraph says
    (``mx.sym.contrib.cond``)."""

    name = "_cond"
    kind = "cond"
    n_subgraphs = 3
    params = Schema(
        num_args=Int(low=3, doc="Number of inputs, plus three for the subgraphs"),
        num_outputs=Int(low=0, doc="Number of outputs"),
        cond_input_locs=Shape(**_LOC), then_input_locs=Shape(**_LOC),
        else_input_locs=Shape(**_LOC))
