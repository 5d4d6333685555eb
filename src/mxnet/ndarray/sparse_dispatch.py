"""Imperative calls that involve sparse storage (MXNet's FComputeEx / storage fallback).

``ndarray.dispatch.invoke`` hands a call here when an input or ``out`` is sparse, or
the operator has a sparse kernel that may produce sparse results from dense inputs
(``cast_storage``, ``dot`` with ``forward_stype``). The path: the sparse kernel
registered for the operator (``operator.kernels_sparse``) runs on the inputs' values;
when there is none, or it declines the storage types at hand (returns NotImplemented),
the inputs are densified and the dense operator runs — MXNet's storage fallback, with
its warning — and a sparse ``out`` receives the result cast to its storage type.
Autograd records the call on the original arrays, so gradients reach sparse variables.
"""
import logging
import os

import numpy as np

from .. import tape as _tape
from ..backend import device_scope
from ..base import MXNetError
from ..operator import sparse_values as sv
from ..operator.kernels_sparse import (LAZY_UPDATES, lazy_applies, lookup_sparse,
                                       lookup_sparse_gpu)
from .ndarray import NDArray  # noqa: F401

__all__ = ["invoke_sparse", "sparse_invoke", "cast_storage_nd"]

_logger = logging.getLogger("mxnet.storage")
_warned = set()


def _values(arrays):
    from .sparse import _value_of
    return [_value_of(a) for a in arrays]


def _warn_fallback(op, inputs, p):
    if os.environ.get("MXNET_STORAGE_FALLBACK_LOG_VERBOSE", "1") == "0":
        return
    key = (op.name, tuple(a.stype for a in inputs))
    if key in _warned:
        return
    _warned.add(key)
    _logger.warning("Storage type fallback detected: operator = %s, input storage types = "
                    "%s, output storage types = [default]. Temporary dense ndarrays are "
                    "generated to run the operator; set MXNET_STORAGE_FALLBACK_LOG_VERBOSE "
                    "to 0 to suppress this warning.", op.name, list(key[1]))


def sparse_invoke(op, p, inputs, out, ctx):
    """Run ``op`` (parameters ``p``) on inputs of any storage; the result as
    ``dispatch.invoke`` gives it."""
    from .dispatch import invoke, _call_meta
    from .sparse import _wrap, _assign, BaseSparseNDArray
    n_args, nvis = _call_meta(op, p)
    if ctx is None:
        ctx = inputs[0]._ctx if inputs else None
        if ctx is None:
            from ..context import current_context
            ctx = current_context()
    outs = None if out is None else (list(out) if isinstance(out, (list, tuple)) else [out])
    kernel = lookup_sparse(op.name)
    results = NotImplemented
    gpu_kernel = lookup_sparse_gpu(op.name) if ctx.device_typeid == 2 else None
    if op.name in LAZY_UPDATES and not lazy_applies(op.name, p, [a.stype for a in inputs]):
        kernel = gpu_kernel = None      # the standard rule: the dense operator, below
    if gpu_kernel is not None:
        # dense operands as they are in device memory, sparse ones from the host
        with device_scope(ctx):
            results = gpu_kernel(p, [_values([a])[0] if isinstance(a, BaseSparseNDArray)
                                     else a._read() for a in inputs],
                                 _SparseCall(ctx, inputs, outs, _tape.is_training()))
    if results is NotImplemented and gpu_kernel is not None and op.name in LAZY_UPDATES:
        _update_on_host(op, p, inputs, outs, n_args)
        return out
    if kernel is not None and results is NotImplemented:
        results = kernel(p, _values(inputs),
                         _SparseCall(ctx, inputs, outs, _tape.is_training()))
    if results is NotImplemented:
        any_sparse = any(isinstance(a, BaseSparseNDArray) for a in inputs)
        sparse_out = outs is not None and any(isinstance(o, BaseSparseNDArray) for o in outs)
        if not any_sparse and not sparse_out:
            return invoke(op, inputs, None, out, ctx, p, _dense_only=True)
        if any_sparse:
            _warn_fallback(op, inputs, p)
        from .ndarray import from_data
        # (a sparse array's _data is its dense form in its context's memory already)
        dense = [from_data(a._data, a._ctx) if isinstance(a, BaseSparseNDArray) else a
                 for a in inputs]
        prev = _tape.set_recording(False)
        try:
            res = invoke(op, dense, None, None if sparse_out else out, ctx, p,
                         _dense_only=True)
        finally:
            _tape.set_recording(prev)
        n = len(inputs) if n_args is None else n_args
        for a, d in zip(inputs[n:], dense[n:]):
            if isinstance(a, BaseSparseNDArray):
                # an auxiliary state (an optimizer's momentum ...) that the operator
                # updated in its temporary dense form: stored back, as MXNet does
                a._set_dense(d.asnumpy())
        outputs = list(res) if isinstance(res, (list, tuple)) else [res]
        if sparse_out:
            for o, r in zip(outs, outputs):
                _assign(o, r)
            outputs = outs + outputs[len(outs):]
    else:
        from .sparse import _value_of
        if outs is not None:
            for o, v in zip(outs, results):
                if v is not _peek(o):        # else the kernel updated o in place
                    _assign(o, _wrap(v, ctx))
            outputs = outs + [_wrap(v, ctx) for v in results[len(outs):]]
        else:
            outputs = [_wrap(v, ctx) for v in results]
    if _tape.is_recording():
        n = len(inputs) if n_args is None else n_args
        _tape.record_call(op, p, inputs[:n], inputs[n:], outputs,
                          _tape._state.training, ctx)
    if out is not None:
        return out
    return outputs[0] if nvis == 1 else outputs[:nvis]


def _update_on_host(op, p, inputs, outs, n_args):
    """An update operator on a GPU whose sparse operands the device kernel declines
    (a row_sparse weight or states, or the standard rule asked for): the host rule runs
    on host copies, then the weight and the states it updated are written back into the
    GPU arrays."""
    from ..context import cpu
    from .sparse import _assign
    if outs is None:
        raise MXNetError(f"{op.name}: an update operator on sparse arrays needs out=")
    host = [a.copyto(cpu()) for a in inputs]
    # an output that is an input (the weight, updated in place) keeps being one
    same = {id(a): h for a, h in zip(inputs, host)}
    host_outs = [same[id(o)] if id(o) in same else o.copyto(cpu()) for o in outs]
    sparse_invoke(op, p, host, host_outs, cpu())
    n = len(inputs) if n_args is None else n_args
    for a, h in zip(inputs[n:], host[n:]):          # the states, updated in place
        _assign(a, h.copyto(a.context))
    for o, h in zip(outs, host_outs):
        _assign(o, h.copyto(o.context))


def _peek(arr):
    """The value arr holds now (no wait: the kernel that may have returned it ran
    after its inputs were read)."""
    from .sparse import BaseSparseNDArray
    return arr._chunk.data if isinstance(arr, BaseSparseNDArray) else arr._chunk.data


class _SparseCall:
    """What a sparse kernel may ask about its call."""
    __slots__ = ("ctx", "inputs", "out", "is_train")

    def __init__(self, ctx, inputs, out, is_train):
        self.ctx, self.inputs, self.out, self.is_train = ctx, inputs, out, is_train

    def out_stype(self, i, default):
        """The storage type of the given ``out`` number i (else ``default``)."""
        if self.out is not None and i < len(self.out):
            return self.out[i].stype
        return default


def invoke_sparse(name, inputs, kwargs, out=None):
    """Call operator ``name`` on arrays of any storage."""
    from .dispatch import invoke_by_name
    return invoke_by_name(name, inputs, kwargs, out=out)


def cast_storage_nd(arr, stype):
    """arr as a new array of storage type ``stype``."""
    if stype not in ("default", "row_sparse", "csr"):
        raise MXNetError(f"unknown storage type {stype!r}")
    if stype == "csr" and arr.ndim != 2:
        raise ValueError(f"cast_storage to csr needs a 2-D array, got shape {arr.shape}")
    if stype == arr.stype:
        return arr.copy()
    return invoke_sparse("cast_storage", [arr], {"stype": stype})


def grad_store(buf, g, add):
    """Write (or add) dense gradient ``g`` into a sparse gradient buffer."""
    from .sparse import _value_of
    from ..backend import to_numpy
    from ..operator.kernels_sparse import add_values
    if not isinstance(g, (sv.RowSparse, sv.CSR)):
        g = to_numpy(g)             # a GPU array's gradient: sparse values live on the host
    if add:
        g = add_values(_value_of(buf), g)
    if isinstance(g, (sv.RowSparse, sv.CSR)):
        buf._set_value(g)           # _set_value casts storage and dtype as needed
    else:
        buf._set_value(sv.from_dense(g.astype(buf._dtype, copy=False), buf.stype))
