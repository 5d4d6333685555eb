"""DataParallelExecutorGroup: one executor per device, each bound to a slice of the
batch (MXNet 1.9.1's ``mx.module.executor_group``).

The batch axis of every input and output comes from its layout (``'N'`` in
``DataDesc.layout``; axis 0 when there is none, -1 for inputs without a batch axis).
The batch is split by ``work_load_list`` into contiguous slices, one per device;
``forward`` copies each slice into its executor, ``get_outputs`` concatenates the
devices' outputs back along the batch axis. Parameter arrays are per device; the
Module keeps them equal (KVStore or local updater) and ``get_params`` averages them.
"""
import logging
from collections import OrderedDict

import numpy as np

from .. import engine
from .. import ndarray as nd
from ..base import MXNetError
from ..context import cpu
from .. import io as _io

__all__ = ["DataParallelExecutorGroup"]


def _as_desc(x):
    """A DataDesc from a DataDesc or a (name, shape[, dtype, layout]) tuple."""
    return x if isinstance(x, _io.DataDesc) else _io.DataDesc(*x)


def _split_input_slice(batch_size, work_load_list):
    """Contiguous slices of range(batch_size) proportional to work_load_list."""
    total = sum(work_load_list)
    counts = [round(w * batch_size / total) for w in work_load_list]
    short = batch_size - sum(counts)
    if short > 0:
        counts[-1] += short
    slices, end = [], 0
    for count in counts:
        begin = int(min(end, batch_size))
        end = int(min(begin + count, batch_size))
        if begin >= end:
            raise ValueError("Too many slices. Some splits are empty.")
        slices.append(slice(begin, end))
    return slices


def _prepare_group2ctxs(group2ctxs, num_ctx):
    """One group->context dict (or None) per device."""
    if group2ctxs is None:
        return [None] * num_ctx
    if isinstance(group2ctxs, list):
        if len(group2ctxs) != num_ctx:
            raise MXNetError("Length of group2ctxs should be equal to the number of "
                             f"contexts ({len(group2ctxs)} vs {num_ctx})")
        return group2ctxs
    if isinstance(group2ctxs, dict):
        out = [{} for _ in range(num_ctx)]
        for group, ctxs in group2ctxs.items():
            ctxs = ctxs if isinstance(ctxs, (list, tuple)) else [ctxs] * num_ctx
            if len(ctxs) == 1:              # one context for every device, as MXNet
                ctxs = list(ctxs) * num_ctx
            if len(ctxs) != num_ctx:
                raise MXNetError(f"group2ctxs[{group!r}] must give one context per device")
            for i, c in enumerate(ctxs):
                out[i][group] = c
        return out
    raise MXNetError("group2ctxs should be list of dict of str to context, or dict of str "
                     "to context or list of context")


def _to_nd(src, ctx):
    return src if isinstance(src, nd.NDArray) else nd.array(src, ctx=ctx)


def _copy_into(src, dst):
    """src.copyto(dst); a batch of the bound shape and dtype on the host, with no work
    pending on either array, is copied right here (what the engine would do at once,
    without an operator dispatch: this runs for every input of every batch)."""
    if type(src) is nd.NDArray and type(dst) is nd.NDArray and src._shape == dst._shape \
            and src._dtype == dst._dtype and src._ctx.device_typeid == 1 \
            and dst._ctx.device_typeid == 1 and src._chunk.data is not None \
            and src._chunk is not dst._chunk:
        if engine.get().run_inline(lambda rctx: np.copyto(dst._data, src._data),
                                   [src._chunk], [dst._chunk], "_copyto"):
            return
    src.copyto(dst)


def _copy_slice(src, dst, islice, axis):
    """dst[:] = the slice islice of src along axis (the whole of src when axis < 0 or
    the slice covers it)."""
    src = _to_nd(src, dst.context)
    if axis < 0 or (islice.start == 0 and src.shape[axis] == islice.stop):
        _copy_into(src, dst)
    elif axis == 0:
        src[islice.start:islice.stop].copyto(dst)
    else:
        nd.slice_axis(src, axis=axis, begin=islice.start, end=islice.stop).copyto(dst)


def _load_general(data, targets, major_axis):
    """Copy each source array into its targets: a single NDArray, a list of arrays (one
    source per device, already sliced) or a list of (slice, device array)."""
    for src, dst, axis in zip(data, targets, major_axis):
        if isinstance(dst, nd.NDArray):
            _to_nd(src, dst.context).copyto(dst)
        elif isinstance(src, (list, tuple)):
            for s, d in zip(src, dst):
                _to_nd(s, d.context).copyto(d)
        else:
            for islice, d in dst:
                _copy_slice(src, d, islice, axis)


def _load_batch_part(batch, targets, major_axis, part):
    if isinstance(batch, list):
        # pre-sliced: one DataBatch per device
        new_batch = [[getattr(b, part)[i] for b in batch] for i in range(len(targets))]
        new_targets = [[d for _, d in t] for t in targets]
        _load_general(new_batch, new_targets, major_axis)
    else:
        _load_general(getattr(batch, part), targets, major_axis)


def _merge_multi_context(outputs, major_axis):
    """Concatenate each output's per-device arrays along its batch axis."""
    merged = []
    for tensors, axis in zip(outputs, major_axis):
        if axis >= 0 and len(tensors) > 1:
            ctx = tensors[0].context
            merged.append(nd.concat(*[t.as_in_context(ctx) for t in tensors], dim=axis))
        else:
            merged.append(tensors[0])
    return merged


class DataParallelExecutorGroup:
    """Executors for data-parallel computation on a list of devices.

    Parameters
    ----------
    symbol : Symbol
    contexts : list of Context
    workload : list of number
        Relative share of the batch per device.
    data_shapes, label_shapes : list of DataDesc or (name, shape)
    param_names : list of str
        The learnable arguments (everything else is an input).
    for_training, inputs_need_grad : bool
    shared_group : DataParallelExecutorGroup, optional
        Share parameters and input buffers with it (bucketing).
    logger : Logger
    fixed_param_names : list of str, optional
        Parameters that get no gradient (grad_req 'null').
    grad_req : str, list or dict
        'write', 'add' or 'null'; a list (per argument) or a dict (by name, the rest
        defaulting as for a str).
    state_names : list of str, optional
        Inputs kept across batches and set with ``set_states`` (RNN states).
    group2ctxs : optional
        ctx_group -> context (only each device's own context is supported).
    """

    def __init__(self, symbol, contexts, workload, data_shapes, label_shapes, param_names,
                 for_training, inputs_need_grad, shared_group=None, logger=logging,
                 fixed_param_names=None, grad_req="write", state_names=None,
                 group2ctxs=None):
        self.param_names = param_names
        self.arg_names = symbol.list_arguments()
        self.aux_names = symbol.list_auxiliary_states()
        self.symbol = symbol
        self.contexts = contexts
        self.workload = workload
        self.group2ctxs = _prepare_group2ctxs(group2ctxs, len(contexts))
        self.for_training = for_training
        self.inputs_need_grad = inputs_need_grad
        self.logger = logger
        self.fixed_param_names = fixed_param_names or []
        self.state_names = state_names or []
        self._total_exec_bytes = 0
        if not for_training:
            grad_req = "null"
        data_shapes = [_as_desc(x) for x in data_shapes]
        if label_shapes is not None:
            label_shapes = [_as_desc(x) for x in label_shapes]
        self.grad_req = self._grad_reqs(grad_req, [x.name for x in data_shapes])
        self.shared_data_arrays = shared_group.shared_data_arrays if shared_group \
            is not None else [{} for _ in contexts]
        self.batch_size = None
        self.slices = None
        self.execs = []
        self._default_execs = None
        self.data_arrays = self.label_arrays = self.param_arrays = None
        self.state_arrays = self.grad_arrays = self.aux_arrays = None
        self.input_grad_arrays = None
        self.data_shapes = self.data_names = self.data_layouts = None
        self.label_shapes = self.label_names = self.label_layouts = None
        self.output_names = symbol.list_outputs()
        self.output_layouts = [_io.DataDesc.get_batch_axis(symbol[name].attr("__layout__"))
                               for name in self.output_names]
        self.num_outputs = len(self.output_names)
        self.bind_exec(data_shapes, label_shapes, shared_group)

    def _grad_reqs(self, grad_req, data_names):
        def default(name, req):
            if name in self.param_names:
                return "null" if name in self.fixed_param_names else req
            if name in data_names:
                return req if self.inputs_need_grad else "null"
            return "null"
        if isinstance(grad_req, str):
            return {k: default(k, grad_req) for k in self.arg_names}
        if isinstance(grad_req, (list, tuple)):
            if len(grad_req) != len(self.arg_names):
                raise MXNetError(f"grad_req has {len(grad_req)} entries for "
                                 f"{len(self.arg_names)} arguments")
            return dict(zip(self.arg_names, grad_req))
        if isinstance(grad_req, dict):
            reqs = {k: default(k, "write") for k in self.arg_names}
            reqs.update(grad_req)
            return reqs
        raise ValueError("grad_req must be one of str, list, tuple, or dict.")

    # ------------------------------------------------------------------ binding
    def decide_slices(self, data_shapes):
        """Set batch_size and the per-device slices; return each input's batch axis."""
        if not data_shapes:
            raise MXNetError("DataParallelExecutorGroup needs at least one data input")
        major_axis = [_io.DataDesc.get_batch_axis(x.layout) for x in data_shapes]
        for desc, axis in zip(data_shapes, major_axis):
            if axis == -1:
                continue
            batch_size = desc.shape[axis]
            if self.batch_size is not None:
                if batch_size != self.batch_size:
                    raise MXNetError(f"all data must have the same batch size: batch_size "
                                     f"= {self.batch_size}, but {desc.name} has shape "
                                     f"{desc.shape}")
            else:
                self.batch_size = batch_size
                self.slices = _split_input_slice(self.batch_size, self.workload)
        return major_axis

    def _collect_arrays(self):
        execs = self.execs
        self.data_arrays = [[(self.slices[i], e.arg_dict[d.name]) for i, e in enumerate(execs)]
                            for d in self.data_shapes]
        self.state_arrays = [[e.arg_dict[name] for e in execs] for name in self.state_names]
        if self.label_shapes is not None:
            self.label_arrays = [[(self.slices[i], e.arg_dict[d.name])
                                  for i, e in enumerate(execs)] for d in self.label_shapes]
        else:
            self.label_arrays = None
        param_idx = [i for i, name in enumerate(self.arg_names) if name in self.param_names]
        self.param_arrays = [[e.arg_arrays[i] for e in execs] for i in param_idx]
        self.grad_arrays = [[e.grad_arrays[i] for e in execs] for i in param_idx] \
            if self.for_training else None
        if self.inputs_need_grad:
            self.input_grad_arrays = [[e.grad_arrays[self.arg_names.index(d.name)]
                                       for e in execs]
                                      for d in self.data_shapes if d.name in self.arg_names]
        else:
            self.input_grad_arrays = None
        self.aux_arrays = [[e.aux_arrays[i] for e in execs]
                           for i in range(len(self.aux_names))]

    def bind_exec(self, data_shapes, label_shapes, shared_group=None, reshape=False):
        """Bind (or, with reshape, reshape) one executor per device."""
        if not reshape and self.execs:
            raise MXNetError("executors are already bound")
        self.batch_size = None
        self.data_layouts = self.decide_slices(data_shapes)
        if label_shapes is not None:
            self.label_layouts = self.decide_slices(label_shapes)
        for i in range(len(self.contexts)):
            dshapes = self._sliced_shape(data_shapes, i, self.data_layouts)
            lshapes = self._sliced_shape(label_shapes, i, self.label_layouts) \
                if label_shapes is not None else None
            if reshape:
                shapes = {d.name: d.shape for d in dshapes + (lshapes or [])}
                self.execs[i] = self._default_execs[i].reshape(allow_up_sizing=True,
                                                               **shapes)
            else:
                self.execs.append(self._bind_ith_exec(i, dshapes, lshapes, shared_group))
        self.data_shapes = data_shapes
        self.label_shapes = label_shapes
        self.data_names = [d.name for d in data_shapes]
        if label_shapes is not None:
            self.label_names = [d.name for d in label_shapes]
        self._collect_arrays()

    def reshape(self, data_shapes, label_shapes):
        """Reshape the executors for new input shapes (sharing parameter memory)."""
        if data_shapes == self.data_shapes and label_shapes == self.label_shapes:
            return
        if self._default_execs is None:
            self._default_execs = list(self.execs)
        self.bind_exec(data_shapes, label_shapes, reshape=True)

    def _sliced_shape(self, shapes, i, major_axis):
        out = []
        for desc, axis in zip(shapes, major_axis):
            shape = list(desc.shape)
            if axis >= 0:
                shape[axis] = self.slices[i].stop - self.slices[i].start
            out.append(_io.DataDesc(desc.name, tuple(shape), desc.dtype, desc.layout))
        return out

    def _bind_ith_exec(self, i, data_shapes, label_shapes, shared_group):
        shared_exec = None if shared_group is None else shared_group.execs[i]
        inputs = data_shapes + (label_shapes or [])
        shapes = {d.name: d.shape for d in inputs}
        types = {d.name: d.dtype for d in inputs}
        ex = self.symbol.simple_bind(ctx=self.contexts[i], grad_req=self.grad_req,
                                     type_dict=types, shared_arg_names=self.param_names,
                                     shared_exec=shared_exec, group2ctx=self.group2ctxs[i],
                                     shared_buffer=self.shared_data_arrays[i], **shapes)
        plan = getattr(ex, "memory_plan", None)
        if plan is not None:
            self._total_exec_bytes += int(plan.planned_bytes)
        return ex

    # --------------------------------------------------------------- parameters
    def set_params(self, arg_params, aux_params, allow_extra=False):
        """Copy parameter values into every device's executor."""
        for ex in self.execs:
            ex.copy_params_from(arg_params, aux_params, allow_extra_params=allow_extra)

    def get_params(self, arg_params, aux_params):
        """Write the devices' average of each parameter and aux state into the dicts."""
        for names, blocks, out in ((self.param_names, self.param_arrays, arg_params),
                                   (self.aux_names, self.aux_arrays, aux_params)):
            for name, block in zip(names, blocks):
                if len(block) == 1:
                    value = block[0]
                else:
                    value = block[0].copyto(cpu())
                    for w in block[1:]:
                        value += w.copyto(cpu())
                    value /= len(block)
                dst = out[name]
                if value.dtype != dst.dtype:
                    value = value.astype(dst.dtype)
                value.copyto(dst)

    # ------------------------------------------------------------------ running
    def forward(self, data_batch, is_train=None):
        """Load the batch (sliced per device) and run forward on every executor."""
        _load_batch_part(data_batch, self.data_arrays, self.data_layouts, "data")
        if is_train is None:
            is_train = self.for_training
        if self.label_arrays is not None and data_batch is not None:
            labels = data_batch[0].label if isinstance(data_batch, list) else data_batch.label
            if labels:
                _load_batch_part(data_batch, self.label_arrays, self.label_layouts, "label")
        for ex in self.execs:
            ex.forward(is_train=is_train)

    def get_output_shapes(self):
        """[(name, shape)] of the merged outputs."""
        shapes = []
        for name, out, axis in zip(self.output_names, self.execs[0].outputs,
                                   self.output_layouts):
            shape = list(out.shape)
            if axis >= 0:
                shape[axis] = self.batch_size
            shapes.append((name, tuple(shape)))
        return shapes

    def get_outputs(self, merge_multi_context=True, begin=0, end=None):
        """Outputs begin..end: merged arrays, or [[out_dev1, out_dev2, ...], ...]."""
        if end is None:
            end = self.num_outputs
        outputs = [[ex.outputs[i] for ex in self.execs] for i in range(begin, end)]
        if merge_multi_context:
            outputs = _merge_multi_context(outputs, self.output_layouts)
        return outputs

    def get_states(self, merge_multi_context=True):
        if merge_multi_context:
            raise MXNetError("merge_multi_context=True is not supported for get_states yet.")
        return self.state_arrays

    def set_states(self, states=None, value=None):
        """Set the states from arrays (one list per state, per device) or to a scalar."""
        if states is not None:
            if value is not None:
                raise MXNetError("Only one of states & value can be specified.")
            _load_general(states, self.state_arrays, (0,) * len(states))
        else:
            if value is None:
                raise MXNetError("At least one of states & value must be specified.")
            for per_dev in self.state_arrays:
                for dst in per_dev:
                    dst[:] = value

    def get_input_grads(self, merge_multi_context=True):
        if not self.inputs_need_grad:
            raise MXNetError("get_input_grads needs the module bound with "
                             "inputs_need_grad=True")
        if merge_multi_context:
            return _merge_multi_context(self.input_grad_arrays, self.data_layouts)
        return self.input_grad_arrays

    def backward(self, out_grads=None):
        """Backward on every executor; out_grads (merged, one per output) are sliced
        to each device."""
        if not self.for_training:
            raise MXNetError("re-bind with for_training=True to run backward")
        out_grads = [] if out_grads is None else out_grads
        if isinstance(out_grads, nd.NDArray):
            out_grads = [out_grads]
        for i, (ex, islice) in enumerate(zip(self.execs, self.slices)):
            sliced = []
            for grad, axis in zip(out_grads, self.output_layouts):
                if axis >= 0:
                    part = nd.slice_axis(grad, axis=axis, begin=islice.start,
                                         end=islice.stop)
                    sliced.append(part.as_in_context(self.contexts[i]))
                else:
                    sliced.append(grad.copyto(self.contexts[i]))
            ex.backward(out_grads=sliced)

    def update_metric(self, eval_metric, labels, pre_sliced):
        """Update the metric with each device's outputs and its slice of the labels."""
        for k, (ex, islice) in enumerate(zip(self.execs, self.slices)):
            if pre_sliced:
                labels_slice = labels[k]
            else:
                labels_slice = []
                layouts = self.label_layouts or [0] * len(labels)
                for label, axis in zip(labels, layouts):
                    if axis == 0:     # (one device: its slice is the whole label)
                        whole = islice.start == 0 and label.shape[0] == islice.stop
                        labels_slice.append(label if whole else label[islice])
                    elif axis > 0:
                        labels_slice.append(nd.slice_axis(label, axis=axis,
                                                          begin=islice.start,
                                                          end=islice.stop))
                    else:
                        labels_slice.append(label)
            names = self.label_names or []
            eval_metric.update_dict(OrderedDict(zip(names, labels_slice)),
                                    OrderedDict(zip(self.output_names, ex.outputs)))

    def install_monitor(self, mon):
        for ex in self.execs:
            mon.install(ex)
