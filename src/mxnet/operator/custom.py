"""Operators written in Python (seed 001): ``CustomOp``/``CustomOpProp`` registered
with ``@mx.operator.register(name)`` and called as ``mx.nd.Custom``/``mx.sym.Custom``
with ``op_type=name``, and the legacy ``NumpyOp``/``NDArrayOp`` (instances called to
make a symbol).

Each Python operator becomes an ordinary registered operator, so imperative calls,
autograd, executors, Module and Gluon need nothing special:

- ``Custom`` takes ``op_type`` plus any other keyword; those extra values are passed
  as strings to the prop's constructor, as MXNet does, and are what symbol JSON stores.
  Each parsed call (each symbol node, each imperative call) gets its own prop
  instance, and its own operator instances from ``create_operator`` (one per context
  and input shapes), so state kept between a forward and its backward stays put.
- ``_Native`` (NumpyOp) and ``_NDArray`` (NDArrayOp) take ``info``, the key of the
  Python operator instance in this process, as MXNet's do.

Python callbacks run with autograd paused. A failure inside one becomes an
MXNetError carrying the Python traceback text; it is raised at the next
synchronisation point (at once when the call ran inline), and the engine keeps
working.

Sparse storage: a prop's ``infer_storage_type``/``infer_storage_type_backward`` say
in which storage type (``'default'``, ``'row_sparse'``, ``'csr'``) the callbacks see
each array. An imperative call with sparse inputs runs through the sparse kernel table
(``sparse_forward``, registered by ``kernels_sparse``) on the arrays themselves and
returns sparse results. Executors and autograd's backward compute densely: there the
input storage types (found at bind time through ``infer_storage``, or recorded by the
imperative call) are kept per call/node, and the dense values are cast to the prop's
storage types around each callback (results are cast back to dense). An auxiliary
state cast that way is a copy: writes to a sparse auxiliary state reach the caller's
array in an imperative forward only.
"""
import contextlib
import traceback
import warnings

import numpy as np

from .. import engine, tape
from ..base import DTYPE_TO_FLAG, FLAG_TO_DTYPE, MXNetError
from . import frontend
from . import sparse_values as sv
from .call import FRONT_END_KEYWORDS, HIDDEN_KEYS, bind_call, is_dunder
from .params import Bool, Params, Schema, Str, format_value
from .registry import Op, get_op, list_ops, register as register_op
from ..profiler.core import custom_operator
from ..backend import array_module, to_numpy

__all__ = ["CustomOp", "CustomOpProp", "register", "get_all_registered_operators",
           "PythonOp", "NumpyOp", "NDArrayOp"]

_PROPS = {}           # op_type -> CustomOpProp subclass
_PYTHON_OPS = {}      # info key -> PythonOp instance (kept alive, as MXNet does)


# --------------------------------------------------------------------------- user API
class CustomOp:
    """Base class of an operator written in Python. Override ``forward`` and
    ``backward``; write results with ``self.assign(dst, req, src)`` so the write
    request ('write', 'inplace', 'add' or 'null') is honoured."""

    def __init__(self):
        pass

    def forward(self, is_train, req, in_data, out_data, aux):
        """Compute ``out_data`` (NDArrays) from ``in_data``; ``aux`` may be updated in
        place. ``req`` holds one write request per output."""

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        """Compute ``in_grad`` from ``out_grad``/``in_data``/``out_data``; ``req``
        holds one write request per input gradient."""

    def assign(self, dst, req, src):
        """Write ``src`` into ``dst`` as ``req`` says."""
        if req == "null":
            return
        src = _as_ndarray_on(src, dst)
        if req in ("write", "inplace"):
            dst[:] = src
        elif req == "add":
            dst[:] = dst + src
        else:
            raise MXNetError(f"CustomOp.assign: unknown req {req!r}")


class CustomOpProp:
    """Describes a CustomOp: its argument/output/auxiliary names, shape and type
    inference, backward dependencies, and how to create the operator.

    need_top_grad: whether backward reads the output gradient. False marks a loss
    (like SoftmaxOutput): no head gradient is needed when it ends a network.
    """

    def __init__(self, need_top_grad=True):
        self.need_top_grad_ = need_top_grad

    def infer_shape(self, in_shape):
        """(argument shapes, output shapes, auxiliary shapes) from the argument shapes.
        Default: every output has the first argument's shape."""
        return in_shape, (in_shape[0],) * len(self.list_outputs()), ()

    def infer_type(self, in_type):
        """(argument types, output types, auxiliary types); default: the first
        argument's type everywhere."""
        return (in_type, [in_type[0]] * len(self.list_outputs()),
                [in_type[0]] * len(self.list_auxiliary_states()))

    def infer_storage_type(self, in_stype):
        """(argument, output, auxiliary) storage types from the arguments' ones.
        Default: dense everywhere; a sparse argument is an error (override this and
        ``infer_storage_type_backward`` for sparse operators)."""
        _require_dense(in_stype, "in_stype", "infer_storage_type")
        return (list(in_stype), ["default"] * len(self.list_outputs()),
                ["default"] * len(self.list_auxiliary_states()))

    def infer_storage_type_backward(self, ograd_stype, in_stype, out_stype, igrad_stype,
                                    aux_stype):
        """Storage types the backward callback sees: (output gradients, inputs,
        outputs, input gradients, auxiliary states). Default: dense everywhere; a
        sparse output or input gradient is an error."""
        _require_dense(ograd_stype, "ograd_stype", "infer_storage_type_backward")
        _require_dense(igrad_stype, "igrad_stype", "infer_storage_type_backward")
        return (["default"] * len(ograd_stype), ["default"] * len(in_stype),
                ["default"] * len(out_stype), ["default"] * len(igrad_stype),
                ["default"] * len(aux_stype))

    def list_outputs(self):
        return ["output"]

    def list_arguments(self):
        return ["data"]

    def list_auxiliary_states(self):
        return []

    def declare_backward_dependency(self, out_grad, in_data, out_data):
        """The ids (from the three lists) of what backward reads. Default: the output
        gradients when need_top_grad, then all inputs and outputs."""
        deps = list(out_grad) if self.need_top_grad_ else []
        return deps + list(in_data) + list(out_data)

    def create_operator(self, ctx, in_shapes, in_dtypes):
        """Return the CustomOp that computes this operator on ctx (in_shapes: lists;
        in_dtypes: MXNet type flags)."""
        raise NotImplementedError("CustomOpProp.create_operator must be overridden")


def register(reg_name):
    """Class decorator: ``@mx.operator.register("name")`` makes a CustomOpProp subclass
    callable as ``mx.nd.Custom(..., op_type="name")``/``mx.sym.Custom(...)``."""
    def do_register(prop_cls):
        if not (isinstance(prop_cls, type) and issubclass(prop_cls, CustomOpProp)):
            raise MXNetError(f"mx.operator.register({reg_name!r}): expected a CustomOpProp "
                             f"subclass, got {prop_cls!r}")
        _PROPS[reg_name] = prop_cls
        return prop_cls
    return do_register


def get_all_registered_operators():
    """Names of every registered operator."""
    return list_ops()


def _require_dense(stypes, what, method):
    for i, st in enumerate(stypes):
        if st not in ("default", "undefined"):
            raise MXNetError(f"CustomOpProp.{method}: the default implementation allows "
                             f"dense storage only, found {st!r} for {what}[{i}]; implement "
                             "infer_storage_type and infer_storage_type_backward for an "
                             "operator with sparse inputs or gradients")


# ------------------------------------------------------------------ NDArray plumbing
def _wrap(data, ctx):
    return frontend.need("wrap_array")(data, ctx)


def _placeholder(shape, dtype, ctx, what):
    """An NDArray standing for a value backward did not declare: reading it fails."""
    return frontend.need("failed_array")(
        tuple(shape) if shape is not None else (), np.dtype(dtype), ctx,
        MXNetError(f"{what} is not available in backward: it was not declared in "
                   "declare_backward_dependency (or need_top_grad is False)"))


def _as_ndarray_on(src, dst):
    if frontend.need("is_array")(src) and src.context != dst.context:
        return src.as_in_context(dst.context)
    return src


def _settle(wrapper, original, xp=np):
    """After a callback: the wrapper's data as a dense device array, copied back into
    original when the callback replaced the wrapper's buffer (whole-array writes swap
    buffers) or the wrapper is a sparse view of original."""
    if getattr(wrapper, "_sparse", False):
        data = xp.asarray(sv.todense(wrapper._read_value()))
    else:
        data = wrapper._read()
    if original is not None and data is not original:
        original[...] = data.reshape(original.shape)
    return data


_STYPES = ("default", "row_sparse", "csr")


def _present(value, stype, ctx):
    """An NDArray of storage type ``stype`` over ``value`` (a dense device array or a
    sparse value): the value itself when it already has that storage, else a cast."""
    have = sv.stype_of(value)
    if have == stype and have == "default":
        return _wrap(value, ctx)
    if have == "default":
        value = to_numpy(value)
    return frontend.need("wrap_value")(sv.convert(value, stype), ctx)


def _blank(stype, shape, dtype, ctx, xp):
    """A zero NDArray of the storage type, for a callback to write into."""
    if stype == "default":
        return _wrap(xp.zeros(shape, dtype), ctx)
    return frontend.need("wrap_value")(sv.empty_value(stype, shape, dtype), ctx)


def _check_stypes(got, names, label, what):
    got = list(got)
    if len(got) != len(names):
        raise MXNetError(f"{label} returned {len(got)} storage types for {len(names)} "
                         f"{what} ({', '.join(names)})")
    for st in got:
        if st not in _STYPES:
            raise MXNetError(f"{label} returned an unknown storage type {st!r} for the "
                             f"{what} (expected one of {', '.join(_STYPES)})")
    return tuple(got)


def _shape_or_none(s, label):
    if s is None:
        return None
    try:
        dims = list(s) if not isinstance(s, (int, np.integer)) else [s]
    except TypeError:
        raise MXNetError(f"{label}: expected a shape, got {s!r}") from None
    if not dims:
        return None
    out = []
    for d in dims:
        f = float(d)
        if not f.is_integer() or f < 0:
            raise MXNetError(f"{label}: invalid dimension {d!r} in shape {s!r}")
        out.append(int(f))
    return tuple(out)


def _dtype_or_none(t):
    if t is None or (isinstance(t, (int, np.integer)) and int(t) == -1):
        return None
    if isinstance(t, (int, np.integer)) and not isinstance(t, bool):
        return FLAG_TO_DTYPE[int(t)]
    return np.dtype(t)


def _split_result(res, n, label):
    """(in, out[, aux]) as returned by infer_shape/infer_type: aux may be left out."""
    try:
        parts = list(res)
    except TypeError:
        parts = []
    if len(parts) == 2:
        parts.append([None] * n)
    if len(parts) != 3:
        raise MXNetError(f"{label} must return (in, out) or (in, out, aux) lists, got "
                         f"{res!r}")
    return parts


@contextlib.contextmanager
def _callback(is_train, label=None):
    """Around a user callback: autograd paused (MXNet runs them outside the tape), and
    the engine told that this worker may wait on work the callback pushes; label
    names it for the profiler (``<label>::pure_python``)."""
    with engine.get().blocking_section(), tape.pause(train_mode=is_train), \
            custom_operator(label or "Custom"):
        yield


def _grad_reqs(req, need):
    """The req per input gradient a CustomOp's backward sees: the caller's ('add' for a
    grad_req='add' argument), 'null' where no gradient is wanted. The op writes into
    fresh zeroed arrays, and the runner applies the caller's req to what it wrote."""
    if req is None:
        return ["write" if n else "null" for n in need]
    return [("write" if r == "inplace" else r) if n else "null" for r, n in zip(req, need)]


def _failure(label):
    return MXNetError(f"Error in {label}: {traceback.format_exc()}")


# ----------------------------------------------------------------- operator specs
class _Spec:
    """One configured Python operator: names, inference and compute, in the terms the
    registry's operators use. Subclasses adapt CustomOpProp and the legacy ops."""

    label = "CustomOp"

    def __init__(self, args, outs, auxs, need_top_grad):
        self.args, self.outs, self.auxs = list(args), list(outs), list(auxs)
        self.need_top_grad = bool(need_top_grad)
        n_o, n_i = len(self.outs), len(self.args)
        ids = (list(range(n_o)), list(range(n_o, n_o + n_i)),
               list(range(n_o + n_i, 2 * n_o + n_i)))
        try:
            deps = set(self._declare(*ids))
        except Exception:
            raise _failure(f"{self.label}.declare_backward_dependency") from None
        unknown = deps - set(range(2 * n_o + n_i))
        if unknown:
            raise MXNetError(f"{self.label}.declare_backward_dependency returned unknown ids "
                             f"{sorted(unknown)}")
        # per category (out_grad, in_data, out_data): the positions backward reads
        self.kept = tuple({j for j, i in enumerate(group) if i in deps} for group in ids)
        self.uses = tuple(name for name, kept in zip(("out_grad", "in_data", "out_data"),
                                                     self.kept) if kept)
        self._meta = {}        # argument shapes -> (out shapes, aux shapes)
        self.shared_states = {}     # for parameters that carry no states of their own

    # hooks for subclasses
    def _declare(self, out_grad, in_data, out_data):
        deps = list(out_grad) if self.need_top_grad else []
        return deps + list(in_data) + list(out_data)

    def _user_infer_shape(self, shapes):
        raise NotImplementedError

    # inference
    def infer_shape(self, in_shapes):
        known = all(s is not None for s in in_shapes)
        try:
            res = self._user_infer_shape([list(s) if s is not None else [] for s in in_shapes])
            a, o, x = _split_result(res, len(self.auxs), f"{self.label}.infer_shape")
        except MXNetError:
            if not known:
                return in_shapes, [None] * len(self.outs), [None] * len(self.auxs)
            raise
        except Exception:
            if not known:          # the rule needs shapes not yet inferred: try later
                return in_shapes, [None] * len(self.outs), [None] * len(self.auxs)
            raise _failure(f"{self.label}.infer_shape") from None
        label = f"{self.label}.infer_shape"
        a, o, x = list(a), list(o), list(x)
        for got, names, what in ((a, self.args, "arguments"), (o, self.outs, "outputs"),
                                 (x, self.auxs, "auxiliary states")):
            if len(got) != len(names):
                raise MXNetError(f"{label} returned {len(got)} shapes for {len(names)} "
                                 f"{what} ({', '.join(names)})")
        return ([_shape_or_none(s, label) for s in a], [_shape_or_none(s, label) for s in o],
                [_shape_or_none(s, label) for s in x])

    def infer_type(self, in_types):
        known = next((t for t in in_types if t is not None), None)
        return ([known if t is None else t for t in in_types], [known] * len(self.outs),
                [known] * len(self.auxs))

    def output_shapes(self, in_shapes):
        key = tuple(tuple(s) for s in in_shapes)
        meta = self._meta.get(key)
        if meta is None:
            _, o, x = self.infer_shape([tuple(s) for s in in_shapes])
            if any(s is None for s in o):
                raise MXNetError(f"{self.label}.infer_shape: cannot infer output shapes "
                                 f"from input shapes {list(key)}")
            meta = self._meta[key] = (o, x)
        return meta[0]

    # placeholders for what backward did not declare
    def _backward_views(self, octx, ograds, inputs, outputs, aux, in_types, stypes=None):
        """NDArrays for backward's out_grad, in_data and out_data (stypes: a storage
        type per array of each, default dense), placeholders for what it did not
        declare."""
        ctx = octx.ctx
        og_st, in_st, out_st = stypes or ((None,) * len(ograds), (None,) * len(inputs),
                                          (None,) * len(outputs))

        def view(v, st):
            return _wrap(v, ctx) if st is None else _present(v, st, ctx)
        in_shapes = [tuple(s) for s in (octx.in_shapes or [a.shape for a in inputs])]
        out_shapes = self.output_shapes(in_shapes)
        t0 = in_types[0] if in_types else np.float32
        og = [(view(g, og_st[i]) if (i in self.kept[0] and g is not None) else
               _placeholder(out_shapes[i], t0 if g is None else g.dtype, ctx,
                            f"out_grad[{i}]")) for i, g in enumerate(ograds)]
        ind = [(view(v, in_st[i]) if (i in self.kept[1] and v is not None) else
                _placeholder(in_shapes[i], in_types[i], ctx, f"in_data[{i}]"))
               for i, v in enumerate(inputs)]
        outd = [(view(v, out_st[i]) if (i in self.kept[2] and v is not None) else
                 _placeholder(out_shapes[i], t0, ctx, f"out_data[{i}]"))
                for i, v in enumerate(outputs)]
        return og, ind, outd, in_shapes


class _PropSpec(_Spec):
    """A CustomOpProp instance for one op_type and keyword set, shared by the calls
    and symbol nodes that use them. Operator instances are not shared: each call or
    node keeps its own in a ``states`` dict."""

    def __init__(self, op_type, prop_cls, kwargs):
        self.label = op_type
        try:
            prop = prop_cls(**kwargs)
            args, outs = prop.list_arguments(), prop.list_outputs()
            auxs = prop.list_auxiliary_states()
        except Exception:
            raise _failure(f"creating custom operator {op_type}") from None
        self.prop = prop
        need = getattr(prop, "need_top_grad_", True)
        super().__init__(args, outs, auxs, need)
        self._type_meta = {}        # argument dtypes -> inferred output dtypes
        self._stype_meta = {}       # argument/aux storage types -> the prop's answer

    # storage types
    def storage(self, in_st, aux_st):
        """(argument, output, auxiliary) storage types the forward callback sees, for
        arguments and auxiliary states of storage types in_st/aux_st."""
        key = (tuple(in_st), tuple(aux_st))
        got = self._stype_meta.get(key)
        if got is None:
            label = f"{self.label}.infer_storage_type"
            try:
                res = self.prop.infer_storage_type(list(in_st))
                a, o, x = _split_result(res, len(self.auxs), label)
            except MXNetError:
                raise
            except Exception:
                raise _failure(label) from None
            x = [aux_st[i] if t is None and i < len(aux_st) else t for i, t in enumerate(x)]
            got = self._stype_meta[key] = (
                _check_stypes(a, self.args, label, "arguments"),
                _check_stypes(o, self.outs, label, "outputs"),
                _check_stypes(x, self.auxs, label, "auxiliary states"))
        return got

    def storage_backward(self, in_st, out_st, aux_st):
        """(output gradient, input, output, input gradient, auxiliary) storage types
        the backward callback sees; the output gradients arrive dense."""
        key = ("backward", tuple(in_st), tuple(out_st), tuple(aux_st))
        got = self._stype_meta.get(key)
        if got is None:
            label = f"{self.label}.infer_storage_type_backward"
            try:
                res = list(self.prop.infer_storage_type_backward(
                    ["default"] * len(self.outs), list(in_st), list(out_st),
                    ["default"] * len(self.args), list(aux_st)))
            except MXNetError:
                raise
            except Exception:
                raise _failure(label) from None
            if len(res) != 5:
                raise MXNetError(f"{label} must return 5 lists (output gradients, inputs, "
                                 f"outputs, input gradients, auxiliary states), got {res!r}")
            got = self._stype_meta[key] = (
                _check_stypes(res[0], self.outs, label, "output gradients"),
                _check_stypes(res[1], self.args, label, "inputs"),
                _check_stypes(res[2], self.outs, label, "outputs"),
                _check_stypes(res[3], self.args, label, "input gradients"),
                _check_stypes(res[4], self.auxs, label, "auxiliary states"))
        return got

    def remember_stypes(self, states, ctx, all_shapes, in_st, aux_st):
        """Record the storage types of a call's/node's inputs, for its dense runs."""
        states[("stypes", ctx, tuple(all_shapes))] = (tuple(in_st), tuple(aux_st))

    def _input_stypes(self, states, ctx, all_shapes):
        got = states.get(("stypes", ctx, all_shapes))
        if got is None:
            return ("default",) * len(self.args), ("default",) * len(self.auxs)
        return got

    def _declare(self, out_grad, in_data, out_data):
        return self.prop.declare_backward_dependency(out_grad, in_data, out_data)

    def _user_infer_shape(self, shapes):
        return self.prop.infer_shape(shapes)

    def infer_type(self, in_types):
        label = f"{self.label}.infer_type"
        try:
            res = self.prop.infer_type([None if t is None else np.dtype(t).type
                                        for t in in_types])
            a, o, x = _split_result(res, len(self.auxs), label)
            a, o, x = ([_dtype_or_none(t) for t in a], [_dtype_or_none(t) for t in o],
                       [_dtype_or_none(t) for t in x])
        except MXNetError:
            raise
        except Exception:
            if any(t is None for t in in_types):
                return in_types, [None] * len(self.outs), [None] * len(self.auxs)
            raise _failure(label) from None
        if len(a) != len(self.args) or len(o) != len(self.outs) or len(x) != len(self.auxs):
            raise MXNetError(f"{label} returned the wrong number of types: {res!r}")
        return a, o, x

    def _operator(self, states, ctx, shapes, dtypes):
        key = (ctx, shapes)
        op = states.get(key)
        if op is None:
            try:
                op = self.prop.create_operator(
                    ctx, [list(s) for s in shapes],
                    [DTYPE_TO_FLAG.get(np.dtype(t), 0) for t in dtypes])
            except Exception:
                raise _failure(f"{self.label}.create_operator") from None
            if not isinstance(op, CustomOp):
                raise MXNetError(f"{self.label}.create_operator must return a CustomOp, got "
                                 f"{type(op).__name__}")
            states[key] = op
        return op

    def _output_types(self, types):
        key = tuple(types)
        out = self._type_meta.get(key)
        if out is None:
            out = self._type_meta[key] = self.infer_type(list(types))[1]
        return out

    def forward(self, octx, inputs, aux, states):
        """The dense run (runner, executor): inputs/aux are dense device arrays, cast
        to the prop's storage types for the callback; dense results."""
        ctx, xp = octx.ctx, octx.xp
        all_shapes = tuple(tuple(a.shape) for a in list(inputs) + list(aux))
        st_in, st_out, st_aux = self.storage(*self._input_stypes(states, ctx, all_shapes))
        in_nd = [_present(a, st, ctx) for a, st in zip(inputs, st_in)]
        aux_nd = [_present(a, st, ctx) for a, st in zip(aux, st_aux)]

        def collect(out_nd):
            results = [_settle(o, None, xp) for o in out_nd]
            for w, a in zip(aux_nd, aux):
                _settle(w, a, xp)
            return results
        return self.run_forward(octx, in_nd, aux_nd, st_out, states, all_shapes, collect)

    def run_forward(self, octx, in_nd, aux_nd, st_out, states, all_shapes, collect):
        """Call the operator's forward on NDArrays in_nd/aux_nd with fresh outputs of
        storage types st_out; ``collect(outputs)`` gives the result (it runs while the
        callback may still be waited on)."""
        ctx, xp = octx.ctx, octx.xp
        types = [np.dtype(a.dtype) for a in in_nd]
        states[("types", ctx, all_shapes)] = types
        out_shapes = self.output_shapes(all_shapes[:len(in_nd)])
        out_types = self._output_types(types)
        op = self._operator(states, ctx, all_shapes, types + [a.dtype for a in aux_nd])
        out_nd = [_blank(st, s, t if t is not None else np.float32, ctx, xp)
                  for st, s, t in zip(st_out, out_shapes, out_types)]
        with _callback(octx.is_train, self.label):
            try:
                op.forward(is_train=bool(octx.is_train), req=["write"] * len(out_nd),
                           in_data=in_nd, out_data=out_nd, aux=aux_nd)
            except Exception:
                raise _failure("CustomOp.forward") from None
            return collect(out_nd)

    def backward(self, octx, ograds, inputs, outputs, aux, states):
        ctx, xp = octx.ctx, octx.xp
        in_shapes = tuple(tuple(s) for s in octx.in_shapes)
        all_shapes = in_shapes + tuple(tuple(a.shape) for a in aux)
        types = states.get(("types", ctx, all_shapes))
        if types is None:
            types = [v.dtype if v is not None else np.dtype(np.float32) for v in inputs]
        fwd_in, fwd_out, fwd_aux = self.storage(*self._input_stypes(states, ctx, all_shapes))
        st_og, st_in, st_out, st_ig, st_aux = self.storage_backward(fwd_in, fwd_out, fwd_aux)
        op = self._operator(states, ctx, all_shapes, list(types) + [a.dtype for a in aux])
        og, ind, outd, _ = self._backward_views(octx, ograds, inputs, outputs, aux, types,
                                                (st_og, st_in, st_out))
        need = octx.need_grad or [True] * len(self.args)
        in_grad = [_blank(st, s, t, ctx, xp) for st, s, t in zip(st_ig, in_shapes, types)]
        aux_nd = [_present(a, st, ctx) for a, st in zip(aux, st_aux)]
        with _callback(octx.is_train, "_backward_" + self.label):
            try:
                op.backward(req=_grad_reqs(octx.req, need), out_grad=og,
                            in_data=ind, out_data=outd, in_grad=in_grad, aux=aux_nd)
            except Exception:
                raise _failure("CustomOp.backward") from None
            grads = [_settle(g, None, xp) if n else None for g, n in zip(in_grad, need)]
            for w, a in zip(aux_nd, aux):
                _settle(w, a, xp)
        return grads


def sparse_forward(p, vals, call):
    """The sparse kernel of Custom (``kernels_sparse``): an imperative call with a
    sparse input runs the callback on the arrays themselves (cast only where the prop
    asks for another storage type), so auxiliary states are updated in place and
    sparse outputs stay sparse. Storage inference probes (no arrays) get
    NotImplemented: user code runs on real calls only."""
    if call.inputs is None:
        return NotImplemented
    spec = get_op("Custom").spec(p)
    states = _states(p, spec)
    arrays, n = list(call.inputs), len(spec.args)
    in_st = tuple(a.stype for a in arrays[:n])
    aux_st = tuple(a.stype for a in arrays[n:])
    all_shapes = tuple(tuple(a.shape) for a in arrays)
    spec.remember_stypes(states, call.ctx, all_shapes, in_st, aux_st)   # for backward
    st_in, st_out, st_aux = spec.storage(in_st, aux_st)
    given = [a if a.stype == st else _present(v, st, call.ctx)
             for a, v, st in zip(arrays, vals, st_in + st_aux)]
    octx = _call_context(call)
    value_of = frontend.need("value_of")
    return spec.run_forward(octx, given[:n], given[n:], st_out, states, all_shapes,
                            lambda outs: [value_of(o) for o in outs])


def _call_context(call):
    """An OpContext for a sparse kernel's call."""
    from . import runner
    return runner.op_context(array_module(call.ctx), call.ctx, call.is_train)


# --------------------------------------------------------------- the Custom operator
def _is_extra_param(key):
    """Whether a keyword given to Custom is a parameter for the prop (not an
    attribute such as __lr_mult__/ctx_group, nor a front-end keyword)."""
    return (isinstance(key, str) and not is_dunder(key) and key not in HIDDEN_KEYS
            and key not in FRONT_END_KEYWORDS)


class _OpenFields(dict):
    """Custom's field table: ``op_type`` plus any other plain keyword, so the front
    ends and the JSON loader accept the prop's own parameters."""

    _extra = Str()

    def __contains__(self, key):
        return dict.__contains__(self, key) or _is_extra_param(key)

    def get(self, key, default=None):
        if dict.__contains__(self, key):
            return dict.__getitem__(self, key)
        return self._extra if _is_extra_param(key) else default


class _CustomParams(Params):
    __slots__ = ("spec", "states")

    def __init__(self, *args, **kwargs):
        # attribute reads stay behind dict methods: a prop's keywords may be any name
        dict.__init__(self, *args, **kwargs)


class _CustomSchema(Schema):
    """op_type (required) plus arbitrary keywords, converted to strings."""

    def __init__(self):
        super().__init__(op_type=Str(doc="Name of the custom operator (its registered name)"))
        self.fields = _OpenFields(self.fields)

    def parse(self, opname, kwargs):
        op_type = kwargs.get("op_type")
        if op_type is None or op_type == "":
            raise MXNetError(f"Required parameter 'op_type' of operator {opname} is missing")
        if not isinstance(op_type, str):
            raise MXNetError(f"Invalid value {op_type!r} for parameter 'op_type' of operator "
                             f"{opname}: expected str")
        extra = {k: format_value(v) for k, v in kwargs.items() if k != "op_type"}
        p = _CustomParams(op_type=op_type, **extra)
        p.given = dict(kwargs)
        p.spec = _prop_spec(op_type, extra)
        p.states = {}
        return p


_SPEC_CACHE = {}      # (op_type, prop class, keywords) -> _PropSpec


def _prop_spec(op_type, extra):
    prop_cls = _PROPS.get(op_type)
    if prop_cls is None:
        raise MXNetError(f"Cannot find custom operator {op_type}")
    key = (op_type, prop_cls, tuple(sorted(extra.items())))
    spec = _SPEC_CACHE.get(key)
    if spec is None:
        if len(_SPEC_CACHE) >= 4096:
            _SPEC_CACHE.clear()
        spec = _SPEC_CACHE[key] = _PropSpec(op_type, prop_cls, extra)
    return spec


class _PythonOpBase(Op):
    """Shared by Custom, _Native and _NDArray: everything comes from the spec."""

    # The superset; executors and autograd ask backward_uses_for(p) per call.
    backward_uses = ("out_grad", "in_data", "out_data")

    def spec(self, p):
        raise NotImplementedError

    def backward_uses_for(self, p):
        return self.spec(p).uses

    def arguments(self, p):
        return list(self.spec(p).args)

    def outputs(self, p):
        return list(self.spec(p).outs)

    def aux_states(self, p):
        return list(self.spec(p).auxs)

    def infer_shape(self, p, in_shapes):
        return self.spec(p).infer_shape(in_shapes)

    def infer_type(self, p, in_types):
        return self.spec(p).infer_type(in_types)

    def forward(self, ctx, p, inputs, aux):
        spec = self.spec(p)
        return spec.forward(ctx, inputs, aux, _states(p, spec))

    def backward(self, ctx, p, out_grads, inputs, outputs, aux):
        spec = self.spec(p)
        return spec.backward(ctx, out_grads, inputs, outputs, aux, _states(p, spec))


def _states(p, spec):
    """Where this call's / node's operator instances live."""
    states = getattr(p, "states", None)
    return spec.shared_states if states is None else states


@register_op
class _CustomOperator(_PythonOpBase):
    """Apply a custom operator registered with ``mx.operator.register``.

    ``op_type`` names it; every other keyword is passed (as a string) to its
    CustomOpProp's constructor. Inputs are the prop's arguments then auxiliary states.
    """

    name = "Custom"
    params = _CustomSchema()

    def spec(self, p):
        spec = getattr(p, "spec", None)
        if spec is not None:
            return spec
        op_type = p.get("op_type")
        if op_type is None:
            raise MXNetError("Required parameter 'op_type' of operator Custom is missing")
        return _prop_spec(op_type, {k: format_value(v) for k, v in p.items()
                                    if k != "op_type"})

    def infer_storage(self, p, in_stypes, in_shapes, ctx):
        """Output storage types of a graph node whose inputs (arguments, then
        auxiliary states) have storage types in_stypes (executor bind, see
        ``executor.stype``); the node's dense runs cast to the prop's types."""
        spec = self.spec(p)
        n = len(spec.args)
        spec.remember_stypes(_states(p, spec), ctx, [tuple(s) for s in in_shapes],
                             in_stypes[:n], in_stypes[n:])
        return list(spec.storage(in_stypes[:n], in_stypes[n:])[1])


# ------------------------------------------------------------------ legacy PythonOp
class _LegacySpec(_Spec):
    """A NumpyOp/NDArrayOp instance seen as an operator."""

    def __init__(self, pyop, need_top_grad):
        self.pyop = pyop
        self.label = type(pyop).__name__
        self.numpy = isinstance(pyop, NumpyOp)
        try:
            args, outs = pyop.list_arguments(), pyop.list_outputs()
        except Exception:
            raise _failure(f"{self.label}.list_arguments") from None
        super().__init__(args, outs, [], need_top_grad)

    def _declare(self, out_grad, in_data, out_data):
        declare = getattr(self.pyop, "declare_backward_dependency", None)
        if declare is None:
            return super()._declare(out_grad, in_data, out_data)
        return declare(out_grad, in_data, out_data)

    def _user_infer_shape(self, shapes):
        return self.pyop.infer_shape(shapes)

    def _to_user(self, arrays, ctx):
        if self.numpy:
            return [to_numpy(a) for a in arrays]
        return [_wrap(a, ctx) for a in arrays]

    def _from_user(self, values, xp):
        if self.numpy:
            return [xp.asarray(v) for v in values]
        return [_settle(v, None) for v in values]

    def _buffers(self, shapes, dtype, xp, ctx):
        if self.numpy:
            return [np.zeros(s, dtype) for s in shapes]
        return [_wrap(xp.zeros(s, dtype), ctx) for s in shapes]

    def forward(self, octx, inputs, aux, states=None):
        ctx, xp = octx.ctx, octx.xp
        in_shapes = [tuple(a.shape) for a in inputs]
        out_shapes = self.output_shapes(in_shapes)
        dtype = inputs[0].dtype if inputs else np.float32
        in_data = self._to_user(inputs, ctx)
        out_data = self._buffers(out_shapes, dtype, xp, ctx)
        with _callback(octx.is_train):
            try:
                self.pyop.forward(in_data=in_data, out_data=out_data)
            except Exception:
                raise _failure(f"{self.label}.forward") from None
            return self._from_user(out_data, xp)

    def backward(self, octx, ograds, inputs, outputs, aux, states=None):
        ctx, xp = octx.ctx, octx.xp
        dtype = next((a.dtype for a in list(ograds) + list(inputs) + list(outputs)
                      if a is not None), np.dtype(np.float32))
        types = [dtype] * len(self.args)
        if self.numpy:
            in_shapes = [tuple(s) for s in octx.in_shapes]
            og = [to_numpy(g) for g in ograds] if self.need_top_grad else []
            ind = [to_numpy(v) for v in inputs]
            outd = [to_numpy(v) for v in outputs]
        else:
            og, ind, outd, in_shapes = self._backward_views(octx, ograds, inputs, outputs,
                                                            aux, types)
            if not self.need_top_grad:
                og = []
        in_grad = self._buffers(in_shapes, dtype, xp, ctx)
        need = octx.need_grad or [True] * len(self.args)
        with _callback(octx.is_train):
            try:
                self.pyop.backward(out_grad=og, in_data=ind, out_data=outd, in_grad=in_grad)
            except Exception:
                raise _failure(f"{self.label}.backward") from None
            grads = self._from_user(in_grad, xp)
        return [g if n else None for g, n in zip(grads, need)]


class _LegacyOperatorBase(_PythonOpBase):
    def spec(self, p):
        key = p.get("info")
        pyop = _PYTHON_OPS.get(key)
        if pyop is None:
            raise MXNetError(f"Operator {self.name}: no Python operator with info {key!r} "
                             "in this process (NumpyOp/NDArrayOp symbols refer to live "
                             "Python objects and cannot be loaded elsewhere)")
        need = p.get("need_top_grad", pyop.need_top_grad())
        spec = pyop._specs.get(need)
        if spec is None:
            spec = pyop._specs[need] = _LegacySpec(pyop, need)
        return spec


@register_op
class _NativeOperator(_LegacyOperatorBase):
    """A NumpyOp (deprecated; use CustomOp): ``info`` names the Python instance."""
    name = "_Native"
    params = Schema(info=Str(), need_top_grad=Bool(default=True))


@register_op
class _NDArrayOperator(_LegacyOperatorBase):
    """An NDArrayOp (deprecated; use CustomOp): ``info`` names the Python instance."""
    name = "_NDArray"
    params = Schema(info=Str())


class PythonOp:
    """Base of the deprecated Python operators (use CustomOp). Subclass NumpyOp or
    NDArrayOp, override ``forward(in_data, out_data)``, ``backward(out_grad, in_data,
    out_data, in_grad)``, ``list_arguments``, ``list_outputs`` and ``infer_shape``;
    call an instance on symbols to use it: ``op(data=sym, name='x')``."""

    _backend = None       # registered operator name
    _hint = None

    def __init__(self, need_top_grad=True):
        self.info_ = None
        self.need_top_grad_ = need_top_grad
        self._specs = {}
        warnings.warn("PythonOp has been deprecated. Please use CustomOp")

    def __call__(self, *args, **kwargs):
        return self.get_symbol(*args, **kwargs)

    def get_symbol(self, *args, **kwargs):
        """A symbol applying this operator; inputs positionally or by argument name,
        plus ``name=``/``attr=``."""
        if self._backend is None:
            raise NotImplementedError("PythonOp is abstract: subclass NumpyOp or NDArrayOp")
        name, attr = kwargs.pop("name", None), kwargs.pop("attr", None)
        key = f"{id(self):x}"
        _PYTHON_OPS[key] = self
        self.info_ = key
        op = get_op(self._backend)
        kwargs["info"] = key
        if "need_top_grad" in op.params.fields:
            kwargs["need_top_grad"] = bool(self.need_top_grad())
        inputs, p = bind_call(op, args, kwargs, frontend.need("is_symbol"))
        return frontend.need("create_symbol")(op, inputs, p, name=name, attr=attr,
                                              hint=self._hint)

    def forward(self, in_data, out_data):
        """Compute out_data from in_data (write into the given arrays)."""
        out_data[0][:] = in_data[0]

    def backward(self, out_grad, in_data, out_data, in_grad):
        """Compute in_grad (write into the given arrays)."""
        in_grad[0][:] = 1.0

    def infer_shape(self, in_shape):
        """(argument shapes, output shapes[, aux shapes]) from argument shapes (lists)."""
        return in_shape, [in_shape[0]] * len(self.list_outputs())

    def list_outputs(self):
        return ["output"]

    def list_arguments(self):
        return ["data"]

    def need_top_grad(self):
        """Whether backward reads the output gradient (False for loss layers)."""
        return self.need_top_grad_


class NumpyOp(PythonOp):
    """Deprecated (use CustomOp): an operator whose forward/backward receive NumPy
    arrays and write their results into ``out_data``/``in_grad`` (``y[:] = ...``).
    On a GPU the arrays are host copies."""

    _backend, _hint = "_Native", "_native"

    def __init__(self, need_top_grad=True):
        super().__init__(need_top_grad)
        warnings.warn("NumpyOp has been deprecated. Please use CustomOp")


class NDArrayOp(PythonOp):
    """Deprecated (use CustomOp): an operator whose forward/backward receive NDArrays
    on the operator's context (so it can launch ``mx.rtc`` kernels on a GPU)."""

    _backend, _hint = "_NDArray", "_ndarray"

    def __init__(self, need_top_grad=True):
        super().__init__(need_top_grad)
        warnings.warn("NDArrayOp has been deprecated. Please use CustomOp")

    def declare_backward_dependency(self, out_grad, in_data, out_data):
        """The ids of what backward reads (default: out_grad if need_top_grad, then all
        inputs and outputs)."""
        deps = list(out_grad) if self.need_top_grad() else []
        return deps + list(in_data) + list(out_data)

