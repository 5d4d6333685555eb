"""The Optimizer base class, the optimizer registry and the Updater (MXNet 1.9.1's
``mx.optimizer.Optimizer``, ``register``, ``create``, ``Updater``, ``get_updater``).

An optimizer owns the hyper-parameters and the per-index learning-rate/weight-decay
bookkeeping (``lr_mult``/``wd_mult``, ``idx2name``, ``param_dict``, update counts, an
optional lr scheduler); ``create_state`` makes the per-weight state and ``update``
applies one step in place. The optimizers themselves live in ``sgd.py``,
``adaptive.py`` and ``contrib.py``.
"""
import pickle
import warnings

import numpy

from ..base import MXNetError
from ..ndarray import NDArray, zeros
from ..ndarray.dispatch import invoke_by_name

__all__ = ["Optimizer", "Updater", "create", "get_updater", "register"]


def _invoke(opname, inputs, out=None, **params):
    """Run a registered update operator (``sgd_update``...) on NDArrays."""
    return invoke_by_name(opname, list(inputs), params, out=out)


def _cast_into(src, dst):
    """dst[:] = src cast to dst's dtype (the master-copy write-back)."""
    _invoke("Cast", [src], out=dst, dtype=numpy.dtype(dst.dtype).name)


class Optimizer:
    """The base class of all optimizers.

    Parameters
    ----------
    rescale_grad : float, default 1.0
        Multiplies the gradient before the update (often ``1.0/batch_size``).
    param_idx2name : dict of int to str, optional
        Parameter names by index; names not ending in ``_weight``/``_gamma`` get no
        weight decay (wd_mult 0).
    wd : float, default 0.0
        Weight decay (L2 regularisation) coefficient.
    clip_gradient : float, optional
        Clip the gradient to ``[-clip_gradient, clip_gradient]``.
    learning_rate : float, optional
        The learning rate; overrides the scheduler's base lr. 0.01 when neither this
        nor ``lr_scheduler`` is given.
    lr_scheduler : LRScheduler, optional
        Gives the learning rate as a function of the number of updates.
    sym : Symbol, optional
        The symbol whose ``__lr_mult__``/``__wd_mult__`` attributes set multipliers.
    begin_num_update : int, default 0
        The number of updates already done.
    multi_precision : bool, default False
        Keep a float32 master copy of float16 weights and update that.
    param_dict : dict of int to gluon.Parameter, optional
        Parameters whose ``lr_mult``/``wd_mult`` take precedence.
    """
    # AMP's device-side skip (gluon.trainer; MXNET_AMP_ASYNC_OVERFLOW_CHECK=0 off): the
    # gate of the step being applied (amp.loss_scaler.Gate) while the trainer updates;
    # optimizers whose GPU kernels take it (gates_updates) pass it on, the others have
    # the Updater ask it (a host wait) before they run
    _gate = None
    gates_updates = False

    opt_registry = {}

    def __init__(self, rescale_grad=1., param_idx2name=None, wd=0., clip_gradient=None,
                 learning_rate=None, lr_scheduler=None, sym=None, begin_num_update=0,
                 multi_precision=False, param_dict=None):
        self.rescale_grad = rescale_grad
        self.lr_scheduler = lr_scheduler
        if lr_scheduler is None and learning_rate is None:
            learning_rate = 0.01
        self.lr = learning_rate
        if lr_scheduler is not None and learning_rate is not None \
                and lr_scheduler.base_lr != learning_rate:
            # MXNet prints (rather than warns) this notice.
            print(UserWarning("learning rate from ``lr_scheduler`` has been overwritten "
                              "by ``learning_rate`` in optimizer."))
            lr_scheduler.base_lr = learning_rate
        self.wd = wd
        self.lr_mult = {}
        self.wd_mult = {}
        self.begin_num_update = begin_num_update
        self.num_update = begin_num_update
        # Update counts per device (Updater switches between them) and per index.
        self._all_index_update_counts = {0: {}}
        self._index_update_count = self._all_index_update_counts[0]
        self.clip_gradient = clip_gradient
        self.multi_precision = multi_precision
        self.aggregate_num = 0
        if param_idx2name is None:
            param_idx2name = {}
        if not isinstance(param_idx2name, dict):
            raise AssertionError("param_idx2name should be a dict of param indexes to names.")
        self.idx2name = param_idx2name.copy()
        self.sym_info = (sym.attr_dict(), sym.list_arguments()) if sym is not None else ()
        self.param_dict = param_dict if param_dict else {}
        self.allow_np_array = False
        self.set_lr_mult({})
        self.set_wd_mult({})

    # --- registry -------------------------------------------------------------------
    @staticmethod
    def register(klass):
        """Register an optimizer class under its lower-cased class name."""
        if not isinstance(klass, type):
            raise AssertionError("register expects an optimizer class")
        name = klass.__name__.lower()
        old = Optimizer.opt_registry.get(name)
        if old is not None and old is not klass:
            warnings.warn(f"WARNING: New optimizer {klass.__module__}.{klass.__name__} is "
                          f"overriding existing optimizer {old.__module__}.{old.__name__}")
        Optimizer.opt_registry[name] = klass
        return klass

    @staticmethod
    def create_optimizer(name, **kwargs):
        """An optimizer by (case-insensitive) registered name, built with kwargs."""
        klass = Optimizer.opt_registry.get(name.lower())
        if klass is None:
            raise ValueError(f"Cannot find optimizer {name}")
        return klass(**kwargs)

    # --- learning rate --------------------------------------------------------------
    @property
    def learning_rate(self):
        """The current learning rate (the scheduler's, when there is one)."""
        if self.lr_scheduler is not None:
            return self.lr_scheduler(self.num_update)
        return self.lr

    def set_learning_rate(self, lr):
        """Set the learning rate; not allowed when an lr scheduler is in charge."""
        if self.lr_scheduler is not None:
            raise UserWarning("LRScheduler of the optimizer has already been defined. Note "
                              "that set_learning_rate can mutate the value of the learning "
                              "rate of the optimizer only when the LRScheduler of the "
                              "optimizer is undefined.")
        self.lr = lr

    def set_lr_scale(self, args_lrscale):
        """[Deprecated] Use set_lr_mult."""
        raise DeprecationWarning

    def _sym_mults(self, attr_key):
        mults = {}
        if self.sym_info:
            attrs, arg_names = self.sym_info
            for name in arg_names:
                if name in attrs and attr_key in attrs[name]:
                    mults[name] = float(attrs[name][attr_key])
        return mults

    def set_lr_mult(self, args_lr_mult):
        """Set learning-rate multipliers by parameter name or index (the symbol's
        ``__lr_mult__`` attributes first, then these)."""
        self.lr_mult = self._sym_mults("__lr_mult__")
        self.lr_mult.update(args_lr_mult)

    def set_wd_mult(self, args_wd_mult):
        """Set weight-decay multipliers by name or index. Parameters named in idx2name
        that do not end in ``_weight`` or ``_gamma`` default to 0."""
        self.wd_mult = {n: 0.0 for n in self.idx2name.values()
                        if not (n.endswith("_weight") or n.endswith("_gamma"))}
        self.wd_mult.update(self._sym_mults("__wd_mult__"))
        self.wd_mult.update(args_wd_mult)

    def _set_current_context(self, device_id):
        """Switch to the update counts of device ``device_id``."""
        self._index_update_count = self._all_index_update_counts.setdefault(device_id, {})

    def _update_count(self, index):
        """Count one more update of each index (int or list); num_update follows the
        largest count."""
        counts, begin = self._index_update_count, self.begin_num_update
        num_update = self.num_update
        for idx in index if isinstance(index, (list, tuple)) else [index]:
            count = counts.get(idx, begin) + 1
            counts[idx] = count
            if count > num_update:
                num_update = count
        self.num_update = num_update

    def _begin_update(self, index):
        """Count this update of ``index``; return its (lr, wd, update count). The
        learning rate is read after counting, so an lr_scheduler sees this update."""
        self._update_count(index)
        return self._get_lr(index), self._get_wd(index), self._index_update_count[index]

    def _base_lr(self):
        if self.lr_scheduler is not None:
            return self.lr_scheduler(self.num_update)
        return self.lr

    def _scaled(self, base, indices, mults, attr):
        out = []
        param_dict, idx2name = self.param_dict, self.idx2name
        for index in indices:
            v = base
            if index in param_dict:
                v *= getattr(param_dict[index], attr)
            elif index in mults:
                v *= mults[index]
            elif index in idx2name:
                v *= mults.get(idx2name[index], 1.0)
            out.append(v)
        return out

    def _get_lrs(self, indices):
        """Learning rates for indices: the base lr times each one's lr_mult."""
        return self._scaled(self._base_lr(), indices, self.lr_mult, "lr_mult")

    def _get_lr(self, index):
        return self._get_lrs([index])[0]

    def _get_wds(self, indices):
        """Weight decays for indices: wd times each one's wd_mult."""
        return self._scaled(self.wd, indices, self.wd_mult, "wd_mult")

    def _get_wd(self, index):
        return self._get_wds([index])[0]

    # --- states and updates ------------------------------------------------------
    def create_state(self, index, weight):
        """The auxiliary state (momentum, ...) of one weight; None if it needs none."""
        return None

    def create_state_multi_precision(self, index, weight):
        """create_state, plus a float32 master copy for float16 weights when
        multi_precision is on: then the state is ``(weight32, state)``."""
        if self.multi_precision and weight.dtype == numpy.float16:
            master = weight.astype(numpy.float32)
            return (master, self.create_state(index, master))
        if weight.dtype == numpy.float16 and not self.multi_precision:
            warnings.warn("Accumulating with float16 in optimizer can lead to poor accuracy "
                          "or slow convergence. Consider using multi_precision=True option "
                          "of the optimizer")
        return self.create_state(index, weight)

    def update(self, index, weight, grad, state):
        """Update weight in place from grad and state."""
        raise NotImplementedError()

    def _aggregate_size(self, weights):
        """How many of these weights (one dtype) the Updater hands over per call when
        aggregating: ``aggregate_num``, the most one fused MXNet kernel takes."""
        return self.aggregate_num

    def update_multi_precision(self, index, weight, grad, state):
        """update, on the float32 master copy for float16 weights with
        multi_precision (then written back into weight)."""
        if self.multi_precision and weight.dtype == numpy.float16:
            master, inner = state
            self.update(index, master, grad.astype(numpy.float32), inner)
            _cast_into(master, weight)
        else:
            self.update(index, weight, grad, state)

    # --- pickling (Updater.get_states(dump_optimizer=True)) ---------------------
    def __getstate__(self):
        state = self.__dict__.copy()
        del state["param_dict"]            # Parameters are not part of the state
        state.pop("_gate", None)           # (a step's AMP gate, set while it updates)
        return state

    def __setstate__(self, state):
        self.__dict__ = state
        self.param_dict = {}               # set again by the Trainer


register = Optimizer.register
create = Optimizer.create_optimizer


class Updater:
    """Applies an optimizer to (index, grad, weight) triples, keeping one state per
    index (what KVStore and Module call)."""

    def __init__(self, optimizer):
        self.optimizer = optimizer
        self.states = {}
        self.states_synced = {}
        self.aggregate_updates = optimizer.aggregate_num > 0

    def __call__(self, index, grad, weight):
        gate = self.optimizer._gate
        if gate is not None and not self.optimizer.gates_updates and gate.skip():
            return          # AMP: this step's gradients overflowed
        if isinstance(index, (list, tuple)):
            indices, grads, weights = list(index), list(grad), list(weight)
        else:
            indices, grads, weights = [index], [grad], [weight]
        if weights:
            self.optimizer._set_current_context(weights[0].context.device_id)
        states, synced = self.states, self.states_synced
        for i, idx in enumerate(indices):
            if isinstance(idx, bytes):
                idx = indices[i] = idx.decode("utf-8")
            if idx not in states:
                states[idx] = self.optimizer.create_state_multi_precision(idx, weights[i])
                synced[idx] = True
            elif not synced[idx]:
                states[idx] = self.sync_state_context(states[idx], weights[i].context)
                synced[idx] = True
        if not self.aggregate_updates:
            for idx, w, g in zip(indices, weights, grads):
                self.optimizer.update_multi_precision(idx, w, g, states[idx])
            return
        # Aggregating optimizers take lists of one dtype on one device (one fused
        # kernel's operands), _aggregate_size weights each; a model split over devices
        # (group2ctx) hands over weights of several. (The device's type id tells the
        # same types apart as its name, without a lookup per weight.)
        groups = {}
        for item in zip(indices, weights, grads):
            w = item[1]
            ctx = w.context
            key = (numpy.dtype(w.dtype), ctx.device_typeid, ctx.device_id)
            group = groups.get(key)
            if group is None:
                groups[key] = [item]
            else:
                group.append(item)
        for items in groups.values():
            step = self.optimizer._aggregate_size([item[1] for item in items])
            for start in range(0, len(items), step):
                idxs, ws, gs = (list(x) for x in zip(*items[start:start + step]))
                self.optimizer.update_multi_precision(idxs, ws, gs,
                                                      [states[i] for i in idxs])

    def sync_state_context(self, state, context):
        """The state moved to context (NDArrays inside tuples/lists too)."""
        if isinstance(state, NDArray):
            return state.as_in_context(context)
        if isinstance(state, (tuple, list)):
            synced = [self.sync_state_context(s, context) for s in state]
            return tuple(synced) if isinstance(state, tuple) else synced
        return state

    def set_states(self, states, source="the states"):
        """Load states (and the optimizer, if it was dumped) from get_states' bytes."""
        try:
            states = pickle.loads(states)
        except Exception as err:       # truncated or not a states file at all
            raise MXNetError(f"invalid optimizer states in {source}: "
                             f"{type(err).__name__}: {err}") from None
        if not isinstance(states, (dict, tuple)):
            raise MXNetError(f"invalid optimizer states in {source}: got a "
                             f"{type(states).__name__}")
        if isinstance(states, tuple) and len(states) == 2:
            self.states, self.optimizer = states
        else:
            self.states = states
        self.states_synced = dict.fromkeys(self.states.keys(), False)

    def load_states_file(self, fname):
        """set_states from the file fname (as written by save_states)."""
        try:
            with open(fname, "rb") as f:
                data = f.read()
        except OSError as err:
            raise MXNetError(f"Failed to open {fname!r} for reading: {err.strerror}") \
                from None
        self.set_states(data, repr(fname))

    def get_states(self, dump_optimizer=False):
        """The states as bytes (pickled), with the optimizer when dump_optimizer."""
        return pickle.dumps((self.states, self.optimizer) if dump_optimizer else self.states)


def get_updater(optimizer):
    """An Updater for optimizer."""
    return Updater(optimizer)


def _zeros_like(weight, dtype=None, stype="default"):
    """A state array of weight's shape and context (float32 unless dtype is given, as
    MXNet's ``zeros(weight.shape, weight.context)``), of storage type ``stype``."""
    return zeros(weight.shape, weight.context, dtype=dtype, stype=stype)


def _state_stype(opt, weight):
    """The storage type MXNet gives the states of optimizers with a row_sparse rule:
    the weight's, unless the optimizer's lazy_update is off (then dense: the standard
    rule updates every row)."""
    return weight.stype if getattr(opt, "lazy_update", True) else "default"

