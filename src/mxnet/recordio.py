"""mx.recordio: read and write MXNet RecordIO (.rec) files and their .idx indexes.

The on-disk format is dmlc-core's RecordIO, byte for byte: every record starts with the
magic word 0xced7230a and a little-endian uint32 ``cflag << 29 | length``, followed by
``length`` bytes padded with zeros to a multiple of 4. A payload that contains the magic
word at a 4-byte aligned offset is cut there into parts (cflag 1 = first, 2 = middle,
3 = last; 0 = whole record) and the magic word itself is left out, so a reader that
resynchronises on magic words never mistakes payload for a header.

Image records (``pack``/``pack_img``) prefix the payload with an ``IRHeader`` packed as
struct ``'IfQQ'`` (flag, label, id, id2); when ``flag > 0`` the label field holds 0 and
``flag`` float32 labels follow the header.
"""
import numbers
import os
import struct
from collections import namedtuple

import numpy as np

from .atomic_file import AtomicFile, together
from .base import MXNetError
from .backend import image_codec as codec

__all__ = ["MXRecordIO", "MXIndexedRecordIO", "IRHeader", "pack", "unpack",
           "pack_img", "unpack_img"]

_MAGIC = 0xCED7230A
_MAGIC_BYTES = struct.pack("<I", _MAGIC)
_LEN_MASK = (1 << 29) - 1
_HEAD = struct.Struct("<II")


class RecordIOValueError(MXNetError, ValueError):
    """Bad argument to a RecordIO call (an MXNetError that is also a ValueError)."""


class RecordIOKeyError(MXNetError, KeyError):
    """A key missing from an indexed RecordIO file (also a KeyError)."""


def _pad(n):
    return -n % 4


def encode_record(buf):
    """The bytes dmlc's RecordIOWriter writes for one record holding ``buf``."""
    size = len(buf)
    if size > _LEN_MASK:
        raise RecordIOValueError(f"RecordIO: a record holds at most {_LEN_MASK} bytes, "
                                 f"got {size}")
    aligned = size - size % 4
    hits = ()
    if aligned:
        words = np.frombuffer(buf, dtype="<u4", count=aligned // 4)
        hits = np.flatnonzero(words == _MAGIC) * 4
    out, start = [], 0
    for pos in hits:
        pos = int(pos)
        out.append(_HEAD.pack(_MAGIC, ((1 if start == 0 else 2) << 29) | (pos - start)))
        out.append(buf[start:pos])
        start = pos + 4
    out.append(_HEAD.pack(_MAGIC, ((3 if start else 0) << 29) | (size - start)))
    out.append(buf[start:])
    out.append(b"\0" * _pad(size - start))
    return b"".join(out)


def _finish(handle, owner_pid):
    """Close a record or index file; a writer's content replaces the path now. A
    forked child holding a copy of a writer leaves the parent's temporary alone."""
    if isinstance(handle, AtomicFile):
        if owner_pid == os.getpid():
            handle.commit()
    else:
        handle.close()


class MXRecordIO:
    """Reads or writes a sequence of records in a RecordIO file.

    Parameters
    ----------
    uri : str
        Path to the record file.
    flag : str
        'w' to write, 'r' to read.
    """

    def __init__(self, uri, flag):
        self.uri = os.fspath(uri)
        self.handle = None
        self.flag = flag
        self.pid = None
        self.is_open = False
        self.open()

    def open(self):
        """Opens the file (truncating it in 'w' mode)."""
        if self.flag == "w":
            mode, self.writable = "wb", True
        elif self.flag == "r":
            mode, self.writable = "rb", False
        else:
            raise RecordIOValueError(f"Invalid flag {self.flag}")
        try:
            # A writer fills a temporary beside uri, renamed onto it at close().
            self.handle = AtomicFile(self.uri, mode) if self.writable else open(self.uri, mode)
        except (OSError, MXNetError) as err:
            raise MXNetError(f"RecordIO: cannot open {self.uri!r} for "
                             f"{'writing' if self.writable else 'reading'}: "
                             f"{getattr(err, 'strerror', None) or err}") from None
        self.pid = os.getpid()
        self.is_open = True

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shutdown: nothing useful to report
            pass

    def __getstate__(self):
        state = dict(self.__dict__)
        state["handle"] = None
        return state

    def __setstate__(self, state):
        was_open = state["is_open"]
        self.__dict__.update(state)
        self.is_open = False
        self.handle = None
        if was_open:
            self.open()

    def _check_pid(self, allow_reset=False):
        # A forked child shares the parent's file offset; a reader reopens, a writer
        # must not (two processes appending to one file would interleave records).
        if self.pid != os.getpid():
            if allow_reset:
                self.reset()
            else:
                raise MXNetError("RecordIO: forbidden operation in multiple processes")

    def close(self):
        """Closes the file."""
        if not self.is_open:
            return
        _finish(self.handle, self.pid)
        self.handle = None
        self.is_open = False
        self.pid = None

    def reset(self):
        """Goes back to the first record (reopens the file; 'w' truncates it)."""
        self.close()
        self.open()

    def _require(self, writable, what):
        if not self.is_open:
            raise MXNetError(f"RecordIO: {what} on a closed file {self.uri!r}")
        if self.writable != writable:
            raise MXNetError(f"RecordIO: {what} needs a file opened with flag "
                             f"{'w' if writable else 'r'}, {self.uri!r} has {self.flag!r}")

    def write(self, buf):
        """Appends one record holding the bytes ``buf``."""
        self._require(True, "write")
        self._check_pid(allow_reset=False)
        self.handle.write(encode_record(bytes(buf)))

    def read(self):
        """The next record's bytes, or None at the end of the file."""
        self._require(False, "read")
        self._check_pid(allow_reset=True)
        return self._read_record()

    def tell(self):
        """The current byte offset in the file."""
        if not self.is_open:
            raise MXNetError(f"RecordIO: tell on a closed file {self.uri!r}")
        return self.handle.tell()

    def _read_part(self):
        start = self.handle.tell()
        head = self.handle.read(8)
        if not head:
            return None, None
        if len(head) < 8:
            raise MXNetError(f"RecordIO: truncated record header at byte {start} of "
                             f"{self.uri!r}")
        magic, lrec = _HEAD.unpack(head)
        if magic != _MAGIC:
            raise MXNetError(f"RecordIO: invalid record at byte {start} of {self.uri!r}: "
                             f"magic {magic:#010x}, expected {_MAGIC:#010x} "
                             "(not a RecordIO file, or corrupt)")
        length = lrec & _LEN_MASK
        data = self.handle.read(length + _pad(length))
        if len(data) < length:
            raise MXNetError(f"RecordIO: record at byte {start} of {self.uri!r} is "
                             f"truncated ({len(data)} of {length} bytes)")
        return lrec >> 29, data[:length]

    def _read_record(self):
        cflag, data = self._read_part()
        if cflag is None or cflag == 0:
            return data
        if cflag != 1:
            raise MXNetError(f"RecordIO: corrupt {self.uri!r}: continuation part "
                             f"(cflag {cflag}) without a first part")
        parts = [data]
        while cflag != 3:
            cflag, data = self._read_part()
            if cflag not in (2, 3):
                raise MXNetError(f"RecordIO: corrupt {self.uri!r}: multi-part record "
                                 "ends early")
            parts.append(data)
        return _MAGIC_BYTES.join(parts)


class MXIndexedRecordIO(MXRecordIO):
    """A RecordIO file with a text index (``key\\tbyte_offset`` per line) for random
    access.

    Parameters
    ----------
    idx_path : str
        Path to the index file.
    uri : str
        Path to the record file.
    flag : str
        'w' to write, 'r' to read.
    key_type : type
        Type of the keys (int by default).
    """

    def __init__(self, idx_path, uri, flag, key_type=int):
        self.idx_path = os.fspath(idx_path)
        self.idx = {}
        self.keys = []
        self.key_type = key_type
        self.fidx = None
        super().__init__(uri, flag)

    def open(self):
        super().open()
        self.idx = {}
        self.keys = []
        try:
            self.fidx = AtomicFile(self.idx_path, "w") if self.writable else \
                open(self.idx_path, self.flag)
        except (OSError, MXNetError) as err:
            super().close()
            raise MXNetError(f"RecordIO: cannot open index {self.idx_path!r}: "
                             f"{getattr(err, 'strerror', None) or err}") from None
        if not self.writable:
            for lineno, line in enumerate(self.fidx, 1):
                fields = line.split()
                if not fields:
                    continue
                if len(fields) < 2:
                    raise MXNetError(f"RecordIO: bad line {lineno} in index "
                                     f"{self.idx_path!r}: {line.strip()!r}")
                key = self.key_type(fields[0])
                self.idx[key] = int(fields[1])
                self.keys.append(key)

    def close(self):
        if not self.is_open:
            return
        pid = self.pid
        with together():      # record file and index replace the old ones together
            super().close()
            _finish(self.fidx, pid)
        self.fidx = None

    def __getstate__(self):
        state = super().__getstate__()
        state["fidx"] = None
        return state

    def seek(self, idx):
        """Moves to the record with key ``idx`` (read mode)."""
        self._require(False, "seek")
        self._check_pid(allow_reset=True)
        try:
            pos = self.idx[idx]
        except KeyError:
            raise RecordIOKeyError(f"RecordIO: key {idx!r} is not in index "
                                   f"{self.idx_path!r}") from None
        self.handle.seek(pos)

    def tell(self):
        """The byte offset where the next record will be written (write mode)."""
        self._require(True, "tell")
        return self.handle.tell()

    def read_idx(self, idx):
        """The bytes of the record with key ``idx``."""
        self.seek(idx)
        return self.read()

    def write_idx(self, idx, buf):
        """Appends a record under key ``idx``."""
        key = self.key_type(idx)
        pos = self.tell()
        self.write(buf)
        self.fidx.write(f"{key}\t{pos}\n")
        self.idx[key] = pos
        self.keys.append(key)


IRHeader = namedtuple("HEADER", ["flag", "label", "id", "id2"])
IRHeader.__doc__ = """Header of an image record: flag (number of extra float32 labels,
0 for a single label kept in ``label``), label, id and id2 (two uint64 ids)."""

_IR_FORMAT = "IfQQ"
_IR_SIZE = struct.calcsize(_IR_FORMAT)


def pack(header, s):
    """Packs an IRHeader and a bytes payload into one record's bytes.

    A header whose label is a list or array stores all labels after the header
    (flag = number of labels).
    """
    header = IRHeader(*header)
    if isinstance(header.label, numbers.Number):
        header = header._replace(flag=0)
    else:
        label = np.asarray(header.label, dtype=np.float32).ravel()
        header = header._replace(flag=label.size, label=0)
        s = label.tobytes() + bytes(s)
    try:
        head = struct.pack(_IR_FORMAT, *header)
    except struct.error as err:
        raise RecordIOValueError(f"pack: bad IRHeader {tuple(header)}: {err}") from None
    return head + bytes(s)


def unpack(s):
    """Splits a record's bytes into (IRHeader, payload bytes)."""
    if len(s) < _IR_SIZE:
        raise MXNetError(f"unpack: record of {len(s)} bytes is shorter than an IRHeader "
                         f"({_IR_SIZE} bytes)")
    header = IRHeader(*struct.unpack(_IR_FORMAT, s[:_IR_SIZE]))
    s = s[_IR_SIZE:]
    if header.flag > 0:
        if len(s) < 4 * header.flag:
            raise MXNetError(f"unpack: header says {header.flag} labels but only "
                             f"{len(s)} bytes follow")
        header = header._replace(label=np.frombuffer(s, np.float32, header.flag))
        s = s[4 * header.flag:]
    return header, s


def unpack_img(s, iscolor=-1):
    """Unpacks a record into (IRHeader, image as a numpy uint8 array in BGR order, as
    OpenCV's imdecode gives it). ``iscolor``: -1 keeps the stored channels, 0 gives a
    2-D grayscale image, 1 a 3-channel color image."""
    header, s = unpack(s)
    return header, codec.decode(s, flag=iscolor, to_rgb=False, squeeze_gray=True)


def pack_img(header, img, quality=95, img_fmt=".jpg"):
    """Encodes a numpy image (HxW or HxWxC, BGR order as with OpenCV) as JPEG or PNG and
    packs it with ``header``. ``quality`` is the JPEG quality (1-100) or the PNG
    compression level (0-9)."""
    buf = codec.encode(np.asarray(img), img_fmt, quality, from_bgr=True)
    return pack(header, buf)
