"""The gradient pass: which nodes run backward, in what order, reading what, and
where each input gradient goes.

A node runs backward when one of its arguments leads back to an argument whose
grad_req is not 'null' and when its output gradient matters: either the operator's
backward does not read out_grad (a loss such as SoftmaxOutput) or some consumer
sends it a gradient. Gradients arriving at one entry from several consumers are summed
in place: the first contribution writes, later ones add (for an argument, the first
one follows its grad_req). A head's gradient comes from ``backward(out_grads)``; it is
required only where some backward reads it (so a loss head needs none) and not for
the operators that mark a loss (``Op.is_loss``, e.g. ``make_loss``/``MakeLoss``): their backward ignores the head gradient's values, so ones are
used when none is given.
"""
from ..base import MXNetError
from ..operator.registry import REQ_ADD, REQ_NULL, REQ_WRITE

__all__ = ["gradient_pass", "BackwardStep", "BackwardPlan", "is_loss_op"]

def is_loss_op(op):
    return op is not None and op.is_loss


class BackwardStep:
    """One node's backward. ``ograds``: per output, a gradient entry id or None
    (zeros), or None altogether when the operator does not read out_grad.
    ``in_data``/``out_data``: entry ids read (None when not declared in
    backward_uses). ``targets``: per argument, None or (kind, index, req) with kind
    'arg' (index: argument position) or 'grad' (index: gradient entry id)."""

    __slots__ = ("nid", "need", "ograds", "in_data", "out_data", "aux", "targets")

    def __init__(self, nid, need, ograds, in_data, out_data, aux):
        self.nid, self.need, self.ograds = nid, need, ograds
        self.in_data, self.out_data, self.aux = in_data, out_data, aux
        self.targets = None


class BackwardPlan:
    """Result of the gradient pass.

    steps: BackwardSteps in execution order. grad_entry: {forward entry id: gradient
    entry id} (ids from ``graph.num_entries`` on). seeds: per head position, None or
    (kind, index, req) saying where its head gradient goes. head_required: per head,
    whether backward needs a head gradient. external_heads: {gradient entry id: head
    position} for head gradients used directly from the caller's array. zero_fill:
    argument positions with grad_req 'write' that receive no gradient (set to 0).
    """

    def __init__(self):
        self.steps = []
        self.grad_entry = {}
        self.seeds = []
        self.head_required = []
        self.external_heads = {}
        self.zero_fill = []

    @property
    def num_grad_entries(self):
        return len(self.grad_entry)


def gradient_pass(graph, grad_reqs):
    """Fill ``graph.backward``. grad_reqs: per argument (list_arguments order)."""
    nodes, n_entries = graph.nodes, graph.num_entries
    req_of = {nid: r for nid, r in zip(graph.arg_nodes, grad_reqs)}
    arg_pos = {nid: i for i, nid in enumerate(graph.arg_nodes)}
    plan = BackwardPlan()
    if all(r == REQ_NULL for r in grad_reqs):
        plan.seeds = [None] * len(graph.heads)
        plan.head_required = [False] * len(graph.heads)
        graph.backward = plan
        return graph

    def src(e):
        return graph.entry_node[e]

    # Forward: does a node depend on an argument that wants a gradient?
    reach = [False] * len(nodes)
    for nid, node in enumerate(nodes):
        if node.op is None:
            reach[nid] = req_of.get(nid, REQ_NULL) != REQ_NULL
        else:
            reach[nid] = any(reach[src(e)] for e in graph.node_inputs[nid][:graph.num_args[nid]])

    def uses_og(nid):
        return "out_grad" in nodes[nid].op.backward_uses_for(nodes[nid].params)

    def wanted(e):
        nid = src(e)
        op = nodes[nid].op
        if op is None:
            return reach[nid]
        return reach[nid] and not op.zero_grad and uses_og(nid)

    # Backward: which nodes run, given the gradients their outputs can receive.
    has_grad = [False] * n_entries
    for h in graph.heads:
        has_grad[h] = True
    active = [False] * len(nodes)
    for nid in reversed(range(len(nodes))):
        node = nodes[nid]
        if node.op is None or not reach[nid] or node.op.zero_grad:
            continue
        outs = range(graph.row_ptr[nid], graph.row_ptr[nid + 1])
        if uses_og(nid) and not any(has_grad[e] for e in outs):
            continue
        args = graph.node_inputs[nid][:graph.num_args[nid]]
        need = [wanted(e) for e in args]
        if not any(need):
            continue
        if node.op.backward is None:
            raise MXNetError(f"Operator {node.op.name} (node {node.name}) is "
                             "non-differentiable because it didn't register FGradient "
                             "attribute.")
        active[nid] = True
        for e, nd in zip(args, need):
            if nd:
                has_grad[e] = True

    def grad_id(e):
        g = plan.grad_entry.get(e)
        if g is None:
            g = plan.grad_entry[e] = n_entries + len(plan.grad_entry)
        return g

    def has_entry(e):
        nid = src(e)
        return nodes[nid].op is not None and active[nid] and uses_og(nid)

    # Head gradients first: they are the first contributions to their entries.
    first = set()                   # gradient destinations already written

    def contribution(e):
        nid = src(e)
        if nodes[nid].op is None:
            pos = arg_pos.get(nid)
            if pos is None or req_of[nid] == REQ_NULL:
                return None
            key = ("arg", pos)
            req = req_of[nid] if key not in first else REQ_ADD
        elif has_entry(e):
            key = ("grad", grad_id(e))
            req = REQ_WRITE if key not in first else REQ_ADD
        else:
            return None
        first.add(key)
        return (key[0], key[1], req)

    for h in graph.heads:
        seed = contribution(h)
        plan.seeds.append(seed)
        plan.head_required.append(seed is not None and not is_loss_op(nodes[src(h)].op))

    for nid in reversed(range(len(nodes))):
        if not active[nid]:
            continue
        op = nodes[nid].op
        uses = op.backward_uses_for(nodes[nid].params)
        eids = graph.node_inputs[nid]
        n_args = graph.num_args[nid]
        outs = list(range(graph.row_ptr[nid], graph.row_ptr[nid + 1]))
        ograds = None
        if "out_grad" in uses:
            ograds = [plan.grad_entry.get(e) if has_grad[e] else None for e in outs]
        step = BackwardStep(nid, [wanted(e) for e in eids[:n_args]], ograds,
                            eids[:n_args] if "in_data" in uses else None,
                            op.kept_outputs(nodes[nid].params, outs)
                            if "out_data" in uses else None, eids[n_args:])
        step.targets = [contribution(e) if nd else None
                        for e, nd in zip(eids[:n_args], step.need)]
        plan.steps.append(step)

    # A head gradient used once and nowhere else is read straight from the caller.
    seeded = {}
    for i, seed in enumerate(plan.seeds):
        if seed is not None and seed[0] == "grad":
            seeded.setdefault(seed[1], []).append(i)
    adds = {t[1] for s in plan.steps for t in s.targets if t is not None and t[0] == "grad"}
    for g, heads in seeded.items():
        if len(heads) == 1 and g not in adds:
            plan.external_heads[g] = heads[0]
    written = {s[1] for s in plan.seeds if s is not None and s[0] == "arg"}
    written |= {t[1] for s in plan.steps for t in s.targets if t is not None and t[0] == "arg"}
    plan.zero_fill = [i for i, nid in enumerate(graph.arg_nodes)
                      if req_of[nid] == REQ_WRITE and i not in written]
    graph.backward = plan
    return graph
