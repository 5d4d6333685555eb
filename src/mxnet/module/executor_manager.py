"""``DataParallelExecutorManager``: the executor helper of MXNet's legacy FeedForward
training loop (one executor per device, the batch split by ``work_load_list``), kept for
code written against ``mx.model``. It is a thin layer over Module's
:class:`~mxnet.module.executor_group.DataParallelExecutorGroup` (``mx.model`` exposes
it), which does the
binding, slicing and merging; with ``sym_gen`` each bucket key gets its own group
sharing the parameters of the default one."""
import logging

from ..base import MXNetError
from .executor_group import DataParallelExecutorGroup

__all__ = ["DataParallelExecutorManager"]


class DataParallelExecutorManager:
    """Executors for ``symbol`` on every context in ``ctx``, shaped from
    ``train_data.provide_data``/``provide_label``.

    Parameters
    ----------
    symbol : Symbol
    ctx : list of Context
    train_data : DataIter
    arg_names, param_names, aux_names : list of str
        The symbol's arguments, the learnable ones among them, its auxiliary states.
    work_load_list : list of number, optional
        Relative share of each batch per context (equal shares by default).
    logger : Logger, optional
    sym_gen : callable bucket_key -> Symbol, optional
        For bucketing data iterators (``train_data.default_bucket_key``).
    """

    def __init__(self, symbol, ctx, train_data, arg_names, param_names, aux_names,
                 work_load_list=None, logger=None, sym_gen=None):
        self.logger = logger or logging
        ctx = list(ctx) if isinstance(ctx, (list, tuple)) else [ctx]
        if work_load_list is None:
            work_load_list = [1] * len(ctx)
        if len(work_load_list) != len(ctx):
            raise MXNetError(f"DataParallelExecutorManager: work_load_list has "
                             f"{len(work_load_list)} entries for {len(ctx)} contexts")
        if list(symbol.list_arguments()) != list(arg_names):
            raise MXNetError("DataParallelExecutorManager: arg_names differ from the "
                             "symbol's arguments")
        self.ctx, self.arg_names = ctx, arg_names
        self.param_names, self.aux_names = param_names, aux_names
        self.symbol, self.sym_gen = symbol, sym_gen
        self._shapes = (train_data.provide_data, train_data.provide_label)
        self._work_load = work_load_list
        self.execgrp = self._group(symbol, None)
        self.slices = self.execgrp.slices
        self.execgrp_bucket = {}
        if sym_gen is not None:
            self.execgrp_bucket[train_data.default_bucket_key] = self.execgrp
        self.curr_execgrp = None

    def _group(self, symbol, shared):
        data, label = self._shapes
        return DataParallelExecutorGroup(symbol, self.ctx, self._work_load, data, label,
                                         self.param_names, for_training=True,
                                         inputs_need_grad=False, shared_group=shared,
                                         logger=self.logger)

    def install_monitor(self, monitor):
        """Install ``monitor`` on every executor (of every bucket)."""
        if self.sym_gen is not None:
            raise NotImplementedError("DataParallelExecutorManager.install_monitor: "
                                      "monitoring bucketing executors is not supported")
        self.execgrp.install_monitor(monitor)

    def set_params(self, arg_params, aux_params):
        """Copy the parameter values (dicts name -> NDArray) onto every device."""
        self.execgrp.set_params(arg_params, aux_params)

    def copy_to(self, arg_params, aux_params):
        """Write each parameter's average over the devices into ``arg_params`` and
        ``aux_params`` (dicts name -> NDArray, updated in place)."""
        self.execgrp.get_params(arg_params, aux_params)

    @property
    def param_arrays(self):
        """Per parameter, its array on each device."""
        return self.execgrp.param_arrays

    @property
    def grad_arrays(self):
        """Per parameter, its gradient on each device."""
        return self.execgrp.grad_arrays

    @property
    def aux_arrays(self):
        """Per auxiliary state, its array on each device."""
        return self.execgrp.aux_arrays

    def load_data_batch(self, data_batch):
        """Select the executors for the batch's bucket and load its data and labels."""
        if self.sym_gen is not None:
            key = data_batch.bucket_key
            if key not in self.execgrp_bucket:
                self.execgrp_bucket[key] = self._group(self.sym_gen(key), self.execgrp)
            self.curr_execgrp = self.execgrp_bucket[key]
        else:
            self.curr_execgrp = self.execgrp
        self._batch = data_batch

    def _current(self):
        if self.curr_execgrp is None:
            raise MXNetError("DataParallelExecutorManager: call load_data_batch first")
        return self.curr_execgrp

    def forward(self, is_train=False):
        """Forward on every device with the loaded batch."""
        self._current().forward(self._batch, is_train=is_train)

    def backward(self):
        """Backward on every device (the outputs must be loss heads)."""
        self._current().backward()

    def update_metric(self, metric, labels, pre_sliced=False):
        """Update ``metric`` with every device's outputs and its slice of ``labels``."""
        self._current().update_metric(metric, labels, pre_sliced)
