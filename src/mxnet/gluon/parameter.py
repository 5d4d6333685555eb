"""Gluon parameters (MXNet 1.9.1's ``mx.gluon.Parameter``, ``Constant``,
``ParameterDict``).

A Parameter holds one copy of its value per context (``data(ctx)``) and, unless
``grad_req='null'``, a gradient buffer per copy that autograd writes into (each copy
is marked as an autograd variable). Its shape may be partly unknown (0 dims) until the
first forward pass fills it in; ``initialize`` is then deferred to that moment.
"""
import warnings
from collections import OrderedDict

import numpy as np

from .. import autograd, initializer, ndarray
from ..base import MXNetError, mx_real_t
from ..context import Context, cpu, current_context
from ..ndarray import NDArray
from ..symbol import Symbol, var
from .utils import _brief_print_list, _indent, shape_is_known
from ..util import is_np_array, is_np_shape
from ..numpy_extension import to_np

__all__ = ["DeferredInitializationError", "Parameter", "Constant", "ParameterDict",
           "tensor_types"]

_NAMING_DOC = ("For more info on naming, please see "
               "https://mxnet.io/api/python/docs/tutorials/packages/gluon/blocks/naming.html")


class DeferredInitializationError(MXNetError):
    """A Parameter's data was asked for before its deferred initialisation happened."""


class Parameter:
    """A weight of a Block: its value on each context, its gradient, and how it is
    initialised and trained.

    Parameters
    ----------
    name : str
        The full name (prefix included), e.g. ``dense0_weight``.
    grad_req : {'write', 'add', 'null'}, default 'write'
        How gradients are stored: overwritten, accumulated, or not computed.
    shape : int or tuple of int, optional
        The shape; 0 marks a dimension that is inferred at the first forward pass.
    dtype : numpy type or str, default numpy.float32
    lr_mult, wd_mult : float, default 1.0
        Multipliers of the optimizer's learning rate / weight decay.
    init : Initializer or str, optional
        The initializer of this parameter (default: the one given to ``initialize``).
    allow_deferred_init : bool, default False
        Allow ``initialize`` before the shape is fully known.
    differentiable : bool, default True
        False forces ``grad_req='null'`` (e.g. BatchNorm running statistics).
    stype, grad_stype : 'default' or 'row_sparse'
        Storage types of the value and of the gradient (an Embedding with
        sparse_grad has a row_sparse gradient; a row_sparse value is read with
        ``row_sparse_data``).
    """

    def __init__(self, name, grad_req="write", shape=None, dtype=mx_real_t, lr_mult=1.0,
                 wd_mult=1.0, init=None, allow_deferred_init=False, differentiable=True,
                 stype="default", grad_stype="default"):
        self._var = None
        self._data = None
        self._grad = None
        from ..util import is_np_array
        self._is_np = is_np_array()     # made in NumPy mode: its arrays are mx.np arrays
        self._ctx_list = None
        self._ctx_map = None
        self._trainer = None
        self._deferred_init = ()
        self._differentiable = differentiable
        self._allow_deferred_init = allow_deferred_init
        self._grad_req = None
        if isinstance(shape, int):
            shape = (shape,)
        self._shape = None if shape is None else tuple(shape)
        self.name = name
        self._dtype = dtype
        self.lr_mult = lr_mult
        self.wd_mult = wd_mult
        self.grad_req = grad_req
        self.init = init
        for what, st in (("stype", stype), ("grad_stype", grad_stype)):
            if st not in ("default", "row_sparse", "csr"):
                raise AssertionError(f"{what} for Parameter '{name}' must be one of "
                                     f"'default', 'row_sparse', or 'csr', but got '{st}'")
            if st == "csr":
                raise MXNetError(f"Parameter '{name}': {what}='csr' is not supported "
                                 "('default' or 'row_sparse')")
        self._stype = stype
        self._grad_stype = grad_stype

    def __repr__(self):
        return f"Parameter {self.name} (shape={self.shape}, dtype={self.dtype})"

    # --- attributes ----------------------------------------------------------------------
    @property
    def grad_req(self):
        return self._grad_req

    @grad_req.setter
    def grad_req(self, req):
        if req not in ("write", "add", "null"):
            raise AssertionError(f"grad_req must be one of 'write', 'add', or 'null', but "
                                 f"got '{req}'")
        if not self._differentiable:
            req = "null"
        if self._grad_req == req:
            return
        self._grad_req = req
        if req == "null" and self._grad is not None:
            self._grad = None
            self._data = [d.detach() for d in self._data]
        elif self._data is not None:
            self._init_grad()

    @property
    def dtype(self):
        """The element type (as given: a numpy type or a name)."""
        return self._dtype

    @dtype.setter
    def dtype(self, dtype):
        self.cast(dtype)

    @property
    def shape(self):
        """The shape (None if never given). Dimensions not known yet read as 0, or as
        -1 under NumPy shape semantics (``npx.set_np()``), as in MXNet."""
        if self._shape is not None and is_np_shape():
            return tuple(-1 if d == 0 else d for d in self._shape)
        return self._shape

    @shape.setter
    def shape(self, new_shape):
        new_shape = tuple(new_shape)
        if self._shape is None:
            self._shape = new_shape
            return
        if len(self._shape) != len(new_shape) or \
                any(old not in (-1, 0, new) for new, old in zip(new_shape, self._shape)):
            raise AssertionError(f"Expected shape {new_shape} is incompatible with given "
                                 f"shape {self._shape}.")
        self._shape = new_shape

    @property
    def stype(self):
        return self._stype

    # --- per-context arrays ---------------------------------------------------------------
    def _set_trainer(self, trainer):
        """Associate the Trainer that updates this parameter (the object itself, as
        MXNet 1.9.1 keeps it). A sparse parameter is held whole in its trainer's
        kvstore, so a second trainer cannot take it over."""
        if (self._stype != "default" and self._trainer is not None and trainer is not None
                and self._trainer is not trainer):
            raise RuntimeError(f"Failed to set the trainer for Parameter '{self.name}' "
                               "because it was already set. More than one trainer for a "
                               f"{self._stype} Parameter is not supported.")
        self._trainer = trainer

    def _check_and_get(self, arr_list, ctx):
        if arr_list is not None:
            if ctx is list:
                return arr_list
            if ctx is None:
                if len(arr_list) == 1:
                    return arr_list[0]
                ctx = current_context()
            by_id = self._ctx_map[ctx.device_typeid & 1]
            if ctx.device_id < len(by_id):
                idx = by_id[ctx.device_id]
                if idx is not None:
                    return arr_list[idx]
            raise RuntimeError(f"Parameter '{self.name}' was not initialized on context "
                               f"{ctx}. It was only initialized on {self._ctx_list}.")
        if self._deferred_init:
            raise DeferredInitializationError(
                f"Parameter '{self.name}' has not been initialized yet because "
                "initialization was deferred. Actual initialization happens during the "
                "first forward pass. Please pass one batch of data through the network "
                "before accessing Parameters. You can also avoid deferred initialization "
                "by specifying in_units, num_features, etc., for network layers.")
        raise RuntimeError(
            f"Parameter '{self.name}' has not been initialized. Note that you should "
            "initialize parameters and create Trainer with Block.collect_params() instead "
            "of Block.params because the later does not include Parameters of nested "
            "child Blocks")

    def _init_impl(self, data, ctx_list):
        """Copy data to every context in ctx_list and (re)create the gradients."""
        self._ctx_list = list(ctx_list)
        self._ctx_map = [[], []]
        for i, ctx in enumerate(self._ctx_list):
            slots = self._ctx_map[ctx.device_typeid & 1]
            while len(slots) <= ctx.device_id:
                slots.append(None)
            slots[ctx.device_id] = i
        self._data = [data.copyto(ctx) for ctx in self._ctx_list]
        if self._stype != "default":
            self._data = [d.tostype(self._stype) for d in self._data]
        self._init_grad()

    def _init_grad(self):
        if self.grad_req == "null":
            self._grad = None
            return
        self._grad = [ndarray.zeros(d.shape, d.context, dtype=d.dtype,
                                    stype=self._grad_stype) for d in self._data]
        autograd.mark_variables(self._data, self._grad, self.grad_req)

    def _finish_deferred_init(self):
        """Initialise now that the shape is known (the first forward pass calls this)."""
        if not self._deferred_init:
            return
        init, ctx, default_init, data = self._deferred_init
        self._deferred_init = ()
        if not shape_is_known(self._shape):
            raise AssertionError(
                f"Cannot initialize Parameter '{self.name}' because it has invalid shape: "
                f"{self.shape}. Please specify in_units, in_channels, etc for `Block`s.")
        with autograd.pause():
            if data is None:
                data = ndarray.zeros(self.shape, cpu(), dtype=self.dtype)
                # In NumPy mode MXNet hands initializers an mx.np array (custom
                # _init_weight code uses np semantics); a view writes into ``data``.
                target = to_np(data) if is_np_array() and self._stype == "default" \
                    else data
                initializer.create(default_init)(
                    initializer.InitDesc(self.name, {"__init__": init}), target)
            self._init_impl(data, ctx)

    def _load_init(self, data, ctx, cast_dtype=False, dtype_source="current"):
        """Set the value from loaded data, initialising the parameter if needed."""
        if cast_dtype and dtype_source not in ("current", "saved"):
            raise AssertionError("dtype_source must be either 'current' or 'saved'")
        if self._shape:     # the stored shape: 0 marks an unknown dimension
            for mine, saved in zip(self._shape, data.shape):
                if mine not in (0, saved):
                    raise AssertionError(
                        f"Failed loading Parameter '{self.name}' from saved params: shape "
                        f"incompatible expected {self.shape} vs saved {data.shape}")
            if len(self._shape) != len(data.shape):
                raise AssertionError(
                    f"Failed loading Parameter '{self.name}' from saved params: shape "
                    f"incompatible expected {self.shape} vs saved {data.shape}")
            self.shape = tuple(saved if mine == 0 else mine
                               for mine, saved in zip(self._shape, data.shape))
        if self.dtype:
            mine = np.dtype(self.dtype).type
            if cast_dtype and mine != data.dtype:
                if dtype_source == "current":
                    data = data.astype(self.dtype, copy=False)
                else:
                    # adopting the saved type casts the value already held too
                    self.cast(data.dtype)
            elif mine != data.dtype:
                raise AssertionError(
                    f"Failed loading Parameter '{self.name}' from saved params: dtype "
                    f"incompatible expected {self.dtype} vs saved {data.dtype}. Set "
                    "cast_dtype=True to cast the dtype of saved params.")
        if isinstance(ctx, Context):
            ctx = [ctx]
        if self._data is None:
            if self._deferred_init:
                if ctx is not None and set(ctx) != set(self._deferred_init[1]):
                    raise AssertionError(
                        f"Failed to load Parameter '{self.name}' on {ctx} because it was "
                        f"previous initialized on {self.list_ctx()}.")
                ctx = self._deferred_init[1]
            elif ctx is None:
                ctx = [cpu()]
            self._init_impl(data, ctx)
        else:
            if ctx is not None and set(ctx) != set(self.list_ctx()):
                raise AssertionError(
                    f"Failed to load Parameter '{self.name}' on {ctx} because it was "
                    f"previous initialized on {self.list_ctx()}.")
            self.set_data(data)
        self._deferred_init = ()

    def _reduce(self):
        """The value on the CPU (the average over contexts when there are several; a
        row_sparse parameter's whole value, from its Trainer's store when it has one)."""
        if self._stype != "default":
            trainer = self._trainer
            arrays = self._check_and_get(self._data, list)
            if trainer is None or not trainer._kv_initialized or not trainer._kvstore:
                return arrays[0].copyto(cpu())
            out = ndarray.zeros(self.shape, ctx=cpu(), dtype=self.dtype, stype=self._stype)
            trainer._row_sparse_pull(self, out, ndarray.arange(0, self.shape[0], ctx=cpu()),
                                     full_idx=True)
            return out
        arrays = self.list_data()
        if len(arrays) == 1:
            return arrays[0].copyto(cpu())
        return ndarray.add_n(*[a.copyto(cpu()) for a in arrays]) / len(arrays)

    # --- public API ---------------------------------------------------------------------------
    def initialize(self, init=None, ctx=None, default_init=initializer.Uniform(),
                   force_reinit=False):
        """Create the value on each context of ``ctx`` (default: the current context)
        with ``init`` (else this parameter's own ``init``, else ``default_init``). When the
        shape is not known yet and deferred initialisation is allowed, this happens at
        the first forward pass instead."""
        if self._data is not None and not force_reinit:
            warnings.warn(f"Parameter '{self.name}' is already initialized, ignoring. Set "
                          "force_reinit=True to re-initialize.", stacklevel=2)
            return
        self._data = self._grad = None
        if ctx is None:
            ctx = [current_context()]
        if isinstance(ctx, Context):
            ctx = [ctx]
        if init is None:
            init = default_init if self.init is None else self.init
        if not shape_is_known(self._shape):
            if self._allow_deferred_init:
                self._deferred_init = (init, ctx, default_init, None)
                return
            raise ValueError(f"Cannot initialize Parameter '{self.name}' because it has "
                             f"invalid shape: {self.shape}.")
        self._deferred_init = (init, ctx, default_init, None)
        self._finish_deferred_init()

    def reset_ctx(self, ctx):
        """Move the value (and gradient) to the context(s) ``ctx``."""
        if ctx is None:
            ctx = [current_context()]
        if isinstance(ctx, Context):
            ctx = [ctx]
        if self._data:
            data = self._reduce()
            with autograd.pause():
                self._init_impl(data, ctx)
        elif self._deferred_init:
            init, _, default_init, data = self._deferred_init
            self._deferred_init = (init, ctx, default_init, data)
        else:
            raise ValueError(f"Cannot reset context for Parameter '{self.name}' because it "
                             "has not been initialized.")

    def set_data(self, data):
        """Set the value on every context to ``data``."""
        self.shape = data.shape
        if self._data is None:
            if not self._deferred_init:
                raise AssertionError(f"Parameter '{self.name}' has not been initialized")
            self._deferred_init = self._deferred_init[:3] + (data,)
            return
        trainer = self._trainer
        if trainer is not None and trainer._kv_initialized and trainer._update_on_kvstore:
            if self not in trainer._params_to_init:
                trainer._reset_kvstore()
        for arr in self._check_and_get(self._data, list):
            arr[:] = data

    def _pull_rows(self, out, row_id, full_idx=False):
        trainer = self._trainer
        if trainer is None:
            raise RuntimeError(f"Cannot get row_sparse data for Parameter '{self.name}' "
                               "when no Trainer is created with it.")
        trainer._row_sparse_pull(self, out, row_id, full_idx)
        return out

    def row_sparse_data(self, row_id):
        """The rows ``row_id`` of this row_sparse parameter on row_id's context, pulled
        from its Trainer's KVStore into the parameter's array there (the array
        autograd differentiates)."""
        if self._stype != "row_sparse":
            raise RuntimeError(f"Cannot return a copy of Parameter {self.name} via "
                               f"row_sparse_data() because its storage type is "
                               f"{self._stype}. Please use data() instead.")
        return self._pull_rows(self._check_and_get(self._data, row_id.context), row_id)

    def list_row_sparse_data(self, row_id):
        """row_sparse_data on every context (one row_id array for all)."""
        if self._stype != "row_sparse":
            raise RuntimeError(f"Cannot return copies of Parameter '{self.name}' on all "
                               f"contexts via list_row_sparse_data() because its storage "
                               f"type is {self._stype}. Please use data() instead.")
        return self._pull_rows(self._check_and_get(self._data, list), row_id)

    def data(self, ctx=None):
        """The value on ``ctx`` (default: the only context, or the current one); an
        ``mx.np`` array in NumPy mode (or when the parameter was made in it). A
        row_sparse parameter is read with ``row_sparse_data`` instead."""
        if self._stype != "default":        # (called per parameter and forward)
            self._check_dense("data")
        return _np_mode(self._check_and_get(self._data, ctx), self)

    def list_data(self):
        """The values on every context, in ``list_ctx()`` order."""
        self._check_dense("list_data")
        return _np_mode(self._check_and_get(self._data, list), self)

    def _check_dense(self, what):
        if self._stype != "default":
            raise RuntimeError(f"Cannot return a copy of Parameter '{self.name}' via "
                               f"{what}() because its storage type is {self._stype}. "
                               "Please use row_sparse_data() instead.")

    def grad(self, ctx=None):
        """The gradient buffer on ``ctx``."""
        if self._data is not None and self._grad is None:
            raise RuntimeError(f"Cannot get gradient array for Parameter '{self.name}' "
                               "because grad_req='null'")
        return _np_mode(self._check_and_get(self._grad, ctx), self)

    def list_grad(self):
        """The gradient buffers on every context."""
        if self._data is not None and self._grad is None:
            raise RuntimeError(f"Cannot get gradient array for Parameter '{self.name}' "
                               "because grad_req='null'")
        return _np_mode(self._check_and_get(self._grad, list), self)

    def list_ctx(self):
        """The contexts this parameter lives on (or will, once deferred init runs)."""
        if self._data is None:
            if self._deferred_init:
                return self._deferred_init[1]
            raise RuntimeError(f"Parameter '{self.name}' has not been initialized")
        return self._ctx_list

    def zero_grad(self):
        """Set the gradient buffers to 0 (useful with ``grad_req='add'``)."""
        if self._grad is None:
            return
        for g in self._grad:
            ndarray.zeros_like(g, out=g)

    def var(self):
        """The Symbol variable standing for this parameter in hybridized graphs."""
        if self._var is None:
            shape = self.shape
            if shape is not None and is_np_shape():     # 0 is a real size there
                shape = tuple(-1 if d == 0 else d for d in shape)
            self._var = var(self.name, shape=shape, dtype=self.dtype,
                                   lr_mult=self.lr_mult, wd_mult=self.wd_mult,
                                   init=self.init, stype=self._stype)
        return self._var

    def cast(self, dtype):
        """Cast the value and gradient to ``dtype``."""
        self._dtype = dtype
        if self._data is None:
            return
        with autograd.pause():
            self._data = [d.astype(dtype) for d in self._data]
            if self._grad is None:
                return
            self._grad = [g.astype(dtype) for g in self._grad]
            autograd.mark_variables(self._data, self._grad, self.grad_req)


def _fresh_grad(arr):
    """Whether backward has written arr's gradient since the flag was last cleared."""
    ag = arr._ag
    return ag is not None and getattr(ag[0], "fresh_grad", False)


def _clear_fresh_grad(arr):
    ag = arr._ag
    if ag is not None and hasattr(ag[0], "fresh_grad"):
        ag[0].fresh_grad = False


class Constant(Parameter):
    """A parameter that is never trained (``grad_req='null'``), initialised to
    ``value`` (an NDArray or anything ``mx.nd.array`` takes)."""

    def __init__(self, name, value):
        if not isinstance(value, NDArray):
            value = ndarray.array(value)
        self.value = value

        class Init(initializer.Initializer):
            def _init_weight(self, _, arr):
                value.copyto(arr)
        init_name = f"Constant_{id(self)}"
        initializer.alias(init_name)(Init)
        super().__init__(name, grad_req="null", shape=value.shape, dtype=value.dtype,
                         init=init_name)

    def __repr__(self):
        return f"Constant {self.name} (shape={self.shape}, dtype={self.dtype})"

    @property
    def grad_req(self):
        return "null"

    @grad_req.setter
    def grad_req(self, req):
        if req != "null":
            warnings.warn(f'Constant parameter "{self.name}" does not support grad_req '
                          f'other than "null", and new value "{req}" is ignored.')


class ParameterDict:
    """An ordered dict of Parameters sharing a name prefix (what ``Block.params`` and
    ``collect_params()`` return). ``get('weight')`` creates or finds ``<prefix>weight``;
    a ParameterDict built with ``shared=`` also finds the parameters of that one."""

    def __init__(self, prefix="", shared=None):
        self._prefix = prefix
        self._params = OrderedDict()
        self._shared = shared

    def __repr__(self):
        name = self._prefix + " " if self._prefix else ""
        body = "\n".join(_indent(f"  {v}", 2) for v in self.values())
        return f"{name}(\n{body}\n)"

    def __getitem__(self, key):
        return self._params[key]

    def __iter__(self):
        return iter(self._params)

    def __len__(self):
        return len(self._params)

    def __contains__(self, key):
        return key in self._params

    def items(self):
        return self._params.items()

    def keys(self):
        return self._params.keys()

    def values(self):
        return self._params.values()

    @property
    def prefix(self):
        """The prefix of every parameter name created through ``get``."""
        return self._prefix

    def _get_impl(self, name):
        if name in self._params:
            return self._params[name]
        if self._shared is not None and name in self._shared._params:
            self._params[name] = self._shared._params[name]
            return self._params[name]
        return None

    def get(self, name, **kwargs):
        """The Parameter ``prefix + name``, created with kwargs if it does not exist. For
        an existing one, kwargs must agree with its attributes (unknown 0 dims of a
        shape are filled in from the other side)."""
        name = self.prefix + name
        param = self._get_impl(name)
        if param is None:
            param = Parameter(name, **kwargs)
            self._params[name] = param
            return param
        for key, value in kwargs.items():
            # the stored shape (0 = unknown), not the -1 that np mode shows
            existing = param._shape if key == "shape" else getattr(param, key, None)
            if existing is None:
                setattr(param, key, value)
                continue
            if key == "shape" and value is not None and len(value) == len(existing):
                merged = _merge_shapes(value, existing)
                if merged is not None:
                    param._shape = merged
                    continue
            elif key == "dtype" and value is not None and np.dtype(value) == np.dtype(existing):
                continue
            if value is not None and value != existing:
                raise AssertionError(
                    f"Cannot retrieve Parameter '{name}' because desired attribute does not "
                    f"match with stored for attribute '{key}': desired '{value}' vs stored "
                    f"'{existing}'.")
        return param

    def get_constant(self, name, value=None):
        """The Constant ``prefix + name``, created with ``value`` if it does not exist."""
        name = self.prefix + name
        param = self._get_impl(name)
        if param is None:
            if value is None:
                raise KeyError(f"No constant named '{name}'. Please specify value if you "
                               "want to create a new constant.")
            param = Constant(name, value)
            self._params[name] = param
        elif value is not None:
            if not isinstance(param, Constant):
                raise AssertionError(f"Parameter '{name}' already exists but it is not a "
                                     "constant.")
            if isinstance(value, NDArray):
                value = value.asnumpy()
            value = np.asarray(value)
            if param.shape != value.shape or not (param.value.asnumpy() == value).all():
                raise AssertionError(f"Constant '{name}' already exists but it's value "
                                     "doesn't match new value")
        return param

    def update(self, other):
        """Add the parameters of another ParameterDict (or dict); a name already present
        must hold the very same Parameter."""
        for key, value in other.items():
            if key in self._params and self._params[key] is not value:
                raise AssertionError(f"Cannot update self with other because they have "
                                     f"different Parameters with the same name '{key}'")
        for key, value in other.items():
            self._params[key] = value

    def initialize(self, init=initializer.Uniform(), ctx=None, verbose=False,
                   force_reinit=False):
        """Initialise every parameter (each one's own ``init`` takes precedence)."""
        if verbose:
            init.set_verbosity(verbose=verbose)
        for param in self.values():
            param.initialize(None, ctx, init, force_reinit=force_reinit)

    def zero_grad(self):
        """Set every gradient buffer to 0."""
        for param in self.values():
            param.zero_grad()

    def reset_ctx(self, ctx):
        """Move every parameter to the context(s) ``ctx``."""
        for param in self.values():
            param.reset_ctx(ctx)

    def list_ctx(self):
        """Every context some parameter lives on."""
        seen = []
        for param in self.values():
            for ctx in param.list_ctx():
                if ctx not in seen:
                    seen.append(ctx)
        return seen

    def setattr(self, name, value):
        """Set an attribute on every parameter, e.g. ``setattr('grad_req', 'null')``."""
        for param in self.values():
            setattr(param, name, value)

    def save(self, filename, strip_prefix=""):
        """Write every parameter (keyed by full name, minus ``strip_prefix``) to an
        MXNet ``.params`` file."""
        arg_dict = {}
        for param in self.values():
            if not param.name.startswith(strip_prefix):
                raise ValueError(
                    f"Prefix '{strip_prefix}' is to be striped before saving, but "
                    f"Parameter's name '{param.name}' does not start with "
                    f"'{strip_prefix}'. this may be due to your Block shares parameters "
                    "from other Blocks or you forgot to use 'with name_scope()' when "
                    f"creating child blocks. {_NAMING_DOC}")
            arg_dict[param.name[len(strip_prefix):]] = param._reduce()
        ndarray.save(filename, arg_dict)

    def load(self, filename, ctx=None, allow_missing=False, ignore_extra=False,
             restore_prefix="", cast_dtype=False, dtype_source="current"):
        """Load parameters from an MXNet ``.params`` file (``arg:``/``aux:`` prefixes are
        dropped; ``restore_prefix`` is prepended to the saved names)."""
        if restore_prefix:
            for name in self.keys():
                if not name.startswith(restore_prefix):
                    raise AssertionError(
                        f"restore_prefix is '{restore_prefix}' but Parameters name '{name}' "
                        f"does not start with '{restore_prefix}'")
        self.load_dict(ndarray.serialization.load_any(filename), ctx, allow_missing, ignore_extra,
                       restore_prefix, filename, cast_dtype, dtype_source)

    def load_dict(self, param_dict, ctx=None, allow_missing=False, ignore_extra=False,
                  restore_prefix="", filename=None, cast_dtype=False,
                  dtype_source="current"):
        """Load parameters from a dict of name -> NDArray (see ``load``)."""
        lprefix = len(restore_prefix)
        items = param_dict.items() if isinstance(param_dict, dict) else param_dict
        loaded = [(k[4:] if k.startswith(("arg:", "aux:")) else k, v) for k, v in items]
        arg_dict = {restore_prefix + k: v for k, v in loaded}
        source = f"file: {filename}" if filename else "param_dict"
        if not allow_missing:
            for name in self.keys():
                if name not in arg_dict:
                    raise AssertionError(
                        f"Parameter '{name[lprefix:]}' is missing in {source}, which "
                        f"contains parameters: {_brief_print_list(arg_dict.keys())}. Please "
                        "make sure source and target networks have the same prefix."
                        + _NAMING_DOC)
        for name, value in arg_dict.items():
            if name not in self._params:
                if not ignore_extra:
                    raise AssertionError(
                        f"Parameter '{name[lprefix:]}' loaded from {source} is not present "
                        f"in ParameterDict, choices are: "
                        f"{_brief_print_list(self._params.keys())}. Set ignore_extra to True "
                        "to ignore. Please make sure source and target networks have the "
                        "same prefix." + _NAMING_DOC)
                continue
            self[name]._load_init(value, ctx, cast_dtype=cast_dtype,
                                  dtype_source=dtype_source)


def _merge_shapes(wanted, existing):
    """Combine two shapes of equal rank where 0/-1 means unknown; None on a conflict."""
    merged = []
    for a, b in zip(wanted, existing):
        if a != b and a > 0 and b > 0:
            return None
        merged.append(b if a in (0, -1) else a)
    return tuple(merged)


tensor_types = (Symbol, NDArray)


def data_on(params, ctx):
    """``[p.data(ctx) for p in params]``: a hybridized call's parameter inputs. The same
    arrays and errors (both from ``_check_and_get``), without ``data()``'s storage and
    NumPy-mode checks where neither applies (a dense parameter outside NumPy mode): a
    ResNet-50 passes ~320 arrays a call."""
    if is_np_array():
        return [p.data(ctx) for p in params]
    return [p._check_and_get(p._data, ctx) if p._stype == "default" and not p._is_np
            else p.data(ctx) for p in params]


def _np_mode(value, param=None):
    """Arrays as mx.np views of the same data when NumPy mode is on (or the parameter
    was made in NumPy mode)."""
    if not getattr(param, "_is_np", False) and not is_np_array():
        return value
    return to_np(value)
