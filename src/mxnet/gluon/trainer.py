"""gluon.Trainer: applies an optimizer to a set of Parameters (MXNet 1.9.1).

Parameters are indexed in the order of their sorted names (when given as a dict or
ParameterDict), which is also the index order of saved optimizer states. With one
context there is no KVStore: ``step`` hands every fresh gradient to the optimizer's
updater, which runs the registered update operators (``sgd_mom_update`` ...). With
several contexts a 'device'/'local' KVStore sums the gradients; by default the store
then also runs the optimizer (``update_on_kvstore``) and every context pulls the
updated weight.
"""
import os

from .. import optimizer as opt
from ..atomic_file import write_bytes
from ..base import InvalidArgumentType, MXNetError
from ..kvstore import KVStore, KVStoreBase, create as kv_create
from ..kvstore.base import is_known_type
from .parameter import Parameter, ParameterDict, _clear_fresh_grad, _fresh_grad

__all__ = ["Trainer"]


def _create_kvstore(kvstore, num_device, arg_params):
    """(store or None, update_on_kvstore) as MXNet picks them for a Trainer."""
    import os
    update_on_kvstore = bool(int(os.environ.get("MXNET_UPDATE_ON_KVSTORE", "1")))
    if kvstore is None:
        kv = None
    elif isinstance(kvstore, KVStore) or hasattr(kvstore, "pushpull"):
        kv = kvstore
    elif isinstance(kvstore, str):
        if num_device == 1 and "dist" not in kvstore:
            kv = None           # one device in one process: nothing to aggregate
        else:
            kv = kv_create(kvstore)
            if kvstore == "local":
                biggest = max((p.size for p in arg_params.values()), default=0)
                if biggest > 1024 * 1024 * 16:
                    update_on_kvstore = False
    else:
        raise TypeError("kvstore must be KVStore, str or None")
    if kv is None:
        update_on_kvstore = False
    return kv, update_on_kvstore


class Trainer:
    """Applies an Optimizer on a set of Parameters.

    Parameters
    ----------
    params : ParameterDict, dict or list of Parameter
        The parameters to optimise (a dict is taken in sorted-name order).
    optimizer : str or Optimizer
    optimizer_params : dict, optional
        Arguments of the optimizer when it is given by name, e.g.
        ``{'learning_rate': 0.1, 'momentum': 0.9}``.
    kvstore : str or KVStore, default 'device'
        How gradients of several contexts are aggregated (unused with one context).
    compression_params : dict, optional
        Gradient compression (``{'type': '2bit', 'threshold': 0.5}``).
    update_on_kvstore : bool, optional
        Whether the KVStore runs the optimizer (default: yes when a store is used).
    """

    def __init__(self, params, optimizer, optimizer_params=None, kvstore="device",
                 compression_params=None, update_on_kvstore=None):
        if isinstance(params, (dict, ParameterDict)):
            params = [params[key] for key in sorted(list(params.keys()))]
        if not isinstance(params, (list, tuple)):
            raise ValueError(f"First argument must be a list or dict of Parameters, got "
                             f"{type(params)}.")
        self._params = []
        self._param2idx = {}
        for i, param in enumerate(params):
            if not isinstance(param, Parameter):
                raise ValueError(f"First argument must be a list or dict of Parameters, got "
                                 f"list of {type(param)}.")
            self._param2idx[param.name] = i
            self._params.append(param)
            param._set_trainer(self)
        # row_sparse weights live whole in the KVStore, which runs their updates;
        # Parameter.row_sparse_data pulls the rows a batch needs (as in MXNet)
        self._contains_sparse_weight = any(p._stype != "default" for p in self._params)
        self._contains_sparse_grad = any(p._grad_stype != "default" for p in self._params)
        self._compression_params = compression_params
        self._contexts = self._check_contexts()
        self._init_optimizer(optimizer, optimizer_params or {})
        self._scale = self._optimizer.rescale_grad
        if not (kvstore is None or isinstance(kvstore, (str, KVStore))
                or hasattr(kvstore, "pushpull")):
            raise InvalidArgumentType(f"Trainer: kvstore must be a KVStore, str or None, "
                                      f"got {type(kvstore).__name__}")
        if isinstance(kvstore, str) and not is_known_type(kvstore):
            kv_create(kvstore)         # raises now, not at the first step (or never)
        self._kvstore_params = {"kvstore": kvstore, "update_on_kvstore": update_on_kvstore}
        self._kv_initialized = False
        self._kvstore = None
        self._update_on_kvstore = None
        self._distributed = None
        self._params_to_init = []
        self._reset_kvstore()

    def _check_contexts(self):
        contexts = None
        for param in self._params:
            ctx = param.list_ctx()
            if contexts is not None and contexts != ctx:
                raise AssertionError(
                    f"All Parameters must be initialized on the same set of contexts, but "
                    f"Parameter {param.name} is initialized on {ctx} while previous "
                    f"Parameters are initialized on {contexts}.")
            contexts = ctx
        return contexts

    def _init_optimizer(self, optimizer, optimizer_params):
        param_dict = {i: param for i, param in enumerate(self._params)}
        if isinstance(optimizer, opt.Optimizer):
            if optimizer_params:
                raise AssertionError("optimizer_params must be None if optimizer is an "
                                     "instance of Optimizer instead of str")
            self._optimizer = optimizer
            # Not a copy: later changes of a Parameter's lr_mult/wd_mult take effect.
            self._optimizer.param_dict = param_dict
        else:
            self._optimizer = opt.create(optimizer, param_dict=param_dict,
                                         **optimizer_params)
        self._updaters = [opt.get_updater(self._optimizer) for _ in self._contexts]

    # --- the key-value store ---------------------------------------------------------------
    def _init_params(self):
        """Put parameters into the KVStore (those still awaiting deferred initialisation
        wait for a later step)."""
        if not self._kv_initialized:
            raise AssertionError("Cannot initialize parameters in KVStore when KVStore is "
                                 "not initialized.")
        pending = []
        if self._kvstore:
            for param in self._params_to_init:
                if param._deferred_init:
                    pending.append(param)
                    continue
                arrays = param._check_and_get(param._data, list)
                idx = self._param2idx[param.name]
                if param._stype != "default":
                    # the whole value goes to the store; contexts pull rows on demand
                    self._kvstore.init(idx, arrays[0])
                    continue
                # rank 0's value reaches every copy (and every worker), as in MXNet
                self._kvstore.broadcast(idx, arrays[0], arrays, priority=-idx)
        self._params_to_init = pending

    def _reset_kvstore(self):
        if self._kvstore and "dist" in self._kvstore.type:
            raise RuntimeError("Cannot reset distributed KVStore.")
        self._kv_initialized = False
        self._kvstore = None
        self._distributed = None
        self._update_on_kvstore = None
        self._params_to_init = list(self._params)

    def _init_kvstore(self):
        config = self._kvstore_params
        if self._contains_sparse_weight:
            # a row_sparse weight needs a store holding it whole, which updates it
            if config["update_on_kvstore"] is False:
                raise ValueError("Cannot set update_on_kvstore=False when sparse weights "
                                 "are present.")
            kvstore = config["kvstore"]
            if kvstore is None or isinstance(kvstore, str):
                kvstore = kv_create(kvstore or "local")
            update_on_kvstore = True
            config = dict(config, update_on_kvstore=True)
        else:
            arg_arrays = {p.name: p.data(self._contexts[0]) for p in self._params}
            kvstore, update_on_kvstore = _create_kvstore(config["kvstore"],
                                                         len(self._contexts), arg_arrays)
            if self._contains_sparse_grad and config["update_on_kvstore"] is None:
                update_on_kvstore = False  # sparse gradients: each context updates itself
        self._distributed = "dist" in kvstore.type if kvstore else False
        # A custom KVStoreBase that cannot run the optimizer leaves updates to us.
        can_update = kvstore is None or isinstance(kvstore, KVStore) or \
            kvstore.is_capable(KVStoreBase.OPTIMIZER)
        if not can_update:
            if config["update_on_kvstore"]:
                raise ValueError(f"Please set update_on_kvstore=False when training with "
                                 f"{type(kvstore).__name__}: it cannot run the optimizer")
            update_on_kvstore = False
        elif config["update_on_kvstore"] is not None:
            update_on_kvstore = config["update_on_kvstore"]
        if kvstore:
            if self._compression_params:
                kvstore.set_gradient_compression(self._compression_params)
            if update_on_kvstore:
                kvstore.set_optimizer(self._optimizer)
            self._kvstore = kvstore
            self._update_on_kvstore = update_on_kvstore
        else:
            if update_on_kvstore:
                raise ValueError("update_on_kvstore=True needs a KVStore, but none is used "
                                 "(one context and a non-distributed kvstore, or "
                                 "kvstore=None)")
            self._kvstore = None
            self._update_on_kvstore = None
        self._kv_initialized = True

    def _prepare(self):
        if not self._kv_initialized:
            self._init_kvstore()
        if self._params_to_init:
            self._init_params()

    # --- learning rate ------------------------------------------------------------------------
    @property
    def learning_rate(self):
        """The optimizer's current learning rate."""
        if not isinstance(self._optimizer, opt.Optimizer):
            raise UserWarning("Optimizer has to be defined before its learning rate can be "
                              "accessed.")
        return self._optimizer.learning_rate

    @property
    def optimizer(self):
        """The Optimizer in use."""
        if isinstance(self._optimizer, opt.Optimizer):
            return self._optimizer
        raise UserWarning("Optimizer has not been initialized yet")

    def set_learning_rate(self, lr):
        """Set the optimizer's learning rate (not allowed with an lr scheduler)."""
        if not isinstance(self._optimizer, opt.Optimizer):
            raise UserWarning("Optimizer has to be defined before its learning rate is "
                              "mutated.")
        self._optimizer.set_learning_rate(lr)

    # --- stepping ---------------------------------------------------------------------------------
    def _check_and_rescale_grad(self, scale):
        if self._update_on_kvstore and self._distributed and self._kv_initialized:
            if self._optimizer.rescale_grad != scale:
                raise UserWarning("Possible change in the `batch_size` from previous `step` "
                                  "detected. Optimizer gradient normalizing factor will not "
                                  "change w.r.t new batch_size when update_on_kvstore=True "
                                  "and when distributed kvstore is used.")
        self._optimizer.rescale_grad = scale

    def step(self, batch_size, ignore_stale_grad=False):
        """One update: aggregate gradients over contexts, then apply the optimizer with
        gradients scaled by ``1/batch_size``. Parameters whose gradient backward has not
        written since the last step are an error unless ``ignore_stale_grad`` (then they
        are skipped)."""
        self._check_and_rescale_grad(self._scale / batch_size)
        self._prepare()
        self._allreduce_grads()
        self._update(ignore_stale_grad)

    def allreduce_grads(self):
        """Sum the gradients over contexts (for ``update`` after gradient clipping, say).
        Needs ``update_on_kvstore=False``."""
        self._prepare()
        if self._kvstore and self._update_on_kvstore:
            raise AssertionError("allreduce_grads() when parameters are updated on kvstore "
                                 "is not supported. Try setting `update_on_kvstore` to False "
                                 "when creating trainer.")
        self._allreduce_grads()

    def _allreduce_grads(self):
        if not self._kvstore:
            return
        for i, param in enumerate(self._params):
            if param.grad_req == "null":
                continue
            grads = param.list_grad()
            if self._update_on_kvstore and param._stype != "default":
                self._kvstore.push(i, grads, priority=-i)   # rows are pulled on demand
            elif grads[0].stype != "default":
                # a store's pull skips sparse outputs unless told otherwise (pushpull
                # always does): push, then pull the dense sum into them
                self._kvstore.push(i, grads, priority=-i)
                out = param.list_data() if self._update_on_kvstore else grads
                self._kvstore.pull(i, out, priority=-i, ignore_sparse=self._distributed)
            elif self._update_on_kvstore:
                self._kvstore.pushpull(i, grads, out=param.list_data(), priority=-i)
            else:
                self._kvstore.pushpull(i, grads, priority=-i)

    def update(self, batch_size, ignore_stale_grad=False):
        """Apply the optimizer (after ``allreduce_grads``). Needs
        ``update_on_kvstore=False``."""
        self._prepare()
        if self._kvstore and self._update_on_kvstore:
            raise AssertionError("update() when parameters are updated on kvstore is not "
                                 "supported. Try setting `update_on_kvstore` to False when "
                                 "creating trainer.")
        self._check_and_rescale_grad(self._scale / batch_size)
        self._update(ignore_stale_grad)

    def _update(self, ignore_stale_grad=False):
        loss_scaler = getattr(self, "_amp_loss_scaler", None)   # set by amp.init_trainer
        gate = None
        if loss_scaler is not None:
            gate = self._deferred_check(loss_scaler)
            if gate is None and loss_scaler.has_overflow(self._params):
                return      # inf/NaN gradients under AMP: skip this update
        self._optimizer._gate = gate
        try:
            self._apply_updates(ignore_stale_grad)
        finally:
            self._optimizer._gate = None

    def _deferred_check(self, loss_scaler):
        """AMP's finite check without a host wait (on by default;
        MXNET_AMP_ASYNC_OVERFLOW_CHECK=0 turns it off): the gate the updates read on the
        GPU (amp.loss_scaler.Gate), or None (the check waits, as MXNet's). Only for
        updates made here (not on a kvstore) of gradients on one GPU. On by default
        since an H100 measured it: ResNet-50 AMP with CUDA graphs 3503 samples/s
        against 2667 waiting for the flag each step."""
        if os.environ.get("MXNET_AMP_ASYNC_OVERFLOW_CHECK", "1").strip() == "0" or \
                (self._kvstore and self._update_on_kvstore):
            return None
        contexts = {c for p in self._params if p.grad_req != "null" and p._data is not None
                    for c in p.list_ctx()}
        if len(contexts) != 1 or not _deferred_context(next(iter(contexts))):
            return None
        return loss_scaler.check_deferred(self._params, self._optimizer)

    def _apply_updates(self, ignore_stale_grad):
        on_kv = self._kvstore and self._update_on_kvstore
        updates = [[] for _ in self._updaters]
        for i, param in enumerate(self._params):
            if param.grad_req == "null":
                continue
            data = param._check_and_get(param._data, list)
            if not ignore_stale_grad:
                for arr in data:
                    if not _fresh_grad(arr):
                        raise UserWarning(
                            f"Gradient of Parameter `{param.name}` on context {arr.context} "
                            "has not been updated by backward since last `step`. This could "
                            "mean a bug in your model that made it only use a subset of the "
                            "Parameters (Blocks) for this iteration. If you are "
                            "intentionally only using a subset, call step with "
                            "ignore_stale_grad=True to suppress this warning and skip "
                            "updating of Parameters with stale gradient")
            if on_kv:
                for arr in data:
                    _clear_fresh_grad(arr)
                continue
            for upd, arr, grad in zip(updates, data, param.list_grad()):
                if ignore_stale_grad and not _fresh_grad(arr):
                    continue
                upd.append((i, grad, arr))
                # fresh (checked above, or just now): its tape node has the flag
                # (_clear_fresh_grad without its checks: per parameter and step)
                arr._ag[0].fresh_grad = False
        if on_kv:
            return
        for updater, upd in zip(self._updaters, updates):
            if upd:
                idx, grads, weights = zip(*upd)
                updater(list(idx), list(grads), list(weights))

    # --- optimizer states ------------------------------------------------------------------------
    def save_states(self, fname):
        """Save the optimizer states (momentum ...) and the optimizer to fname."""
        if self._optimizer is None:
            raise AssertionError("save_states needs an optimizer")
        self._prepare()
        if self._update_on_kvstore:
            if self._params_to_init:
                raise AssertionError("Cannot save trainer states when some parameters are "
                                     "not yet initialized in kvstore.")
            self._kvstore.save_optimizer_states(fname, dump_optimizer=True)
        else:
            write_bytes(fname, self._updaters[0].get_states(dump_optimizer=True))

    def load_states(self, fname):
        """Load optimizer states written by ``save_states``."""
        self._prepare()
        if self._update_on_kvstore:
            self._kvstore.load_optimizer_states(fname)
            self._optimizer = self._kvstore._updater.optimizer
        else:
            for updater in self._updaters:
                updater.load_states_file(fname)
                updater.optimizer = self._updaters[0].optimizer
            self._optimizer = self._updaters[0].optimizer
        self._optimizer.param_dict = {i: p for i, p in enumerate(self._params)}

    def _row_sparse_pull(self, parameter, out, row_id, full_idx=False):
        """Pull the rows ``row_id`` of a row_sparse parameter from the store into
        ``out`` (an array or a list, one per context)."""
        self._prepare()
        idx = self._param2idx[parameter.name]
        if full_idx and "dist" not in self._kvstore.type:
            # every row: a plain pull, told to fill the row_sparse outputs
            if isinstance(out, (list, tuple)):
                for o in out:
                    self._kvstore.pull(idx, out=o, priority=-idx, ignore_sparse=False)
            else:
                self._kvstore.pull(idx, out=out, priority=-idx, ignore_sparse=False)
            return
        self._kvstore.row_sparse_pull(idx, out=out, row_ids=row_id, priority=-idx)


def _deferred_context(ctx):
    """Whether AMP's deferred check runs for gradients on ``ctx``: GPUs (where the host
    would otherwise wait for the whole step each step)."""
    return ctx.device_typeid == 2
