"""BaseModule: the module state machine and the high-level loops written on it
(MXNet 1.9.1's ``mx.module.BaseModule``).

A module moves through ``bind`` -> ``init_params`` -> ``init_optimizer``, with flags
``binded``, ``params_initialized``, ``optimizer_initialized``; then ``forward``,
``backward``, ``update``, ``update_metric`` and ``get_outputs`` run one batch.
Subclasses implement those; ``fit``, ``score``, ``predict`` and ``iter_predict`` here
are written only in terms of them, so every module type (Module, BucketingModule,
SequentialModule, PythonModule) trains and predicts the same way.
"""
import logging
import time
import warnings

import numpy as np

from .. import metric
from .. import ndarray as nd
from ..initializer import Uniform
from .. import io as _io
from ..callback import BatchEndParam
from ..checkpoint import _params_dict, _split_params
from .executor_group import _as_desc

__all__ = ["BaseModule"]


def _as_list(obj):
    """obj as a list (a list stays itself, anything else becomes [obj])."""
    return obj if isinstance(obj, list) else [obj]


def _check_input_names(symbol, names, typename, throw):
    """Each name must be an argument of symbol: ValueError (throw) or a warning."""
    args = symbol.list_arguments()
    for name in names:
        if name in args:
            continue
        candidates = [a for a in args if not a.endswith(("_weight", "_bias", "_gamma",
                                                         "_beta"))]
        msg = ("\033[91mYou created Module with Module(..., %s_names=%s) but input with "
               "name '%s' is not found in symbol.list_arguments(). Did you mean one of:"
               "\n\t%s\033[0m" % (typename, str(names), name, "\n\t".join(candidates)))
        if throw:
            raise ValueError(msg)
        warnings.warn(msg)


def _checked_input_names(symbol, data_names, label_names, state_names, fixed_param_names):
    """A module's four input name lists as lists (None: empty), each checked against
    the symbol's arguments (an unknown label name only warns)."""
    out = []
    for names, kind, throw in ((data_names, "data", True), (label_names, "label", False),
                               (state_names, "state", True),
                               (fixed_param_names, "fixed_param", True)):
        names = list(names) if names is not None else []
        _check_input_names(symbol, names, kind, throw)
        out.append(names)
    return out


def _check_names_match(data_names, data_shapes, name, throw):
    actual = [x[0] for x in data_shapes]
    if sorted(data_names) != sorted(actual):
        msg = "Data provided by %s_shapes don't match names specified by %s_names (%s vs. " \
              "%s)" % (name, name, str(data_shapes), str(data_names))
        if throw:
            raise ValueError(msg)
        warnings.warn(msg)


def _parse_data_desc(data_names, label_names, data_shapes, label_shapes):
    """data_shapes/label_shapes as lists of DataDesc, checked against the names."""
    data_shapes = [_as_desc(x) for x in data_shapes]
    _check_names_match(data_names, data_shapes, "data", True)
    if label_shapes is not None:
        label_shapes = [_as_desc(x) for x in label_shapes]
        _check_names_match(label_names, label_shapes, "label", False)
    else:
        _check_names_match(label_names, [], "label", False)
    return data_shapes, label_shapes


class BaseModule:
    """The base class of modules: a computation unit that can bind, initialise
    parameters, run forward/backward and update.

    Parameters
    ----------
    logger : Logger, default ``logging``
        Where fit/score report (``Epoch[n] Train-accuracy=...``).
    """

    def __init__(self, logger=logging):
        self.logger = logger
        self.binded = False
        self.for_training = False
        self.inputs_need_grad = False
        self.params_initialized = False
        self.optimizer_initialized = False
        self._symbol = None
        self._total_exec_bytes = 0

    # ------------------------------------------------------------- high level
    def forward_backward(self, data_batch):
        """forward(is_train=True) then backward()."""
        self.forward(data_batch, is_train=True)
        self.backward()

    def _update_metric_for(self, eval_metric, batch):
        if isinstance(batch, list):
            self.update_metric(eval_metric, [b.label for b in batch], pre_sliced=True)
        else:
            self.update_metric(eval_metric, batch.label)

    def score(self, eval_data, eval_metric, num_batch=None, batch_end_callback=None,
              score_end_callback=None, reset=True, epoch=0, sparse_row_id_fn=None):
        """Run prediction on eval_data and evaluate the metric.

        Returns the metric's ``get_name_value()``: a list of (name, value).
        """
        assert self.binded and self.params_initialized
        if reset:
            eval_data.reset()
        if not isinstance(eval_metric, metric.EvalMetric):
            eval_metric = metric.create(eval_metric)
        eval_metric.reset()
        actual_num_batch = 0
        for nbatch, eval_batch in enumerate(eval_data):
            if num_batch is not None and nbatch == num_batch:
                break
            self.prepare(eval_batch, sparse_row_id_fn=sparse_row_id_fn)
            self.forward(eval_batch, is_train=False)
            self._update_metric_for(eval_metric, eval_batch)
            if batch_end_callback is not None:
                params = BatchEndParam(epoch=epoch, nbatch=nbatch, eval_metric=eval_metric,
                                       locals=locals())
                for callback in _as_list(batch_end_callback):
                    callback(params)
            actual_num_batch += 1
        if score_end_callback:
            params = BatchEndParam(epoch=epoch, nbatch=actual_num_batch,
                                   eval_metric=eval_metric, locals=locals())
            for callback in _as_list(score_end_callback):
                callback(params)
        return eval_metric.get_name_value()

    def iter_predict(self, eval_data, num_batch=None, reset=True, sparse_row_id_fn=None):
        """Yield (outputs, nbatch, batch) per batch; outputs lose the batch's padding."""
        assert self.binded and self.params_initialized
        if reset:
            eval_data.reset()
        for nbatch, eval_batch in enumerate(eval_data):
            if num_batch is not None and nbatch == num_batch:
                break
            self.prepare(eval_batch, sparse_row_id_fn=sparse_row_id_fn)
            self.forward(eval_batch, is_train=False)
            pad = eval_batch.pad
            outputs = [out[0:out.shape[0] - pad] for out in self.get_outputs()]
            yield outputs, nbatch, eval_batch

    def predict(self, eval_data, num_batch=None, merge_batches=True, reset=True,
                always_output_list=False, sparse_row_id_fn=None):
        """Run prediction and collect the outputs.

        eval_data: a DataIter, or one NDArray/NumPy batch (then the first output of
        that single forward is returned). With merge_batches the batches are
        concatenated: one NDArray per output (just the array when there is one output,
        unless always_output_list); otherwise a list per batch of output lists.
        """
        assert self.binded and self.params_initialized
        if isinstance(eval_data, (nd.NDArray, np.ndarray)):
            if isinstance(eval_data, np.ndarray):
                eval_data = nd.array(eval_data)
            self.forward(_io.DataBatch([eval_data]))
            return self.get_outputs()[0]
        if reset:
            eval_data.reset()
        output_list = []
        for nbatch, eval_batch in enumerate(eval_data):
            if num_batch is not None and nbatch == num_batch:
                break
            self.prepare(eval_batch, sparse_row_id_fn=sparse_row_id_fn)
            self.forward(eval_batch, is_train=False)
            pad = eval_batch.pad
            output_list.append([out[0:out.shape[0] - pad].copy()
                                for out in self.get_outputs()])
        if not output_list:
            return output_list
        if not merge_batches:
            return output_list
        num_outputs = len(output_list[0])
        for outs in output_list:
            assert len(outs) == num_outputs, \
                "Cannot merge batches, as num of outputs is not the same in mini-batches." \
                " Maybe bucketing is used?"
        merged = [nd.concat(*[outs[i] for outs in output_list], dim=0)
                  if len(output_list) > 1 else output_list[0][i]
                  for i in range(num_outputs)]
        if num_outputs == 1 and not always_output_list:
            return merged[0]
        return merged

    def fit(self, train_data, eval_data=None, eval_metric="acc", epoch_end_callback=None,
            batch_end_callback=None, kvstore="local", optimizer="sgd",
            optimizer_params=(("learning_rate", 0.01),), eval_end_callback=None,
            eval_batch_end_callback=None, initializer=Uniform(0.01), arg_params=None,
            aux_params=None, allow_missing=False, force_rebind=False, force_init=False,
            begin_epoch=0, num_epoch=None, validation_metric=None, monitor=None,
            sparse_row_id_fn=None):
        """Train the module's parameters.

        Binds for training on train_data's shapes, initialises parameters
        (``initializer`` unless given in arg_params/aux_params) and the optimizer,
        then for each epoch in [begin_epoch, num_epoch): forward_backward + update +
        update_metric per batch, logs ``Epoch[n] Train-<metric>=<value>`` and
        ``Epoch[n] Time cost=<seconds>``, calls epoch_end_callback(epoch, symbol,
        arg_params, aux_params), and scores eval_data (``Epoch[n]
        Validation-<metric>=<value>``).
        """
        assert num_epoch is not None, "please specify number of epochs"
        self.bind(data_shapes=train_data.provide_data, label_shapes=train_data.provide_label,
                  for_training=True, force_rebind=force_rebind)
        if monitor is not None:
            self.install_monitor(monitor)
        self.init_params(initializer=initializer, arg_params=arg_params,
                         aux_params=aux_params, allow_missing=allow_missing,
                         force_init=force_init)
        self.init_optimizer(kvstore=kvstore, optimizer=optimizer,
                            optimizer_params=optimizer_params)
        if validation_metric is None:
            validation_metric = eval_metric
        if not isinstance(eval_metric, metric.EvalMetric):
            eval_metric = metric.create(eval_metric)

        for epoch in range(begin_epoch, num_epoch):
            tic = time.time()
            eval_metric.reset()
            nbatch = 0
            data_iter = iter(train_data)
            end_of_batch = False
            next_data_batch = next(data_iter)
            eval_name_vals = []
            while not end_of_batch:
                data_batch = next_data_batch
                if monitor is not None:
                    monitor.tic()
                self.forward_backward(data_batch)
                self.update()
                self._update_metric_for(eval_metric, data_batch)
                try:
                    # fetch the next batch now so prepare() can overlap with compute
                    next_data_batch = next(data_iter)
                    self.prepare(next_data_batch, sparse_row_id_fn=sparse_row_id_fn)
                except StopIteration:
                    end_of_batch = True
                if monitor is not None:
                    monitor.toc_print()
                if end_of_batch:
                    eval_name_vals = eval_metric.get_global_name_value()
                if batch_end_callback is not None:
                    params = BatchEndParam(epoch=epoch, nbatch=nbatch, eval_metric=eval_metric,
                                           locals=locals())
                    for callback in _as_list(batch_end_callback):
                        callback(params)
                nbatch += 1

            for name, val in eval_name_vals:
                self.logger.info("Epoch[%d] Train-%s=%f", epoch, name, val)
            toc = time.time()
            self.logger.info("Epoch[%d] Time cost=%.3f", epoch, toc - tic)

            # sync the devices' parameters back (get_params) and make every device
            # hold the same values again (set_params)
            arg_params, aux_params = self.get_params()
            self.set_params(arg_params, aux_params)
            if epoch_end_callback is not None:
                for callback in _as_list(epoch_end_callback):
                    callback(epoch, self.symbol, arg_params, aux_params)
            if eval_data:
                res = self.score(eval_data, validation_metric,
                                 score_end_callback=eval_end_callback,
                                 batch_end_callback=eval_batch_end_callback, epoch=epoch)
                for name, val in res:
                    self.logger.info("Epoch[%d] Validation-%s=%f", epoch, name, val)
            train_data.reset()

    # --------------------------------------------------------------- symbol info
    @property
    def data_names(self):
        """Names of the data inputs."""
        raise NotImplementedError()

    @property
    def output_names(self):
        """Names of the outputs."""
        raise NotImplementedError()

    @property
    def data_shapes(self):
        """[DataDesc] of the data inputs."""
        raise NotImplementedError()

    @property
    def label_shapes(self):
        """[DataDesc] of the labels (None when bound without labels)."""
        raise NotImplementedError()

    @property
    def output_shapes(self):
        """[(name, shape)] of the outputs."""
        raise NotImplementedError()

    @property
    def symbol(self):
        """The symbol of this module."""
        return self._symbol

    # ---------------------------------------------------------------- parameters
    def get_params(self):
        """(arg_params, aux_params): dicts name -> NDArray (CPU copies)."""
        raise NotImplementedError()

    def init_params(self, initializer=Uniform(0.01), arg_params=None, aux_params=None,
                    allow_missing=False, force_init=False, allow_extra=False):
        """Initialise the parameters and auxiliary states."""
        raise NotImplementedError()

    def set_params(self, arg_params, aux_params, allow_missing=False, force_init=True,
                   allow_extra=False):
        """Assign parameter and aux state values (init_params without initializer)."""
        self.init_params(initializer=None, arg_params=arg_params, aux_params=aux_params,
                         allow_missing=allow_missing, force_init=force_init,
                         allow_extra=allow_extra)

    def _set_params_direct(self, assign, arg_params, aux_params, allow_missing, force_init,
                           allow_extra):
        """set_params of a module that can write a partial set of values straight to
        its devices with ``assign()``: without allow_missing it is init_params; the CPU
        copies are stale afterwards."""
        if not allow_missing:
            self.init_params(initializer=None, arg_params=arg_params, aux_params=aux_params,
                             allow_missing=allow_missing, force_init=force_init,
                             allow_extra=allow_extra)
            return
        if self.params_initialized and not force_init:
            warnings.warn("Parameters already initialized and force_init=False. "
                          "set_params call ignored.", stacklevel=3)
            return
        assign()
        self._params_dirty = True
        self.params_initialized = True

    def save_params(self, fname):
        """Write the parameters to fname (``arg:``/``aux:`` keys, as checkpoints)."""
        nd.save(fname, _params_dict(*self.get_params()))

    def load_params(self, fname):
        """Read parameters written by save_params (or a checkpoint's .params)."""
        self.set_params(*_split_params(nd.load(fname), fname, strict=True))

    def get_states(self, merge_multi_context=True):
        """The state arrays (modules without states have none)."""
        assert self.binded and self.params_initialized
        assert not merge_multi_context
        return []

    def set_states(self, states=None, value=None):
        """Set the state arrays (modules without states have none)."""
        assert self.binded and self.params_initialized
        assert not states and not value

    def install_monitor(self, mon):
        """Install a Monitor on the executors."""
        raise NotImplementedError()

    # ----------------------------------------------------------- computations
    def prepare(self, data_batch, sparse_row_id_fn=None):
        """Get ready for data_batch (called with the next batch while this one runs)."""
        if sparse_row_id_fn is not None:
            warnings.warn(UserWarning("sparse_row_id_fn is not invoked for BaseModule."))

    def forward(self, data_batch, is_train=None):
        """Forward computation (is_train None: as bound, for_training)."""
        raise NotImplementedError()

    def backward(self, out_grads=None):
        """Backward computation (out_grads: gradients of the outputs, if not losses)."""
        raise NotImplementedError()

    def get_outputs(self, merge_multi_context=True):
        """The outputs of the last forward."""
        raise NotImplementedError()

    def get_input_grads(self, merge_multi_context=True):
        """Gradients of the inputs (needs inputs_need_grad=True at bind)."""
        raise NotImplementedError()

    def update(self):
        """Update the parameters with the last backward's gradients."""
        raise NotImplementedError()

    def update_metric(self, eval_metric, labels, pre_sliced=False):
        """Accumulate the last forward's outputs against labels into eval_metric."""
        raise NotImplementedError()

    # --------------------------------------------------------------- binding
    def bind(self, data_shapes, label_shapes=None, for_training=True,
             inputs_need_grad=False, force_rebind=False, shared_module=None,
             grad_req="write"):
        """Bind the symbols to executors for the given input shapes."""
        raise NotImplementedError()

    def init_optimizer(self, kvstore="local", optimizer="sgd",
                       optimizer_params=(("learning_rate", 0.01),), force_init=False):
        """Create the optimizer (and KVStore)."""
        raise NotImplementedError()
