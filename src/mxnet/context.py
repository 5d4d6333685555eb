"""Device contexts: mx.cpu(i), mx.gpu(i), `with ctx:` scoping and the current context."""
import threading

from .base import MXNetError
from . import storage
from .backend import gpu_count, gpu_memory_info as info

__all__ = ["Context", "cpu", "gpu", "cpu_pinned", "current_context", "num_gpus",
           "gpu_memory_info"]


class _ContextMeta(type):
    @property
    def default_ctx(cls):
        """The context of this thread (``with ctx:`` or set here), cpu(0) by default."""
        return current_context()

    @default_ctx.setter
    def default_ctx(cls, ctx):
        if not isinstance(ctx, Context):
            raise TypeError(f"Context.default_ctx must be a Context, got {ctx!r}")
        Context._local.value = ctx


class Context(metaclass=_ContextMeta):
    """A device and its id, e.g. ``mx.cpu(0)`` or ``mx.gpu(1)``.

    Used as ``with mx.gpu(0): ...`` it becomes the default context for arrays created
    inside the block.
    """

    devtype2str = {1: "cpu", 2: "gpu", 3: "cpu_pinned", 5: "cpu_shared"}
    devstr2type = {v: k for k, v in devtype2str.items()}
    _local = threading.local()
    __slots__ = ("device_typeid", "device_id", "_old_ctx")

    def __init__(self, device_type, device_id=0):
        if isinstance(device_type, Context):
            self.device_typeid, self.device_id = device_type.device_typeid, device_type.device_id
        else:
            if device_type not in self.devstr2type:
                raise MXNetError(f"unknown device type {device_type!r}; "
                                 f"expected one of {sorted(self.devstr2type)}")
            if not isinstance(device_id, int) or device_id < 0:
                raise MXNetError(f"device id must be a non-negative int, got {device_id!r}")
            self.device_typeid = self.devstr2type[device_type]
            self.device_id = device_id
        self._old_ctx = None

    # Pickled as MXNet pickles it (its Context has a __dict__): a dict of the three
    # fields, so a Context inside any pickle (a Gluon block's parameters) loads both here
    # and in MXNet 1.x; a with-block in progress is not part of the state.
    def __getstate__(self):
        return {"device_typeid": self.device_typeid, "device_id": self.device_id,
                "_old_ctx": None}

    def __setstate__(self, state):
        if isinstance(state, tuple):        # (None, slots) from earlier pymxnet pickles
            state = state[1]
        self.device_typeid = state["device_typeid"]
        self.device_id = state["device_id"]
        self._old_ctx = None

    @property
    def device_type(self):
        return self.devtype2str[self.device_typeid]

    def __hash__(self):
        return hash((self.device_typeid, self.device_id))

    def __eq__(self, other):
        return (isinstance(other, Context) and self.device_typeid == other.device_typeid
                and self.device_id == other.device_id)

    def __str__(self):
        return f"{self.device_type}({self.device_id})"

    __repr__ = __str__

    def __enter__(self):
        self._old_ctx = current_context()
        Context._local.value = self
        return self

    def __exit__(self, *exc):
        Context._local.value = self._old_ctx

    def empty_cache(self):
        """Release pooled memory of this device back to the system (on a GPU, also the
        free blocks of CuPy's memory pool, after the device has finished its work)."""
        storage.get_pool(self).release_all()
        if self.device_typeid == 2:
            from .backend import release_gpu_cache, sync_device
            sync_device(self.device_id)
            release_gpu_cache(self.device_id)

    @property
    def is_gpu(self):
        return self.device_typeid == 2


def cpu(device_id=0):
    """The CPU context. The id is kept for MXNet compatibility; all cpu ids share memory."""
    return Context("cpu", device_id)


def cpu_pinned(device_id=0):
    """Page-locked host memory in MXNet. pymxnet keeps such arrays in ordinary host
    memory (NumPy): they behave as CPU arrays and mix freely with them."""
    return Context("cpu_pinned", device_id)


def gpu(device_id=0):
    """A GPU context. Creating it never fails; using it without CUDA raises MXNetError."""
    return Context("gpu", device_id)


def current_context():
    """The context set by the innermost ``with ctx:`` block, cpu(0) otherwise."""
    ctx = getattr(Context._local, "value", None)
    return ctx if ctx is not None else _DEFAULT


_DEFAULT = Context("cpu", 0)


def num_gpus():
    """Number of CUDA GPUs visible through CuPy; 0 when CuPy or CUDA is absent."""
    return gpu_count()


def gpu_memory_info(device_id=0):
    """(free, total) bytes of GPU memory."""
    return info(device_id)
