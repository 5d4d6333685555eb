"""SequentialModule: modules chained so each one's outputs are the next one's data
(MXNet 1.9.1's ``mx.mod.SequentialModule``).

Forward runs the modules in order, feeding outputs on as data; backward runs them
in reverse, feeding each module's input gradients to the one before. Modules after
the first are therefore bound with ``inputs_need_grad`` when training. Meta
options per added module: ``take_labels`` (the module receives the batch's labels
and updates the metric) and ``auto_wiring`` (rename the incoming data to the
module's own data_names).
"""
import copy
import logging

from ..base import MXNetError
from ..initializer import Uniform
from .base_module import BaseModule

__all__ = ["SequentialModule"]


class SequentialModule(BaseModule):
    """A container chaining modules (see ``add``)."""

    META_TAKE_LABELS = "take_labels"
    META_AUTO_WIRING = "auto_wiring"

    def __init__(self, logger=logging):
        super().__init__(logger=logger)
        self._modules = []
        self._metas = []
        self._label_shapes = None
        self._data_shapes = None
        self._meta_keys = {getattr(SequentialModule, x) for x in dir(SequentialModule)
                           if x.startswith("META_")}

    def add(self, module, **kwargs):
        """Append a module; kwargs are its meta options (take_labels, auto_wiring).
        Returns self, for chaining. Adding resets the bound/initialised state."""
        for key in kwargs:
            if key not in self._meta_keys:
                raise MXNetError(f'Unknown meta "{key}", a typo?')
        self._modules.append(module)
        self._metas.append(kwargs)
        self.binded = False
        self.params_initialized = False
        self.optimizer_initialized = False
        return self

    def _takes_labels(self, i):
        return bool(self._metas[i].get(SequentialModule.META_TAKE_LABELS, False))

    # ------------------------------------------------------------- properties
    @property
    def data_names(self):
        return self._modules[0].data_names if self._modules else []

    @property
    def output_names(self):
        return self._modules[-1].output_names if self._modules else []

    @property
    def data_shapes(self):
        assert self.binded
        return self._modules[0].data_shapes

    @property
    def label_shapes(self):
        assert self.binded
        return self._label_shapes

    @property
    def output_shapes(self):
        assert self.binded
        return self._modules[-1].output_shapes

    # ------------------------------------------------------------- parameters
    def get_params(self):
        """The union of every module's parameters."""
        assert self.binded and self.params_initialized
        arg_params, aux_params = {}, {}
        for module in self._modules:
            arg, aux = module.get_params()
            arg_params.update(arg)
            aux_params.update(aux)
        return arg_params, aux_params

    def init_params(self, initializer=Uniform(0.01), arg_params=None, aux_params=None,
                    allow_missing=False, force_init=False, allow_extra=False):
        """Initialise every module's parameters; two modules may not share a name."""
        if self.params_initialized and not force_init:
            return
        assert self.binded, "call bind before initializing the parameters"
        for module in self._modules:
            module.init_params(initializer=initializer, arg_params=arg_params,
                               aux_params=aux_params, allow_missing=allow_missing,
                               force_init=force_init, allow_extra=allow_extra)
        seen_arg, seen_aux = {}, {}
        for i, module in enumerate(self._modules):
            arg, aux = module.get_params()
            for seen, names in ((seen_arg, arg), (seen_aux, aux)):
                for name in names:
                    if name in seen:
                        j = seen[name]
                        raise MXNetError(
                            f'Duplicated parameter names: name "{name}" in layer {i} '
                            f"({type(module)}) is already used in layer {j} "
                            f"({type(self._modules[j])}).")
                    seen[name] = i
        self.params_initialized = True

    # ---------------------------------------------------------------- binding
    def bind(self, data_shapes, label_shapes=None, for_training=True,
             inputs_need_grad=False, force_rebind=False, shared_module=None,
             grad_req="write"):
        """Bind each module on the previous module's output shapes."""
        if self.binded and not force_rebind:
            self.logger.warning("Already bound, ignoring bind()")
            return
        if inputs_need_grad and not for_training:
            raise MXNetError("inputs_need_grad=True needs for_training=True")
        if shared_module is not None:
            raise MXNetError("Shared module is not supported")
        if not self._modules:
            raise MXNetError("Attempting to bind an empty SequentialModule")
        self.binded = True
        self._label_shapes = label_shapes
        my_data_shapes = data_shapes
        anybody_needs_label = False
        for i, module in enumerate(self._modules):
            if self._takes_labels(i):
                my_label_shapes = label_shapes
                anybody_needs_label = True
            else:
                my_label_shapes = None
            my_inputs_need_grad = bool(inputs_need_grad or (for_training and i > 0))
            if self._metas[i].get(SequentialModule.META_AUTO_WIRING, False):
                names = module.data_names
                if len(names) != len(my_data_shapes):
                    raise MXNetError(f"auto_wiring: module {i} takes {len(names)} inputs, "
                                     f"got {len(my_data_shapes)}")
                my_data_shapes = [(new, shape) for new, (_, shape) in
                                  zip(names, [(d[0], d[1]) for d in my_data_shapes])]
            module.bind(data_shapes=my_data_shapes, label_shapes=my_label_shapes,
                        for_training=for_training, inputs_need_grad=my_inputs_need_grad,
                        force_rebind=force_rebind, shared_module=None, grad_req=grad_req)
            my_data_shapes = module.output_shapes
        if not anybody_needs_label:
            self._label_shapes = None

    def init_optimizer(self, kvstore="local", optimizer="sgd",
                       optimizer_params=(("learning_rate", 0.01),), force_init=False):
        assert self.binded and self.params_initialized
        if self.optimizer_initialized and not force_init:
            self.logger.warning("optimizer already initialized, ignoring.")
            return
        for module in self._modules:
            module.init_optimizer(kvstore=kvstore, optimizer=optimizer,
                                  optimizer_params=optimizer_params, force_init=force_init)
        self.optimizer_initialized = True

    # ------------------------------------------------------------ computation
    def forward(self, data_batch, is_train=None):
        assert self.binded and self.params_initialized
        data_batch = copy.copy(data_batch)
        for i, module in enumerate(self._modules):
            module.forward(data_batch, is_train=is_train)
            if i + 1 == len(self._modules):
                break
            data_batch.data = module.get_outputs()
            if hasattr(data_batch, "provide_data"):
                names = [x[0] for x in module.output_shapes]
                data_batch.provide_data = [(name, x.shape) for name, x in
                                           zip(names, data_batch.data)]

    def backward(self, out_grads=None):
        assert self.binded and self.params_initialized
        for i in range(len(self._modules) - 1, -1, -1):
            module = self._modules[i]
            module.backward(out_grads=out_grads)
            if i == 0:
                break
            out_grads = module.get_input_grads()

    def update(self):
        assert self.binded and self.params_initialized and self.optimizer_initialized
        for module in self._modules:
            module.update()

    def get_outputs(self, merge_multi_context=True):
        assert self.binded and self.params_initialized
        return self._modules[-1].get_outputs(merge_multi_context=merge_multi_context)

    def get_input_grads(self, merge_multi_context=True):
        assert self.binded and self.params_initialized and self.inputs_need_grad
        return self._modules[0].get_input_grads(merge_multi_context=merge_multi_context)

    def update_metric(self, eval_metric, labels, pre_sliced=False):
        """Modules added with take_labels update the metric."""
        assert self.binded and self.params_initialized
        for i, module in enumerate(self._modules):
            if self._takes_labels(i):
                module.update_metric(eval_metric, labels, pre_sliced)

    def install_monitor(self, mon):
        assert self.binded
        for module in self._modules:
            module.install_monitor(mon)
