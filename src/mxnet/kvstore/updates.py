"""Where weights are updated in data-parallel training, shared by ``mx.mod`` and
``mx.model``: on the KVStore (``update_on_kvstore``: gradients are pushed, the store
runs the optimizer, weights are pulled back) or locally (gradients are summed through
the store if there is one, then an ``Updater`` runs per device).
"""
import os

import numpy as np

from . import base as kvs

__all__ = []


def _create_kvstore(kvstore, num_device, arg_params):
    """(kvstore or None, update_on_kvstore) for a store spec and a device count.

    A string spec with one device and no 'dist' needs no store at all. 'local'
    stops updating on the store when a parameter exceeds 16M elements (the CPU
    would become the bottleneck); ``MXNET_UPDATE_ON_KVSTORE=0`` turns it off.
    """
    update_on_kvstore = bool(int(os.getenv("MXNET_UPDATE_ON_KVSTORE", "1")))
    if kvstore is None:
        kv = None
    elif isinstance(kvstore, kvs.KVStoreBase):
        kv = kvstore
    elif isinstance(kvstore, str):
        if num_device == 1 and "dist" not in kvstore:
            kv = None
        else:
            kv = kvs.create(kvstore)
            if kvstore == "local" and arg_params:
                max_size = max(int(np.prod(p.shape)) for p in arg_params.values())
                if max_size > 1024 * 1024 * 16:
                    update_on_kvstore = False
    else:
        raise TypeError("kvstore must be KVStore, str or None")
    if kv is None:
        update_on_kvstore = False
    else:
        update_on_kvstore &= kv.is_capable(kvs.KVStoreBase.OPTIMIZER)
    return kv, update_on_kvstore


def _initialize_kvstore(kvstore, param_arrays, arg_params, param_names, update_on_kvstore):
    """Put every parameter into the store (keyed by name); when the store updates,
    also pull it back to every device so all copies start equal."""
    for idx, param_on_devs in enumerate(param_arrays):
        name = param_names[idx]
        if update_on_kvstore:
            kvstore.broadcast(name, arg_params[name], out=param_on_devs)
        else:
            kvstore.init(name, arg_params[name])


def _update_params_on_kvstore(param_arrays, grad_arrays, kvstore, param_names):
    """Push each gradient list to the store (which runs the optimizer) and pull the
    updated weight to every device."""
    for index, (arg_list, grad_list) in enumerate(zip(param_arrays, grad_arrays)):
        if grad_list[0] is None:
            continue
        kvstore.pushpull(param_names[index], grad_list, out=arg_list, priority=-index)


def _update_params(param_arrays, grad_arrays, updater, num_device, kvstore=None,
                   param_names=None):
    """Update weights locally: sum the gradients across devices through the store (if
    any), then run ``updater`` once per device on all of that device's weights.

    Each (parameter i, device k) gets its own index ``i * num_device + k`` so the
    optimizer keeps separate state per device copy."""
    updates = [[] for _ in range(num_device)]
    for i, (arg_list, grad_list) in enumerate(zip(param_arrays, grad_arrays)):
        if grad_list[0] is None:
            continue
        if kvstore:
            kvstore.pushpull(param_names[i], grad_list, priority=-i)
        for k, (w, g) in enumerate(zip(arg_list, grad_list)):
            updates[k].append((i * num_device + k, g, w))
    for dev_updates in updates:
        if dev_updates:
            indices, grads, weights = zip(*dev_updates)
            updater(list(indices), list(grads), list(weights))
