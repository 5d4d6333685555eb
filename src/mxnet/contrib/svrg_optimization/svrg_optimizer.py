"""The optimizer SVRGModule hands to its KVStore (MXNet 1.9.1's
``mx.contrib.svrg_optimization.svrg_optimizer``).

SVRGModule keeps two kinds of keys in the store: each parameter (updated by the
user's optimizer from SVRG-corrected gradients) and, per parameter, a key
``<name>_full`` through which the per-device full gradients are summed. The
``_full`` keys must not be "optimised": the store's value should become exactly what
was pushed. ``_SVRGOptimizer`` routes each key to the right rule.
"""
from ...optimizer import Optimizer, create, register

__all__ = []

# The constructor arguments of the Optimizer base class: _SVRGOptimizer keeps these
# for itself; everything (these and the rest) also goes to the wrapped optimizer.
_BASE_PARAMS = ("rescale_grad", "param_idx2name", "wd", "clip_gradient", "learning_rate",
                "lr_scheduler", "sym", "begin_num_update", "multi_precision", "param_dict")

# The suffix of the KVStore keys that accumulate full gradients.
FULL_SUFFIX = "_full"


@register
class _AssignmentOptimizer(Optimizer):
    """The update ``weight = grad``: the stored value becomes the pushed (summed)
    value, which is how full gradients are accumulated across devices and workers."""

    def update(self, index, weight, grad, state):
        weight[:] = grad


@register
class _SVRGOptimizer(Optimizer):
    """An optimizer wrapper for SVRG: parameters whose name ends in ``_full`` get
    ``_AssignmentOptimizer``'s assignment, every other parameter the default optimizer.

    Parameters
    ----------
    default_optimizer : str or Optimizer
        The optimizer of the model's parameters. A name is created with all of
        ``kwargs`` (e.g. ``'sgd'`` with ``learning_rate``, ``momentum``).
    **kwargs
        The Optimizer base arguments (``learning_rate``, ``rescale_grad``,
        ``param_idx2name``, ...) and the default optimizer's own arguments.
    """

    def __init__(self, default_optimizer, **kwargs):
        super().__init__(**{k: v for k, v in kwargs.items() if k in _BASE_PARAMS})
        if isinstance(default_optimizer, str):
            self.default_opt = create(default_optimizer, **kwargs)
        elif isinstance(default_optimizer, Optimizer):
            self.default_opt = default_optimizer
        else:
            raise TypeError(f"_SVRGOptimizer: default_optimizer must be an optimizer name "
                            f"or an mx.optimizer.Optimizer, got "
                            f"{type(default_optimizer).__name__}")
        self.aux_opt = create(_AssignmentOptimizer.__name__)

    def _check_index(self, index):
        """The parameter name of index (the index itself when it is not in idx2name:
        KVStore keys are already names)."""
        return self.idx2name.get(index, index)

    def _is_full(self, index):
        name = self._check_index(index)
        # only the suffix marks a full-gradient key: a parameter such as
        # 'fullyconnected0_weight' is a model parameter
        return isinstance(name, str) and name.endswith(FULL_SUFFIX)

    def _rule(self, index):
        return self.aux_opt if self._is_full(index) else self.default_opt

    def create_state(self, index, weight):
        return self._rule(index).create_state(index, weight)

    def create_state_multi_precision(self, index, weight):
        return self._rule(index).create_state_multi_precision(index, weight)

    def update(self, index, weight, grad, state):
        self._rule(index).update(index, weight, grad, state)

    def update_multi_precision(self, index, weight, grad, state):
        self._rule(index).update_multi_precision(index, weight, grad, state)

    def _set_current_context(self, device_id):
        super()._set_current_context(device_id)
        self.default_opt._set_current_context(device_id)
