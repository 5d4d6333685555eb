"""The memory planning pass: give every intermediate array a buffer, reusing buffers
whose lifetimes do not overlap.

The executor runs a fixed sequence of steps (each forward node, then the head
gradients, then each backward node). An entry lives from the step that writes it to
the last step that reads it; what a backward step reads is exactly what its operator
declares in ``backward_uses`` (seed 002: FullyConnected's output is not kept for its
backward, so its buffer is free once the next layer has read it). A step's output
takes over the buffer of an input that dies at that step when the operator allows it
(``Op.inplace``; in backward, the output gradient's buffer for the single input
gradient, or for one of the gradients ``Op.backward_identity`` says pass the output
gradient through unchanged); otherwise it takes the free buffer that fits best, growing one if none is
big enough. Arguments, auxiliary states, graph outputs and argument gradients belong
to the caller and are not planned.
"""
import numpy as np

__all__ = ["memory_pass", "MemoryPlan", "Step"]


class Step:
    """What the planner needs to know about one executed step."""
    __slots__ = ("kind", "nid", "reads", "writes", "inplace")

    def __init__(self, kind, nid, reads, writes, inplace=()):
        self.kind, self.nid = kind, nid          # kind: 'forward', 'seed', 'backward'
        self.reads, self.writes, self.inplace = reads, writes, inplace


class MemoryPlan:
    """Buffers (slots) for the planned entries and the figures of the plan.

    slot_of: {entry id: slot}; slot_bytes: size of each slot; entry_bytes: size of
    each planned entry; first/last: the step that writes / last reads each entry;
    steps: the executed Steps; inplace: (input entry, output entry) pairs sharing a
    buffer; live_outputs: forward entries that need a buffer at all.
    """

    def __init__(self):
        self.slot_of, self.slot_bytes, self.entry_bytes = {}, [], {}
        self.first, self.last = {}, {}
        self.steps, self.inplace = [], []
        self.names = {}
        self.num_forward_steps = 0

    @property
    def planned_bytes(self):
        """Bytes of all planned buffers together."""
        return int(sum(self.slot_bytes))

    @property
    def naive_bytes(self):
        """Bytes a plan without any reuse would allocate for the same entries."""
        return int(sum(self.entry_bytes.values()))

    @property
    def num_slots(self):
        return len(self.slot_bytes)

    def kept_for_backward(self):
        """Names of forward entries that stay alive until a backward step reads them."""
        return [self.names[e] for e in self.entry_bytes
                if self.first[e] < self.num_forward_steps <= self.last[e]]

    def lifetime(self, name):
        """(first step, last step, step kinds) of a planned entry by name."""
        for e, n in self.names.items():
            if n == name and e in self.entry_bytes:
                return (self.first[e], self.last[e], self.steps[self.first[e]].kind,
                        self.steps[self.last[e]].kind)
        raise KeyError(f"{name} is not a planned entry")

    def summary(self):
        mb = self.planned_bytes / float(1 << 20)
        return (f"Total {int(round(mb))} MB allocated\n"
                f"Memory plan: {self.planned_bytes} bytes in {self.num_slots} buffers for "
                f"{len(self.entry_bytes)} intermediate arrays ({self.naive_bytes} bytes "
                f"without reuse, {len(self.inplace)} in-place)\n")


def _nbytes(shape, dtype):
    return int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize


def build_steps(graph):
    """The executed sequence as planner Steps."""
    bwd = graph.backward
    steps = []
    for nid, node in enumerate(graph.nodes):
        if node.op is None:
            continue
        eids = graph.node_inputs[nid]
        outs = list(range(graph.row_ptr[nid], graph.row_ptr[nid + 1]))
        inplace = [(eids[i], outs[o]) for i, o in node.op.inplace
                   if i < len(eids) and o < len(outs)]
        steps.append(Step("forward", nid, list(eids), outs, inplace))
    n_fwd = len(steps)
    if bwd is not None and bwd.steps:
        seeds = [s[1] for s in bwd.seeds if s is not None and s[0] == "grad"
                 and s[1] not in bwd.external_heads]
        steps.append(Step("seed", None, [], list(dict.fromkeys(seeds))))
        for b in bwd.steps:
            reads = [g for g in (b.ograds or []) if g is not None]
            reads += list(b.in_data or []) + [e for e in b.out_data or [] if e is not None]
            writes = []
            for t in b.targets:
                if t is not None and t[0] == "grad":
                    (writes if t[2] == "write" else reads).append(t[1])
            inplace = []
            if sum(t is not None for t in b.targets) == 1 and len(writes) == 1:
                inplace = [(g, writes[0]) for g in (b.ograds or []) if g is not None]
            else:
                inplace = _identity_inplace(graph.nodes[b.nid].op, b)
            steps.append(Step("backward", b.nid, reads, writes, inplace))
    return steps, n_fwd


def _identity_inplace(op, b):
    """(output gradient, input gradient) pairs a multi-input backward step may plan in
    place: the op's ``backward_identity`` gradients with req 'write' (the planner
    gives the output gradient's buffer to at most one of them, and only when it dies
    at this step and the sizes agree, i.e. nothing was reduced by broadcasting)."""
    pairs = getattr(op, "backward_identity", ()) if op is not None else ()
    res = []
    for i, o in pairs:
        t = b.targets[i] if i < len(b.targets) else None
        g = b.ograds[o] if b.ograds is not None and o < len(b.ograds) else None
        if t is not None and g is not None and t[0] == "grad" and t[2] == "write":
            res.append((g, t[1]))
    return res


def memory_pass(graph):
    """Fill ``graph.memory`` with a MemoryPlan (needs shapes, dtypes and backward)."""
    plan = MemoryPlan()
    steps, plan.num_forward_steps = build_steps(graph)
    plan.steps = steps
    bwd = graph.backward
    grad_of = {} if bwd is None else {g: e for e, g in bwd.grad_entry.items()}
    heads = set(graph.heads)
    external = set() if bwd is None else set(bwd.external_heads)

    def info(e):
        if e in grad_of:
            f = grad_of[e]
            return graph.shapes[f], graph.dtypes[f], graph.entry_name(f) + "_grad"
        return graph.shapes[e], graph.dtypes[e], graph.entry_name(e)

    last, first, readers = {}, {}, set()
    for s, step in enumerate(steps):
        for e in step.reads:
            last[e] = s
            readers.add(e)
    for s, step in enumerate(steps):
        for e in step.writes:
            first.setdefault(e, s)
            last[e] = max(last.get(e, s), s)

    def planned(e):
        if e in grad_of:
            return e not in external
        return (not graph.is_variable_entry(e)) and e not in heads and e in readers

    for s, step in enumerate(steps):
        for e in step.writes:
            if planned(e) and e not in plan.entry_bytes:
                shape, dtype, name = info(e)
                plan.entry_bytes[e] = _nbytes(shape, dtype)
                plan.names[e] = name
    for e in plan.entry_bytes:
        plan.first[e], plan.last[e] = first[e], last[e]

    free, holder = [], {}                      # free slots; slot -> live entry in it
    for s, step in enumerate(steps):
        taken = set()
        for e in step.writes:
            if e not in plan.entry_bytes or e in plan.slot_of:
                continue
            need = plan.entry_bytes[e]
            slot = _inplace_slot(plan, step, e, s, need, taken)
            if slot is None:
                slot = _best_fit(plan, free, need)
            plan.slot_of[e] = slot
            holder[slot] = e
            taken.add(slot)
        for e in dict.fromkeys(step.reads + step.writes):
            slot = plan.slot_of.get(e)
            if slot is not None and plan.last[e] == s and holder.get(slot) == e:
                del holder[slot]
                free.append(slot)
    graph.memory = plan
    return graph


def _inplace_slot(plan, step, out, s, need, taken):
    for src, dst in step.inplace:
        if dst != out or src not in plan.slot_of:
            continue
        slot = plan.slot_of[src]
        if plan.last[src] == s and plan.entry_bytes[src] == need and slot not in taken:
            plan.inplace.append((src, out))
            return slot
    return None


def _best_fit(plan, free, need):
    sizes = plan.slot_bytes
    fits = [i for i, slot in enumerate(free) if sizes[slot] >= need]
    if fits:
        i = min(fits, key=lambda i: sizes[free[i]])
        return free.pop(i)
    if free:
        i = max(range(len(free)), key=lambda i: sizes[free[i]])
        slot = free.pop(i)
        sizes[slot] = need                     # grow the biggest free buffer
        return slot
    sizes.append(need)
    return len(sizes) - 1
