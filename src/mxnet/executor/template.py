"""What binding one symbol again, to inputs of other shapes, can reuse.

A hybridized block binds its graph once per input signature; a decoder run step by
step (Sockeye's, GluonNLP's beam search, GluonTS's forecasts) sees a new sequence
length at nearly every call, so binding is on its critical path. Most of a bind does
not depend on the shapes: the argument lists, common-subexpression elimination, the
indexed graph, dtype inference and the casts AMP's graphs bypass or hoist depend only
on the symbol, the inputs' dtypes, the gradient requests and the device. A
``BindTemplate`` keeps those, so a bind for new shapes runs only shape inference, the
gradient and memory passes and the executor's own preparation.

The template belongs to its owner (``gluon._cached_op.CachedOp``), whose symbol is
never changed after it is made; a symbol a user may still compose or re-attribute is
bound without one.
"""
from .cse import eliminate_common_expr, enabled as cse_enabled
from .graph import Graph

__all__ = ["BindTemplate"]


class _Typed:
    """The graph one (dtypes, gradient requests, device) key binds: the symbol it
    numbers (CSE'd, AMP no-op casts bypassed), whether AMP's weight casts were hoisted,
    the indexed graph (its structure) and every entry's dtype."""
    __slots__ = ("optimized", "bypassed", "hoisted", "graph", "dtypes")

    def __init__(self, optimized, bypassed, hoisted, graph, dtypes):
        self.optimized, self.bypassed, self.hoisted = optimized, bypassed, hoisted
        self.graph, self.dtypes = graph, list(dtypes)


class BindTemplate:
    """The shape-independent part of binding ``symbol`` (see the module docstring):
    the symbol as bound, i.e. after a subgraph backend's partition (Symbol.bind)."""

    def __init__(self, symbol):
        self.symbol = symbol
        self.arg_names = self.symbol.list_arguments()
        self.aux_names = self.symbol.list_auxiliary_states()
        self._optimized = {}            # cse enabled -> (symbol, its Graph)
        self._typed = {}                # key() -> _Typed

    def graph_of(self, cse):
        """(the symbol to number, a fresh Graph of it) before dtypes are known."""
        found = self._optimized.get(cse)
        if found is None:
            sym = eliminate_common_expr(self.symbol) if cse else self.symbol
            found = self._optimized[cse] = (sym, Graph(sym))
        return found[0], found[1].fresh()

    @staticmethod
    def key(arg_arrays, aux_arrays, grad_reqs, device):
        return (tuple(a.dtype for a in arg_arrays), tuple(a.dtype for a in aux_arrays),
                tuple(grad_reqs), device, cse_enabled())

    def typed(self, key):
        """The _Typed a bind with ``key`` found before, or None."""
        return self._typed.get(key)

    def keep(self, key, optimized, bypassed, hoisted, graph):
        """Remember what a bind with ``key`` settled on (graph: its dtypes inferred)."""
        self._typed[key] = _Typed(optimized, bypassed, hoisted, graph, graph.dtypes)
