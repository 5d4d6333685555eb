"""Blocks: the building units of Gluon models (MXNet 1.9.1's ``Block``,
``HybridBlock``, ``SymbolBlock``).

Naming follows MXNet: a block created outside any ``name_scope()`` takes its prefix
from the thread's ``mx.name.NameManager`` (``dense0_``, ``hybridsequential0_``); a
block created inside a parent's ``with self.name_scope():`` gets the parent's prefix
plus its own per-parent counter (``hybridsequential0_conv0_``). Parameters are named
``<prefix><name>`` and symbols created inside a name scope get the prefix too.

``HybridBlock.hybridize()`` turns the block into one Symbol graph, built by calling
``hybrid_forward`` with ``F = mx.sym``, and runs it through cached executors (see
``_cached_op``); without hybridize, ``hybrid_forward`` runs with ``F = mx.nd``.
"""
import copy
import json
import re
import threading
import warnings
from collections import OrderedDict, defaultdict

import numpy as np

from .. import initializer, name as _name, ndarray, symbol
from ..atomic_file import together, write_text
from ..base import MXNetError, mx_real_t
from ..ndarray import NDArray
from ..symbol.backends import check_backend, partitioned
from ..symbol import Symbol
from .parameter import DeferredInitializationError, Parameter, ParameterDict, data_on
from .utils import HookHandle, _brief_print_list, _indent
from ..util import is_np_array as _is_np_array
from ..numpy_extension import to_np
from ._cached_op import CachedOp
from ..tape import _state as _tape_state

__all__ = ["Block", "HybridBlock", "SymbolBlock"]


class _BlockScope:
    """The naming scope of a block (``with block.name_scope():``)."""
    _current = threading.local()

    def __init__(self, block):
        self._block = block
        self._counter = {}
        self._old_scope = None
        self._name_scope = None

    @staticmethod
    def create(prefix, params, hint):
        """(prefix, ParameterDict) for a new block with alias ``hint``."""
        current = getattr(_BlockScope._current, "value", None)
        if current is None:
            if prefix is None:
                prefix = _name.NameManager.current.get(None, hint) + "_"
            params = ParameterDict(prefix) if params is None else \
                ParameterDict(params.prefix, params)
            return prefix, params
        if prefix is None:
            count = current._counter.get(hint, 0)
            prefix = f"{hint}{count}_"
            current._counter[hint] = count + 1
        if params is None:
            parent = current._block.params
            params = ParameterDict(parent.prefix + prefix, parent._shared)
        else:
            params = ParameterDict(params.prefix, params)
        return current._block.prefix + prefix, params

    def __enter__(self):
        if self._block._empty_prefix:
            return self
        self._old_scope = getattr(_BlockScope._current, "value", None)
        _BlockScope._current.value = self
        self._name_scope = _name.Prefix(self._block.prefix)
        self._name_scope.__enter__()
        return self

    def __exit__(self, ptype, value, trace):
        if self._block._empty_prefix:
            return
        self._name_scope.__exit__(ptype, value, trace)
        self._name_scope = None
        _BlockScope._current.value = self._old_scope
        # not kept past the with-block: a child block shared between parents would
        # otherwise keep the last parent that ran it (and its cached graph) alive
        self._old_scope = None


def _flatten(args, inout_str):
    """Nested lists of NDArrays/Symbols -> (flat list, format to rebuild them)."""
    if isinstance(args, NDArray):
        return [args], 0
    if isinstance(args, Symbol):
        n = len(args.list_outputs())
        return [args], (n if n > 1 else 0)
    if args is None:
        return [None], -1
    if not isinstance(args, (list, tuple)):
        raise ValueError(f"When hybridized, the {inout_str} of HybridBlock must be (nested) "
                         f"list of Symbol or NDArray, but got {args} of type {type(args)}")
    flat, fmts = [], []
    for item in args:
        sub, fmt = _flatten(item, inout_str)
        flat.extend(sub)
        fmts.append(fmt)
    return flat, fmts


def _regroup(args, fmt):
    """Inverse of _flatten."""
    def merge(args, fmt):
        if isinstance(fmt, int):
            if fmt < -1:
                raise ValueError(f"Unsupported encoded format {fmt}.")
            if fmt == 0:
                return args[0], args[1:]
            if fmt == -1:
                if args[0] is not None:
                    raise ValueError("We do not support passing types that are not None "
                                     "when the initial HybridBlock has received NoneType "
                                     f"and has been hybridized. Received arg = {args[0]}, "
                                     f"fmt = {fmt}.")
                return None, args[1:]
            return args[:fmt], args[fmt:]
        if not isinstance(args, (list, tuple)):
            raise ValueError(f"When hybridized, the output of HybridBlock must be (nested) "
                             f"list of Symbol or NDArray, but got {args} of type "
                             f"{type(args)}")
        ret = []
        for f in fmt:
            res, args = merge(args, f)
            ret.append(res)
        return ret, args
    return merge(args, fmt)[0]


def _gather_type_ctx_info(args):
    """(has_symbol, has_ndarray, set of contexts, first context) of nested args."""
    if isinstance(args, NDArray):
        return False, True, {args.context}, args.context
    if isinstance(args, Symbol):
        return True, False, set(), None
    if isinstance(args, (list, tuple)):
        has_sym = has_nd = False
        ctxs, first = set(), None
        for item in args:
            s, n, c, f = _gather_type_ctx_info(item)
            has_sym, has_nd = has_sym or s, has_nd or n
            ctxs |= c
            if first is None:
                first = f
        return has_sym, has_nd, ctxs, first
    return False, False, set(), None


def _plain_ndarrays_on(ctx, args):
    """Whether every one of args is a plain NDArray on the context object ctx."""
    for a in args:
        if a.__class__ is not NDArray or a._ctx is not ctx:
            return False
    return True


def _common_prefix(names):
    if not names:
        return ""
    prefix = names[0]
    for name in names:
        i = 0
        while i < len(prefix) and i < len(name) and prefix[i] == name[i]:
            i += 1
        prefix = prefix[:i]
    return prefix


class Block:
    """The base class of all layers and models.

    Subclass it, create children and parameters in ``__init__`` (inside
    ``with self.name_scope():`` so they share this block's prefix) and define
    ``forward``. Children assigned as attributes are registered automatically.

    Parameters
    ----------
    prefix : str, optional
        Prefix of this block's parameter and child names (default: the class name
        lower-cased plus a counter, e.g. ``dense0_``).
    params : ParameterDict, optional
        Parameters to share (this block's ``params.get`` finds them first).
    """

    def __init__(self, prefix=None, params=None):
        self._empty_prefix = prefix == ""
        self._prefix, self._params = _BlockScope.create(prefix, params, self._alias())
        self._name = self._prefix[:-1] if self._prefix.endswith("_") else self._prefix
        self._scope = _BlockScope(self)
        self._children = OrderedDict()
        self._reg_params = {}
        self._forward_hooks = OrderedDict()
        self._forward_pre_hooks = OrderedDict()

    def __repr__(self):
        lines = [f"  ({key}): {_indent(repr(block), 2)}"
                 for key, block in self.__dict__.items() if isinstance(block, Block)]
        return "{}(\n{}\n)".format(self.__class__.__name__, "\n".join(lines))

    def __setattr__(self, name, value):
        """Register Block and Parameter attributes as children / parameters."""
        if hasattr(self, name):
            existing = getattr(self, name)
            if isinstance(existing, (Parameter, Block)) and not isinstance(value, type(existing)):
                raise TypeError(f"Changing attribute type for {name} from {type(existing)} "
                                f"to {type(value)}is not allowed.")
        if isinstance(value, Block):
            self.register_child(value, name)
        elif isinstance(value, Parameter):
            if name in self._reg_params:
                raise AssertionError(
                    f"Overriding Parameter attribute {name} is not allowed. If you want to "
                    "share parameters between blocks, please set 'params' at Block "
                    "construction instead.")
            self._reg_params[name] = value
        super().__setattr__(name, value)

    def _check_container_with_block(self):
        children = set(id(c) for c in self._children.values())

        def unregistered(data):
            if isinstance(data, (list, tuple)):
                return any(unregistered(x) for x in data)
            if isinstance(data, dict):
                return any(unregistered(x) for x in data.values())
            if isinstance(data, Block):
                return id(data) not in children
            return False

        for key, value in self.__dict__.items():
            if isinstance(value, (list, tuple, dict)) and \
                    not (key.startswith("__") or key == "_children"):
                if unregistered(value):
                    warnings.warn(
                        f'"{self.__class__.__name__}.{key}" is an unregistered container '
                        "with Blocks. Note that Blocks inside the list, tuple or dict will "
                        "not be registered automatically. Make sure to register them using "
                        "register_child() or switching to nn.Sequential/nn.HybridSequential "
                        "instead. ", stacklevel=3)

    def _alias(self):
        return self.__class__.__name__.lower()

    @property
    def prefix(self):
        """The prefix of this block's names (``dense0_``)."""
        return self._prefix

    @property
    def name(self):
        """The prefix without its trailing underscore (``dense0``)."""
        return self._name

    def name_scope(self):
        """``with self.name_scope():`` — children and symbols created inside get this
        block's prefix."""
        return self._scope

    @property
    def params(self):
        """This block's own ParameterDict (children's parameters not included)."""
        return self._params

    def collect_params(self, select=None):
        """A ParameterDict of this block's and all its descendants' parameters, optionally
        only those whose name matches the regular expression ``select``
        (e.g. ``'.*weight|.*bias'``)."""
        self._check_container_with_block()
        ret = ParameterDict(self._params.prefix)
        if not select:
            ret.update(self.params)
        else:
            pattern = re.compile(select)
            ret.update({n: p for n, p in self.params.items() if pattern.match(n)})
        for child in self._children.values():
            ret.update(child.collect_params(select=select))
        return ret

    def _collect_params_with_prefix(self, prefix=""):
        if prefix:
            prefix += "."
        ret = {prefix + key: val for key, val in self._reg_params.items()}
        for name, child in self._children.items():
            ret.update(child._collect_params_with_prefix(prefix + name))
        return ret

    # --- saving and loading ---------------------------------------------------------------
    def save_parameters(self, filename, deduplicate=False):
        """Save parameters to an MXNet ``.params`` file, keyed by attribute path
        (``0.weight``, ``features.conv1.bias``). With ``deduplicate``, a shared parameter
        is saved once."""
        params = self._collect_params_with_prefix()
        if deduplicate:
            last = {id(p): key for key, p in params.items()}   # MXNet keeps the last path
            params = {k: p for k, p in params.items() if last[id(p)] == k}
        ndarray.save(filename, {key: p._reduce() for key, p in params.items()})

    def save_params(self, filename):
        """[Deprecated] Use save_parameters (or export for SymbolBlock)."""
        warnings.warn("save_params is deprecated. Please use save_parameters. Note that if "
                      "you want load from SymbolBlock later, please use export instead. For "
                      "details, see https://mxnet.apache.org/tutorials/gluon/save_load_"
                      "params.html")
        try:
            self.collect_params().save(filename, strip_prefix=self.prefix)
        except ValueError as err:
            raise ValueError(f"{err}\nsave_params is deprecated. Using save_parameters may "
                             "resolve this error.") from err

    def load_parameters(self, filename, ctx=None, allow_missing=False, ignore_extra=False,
                        cast_dtype=False, dtype_source="current"):
        """Load parameters saved by ``save_parameters`` (files keyed by full parameter
        names, as ``save_params`` writes, are accepted too)."""
        loaded = ndarray.serialization.load_any(filename)   # either shape semantics
        if not isinstance(loaded, dict):
            raise ValueError(f"load_parameters: {filename} holds a list of arrays, not a "
                             "dict of named parameters")
        params = self._collect_params_with_prefix()
        if not loaded and not params:
            return
        if not any("." in key for key in loaded):
            del loaded
            self.collect_params().load(filename, ctx, allow_missing, ignore_extra,
                                       self.prefix, cast_dtype=cast_dtype,
                                       dtype_source=dtype_source)
            return
        if not allow_missing:
            # A shared parameter is saved under one of its paths only.
            paths = defaultdict(list)
            for key, p in params.items():
                paths[id(p)].append(key)
            for key, p in params.items():
                if not any(k in loaded for k in paths[id(p)]):
                    raise AssertionError(
                        f"Parameter '{key}' is missing in file '{filename}', which contains "
                        f"parameters: {_brief_print_list(loaded.keys())}. Set "
                        "allow_missing=True to ignore missing parameters.")
        for key in loaded:
            if not ignore_extra and key not in params:
                raise ValueError(
                    f"Parameter '{key}' loaded from file '{filename}' is not present in "
                    f"ParameterDict, which contains parameters "
                    f"{_brief_print_list(self._params.keys())}. Set ignore_extra=True to "
                    "ignore. ")
            if key in params:
                params[key]._load_init(loaded[key], ctx, cast_dtype=cast_dtype,
                                       dtype_source=dtype_source)

    def load_params(self, filename, ctx=None, allow_missing=False, ignore_extra=False):
        """[Deprecated] Use load_parameters."""
        warnings.warn("load_params is deprecated. Please use load_parameters.")
        self.load_parameters(filename, ctx, allow_missing, ignore_extra)

    def save(self, prefix):
        """Save the block tree's structure (``<prefix>-model.json``) and parameters
        (``<prefix>-model.params``) for ``load`` on a model built the same way.

        The structure has MXNet's layout: each block is an entry ``<class><index>``
        (index: its place in a depth-first walk) holding its name when saved
        (``orig_name``), whether it was hybridized and ``children``, which maps each
        child's block name to the key its parent registered it under."""
        def describe(block, index, structure):
            entry = {"orig_name": block.name}
            structure[f"{type(block).__name__.lower()}{index[0]}"] = entry
            if isinstance(block, HybridBlock):
                entry["hybridized"] = bool(getattr(block, "_active", False))
            entry["children"] = {}
            for key, child in block._children.items():
                index[0] += 1
                entry["children"][child.name] = key
                describe(child, index, entry)
        model = {}
        describe(self, [0], model)
        with together():      # the files replace the old ones together
            write_text(f"{prefix}-model.json", json.dumps(model))
            self.save_parameters(f"{prefix}-model.params")

    def load(self, prefix):
        """Load what ``save(prefix)`` wrote into this block tree, built the same way:
        children get back the keys they had when saved (so the parameters' structural
        names match), hybridized blocks are hybridized, then the parameters are loaded.
        (Block and parameter names stay this model's own.)"""
        with open(f"{prefix}-model.json") as f:
            model = json.load(f)

        def restore(block, index, structure):
            """Restore block's subtree; returns the block's name when saved."""
            key = f"{type(block).__name__.lower()}{index[0]}"
            if key not in structure:
                raise MXNetError(f"Block.load: {prefix}-model.json has no entry {key!r}: "
                                 "the model was not built the way the saved one was")
            entry = structure[key]
            if entry.get("hybridized") and isinstance(block, HybridBlock):
                block.hybridize(True)
            children = list(block._children.items())
            saved = entry.get("children", {})
            block._children.clear()
            for ckey, child in children:
                index[0] += 1
                orig = restore(child, index, entry)
                block._children[saved.get(orig, ckey)] = child
            return entry["orig_name"]
        restore(self, [0], model)
        self.load_parameters(f"{prefix}-model.params")

    # --- structure -------------------------------------------------------------------------
    def register_child(self, block, name=None):
        """Register a child block (attributes that are Blocks are registered for you)."""
        if name is None:
            name = str(len(self._children))
        self._children[name] = block

    def register_forward_pre_hook(self, hook):
        """Call ``hook(block, inputs)`` before every forward. Returns a HookHandle."""
        handle = HookHandle()
        handle.attach(self._forward_pre_hooks, hook)
        return handle

    def register_forward_hook(self, hook):
        """Call ``hook(block, inputs, outputs)`` after every forward. Returns a
        HookHandle."""
        handle = HookHandle()
        handle.attach(self._forward_hooks, hook)
        return handle

    def apply(self, fn):
        """Call ``fn(block)`` on every descendant, then on this block. Returns self."""
        for child in self._children.values():
            child.apply(fn)
        fn(self)
        return self

    def initialize(self, init=initializer.Uniform(), ctx=None, verbose=False,
                   force_reinit=False):
        """Initialise all parameters of this block and its children (see
        ``ParameterDict.initialize``); each parameter's own ``init`` takes precedence."""
        self.collect_params().initialize(init, ctx, verbose, force_reinit)

    def hybridize(self, active=True, **kwargs):
        """Hybridize every HybridBlock among the children (a plain Block itself always
        runs imperatively)."""
        for child in self._children.values():
            child.hybridize(active, **kwargs)

    def cast(self, dtype):
        """Cast all parameters (of children too) to ``dtype``."""
        for child in self._children.values():
            child.cast(dtype)
        for _, param in self.params.items():
            param.cast(dtype)

    def zero_grad(self):
        """Set the gradients of all parameters to 0."""
        self.collect_params().zero_grad()

    def reset_ctx(self, ctx):
        """Move all parameters to the context(s) ``ctx``."""
        self.collect_params().reset_ctx(ctx)

    def register_op_hook(self, callback, monitor_all=False):
        """Call ``callback(name, op_name, array)`` for the outputs (and with monitor_all,
        the inputs) of every operator of hybridized children."""
        for child in self._children.values():
            child.register_op_hook(callback, monitor_all)

    def __call__(self, *args):
        if self._forward_pre_hooks:     # (most blocks have none: no loop to start)
            for hook in self._forward_pre_hooks.values():
                hook(self, args)
        out = self.forward(*args)
        if _is_np_array():              # NumPy mode: blocks return mx.np arrays
            out = _to_np(out)
        if self._forward_hooks:
            for hook in self._forward_hooks.values():
                hook(self, args, out)
        return out

    def forward(self, *args):
        """The computation of this block; override it."""
        raise NotImplementedError

    def summary(self, *inputs):
        """Print a table of each layer's output shape and parameter count for a forward
        pass on ``inputs`` (the block must not be hybridized)."""
        from .nn.basic_layers import HybridSequential, Sequential
        rows = OrderedDict()
        rows["Input"] = {"output_shape": _shape_str(inputs), "n_params": 0,
                         "trainable": 0, "shared": 0}
        seen = set()
        hooks = []

        def on_output(block, _, outputs):
            key = f"{block.__class__.__name__}-{len(rows)}"
            row = rows[key] = {"output_shape": _shape_str(outputs), "n_params": 0,
                               "trainable": 0, "shared": 0}
            for p in block.params.values():
                size = p.data().size
                row["n_params"] += size
                if p.grad_req != "null":
                    row["trainable"] += size
                if id(p) in seen:
                    row["shared"] += size
                else:
                    seen.add(id(p))

        def attach(block):
            if isinstance(block, HybridBlock) and block._active:
                raise AssertionError(f'"{block.name}" must not be hybridized to print '
                                     "summary.")
            if not isinstance(block, (Sequential, HybridSequential)):
                hooks.append(block.register_forward_hook(on_output))

        try:
            self.apply(attach)
            self(*inputs)
            fmt = "{:>20}  {:>42} {:>15}"
            lines = ["-" * 80, fmt.format("Layer (type)", "Output Shape", "Param #"),
                     "=" * 80]
            total = trainable = shared = 0
            for key, row in rows.items():
                lines.append(fmt.format(key, str(row["output_shape"]), row["n_params"]))
                total += row["n_params"]
                trainable += row["trainable"]
                shared += row["shared"]
            lines += ["=" * 80,
                      "Parameters in forward computation graph, duplicate included",
                      f"   Total params: {total}",
                      f"   Trainable params: {trainable}",
                      f"   Non-trainable params: {total - trainable}",
                      f"Shared params in forward computation graph: {shared}",
                      f"Unique parameters in model: {total - shared}",
                      "-" * 80]
            print("\n".join(lines))
        finally:
            for h in hooks:
                h.detach()


def _shape_str(args):
    """Shapes of (nested) outputs as summary() prints them."""
    def shapes(x):
        if isinstance(x, (list, tuple)):
            return [shapes(i) for i in x]
        return x.shape if isinstance(x, NDArray) else x
    s = shapes(args)
    text = str(s)[1:-1] if isinstance(s, list) else str(s)
    return text.replace("L", "")


class HybridBlock(Block):
    """A Block that can also run as a Symbol graph.

    Define ``hybrid_forward(self, F, x, *args, **params)``: ``F`` is ``mx.nd`` when run
    imperatively and ``mx.sym`` when building the graph; ``params`` holds this block's
    parameters by attribute name (their values, or their symbol variables). After
    ``hybridize()`` the first call builds the graph and later calls run it through
    cached executors, with autograd working through them.
    """

    def __init__(self, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self._cached_graph = ()
        self._cached_op = None
        self._cached_op_args = None
        self._trace = None      # NumPy mode: (input signature, {const name: NDArray})
        self._untraceable = None   # NumPy mode: why this block runs imperatively
        self._out_format = None
        self._in_format = None
        self._active = False
        self._flags = []
        self._callback = None
        self._monitor_all = False

    def __setattr__(self, name, value):
        super().__setattr__(name, value)
        if isinstance(value, HybridBlock):
            self._clear_cached_op()

    def register_child(self, block, name=None):
        if not isinstance(block, HybridBlock):
            raise ValueError(
                f"Children of HybridBlock must also be HybridBlock, but {block} has type "
                f"{type(block)}. If you are using Sequential, please try HybridSequential "
                "instead.")
        super().register_child(block, name)
        self._clear_cached_op()

    def hybridize(self, active=True, backend=None, clear=True, static_alloc=False,
                  static_shape=False, inline_limit=2, forward_bulk_size=None,
                  backward_bulk_size=None, **kwargs):
        """Run this block (and its children) as one cached Symbol graph.

        Executors are always bound once per input signature and reused, which is what
        ``static_alloc``/``static_shape`` ask MXNet for; the flags are accepted for
        compatibility. ``backend``: a subgraph backend; the oneDNN ones (``MKLDNN``,
        ``MKLDNN_QUANTIZE``) leave the graph as it is, since the executor applies its
        oneDNN kernels itself (``symbol/backends.py``).
        """
        if backend is not None:
            check_backend(backend, "hybridize")
        self._backend = backend
        self._active = active
        self._flags = [("static_alloc", static_alloc), ("static_shape", static_shape),
                       ("inline_limit", inline_limit)] + list(kwargs.items())
        if clear:
            self._clear_cached_op()
            self._untraceable = None
        if active and (self._forward_hooks or self._forward_pre_hooks):
            warnings.warn(f'"{self}" is being hybridized while still having forward '
                          f'hook/pre-hook. If "{self}" is a child of HybridBlock, the hooks '
                          "will not take effect.")
        for child in self._children.values():
            child.hybridize(active, clear=clear, static_alloc=static_alloc,
                            static_shape=static_shape, inline_limit=inline_limit,
                            forward_bulk_size=forward_bulk_size,
                            backward_bulk_size=backward_bulk_size, **kwargs)

    def optimize_for(self, x, *args, backend=None, clear=False, static_alloc=False,
                     static_shape=False, inline_limit=2, forward_bulk_size=None,
                     backward_bulk_size=None, **kwargs):
        """Hybridize (for subgraph ``backend``, as ``hybridize`` takes it) and run once
        on the given inputs."""
        self.hybridize(True, backend=backend, clear=clear, static_alloc=static_alloc,
                       static_shape=static_shape, inline_limit=inline_limit, **kwargs)
        return self(x, *args)

    def cast(self, dtype):
        self._clear_cached_op()
        super().cast(dtype)

    def register_op_hook(self, callback, monitor_all=False):
        self._callback = callback
        self._monitor_all = monitor_all
        self._clear_cached_op()
        for child in self._children.values():
            child.register_op_hook(callback, monitor_all)

    def _clear_cached_op(self):
        self._cached_graph = ()
        self._cached_op = None
        self._cached_op_args = None
        self._trace = None

    # --- the graph --------------------------------------------------------------------------
    def _get_graph(self, *args):
        if not self._cached_graph and _is_np_array() and self._can_trace(args):
            return self._trace_graph(*args)
        if not self._cached_graph:
            flat_args, self._in_format = _flatten(args, "input")
            real = sum(a is not None for a in flat_args)
            if real == 0:
                raise ValueError("All args are None and we do not support such a case. "
                                 f"Received args={args}")
            inputs, cnt = [], 0
            for a in flat_args:
                if a is None:
                    inputs.append(None)
                    continue
                inputs.append(symbol.var(f"data{cnt}" if real > 1 else "data"))
                cnt += 1
            grouped = _regroup(inputs, self._in_format)
            params = {k: p.var() for k, p in self._reg_params.items()}
            with self.name_scope():
                out = self.hybrid_forward(symbol, *grouped, **params)
            out, self._out_format = _flatten(out, "output")
            self._cached_graph = ([i for i in inputs if i is not None], symbol.Group(out))
        return self._cached_graph

    def _can_trace(self, args):
        """NumPy mode traces hybrid_forward on the real arrays (gluon.np_trace): it
        needs array inputs and this block's own parameters initialised (deferred ones
        are inferred by the symbolic graph first)."""
        flat, _ = _flatten(args, "input")
        if not all(a is None or isinstance(a, NDArray) for a in flat):
            return False
        return all(p._data is not None for p in self._reg_params.values())

    def _trace_graph(self, *args):
        from ..numpy.multiarray import ndarray as np_ndarray
        from .np_trace import trace_graph
        flat_args, self._in_format = _flatten(args, "input")
        real = [a for a in flat_args if a is not None]
        if not real:
            raise ValueError("All args are None and we do not support such a case. "
                             f"Received args={args}")
        ctx = real[0].context

        def view(a):        # a fresh np array on the same data, off the autograd tape
            return np_ndarray(a._chunk, a._shape, a._dtype, a._ctx, a._view)

        inputs, views, cnt = [], [], 0
        for a in flat_args:
            if a is None:
                inputs.append(None)
                views.append(None)
                continue
            inputs.append(symbol.var(f"data{cnt}" if len(real) > 1 else "data"))
            views.append(view(a))
            cnt += 1
        grouped = _regroup(views, self._in_format)
        every = self.collect_params()
        if any(p._data is None for p in every.values()):
            # children with deferred shapes: one untraced run initialises them
            from .. import autograd
            with autograd.pause(), self.name_scope():
                self.hybrid_forward(ndarray, *grouped, **{
                    k: p.data(ctx) for k, p in self._reg_params.items()})
        names = list(self._reg_params)
        p_views = [view(self._reg_params[k].data(ctx)) for k in names]
        p_syms = [self._reg_params[k].var() for k in names]
        own = {id(self._reg_params[k]) for k in names}
        for p in every.values():         # children's parameters are graph inputs too
            if id(p) not in own and p._data is not None:
                p_views.append(view(p.data(ctx)))
                p_syms.append(p.var())

        def run():
            with self.name_scope():
                return self.hybrid_forward(ndarray, *grouped, **dict(zip(names, p_views)))

        out, self._out_format, consts, shapes, zero_size = trace_graph(
            self, [v for v in views if v is not None], [i for i in inputs if i is not None],
            p_views, p_syms, run)
        self._trace = (_signature(flat_args), consts, shapes, zero_size)
        self._cached_graph = ([i for i in inputs if i is not None], out)
        return self._cached_graph

    def _build_cache(self, *args):
        data, out = self._get_graph(*args)
        if getattr(self, "_backend", None) is not None:
            out = partitioned(out, self._backend)
        data_pos = {d.name: i for i, d in enumerate(data)}
        params = dict(self.collect_params().items())
        if self._trace is not None:
            params.update({k: _Const(v) for k, v in self._trace[1].items()})
        input_names = out.list_inputs()
        expected = set(input_names)
        for name in expected:
            if name not in params and name not in data_pos:
                raise AssertionError(f"Unknown input to HybridBlock: {name}")
        unused = [f"{i}-th" for name, i in data_pos.items() if name not in expected]
        if unused:
            warnings.warn(f"The {', '.join(unused)} input to HybridBlock is not used by any "
                          "computation. Is this intended?", stacklevel=4)
        unused = [name for name in params.keys() if name not in expected]
        if unused:
            warnings.warn(f"Parameter {', '.join(unused)} is not used by any computation. "
                          "Is this intended?", stacklevel=4)
        self._cached_op_args = [(True, data_pos[n]) if n in data_pos else (False, params[n])
                                for n in input_names]
        self._cached_op = CachedOp(out, self._flags)
        if self._callback is not None:
            self._cached_op.set_monitor(_op_hook_adapter(out, self._callback),
                                        self._monitor_all)

    def _deferred_infer_shape(self, *args):
        try:
            self.infer_shape(*args)
        except Exception as err:
            raise ValueError(f"Deferred initialization failed because shape cannot be "
                             f"inferred. {err}") from err

    def _call_cached_op(self, *args):
        if self._trace is not None and self._trace[0] != _signature(_flatten(args,
                                                                              "input")[0]):
            self._clear_cached_op()       # a traced graph holds for one input signature
        if self._cached_op is None:
            self._build_cache(*args)
        flat, fmt = _flatten(args, "input")
        if fmt != self._in_format:
            _check_format(fmt, self._in_format)
        flat = [a for a in flat if a is not None]
        ctx = flat[0].context
        try:
            values = iter(data_on([i for is_arg, i in self._cached_op_args if not is_arg],
                                  ctx))
            inputs = [flat[i] if is_arg else next(values)
                      for is_arg, i in self._cached_op_args]
        except DeferredInitializationError:
            self._deferred_infer_shape(*args)
            inputs = []
            for is_arg, i in self._cached_op_args:
                if is_arg:
                    inputs.append(flat[i])
                else:
                    i._finish_deferred_init()
                    inputs.append(i.data(ctx))
            if _is_np_array() and self._can_trace(args):
                # NumPy mode: the symbolic graph only inferred the shapes; trace now
                self._clear_cached_op()
                return self._call_cached_op(*args)
        for a in inputs:
            if a._ctx is not ctx and a._ctx != ctx:     # (the same object: no __eq__ call)
                raise MXNetError(f"HybridBlock {self.name}: all inputs and parameters must "
                                 f"be on one context; got {a._ctx} and {ctx}")
        if self._trace is not None and self._trace[3]:
            # zero-size arrays: the executor's legacy shapes (0 = unknown) cannot hold
            # them, so the traced operators run through the imperative dispatcher
            from .np_trace import replay
            names = self._cached_graph[1].list_inputs()
            out = replay(self._cached_graph[1], dict(zip(names, inputs)))
        else:
            out = self._cached_op(inputs, ctx)
        if self._trace is not None:       # 0-d results travel as (1,) in the graph
            out = [o if o.shape == s else o.reshape(s) for o, s in zip(out, self._trace[2])]
        return _regroup(out, self._out_format)

    def infer_shape(self, *args):
        """Infer the shapes of all parameters from the inputs' shapes."""
        self._infer_attrs("infer_shape", "shape", *args)

    def infer_type(self, *args):
        """Infer the dtypes of all parameters from the inputs' dtypes."""
        self._infer_attrs("infer_type", "dtype", *args)

    def _infer_attrs(self, infer_fn, attr, *args):
        inputs, out = self._get_graph(*args)
        flat, _ = _flatten(args, "input")
        flat = [a for a in flat if a is not None]
        given = {i.name: getattr(a, attr) for i, a in zip(inputs, flat)}
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            arg_attrs, _, aux_attrs = getattr(out, infer_fn)(**given)
        if arg_attrs is None:
            msg = str(caught[0].message) if caught else \
                f"{infer_fn} could not infer every input of {self.name}"
            raise ValueError(msg)
        known = dict(zip(out.list_arguments(), arg_attrs))
        known.update(zip(out.list_auxiliary_states(), aux_attrs))
        for p in self.collect_params().values():
            if p.name in known:
                setattr(p, attr, known[p.name])

    def export(self, path, epoch=0, remove_amp_cast=True):
        """Write ``<path>-symbol.json`` and ``<path>-%04d.params`` (``arg:``/``aux:``
        keys), loadable by ``SymbolBlock.imports``, ``mx.mod.Module`` and MXNet itself.
        The block must be hybridized and have run forward once."""
        if self._untraceable is not None:
            raise MXNetError(f"export: {self.name} cannot be exported: {self._untraceable}")
        if not self._cached_graph:
            raise RuntimeError("Please first call block.hybridize() and then run forward "
                               "with this block at least once before calling export.")
        sym = self._cached_graph[1]
        with together():      # symbol and parameters replace the old ones together
            self._export_files(sym, path, epoch, remove_amp_cast)

    def _export_files(self, sym, path, epoch, remove_amp_cast):
        sym.save(f"{path}-symbol.json", remove_amp_cast=remove_amp_cast)
        arg_names = set(sym.list_arguments())
        aux_names = set(sym.list_auxiliary_states())
        arg_dict = {}
        consts = self._trace[1] if self._trace is not None else {}
        for name, value in consts.items():
            if name in arg_names:
                arg_dict[f"arg:{name}"] = value
        for name, param in self.collect_params().items():
            if name in arg_names:
                arg_dict[f"arg:{name}"] = param._reduce()
            elif name in aux_names:
                arg_dict[f"aux:{name}"] = param._reduce()
            else:
                warnings.warn(f'Parameter "{name}" is not found in the graph. ',
                              stacklevel=4)
        ndarray.save("%s-%04d.params" % (path, epoch), arg_dict)

    def forward(self, x, *args):
        """Run ``hybrid_forward`` with ``F = mx.nd`` (or the cached graph once
        hybridized) on NDArrays, or build symbols from Symbol inputs."""
        if x.__class__ is NDArray and _plain_ndarrays_on(x._ctx, args):
            ctx = x._ctx        # (what _gather_type_ctx_info finds, without its walk)
        else:
            has_sym, has_nd, ctxs, ctx = _gather_type_ctx_info([x] + list(args))
            if has_sym and has_nd:
                raise ValueError("In HybridBlock, we do not support mixed NDArrays and "
                                 "Symbols types for the input. Please check the type of the "
                                 "args.\n")
            if not has_sym and not has_nd:
                raise ValueError("In HybridBlock, there must be one NDArray or one Symbol "
                                 "in the input. Please check the type of the args.\n")
            if len(ctxs) > 1:
                raise ValueError("Find multiple contexts in the input, After hybridized, "
                                 "the HybridBlock only supports one input context. You can "
                                 "print the ele.ctx in the input arguments to inspect their "
                                 f"contexts. Find all contexts = {ctxs}")
            if not has_nd:
                params = {k: p.var() for k, p in self._reg_params.items()}
                with self.name_scope():
                    return self.hybrid_forward(symbol, x, *args, **params)
        if self._active and _tape_state.tracer is None and self._untraceable is None:
            from .np_trace import HostReadError
            try:
                return self._call_cached_op(x, *args)
            except HostReadError as err:
                # the computation depends on values read on the host (unique, boolean
                # masks...): it runs imperatively, as a non-hybridized block does
                self._clear_cached_op()
                self._untraceable = str(err)
        try:
            params = {k: p.data(ctx) for k, p in self._reg_params.items()}
        except DeferredInitializationError:
            self._deferred_infer_shape(x, *args)
            for p in self.params.values():
                p._finish_deferred_init()
            params = {k: p.data(ctx) for k, p in self._reg_params.items()}
        return self.hybrid_forward(ndarray, x, *args, **params)

    def hybrid_forward(self, F, x, *args, **kwargs):
        """The computation, written once for ``F = mx.nd`` and ``F = mx.sym``."""
        raise NotImplementedError


def _check_format(fmt, stored):
    """Inputs may omit trailing optional (None) arguments relative to the cached call."""
    if len(stored) > len(fmt):
        valid = all(f == -1 for f in stored[len(fmt):]) and fmt == stored[:len(fmt)]
    elif len(stored) < len(fmt):
        valid = all(f == -1 for f in fmt[len(stored):]) and fmt[:len(stored)] == stored
    else:
        valid = False
    if not valid:
        raise ValueError("The argument structure of HybridBlock does not match the cached "
                         f"version. Stored format = {fmt}, input format = {stored}")


def _op_hook_adapter(sym, callback):
    """Executor monitor (name, array) -> Gluon op hook (name, op_name, array)."""
    op_of = {}
    for node in sym._topo():
        if node.op is None:
            continue
        for n in node.output_names():
            op_of[n] = node.op.name
        for n in node.input_names():
            op_of[f"{node.name}_{n}"] = node.op.name

    def monitor(name, array):
        callback(name, op_of.get(name, ""), array)
    return monitor


def _infer_param_types(in_params, out_params, arg_params, aux_params,
                       default_dtype=mx_real_t):
    """dtypes of a SymbolBlock's arguments and aux states, from its inputs' declared
    types when possible, else ``default_dtype``."""
    arg_types = aux_types = None
    given = {}
    for p in in_params:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            types = p.infer_type()[0]
        if not types:
            given = None
            break
        given[p.name] = types[0]
    if given is not None:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                arg_types, _, aux_types = out_params.infer_type(**given)
        except MXNetError:
            arg_types, aux_types = None, None
    if arg_types is None or len(arg_types) != len(arg_params):
        arg_types = [default_dtype] * len(arg_params)
    if aux_types is None or len(aux_types) != len(aux_params):
        aux_types = [default_dtype] * len(aux_params)
    return arg_types, aux_types


class SymbolBlock(HybridBlock):
    """A HybridBlock made from a Symbol graph (e.g. one written by ``export``).

    Parameters
    ----------
    outputs : Symbol or list of Symbol
        The outputs.
    inputs : Symbol or list of Symbol
        The input variables.
    params : ParameterDict, optional
        Parameters to share; the graph's other variables become new parameters (aux
        states with ``grad_req='null'``).
    """

    @staticmethod
    def imports(symbol_file, input_names, param_file=None, ctx=None, allow_missing=False,
                ignore_extra=False):
        """A SymbolBlock from ``<prefix>-symbol.json`` (and a ``.params`` file), as
        ``HybridBlock.export`` or ``mx.model.save_checkpoint`` write them."""
        sym = symbol.load(symbol_file)
        if isinstance(input_names, str):
            input_names = [input_names]
        if param_file is None:
            inputs = [symbol.var(n, dtype=mx_real_t) for n in input_names]
        else:
            inputs = [symbol.var(n) for n in input_names]
        ret = SymbolBlock(sym, inputs)
        if param_file is not None:
            ret.collect_params().load(param_file, ctx, allow_missing, ignore_extra,
                                      cast_dtype=True, dtype_source="saved")
        return ret

    def __repr__(self):
        graph = self._cached_graph
        return "{}(\n{} : {} -> {}\n)".format(self.__class__.__name__, graph[1],
                                              len(graph[0]), len(graph[1].list_outputs()))

    def __init__(self, outputs, inputs, params=None):
        super().__init__(prefix=None, params=None)
        self._prefix = ""
        self._params = ParameterDict("", params)
        if isinstance(inputs, Symbol) and len(inputs.list_outputs()) == 1:
            inputs = [inputs]
        if isinstance(outputs, (list, tuple)) and len(outputs) == 1:
            outputs = outputs[0]
        syms, self._in_format = _flatten(inputs, "input")
        out, self._out_format = _flatten(outputs, "output")
        out = symbol.Group(out)
        for name, attrs in out.attr_dict().items():
            # MXNet 1.9.1's SymbolBlock has no row_sparse parameters (storage id 1)
            if attrs.get("__storage_type__") == "1":
                raise AssertionError(f"SymbolBlock doesn't support Parameter '{name}' "
                                     "because its storage type is 'row_sparse'.")
        input_names = set()
        for s in syms:
            if len(s.get_internals().list_outputs()) != 1:
                raise AssertionError(f"Input symbols must be variable, but {s} is an output "
                                     "of operators")
            input_names.add(s.name)
        arg_params = out.list_arguments()
        aux_params = out.list_auxiliary_states()
        arg_types, aux_types = _infer_param_types(syms, out, arg_params, aux_params)
        for name, dt in zip(arg_params, arg_types):
            if name not in input_names:
                self.params.get(name, allow_deferred_init=True, dtype=dt)
        for name, dt in zip(aux_params, aux_types):
            if name not in input_names:
                self.params.get(name, grad_req="null", allow_deferred_init=True, dtype=dt)
        self._cached_graph = syms, out
        n = len(_common_prefix(list(self._params.keys())))
        self._reg_params = {key[n:]: p for key, p in self._params.items()}

    def forward(self, x, *args):
        if isinstance(x, NDArray):
            return self._call_cached_op(x, *args)
        if not isinstance(x, Symbol):
            raise AssertionError("HybridBlock requires the first argument to forward be "
                                 f"either Symbol or NDArray, but got {type(x)}")
        flat, fmt = _flatten([x] + list(args), "input")
        if fmt != self._in_format:
            raise AssertionError("Invalid input format")
        ret = copy.copy(self._cached_graph[1])
        ret._compose(**{k.name: v for k, v in zip(self._cached_graph[0], flat)})
        return _regroup(list(ret), self._out_format)

    def _clear_cached_op(self):
        graph = self._cached_graph
        super()._clear_cached_op()
        self._cached_graph = graph

    def cast(self, dtype):
        self._clear_cached_op()
        super().cast(dtype)
        if np.dtype(dtype).name == "float16":
            # BatchNorm keeps its statistics and affine parameters in float32.
            names = self._cached_graph[1].get_internals().list_inputs()
            for node in names:
                for stat, sibs in (("running_var", ("running_mean", "gamma", "beta")),
                                   ("moving_var", ("moving_mean", "gamma", "beta"))):
                    if node.endswith(stat):
                        prefix = node[:-len(stat)]
                        group = [prefix + s for s in sibs]
                        if all(g in names for g in group):
                            for g in [node] + group:
                                if g in self.params:
                                    self.params[g].cast("float32")

    def hybrid_forward(self, F, x, *args, **kwargs):
        raise NotImplementedError


class _Const:
    """A traced graph's constant, served to the cached op like a parameter."""

    def __init__(self, value):
        self.value = value

    def data(self, ctx=None):
        v = self.value
        return v if ctx is None or v.context == ctx else v.as_in_context(ctx)


def _signature(flat):
    return tuple(None if a is None else (a.shape, a.dtype, a.context) for a in flat)


def _to_np(value):
    """A block's outputs in NumPy mode as mx.np arrays. Outputs that mix mx.np arrays
    with classic NDArrays (``x.as_nd_ndarray()``) are a TypeError, as in MXNet: the
    block mixes the two interfaces."""
    kinds = set()

    def visit(v):
        if isinstance(v, NDArray):
            kinds.add(type(v) is NDArray)
        elif isinstance(v, (list, tuple)):
            for x in v:
                visit(x)

    visit(value)
    if len(kinds) == 2:
        raise TypeError("in NumPy mode a block must return mx.np.ndarray outputs only; "
                        "got a mix with classic NDArrays (from as_nd_ndarray(); convert "
                        "them back with as_np_ndarray())")
    return to_np(value)
