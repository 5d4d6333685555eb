"""Random, thread-safe access to the records of a RecordIO file, for the image
iterators: an offset table (from the .idx file or one scan of the .rec) plus
positional reads (``os.pread``) that need no shared file position or lock."""
import os
import struct

from ..base import MXNetError
from ..recordio import _LEN_MASK, _MAGIC, _MAGIC_BYTES

__all__ = ["RecordFile"]

_HEAD = struct.Struct("<II")


class RecordFile:
    """Records of ``path`` by position. ``keys[i]`` is the i-th record's key (from the
    index file, else its position) and ``offsets[i]`` its byte offset."""

    def __init__(self, path, idx_path=None, owner="RecordIO"):
        self.path = os.fspath(path)
        self.owner = owner
        try:
            self._fd = os.open(self.path, os.O_RDONLY)
        except OSError as err:
            raise MXNetError(f"{owner}: cannot open record file {self.path!r}: "
                             f"{err.strerror}") from None
        self._size = os.fstat(self._fd).st_size
        if idx_path:
            self.keys, self.offsets = self._read_index(os.fspath(idx_path))
        else:
            self.offsets = self._scan()
            self.keys = list(range(len(self.offsets)))

    def __len__(self):
        return len(self.offsets)

    def close(self):
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shutdown
            pass

    def _read_index(self, idx_path):
        keys, offsets = [], []
        try:
            with open(idx_path) as f:
                for lineno, line in enumerate(f, 1):
                    fields = line.split()
                    if not fields:
                        continue
                    if len(fields) < 2:
                        raise MXNetError(f"{self.owner}: bad line {lineno} in index "
                                         f"{idx_path!r}: {line.strip()!r}")
                    keys.append(int(fields[0]))
                    offsets.append(int(fields[1]))
        except OSError as err:
            raise MXNetError(f"{self.owner}: cannot open index {idx_path!r}: "
                             f"{err.strerror}") from None
        except ValueError:
            raise MXNetError(f"{self.owner}: index {idx_path!r} is not a RecordIO index "
                             "(expected 'key<TAB>offset' lines)") from None
        return keys, offsets

    def _header(self, pos):
        head = os.pread(self._fd, 8, pos)
        if len(head) < 8:
            raise MXNetError(f"{self.owner}: truncated record header at byte {pos} of "
                             f"{self.path!r}")
        magic, lrec = _HEAD.unpack(head)
        if magic != _MAGIC:
            raise MXNetError(f"{self.owner}: invalid record at byte {pos} of {self.path!r}"
                             f": magic {magic:#010x}, expected {_MAGIC:#010x} (not a "
                             "RecordIO file, or corrupt)")
        return lrec >> 29, lrec & _LEN_MASK

    def _scan(self):
        offsets, pos = [], 0
        while pos < self._size:
            cflag, length = self._header(pos)
            if cflag in (0, 1):
                offsets.append(pos)
            pos += 8 + length + (-length % 4)
        if pos > self._size:
            raise MXNetError(f"{self.owner}: {self.path!r} is truncated (last record "
                             "runs past the end of the file)")
        return offsets

    def read(self, i):
        """The bytes of the i-th record."""
        pos = self.offsets[i]
        parts = []
        while True:
            cflag, length = self._header(pos)
            if not parts and cflag in (2, 3):
                raise MXNetError(f"{self.owner}: corrupt {self.path!r}: byte {pos} holds "
                                 "the continuation of a record, not its start")
            data = os.pread(self._fd, length, pos + 8)
            if len(data) < length:
                raise MXNetError(f"{self.owner}: record at byte {pos} of {self.path!r} "
                                 "is truncated")
            parts.append(data)
            pos += 8 + length + (-length % 4)
            if cflag in (0, 3):
                break
            if pos >= self._size:
                raise MXNetError(f"{self.owner}: multi-part record at byte "
                                 f"{self.offsets[i]} of {self.path!r} ends early")
        return parts[0] if len(parts) == 1 else _MAGIC_BYTES.join(parts)
