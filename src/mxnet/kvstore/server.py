"""``KVStoreServer``: the loop a parameter-server process runs in MXNet 1.9.1.

pymxnet's distributed stores have no server processes: workers reduce with MPI (sync) or
rank 0 serves from a thread (async), see ``dist.py``/``dist_async.py``. A server object
can be made around a store, but running one is not possible and says so."""
from .base import KVStoreBase

__all__ = ["KVStoreServer"]


class KVStoreServer:
    """The server side of a distributed KVStore (``kvstore``: the store it serves)."""

    def __init__(self, kvstore):
        if not isinstance(kvstore, KVStoreBase):
            raise TypeError(f"KVStoreServer needs a KVStore, got {type(kvstore).__name__}")
        self.kvstore = kvstore
        self.handle = getattr(kvstore, "handle", None)

    def _controller(self):
        raise NotImplementedError(
            "KVStoreServer._controller: pymxnet has no parameter-server processes "
            "(workers reduce over MPI; 'dist_async' serves from rank 0's thread)")

    def run(self):
        """Serve requests until the workers stop (not available in pymxnet)."""
        raise NotImplementedError(
            "KVStoreServer.run: pymxnet has no parameter-server processes; start only "
            "workers (python -m mxnet.tools.launch -n N ...), they reduce over MPI")
