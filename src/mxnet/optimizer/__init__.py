"""mx.optimizer: weight-update rules (MXNet 1.9.1's ``mx.optimizer``).

``mx.optimizer.create('sgd', learning_rate=0.1)`` builds one by name;
``mx.optimizer.get_updater(opt)`` wraps it for KVStore/Module. Every optimizer of
MXNet 1.9.1 is here: SGD, ccSGD, NAG, Signum, LARS, LBSGD, DCASGD, SGLD, Adam, AdaGrad,
RMSProp, AdaDelta, Ftrl, FTML, Adamax, Nadam, LAMB, Test, contrib.GroupAdaGrad.
"""
from . import optimizer, contrib  # noqa: F401
from .optimizer import Optimizer, Updater, create, get_updater, register  # noqa: F401
from .sgd import SGD, ccSGD, NAG, Signum, LARS, LBSGD, DCASGD, SGLD, Test  # noqa: F401
from .adaptive import (Adam, AdaGrad, RMSProp, AdaDelta, Ftrl, FTML, Adamax,  # noqa: F401
                       Nadam, LAMB)
from .contrib import GroupAdaGrad  # noqa: F401
from ..base import pickled_as as _pickled_as

# MXNet's module mx.optimizer.optimizer holds every optimizer class (Trainer.save_states
# pickles the optimizer itself; MXNet has no sgd / adaptive modules)
_pickled_as(optimizer.__name__,
            (SGD, ccSGD, NAG, Signum, LARS, LBSGD, DCASGD, SGLD, Test, Adam, AdaGrad,
             RMSProp, AdaDelta, Ftrl, FTML, Adamax, Nadam, LAMB))


def __getattr__(name):
    # MXNet re-exports ``NDabs`` (ndarray.abs) from here; resolve it lazily because the
    # elementwise operators register after this package is imported.
    if name == "NDabs":
        from ..ndarray import abs as nd_abs
        return nd_abs
    raise AttributeError(f"module 'mxnet.optimizer' has no attribute {name!r}")


__all__ = ["AdaDelta", "AdaGrad", "Adam", "Adamax", "DCASGD", "FTML", "Ftrl", "LARS",
           "LBSGD", "NAG", "Nadam", "Optimizer", "RMSProp", "SGD", "SGLD", "Signum",
           "LAMB", "Test", "Updater", "ccSGD", "create", "get_updater", "register"]
