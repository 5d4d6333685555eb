"""``mxnet.executor_manager``: where MXNet 1.9.1 keeps the legacy data-parallel
executor helpers that ``mx.model.FeedForward`` trains with; the classes live in
``mxnet.module`` here."""
from .module.executor_manager import DataParallelExecutorManager  # noqa: F401
from .module.executor_group import DataParallelExecutorGroup  # noqa: F401

__all__ = ["DataParallelExecutorManager", "DataParallelExecutorGroup"]
