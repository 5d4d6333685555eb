"""KVStoreBase (the interface every store implements), the store registry and
``create`` (MXNet 1.9.1's ``mx.kv.create``)."""
import warnings

from ..base import InvalidArgument, MXNetError

__all__ = ["KVStoreBase", "TestStore", "create"]


class KVStoreBase:
    """The interface of a key-value store for data-parallel training."""

    OPTIMIZER = "optimizer"
    kv_registry = {}

    def broadcast(self, key, value, out, priority=0):
        """Initialise key with value and pull it into out."""
        raise NotImplementedError()

    def pushpull(self, key, value, out=None, priority=0):
        """Push value (summed over its list) and pull the result into out (or value)."""
        raise NotImplementedError()

    def set_optimizer(self, optimizer):
        """Run optimizer on the store: pushes then update the stored weights."""
        raise NotImplementedError()

    def is_capable(self, capability):
        """Whether the store supports a capability (``KVStoreBase.OPTIMIZER``)."""
        raise NotImplementedError()

    def save_optimizer_states(self, fname, dump_optimizer=False):
        raise NotImplementedError()

    def load_optimizer_states(self, fname):
        raise NotImplementedError()

    @property
    def type(self):
        raise NotImplementedError()

    @property
    def rank(self):
        raise NotImplementedError()

    @property
    def num_workers(self):
        raise NotImplementedError()

    @staticmethod
    def register(klass):
        """Register a store class; ``create(name)`` finds it by lower-cased class name."""
        if not isinstance(klass, type):
            raise AssertionError("register expects a class")
        name = klass.__name__.lower()
        old = KVStoreBase.kv_registry.get(name)
        if old is not None and old is not klass:
            warnings.warn(f"WARNING: New kvstore {klass.__module__}.{klass.__name__} is "
                          f"overriding existing kvstore {old.__module__}.{old.__name__}")
        KVStoreBase.kv_registry[name] = klass
        return klass


@KVStoreBase.register
class TestStore(KVStoreBase):
    """A store with no state, for testing: broadcast copies, pushpull sums."""

    def broadcast(self, key, value, out, priority=0):
        for o in out if isinstance(out, list) else [out]:
            o[:] = value

    def pushpull(self, key, value, out=None, priority=0):
        from .kvstore import _reduce
        if isinstance(value, (list, tuple)):
            reduced = _reduce("teststore", list(value), value[0].context)
            targets = value if out is None else (out if isinstance(out, list) else [out])
        else:
            reduced = value
            targets = [] if out is None else (out if isinstance(out, list) else [out])
        for o in targets:
            o[:] = reduced.as_in_context(o.context)

    @staticmethod
    def is_capable(capability):
        if capability.lower() == KVStoreBase.OPTIMIZER:
            return False
        raise ValueError(f"Unknown capability: {capability}")

    @property
    def type(self):
        return "teststore"

    @property
    def rank(self):
        return 0

    @property
    def num_workers(self):
        return 1

    def set_optimizer(self, optimizer):
        raise NotImplementedError()

    def save_optimizer_states(self, fname, dump_optimizer=False):
        raise NotImplementedError()

    def load_optimizer_states(self, fname):
        raise NotImplementedError()


def create(name="local"):
    """Create a key-value store.

    ``'local'`` (aggregation and updates on the CPU; also ``'local_allreduce_cpu'``)
    and ``'device'`` (on the device of the first value; also ``'local_allreduce_device'``
    and ``'nccl'``) are single-process stores. ``'dist_sync'``, ``'dist_device_sync'``,
    ``'dist_async'`` and ``'horovod'`` are distributed stores over MPI (mpi4py, from
    ``pip install 'pymxnet[dist]'``); start the workers with ``python -m
    mxnet.tools.launch -n N ...`` or ``mpiexec -n N ...``. Names registered with ``KVStoreBase.register`` (``'teststore'``) create
    that class.
    """
    if not isinstance(name, str):
        raise TypeError("name must be a string")
    name = name.lower()
    if name in KVStoreBase.kv_registry:
        return KVStoreBase.kv_registry[name]()
    if "dist" in name or name == "horovod":
        from .dist import create as create_dist   # imports mpi4py only now
        return create_dist(name)
    if name == "byteps":
        raise MXNetError(f"KVStore type '{name}' is not available in pymxnet")
    if not is_known_type(name):
        raise InvalidArgument(f"mx.kv.create: unknown KVStore type {name!r}; expected one of "
                              f"{sorted(_LOCAL_TYPES | set(KVStoreBase.kv_registry))} or a "
                              "'dist_*' type")
    from .kvstore import KVStore
    return KVStore(name)


def is_known_type(name):
    """Whether mx.kv.create accepts the type name (a str)."""
    name = name.lower()
    return (name in _LOCAL_TYPES or name in KVStoreBase.kv_registry or "dist" in name
            or name in ("horovod", "byteps"))


_LOCAL_TYPES = {"local", "local_update_cpu", "local_allreduce_cpu", "local_allreduce_device",
                "device", "nccl"}
