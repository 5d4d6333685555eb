"""The indexed graph the executor passes work on.

A symbol's nodes are numbered in topological order and every output of every node
(hidden ones included) gets an entry id: ``row_ptr[node] + output index``, the
layout of MXNet's ``node_row_ptr``. Each pass (``infer``, ``gradient``, ``memory``)
is a function that takes a Graph and returns it with one more attribute filled in:
``shapes``/``dtypes``, ``backward``, ``memory``.
"""
__all__ = ["Graph", "topo_order"]


class Graph:
    """Nodes in topological order with integer entry ids.

    nodes: the symbol's nodes. node_inputs[i]: entry ids of node i's inputs
    (arguments then auxiliary states). heads: entry ids of the symbol's outputs.
    arg_nodes / aux_nodes: node ids of the argument / auxiliary-state variables, in
    ``list_arguments()`` / ``list_auxiliary_states()`` order.
    """

    def __init__(self, symbol, nodes=None):
        """``nodes``: another topological order of the symbol's nodes to number them
        in (executor/cast_gather.py); the variables must keep their relative order,
        which is the arguments' and auxiliary states'."""
        self.symbol = symbol
        self.nodes = topo_order(symbol._head_nodes()) if nodes is None else list(nodes)
        index = {id(n): i for i, n in enumerate(self.nodes)}
        self.row_ptr = [0]
        for node in self.nodes:
            self.row_ptr.append(self.row_ptr[-1] + node.num_outputs())
        self.num_entries = self.row_ptr[-1]
        # (arguments, then auxiliary states: the order an operator's calls take)
        ordered = [n.ordered_inputs() for n in self.nodes]
        self.node_inputs = [[self.row_ptr[index[id(src)]] + k for src, k in ins]
                            for ins in ordered]
        self.num_args = [n.num_args() for n in self.nodes]
        self.heads = [self.row_ptr[index[id(n)]] + k for n, k in symbol._outputs]
        aux = set()
        for i, node in enumerate(self.nodes):
            if node.op is not None:
                for src, _ in ordered[i][self.num_args[i]:]:
                    aux.add(index[id(src)])
        variables = [i for i, n in enumerate(self.nodes) if n.op is None]
        self.arg_nodes = [i for i in variables if i not in aux]
        self.aux_nodes = [i for i in variables if i in aux]
        self.arg_names = [self.nodes[i].name for i in self.arg_nodes]
        self.aux_names = [self.nodes[i].name for i in self.aux_nodes]
        self.entry_node = []
        for i, node in enumerate(self.nodes):
            self.entry_node += [i] * node.num_outputs()
        # users[e]: (node id, input position) of every node reading entry e
        self.users = [[] for _ in range(self.num_entries)]
        for i, eids in enumerate(self.node_inputs):
            for j, e in enumerate(eids):
                self.users[e].append((i, j))
        self.shapes = None
        self.dtypes = None
        self.backward = None
        self.memory = None
        self.bn_chains = self.held_reads = None      # executor/bn_fold.py

    def fresh(self):
        """The same indexed graph with no pass run yet. The structure is shared (no
        pass changes it), so a graph bound again for other shapes is not renumbered
        (executor/template.py)."""
        g = object.__new__(Graph)
        g.__dict__.update(self.__dict__)
        g.shapes = g.dtypes = g.backward = g.memory = None
        g.bn_chains = g.held_reads = None
        return g

    def entry(self, nid, k=0):
        return self.row_ptr[nid] + k

    def entry_name(self, eid):
        nid = self.entry_node[eid]
        return self.nodes[nid].output_names()[eid - self.row_ptr[nid]]

    def is_variable_entry(self, eid):
        return self.nodes[self.entry_node[eid]].op is None

    def describe_entry(self, eid):
        """'<name>' for a variable, 'output k of operator X (node)' otherwise."""
        node = self.nodes[self.entry_node[eid]]
        if node.op is None:
            return node.name
        return self.entry_name(eid)


def topo_order(head_nodes):
    """Every node reachable from head_nodes, inputs before users, in the order of a
    depth-first walk that visits inputs left to right (MXNet's order)."""
    order, seen = [], set()
    for head in head_nodes:
        if id(head) in seen:
            continue
        seen.add(id(head))
        stack = [[head, 0]]
        while stack:
            top = stack[-1]
            node, i = top
            if i < len(node.inputs):
                top[1] = i + 1
                child = node.inputs[i][0]
                if id(child) not in seen:
                    seen.add(id(child))
                    stack.append([child, 0])
            else:
                stack.pop()
                order.append(node)
    return order
