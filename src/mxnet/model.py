"""mx.model (MXNet 1.9.1's): checkpoints (defined in :mod:`mxnet.checkpoint`), the
KVStore/updater plumbing shared with mx.mod (:mod:`mxnet.kvstore.updates`), both
re-exported here under MXNet's names, and the legacy ``FeedForward`` estimator.
"""
import logging
from collections import namedtuple  # noqa: F401  (MXNet's mx.model exposes it)
import time
import warnings

import numpy as np

from . import io
from . import metric
from . import ndarray as nd
from . import optimizer as opt
from . import symbol as sym
from .base import MXNetError
from .callback import BatchEndParam, LogValidationMetricsCallback
from .checkpoint import save_checkpoint, load_params, load_checkpoint  # noqa: F401
from .context import Context, cpu
from .initializer import Uniform
from .optimizer import get_updater
from .module.executor_group import DataParallelExecutorGroup
from .kvstore.updates import (  # noqa: F401
    _create_kvstore, _initialize_kvstore, _update_params, _update_params_on_kvstore)

__all__ = ["BatchEndParam", "FeedForward", "save_checkpoint", "load_checkpoint",
           "load_params"]

BASE_ESTIMATOR = object


def _multiple_callbacks(callbacks, *args, **kwargs):
    """Call a callback, or each of a list of callbacks; None calls nothing."""
    if isinstance(callbacks, list):
        for cb in callbacks:
            cb(*args, **kwargs)
        return
    if callbacks:
        callbacks(*args, **kwargs)


def _check_arguments(symbol):
    """ValueError if the symbol has two arguments (or two aux states) of one name."""
    for names, what in ((symbol.list_arguments(), "argument name"),
                        (symbol.list_auxiliary_states(), "auxiliary param name")):
        seen = set()
        for name in names:
            if name in seen:
                raise ValueError(f'Find duplicated {what} "{name}", please make the weight '
                                 f"name non-duplicated(using name arguments), arguments "
                                 f"are {names}")
            seen.add(name)


# ------------------------------------------------------------------------ FeedForward
class FeedForward(BASE_ESTIMATOR):
    """The legacy model API (deprecated in MXNet in favour of ``mx.mod.Module``).

    Parameters
    ----------
    symbol : Symbol, or callable bucket_key -> Symbol
        The network (a callable gives a symbol per bucket key, for bucketing iterators).
    ctx : Context or list of Context, default cpu()
        Training devices (data parallel); prediction uses the first.
    num_epoch : int
        Epochs to train.
    epoch_size : int, optional
        Batches per epoch (default: one pass over the data).
    optimizer : str or Optimizer, default 'sgd'
    initializer : Initializer, default Uniform(0.01)
    numpy_batch_size : int, default 128
        Batch size used when fit/predict/score get NumPy arrays.
    arg_params, aux_params : dict of str to NDArray, optional
        Initial parameters (kept over the initializer).
    allow_extra_params : bool, default False
        Drop entries of arg_params/aux_params the symbol does not use.
    begin_epoch : int, default 0
    **kwargs
        Passed to the optimizer when it is created by name (``learning_rate``,
        ``momentum``, ``wd``, ...).
    """

    def __init__(self, symbol, ctx=None, num_epoch=None, epoch_size=None, optimizer="sgd",
                 initializer=Uniform(0.01), numpy_batch_size=128, arg_params=None,
                 aux_params=None, allow_extra_params=False, begin_epoch=0, **kwargs):
        warnings.warn("\033[91mmxnet.model.FeedForward has been deprecated. Please use "
                      "mxnet.mod.Module instead.\033[0m", DeprecationWarning, stacklevel=2)
        if isinstance(symbol, sym.Symbol):
            self.symbol, self.sym_gen = symbol, None
        else:
            if not callable(symbol):
                raise TypeError("symbol must be a Symbol or a callable bucket_key -> Symbol")
            self.symbol, self.sym_gen = None, symbol
        self.arg_params = arg_params
        self.aux_params = aux_params
        self.allow_extra_params = allow_extra_params
        self.argument_checked = False
        if self.sym_gen is None:
            self._check_arguments()
        if ctx is None:
            ctx = [cpu()]
        elif isinstance(ctx, Context):
            ctx = [ctx]
        self.ctx = ctx
        self.num_epoch = num_epoch
        self.epoch_size = epoch_size
        self.kwargs = kwargs.copy()
        self.optimizer = optimizer
        self.initializer = initializer
        self.numpy_batch_size = numpy_batch_size
        self._pred_exec = None
        self.begin_epoch = begin_epoch

    def _check_arguments(self):
        if self.argument_checked:
            return
        self.argument_checked = True
        _check_arguments(self.symbol)
        if self.allow_extra_params:
            if self.arg_params:
                names = set(self.symbol.list_arguments())
                self.arg_params = {k: v for k, v in self.arg_params.items() if k in names}
            if self.aux_params:
                names = set(self.symbol.list_auxiliary_states())
                self.aux_params = {k: v for k, v in self.aux_params.items() if k in names}

    @staticmethod
    def _is_data_arg(name):
        return name.endswith("data") or name.endswith("label")

    def _init_params(self, inputs, overwrite=False):
        """Create CPU arrays for every parameter and aux state, filled from the given
        arg_params/aux_params or else by the initializer."""
        inputs = [x if isinstance(x, io.DataDesc) else io.DataDesc(*x) for x in inputs]
        input_shapes = {d.name: d.shape for d in inputs}
        arg_shapes, _, aux_shapes = self.symbol.infer_shape(**input_shapes)
        if arg_shapes is None:
            raise MXNetError("FeedForward: cannot infer the parameter shapes from "
                             f"{input_shapes}")
        arg_types, _, aux_types = self.symbol.infer_type(
            **{d.name: d.dtype for d in inputs})
        arg_names = self.symbol.list_arguments()
        param_names = [n for n in arg_names if n not in input_shapes]
        aux_names = self.symbol.list_auxiliary_states()
        arg_params = {n: nd.zeros(s, dtype=t) for n, s, t in
                      zip(arg_names, arg_shapes, arg_types) if n in param_names}
        aux_params = {n: nd.zeros(s, dtype=t) for n, s, t in
                      zip(aux_names, aux_shapes, aux_types)}
        for new, old in ((arg_params, self.arg_params), (aux_params, self.aux_params)):
            for name, arr in new.items():
                if old and name in old and not overwrite:
                    arr[:] = old[name]
                else:
                    self.initializer(name, arr)
        self.arg_params, self.aux_params = arg_params, aux_params
        return arg_names, list(param_names), aux_names

    def __getstate__(self):
        state = self.__dict__.copy()
        state["_pred_exec"] = None
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)

    def _init_predictor(self, input_shapes, type_dict=None):
        """Bind (or reuse) a prediction executor on the first device."""
        shapes = {name: arr.shape for name, arr in self.arg_params.items()}
        shapes.update(dict(input_shapes))
        if self._pred_exec is not None:
            arg_shapes, _, _ = self.symbol.infer_shape(**shapes)
            if arg_shapes is None:
                raise MXNetError("FeedForward: incomplete input shapes")
            if arg_shapes == [x.shape for x in self._pred_exec.arg_arrays]:
                return
        pred_exec = self.symbol.simple_bind(self.ctx[0], grad_req="null",
                                            type_dict=type_dict, **shapes)
        pred_exec.copy_params_from(self.arg_params, self.aux_params)
        _check_arguments(self.symbol)
        self._pred_exec = pred_exec

    def _init_iter(self, X, y, is_train):
        """A DataIter for X (a DataIter already, or NumPy/NDArray data with labels y)."""
        if isinstance(X, (np.ndarray, nd.NDArray)):
            if y is None:
                if is_train:
                    raise ValueError("y must be specified when X is numpy.ndarray")
                y = np.zeros(X.shape[0])
            if not isinstance(y, (np.ndarray, nd.NDArray)):
                raise TypeError("y must be ndarray when X is numpy.ndarray")
            if X.shape[0] != y.shape[0]:
                raise ValueError("The numbers of data points and labels not equal")
            if y.ndim == 2 and y.shape[1] == 1:
                y = y.flatten()
            if y.ndim != 1:
                raise ValueError("Label must be 1D or 2D (with 2nd dimension being 1)")
            batch = min(X.shape[0], self.numpy_batch_size)
            if is_train:
                return io.NDArrayIter(X, y, batch, shuffle=True,
                                      last_batch_handle="roll_over")
            return io.NDArrayIter(X, y, batch, shuffle=False)
        if not isinstance(X, io.DataIter):
            raise TypeError("X must be DataIter, NDArray or numpy.ndarray")
        return X

    def _init_eval_iter(self, eval_data):
        if eval_data is None:
            return None
        if isinstance(eval_data, (tuple, list)) and len(eval_data) == 2:
            if eval_data[0] is None:
                raise ValueError("Eval data is NONE")
            if eval_data[1] is None and isinstance(eval_data[0], io.DataIter):
                return eval_data[0]
            data = np.array(eval_data[0]) if isinstance(eval_data[0], list) else eval_data[0]
            label = np.array(eval_data[1]) if isinstance(eval_data[1], list) else eval_data[1]
            return self._init_iter(data, label, is_train=True)
        if not isinstance(eval_data, io.DataIter):
            raise TypeError("Eval data must be DataIter, or NDArray/numpy.ndarray/list pair "
                            "(i.e. tuple/list of length 2)")
        return eval_data

    def _predict_setup(self, X):
        data_names = [x[0] for x in X.provide_data]
        type_dict = {k: v.dtype for k, v in self.arg_params.items()}
        for x in X.provide_data:
            type_dict[x[0]] = x.dtype if isinstance(x, io.DataDesc) else np.float32
        self._init_predictor(X.provide_data, type_dict)
        return [self._pred_exec.arg_dict[name] for name in data_names]

    def predict(self, X, num_batch=None, return_data=False, reset=True):
        """Run prediction on the first device. Returns a NumPy array (a list of them
        for several outputs); with return_data also the data and labels seen."""
        X = self._init_iter(X, None, is_train=False)
        if reset:
            X.reset()
        data_arrays = self._predict_setup(X)
        batch_size = X.batch_size
        outputs = [[] for _ in self._pred_exec.outputs]
        data_list = [[] for _ in X.provide_data] if return_data else None
        label_list = [[] for _ in X.provide_label] if return_data else None
        for i, batch in enumerate(X):
            _load_arrays(batch.data, data_arrays)
            self._pred_exec.forward(is_train=False)
            real = batch_size - batch.pad
            for o_list, out in zip(outputs, self._pred_exec.outputs):
                o_list.append(out[0:real].asnumpy())
            if return_data:
                for j, x in enumerate(batch.data):
                    data_list[j].append(x[0:real].asnumpy())
                for j, x in enumerate(batch.label):
                    label_list[j].append(x[0:real].asnumpy())
            if num_batch is not None and i + 1 == num_batch:
                break
        outputs = [np.concatenate(x) for x in outputs]
        if len(outputs) == 1:
            outputs = outputs[0]
        if not return_data:
            return outputs
        data = [np.concatenate(x) for x in data_list]
        label = [np.concatenate(x) for x in label_list]
        return (outputs, data[0] if len(data) == 1 else data,
                label[0] if len(label) == 1 else label)

    def score(self, X, eval_metric="acc", num_batch=None, batch_end_callback=None,
              reset=True):
        """The metric's value over X, computed on the first device."""
        if not isinstance(eval_metric, metric.EvalMetric):
            eval_metric = metric.create(eval_metric)
        X = self._init_iter(X, None, is_train=False)
        if reset:
            X.reset()
        data_arrays = self._predict_setup(X)
        for i, batch in enumerate(X):
            if num_batch is not None and i == num_batch:
                break
            _load_arrays(batch.data, data_arrays)
            self._pred_exec.forward(is_train=False)
            eval_metric.update(batch.label, self._pred_exec.outputs)
            if batch_end_callback is not None:
                _multiple_callbacks(batch_end_callback,
                                    BatchEndParam(epoch=0, nbatch=i, eval_metric=eval_metric,
                                                  locals=locals()))
        return eval_metric.get()[1]

    def fit(self, X, y=None, eval_data=None, eval_metric="acc", epoch_end_callback=None,
            batch_end_callback=None, kvstore="local", logger=None, work_load_list=None,
            monitor=None, eval_end_callback=LogValidationMetricsCallback(),
            eval_batch_end_callback=None):
        """Train on X (a DataIter, or NumPy/NDArray data with labels y).

        eval_data: a DataIter or a (data, label) pair, scored after every epoch; the
        default eval_end_callback logs ``Epoch[n] Validation-<metric>=<value>`` (None: no
        log).
        epoch_end_callback(epoch, symbol, arg_params, aux_params) and
        batch_end_callback(BatchEndParam) as in Module.fit.
        """
        data = self._init_iter(X, y, is_train=True)
        eval_data = self._init_eval_iter(eval_data)
        if self.sym_gen:
            self.symbol = self.sym_gen(data.default_bucket_key)
            self._check_arguments()
        self.kwargs["sym"] = self.symbol
        arg_names, param_names, aux_names = self._init_params(data.provide_data +
                                                              data.provide_label)
        if not isinstance(eval_metric, metric.EvalMetric):
            eval_metric = metric.create(eval_metric)
        kv, update_on_kvstore = _create_kvstore(kvstore, len(self.ctx), self.arg_params)
        idx2name = {}
        if update_on_kvstore:
            idx2name.update(enumerate(param_names))
        else:
            for i, n in enumerate(param_names):
                for k in range(len(self.ctx)):
                    idx2name[i * len(self.ctx) + k] = n
        self.kwargs["param_idx2name"] = idx2name
        if isinstance(self.optimizer, str):
            batch_size = data.batch_size
            if kv and "dist" in kv.type and "_async" not in kv.type:
                batch_size *= kv.num_workers
            optimizer = opt.create(self.optimizer, rescale_grad=1.0 / batch_size,
                                   **self.kwargs)
        elif isinstance(self.optimizer, opt.Optimizer):
            optimizer = self.optimizer
            if not optimizer.idx2name:
                optimizer.idx2name = idx2name.copy()
        else:
            raise TypeError("optimizer must be a str or an Optimizer")
        _FeedForwardTrainer(self, data, param_names, optimizer, kv, update_on_kvstore,
                            logger or logging, work_load_list, monitor).run(
            eval_data, eval_metric, epoch_end_callback, batch_end_callback,
            eval_end_callback, eval_batch_end_callback)

    def save(self, prefix, epoch=None, remove_amp_cast=True):
        """Write a checkpoint (``epoch`` defaults to num_epoch)."""
        if epoch is None:
            epoch = self.num_epoch
        if epoch is None:
            raise AssertionError("FeedForward.save needs an epoch")
        save_checkpoint(prefix, epoch, self.symbol, self.arg_params, self.aux_params,
                        remove_amp_cast=remove_amp_cast)

    @staticmethod
    def load(prefix, epoch, ctx=None, **kwargs):
        """A FeedForward from a checkpoint (begin_epoch=epoch); kwargs as __init__."""
        symbol, arg_params, aux_params = load_checkpoint(prefix, epoch)
        return FeedForward(symbol, ctx=ctx, arg_params=arg_params, aux_params=aux_params,
                           begin_epoch=epoch, **kwargs)

    @staticmethod
    def create(symbol, X, y=None, ctx=None, num_epoch=None, epoch_size=None,
               optimizer="sgd", initializer=Uniform(0.01), eval_data=None,
               eval_metric="acc", epoch_end_callback=None, batch_end_callback=None,
               kvstore="local", logger=None, work_load_list=None,
               eval_end_callback=LogValidationMetricsCallback(), eval_batch_end_callback=None,
               **kwargs):
        """Build a FeedForward and fit it (functional style)."""
        model = FeedForward(symbol, ctx=ctx, num_epoch=num_epoch, epoch_size=epoch_size,
                            optimizer=optimizer, initializer=initializer, **kwargs)
        model.fit(X, y, eval_data=eval_data, eval_metric=eval_metric,
                  epoch_end_callback=epoch_end_callback,
                  batch_end_callback=batch_end_callback, kvstore=kvstore, logger=logger,
                  work_load_list=work_load_list, eval_end_callback=eval_end_callback,
                  eval_batch_end_callback=eval_batch_end_callback)
        return model


def _load_arrays(sources, targets):
    for src, dst in zip(sources, targets):
        if isinstance(src, nd.NDArray):
            src.copyto(dst)
        else:
            dst[:] = src


class _FeedForwardTrainer:
    """FeedForward's training loop on one executor group per bucket (sharing the
    parameters of the default bucket's group)."""

    def __init__(self, model, data, param_names, optimizer, kv, update_on_kvstore, logger,
                 work_load_list, monitor):
        self._group_cls = DataParallelExecutorGroup
        self.model, self.data, self.param_names = model, data, param_names
        self.kv, self.update_on_kvstore = kv, update_on_kvstore
        self.logger, self.monitor = logger, monitor
        ctx = model.ctx
        self.work_load_list = work_load_list or [1] * len(ctx)
        if len(self.work_load_list) != len(ctx):
            raise MXNetError("Invalid settings for work load: work_load_list has "
                             f"{len(self.work_load_list)} entries for {len(ctx)} devices")
        self.groups = {}
        self.default_key = getattr(data, "default_bucket_key", None)
        self.group = self._group_for(self.default_key, data.provide_data, data.provide_label)
        self.group.set_params(model.arg_params, model.aux_params)
        self.updater = None
        if update_on_kvstore:
            kv.set_optimizer(optimizer)
        else:
            self.updater = get_updater(optimizer)
        if kv:
            _initialize_kvstore(kv, self.group.param_arrays, model.arg_params,
                                self.group.param_names, update_on_kvstore)

    def _group_for(self, key, data_shapes, label_shapes):
        group = self.groups.get(key)
        if group is not None:
            return group
        model = self.model
        symbol = model.symbol if key == self.default_key or model.sym_gen is None \
            else model.sym_gen(key)
        shared = self.groups.get(self.default_key)
        group = self._group_cls(symbol, model.ctx, self.work_load_list, data_shapes,
                                label_shapes, self.param_names, for_training=True,
                                inputs_need_grad=False, shared_group=shared,
                                logger=self.logger)
        if self.monitor is not None:
            group.install_monitor(self.monitor)
        self.groups[key] = group
        return group

    def _batch_group(self, batch):
        key = getattr(batch, "bucket_key", None)
        if self.model.sym_gen is None or key is None:
            group = self.group
        else:
            group = self._group_for(key, batch.provide_data, batch.provide_label)
        shapes = tuple(tuple(d.shape) for d in batch.data)
        if shapes != tuple(tuple(d.shape) for d in group.data_shapes):
            # e.g. an eval iterator with another batch size: reshape, sharing params
            data = [io.DataDesc(d.name, s, d.dtype, d.layout)
                    for d, s in zip(group.data_shapes, shapes)]
            label = None
            if group.label_shapes is not None and batch.label:
                label = [io.DataDesc(d.name, tuple(x.shape), d.dtype, d.layout)
                         for d, x in zip(group.label_shapes, batch.label)]
            group.reshape(data, label)
        return group

    def _step(self, group):
        n_dev = len(self.model.ctx)
        if self.update_on_kvstore:
            _update_params_on_kvstore(group.param_arrays, group.grad_arrays, self.kv,
                                      group.param_names)
        else:
            _update_params(group.param_arrays, group.grad_arrays, self.updater, n_dev,
                           self.kv, group.param_names)

    def run(self, eval_data, eval_metric, epoch_end_callback, batch_end_callback,
            eval_end_callback, eval_batch_end_callback):
        model, data, logger, monitor = self.model, self.data, self.logger, self.monitor
        epoch_size = model.epoch_size
        data.reset()
        for epoch in range(model.begin_epoch, model.num_epoch):
            tic = time.time()
            eval_metric.reset()
            nbatch = 0
            while True:
                do_reset = True
                for data_batch in data:
                    group = self._batch_group(data_batch)
                    if monitor is not None:
                        monitor.tic()
                    group.forward(data_batch, is_train=True)
                    group.backward()
                    self._step(group)
                    if monitor is not None:
                        monitor.toc_print()
                    group.update_metric(eval_metric, data_batch.label, False)
                    nbatch += 1
                    if batch_end_callback is not None:
                        _multiple_callbacks(batch_end_callback, BatchEndParam(
                            epoch=epoch, nbatch=nbatch, eval_metric=eval_metric,
                            locals=locals()))
                    if epoch_size is not None and nbatch >= epoch_size:
                        do_reset = False
                        break
                if do_reset:
                    logger.info("Epoch[%d] Resetting Data Iterator", epoch)
                    data.reset()
                if epoch_size is None or nbatch >= epoch_size:
                    break
            logger.info("Epoch[%d] Time cost=%.3f", epoch, time.time() - tic)
            if epoch_end_callback or epoch + 1 == model.num_epoch:
                self.group.get_params(model.arg_params, model.aux_params)
            _multiple_callbacks(epoch_end_callback, epoch, model.symbol, model.arg_params,
                                model.aux_params)
            if eval_data:
                self._evaluate(epoch, eval_data, eval_metric, eval_end_callback,
                               eval_batch_end_callback)

    def _evaluate(self, epoch, eval_data, eval_metric, eval_end_callback,
                  eval_batch_end_callback):
        eval_metric.reset()
        eval_data.reset()
        total = 0
        for i, eval_batch in enumerate(eval_data):
            group = self._batch_group(eval_batch)
            group.forward(eval_batch, is_train=False)
            group.update_metric(eval_metric, eval_batch.label, False)
            if eval_batch_end_callback is not None:
                _multiple_callbacks(eval_batch_end_callback, BatchEndParam(
                    epoch=epoch, nbatch=i, eval_metric=eval_metric, locals=locals()))
            total += 1
        if eval_end_callback is not None:
            _multiple_callbacks(eval_end_callback, BatchEndParam(
                epoch=epoch, nbatch=total, eval_metric=eval_metric, locals=locals()))
        eval_data.reset()


def __getattr__(name):
    # MXNet's mx.model exposes DataParallelExecutorManager; it lives with Module's
    # executor group, and mx.module imports this module, so it is looked up on use
    if name == "DataParallelExecutorManager":
        from .module.executor_manager import DataParallelExecutorManager
        return DataParallelExecutorManager
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
