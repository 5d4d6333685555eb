"""Engine variables: the tags that order pushed work (seed 002's VarHandle)."""
__all__ = ["Var"]


class Var:
    """A dependency tag. Work pushed with the same Var in ``mutate_vars`` runs in push
    order; readers see the last earlier writer.

    ``num_pending`` counts pushed operations that reference this var and have not
    completed; the NDArray fast path reads it without a lock (only the engine's workers
    decrement it, so a zero read from the pushing thread is final).
    """

    __slots__ = ("num_pending", "exception", "_queue", "_active_reads", "_active_write",
                 "_deleted", "name", "__weakref__")

    def __init__(self, name=None):
        self.num_pending = 0
        self.exception = None
        # (block, is_write) entries waiting for their turn; made on the first wait (most
        # arrays never wait: not allocating one keeps array creation cheap)
        self._queue = None
        self._active_reads = 0
        self._active_write = False
        self._deleted = False
        self.name = name

    def __repr__(self):
        return f"<Var {self.name or hex(id(self))} pending={self.num_pending}>"
