"""Storage chunks: an engine variable that also owns a device buffer."""
from ..engine.var import Var

__all__ = ["Chunk", "PooledChunk"]


class Chunk(Var):
    """A contiguous device array plus the engine Var that orders work on it.

    ``data`` is replaced wholesale when an operator writes a fresh result to the
    whole chunk (no copy); views (first-axis slices, reshapes) derive their array
    from ``data`` each time, so they always see the current buffer. ``block`` is the
    storage-pool block backing ``data`` when it came from a pool (a ``PooledChunk``);
    such buffers are written in place and returned to the pool when the chunk dies.
    ``exported``: the buffer is also seen outside pymxnet (``from_numpy(zero_copy=True)``,
    DLPack in either direction), so it is always written in place, never replaced: the
    other side keeps seeing this array's values, as it shares MXNet's fixed memory.
    """

    __slots__ = ("data", "block", "exported")

    def __init__(self, data=None):
        Var.__init__(self)
        self.data = data
        self.block = None
        self.exported = False


class PooledChunk(Chunk):
    """A Chunk whose buffer is a storage-pool block (executors' and hybridized blocks'
    outputs, ``storage.empty``): the block goes back to its pool when the chunk dies.
    A subclass of its own because a ``__del__`` doubles the cost of creating and
    freeing an object, and plain Chunks (every imperative result) have nothing to
    release."""

    __slots__ = ()

    def __init__(self, data, block):
        Chunk.__init__(self, data)
        self.block = block

    def __del__(self):
        block = self.block
        if block is not None and block.buffer is not None:
            block.pool.free(block)
