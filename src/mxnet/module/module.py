"""Module: a Symbol bound to one or more devices, with parameters, an optimizer and
a KVStore (MXNet 1.9.1's ``mx.mod.Module``).

The Module keeps a CPU copy of every parameter (``_arg_params``/``_aux_params``)
and a DataParallelExecutorGroup whose executors hold the working copies. After
``update`` the working copies are ahead (``_params_dirty``) until ``get_params``
syncs them back. Updates go through the KVStore as MXNet's do: with one device and a
string kvstore no store is created and a local Updater runs the optimizer; with
several devices a 'local' store sums the gradients and, by default, runs the
optimizer itself (``update_on_kvstore``).
"""
import logging
import warnings

from .. import context as ctx
from .. import ndarray as nd
from .. import optimizer as opt
from ..atomic_file import together, write_bytes
from ..base import InvalidArgument, MXNetError
from ..initializer import InitDesc, Uniform
from .. import io as _io
from ..checkpoint import load_checkpoint
from ..kvstore.updates import (_create_kvstore, _initialize_kvstore, _update_params,
                               _update_params_on_kvstore)
from .base_module import BaseModule, _checked_input_names, _parse_data_desc
from .executor_group import DataParallelExecutorGroup

__all__ = ["Module"]


class Module(BaseModule):
    """A module over a Symbol.

    Parameters
    ----------
    symbol : Symbol
    data_names : list of str, default ('data',)
    label_names : list of str, default ('softmax_label',)
        May be None or empty for a network without labels.
    logger : Logger
    context : Context or list of Context, default cpu()
        Several contexts train data parallel: each gets a slice of every batch.
    work_load_list : list of number, optional
        Relative batch share per context (default equal).
    fixed_param_names : list of str, optional
        Parameters that are not updated.
    state_names : list of str, optional
        Inputs that are not data or labels but states (set with set_states).
    group2ctxs : dict, optional
        ctx_group placement (only each device's own context is supported).
    compression_params : dict, optional
        Gradient compression for the KVStore (``{'type': '2bit', 'threshold': t}``).
    """

    def __init__(self, symbol, data_names=("data",), label_names=("softmax_label",),
                 logger=logging, context=ctx.cpu(), work_load_list=None,
                 fixed_param_names=None, state_names=None, group2ctxs=None,
                 compression_params=None):
        super().__init__(logger=logger)
        if isinstance(context, ctx.Context):
            context = [context]
        self._context = context
        if work_load_list is None:
            work_load_list = [1] * len(self._context)
        if len(work_load_list) != len(self._context):
            raise MXNetError(f"work_load_list has {len(work_load_list)} entries for "
                             f"{len(self._context)} contexts")
        self._work_load_list = work_load_list
        self._group2ctxs = group2ctxs
        self._symbol = symbol

        data_names, label_names, state_names, fixed_param_names = _checked_input_names(
            symbol, data_names, label_names, state_names, fixed_param_names)

        arg_names = symbol.list_arguments()
        input_names = data_names + label_names + state_names
        self._param_names = [x for x in arg_names if x not in input_names]
        self._fixed_param_names = fixed_param_names
        self._aux_names = symbol.list_auxiliary_states()
        self._data_names = data_names
        self._label_names = label_names
        self._state_names = state_names
        self._output_names = symbol.list_outputs()

        self._arg_params = None
        self._aux_params = None
        self._params_dirty = False
        self._compression_params = compression_params
        self._optimizer = None
        self._kvstore = None
        self._update_on_kvstore = None
        self._updater = None
        self._preload_opt_states = None
        self._grad_req = None
        self._exec_group = None
        self._data_shapes = None
        self._label_shapes = None

    @staticmethod
    def load(prefix, epoch, load_optimizer_states=False, **kwargs):
        """A Module from a checkpoint (``prefix-symbol.json``, ``prefix-%04d.params``
        and, with load_optimizer_states, ``prefix-%04d.states`` applied at
        init_optimizer). kwargs go to Module (data_names, context, ...)."""
        symbol, args, auxs = load_checkpoint(prefix, epoch)
        mod = Module(symbol=symbol, **kwargs)
        mod._arg_params = args
        mod._aux_params = auxs
        mod.params_initialized = True
        if load_optimizer_states:
            mod._preload_opt_states = "%s-%04d.states" % (prefix, epoch)
        return mod

    def save_checkpoint(self, prefix, epoch, save_optimizer_states=False,
                        remove_amp_cast=True):
        """Write ``prefix-symbol.json``, ``prefix-%04d.params`` and, optionally,
        ``prefix-%04d.states``."""
        with together():      # the files replace the old ones together
            self._symbol.save(f"{prefix}-symbol.json", remove_amp_cast=remove_amp_cast)
            param_name = "%s-%04d.params" % (prefix, epoch)
            self.save_params(param_name)
            logging.info('Saved checkpoint to "%s"', param_name)
            if save_optimizer_states:
                state_name = "%s-%04d.states" % (prefix, epoch)
                self.save_optimizer_states(state_name)
                logging.info('Saved optimizer state to "%s"', state_name)

    def _reset_bind(self):
        self.binded = False
        self._exec_group = None
        self._data_shapes = None
        self._label_shapes = None

    # ------------------------------------------------------------- properties
    @property
    def data_names(self):
        return self._data_names

    @property
    def label_names(self):
        return self._label_names

    @property
    def output_names(self):
        return self._output_names

    @property
    def data_shapes(self):
        assert self.binded
        return self._data_shapes

    @property
    def label_shapes(self):
        assert self.binded
        return self._label_shapes

    @property
    def output_shapes(self):
        assert self.binded
        return self._exec_group.get_output_shapes()

    # ------------------------------------------------------------- parameters
    def get_params(self):
        """(arg_params, aux_params) on the CPU, synced from the devices if stale."""
        assert self.params_initialized
        if self._params_dirty:
            self._sync_params_from_devices()
        return self._arg_params, self._aux_params

    def init_params(self, initializer=Uniform(0.01), arg_params=None, aux_params=None,
                    allow_missing=False, force_init=False, allow_extra=False):
        """Initialise parameters and aux states, in name order: values from arg_params
        / aux_params when given (a missing one is an error unless allow_missing, then
        the initializer fills it), else the initializer."""
        if self.params_initialized and not force_init:
            warnings.warn("Parameters already initialized and force_init=False. "
                          "init_params call ignored.", stacklevel=2)
            return
        assert self.binded, "call bind before initializing the parameters"

        def _impl(name, arr, cache):
            if cache is not None:
                if name in cache:
                    src = cache[name]
                    if src is not arr:
                        if isinstance(src, nd.NDArray):
                            src.copyto(arr)
                        else:
                            arr[:] = src
                    return
                if not allow_missing:
                    raise RuntimeError(f"{name} is not presented")
                if initializer is not None:
                    initializer(name, arr)
            else:
                initializer(name, arr)

        attrs = self._symbol.attr_dict()
        for params, given in ((self._arg_params, arg_params), (self._aux_params, aux_params)):
            for name, arr in sorted(params.items()):
                _impl(InitDesc(name, attrs.get(name, None)), arr, given)
        self.params_initialized = True
        self._params_dirty = False
        self._exec_group.set_params(self._arg_params, self._aux_params,
                                    allow_extra=allow_extra)

    def set_params(self, arg_params, aux_params, allow_missing=False, force_init=True,
                   allow_extra=False):
        """Assign parameter values (copied to every device)."""
        self._set_params_direct(
            lambda: self._exec_group.set_params(arg_params, aux_params,
                                                allow_extra=allow_extra),
            arg_params, aux_params, allow_missing, force_init, allow_extra)

    def _sync_params_from_devices(self):
        self._exec_group.get_params(self._arg_params, self._aux_params)
        self._params_dirty = False

    # ---------------------------------------------------------------- binding
    def bind(self, data_shapes, label_shapes=None, for_training=True,
             inputs_need_grad=False, force_rebind=False, shared_module=None,
             grad_req="write"):
        """Bind executors for data_shapes/label_shapes (lists of DataDesc or (name,
        shape)); shared_module shares its parameters (and memory) with this one."""
        if force_rebind:
            self._reset_bind()
        if self.binded:
            self.logger.warning("Already bound, ignoring bind()")
            return
        self.for_training = for_training
        self.inputs_need_grad = inputs_need_grad
        self._grad_req = grad_req
        if not for_training and inputs_need_grad:
            raise MXNetError("inputs_need_grad=True needs for_training=True")
        self._data_shapes, self._label_shapes = _parse_data_desc(
            self.data_names, self.label_names, data_shapes, label_shapes)

        shared_group = None
        if shared_module is not None:
            if not (isinstance(shared_module, Module) and shared_module.binded
                    and shared_module.params_initialized):
                raise MXNetError("shared_module must be a bound Module with initialized "
                                 "parameters")
            shared_group = shared_module._exec_group
            if len(shared_group.execs) < len(self._context):
                raise MXNetError("shared_module has fewer devices than this module")

        self._exec_group = DataParallelExecutorGroup(
            self._symbol, self._context, self._work_load_list, self._data_shapes,
            self._label_shapes, self._param_names, for_training, inputs_need_grad,
            shared_group, logger=self.logger, fixed_param_names=self._fixed_param_names,
            grad_req=grad_req, group2ctxs=self._group2ctxs, state_names=self._state_names)
        self._total_exec_bytes = self._exec_group._total_exec_bytes
        if shared_module is not None:
            self.params_initialized = True
            self._arg_params = shared_module._arg_params
            self._aux_params = shared_module._aux_params
        elif self.params_initialized:
            # re-binding (or Module.load): push the known values to the new executors
            self._exec_group.set_params(self._arg_params, self._aux_params)
        else:
            assert self._arg_params is None and self._aux_params is None
            self._arg_params = {name: nd.zeros(block[0].shape, dtype=block[0].dtype,
                                               stype=block[0].stype)
                                for name, block in zip(self._param_names,
                                                       self._exec_group.param_arrays)}
            self._aux_params = {name: nd.zeros(block[0].shape, dtype=block[0].dtype)
                                for name, block in zip(self._aux_names,
                                                       self._exec_group.aux_arrays)}
        if shared_module is not None and shared_module.optimizer_initialized:
            self.borrow_optimizer(shared_module)
        self.binded = True

    def reshape(self, data_shapes, label_shapes=None):
        """Reshape the bound executors for new input shapes (parameters kept)."""
        assert self.binded
        self._data_shapes, self._label_shapes = _parse_data_desc(
            self.data_names, self.label_names, data_shapes, label_shapes)
        self._exec_group.reshape(self._data_shapes, self._label_shapes)

    # --------------------------------------------------------------- optimizer
    def init_optimizer(self, kvstore="local", optimizer="sgd",
                       optimizer_params=(("learning_rate", 0.01),), force_init=False):
        """Create the KVStore and the optimizer.

        A str optimizer is created with ``rescale_grad = 1/batch_size`` (unless
        optimizer_params sets it), ``sym`` and ``param_idx2name``.
        """
        assert self.binded and self.params_initialized
        if self.optimizer_initialized and not force_init:
            self.logger.warning("optimizer already initialized, ignoring...")
            return
        if self._params_dirty:
            self._sync_params_from_devices()

        kvstore, update_on_kvstore = _create_kvstore(kvstore, len(self._context),
                                                     self._arg_params)
        batch_size = self._exec_group.batch_size
        if kvstore and "dist" in kvstore.type and "_sync" in kvstore.type:
            batch_size *= kvstore.num_workers
        rescale_grad = 1.0 / batch_size

        idx2name = {}
        names = self._exec_group.param_names
        if update_on_kvstore:
            idx2name.update(enumerate(names))
        else:
            n = len(self._context)
            for k in range(n):
                idx2name.update({i * n + k: name for i, name in enumerate(names)})
        if isinstance(optimizer, str):
            optimizer_params = dict(optimizer_params)
            optimizer_params.setdefault("rescale_grad", rescale_grad)
            optimizer = opt.create(optimizer, sym=self.symbol, param_idx2name=idx2name,
                                   **optimizer_params)
        else:
            if not isinstance(optimizer, opt.Optimizer):
                raise MXNetError("optimizer must be a str or an mx.optimizer.Optimizer")
            if optimizer.rescale_grad != rescale_grad:
                warnings.warn("Optimizer created manually outside Module but rescale_grad "
                              "is not normalized to 1.0/batch_size/num_workers (%s vs. %s). "
                              "Is this intended?" % (optimizer.rescale_grad, rescale_grad),
                              stacklevel=2)
            if not optimizer.idx2name:
                optimizer.idx2name = idx2name.copy()

        self._optimizer = optimizer
        self._kvstore = kvstore
        self._update_on_kvstore = update_on_kvstore
        self._updater = None
        if kvstore:
            if self._compression_params:
                kvstore.set_gradient_compression(self._compression_params)
            if update_on_kvstore:
                kvstore.set_optimizer(self._optimizer)
            _initialize_kvstore(kvstore=kvstore, param_arrays=self._exec_group.param_arrays,
                                arg_params=self._arg_params, param_names=self._param_names,
                                update_on_kvstore=update_on_kvstore)
        if not update_on_kvstore:
            self._updater = opt.get_updater(optimizer)
        self.optimizer_initialized = True
        if self._preload_opt_states is not None:
            self.load_optimizer_states(self._preload_opt_states)
            self._preload_opt_states = None

    def borrow_optimizer(self, shared_module):
        """Use shared_module's optimizer, KVStore and updater (bucketing)."""
        assert shared_module.optimizer_initialized
        self._optimizer = shared_module._optimizer
        self._kvstore = shared_module._kvstore
        self._update_on_kvstore = shared_module._update_on_kvstore
        self._updater = shared_module._updater
        self.optimizer_initialized = True

    # ------------------------------------------------------------ computation
    def forward(self, data_batch, is_train=None):
        """Forward on a DataBatch (or a list of them, one per device). A batch of
        other shapes than bound reshapes the executors first."""
        assert self.binded and self.params_initialized
        curr = tuple(tuple(d.shape) for d in self._data_shapes)
        if isinstance(data_batch, list):
            if not data_batch:
                raise MXNetError("Encountered empty data batch")
            new = []
            for i in range(len(data_batch[0].data)):
                shape = tuple(data_batch[0].data[i].shape)
                for db in data_batch:
                    if tuple(db.data[i].shape) != shape:
                        raise MXNetError("All data batches in a list need to have the "
                                         "same shape")
                new.append((len(data_batch) * shape[0],) + shape[1:])
            new = tuple(new)
        else:
            new = tuple(tuple(d.shape) for d in data_batch.data)
        if len(new) != len(self._data_names):
            raise InvalidArgument(f"Module.forward: the batch holds {len(new)} data arrays "
                                  f"but the module was bound with data_names "
                                  f"{list(self._data_names)}")
        if curr != new:
            provide_data = getattr(data_batch, "provide_data", None)
            if provide_data:
                new_dshape = provide_data
            else:
                new_dshape = [_io.DataDesc(d.name, shape, d.dtype, d.layout)
                              for d, shape in zip(self._data_shapes, new)]
            provide_label = getattr(data_batch, "provide_label", None)
            labels = getattr(data_batch, "label", None)
            if provide_label:
                new_lshape = provide_label
            elif labels and self._label_shapes:
                new_lshape = [_io.DataDesc(d.name, tuple(x.shape), d.dtype, d.layout)
                              for d, x in zip(self._label_shapes, labels)]
            else:
                new_lshape = None
            self.reshape(new_dshape, new_lshape)
        self._exec_group.forward(data_batch, is_train)

    def backward(self, out_grads=None):
        """Backward; out_grads are needed for outputs that are not losses."""
        assert self.binded and self.params_initialized
        self._exec_group.backward(out_grads=out_grads)

    def update(self):
        """Apply the optimizer to the gradients of the last backward."""
        assert self.binded and self.params_initialized and self.optimizer_initialized
        self._params_dirty = True
        group = self._exec_group
        if self._update_on_kvstore:
            _update_params_on_kvstore(group.param_arrays, group.grad_arrays, self._kvstore,
                                      group.param_names)
        else:
            _update_params(group.param_arrays, group.grad_arrays, updater=self._updater,
                           num_device=len(self._context), kvstore=self._kvstore,
                           param_names=group.param_names)

    def get_outputs(self, merge_multi_context=True):
        """Outputs of the last forward (merged across devices, or per device)."""
        assert self.binded and self.params_initialized
        return self._exec_group.get_outputs(merge_multi_context=merge_multi_context)

    def get_input_grads(self, merge_multi_context=True):
        """Gradients of the data inputs (bind with inputs_need_grad=True)."""
        assert self.binded and self.params_initialized and self.inputs_need_grad
        return self._exec_group.get_input_grads(merge_multi_context=merge_multi_context)

    def get_states(self, merge_multi_context=True):
        assert self.binded and self.params_initialized
        return self._exec_group.get_states(merge_multi_context=merge_multi_context)

    def set_states(self, states=None, value=None):
        assert self.binded and self.params_initialized
        self._exec_group.set_states(states, value)

    def update_metric(self, eval_metric, labels, pre_sliced=False):
        """Accumulate the last outputs against labels into eval_metric."""
        self._exec_group.update_metric(eval_metric, labels, pre_sliced)

    # ------------------------------------------------------- optimizer states
    def save_optimizer_states(self, fname):
        """Write the optimizer states (the updater's, or the KVStore's) to fname."""
        assert self.optimizer_initialized
        if self._update_on_kvstore:
            self._kvstore.save_optimizer_states(fname)
        else:
            write_bytes(fname, self._updater.get_states())

    def load_optimizer_states(self, fname):
        """Read optimizer states written by save_optimizer_states."""
        assert self.optimizer_initialized
        if self._update_on_kvstore:
            self._kvstore.load_optimizer_states(fname)
        else:
            self._updater.load_states_file(fname)

    def install_monitor(self, mon):
        """Install a Monitor on every executor."""
        assert self.binded
        self._exec_group.install_monitor(mon)

    def prepare(self, data_batch, sparse_row_id_fn=None):
        """Get ready for the next batch. sparse_row_id_fn serves row_sparse parameters
        pulled from the KVStore; pymxnet parameters are dense, so there is nothing to
        pull (dense parameters are always complete on every device)."""
        assert self.binded
        if sparse_row_id_fn is not None:
            if not self._kvstore or not self._update_on_kvstore:
                warnings.warn(UserWarning("Parameters are not updated in the KVStore. "
                                          "No need to call sparse_row_id_fn."))
