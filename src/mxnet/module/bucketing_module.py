"""BucketingModule: one Module per bucket key, all sharing the parameters of the
default bucket's Module (MXNet 1.9.1's ``mx.mod.BucketingModule``).

``sym_gen(bucket_key)`` returns ``(symbol, data_names, label_names)``. The default
bucket is bound first and owns the parameters; a batch with another ``bucket_key``
binds that bucket's Module with ``shared_module`` = the default one (same parameter
arrays, input buffers shared), so training any bucket trains them all.
"""
import logging

import numpy as np

from ..atomic_file import together
from .. import context as ctx
from .. import ndarray as nd
from .. import symbol as sym
from ..base import MXNetError
from ..initializer import Uniform
from ..checkpoint import load_params
from .base_module import BaseModule, _checked_input_names
from .module import Module

__all__ = ["BucketingModule"]


class BucketingModule(BaseModule):
    """A module for inputs of varying shapes (bucketing).

    Parameters
    ----------
    sym_gen : callable bucket_key -> (Symbol, data_names, label_names)
    default_bucket_key : the key of the largest bucket (bound first; the others
        share its memory and parameters)
    logger, context, work_load_list, fixed_param_names, state_names, group2ctxs,
    compression_params : as for Module.
    """

    def __init__(self, sym_gen, default_bucket_key=None, logger=logging,
                 context=ctx.cpu(), work_load_list=None, fixed_param_names=None,
                 state_names=None, group2ctxs=None, compression_params=None):
        super().__init__(logger=logger)
        if default_bucket_key is None:
            raise MXNetError("BucketingModule needs a default_bucket_key")
        self._default_bucket_key = default_bucket_key
        self._sym_gen = sym_gen
        symbol, data_names, label_names = self._call_sym_gen(default_bucket_key)
        data_names, label_names, state_names, fixed_param_names = _checked_input_names(
            symbol, data_names, label_names, state_names, fixed_param_names)
        self._compression_params = compression_params
        self._fixed_param_names = fixed_param_names
        self._state_names = state_names
        self._context = context
        self._work_load_list = work_load_list
        self._group2ctxs = group2ctxs
        self._buckets = {}
        self._curr_module = None
        self._curr_bucket_key = None
        self._params_dirty = False
        self._monitor = None
        self._grad_req = None

    def _reset_bind(self):
        self.binded = False
        self._buckets = {}
        self._curr_module = None
        self._curr_bucket_key = None

    def _call_sym_gen(self, *args, **kwargs):
        # Fresh name counters per call, as MXNet: every bucket's graph names its
        # auto-named nodes alike (embedding0, ...), so parameters are shared by name.
        from ..name import NameManager
        with NameManager():
            return self._sym_gen(*args, **kwargs)

    def _module_kwargs(self):
        return dict(logger=self.logger, context=self._context,
                    work_load_list=self._work_load_list,
                    fixed_param_names=self._fixed_param_names,
                    state_names=self._state_names, group2ctxs=self._group2ctxs,
                    compression_params=self._compression_params)

    # ------------------------------------------------------------- properties
    @property
    def data_names(self):
        if self.binded:
            return self._curr_module.data_names
        return self._call_sym_gen(self._default_bucket_key)[1]

    @property
    def output_names(self):
        if self.binded:
            return self._curr_module.output_names
        return self._call_sym_gen(self._default_bucket_key)[0].list_outputs()

    @property
    def data_shapes(self):
        assert self.binded
        return self._curr_module.data_shapes

    @property
    def label_shapes(self):
        assert self.binded
        return self._curr_module.label_shapes

    @property
    def output_shapes(self):
        assert self.binded
        return self._curr_module.output_shapes

    @property
    def symbol(self):
        """The symbol of the current bucket."""
        assert self.binded
        return self._curr_module.symbol

    # ------------------------------------------------------------- parameters
    def get_params(self):
        assert self.params_initialized
        self._curr_module._params_dirty = self._params_dirty
        params = self._curr_module.get_params()
        self._params_dirty = False
        return params

    def set_params(self, arg_params, aux_params, allow_missing=False, force_init=True,
                   allow_extra=False):
        self._set_params_direct(
            lambda: self._curr_module.set_params(arg_params, aux_params,
                                                 allow_missing=allow_missing,
                                                 force_init=force_init,
                                                 allow_extra=allow_extra),
            arg_params, aux_params, allow_missing, force_init, allow_extra)

    def init_params(self, initializer=Uniform(0.01), arg_params=None, aux_params=None,
                    allow_missing=False, force_init=False, allow_extra=False):
        if self.params_initialized and not force_init:
            return
        assert self.binded, "call bind before initializing the parameters"
        self._curr_module.init_params(initializer=initializer, arg_params=arg_params,
                                      aux_params=aux_params, allow_missing=allow_missing,
                                      force_init=force_init, allow_extra=allow_extra)
        self._params_dirty = False
        self.params_initialized = True

    def get_states(self, merge_multi_context=True):
        assert self.binded and self.params_initialized
        return self._curr_module.get_states(merge_multi_context=merge_multi_context)

    def set_states(self, states=None, value=None):
        assert self.binded and self.params_initialized
        self._curr_module.set_states(states, value)

    # ---------------------------------------------------------------- binding
    def bind(self, data_shapes, label_shapes=None, for_training=True,
             inputs_need_grad=False, force_rebind=False, shared_module=None,
             grad_req="write"):
        """Bind the default bucket (shared_module is not supported)."""
        if self.params_initialized:
            arg_params, aux_params = self.get_params()
        if force_rebind:
            self._reset_bind()
        if self.binded:
            self.logger.warning("Already bound, ignoring bind()")
            return
        if shared_module is not None:
            raise MXNetError("shared_module for BucketingModule is not supported")
        self.for_training = for_training
        self.inputs_need_grad = inputs_need_grad
        self.binded = True
        self._grad_req = grad_req
        module = self._buckets.get(self._default_bucket_key)
        if module is None:        # a loaded module already holds the default bucket's
            symbol, data_names, label_names = self._call_sym_gen(self._default_bucket_key)
            module = Module(symbol, data_names, label_names, **self._module_kwargs())
        module.bind(data_shapes, label_shapes, for_training, inputs_need_grad,
                    force_rebind=False, shared_module=None, grad_req=self._grad_req)
        self._curr_module = module
        self._curr_bucket_key = self._default_bucket_key
        self._buckets[self._default_bucket_key] = module
        if self.params_initialized:
            self.set_params(arg_params, aux_params)

    def switch_bucket(self, bucket_key, data_shapes, label_shapes=None):
        """Make bucket_key current, binding its Module (sharing the default bucket's
        parameters) the first time it is seen."""
        assert self.binded, "call bind before switching bucket"
        if bucket_key not in self._buckets:
            symbol, data_names, label_names = self._call_sym_gen(bucket_key)
            module = Module(symbol, data_names, label_names, **self._module_kwargs())
            module.bind(data_shapes, label_shapes, self._curr_module.for_training,
                        self._curr_module.inputs_need_grad, force_rebind=False,
                        shared_module=self._buckets[self._default_bucket_key],
                        grad_req=self._grad_req)
            if self._monitor is not None:
                module.install_monitor(self._monitor)
            self._buckets[bucket_key] = module
        elif not self._buckets[bucket_key].binded:     # loaded, not bound yet
            self._buckets[bucket_key].bind(
                data_shapes, label_shapes, self._curr_module.for_training,
                self._curr_module.inputs_need_grad, force_rebind=False,
                shared_module=self._buckets[self._default_bucket_key],
                grad_req=self._grad_req)
        self._curr_module = self._buckets[bucket_key]
        self._curr_bucket_key = bucket_key

    def init_optimizer(self, kvstore="local", optimizer="sgd",
                       optimizer_params=(("learning_rate", 0.01),), force_init=False):
        assert self.binded and self.params_initialized
        if self.optimizer_initialized and not force_init:
            self.logger.warning("optimizer already initialized, ignoring.")
            return
        self._curr_module.init_optimizer(kvstore, optimizer, optimizer_params,
                                         force_init=force_init)
        for mod in self._buckets.values():
            if mod is not self._curr_module:
                mod.borrow_optimizer(self._curr_module)
        self.optimizer_initialized = True

    # ------------------------------------------------------------ computation
    def prepare(self, data_batch, sparse_row_id_fn=None):
        """Bind the batch's bucket if new, and let it prepare; the current bucket
        stays as it was."""
        assert self.binded and self.params_initialized
        original = self._curr_bucket_key
        self.switch_bucket(data_batch.bucket_key, data_batch.provide_data,
                           data_batch.provide_label)
        self._curr_module.prepare(data_batch, sparse_row_id_fn=sparse_row_id_fn)
        self.switch_bucket(original, None, None)

    def forward(self, data_batch, is_train=None):
        """Switch to the batch's bucket (``data_batch.bucket_key``) and run forward."""
        assert self.binded and self.params_initialized
        self.switch_bucket(data_batch.bucket_key, data_batch.provide_data,
                           data_batch.provide_label)
        self._curr_module.forward(data_batch, is_train=is_train)

    def backward(self, out_grads=None):
        assert self.binded and self.params_initialized
        self._curr_module.backward(out_grads=out_grads)

    def update(self):
        assert self.binded and self.params_initialized and self.optimizer_initialized
        self._params_dirty = True
        self._curr_module.update()

    def get_outputs(self, merge_multi_context=True):
        assert self.binded and self.params_initialized
        return self._curr_module.get_outputs(merge_multi_context=merge_multi_context)

    def get_input_grads(self, merge_multi_context=True):
        assert self.binded and self.params_initialized and self.inputs_need_grad
        return self._curr_module.get_input_grads(merge_multi_context=merge_multi_context)

    def update_metric(self, eval_metric, labels, pre_sliced=False):
        assert self.binded and self.params_initialized
        self._curr_module.update_metric(eval_metric, labels, pre_sliced)

    def install_monitor(self, mon):
        """Install mon on every bucket's executors (and on buckets bound later)."""
        assert self.binded
        self._monitor = mon
        for mod in self._buckets.values():
            mod.install_monitor(mon)

    # ------------------------------------------------------------- checkpoints
    def save_checkpoint(self, prefix, epoch, remove_amp_cast=False):
        """Write the shared parameters (``prefix-%04d.params``), each bound bucket's
        symbol (``prefix-<key>-symbol.json``) and the list of keys
        (``prefix.buckets``, int32)."""
        if not self._buckets:
            raise MXNetError("Empty BucketingModule cannot be saved")
        with together():      # the files replace the old ones together
            self.save_params("%s-%04d.params" % (prefix, epoch))
            for bucket_key in self._buckets:
                symbol, _, _ = self._call_sym_gen(bucket_key)
                symbol.save("%s-%s-symbol.json" % (prefix, bucket_key),
                            remove_amp_cast=remove_amp_cast)
            nd.save("%s.buckets" % prefix, nd.array(list(self._buckets.keys()), dtype=np.int32))

    @staticmethod
    def load(prefix, epoch, sym_gen=None, default_bucket_key=None, **kwargs):
        """A BucketingModule from save_checkpoint's files (needs the sym_gen used to
        save it, for the data/label names)."""
        if sym_gen is None:
            raise MXNetError("sym_gen is required for loading BucketingModule")
        if default_bucket_key is None:
            raise MXNetError("default_bucket_key is required for loading BucketingModule")
        keys = [int(k) for k in nd.load("%s.buckets" % prefix)[0].asnumpy().astype("int32")]
        mod = BucketingModule(sym_gen, default_bucket_key, **kwargs)
        for key in keys:
            _, data_names, label_names = sym_gen(key)
            symbol = sym.load("%s-%s-symbol.json" % (prefix, key))
            mod._buckets[key] = Module(symbol, data_names, label_names, **kwargs)
            if key == default_bucket_key:
                mod._curr_module = mod._buckets[key]
        if mod._curr_module is None:
            raise MXNetError(f"default_bucket_key {default_bucket_key!r} is not among the "
                             f"saved buckets {keys}")
        arg_params, aux_params = load_params(prefix, epoch)
        return _adopt(mod, arg_params, aux_params)

    @staticmethod
    def load_dict(sym_dict=None, sym_gen=None, default_bucket_key=None, arg_params=None,
                  aux_params=None, **kwargs):
        """A BucketingModule from {bucket_key: symbol} and shared parameters."""
        for value, what in ((sym_dict, "sym_dict"), (arg_params, "arg_params"),
                            (aux_params, "aux_params"),
                            (default_bucket_key, "default_bucket_key")):
            if value is None:
                raise MXNetError(f"{what} needs to be provided for "
                                 "BucketingModule.load_dict")
        mod = BucketingModule(sym_gen, default_bucket_key, **kwargs)
        _, data_names, label_names = sym_gen(default_bucket_key)
        for key, symbol in sym_dict.items():
            mod._buckets[key] = Module(symbol, data_names, label_names, **kwargs)
            if key == default_bucket_key:
                mod._curr_module = mod._buckets[key]
        return _adopt(mod, arg_params, aux_params)


def _adopt(mod, arg_params, aux_params):
    """Give the default bucket's (unbound) Module the loaded parameters; bind()
    then pushes them to the executors."""
    mod._curr_module._arg_params = arg_params
    mod._curr_module._aux_params = aux_params
    mod._curr_module.params_initialized = True
    mod.params_initialized = True
    return mod
