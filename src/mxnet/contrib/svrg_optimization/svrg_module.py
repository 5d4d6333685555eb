"""SVRGModule: a Module trained with Stochastic Variance Reduced Gradient (MXNet
1.9.1's ``mx.contrib.svrg_optimization.svrg_module``).

SVRG (Johnson & Zhang, 2013) keeps a snapshot ``w~`` of the weights and the average
gradient ``mu`` over the whole training set at that snapshot, both refreshed every
``update_freq`` epochs (``update_full_grads``). Each mini-batch step then uses the
variance-reduced gradient

    g_i(w) - g_i(w~) + mu

in place of ``g_i(w)``; the configured optimizer (SGD by default) applies it.

The snapshot lives in a second Module, ``_mod_aux``, bound to the same symbol and
shapes: it runs forward/backward on the same batches as the main module to give
``g_i(w~)``. ``_param_dict[k][name]`` holds ``mu`` for parameter ``name`` on device
``k``. With a KVStore, the devices' (and workers') full gradients are summed through
extra keys ``<name>_full``, which ``_SVRGOptimizer`` assigns rather than optimises.
"""
import logging
import warnings

from ... import context as ctx
from ... import ndarray as nd
from ...base import InvalidArgumentType, MXNetError
from ...initializer import Uniform
from ...io import DataIter
from ...module import Module
from ...optimizer import Optimizer
from .svrg_optimizer import FULL_SUFFIX, _SVRGOptimizer

__all__ = ["SVRGModule"]


class SVRGModule(Module):
    """A Module that trains with SVRG-corrected gradients.

    Parameters
    ----------
    symbol : Symbol
    data_names : list of str, default ('data',)
    label_names : list of str, default ('softmax_label',)
    logger : Logger
    context : Context or list of Context, default cpu()
    work_load_list : list of number, optional
    fixed_param_names : list of str, optional
    state_names : list of str, optional
    group2ctxs : dict, optional
    compression_params : dict, optional
        As for :class:`mxnet.module.Module`.
    update_freq : int
        A positive integer: the full gradients (and the snapshot weights) are
        recomputed every ``update_freq`` epochs.

    Examples
    --------
    >>> mod = SVRGModule(symbol=lro, data_names=['data'], label_names=['lin_reg_label'],
    ...                  update_freq=2)
    >>> mod.fit(di, num_epoch=100, optimizer='sgd',
    ...         optimizer_params=(('learning_rate', 0.025),))
    """

    def __init__(self, symbol, data_names=("data",), label_names=("softmax_label",),
                 logger=logging, context=ctx.cpu(), work_load_list=None,
                 fixed_param_names=None, state_names=None, group2ctxs=None,
                 compression_params=None, update_freq=None):
        super().__init__(symbol, data_names=data_names, label_names=label_names,
                         logger=logger, context=context, work_load_list=work_load_list,
                         fixed_param_names=fixed_param_names, state_names=state_names,
                         group2ctxs=group2ctxs, compression_params=compression_params)
        if isinstance(update_freq, bool) or not isinstance(update_freq, int) \
                or update_freq <= 0:
            raise InvalidArgumentType(
                f"update_freq in SVRGModule must be a positive integer to represent the "
                f"frequency for calculating full gradients, got {update_freq!r}")
        self.update_freq = update_freq
        # the snapshot module: same network, its own copy of the weights
        self._mod_aux = Module(symbol, data_names=data_names, label_names=label_names,
                               logger=logger, context=context,
                               work_load_list=work_load_list,
                               fixed_param_names=fixed_param_names,
                               state_names=state_names, group2ctxs=group2ctxs,
                               compression_params=compression_params)
        self._param_dict = None
        self._ctx_len = len(self._context)
        # whether the snapshot module saw the last forward's batch (then backward
        # corrects the gradients)
        self._aux_forwarded = False

    # ------------------------------------------------------------- binding
    def _reset_bind(self):
        super()._reset_bind()
        self._mod_aux._reset_bind()

    def bind(self, data_shapes, label_shapes=None, for_training=True,
             inputs_need_grad=False, force_rebind=False, shared_module=None,
             grad_req="write"):
        """Bind the module and, for training, the snapshot module with the same shapes.

        ``shared_module`` is shared by the main module only: the snapshot module must
        keep weights of its own.
        """
        super().bind(data_shapes, label_shapes=label_shapes, for_training=for_training,
                     inputs_need_grad=inputs_need_grad, force_rebind=force_rebind,
                     shared_module=shared_module, grad_req=grad_req)
        if for_training:
            self._mod_aux.bind(data_shapes, label_shapes=label_shapes,
                               for_training=for_training,
                               inputs_need_grad=inputs_need_grad,
                               force_rebind=force_rebind, grad_req=grad_req)
            if self.params_initialized:
                self._init_snapshot()

    def reshape(self, data_shapes, label_shapes=None):
        """Reshape both modules for new input shapes."""
        super().reshape(data_shapes, label_shapes=label_shapes)
        if self._mod_aux.binded:
            self._mod_aux.reshape(data_shapes, label_shapes=label_shapes)

    def init_params(self, initializer=Uniform(0.01), arg_params=None, aux_params=None,
                    allow_missing=False, force_init=False, allow_extra=False):
        """Initialise the parameters (see :meth:`Module.init_params`); the snapshot
        module starts from the same values."""
        if self.params_initialized and not force_init:
            warnings.warn("Parameters already initialized and force_init=False. "
                          "init_params call ignored.", stacklevel=2)
            return
        super().init_params(initializer=initializer, arg_params=arg_params,
                            aux_params=aux_params, allow_missing=allow_missing,
                            force_init=force_init, allow_extra=allow_extra)
        self._init_snapshot()

    def _init_snapshot(self):
        # Only the first time: later set_params calls (fit syncs the devices after
        # every epoch) must not move the snapshot away from the weights its full
        # gradients were computed at.
        if self._mod_aux.binded and not self._mod_aux.params_initialized \
                and self.params_initialized:
            self._mod_aux.set_params(*self.get_params())

    # ------------------------------------------------------------- optimizer
    def init_optimizer(self, kvstore="local", optimizer="sgd",
                       optimizer_params=(("learning_rate", 0.01),), force_init=False):
        """Install an ``_SVRGOptimizer`` wrapping ``optimizer`` (a name or an
        Optimizer) and, with a KVStore, a key ``<name>_full`` per parameter through
        which full gradients are summed.

        Parameters
        ----------
        kvstore : str or KVStore, default 'local'
        optimizer : str or Optimizer, default 'sgd'
            The optimizer of the parameters (applied to the SVRG gradients).
        optimizer_params : dict or tuple of pairs, default (('learning_rate', 0.01),)
        force_init : bool, default False
            Re-initialise an already installed optimizer.
        """
        if self.optimizer_initialized and not force_init:
            super().init_optimizer(kvstore=kvstore, force_init=False)  # warns, returns
            return
        if not isinstance(optimizer, (str, Optimizer)):
            raise MXNetError("optimizer must be a str or an mx.optimizer.Optimizer")
        params = dict(optimizer_params)
        if "default_optimizer" in params:
            raise MXNetError("SVRGModule.init_optimizer: pass the optimizer as "
                             "`optimizer`, not as optimizer_params['default_optimizer']")
        # Module creates the wrapper by name: it gets the same rescale_grad, sym and
        # param_idx2name a plain Module's optimizer would.
        params["default_optimizer"] = optimizer
        super().init_optimizer(kvstore=kvstore, optimizer=_SVRGOptimizer.__name__,
                               optimizer_params=params, force_init=force_init)
        svrg_opt = self._optimizer
        if isinstance(optimizer, Optimizer):
            if optimizer.rescale_grad != svrg_opt.rescale_grad:
                warnings.warn("Optimizer created manually outside Module but "
                              "rescale_grad is not normalized to "
                              "1.0/batch_size/num_workers (%s vs. %s). Is this intended?"
                              % (optimizer.rescale_grad, svrg_opt.rescale_grad),
                              stacklevel=2)
            if not optimizer.idx2name:
                optimizer.idx2name = dict(svrg_opt.idx2name)
        self._add_full_names(svrg_opt.idx2name)
        if isinstance(optimizer, str):       # the wrapper made it: same names as its own
            self._add_full_names(svrg_opt.default_opt.idx2name)

        group = self._exec_group
        self._param_dict = [
            {name: nd.zeros(group.param_arrays[i][k].shape,
                            ctx=group.param_arrays[i][k].context,
                            dtype=group.param_arrays[i][k].dtype)
             for i, name in enumerate(group.param_names)}
            for k in range(self._ctx_len)]
        if self._kvstore:
            for name in group.param_names:
                self._kvstore.init(name + FULL_SUFFIX,
                                   nd.zeros(self._arg_params[name].shape,
                                            dtype=self._arg_params[name].dtype))

    def _add_full_names(self, idx2name):
        """Give each parameter's ``_full`` key an index after the existing ones."""
        for name in self._exec_group.param_names:
            idx2name[max(idx2name, default=-1) + 1] = name + FULL_SUFFIX

    # ----------------------------------------------------------- computation
    def forward(self, data_batch, is_train=None):
        """Forward the batch. With ``is_train=True`` (as ``forward_backward`` and
        ``fit`` pass) the snapshot module forwards it too, so that the next
        ``backward`` produces SVRG gradients; other forwards leave the gradients
        plain, as MXNet's SVRGModule does."""
        super().forward(data_batch, is_train)
        self._aux_forwarded = bool(is_train) and self._mod_aux.binded
        if self._aux_forwarded:
            self._mod_aux.forward(data_batch, is_train=True)

    def backward(self, out_grads=None):
        """Backward; after a training forward also on the snapshot module, then each
        gradient becomes the SVRG gradient ``g_i(w) - g_i(w_snapshot) + mu`` (once
        the optimizer, and so ``mu``, is installed)."""
        super().backward(out_grads)
        if self._aux_forwarded:
            self._mod_aux.backward(out_grads)
            if self._param_dict is not None:
                self._update_svrg_gradients()

    def _update_svrg_gradients(self):
        """Turn the main module's gradients, in place, into SVRG gradients."""
        group, aux_group = self._exec_group, self._mod_aux._exec_group
        for k in range(self._ctx_len):
            for i, name in enumerate(group.param_names):
                grad = group.grad_arrays[i][k]
                if grad is None:                 # a fixed parameter
                    continue
                self._svrg_grads_update_rule([grad], [aux_group.grad_arrays[i][k]],
                                             [self._param_dict[k][name]])

    @staticmethod
    def _svrg_grads_update_rule(g_curr_batch_curr_weight, g_curr_batch_special_weight,
                                g_special_weight_all_batch):
        """In place: each ``g_curr_batch_curr_weight[i] += g_special_weight_all_batch[i]
        - g_curr_batch_special_weight[i]``; returns the list."""
        for grad, snap_grad, full_grad in zip(g_curr_batch_curr_weight,
                                              g_curr_batch_special_weight,
                                              g_special_weight_all_batch):
            grad -= snap_grad
            grad += full_grad
        return g_curr_batch_curr_weight

    def prepare(self, data_batch, sparse_row_id_fn=None):
        """Prepare both modules for the next batch."""
        super().prepare(data_batch, sparse_row_id_fn=sparse_row_id_fn)
        if self._mod_aux.binded:
            self._mod_aux.prepare(data_batch, sparse_row_id_fn=sparse_row_id_fn)

    # -------------------------------------------------------- full gradients
    def update_full_grads(self, train_data):
        """Take a new snapshot of the weights and compute ``mu``, the gradient at the
        snapshot averaged over all batches of ``train_data`` (padding discounted).
        With a KVStore, the devices' and workers' results are summed through the
        ``_full`` keys.

        Parameters
        ----------
        train_data : DataIter
            The training data; it is reset before and left exhausted after.
        """
        if self._param_dict is None:
            raise MXNetError("SVRGModule.update_full_grads: call init_optimizer (or fit) "
                             "first")
        if not self._mod_aux.binded:
            raise MXNetError("SVRGModule.update_full_grads: the module must be bound "
                             "for training")
        param_names = self._exec_group.param_names
        self._mod_aux.set_params(*self.get_params())
        for per_device in self._param_dict:
            for full_grad in per_device.values():
                full_grad[:] = 0
        train_data.reset()
        nbatch = 0
        padding = 0
        for batch in train_data:
            self._mod_aux.forward(batch, is_train=True)
            self._mod_aux.backward()
            aux_grads = self._mod_aux._exec_group.grad_arrays
            for k in range(self._ctx_len):
                for i, name in enumerate(param_names):
                    if aux_grads[i][k] is not None:
                        self._param_dict[k][name] += aux_grads[i][k]
            nbatch += 1
            padding += batch.pad or 0
        if nbatch == 0:
            raise MXNetError("SVRGModule.update_full_grads: train_data yielded no batch")
        batch_size = getattr(train_data, "batch_size", 0) or self._exec_group.batch_size
        # padded examples repeat real ones; count only the real fraction of a batch
        num_batch = nbatch - padding / batch_size
        for name in param_names:
            grad_list = []
            for per_device in self._param_dict:
                per_device[name] /= num_batch
                grad_list.append(per_device[name])
            if self._kvstore:
                self._accumulate_kvstore(name, grad_list)

    def _accumulate_kvstore(self, key, value):
        """Sum the full gradients of ``key`` (one per device) over devices and
        workers through the store, then share the sum out again."""
        self._kvstore.push(key + FULL_SUFFIX, value)
        self._kvstore._barrier()
        self._kvstore.pull(key + FULL_SUFFIX, value)
        self._allocate_gradients(key, value)

    def _allocate_gradients(self, key, value):
        """Give each device its share of the summed full gradient: every device (of
        every worker) adds its share to the gradient it pushes, so the shares sum
        back to the total once the store adds the pushes up."""
        shares = self._ctx_len * self._kvstore.num_workers
        for k in range(self._ctx_len):
            self._param_dict[k][key] = value[k] / shares

    # --------------------------------------------------------------- training
    def fit(self, train_data, eval_data=None, eval_metric="acc", epoch_end_callback=None,
            batch_end_callback=None, kvstore="local", optimizer="sgd",
            optimizer_params=(("learning_rate", 0.01),), eval_end_callback=None,
            eval_batch_end_callback=None, initializer=Uniform(0.01), arg_params=None,
            aux_params=None, allow_missing=False, force_rebind=False, force_init=False,
            begin_epoch=0, num_epoch=None, validation_metric=None, monitor=None,
            sparse_row_id_fn=None):
        """Train as :meth:`BaseModule.fit` does, recomputing the full gradients at
        the start of every epoch that is a multiple of ``update_freq``."""
        super().fit(_FullGradientEpochs(self, train_data, begin_epoch),
                    eval_data=eval_data, eval_metric=eval_metric,
                    epoch_end_callback=epoch_end_callback,
                    batch_end_callback=batch_end_callback, kvstore=kvstore,
                    optimizer=optimizer, optimizer_params=optimizer_params,
                    eval_end_callback=eval_end_callback,
                    eval_batch_end_callback=eval_batch_end_callback,
                    initializer=initializer, arg_params=arg_params,
                    aux_params=aux_params, allow_missing=allow_missing,
                    force_rebind=force_rebind, force_init=force_init,
                    begin_epoch=begin_epoch, num_epoch=num_epoch,
                    validation_metric=validation_metric, monitor=monitor,
                    sparse_row_id_fn=sparse_row_id_fn)


class _FullGradientEpochs(DataIter):
    """The training data as BaseModule.fit sees it: fit starts every epoch with
    ``iter(train_data)``, so that is where SVRG's per-epoch step (new snapshot and
    full gradients every ``update_freq`` epochs) runs; everything else is the
    wrapped iterator's."""

    def __init__(self, module, data, begin_epoch):
        super().__init__(getattr(data, "batch_size", 0))
        self._module = module
        self._data = data
        self._epoch = begin_epoch

    def __iter__(self):
        if self._epoch % self._module.update_freq == 0:
            self._module.update_full_grads(self._data)
            self._data.reset()
        self._epoch += 1
        return self

    @property
    def provide_data(self):
        return self._data.provide_data

    @property
    def provide_label(self):
        return self._data.provide_label

    def reset(self):
        self._data.reset()

    def next(self):
        return next(self._data)
