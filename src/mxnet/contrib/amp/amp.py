"""Automatic mixed precision (AMP): run the operators that gain from it in float16
while keeping the numerically delicate ones in float32.

Two ways in, both driven by the operator lists in ``lists/``:

* ``init()`` wraps the ``mx.nd`` / ``mx.sym`` operator functions (and their
  ``contrib`` / ``_internal`` namespaces), so every later call casts its floating
  inputs: to the target dtype for the low-precision ops, to float32 for the float32
  ops, to the widest input type for the ops that need equal types. Gluon blocks call
  these functions through ``F``, so imperative and hybridized models are covered.
  ``init_trainer`` / ``scale_loss`` / ``unscale`` add dynamic loss scaling.
* ``convert_symbol`` / ``convert_model`` / ``convert_hybrid_block`` /
  ``convert_bucketing_module`` rewrite a float32 graph offline, inserting ``amp_cast``
  (and, where input types are unknown, ``amp_multicast``) nodes.

The target dtype is float16 or bfloat16 (ml_dtypes' type; the CPU computes it with
oneDNN's bfloat16 convolution and inner product where the processor has them and in
float32 elsewhere, see operator/bfloat16.py). As in MXNet 1.9.1, BatchNorm under
bfloat16 keeps its parameters and statistics in float32 (``list_lp16_use_fp32_params``).
"""
import contextlib
import logging

import numpy as np

from ...base import MXNetError, DTYPE_TO_FLAG, dtype_np, is_float_dtype
from . import lists  # noqa: F401  (amp.lists, as in MXNet)
from .lists import symbol_bf16, symbol_fp16
from .loss_scaler import LossScaler

__all__ = ["init", "init_trainer", "scale_loss", "unscale", "convert_model",
           "convert_symbol", "convert_hybrid_block", "convert_bucketing_module",
           "list_lp16_ops", "list_fp32_ops", "list_lp16_fp32_ops",
           "list_conditional_fp32_ops", "list_widest_type_cast",
           "list_loss_output_functions", "list_lp16_use_fp32_params"]

class _AMPListError(MXNetError, AssertionError):
    """Bad AMP operator lists (an AssertionError in MXNet 1.9.1, kept catchable as
    both)."""
_amp_initialized = False
_amp_target = None
_wrapped = []          # (namespace, name, original) so a test can undo init()


# ----------------------------------------------------------------- dtype policy
def _check_target(target_dtype):
    """The numpy dtype for a target dtype name (float16 or bfloat16); MXNetError for
    anything else."""
    try:
        dt = dtype_np(target_dtype)
    except (MXNetError, TypeError):
        dt = None
    if dt is None or dt.name not in ("float16", "bfloat16"):
        raise MXNetError(f"AMP supports target_dtype 'float16' and 'bfloat16'; got "
                         f"{target_dtype!r}")
    return dt


def _lists(target_dtype):
    """The list module for a target dtype name."""
    name = target_dtype if isinstance(target_dtype, str) else dtype_np(target_dtype).name
    if name == "float16":
        return symbol_fp16
    if name == "bfloat16":
        return symbol_bf16
    raise MXNetError(f"AMP has operator lists for 'float16' and 'bfloat16', not "
                     f"{target_dtype!r}")


def list_lp16_ops(target_dtype):
    """Operators that run in the low-precision target dtype."""
    mod = _lists(target_dtype)
    return list(mod.FP16_FUNCS if mod is symbol_fp16 else mod.BF16_FUNCS)


def list_fp32_ops(target_dtype):
    """Operators that always run in float32."""
    return list(_lists(target_dtype).FP32_FUNCS)


def list_lp16_fp32_ops(target_dtype):
    """Operators that run in whatever floating type their inputs have."""
    mod = _lists(target_dtype)
    return list(mod.FP16_FP32_FUNCS if mod is symbol_fp16 else mod.BF16_FP32_FUNCS)


def list_conditional_fp32_ops(target_dtype):
    """(operator, parameter, values): float32 when the parameter takes one of values."""
    return [(op, key, list(vals)) for op, key, vals in _lists(target_dtype).CONDITIONAL_FP32_FUNCS]


def list_widest_type_cast(target_dtype):
    """Operators whose inputs are cast to the widest floating type among them."""
    return list(_lists(target_dtype).WIDEST_TYPE_CASTS)


def list_loss_output_functions(target_dtype):
    """Loss-output operators (their gradient is not scaled by the loss scale)."""
    return list(_lists(target_dtype).LOSS_OUTPUT_FUNCTIONS)


def list_lp16_use_fp32_params(target_dtype):
    """Low-precision operators whose parameters stay float32 (bfloat16 only, as in
    MXNet 1.9.1; any other target is an error)."""
    mod = _lists(target_dtype)
    if mod is not symbol_bf16:
        raise MXNetError("list_lp16_use_fp32_params: only defined for target_dtype "
                         f"'bfloat16', got {target_dtype!r}")
    return list(mod.BF16_USE_FP32_PARAMS)


class _Policy:
    """Which dtype each operator wants, for one set of lists."""

    def __init__(self, target, lp16_ops, fp32_ops, conditional_fp32_ops, widest_ops):
        self.target = target
        self.lp16 = set(lp16_ops)
        self.fp32 = set(fp32_ops)
        self.widest = set(widest_ops)
        self.conditional = {}
        for op, key, vals in conditional_fp32_ops:
            self.conditional.setdefault(op, []).append((key, {str(v) for v in vals}))

    def kind(self, op_name, params):
        """'lp16', 'fp32', 'widest' or None (leave as is), given the call's params
        (a mapping of given parameter values)."""
        if op_name in self.lp16:
            return "lp16"
        if op_name in self.fp32:
            return "fp32"
        for key, vals in self.conditional.get(op_name, ()):
            if key in params and str(params[key]) in vals:
                return "fp32"
        if op_name in self.widest:
            return "widest"
        return None


def _check_lists(target, lp16_ops, fp32_ops, conditional_fp32_ops):
    """Validate user op lists the way MXNet does: lists of names, no op in two lists,
    every op known to AMP's lists."""
    for what, ops in (("target_dtype_ops", lp16_ops), ("fp32_ops", fp32_ops),
                      ("conditional_fp32_ops", conditional_fp32_ops)):
        if not isinstance(ops, list):
            raise _AMPListError(f"AMP: {what} should be a list, got {type(ops).__name__}")
    for item in conditional_fp32_ops:
        if not (isinstance(item, (tuple, list)) and len(item) == 3 and isinstance(item[0], str)
                and isinstance(item[1], str) and isinstance(item[2], list)):
            raise _AMPListError("AMP: conditional_fp32_ops should be a list of "
                             "(str, str, list of str)")
    cond_names = [c[0] for c in conditional_fp32_ops]
    for a, an, b, bn in ((lp16_ops, "target_dtype_ops", fp32_ops, "fp32_ops"),
                         (lp16_ops, "target_dtype_ops", cond_names, "conditional_fp32_ops"),
                         (cond_names, "conditional_fp32_ops", fp32_ops, "fp32_ops")):
        common = set(a) & set(b)
        if common:
            raise _AMPListError(f"AMP: ops cannot be in two lists; {an} and {bn} share "
                             f"{sorted(common)}")
    known = set(list_lp16_ops(target) + list_fp32_ops(target) + list_lp16_fp32_ops(target)
                + [c[0] for c in list_conditional_fp32_ops(target)])
    unknown = set(lp16_ops + fp32_ops + cond_names) - known
    if unknown:
        raise _AMPListError(f"AMP: {sorted(unknown)} are in none of AMP's operator lists "
                         "(list_lp16_ops, list_fp32_ops, list_lp16_fp32_ops, "
                         "list_conditional_fp32_ops)")


def _policy(target_dtype, lp16_ops, fp32_ops, conditional_fp32_ops):
    target = _check_target(target_dtype)
    name = target.name
    lp16_ops = list_lp16_ops(name) if lp16_ops is None else lp16_ops
    fp32_ops = list_fp32_ops(name) if fp32_ops is None else fp32_ops
    conditional_fp32_ops = (list_conditional_fp32_ops(name) if conditional_fp32_ops is None
                            else conditional_fp32_ops)
    _check_lists(name, lp16_ops, fp32_ops, conditional_fp32_ops)
    return _Policy(target, lp16_ops, fp32_ops, conditional_fp32_ops,
                   list_widest_type_cast(name))


# ------------------------------------------------------- imperative / F wrapping
def _map_inputs(args, kwargs, fn):
    """Apply fn to every array-like input (positional, keyword, or inside a list)."""
    def one(v):
        if isinstance(v, (list, tuple)):
            return type(v)(fn(x) for x in v)
        return fn(v)
    return [one(a) for a in args], {k: (v if k == "out" else one(v))
                                     for k, v in kwargs.items()}


def _wrap_nd(op_name, fn, policy):
    from ... import ndarray as nd
    NDArray = nd.NDArray

    def call(*args, **kwargs):
        kind = policy.kind(op_name, kwargs)
        if kind is None:
            return fn(*args, **kwargs)
        if kind == "widest":
            found = []
            _map_inputs(args, kwargs, lambda v: found.append(v) if isinstance(v, NDArray) else v)
            floats = [np.dtype(v.dtype) for v in found if is_float_dtype(v.dtype)]
            if len({t for t in floats}) < 2:
                return fn(*args, **kwargs)
            dtype = max(floats, key=lambda t: t.itemsize)
        else:
            dtype = policy.target if kind == "lp16" else np.dtype(np.float32)

        def cast(v):
            if isinstance(v, NDArray) and is_float_dtype(v.dtype) and np.dtype(v.dtype) != dtype:
                return nd.amp_cast(v, dtype=dtype.name)
            return v
        args, kwargs = _map_inputs(args, kwargs, cast)
        return fn(*args, **kwargs)
    return call


def _wrap_sym(op_name, fn, policy):
    """Symbolic wrapper: build the node first (so the weight/bias variables the
    function creates itself are covered too), then route its arguments (not its
    auxiliary states) through amp_cast, or one amp_multicast for widest-type ops."""
    from ... import symbol as sym
    Symbol = sym.Symbol

    def call(*args, **kwargs):
        kind = policy.kind(op_name, kwargs)
        out = fn(*args, **kwargs)
        if kind is None or not isinstance(out, Symbol):
            return out
        node = out._outputs[0][0]
        n_args = node.num_args()
        args_in, aux_in = node.inputs[:n_args], node.inputs[n_args:]
        if kind == "widest":
            if len(args_in) < 2:
                return out
            cast = sym.amp_multicast(*[Symbol([e]) for e in args_in],
                                     num_outputs=len(args_in))
            node.inputs = list(cast._outputs) + aux_in
            return out
        dtype = (policy.target if kind == "lp16" else np.dtype(np.float32)).name
        node.inputs = [sym.amp_cast(Symbol([e]), dtype=dtype)._outputs[0]
                       for e in args_in] + aux_in
        return out
    return call


def _namespaces():
    """(module, name prefix it strips) for every front-end operator namespace."""
    from ... import ndarray as nd, symbol as sym
    out = []
    for mod, wrap in ((nd, _wrap_nd), (sym, _wrap_sym)):
        out.append((mod, "", wrap))
        out.append((mod._internal, "", wrap))
        out.append((mod.contrib, "_contrib_", wrap))
    return out


def init(target_dtype="float16", target_precision_ops=None, conditional_fp32_ops=None,
         fp32_ops=None):
    """Turn AMP on for this process: from now on the ``mx.nd`` / ``mx.sym`` operator
    functions (what Gluon's ``F`` is) cast their floating inputs as the operator lists
    say. ``target_precision_ops``, ``conditional_fp32_ops`` and ``fp32_ops`` replace the
    default lists. Calling it again does nothing (a warning is logged)."""
    global _amp_initialized, _amp_target
    policy = _policy(target_dtype, target_precision_ops, fp32_ops, conditional_fp32_ops)
    if _amp_initialized:
        logging.warning("AMP is already initialized; ignoring this amp.init() call")
        return
    names = policy.lp16 | policy.fp32 | policy.widest | set(policy.conditional)
    for mod, prefix, wrap in _namespaces():
        for op_name in names:
            public = op_name[len(prefix):] if prefix and op_name.startswith(prefix) else op_name
            if prefix and not op_name.startswith(prefix):
                continue
            fn = mod.__dict__.get(public)
            if fn is None or not callable(fn):
                continue
            _wrapped.append((mod, public, fn))
            setattr(mod, public, wrap(op_name, fn, policy))
    _amp_initialized = True
    _amp_target = policy.target
    logging.info("Using AMP")


def _reset():
    """Undo init() (for tests): restore the original operator functions."""
    global _amp_initialized, _amp_target
    while _wrapped:
        mod, public, fn = _wrapped.pop()
        setattr(mod, public, fn)
    _amp_initialized = False
    _amp_target = None


# ----------------------------------------------------------------- loss scaling
def _trainer_cls():
    from ...gluon.trainer import Trainer
    return Trainer


def _check_trainer(optimizer_or_trainer):
    from ...optimizer import Optimizer
    if isinstance(optimizer_or_trainer, _trainer_cls()):
        return optimizer_or_trainer
    if isinstance(optimizer_or_trainer, Optimizer):
        raise TypeError("AMP is currently only compatible with Gluon Trainer")
    raise TypeError("optimizer_or_trainer should be a Gluon Trainer or an optimizer, "
                    f"instead is {type(optimizer_or_trainer)}")


def init_trainer(optimizer_or_trainer):
    """Give a Gluon Trainer dynamic loss scaling: ``scale_loss`` multiplies the loss by
    the current scale, ``step`` divides it out, and a step whose gradients hold an
    inf/NaN is skipped and halves the scale. Needs ``amp.init()`` first."""
    if not _amp_initialized:
        raise MXNetError("AMP not initialized, did you forget to call amp.init()?")
    trainer = _check_trainer(optimizer_or_trainer)
    trainer._amp_loss_scaler = LossScaler()
    trainer._amp_original_scale = trainer._scale


@contextlib.contextmanager
def scale_loss(loss, optimizer_or_trainer):
    """Context manager yielding ``loss`` (an NDArray or a list of them) multiplied by
    the trainer's loss scale; the trainer's gradient rescale is divided by the same
    factor so the update sees unscaled gradients."""
    trainer = _check_trainer(optimizer_or_trainer)
    scaler = getattr(trainer, "_amp_loss_scaler", None)
    if scaler is None:
        raise MXNetError("scale_loss: the trainer has no loss scaler; call "
                         "amp.init_trainer(trainer) first")
    scale = scaler.loss_scale
    trainer._scale = trainer._amp_original_scale / scale
    if isinstance(loss, (list, tuple)):
        yield [each * scale for each in loss]
    else:
        yield loss * scale


def unscale(optimizer_or_trainer):
    """Divide the loss scale out of the gradients now (before gradient clipping, say);
    the trainer then applies no further loss-scale factor."""
    trainer = _check_trainer(optimizer_or_trainer)
    factor = trainer._scale / trainer._amp_original_scale \
        if hasattr(trainer, "_amp_original_scale") else None
    if factor is None:
        raise MXNetError("unscale: the trainer has no loss scaler; call "
                         "amp.init_trainer(trainer) first")
    for param in trainer._params:
        if param.grad_req != "null" and param._data is not None:
            for grad in param.list_grad():
                grad *= factor
    trainer._scale = trainer._amp_original_scale


# ------------------------------------------------------------- graph conversion
def convert_symbol(sym, target_dtype="float16", target_dtype_ops=None, fp32_ops=None,
                   conditional_fp32_ops=None, excluded_sym_names=None, data_names=None,
                   cast_optional_params=False):
    """A copy of float32 graph ``sym`` with ``amp_cast`` nodes so the low-precision ops
    run in ``target_dtype``, the float32 ops in float32, and the widest-type ops on
    equal types. ``data_names`` are the float32 data inputs (default: inputs without a
    ``__dtype__`` attribute); every other input is a model parameter and gets a
    ``__dtype__`` attribute. With ``cast_optional_params``, parameters used only in
    the target dtype are stored in it instead of being cast at run time.
    ``excluded_sym_names`` nodes stay float32."""
    from .convert import convert_graph
    policy = _policy(target_dtype, target_dtype_ops, fp32_ops, conditional_fp32_ops)
    if excluded_sym_names is None:
        excluded_sym_names = []
    if not isinstance(excluded_sym_names, list):
        raise MXNetError("convert_symbol: excluded_sym_names should be a list of strs")
    return convert_graph(sym, policy, excluded_sym_names, data_names, cast_optional_params)


def _dtype_of(node_attrs, default=np.float32):
    """The dtype a graph's ``__dtype__`` attribute stores a variable in (default when
    absent or -1, unknown)."""
    from ...base import FLAG_TO_DTYPE
    code = node_attrs.get("__dtype__")
    if code is None or int(code) < 0:
        return np.dtype(default)
    return np.dtype(FLAG_TO_DTYPE[int(code)])


def _cast_params(sym, params):
    """params (name -> NDArray) cast to the dtype the converted graph stores them in."""
    attrs = sym.attr_dict()
    out = {}
    for name, value in params.items():
        want = _dtype_of(attrs.get(name, {}), value.dtype)
        out[name] = value.astype(want) if np.dtype(value.dtype) != want else value
    return out


def convert_model(sym, arg_params, aux_params, target_dtype="float16", target_dtype_ops=None,
                  fp32_ops=None, conditional_fp32_ops=None, excluded_sym_names=None,
                  cast_optional_params=False):
    """``convert_symbol`` for a (symbol, arg_params, aux_params) model; returns the
    converted symbol and the parameters cast to the dtypes it stores them in."""
    _check_target(target_dtype)
    inputs = sym.list_inputs()
    data_names = [n for n in inputs if n not in arg_params and n not in aux_params]
    result = convert_symbol(sym, target_dtype, target_dtype_ops, fp32_ops,
                            conditional_fp32_ops, excluded_sym_names, data_names,
                            cast_optional_params)
    return result, _cast_params(result, arg_params), _cast_params(result, aux_params)


def convert_hybrid_block(block, target_dtype="float16", target_dtype_ops=None, fp32_ops=None,
                         conditional_fp32_ops=None, excluded_sym_names=None, ctx=None,
                         cast_optional_params=False):
    """A SymbolBlock running ``block``'s graph converted by ``convert_symbol``, with
    its parameters cast accordingly and placed on ``ctx`` (MXNet's default is gpu(0);
    here None means the context the block's parameters are on). The block must have
    been hybridized and run forward once."""
    from ...gluon import SymbolBlock
    from ... import symbol as _sym
    _check_target(target_dtype)
    cached = getattr(block, "_cached_graph", None)
    if not cached:
        raise MXNetError("convert_hybrid_block: call block.hybridize() and run forward "
                         "once before converting it")
    inputs, out = cached
    data_names = [i.name for i in inputs]
    converted = convert_symbol(out, target_dtype, target_dtype_ops, fp32_ops,
                               conditional_fp32_ops, excluded_sym_names, data_names,
                               cast_optional_params)
    params = block.collect_params()
    if ctx is None:
        ctx = next(iter(params.values())).list_ctx()[0]
    attrs = converted.attr_dict()
    arg_names = set(converted.list_arguments())
    new_inputs = [_sym.var(n) for n in data_names]
    result = SymbolBlock(converted, new_inputs)
    by_name = {p.name: p for p in params.values()}
    for name, param in result.collect_params().items():
        src = by_name[name].data().as_in_context(ctx)
        want = _dtype_of(attrs.get(name, {}), src.dtype)
        param.cast(want)
        param._load_init(src.astype(want), ctx)
        if name not in arg_names:
            param.grad_req = "null"
    return result


def convert_bucketing_module(bucketing_mod, target_dtype="float16", target_dtype_ops=None,
                             fp32_ops=None, conditional_fp32_ops=None,
                             excluded_sym_names=None, cast_optional_params=False):
    """A new (unbound) BucketingModule whose buckets run ``convert_symbol``'s version of
    ``bucketing_mod``'s symbols, holding its parameters cast accordingly. The source
    module must be bound with initialized parameters."""
    from ...module import BucketingModule
    _check_target(target_dtype)
    if not (bucketing_mod.binded and bucketing_mod.params_initialized):
        raise MXNetError("convert_bucketing_module: the module must be bound and its "
                         "parameters initialized")
    arg_params, aux_params = bucketing_mod.get_params()
    options = dict(target_dtype=target_dtype, target_dtype_ops=target_dtype_ops,
                   fp32_ops=fp32_ops, conditional_fp32_ops=conditional_fp32_ops,
                   excluded_sym_names=excluded_sym_names,
                   cast_optional_params=cast_optional_params)
    original_gen = bucketing_mod._sym_gen

    def sym_gen(key):
        sym, data_names, label_names = original_gen(key)
        return convert_model(sym, arg_params, aux_params, **options)[0], data_names, label_names

    sym_dict = {key: sym_gen(key)[0] for key in bucketing_mod._buckets}
    default = sym_dict[bucketing_mod._default_bucket_key]
    return BucketingModule.load_dict(
        sym_dict, sym_gen=sym_gen, default_bucket_key=bucketing_mod._default_bucket_key,
        arg_params=_cast_params(default, arg_params),
        aux_params=_cast_params(default, aux_params),
        logger=bucketing_mod.logger, context=bucketing_mod._context,
        work_load_list=bucketing_mod._work_load_list,
        fixed_param_names=bucketing_mod._fixed_param_names,
        state_names=bucketing_mod._state_names)
