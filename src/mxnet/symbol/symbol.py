"""Symbol: a handle on one or more outputs of a symbolic graph (MXNet 1.x ``mx.sym``).

A Symbol is a tuple of entries ``(node, output index)`` over shared ``Node`` objects
(see ``graph.py``). Building one never computes anything; ``bind``/``simple_bind``
turn it into an Executor. Operator functions (``mx.sym.FullyConnected``), fluent
methods (``x.sum()``) and Python operators (``a + 1``) all create symbols through
``create.create_symbol``.
"""
import ctypes
import numbers

import numpy as np

from ..base import MXNetError, NotImplementedForSymbol
from ..atomic_file import write_text
from ..op_methods import OpMethods
from .graph import HIDDEN_KEYS, Node, attr_key, copy_graph, is_dunder, topo_order
from .. import symbol as sym
from ..executor.infer import infer_symbol_shapes, infer_symbol_types
from ..executor.bind import bind, simple_bind
from ..context import current_context

__all__ = ["Symbol"]

# Python operators: NDArray-style op name -> (symbol op, name hint) for symbol operands,
# for a scalar right operand, and for a scalar left operand (None: commutative).
_BINARY = {
    "broadcast_add": (("elemwise_add", "_plus"), ("_plus_scalar", "_plusscalar"), None),
    "broadcast_sub": (("elemwise_sub", "_minus"), ("_minus_scalar", "_minusscalar"),
                      ("_rminus_scalar", "_rminusscalar")),
    "broadcast_mul": (("elemwise_mul", "_mul"), ("_mul_scalar", "_mulscalar"), None),
    "broadcast_div": (("elemwise_div", "_div"), ("_div_scalar", "_divscalar"),
                      ("_rdiv_scalar", "_rdivscalar")),
    "broadcast_mod": (("_mod", "_mod"), ("_mod_scalar", "_modscalar"),
                      ("_rmod_scalar", "_rmodscalar")),
    "broadcast_power": (("_power", "_power"), ("_power_scalar", "_powerscalar"),
                        ("_rpower_scalar", "_rpower_scalar")),
    "broadcast_equal": (("_equal", "_equal"), ("_equal_scalar", "_equal_scalar"), None),
    "broadcast_not_equal": (("_not_equal", "_not_equal"),
                            ("_not_equal_scalar", "_not_equal_scalar"), None),
    "broadcast_greater": (("_greater", "_greater"), ("_greater_scalar", "_greater_scalar"),
                          None),
    "broadcast_greater_equal": (("_greater_equal", "_greater_equal"),
                                ("_greater_equal_scalar", "_greater_equal_scalar"), None),
    "broadcast_lesser": (("_lesser", "_lesser"), ("_lesser_scalar", "_lesser_scalar"), None),
    "broadcast_lesser_equal": (("_lesser_equal", "_lesser_equal"),
                               ("_lesser_equal_scalar", "_lesser_equal_scalar"), None),
}


# Symbols whose handle was asked for, by handle value (see Symbol.handle)
_HANDLES = {}


class Symbol(OpMethods):
    """Symbolic outputs of a computation graph.

    Create symbols with ``mx.sym.Variable`` and the operator functions; combine them
    with Python operators, ``mx.sym.Group`` and composition (``net(data=other)``).
    """

    __slots__ = ("_outputs", "__weakref__")

    def __init__(self, outputs):
        if isinstance(outputs, ctypes.c_void_p):     # Symbol(handle), MXNet's spelling
            outputs = Symbol.from_handle(outputs)._outputs
        elif outputs is None:       # Symbol(None): unpickling fills it (__setstate__)
            outputs = ()
        self._outputs = tuple(outputs)

    # ------------------------------------------------------------------ handles
    @property
    def handle(self):
        """A ``SymbolHandle`` standing for this symbol in the C API functions pymxnet
        emulates (``mxnet.base._LIB``); the symbol stays alive as long as the handle
        may be used, as a handle MXNet hands out does."""
        _HANDLES[id(self)] = self
        return ctypes.c_void_p(id(self))

    @staticmethod
    def from_handle(handle):
        """The Symbol a handle from ``Symbol.handle`` (or an emulated C API call)
        stands for."""
        value = handle.value if isinstance(handle, ctypes.c_void_p) else handle
        sym = _HANDLES.get(value)
        if sym is None:
            raise MXNetError(f"{handle!r} is not a symbol handle pymxnet handed out")
        return sym

    # ------------------------------------------------------------------ hooks
    def _fluent_fn(self, name):
        return getattr(sym, name)

    def _binary_op(self, other, op, scalar_op, reflect=False):
        from .create import create_by_name
        sym_op, scalar, rscalar = _BINARY[op]
        if isinstance(other, Symbol):
            lhs, rhs = (other, self) if reflect else (self, other)
            return create_by_name(sym_op[0], [lhs, rhs], {}, hint=sym_op[1])
        if isinstance(other, numbers.Number):
            name, hint = (rscalar or scalar) if reflect else scalar
            return create_by_name(name, [self], {"scalar": other}, hint=hint)
        raise TypeError(f"type {type(other)} not supported")

    def dot(self, other):
        """``dot(self, other)`` (np-style ``x.dot(w)`` in NumPy-mode graphs)."""
        from .. import symbol as sym
        return sym.dot(self, other)

    def __neg__(self):
        return self.__mul__(-1.0)

    def __abs__(self):
        return self._fluent_fn("abs")(self)

    __hash__ = object.__hash__

    # ---------------------------------------------------------- NDArray-only
    def __bool__(self):
        raise NotImplementedForSymbol(self.__bool__, 'operator "bool"')

    def _nd_only(name):                       # noqa: N805  (class-body helper)
        def method(self, *args, **kwargs):
            raise NotImplementedForSymbol(name)
        method.__name__ = name
        return method

    asnumpy = _nd_only("asnumpy")
    asscalar = _nd_only("asscalar")
    wait_to_read = _nd_only("wait_to_read")
    as_in_context = _nd_only("as_in_context")
    attach_grad = _nd_only("attach_grad")
    __iadd__ = _nd_only("+=")
    __isub__ = _nd_only("-=")
    __imul__ = _nd_only("*=")
    __itruediv__ = _nd_only("/=")
    __imod__ = _nd_only("%=")
    del _nd_only

    # --------------------------------------------------------------- fluent
    def reshape(self, *args, **kwargs):
        """Reshape (MXNet's special codes 0, -1, -2, -3, -4 and ``reverse``)."""
        return self._fluent_fn("reshape")(self, *args, **kwargs)

    def astype(self, dtype, **kwargs):
        """Cast to dtype (the ``Cast`` operator)."""
        return self._fluent_fn("cast")(self, dtype=dtype, **kwargs)

    def as_np_ndarray(self):
        """The same graph for ``mx.sym.np`` functions (one Symbol class serves both)."""
        return self

    def as_nd_ndarray(self):
        """The same graph (one Symbol class serves mx.sym and mx.sym.np)."""
        return self

    # ------------------------------------------------------------ structure
    @property
    def name(self):
        """The name of the node behind this symbol's outputs (one node, possibly with
        several outputs, e.g. ``split``); None for a group of several nodes."""
        node = self._single_node()
        return None if node is None else node.name

    def _single_node(self):
        """The node all outputs come from, or None when they come from several."""
        if not self._outputs:
            return None
        node = self._outputs[0][0]
        return node if all(n is node for n, _ in self._outputs) else None

    def __repr__(self):
        if self.name is not None:
            return f"<Symbol {self.name}>"
        return f"<Symbol group [{', '.join(n.name for n, _ in self._outputs)}]>"

    __str__ = __repr__

    def __len__(self):
        return len(self._outputs)

    def __iter__(self):
        return (self[i] for i in range(len(self._outputs)))

    def __array__(self, dtype=None, copy=None):
        """A Symbol is one object to NumPy: a 0-d object array. A Symbol is a sequence
        whose items are Symbols, so NumPy would nest into it without end; NumPy 1.x
        then made an object array of a list of Symbols (MXNet's own tests do
        ``np.repeat(sym_list, n)``), NumPy 2 raises. This keeps NumPy 1.x's result."""
        if dtype is not None and np.dtype(dtype) != np.dtype(object):
            raise TypeError(f"a Symbol cannot be converted to an array of {dtype}")
        out = np.empty((), dtype=object)
        out[()] = self
        return out

    def __getitem__(self, index):
        """Output by position, by output name, or a slice of outputs (a group)."""
        if isinstance(index, str):
            names = self.list_outputs()
            hits = [i for i, n in enumerate(names) if n == index]
            if not hits:
                raise ValueError(f"Cannot find output that matches name '{index}'")
            if len(hits) > 1:
                raise ValueError(f"There are multiple outputs with name '{index}'")
            index = hits[0]
        if isinstance(index, slice):
            return Symbol(self._outputs[index])
        if not isinstance(index, (int, np.integer)):
            raise TypeError("Symbol only support integer index to fetch i-th output")
        n = len(self._outputs)
        if not -n <= index < n:
            raise IndexError(f"index {index} out of range for a symbol with {n} outputs")
        return Symbol([self._outputs[index]])

    def __copy__(self):
        return Symbol(copy_graph(self._outputs))

    def __deepcopy__(self, memo):
        return self.__copy__()

    def copy(self):
        return self.__copy__()

    def __reduce__(self):
        # MXNet's pickle: Symbol(None), then __setstate__ with the graph's JSON, so
        # pickles load both here and in MXNet 1.x
        return (Symbol, (None,), self.__getstate__())

    def __getstate__(self):
        """{'handle': the symbol's JSON}, as MXNet pickles a Symbol."""
        return {"handle": self.tojson()}

    def __setstate__(self, state):
        """Become the symbol a ``__getstate__`` dict holds (MXNet's pickles too)."""
        from .json_io import load_json
        handle = state.get("handle") if isinstance(state, dict) else None
        if not isinstance(handle, str):
            raise MXNetError("Symbol.__setstate__ expects {'handle': the symbol's JSON}")
        self._outputs = load_json(handle)._outputs

    def __call__(self, *args, **kwargs):
        """Compose: a copy of this symbol with variables replaced by the given symbols
        (``net(data=other)``; keyword arguments only, as in MXNet). ``name`` renames
        the copy's (first) output node, as MXNet's composition does."""
        name = kwargs.pop("name", None)
        if args:
            raise MXNetError("General composition only supports keyword arguments: "
                             "call the symbol as sym(var_name=other_symbol)")
        variables = {n.name: n for n in topo_order(self._head_nodes()) if n.op is None}
        replace = {}
        for key, value in kwargs.items():
            if key not in variables:
                raise MXNetError(f"Symbol.Compose: keyword argument name {key} not found. "
                                 f"Candidate arguments: {list(variables)}")
            if not isinstance(value, Symbol):
                raise TypeError(f"Compose expects Symbol values, got {type(value).__name__} "
                                f"for '{key}'")
            if len(value._outputs) != 1:
                raise MXNetError(f"Keyword argument {key} is a group of "
                                 f"{len(value._outputs)} outputs; a single output is required")
            replace[id(variables[key])] = value._outputs[0]
        outputs = copy_graph(self._outputs, replace)
        head = outputs[0][0] if outputs else None
        if name and head is not None and head.op is not None and id(head) not in {
                id(e[0]) for e in replace.values()}:     # never rename a substitute's node
            head.name = name
        return Symbol(outputs)

    def _compose(self, *args, **kwargs):
        """In-place composition (MXNet's ``_compose``)."""
        self._outputs = self(*args, **kwargs)._outputs

    def _head_nodes(self):
        return [n for n, _ in self._outputs]

    def _gen_atomic_symbol(self):
        """A symbol holding only this symbol's operator node (same op, parameters and
        attributes) with its inputs left open, ready to be composed again."""
        heads = {id(n): n for n in self._head_nodes()}
        if len(heads) != 1:
            raise MXNetError("_gen_atomic_symbol needs a symbol with one head node, got "
                             f"{len(heads)}")
        node = next(iter(heads.values()))
        if node.op is None:
            raise MXNetError("_gen_atomic_symbol: a variable is not an operator node")
        atomic = Node(node.op, node.name, node.params, dict(node.given), dict(node.attrs))
        return Symbol([(atomic, i) for i in range(node.num_visible_outputs())])

    def _topo(self):
        return topo_order(self._head_nodes())

    def get_internals(self):
        """A group of every output of every node (variables included), in graph order."""
        entries = []
        for node in self._topo():
            entries.extend((node, i) for i in range(node.num_visible_outputs()))
        return Symbol(entries)

    def get_children(self):
        """A group of the inputs of this symbol's node(s); None for a variable."""
        seen, nodes = set(), []
        for n in self._head_nodes():      # a multi-output node counts once
            if id(n) not in seen:
                seen.add(id(n))
                nodes.append(n)
        entries = [e for n in nodes for e in n.inputs]
        return Symbol(entries) if entries else None

    # ------------------------------------------------------------- listings
    def _aux_ids(self, order):
        aux = set()
        for node in order:
            if node.op is not None:
                for src, _ in node.ordered_inputs()[node.num_args():]:
                    aux.add(id(src))
        return aux

    def list_arguments(self):
        """Names of the arguments (variables that are not auxiliary states)."""
        order = self._topo()
        aux = self._aux_ids(order)
        return [n.name for n in order if n.op is None and id(n) not in aux]

    def list_auxiliary_states(self):
        """Names of the auxiliary states (e.g. BatchNorm's moving_mean, moving_var)."""
        order = self._topo()
        aux = self._aux_ids(order)
        return [n.name for n in order if n.op is None and id(n) in aux]

    def list_inputs(self):
        """Names of every variable, arguments and auxiliary states, in graph order."""
        return [n.name for n in self._topo() if n.op is None]

    def list_outputs(self):
        return [node.output_names()[i] for node, i in self._outputs]

    # ----------------------------------------------------------- attributes
    def attr(self, key):
        """The string value of attribute key on this symbol's node (None if absent,
        or for a group of several nodes)."""
        node = self._single_node()
        if node is None:
            return None
        attrs = node.all_attrs()
        return attrs.get(attr_key(key), attrs.get(key))

    def list_attr(self, recursive=False):
        """Attributes of this symbol's node (parameters as strings included)."""
        if recursive:
            raise DeprecationWarning("Symbol.list_attr with recursive=True has been "
                                     "deprecated. Please use attr_dict instead.")
        # (a group lists its first node's attributes, as MXNet does)
        return _listed(self._outputs[0][0].all_attrs())

    def attr_dict(self):
        """{node name: attributes} for every node that has attributes."""
        out = {}
        for node in self._topo():
            attrs = node.all_attrs()
            if attrs:
                out[node.name] = _listed(attrs)
        return out

    def _set_attr(self, **kwargs):
        """Set string attributes on this symbol's node."""
        for key, value in kwargs.items():
            if not isinstance(value, str):
                raise ValueError("Set Attr only accepts string values")
        nodes = {id(n): n for n in self._head_nodes()}
        if len(nodes) != 1:
            raise MXNetError("Symbol.SetAttrs only works for non-grouped symbol")
        for node in nodes.values():
            for key, value in kwargs.items():
                node.attrs[attr_key(key)] = value

    # ------------------------------------------------------------ inference
    def infer_shape(self, *args, **kwargs):
        """Infer shapes from the given input shapes (by position in list_arguments()
        order, or by name). Returns (arg_shapes, out_shapes, aux_shapes), or
        (None, None, None) with a warning when some shape stays unknown."""
        res = infer_symbol_shapes(self, args, kwargs, partial=False)
        if res is None:
            return None, None, None
        return res

    def infer_shape_partial(self, *args, **kwargs):
        """Like infer_shape, but unknown shapes come back as () and unknown dims as 0."""
        return infer_symbol_shapes(self, args, kwargs, partial=True)

    def infer_type(self, *args, **kwargs):
        """Infer dtypes (numpy types) from the given input dtypes. Returns
        (arg_types, out_types, aux_types), or (None, None, None) with a warning when
        some type stays unknown."""
        res = infer_symbol_types(self, args, kwargs, partial=False)
        if res is None:
            return None, None, None
        return res

    def infer_type_partial(self, *args, **kwargs):
        return infer_symbol_types(self, args, kwargs, partial=True)

    # ------------------------------------------------------- serialisation
    def tojson(self, remove_amp_cast=True):
        """The graph as MXNet 1.x symbol JSON."""
        from .json_io import to_json
        return to_json(_without_amp_casts(self) if remove_amp_cast else self)

    def save(self, fname, remove_amp_cast=True):
        """Write the graph to fname as MXNet 1.x symbol JSON (``*-symbol.json``)."""
        if not isinstance(fname, str):
            raise TypeError("fname needs to be a string")
        write_text(fname, self.tojson(remove_amp_cast))

    def debug_str(self):
        """A readable listing of the graph (outputs, variables, operators)."""
        from .json_io import debug_str
        return debug_str(self)

    # ------------------------------------------------------------ execution
    def bind(self, ctx, args, args_grad=None, grad_req="write", aux_states=None,
             group2ctx=None, shared_exec=None):
        """Bind arrays to the arguments and return an Executor.

        args / args_grad / aux_states: lists in list_arguments() (list_auxiliary_states())
        order or dicts by name; the arrays are used as given (not copied), so executors
        bound to the same arrays see each other's updates. grad_req: 'write', 'add',
        'null', or a per-argument list or dict ('null' for names left out).
        """
        from .partition import partition_for_bind
        return bind(partition_for_bind(self), ctx, args, args_grad, grad_req, aux_states,
                    group2ctx, shared_exec)

    def simple_bind(self, ctx, grad_req="write", type_dict=None, stype_dict=None,
                    group2ctx=None, shared_arg_names=None, shared_exec=None,
                    shared_buffer=None, **kwargs):
        """Infer every shape from the given input shapes (keyword arguments whose
        values are shape tuples; others are ignored, as MXNet does), allocate
        zero-filled arguments, gradients and auxiliary states, and bind them."""
        shapes = {k: v for k, v in kwargs.items() if isinstance(v, (tuple, list))}
        from .partition import partition_for_bind
        return simple_bind(partition_for_bind(self), ctx, grad_req, type_dict, stype_dict,
                           group2ctx, shared_arg_names, shared_exec, shared_buffer, shapes)

    def eval(self, ctx=None, **kwargs):
        """Bind the given arrays (by name), run forward and return the outputs."""
        ex = self.bind(ctx or current_context(), kwargs, grad_req="null")
        return ex.forward()

    def gradient(self, wrt):
        raise MXNetError("Symbol.gradient is not implemented (as in MXNet 1.x); bind the "
                         "symbol and call Executor.backward instead")

    def optimize_for(self, backend, args=None, aux=None, ctx=None, shape_dict=None,
                     type_dict=None, stype_dict=None, skip_infer=False, **kwargs):
        """The graph partitioned for subgraph ``backend`` (a new Symbol). The oneDNN
        backends (``MKLDNN``, ``MKLDNN_QUANTIZE``) leave the graph as it is: pymxnet's
        executor applies its oneDNN kernels and fusions when it binds the graph (see
        ``symbol/backends.py``). An unknown backend warns and leaves it unchanged, as
        MXNet 1.9.1 does."""
        from .backends import check_backend, partitioned
        check_backend(backend, "Symbol.optimize_for")
        return partitioned(self, backend)

    def get_backend_symbol(self, backend):
        """The graph partitioned for ``backend`` (see ``optimize_for``); an unknown
        backend is an MXNetError."""
        from .backends import check_backend, partitioned
        check_backend(backend, "Symbol.get_backend_symbol", strict=True)
        return partitioned(self, backend, version=1)


def _without_amp_casts(symbol):
    """A copy of symbol with its amp_cast / amp_multicast nodes bypassed (what MXNet
    saves by default: the float32 graph AMP was applied to)."""
    order = symbol._topo()
    if not any(n.op is not None and n.op.name in ("amp_cast", "amp_multicast")
               for n in order):
        return symbol
    new = {}

    def source(entry):
        node, k = entry
        while node.op is not None and node.op.name in ("amp_cast", "amp_multicast"):
            node, k = node.inputs[k]
        return (new[id(node)], k)
    for node in order:
        if node.op is not None and node.op.name in ("amp_cast", "amp_multicast"):
            continue
        copy = node.copy()
        copy.inputs = [source(e) for e in node.inputs]
        new[id(node)] = copy
    return Symbol([source(e) for e in symbol._outputs])


def _listed(attrs):
    """Attributes as MXNet lists them: hidden keys also under their plain spelling."""
    out = dict(attrs)
    for key, value in attrs.items():
        if is_dunder(key) and key[2:-2] in HIDDEN_KEYS:
            out[key[2:-2]] = value
    return out



# MXNet 1.9.1 defines these free functions in this module, and code imports them from
# here (``from mxnet.symbol.symbol import Group``); they live in the mx.sym package.
_PACKAGE_FUNCTIONS = frozenset(
    "Group Variable var load load_json zeros ones full arange linspace eye histogram "
    "hypot maximum minimum pow power split_v2".split())


def __getattr__(name):
    if name in _PACKAGE_FUNCTIONS:
        from .. import symbol as package
        return getattr(package, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
