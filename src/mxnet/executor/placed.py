"""An executor whose graph spans devices: ``group2ctx`` placing ctx groups on a CPU and
a GPU, or on two GPUs (MXNet's model parallelism).

The single-device Executor plans one memory pool and prepares its calls for one array
module. A graph spanning devices runs node by node instead, through the imperative
operator path: each node on its placed context (placement.py), an input from another
device copied there once per run, the copy recorded by autograd so that backward copies
the gradient back (what MXNet's ``_CrossDeviceCopy`` nodes do). Backward is autograd's
over that run, into the bound gradient arrays as their ``grad_req`` says. Contexts that
differ only in their CPU id are one device here, as everywhere in pymxnet.
"""
from .. import tape as _tape
from ..base import MXNetError
from ..ndarray.creation import zeros
from ..ndarray.dispatch import invoke
from ..operator.registry import REQ_NULL
from .executor import Executor
from .gradient import is_loss_op
from .graph import Graph
from .infer import infer_shape_pass, infer_type_pass
from .placement import place_nodes, same_device

__all__ = ["PlacedExecutor"]


class PlacedExecutor(Executor):
    """``bind``/``simple_bind``'s executor when ``group2ctx`` puts nodes on different
    devices. Same interface as Executor; ``outputs`` live on their nodes' devices."""

    def __init__(self, symbol, ctx, args, args_grad, grad_reqs, aux_states,
                 group2ctx=None, graph=None, placed=None):
        # graph, placed: the symbol's Graph and its placement when bind made them
        self._keep_bound(symbol, ctx, args, args_grad, grad_reqs, aux_states, group2ctx)
        self._optimized = symbol
        g = self._graph = graph if graph is not None else Graph(symbol)
        var_nodes = g.arg_nodes + g.aux_nodes
        arrays = self.arg_arrays + self.aux_arrays
        infer_shape_pass(g, {g.entry(i): tuple(a.shape) for i, a in zip(var_nodes, arrays)})
        infer_type_pass(g, {g.entry(i): a.dtype for i, a in zip(var_nodes, arrays)})
        self._placed = placed if placed is not None else place_nodes(g, ctx, group2ctx)
        self.outputs = [zeros(tuple(g.shapes[e]), self._placed[g.entry_node[e]], g.dtypes[e])
                        for e in g.heads]
        self._heads = None          # the last forward's results (on the tape if training)
        self.memory_plan = None

    # ------------------------------------------------------------------ running
    def _forward(self, is_train, inline=False):
        g = self._graph
        wants_grad = is_train and any(r != REQ_NULL for r in self._grad_req)
        values = {}
        for nid, arr, grad, req in zip(g.arg_nodes, self.arg_arrays, self.grad_arrays,
                                       self._grad_req):
            if wants_grad and grad is not None and req != REQ_NULL:
                # a second handle on the argument's memory carries the autograd mark,
                # so the bound array itself is left as the caller made it
                arr = arr.detach()
                _tape.mark_variables([arr], [grad], req)
            values[g.entry(nid)] = arr
        for nid, arr in zip(g.aux_nodes, self.aux_arrays):
            values[g.entry(nid)] = arr
        scope = _tape.record(train_mode=is_train) if wants_grad else \
            _tape.pause(train_mode=is_train)
        copies = {}
        with scope:
            for nid, node in enumerate(g.nodes):
                if node.op is not None:
                    self._run_node(nid, node, values, copies)
            heads = [values.get(e) for e in g.heads]
        if any(h is None for h in heads):
            raise MXNetError("a graph spanning devices cannot output a hidden output of "
                             "an operator")
        self._heads = heads if wants_grad else None
        with _tape.pause():
            for out, res in zip(self.outputs, heads):
                res.copyto(out)
        return self.outputs

    def _run_node(self, nid, node, values, copies):
        g, ctx = self._graph, self._placed[nid]
        ins = []
        for e in g.node_inputs[nid]:
            x = values.get(e)
            if x is None:
                raise MXNetError(f"{node.name}: a graph spanning devices cannot read a "
                                 "hidden output of an operator")
            if not same_device(x.context, ctx):
                key = (e, ctx.device_type, ctx.device_id)
                if key not in copies:
                    copies[key] = x.as_in_context(ctx)
                x = copies[key]
            ins.append(x)
        monitor = self._monitor
        if monitor is not None and self._monitor_all:
            for (src, _), name, x in zip(node.inputs, node.monitor_input_names(), ins):
                if src.is_variable:
                    monitor(src.name, x.copy())
                monitor(f"{node.name}_{name}", x.copy())
        res = invoke(node.op, ins, None, None, ctx, node.params)
        res = list(res) if isinstance(res, (list, tuple)) else [res]
        for k, r in enumerate(res):
            values[g.entry(nid, k)] = r
        if monitor is not None:
            for name, r in zip(node.output_names(), res):
                monitor(name, r.copy())

    def _backward(self, out_grads, is_train, inline=False):
        if not any(r != REQ_NULL for r in self._grad_req):
            return
        if self._heads is None:
            raise MXNetError("backward: run forward(is_train=True) first")
        g = self._graph
        heads, head_grads = [], []
        for i, (e, head, og) in enumerate(zip(g.heads, self._heads,
                                              self._out_grad_list(out_grads))):
            if head._ag is None:
                continue                    # no argument with a gradient reaches it
            node = g.nodes[g.entry_node[e]]
            # a loss head, or one whose backward reads no output gradient
            # (SoftmaxOutput), needs none (as the Executor's plan says)
            needs = not is_loss_op(node.op) and \
                "out_grad" in node.op.backward_uses_for(node.params)
            if self._check_out_grad(i, og, needs):
                og = og.as_in_context(head.context)
            heads.append(head)
            head_grads.append(og)
        if heads:
            _tape.backward(heads, head_grads, retain_graph=True, train_mode=is_train)

    def get_optimized_symbol(self):
        return self._symbol.__copy__()

    def debug_str(self):
        """The graph, each operator with the context it runs on."""
        g = self._graph
        lines = [self._symbol.debug_str().rstrip("\n"), "Placement:"]
        lines += [f"\t{node.name}: {self._placed[i]}" for i, node in enumerate(g.nodes)
                  if node.op is not None]
        return "\n".join(lines) + "\n"

