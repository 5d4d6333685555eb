"""The operator registry: every operator is defined once, here, and feeds ``mx.nd``,
``mx.sym``, ``mx.np``, autograd, the executor and Gluon.

An operator is a subclass of ``Op`` decorated with ``@register``; the class
attributes and methods of ``Op`` below, with their defaults, are the whole contract.

Must give: ``name``, ``params`` (a ``params.Schema``) and ``forward``.

May declare (defaults in ``Op``): ``aliases``; ``arguments/outputs/aux_states``
(names, from the parameters); ``num_visible_outputs``; ``infer_shape``/``infer_type``
(default: elementwise); ``infers_partial`` (False: say nothing about outputs
until every input shape is complete; see executor/partial_shape.py); ``backward`` with ``backward_uses`` (which of out_grad /
in_data / out_data it reads, seed 002's DeclareBackwardDependency); ``zero_grad``
(the gradient is defined and zero: comparisons, argmax); ``is_loss`` (a loss head:
backward ignores the head gradient's values, so executors need none); ``inplace``
((input, output) pairs that may share a buffer, seed 002's ForwardInplaceOption);
``resources`` ('random', 'temp'); ``variadic`` (the count parameter of ops taking any
number of inputs); ``complete_params(p, out_shapes)`` (parameters an executor runs
with once inference is done, e.g. a creation op's unknown dims filled in);
``input_var_attrs(p, input_name)`` (attributes of a variable the symbol front end
creates for a missing input, e.g. an initializer for BatchNorm's moving stats);
``check_params(p)`` (rejects parameter values that no single Schema field can: a
combination, an option not implemented; ``parse`` calls it, so a call, a symbol's
creation or loading checks once, never infer_shape and forward again);
``writes_outputs``; ``unnamed_inputs`` (monitors name the inputs ``input0``...).

Compute contract. ``forward(ctx, p, inputs, aux)`` receives device arrays (NumPy or
CuPy; ``ctx.xp`` is the module, never branch on it: device kernels go in
``operator.kernels``) and returns a list of output arrays (one per ``outputs(p)``);
it may update ``aux`` in place (BatchNorm's moving stats, only when
``ctx.is_train``). ``backward(ctx, p, out_grads, inputs, outputs, aux)`` returns one
gradient (or None) per argument; entries of ``inputs``/``outputs``/``out_grads``
that ``backward_uses`` does not name are None; ``ctx.need_grad[i]`` says whether
argument i's gradient is wanted, ``ctx.in_shapes`` gives every argument's shape and
``ctx.req`` the request per result ('write', 'inplace', 'add', 'null', or None).
``ctx.layout`` says which arrays of an executor call hold oneDNN's channel-blocked
layout (executor/layout.py): only the device kernels that accept it and elementwise
bodies over one shape (whose result does not depend on the element order) are given
such arrays; every other body gets plain ones and may ignore it.

Write-into-outputs form (``writes_outputs = True``): ``forward(ctx, p, inputs, aux,
out=None)`` and ``backward(ctx, p, out_grads, inputs, outputs, aux, in_grad=None)``.
``out``/``in_grad`` is None or a list with one entry per result: a preallocated array
of the inferred shape and dtype to write into (ufunc ``out=``, ``xp.matmul(...,
out=)``), or None (allocate a fresh one). Return the arrays written (the entries
given) or fresh ones. An entry may share memory with an input when ``inplace`` says
so (and in backward, an input gradient with the output gradient), so write it only
after reading what it overlaps. ``operator.runner`` runs every call: it hands out
destinations, applies reqs, fills missing output gradients with zeros and wraps
errors; nobody else calls ``forward``/``backward``.
"""
import numpy as np

from ..base import MXNetError, _LIB, emulate_c_api

__all__ = ["Op", "OpContext", "register", "get_op", "list_ops", "all_ops", "apply_req",
           "store", "store_all",
           "add_listener",
           "REQ_NULL", "REQ_WRITE", "REQ_INPLACE", "REQ_ADD", "ShapeError"]

REQ_NULL, REQ_WRITE, REQ_INPLACE, REQ_ADD = "null", "write", "inplace", "add"

_REGISTRY = {}
_LISTENERS = []       # front ends that build a function per operator (mx.nd, mx.sym)
# Initializers MXNet gives the moving statistics it creates (FSetInputVarAttrOnCompose).
_AUX_INIT = {"moving_mean": '["zero", {}]', "moving_var": '["one", {}]'}


class ShapeError(MXNetError):
    """Shape inference found a contradiction or an impossible shape."""


class OpContext:
    """What an operator body gets besides its arrays (seed 002's OpContext)."""
    __slots__ = ("is_train", "xp", "ctx", "need_grad", "in_shapes", "req", "_rng",
                 "layout", "widened_from")

    def __init__(self, xp, ctx, is_train=False, need_grad=None, in_shapes=None, req=None):
        self.xp, self.ctx, self.is_train = xp, ctx, is_train
        self.need_grad = need_grad      # backward: per argument, is its gradient wanted
        self.in_shapes = in_shapes      # backward: the arguments' shapes (always given)
        self.req = req                  # per result: 'null'/'write'/'inplace'/'add' or None
        self._rng = None
        # executor calls only: which arrays hold oneDNN's channel-blocked layout
        # (executor/layout.py); None: all plain
        self.layout = None
        # the low-precision dtype a call computed in float32 stands for (see widened)
        self.widened_from = None

    def widened(self, low):
        """This context for a call computed in float32 on behalf of ``low`` (bfloat16)
        arrays, whose results are rounded back (operator/bfloat16.run_widened). Kernels
        with results that are opaque bytes rather than values (cuDNN's RNN reserve)
        decline such calls: the rounding would corrupt them."""
        c = OpContext(self.xp, self.ctx, self.is_train, self.need_grad, self.in_shapes,
                      self.req)
        c._rng, c.layout, c.widened_from = self._rng, self.layout, low
        return c

    @property
    def rng(self):
        """The context's random generator (resource kRandom). Refused inside a
        CUDA-graph capture: the generator keeps its position on the host, so a replay
        would repeat the captured draw's numbers (the capture fails instead and that
        graph stays off; operators that draw on the device do not use it)."""
        # Looked up on every use, not cached: OpContexts are reused across calls and
        # mx.random.seed() replaces the generators.
        from ..backend.cublas_graph import capturing
        if capturing():
            raise MXNetError("an operator draws from the context's random generator "
                             "inside a CUDA graph capture, whose replays would repeat "
                             "its numbers")
        from ..resource import get_rng
        return get_rng(self.ctx)

    def temp_space(self, shape, dtype=np.float32):
        """Scratch space from the pool (resource kTempSpace): (array, release)."""
        from ..resource import temp_space
        return temp_space(self.ctx, shape, dtype)


class Op:
    """Base of every operator. See the module docstring for the contract."""

    name = None
    aliases = ()
    params = None                       # Schema; set by subclasses
    # Which forward values backward reads: any of 'out_grad', 'in_data', 'out_data'.
    backward_uses = ("out_grad", "in_data", "out_data")
    # With 'out_data': the indices of the outputs backward reads (None: every output).
    # Outputs it leaves out are passed to backward as None and need not be kept alive
    # for it (BatchNorm reads its saved mean/invstd, not its large normalised output).
    backward_out_data = None
    inplace = ()                        # (input index, output index) pairs
    # (input index, output-gradient index) pairs whose input gradient is exactly that
    # output gradient when their shapes agree (add's two, sub's first): the memory
    # plan may give one such gradient the output gradient's own buffer
    backward_identity = ()
    resources = ()                      # 'random', 'temp'
    # For ops taking a variable number of inputs (Concat, add_n, stack): the name of
    # the count parameter MXNet stores (usually 'num_args').
    variadic = None
    # True: the gradient is defined and zero everywhere (comparisons, argmax, ...).
    zero_grad = False
    # True: a loss head; backward ignores the head gradient's values (make_loss).
    is_loss = False
    # False: partly known input shapes tell nothing (MXNet's where); see partial_shape.
    infers_partial = True
    # True: forward/backward take out=/in_grad= destinations (see the module docstring).
    writes_outputs = False
    # False: MXNet gives the operator no input names of its own (no FListInputNames),
    # so monitor callbacks (monitor_all) call its inputs input0, input1, ... rather
    # than after its arguments (unary math, reductions, Activation, Reshape, ...).
    named_inputs = True
    # True: the output shape depends on the input values (boolean_mask): a hybridized
    # graph holding such an operator runs its operators one by one, as MXNet's CachedOp
    # does for dynamic shapes, since no executor can be planned ahead.
    dynamic_shape = False
    # True: the node's inputs are not arguments-then-auxiliary-states but in the order
    # ``input_order(p)`` permutes into that (MXNet's subgraph nodes, whose auxiliary
    # states sit among their inputs)
    permutes_inputs = False
    # True: the body takes bfloat16 arrays as they are (casts, data movement); else
    # the runner computes bfloat16 in float32 (operator/bfloat16.py).
    bfloat16_native = False
    # True: on the GPU, CuPy's bfloat16 ufuncs compute it element by element with one
    # rounding, as the float32 route would (elemwise add, sub, mul)
    bfloat16_gpu = False
    # Checked by the runner before every forward (imperative call or executor node),
    # as MXNet checks on every call. ``float_only``: MXNet has kernels for floating
    # point data only, so an integer input 0 is refused rather than computed.
    # ``checks_types``: ``infer_type`` is run on the inputs' dtypes, so that inputs of
    # mismatched dtypes are refused as MXNet's type inference refuses them.
    float_only = False
    checks_types = False
    # ``rewrites_inputs``: ``rewrite_inputs(p, inputs)`` runs before every forward, for
    # an operator that writes into an input as MXNet's does (BatchNorm's fixed gamma)
    rewrites_inputs = False
    doc = ""

    # --- names ------------------------------------------------------------
    def arguments(self, p):
        if self.variadic:
            return [f"arg{i}" for i in range(p[self.variadic])]
        return ["data"]

    def outputs(self, p):
        return ["output"]

    def aux_states(self, p):
        return []

    def num_visible_outputs(self, p):
        return len(self.outputs(p))

    def input_order(self, p):
        """With ``permutes_inputs``: the positions of the node's inputs that are its
        arguments, then those that are its auxiliary states."""
        return None

    def complete_params(self, p, out_shapes):
        """Parameters an executor runs with, once inference found ``out_shapes``."""
        return p

    def needs_inferred_params(self, p):
        """Whether a node with parameters ``p`` can run only with what shape inference
        finds (``complete_params`` may change them), so not straight through the
        imperative dispatcher. An operator that completes its parameters is taken to
        unless it says otherwise."""
        return type(self).complete_params is not Op.complete_params

    def input_var_attrs(self, p, input_name):
        """Attributes for the variable the symbol front end creates for a missing
        input: by default an initializer for BatchNorm-style moving statistics."""
        init = _AUX_INIT.get(input_name)
        if init is not None and input_name in self.aux_states(p):
            return {"__init__": init}
        return {}

    def kept_outputs(self, p, outputs):
        """``outputs`` (a list) with the ones backward does not read (see
        ``backward_out_data``) replaced by None."""
        keep = self.backward_out_data
        if keep is None:
            return list(outputs)
        return [o if i in keep else None for i, o in enumerate(outputs)]

    def backward_uses_for(self, p):
        """``backward_uses`` for these parameters (a CustomOp's prop declares it per
        call); executors and autograd ask this, not the attribute."""
        return self.backward_uses

    # --- inference ----------------------------------------------------------
    def infer_shape(self, p, in_shapes):
        """Return (in_shapes, out_shapes, aux_shapes); unknown shapes are None.

        Default: elementwise — every input and output has the first known shape.
        """
        known = next((s for s in in_shapes if s is not None), None)
        for s in in_shapes:
            if s is not None and known is not None and tuple(s) != tuple(known):
                raise ShapeError(f"{self.name}: inputs must have the same shape, got "
                                 f"{[tuple(x) if x is not None else None for x in in_shapes]}")
        n_out = len(self.outputs(p))
        return ([known] * len(in_shapes), [known] * n_out,
                [None] * len(self.aux_states(p)))

    def infer_type(self, p, in_types):
        """Return (in_types, out_types, aux_types) as numpy dtypes; None = unknown."""
        known = next((t for t in in_types if t is not None), None)
        n_out = len(self.outputs(p))
        return ([known if t is None else t for t in in_types], [known] * n_out,
                [known] * len(self.aux_states(p)))

    # --- compute ------------------------------------------------------------
    def forward(self, ctx, p, inputs, aux):
        raise NotImplementedError(f"operator {self.name} has no forward")

    backward = None   # an operator without backward is not differentiable

    def check_params(self, p):
        """Raise MXNetError for parameters the Schema accepts field by field but the
        operator does not (see the module docstring). Default: nothing to check."""

    def parse(self, kwargs):
        """The parameters of a call: the Schema's parse, then ``check_params``."""
        p = self.params.parse(self.name, kwargs)
        self.check_params(p)
        return p

    def _default_params(self):
        """Parameters for a call with no keyword arguments (cached)."""
        p = self.__dict__.get("_defaults")
        if p is None:
            p = self.parse({})
            self._defaults = p
        return p

    def __repr__(self):
        return f"<Op {self.name}>"


def register(cls):
    """Class decorator: instantiate the operator and add it (and its aliases)."""
    op = cls() if isinstance(cls, type) else cls
    if op.params is None:
        from .params import Schema
        op.params = Schema()
    for nm in (op.name, *op.aliases):
        if nm in _REGISTRY and type(_REGISTRY[nm]) is not type(op):
            raise MXNetError(f"operator {nm} registered twice")
        _REGISTRY[nm] = op
        for listener in _LISTENERS:
            listener(nm, op)
    return cls


def add_listener(fn):
    """Call fn(name, op) for every registered operator name, now and on each later
    registration (how mx.nd and mx.sym grow a function per operator)."""
    _LISTENERS.append(fn)
    for nm, op in list(_REGISTRY.items()):
        fn(nm, op)


def get_op(name):
    try:
        return _REGISTRY[name]
    except KeyError:
        raise MXNetError(f"Cannot find operator {name!r}") from None


def list_ops():
    return sorted(_REGISTRY)


def all_ops():
    """name -> Op for every registered name and alias."""
    return dict(_REGISTRY)


def apply_req(dst, req, value):
    """Write value into the array dst as req says (seed 002's ASSIGN_DISPATCH)."""
    if req == REQ_NULL or value is None:
        return
    if req == REQ_ADD:
        dt = getattr(value, "dtype", None)
        if dt is not None and dt != dst.dtype:     # e.g. a float gradient of an int input
            value = value.astype(dst.dtype)
        dst += value
    else:
        dst[...] = value


def store(out, i, value):
    """Output ``i`` of an operator following the write-into-outputs contract: copied
    into ``out[i]`` when the caller gave a preallocated array there, else ``value``
    itself."""
    if out is None or out[i] is None:
        return value
    dst = out[i]
    dst[...] = value
    return dst


def store_all(out, values):
    """``store`` for every output."""
    return [store(out, i, v) for i, v in enumerate(values)]


@emulate_c_api("MXListAllOpNames")
def _c_list_all_op_names(out_size, out_array):
    """``_LIB.MXListAllOpNames(byref(uint), byref(POINTER(c_char_p)))``: every
    registered operator name, aliases included (MXNet's test_amp_coverage calls it)."""
    return _LIB.return_strings("MXListAllOpNames", list_ops(), out_size, out_array)
