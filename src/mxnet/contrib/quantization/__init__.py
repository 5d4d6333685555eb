"""mx.contrib.quantization: post-training INT8 quantization of symbolic models and
Gluon HybridBlocks (MXNet 1.9.1's API).

``quantize_model(sym, arg_params, aux_params, ...)`` rewrites the float graph (see
``_graph``), quantizes the weights offline (int8, symmetric per tensor) and, with
``calib_mode`` 'naive' (min/max) or 'entropy' (KL threshold), runs the float model on
``calib_data`` to fix every activation range; 'none' leaves the ranges to be measured at
run time. ``quantize_net``/``quantize_net_v2`` do the same for a HybridBlock and return a
SymbolBlock. ``quantize_graph`` + ``calib_graph`` split the two steps for callers that
collect the layer outputs themselves. The INT8 arithmetic runs in the NumPy kernels of
the quantized operators; ``quantize_model_mkldnn`` gives the same graph (pymxnet fuses
no oneDNN subgraphs).
"""
import logging
import os
import tempfile
import warnings

import numpy as np

from ...base import MXNetError
from ...context import cpu, Context
from ... import ndarray as _nd
from ...ndarray.serialization import load as nd_load, save as nd_save  # noqa: F401
from ...symbol.json_io import load as sym_load  # noqa: F401
from ._calibrate import (combine_histogram, LayerHistogramCollector,
                         LayerOutputMinMaxCollector, thresholds, set_calibration,
                         calib_targets)
from ._graph import quantize_symbol

__all__ = ["quantize_model", "quantize_model_mkldnn", "quantize_graph", "calib_graph",
           "quantize_net", "quantize_net_v2", "combine_histogram", "nd_load", "nd_save",
           "sym_load"]

# MXNet 1.9.1's private names for the collectors (user code passes them around)
_LayerHistogramCollector = LayerHistogramCollector
_LayerOutputMinMaxCollector = LayerOutputMinMaxCollector

_CALIB_MODES = ("none", "naive", "entropy")


def _check_args(calib_mode, quantized_dtype, quantize_granularity):
    if calib_mode not in _CALIB_MODES:
        raise MXNetError(f"quantization: calib_mode must be one of {_CALIB_MODES}, got "
                         f"{calib_mode!r}")
    if quantized_dtype not in ("int8", "uint8", "auto"):
        raise MXNetError(f"quantization: quantized_dtype must be 'int8', 'uint8' or "
                         f"'auto', got {quantized_dtype!r}")
    if quantize_granularity == "channel-wise":
        raise NotImplementedError("quantization: quantize_granularity='channel-wise' "
                                  "is not implemented (only 'tensor-wise')")
    if quantize_granularity != "tensor-wise":
        raise MXNetError(f"quantization: quantize_granularity must be 'tensor-wise' or "
                         f"'channel-wise', got {quantize_granularity!r}")


def _quantize_params(qsym, param_map, arg_params, aux_params):
    """The quantized graph's parameters: '<w>_quantize' (int8 of arg_params['<w>'] with
    its (min, max)) and every other argument / aux state passed through."""
    out = {}
    args = set(qsym.list_arguments())
    for qname, src in param_map.items():
        if src not in arg_params:
            raise MXNetError(f"quantization: parameter {src!r} is missing from arg_params")
        w = arg_params[src]
        lo, hi = _nd.min(w), _nd.max(w)
        q, qmin, qmax = _nd.contrib.quantize(w.astype("float32"), lo.reshape((1,)),
                                             hi.reshape((1,)), out_type="int8")
        out[qname], out[qname + "_min"], out[qname + "_max"] = q, qmin, qmax
    for name, value in arg_params.items():
        if name in args and name not in out:
            out[name] = value
    aux = {k: v for k, v in aux_params.items() if k in set(qsym.list_auxiliary_states())}
    return out, aux


def quantize_graph(sym, arg_params, aux_params, ctx=cpu(), excluded_sym_names=None,
                   excluded_op_names=None, calib_mode="entropy", quantized_dtype="int8",
                   quantize_mode="full", quantize_granularity="tensor-wise",
                   LayerOutputCollector=None, logger=None):
    """Quantize the graph and the weights, without calibrating. Returns (qsym,
    qarg_params, aux_params, collector): ``collector`` (None for calib_mode 'none') has
    ``collect(name, [op_name,] arr)``; feed it the float model's layer outputs (e.g. as
    an executor monitor callback) and pass it to :func:`calib_graph`."""
    _check_args(calib_mode, quantized_dtype, quantize_granularity)
    if not isinstance(ctx, Context):
        raise MXNetError(f"quantization: ctx must be a Context, got {ctx!r}")
    qg = quantize_symbol(sym, arg_params, excluded_sym_names, excluded_op_names,
                         quantized_dtype, quantize_mode, calibrated=calib_mode != "none")
    qsym = qg.symbol
    qarg, qaux = _quantize_params(qsym, qg.param_map, arg_params, aux_params)
    include = sorted(set(name for _, name in calib_targets(qsym)))
    collector = None
    if calib_mode == "entropy":
        collector = LayerOutputCollector or LayerHistogramCollector(
            quantized_dtype, include_layer=include, logger=logger)
    elif calib_mode == "naive":
        collector = LayerOutputCollector or LayerOutputMinMaxCollector(
            quantized_dtype, include_layer=include, logger=logger)
    if logger:
        logger.info("quantized the graph: %d layers to calibrate", len(include))
    return qsym, qarg, qaux, collector


def calib_graph(qsym, arg_params, aux_params, collector, calib_mode="entropy",
                quantized_dtype="int8", logger=logging):
    """Write the ranges a filled ``collector`` measured into ``qsym``'s quantize,
    requantize and batch-norm nodes. Returns (qsym, arg_params, aux_params)."""
    if calib_mode not in ("naive", "entropy"):
        raise MXNetError(f"calib_graph: calib_mode must be 'naive' or 'entropy', got "
                         f"{calib_mode!r}")
    th = thresholds(collector, calib_mode, quantized_dtype, logger)
    set_calibration(qsym, th, logger)
    return qsym, arg_params, aux_params


def _batches(calib_data, data_names):
    """Lists of data arrays (one per name) from a DataIter or an iterable of batches."""
    if hasattr(calib_data, "reset") and hasattr(calib_data, "provide_data"):
        calib_data.reset()
        for batch in calib_data:
            yield list(batch.data)[:len(data_names)], getattr(batch, "pad", 0) or 0
        return
    for batch in calib_data:
        if isinstance(batch, (list, tuple)):
            yield [b for b in batch[:len(data_names)]], 0
        else:
            yield [batch], 0


def _collect(sym, arg_params, aux_params, calib_data, data_names, collector, ctx,
             num_examples, logger):
    """Run the float model on calibration batches, feeding the collector every layer
    output it asks for. Returns the number of examples seen."""
    from ...symbol import Group
    internals = sym.get_internals()
    names = internals.list_outputs()
    wanted = collector.include_layer if collector.include_layer is not None else names
    wanted = [n for n in names if n in set(wanted)]
    if not wanted:
        return 0
    group = Group([internals[names.index(n)] for n in wanted])
    seen = 0
    for arrays, pad in _batches(calib_data, data_names):
        if len(arrays) != len(data_names):
            raise MXNetError(f"calibration: batches hold {len(arrays)} data arrays for "
                             f"data_names {list(data_names)}")
        args = {k: v for k, v in arg_params.items() if k in set(group.list_arguments())}
        for n, a in zip(data_names, arrays):
            if n in set(group.list_arguments()):
                args[n] = a.as_in_context(ctx) if hasattr(a, "as_in_context") else \
                    _nd.array(a, ctx=ctx)
        aux = {k: v for k, v in aux_params.items()
               if k in set(group.list_auxiliary_states())}
        exe = group.bind(ctx, args=args, aux_states=aux, grad_req="null")
        outs = exe.forward(is_train=False)
        n = arrays[0].shape[0] - pad
        if num_examples is not None and seen + n > num_examples:
            keep = num_examples - seen
            outs = [o[:keep] if o.ndim and o.shape[0] == arrays[0].shape[0] else o
                    for o in outs]
            n = keep
        for name, out in zip(wanted, outs):
            collector.collect(name, out)
        seen += n
        if num_examples is not None and seen >= num_examples:
            break
    if logger:
        logger.info("collected layer statistics from %d examples", seen)
    return seen


def quantize_model(sym, arg_params, aux_params, data_names=("data",),
                   label_names=("softmax_label",), ctx=cpu(), excluded_sym_names=None,
                   excluded_op_names=None, calib_mode="entropy", calib_data=None,
                   num_calib_examples=None, quantized_dtype="int8", quantize_mode="smart",
                   quantize_granularity="tensor-wise", logger=None):
    """Quantize a symbolic model. Returns (qsym, qarg_params, aux_params).

    calib_mode: 'none' (ranges measured at run time), 'naive' (min/max of the layer
    outputs over ``calib_data``) or 'entropy' (KL-optimal thresholds). calib_data: a
    DataIter (or an iterable of batches) giving ``data_names``' arrays;
    num_calib_examples bounds how much of it is used. excluded_sym_names /
    excluded_op_names keep layers (by node name) or operators (by op name) in float.
    quantized_dtype: 'int8', 'uint8' or 'auto' (uint8 for non-negative calibrated
    ranges)."""
    if not isinstance(data_names, (list, tuple)):
        raise MXNetError(f"quantize_model: data_names must be a list of names, got "
                         f"{data_names!r}")
    qsym, qarg, qaux, collector = quantize_graph(
        sym, arg_params, aux_params, ctx, excluded_sym_names, excluded_op_names, calib_mode,
        quantized_dtype, quantize_mode, quantize_granularity, None, logger)
    if calib_mode != "none":
        if calib_data is None:
            raise MXNetError(f"quantize_model: calib_mode={calib_mode!r} needs calib_data")
        n = _collect(sym, arg_params, aux_params, calib_data, list(data_names), collector,
                     ctx, num_calib_examples, logger)
        if n == 0:
            raise MXNetError("quantize_model: calib_data gave no examples")
        qsym, qarg, qaux = calib_graph(qsym, qarg, qaux, collector, calib_mode,
                                       quantized_dtype, logger)
    return qsym, qarg, qaux


def quantize_model_mkldnn(sym, arg_params, aux_params, data_names=("data",),
                          label_names=("softmax_label",), ctx=cpu(),
                          excluded_sym_names=None, excluded_op_names=None,
                          calib_mode="entropy", calib_data=None, num_calib_examples=None,
                          quantized_dtype="int8", quantize_mode="smart",
                          quantize_granularity="tensor-wise", logger=None):
    """:func:`quantize_model` for CPU. MXNet 1.9.1 also fuses oneDNN subgraphs here;
    pymxnet has no fused quantized operators, so the graph is quantize_model's (the
    same arithmetic, unfused)."""
    if not isinstance(ctx, Context) or ctx.device_type != "cpu":
        raise MXNetError(f"quantize_model_mkldnn: only cpu contexts are supported, got "
                         f"{ctx!r}")
    return quantize_model(sym, arg_params, aux_params, data_names, label_names, ctx,
                          excluded_sym_names, excluded_op_names, calib_mode, calib_data,
                          num_calib_examples, quantized_dtype, quantize_mode,
                          quantize_granularity, logger)


def _export(network, data_shapes, calib_data):
    """(symbol, arg_params, aux_params, data_names) of a HybridBlock, traced with zeros
    of ``data_shapes`` or with the first calibration batch."""
    from ...gluon import HybridBlock
    from ...io import DataDesc
    if not isinstance(network, HybridBlock):
        raise MXNetError(f"quantize_net: network must be a HybridBlock, got "
                         f"{type(network).__name__}")
    if data_shapes is not None:
        descs = [d if isinstance(d, DataDesc) else DataDesc(*d) if isinstance(d, tuple)
                 and isinstance(d[0], str) else DataDesc(f"data{i}" if i else "data", d)
                 for i, d in enumerate(data_shapes)]
        inputs = [_nd.zeros(d.shape, dtype=d.dtype) for d in descs]
    elif calib_data is not None:
        # a DataIter's batch gives every input; a DataLoader's batch, as in MXNet,
        # gives the network's one input (first of [data, label])
        is_iter = hasattr(calib_data, "provide_data")
        n = len(calib_data.provide_data) if is_iter else 1
        inputs, _ = next(iter(_batches(calib_data, [None] * n)))
    else:
        raise MXNetError("quantize_net: give data_shapes or calib_data")
    network.hybridize()
    network(*inputs)
    with tempfile.TemporaryDirectory() as tmp:
        prefix = os.path.join(tmp, "net")
        network.export(prefix)
        sym = sym_load(prefix + "-symbol.json")
        saved = nd_load(prefix + "-0000.params")
    arg = {k[4:]: v for k, v in saved.items() if k.startswith("arg:")}
    aux = {k[4:]: v for k, v in saved.items() if k.startswith("aux:")}
    params = set(arg) | set(aux)
    data_names = [n for n in sym.list_arguments() if n not in params]
    if len(data_names) != len(inputs):
        raise MXNetError(f"quantize_net: the network has inputs {data_names} but "
                         f"{len(inputs)} arrays were given")
    return sym, arg, aux, data_names


def _excluded(sym, exclude_layers, exclude_layers_match):
    names = set(exclude_layers or ())
    for node in sym.get_internals()._topo():
        if node.op is not None and any(m in node.name for m in exclude_layers_match or ()):
            names.add(node.name)
    return names


def quantize_net_v2(network, quantized_dtype="auto", quantize_mode="full",
                    quantize_granularity="tensor-wise", exclude_layers=None,
                    exclude_layers_match=None, exclude_operators=None, calib_data=None,
                    data_shapes=None, calib_mode="none", num_calib_examples=None,
                    ctx=cpu(), LayerOutputCollector=None, logger=None):
    """Quantize a Gluon HybridBlock; returns a SymbolBlock running the quantized graph
    with int8 weights. calib_data: a DataLoader (batches of data, or [data, label]) or a
    DataIter; data_shapes: the input shapes (DataDesc or shapes) when there is none.
    exclude_layers / exclude_layers_match (substrings) / exclude_operators keep
    layers in float."""
    from ...gluon import SymbolBlock
    from ...symbol import var
    _check_args(calib_mode, quantized_dtype, quantize_granularity)
    if calib_mode != "none" and calib_data is None:
        raise MXNetError(f"quantize_net: calib_mode={calib_mode!r} needs calib_data")
    sym, arg, aux, data_names = _export(network, data_shapes, calib_data)
    excluded = _excluded(sym, exclude_layers, exclude_layers_match)
    qsym, qarg, qaux, collector = quantize_graph(
        sym, arg, aux, ctx, excluded, exclude_operators, calib_mode, quantized_dtype,
        quantize_mode, quantize_granularity, LayerOutputCollector, logger)
    if calib_mode != "none":
        n = _collect(sym, arg, aux, calib_data, data_names, collector, ctx,
                     num_calib_examples, logger)
        if n == 0:
            raise MXNetError("quantize_net: calib_data gave no examples")
        qsym, qarg, qaux = calib_graph(qsym, qarg, qaux, collector, calib_mode,
                                       quantized_dtype, logger)
    net = SymbolBlock(qsym, [var(n) for n in data_names])
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "quantized.params")
        nd_save(path, {**{f"arg:{k}": v for k, v in qarg.items()},
                       **{f"aux:{k}": v for k, v in qaux.items()}})
        net.collect_params().load(path, ctx=ctx, cast_dtype=True, dtype_source="saved")
    return net


def quantize_net(network, quantized_dtype="auto", quantize_mode="full",
                 exclude_layers=None, exclude_layers_match=None, exclude_operators=None,
                 calib_data=None, data_shapes=None, calib_mode="none",
                 num_calib_examples=None, ctx=cpu(), logger=None):
    """:func:`quantize_net_v2` with per-tensor granularity (deprecated in MXNet)."""
    warnings.warn("WARNING: This will be deprecated after MXNet 2.0, please use "
                  "quantize_net_v2.")
    return quantize_net_v2(network, quantized_dtype, quantize_mode, "tensor-wise",
                           exclude_layers, exclude_layers_match, exclude_operators,
                           calib_data, data_shapes, calib_mode, num_calib_examples, ctx,
                           None, logger)
