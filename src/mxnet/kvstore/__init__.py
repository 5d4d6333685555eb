"""mx.kvstore / mx.kv: key-value stores for data-parallel training (MXNet 1.9.1).

``mx.kv.create('local')`` or ``'device'`` gives a single-process store: ``init`` keys,
``push`` gradients (a list per key is summed: one value per device), ``pull`` the
result back, optionally running an optimizer on the store (``set_optimizer``).
"""
from .base import KVStoreBase, TestStore, create  # noqa: F401
from .kvstore import KVStore  # noqa: F401
from .server import KVStoreServer  # noqa: F401

__all__ = ["KVStore", "KVStoreBase", "create"]
