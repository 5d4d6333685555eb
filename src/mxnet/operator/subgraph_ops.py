"""Operators that run the one subgraph they hold: ``_CachedOp`` and the float forms of
MXNet 1.9.1's oneDNN fused nodes ``_sg_mkldnn_conv`` and ``_sg_mkldnn_fully_connected``,
which a symbol exported from MXNet after ``optimize_for('MKLDNN')`` holds. Such a
node's fused computation is its subgraph's (convolution, batch norm, activation, sum;
fully connected, activation), so pymxnet runs the subgraph.

The node's i-th input feeds the subgraph's i-th input (``list_inputs()`` order), as
MXNet's subgraph operators have it, so the subgraph's auxiliary states may sit among
the node's inputs: the operator permutes its inputs (``input_order``) into the
arguments-then-auxiliary-states order its calls take. Outputs are the subgraph's,
named ``output0``, ``output1``, ...

``_CachedOp`` takes its subgraph as the JSON text of its ``subgraph`` parameter
(``mx.sym._internal._CachedOp(*inputs, subgraph=sym.tojson())``) or from the
``subgraphs`` of a symbol JSON node. The oneDNN nodes' other attributes (``with_bn``,
``with_act``, ...) describe what the subgraph holds and are kept as given; a quantized
one (``quantized=true``) computes in int8 with calibrated ranges, which running the
float subgraph would not reproduce: it raises NotImplementedError.
"""
from .call import is_dunder
from .control_flow import ControlFlowOp, _ControlFlowParams, _runtime
from .params import Schema, Str
from .registry import register

__all__ = ["SubgraphOp"]


class _AnyFields(dict):
    """Every keyword is a (string) field: the attributes of MXNet's fused nodes."""

    _field = Str()

    def __contains__(self, key):
        return not is_dunder(key)

    def get(self, key, default=None):
        return dict.get(self, key, self._field)


class _OpenSchema(Schema):
    def __init__(self):
        super().__init__()
        self.fields = _AnyFields()

    def parse(self, opname, kwargs):
        p = _ControlFlowParams({k: v if isinstance(v, str) else str(v)
                                for k, v in kwargs.items()})
        p.given = dict(kwargs)
        return p


class SubgraphOp(ControlFlowOp):
    """What the subgraph-running operators share (see the module docstring)."""

    kind = "subgraph"
    n_subgraphs = 1
    params = _OpenSchema()
    permutes_inputs = True

    def parse(self, kwargs):
        p = self.params.parse(self.name, kwargs)
        self.check_params(p)
        text = p.get("subgraph")
        if text is not None:
            p.subgraphs = (_runtime().load_json(text),)
            _runtime().check(self, p)
        return p

    def check_params(self, p):
        if str(p.get("quantized", "false")).lower() in ("true", "1"):
            raise NotImplementedError(
                f"{self.name}: quantized oneDNN subgraph nodes (quantized=true) are not "
                "implemented; quantize the float model with mx.contrib.quantization")

    def arguments(self, p):
        if getattr(p, "subgraphs", None) is None:
            return []
        return list(_runtime().input_names(p)[0])

    def aux_states(self, p):
        if getattr(p, "subgraphs", None) is None:
            return []
        return list(_runtime().input_names(p)[1])

    def outputs(self, p):
        if getattr(p, "subgraphs", None) is None:
            return ["output0"]
        return [f"output{i}" for i in range(_runtime().n_outputs(p))]

    def infer_shape(self, p, in_shapes):
        return self.infer_shape_partial(p, in_shapes, [None] * len(self.outputs(p)))

    def input_order(self, p):
        if getattr(p, "subgraphs", None) is None:
            return []
        return _runtime().input_order(p)

    def _as_given(self, p, inputs, aux):
        """Arguments and auxiliary states back in the node's (the subgraph's) order."""
        return _runtime().in_subgraph_order(p, list(inputs) + list(aux))

    def forward(self, ctx, p, inputs, aux, out=None):
        self.subgraphs(p)
        return _runtime().forward(self, ctx, p, self._as_given(p, inputs, aux), out)

    def backward(self, ctx, p, out_grads, inputs, outputs, aux, in_grad=None):
        self.subgraphs(p)
        asked = ctx.need_grad
        # (no gradient for auxiliary states: they are not given, hence False)
        ctx.need_grad = [bool(w) for w in _runtime().in_subgraph_order(
            p, asked or [True] * len(inputs))]
        try:
            grads = _runtime().backward(self, ctx, p, out_grads,
                                        self._as_given(p, inputs, aux))
        finally:
            ctx.need_grad = asked
        return [grads[j] for j in self.input_order(p)[:len(inputs)]]


@register
class _CachedOpNode(SubgraphOp):
    """Run the subgraph given as JSON in ``subgraph`` on the inputs (MXNet's
    ``_CachedOp`` graph node)."""

    name = "_CachedOp"


@register
class _OneDNNConv(SubgraphOp):
    """MXNet 1.9.1's fused oneDNN convolution node (from ``optimize_for('MKLDNN')``):
    its float subgraph, run as it is."""

    name = "_sg_mkldnn_conv"


@register
class _OneDNNFullyConnected(SubgraphOp):
    """MXNet 1.9.1's fused oneDNN fully-connected node: its float subgraph, run as it
    is."""

    name = "_sg_mkldnn_fully_connected"
