"""Crash-safe file writing: every file pymxnet writes (parameters, checkpoints,
optimizer states, symbol JSON, record files) goes through here.

The data is written to a temporary file in the destination's directory, flushed,
fsynced and then renamed onto the destination with ``os.replace``, which is atomic on
POSIX and Windows. A process killed at any moment leaves the path holding either the
old file whole or the new one whole, never a torn mix; an error while writing removes
the temporary and leaves the old file alone.
"""
import contextlib
import os
import tempfile
import threading

from .base import MXNetError

__all__ = ["AtomicFile", "atomic_write", "write_bytes", "write_text", "together"]

# The permissions a plain open() would give a new file (mkstemp uses 0o600).
_UMASK = os.umask(0)
os.umask(_UMASK)
_group = threading.local()     # .pending: [AtomicFile] inside together()


class AtomicFile:
    """A file object for ``path`` whose content appears there only at ``commit()``.

    ``with AtomicFile(path) as f: f.write(...)`` commits on success and discards the
    temporary on an exception. ``abort()`` discards it explicitly.
    """

    def __init__(self, path, mode="wb", what="writing"):
        self.path = os.fspath(path)
        directory = os.path.dirname(os.path.abspath(self.path))
        try:
            fd, self.tmp = tempfile.mkstemp(
                prefix=f".{os.path.basename(self.path)}.", suffix=".tmp", dir=directory)
        except OSError as err:
            raise MXNetError(f"Failed to open {self.path!r} for {what}: "
                             f"{err.strerror or err}") from None
        try:
            self.file = os.fdopen(fd, mode, **({} if "b" in mode else {"encoding": "utf-8"}))
        except BaseException:
            os.close(fd)
            os.unlink(self.tmp)
            raise
        self.closed = False

    def write(self, data):
        return self.file.write(data)

    def tell(self):
        return self.file.tell()

    def flush(self):
        self.file.flush()

    def commit(self):
        """Make the written content the file at ``path`` (durably)."""
        if self.closed:
            return
        self.closed = True
        try:
            self.file.flush()
            os.fsync(self.file.fileno())
            self.file.close()
            os.chmod(self.tmp, 0o666 & ~_UMASK)
            pending = getattr(_group, "pending", None)
            if pending is not None:          # renamed with the rest of the group
                pending.append(self)
                return
            os.replace(self.tmp, self.path)
        except BaseException as err:
            self._discard()
            if isinstance(err, OSError):
                raise MXNetError(f"Failed to write {self.path!r}: "
                                 f"{err.strerror or err}") from err
            raise
        _fsync_dir(os.path.dirname(os.path.abspath(self.path)))

    def abort(self):
        """Drop what was written; ``path`` keeps its old content."""
        if self.closed:
            return
        self.closed = True
        self._discard()

    def _discard(self):
        try:
            self.file.close()
        except Exception:  # already failing: the temporary is removed regardless
            pass
        _unlink(self.tmp)

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self.commit()
        else:
            self.abort()
        return False


@contextlib.contextmanager
def together():
    """Files committed inside ``with together():`` (a checkpoint's symbol, parameters
    and optimizer states) are all written and fsynced first and renamed into place one
    right after the other at the end, so a kill can only fall in the microseconds
    between two renames; on an error none of them replaces its path."""
    if getattr(_group, "pending", None) is not None:     # nested: the outer one renames
        yield
        return
    _group.pending = pending = []
    try:
        yield
    except BaseException:
        _group.pending = None
        for f in pending:
            _unlink(f.tmp)
        raise
    _group.pending = None
    try:
        for i, f in enumerate(pending):
            os.replace(f.tmp, f.path)
    except OSError as err:
        for f in pending[i:]:
            _unlink(f.tmp)
        raise MXNetError(f"Failed to write {f.path!r}: {err.strerror or err}") from err
    for d in dict.fromkeys(os.path.dirname(os.path.abspath(f.path)) for f in pending):
        _fsync_dir(d)


def _unlink(path):
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def _fsync_dir(directory):
    """Persist the rename itself (a no-op where directories cannot be opened)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_write(path, mode="wb", what="writing"):
    """``with atomic_write(path) as f:`` — see :class:`AtomicFile`."""
    return AtomicFile(path, mode, what)


def write_bytes(path, data):
    """Replace the file at path with data (bytes), atomically."""
    with AtomicFile(path, "wb") as f:
        f.write(data)


def write_text(path, text):
    """Replace the file at path with text (UTF-8), atomically."""
    with AtomicFile(path, "w") as f:
        f.write(text)
