"""Failures of pushed work, kept with the variables they poison (MXNet's per-variable
exception propagation).

A failed operation wraps its error in one :class:`AsyncError` shared by every variable
it wrote and by everything later computed from them. The first synchronisation point
that depends on any of those variables raises it and *consumes* it, for all of them at
once; ``waitall`` raises (and consumes) the failures of the work its own thread pushed.
The failed operation's inputs, unrelated variables and other threads' work never see it.
"""
import threading
import weakref

from ..base import InvalidArgument, InvalidArgumentType, InvalidIndex, MXNetError

__all__ = ["AsyncError", "as_mxnet_error", "describe_failure", "live_error", "operator_error"]

_lock = threading.Lock()


def _kind(exc):
    """The MXNetError class for exc: one that is also an IndexError, ValueError or
    TypeError when exc is, so either ``except`` clause catches it."""
    if isinstance(exc, MXNetError):
        return type(exc)
    for builtin, cls in ((IndexError, InvalidIndex), (TypeError, InvalidArgumentType),
                         (ValueError, InvalidArgument)):
        if isinstance(exc, builtin):
            return cls
    return MXNetError


def as_mxnet_error(exc):
    """exc as an MXNetError (kept when it already is one, e.g. MXNet's ValueError)."""
    if isinstance(exc, MXNetError):
        return exc
    err = _kind(exc)(f"{type(exc).__name__}: {exc}")
    err.__cause__ = exc
    return err


def describe_failure(exc, op_name=None, in_shapes=None):
    """An MXNetError for a failure inside an operator's computation that names the
    operator and the shapes it read (MXNet's message names neither)."""
    if op_name is None or getattr(exc, "_mx_op_named", False):
        return as_mxnet_error(exc)
    where = f"Error in operator {op_name}"
    if in_shapes is not None:
        where += f" (inputs of shape {[tuple(s) for s in in_shapes]})"
    detail = str(exc) if isinstance(exc, MXNetError) else f"{type(exc).__name__}: {exc}"
    return operator_error(exc, f"{where}: {detail}")


def operator_error(exc, message):
    """An MXNetError with ``message`` for ``exc`` raised inside an operator, of the class
    that keeps its kind (MXNet's ValueError/IndexError... subclasses), marked as already
    naming the operator so it is not wrapped again."""
    try:
        err = _kind(exc)(message)
    except Exception:          # a subclass with another constructor signature
        err = MXNetError(message)
    err.__cause__ = exc
    err._mx_op_named = True
    return err


class AsyncError:
    """One failure, shared by the variables it poisons until it is raised once."""

    __slots__ = ("error", "owners", "_vars")

    def __init__(self, error, owner):
        self.error = error             # None once consumed
        self.owners = {owner}          # threads whose pushed work it belongs to
        self._vars = []                # weak references to the poisoned variables

    def attach(self, var, owner=None):
        """Poison var with this failure. As in MXNet, this includes every var the failed
        work mutated, a random generator's too: later draws share the failure until it
        is raised (test_exc_handling's test_exc_imperative relies on it)."""
        var.exception = self
        self._vars.append(weakref.ref(var))
        if owner is not None:
            self.owners.add(owner)

    def consume(self):
        """Take the error (None if already taken) and clear it from every variable."""
        with _lock:
            err, self.error = self.error, None
            refs, self._vars = self._vars, []
        for r in refs:
            v = r()
            if v is not None and v.exception is self:
                v.exception = None
        return err


def live_error(var):
    """The not-yet-raised failure on var, as an AsyncError or a plain exception
    (permanent markers such as an unavailable custom-op input), else None."""
    e = var.exception
    if e is None:
        return None
    if isinstance(e, AsyncError):
        if e.error is None:
            var.exception = None       # consumed elsewhere: forget the stale cell
            return None
        return e
    return e
