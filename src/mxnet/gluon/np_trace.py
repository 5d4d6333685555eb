"""Hybridizing a HybridBlock in NumPy mode by tracing.

After ``npx.set_np()``, ``hybrid_forward(F, x, ...)`` is written with ``F.np.*`` and
``F.npx.*``, whose functions take their decisions (result shapes, dtype promotion,
axis handling) from the arrays' shapes. A hybridized block therefore builds its graph
the way MXNet 2's deferred compute does: it runs ``hybrid_forward`` once with
``F = mx.nd`` on the real inputs and parameters while every operator call is recorded
here (instead of on the autograd tape), and turns the calls into a Symbol with one
variable per input and parameter. The graph is specialised to the input shapes and
dtypes it was traced with (the block traces again for new ones).

Arrays the computation creates that derive from no input (``arange`` masks, constant
matrices) become variables named ``<prefix>constK`` whose values the block keeps and
exports with its parameters. Basic-slicing and reshape views of traced arrays become
``Reshape``/``slice`` nodes. Reading a traced array's values on the host (``asnumpy``,
``item``, boolean masks, host-computed functions) would freeze data-dependent values
into the graph, so it raises an MXNetError naming the problem instead.
"""
from .. import tape as _tape
from ..base import MXNetError
from ..ndarray.ndarray import NDArray
from ..operator.registry import get_op
from ..symbol.graph import Node
from ..symbol.symbol import Symbol

__all__ = ["trace_graph", "replay", "HostReadError"]


class HostReadError(MXNetError):
    """The traced computation read an input-derived value on the host."""


class _Tracer:
    def __init__(self, prefix):
        self.prefix = prefix
        self.entries = {}          # id(array) -> graph entry (Node, index)
        self.keep = []             # the arrays seen, so their ids stay unique
        self.chunks = {}           # id(chunk) -> (array, entry) of a traced array on it
        self.consts = {}           # variable name -> constant NDArray
        self.counts = {}
        self.derived = set()       # ids of chunks holding input-derived values

    def name(self, base):
        k = self.counts.get(base, 0)
        self.counts[base] = k + 1
        return f"{self.prefix}{base}{k}"

    def bind(self, arr, entry, derived=True):
        self.entries[id(arr)] = entry
        self.keep.append(arr)
        self.chunks.setdefault(id(arr._chunk), (arr, entry))
        if derived:
            self.derived.add(id(arr._chunk))

    def _node(self, op_name, inputs, **given):
        op = get_op(op_name)
        p = op.params.parse(op.name, given)
        return Node(op, self.name(op.name.lower().lstrip("_")), p,
                    {k: str(v) for k, v in given.items()}, {}, inputs)

    def entry(self, arr):
        e = self.entries.get(id(arr))
        if e is not None:
            return e
        base = self.chunks.get(id(arr._chunk))
        if base is not None:                        # a view of a traced array
            e = self._view_entry(base[0], base[1], arr)
        else:                                       # a constant
            name = self.name("const")
            state = _tape._state
            # (also called for the outputs after tracing, when recording is off)
            saved = (state.tracer, state.recording)
            state.tracer, state.recording = None, False
            try:
                self.consts[name] = arr.copy()
            finally:
                state.tracer, state.recording = saved
            from ..symbol import var
            e = var(name, shape=arr.shape, dtype=arr.dtype)._outputs[0]
            self.bind(arr, e, derived=False)
            return e
        self.bind(arr, e, derived=id(arr._chunk) in self.derived)
        return e

    def _view_entry(self, base, base_entry, arr):
        b_off = 0 if base._view is None else base._view[0]
        a_off = 0 if arr._view is None else arr._view[0]
        start = a_off - b_off
        shape = tuple(arr.shape)
        if start == 0 and shape == tuple(base.shape):
            return base_entry
        if start == 0 and arr.size == base.size:
            node = self._node("_np_reshape", [base_entry], newshape=shape)
            return (node, 0)
        flat = self._node("_np_reshape", [base_entry], newshape=(-1,))
        piece = self._node("slice", [(flat, 0)], begin=(start,), end=(start + arr.size,))
        return (self._node("_np_reshape", [(piece, 0)], newshape=shape), 0)

    def __call__(self, op, p, args, aux, outputs, is_train=None, ctx=None):
        if op.params is None:
            raise MXNetError("hybridize in NumPy mode: an autograd.Function cannot be "
                             "part of a hybridized graph")
        inputs = [self.entry(a) for a in list(args) + list(aux)]
        derived = any(id(a._chunk) in self.derived for a in list(args) + list(aux))
        node = None
        if op.name == "_getitem" and len(args) == 1:
            node = self._basic_index(inputs[0], args[0].shape, p.key, outputs[0].shape)
        if node is None:
            given = dict(getattr(p, "given", {}) or {})
            node = Node(op, self.name(op.name.lower().lstrip("_")), p, given, {}, inputs)
        for i, o in enumerate(outputs):
            self.bind(o, (node, i), derived)

    def _basic_index(self, entry, shape, key, out_shape):
        """x[key] for a key of ints, slices, None and Ellipsis as slice + Reshape nodes
        (parameters that survive export, unlike a Python key object)."""
        key = key if isinstance(key, tuple) else (key,)
        if not all(k is None or k is Ellipsis or isinstance(k, (int, slice)) for k in key):
            return None
        if Ellipsis in key:
            i = key.index(Ellipsis)
            fill = len(shape) - sum(k is not None and k is not Ellipsis for k in key)
            key = key[:i] + (slice(None),) * fill + key[i + 1:]
        key = [k for k in key if k is not None]
        key += [slice(None)] * (len(shape) - len(key))
        begin, end, step = [], [], []
        for k, d in zip(key, shape):
            if isinstance(k, int):
                k = k + d if k < 0 else k
                begin.append(k), end.append(k + 1), step.append(1)
            else:
                b, e, st = k.indices(d)
                begin.append(b)
                end.append(None if e < 0 else e)
                step.append(st)
        sl = self._node("slice", [entry], begin=tuple(begin), end=tuple(end),
                        step=tuple(step))
        return self._node("_np_reshape", [(sl, 0)], newshape=tuple(out_shape))

    def check_host_read(self, arr):
        if id(arr._chunk) in self.derived:
            raise HostReadError(
                "hybridize in NumPy mode: the block reads the values of an array computed "
                "from its inputs on the host (asnumpy/item/bool, a boolean mask or a "
                "host-computed function); such a computation cannot be hybridized")


def trace_graph(block, flat_inputs, input_syms, params, param_syms, run):
    """Trace ``run()`` (which calls hybrid_forward on the given arrays) and return
    (output Symbol, output format, {const name: NDArray}, the outputs' shapes, whether
    any traced array is zero-size)."""
    tracer = _Tracer(block.prefix)
    for arr, sym in zip(flat_inputs, input_syms):
        tracer.bind(arr, sym._outputs[0])
    for arr, sym in zip(params, param_syms):
        tracer.bind(arr, sym._outputs[0])
    state = _tape._state
    prev = (state.recording, getattr(state, "tracer", None))
    orig_read = NDArray.asnumpy

    def guarded_asnumpy(self):
        tracer.check_host_read(self)
        return orig_read(self)

    # print(x) inside hybrid_forward: MXNet shows the symbol (``<_Symbol data>``) while
    # it builds the graph, so printing is no host read and the block stays hybridized
    from ..numpy.multiarray import ndarray as np_ndarray
    saved_text = {(cls, m): cls.__dict__[m] for cls in (NDArray, np_ndarray)
                  for m in ("__repr__", "__str__") if m in cls.__dict__}

    def symbolic_text(orig):
        def text(self):
            e = tracer.entries.get(id(self))
            if e is not None and id(self._chunk) in tracer.derived:
                node, index = e
                name = node.name if node.num_outputs() == 1 or node.op is None \
                    else f"{node.name}_output{index}"
                return f"<_Symbol {name}>"
            return orig(self)
        return text

    NDArray.asnumpy = guarded_asnumpy
    for (cls, m), fn in saved_text.items():
        setattr(cls, m, symbolic_text(fn))
    state.recording, state.tracer = True, tracer
    try:
        outs = run()
    finally:
        state.recording, state.tracer = prev
        NDArray.asnumpy = orig_read
        for (cls, m), fn in saved_text.items():
            setattr(cls, m, fn)
    from .block import _flatten, _to_np
    _to_np(outs)                 # mixed mx.np / classic outputs: TypeError, as imperatively
    flat_out, out_format = _flatten(outs, "output")
    entries = []
    for o in flat_out:
        e = tracer.entry(o)
        if e[0].op is None:          # an input or parameter returned as it is
            e = (tracer._node("_copy", [e]), 0)
        entries.append(e)
    zero_size = any(0 in a.shape for a in tracer.keep)
    return (Symbol(entries), out_format, tracer.consts, [o.shape for o in flat_out],
            zero_size)


def replay(sym, feed, np_arrays=True, order=None):
    """Run the traced graph's operators in order on arrays (``feed``: variable name ->
    array), through the imperative dispatcher: autograd records them as usual. Used
    where the graph executor's legacy shape rules (0 = unknown) cannot hold the traced
    shapes (zero-size arrays) and for graphs with dynamic output shapes. The results are
    mx.np arrays unless ``np_arrays`` is False. ``order``: the symbol's nodes in
    topological order, when the caller keeps them."""
    from ..executor.graph import topo_order
    from ..ndarray.dispatch import invoke
    from ..numpy.multiarray import wrap
    values = {}
    for node in order if order is not None else topo_order([e[0] for e in sym._outputs]):
        if node.op is None:
            values[id(node)] = [feed[node.name]]
            continue
        args = [values[id(n)][i] for n, i in node.inputs]
        res = invoke(node.op, args, None, p=node.params)
        values[id(node)] = res if isinstance(res, list) else [res]
    out = [values[id(n)][i] for n, i in sym._outputs]
    return [wrap(o) for o in out] if np_arrays else out
