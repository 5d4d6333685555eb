"""Device placement of a bound graph's nodes (``bind``/``simple_bind``'s ``group2ctx``).

A node made under ``mx.AttrScope(ctx_group='dev1')`` carries ``__ctx_group__``; the
executor's ``group2ctx`` maps group names to contexts. Every node gets a context, as
MXNet's PlaceDevice pass gives it: its group's when it has one listed in
``group2ctx``; else that of its first input that has one (forwards); else that of its
first reader that has one (backwards, so a variable made outside any scope follows the
operator that reads it); else the executor's own context.

Contexts on one device (any number of ``cpu(i)``: host memory is one, the ids are
labels; or a single GPU) leave the graph to the ordinary Executor; a placement spanning
devices (a CPU and a GPU, two GPUs) gets a PlacedExecutor (placed.py). Arrays live on,
and are reported on, their node's context.
"""
from ..base import MXNetError

__all__ = ["place_nodes", "check_group2ctx", "var_contexts", "check_array_context",
           "same_device", "spans_devices"]

_GROUP = "__ctx_group__"


def check_group2ctx(ctx, group2ctx):
    """Raise unless every value of ``group2ctx`` is a Context."""
    for group, c in (group2ctx or {}).items():
        if not hasattr(c, "device_type"):
            raise TypeError(f"group2ctx[{group!r}] must be a Context, got "
                            f"{type(c).__name__}")


def same_device(a, b):
    """Whether contexts a and b share memory: any two CPU contexts, or one GPU."""
    return a.device_type == b.device_type and \
        (a.device_type != "gpu" or a.device_id == b.device_id)


def spans_devices(placed):
    """Whether the contexts of ``placed`` (one per node) are on more than one device."""
    return any(not same_device(c, placed[0]) for c in placed[1:])


def place_nodes(graph, ctx, group2ctx):
    """One Context per node of ``graph`` (an executor Graph), by the rules above."""
    nodes = graph.nodes
    placed = [None] * len(nodes)
    if not group2ctx:
        return [ctx] * len(nodes)
    for i, node in enumerate(nodes):
        group = node.attrs.get(_GROUP)
        if group is not None and group in group2ctx:
            placed[i] = group2ctx[group]
    inputs = [[graph.entry_node[e] for e in eids] for eids in graph.node_inputs]
    for i in range(len(nodes)):                         # forwards: from the inputs
        if placed[i] is None:
            placed[i] = next((placed[j] for j in inputs[i] if placed[j] is not None), None)
    for i in reversed(range(len(nodes))):              # backwards: to the inputs
        if placed[i] is None:
            continue
        for j in inputs[i]:
            if placed[j] is None:
                placed[j] = placed[i]
    return [c if c is not None else ctx for c in placed]


def var_contexts(graph, placement):
    """{argument or auxiliary name: Context} of the graph's variables, from its nodes'
    ``placement`` (place_nodes)."""
    return {graph.nodes[i].name: placement[i] for i in graph.arg_nodes + graph.aux_nodes}


def check_array_context(name, arr, expected):
    """An array bound to a placed variable must be on that device."""
    if not same_device(arr.context, expected):
        raise MXNetError(f"bind: array {name} is on {arr.context}, the executor places it "
                         f"on {expected}")
