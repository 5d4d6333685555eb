"""NaiveEngine: runs each pushed function at push time, in the pushing thread."""
import threading

from ..backend import device_scope
from .base import Engine, RunContext

__all__ = ["NaiveEngine"]


class NaiveEngine(Engine):
    """Synchronous engine for debugging (``MXNET_ENGINE_TYPE=NaiveEngine``).

    Failures are still recorded on the mutated vars and raised at the next sync point,
    so code behaves the same under both engines.
    """

    def _push_block(self, fn, is_async, ctx, const_vars, mutate_vars, priority, name):
        owner = threading.get_ident()
        if self._inherit_failure(const_vars, mutate_vars, owner):
            return
        rctx = RunContext(ctx)
        try:
            with device_scope(ctx):
                self._call(fn, is_async, rctx)
        except BaseException as exc:  # recorded, raised at the sync point
            self._record_failure(exc, mutate_vars, name, const_vars, owner)
            if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                raise                 # the user stops now (the outputs stay poisoned)

    @staticmethod
    def _call(fn, is_async, rctx):
        """Run fn now; an asynchronous fn is waited for, its failure raised here."""
        if not is_async:
            fn(rctx)
            return
        done = threading.Event()
        failure = []

        def on_complete(exc=None):
            if exc is not None:
                failure.append(exc)
            done.set()
        fn(rctx, on_complete)
        done.wait()
        if failure:
            raise failure[0]

    def wait_for_var(self, var, write=False):
        self._raise_var(var)

    def wait_quietly(self, var, write=False):
        """Nothing is ever pending here: pushed work ran at push time."""

    def wait_for_all(self):
        self._raise_pending()
