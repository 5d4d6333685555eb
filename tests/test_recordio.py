"""mx.recordio: byte compatibility with MXNet's .rec/.idx files (golden bytes written
by MXNet 1.9.1, and a plain-Python framing reference written here), headers, images,
corrupt files."""
import pickle
import struct

import numpy as np
import pytest

from mxnet import recordio
from mxnet.base import MXNetError

MAGIC = b"\x0a\x23\xd7\xce"
# MXRecordIO('w') of [b'', b'a', b'abcde', MAGIC*3 + b'xy', b'12' + MAGIC + b'56'] as
# written by MXNet 1.9.1 (magic words at aligned offsets split a record into parts).
GOLDEN = bytes.fromhex(
    "0a23d7ce00000000"
    "0a23d7ce0100000061000000"
    "0a23d7ce050000006162636465000000"
    "0a23d7ce000000200a23d7ce000000400a23d7ce000000400a23d7ce0200006078790000"
    "0a23d7ce0800000031320a23d7ce3536")
GOLDEN_RECORDS = [b"", b"a", b"abcde", MAGIC * 3 + b"xy", b"12" + MAGIC + b"56"]


def frame(payload):
    """Reference framing, byte by byte: split at aligned magic words, pad to 4."""
    parts, start = [], 0
    for i in range(0, len(payload) - len(payload) % 4, 4):
        if payload[i:i + 4] == MAGIC:
            parts.append(payload[start:i])
            start = i + 4
    parts.append(payload[start:])
    out = b""
    for k, part in enumerate(parts):
        if len(parts) == 1:
            cflag = 0
        else:
            cflag = 1 if k == 0 else (3 if k == len(parts) - 1 else 2)
        out += MAGIC + struct.pack("<I", cflag << 29 | len(part)) + part
        out += b"\0" * (-len(part) % 4)
    return out


def write(path, records):
    w = recordio.MXRecordIO(str(path), "w")
    for r in records:
        w.write(r)
    w.close()


def read_all(path):
    r = recordio.MXRecordIO(str(path), "r")
    out = []
    while True:
        rec = r.read()
        if rec is None:
            break
        out.append(rec)
    assert r.read() is None
    r.close()
    return out


def test_golden_bytes(tmp_path):
    write(tmp_path / "a.rec", GOLDEN_RECORDS)
    assert (tmp_path / "a.rec").read_bytes() == GOLDEN
    (tmp_path / "g.rec").write_bytes(GOLDEN)
    assert read_all(tmp_path / "g.rec") == GOLDEN_RECORDS


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_random_records_match_reference(tmp_path, seed):
    rng = np.random.RandomState(seed)
    records = []
    for _ in range(30):
        chunks = [rng.bytes(int(rng.randint(0, 9))) if rng.rand() < 0.6 else MAGIC
                  for _ in range(rng.randint(0, 6))]
        records.append(b"".join(chunks))
    write(tmp_path / "r.rec", records)
    assert (tmp_path / "r.rec").read_bytes() == b"".join(frame(r) for r in records)
    assert read_all(tmp_path / "r.rec") == records


def test_reset_and_pickle(tmp_path):
    write(tmp_path / "a.rec", [b"one", b"two"])
    r = recordio.MXRecordIO(str(tmp_path / "a.rec"), "r")
    assert r.read() == b"one"
    r.reset()
    assert r.read() == b"one"
    r2 = pickle.loads(pickle.dumps(r))       # a reader reopens at the start
    assert r2.read() == b"one" and r2.read() == b"two"
    r.close()
    r.close()                                # closing twice is harmless


def test_indexed(tmp_path):
    idx, rec = str(tmp_path / "a.idx"), str(tmp_path / "a.rec")
    w = recordio.MXIndexedRecordIO(idx, rec, "w")
    for i in range(3):
        assert w.tell() == 12 * i
        w.write_idx(i * 10, b"rec%d" % i)
    w.close()
    # The index MXNet 1.9.1 writes for these records.
    assert (tmp_path / "a.idx").read_text() == "0\t0\n10\t12\n20\t24\n"
    r = recordio.MXIndexedRecordIO(idx, rec, "r")
    assert r.keys == [0, 10, 20] and r.idx == {0: 0, 10: 12, 20: 24}
    assert r.read_idx(20) == b"rec2" and r.read() is None
    r.seek(10)
    assert r.read() == b"rec1"
    with pytest.raises(KeyError):
        r.read_idx(5)
    with pytest.raises(MXNetError, match="key 5"):
        r.read_idx(5)
    with pytest.raises(MXNetError):
        r.write(b"x")
    w = recordio.MXIndexedRecordIO(idx, rec, "w", key_type=str)
    w.write_idx("cat", b"meow")
    w.close()
    assert recordio.MXIndexedRecordIO(idx, rec, "r", key_type=str).read_idx("cat") == \
        b"meow"


def test_pack_unpack_golden():
    # Bytes from MXNet 1.9.1's pack for the same headers.
    s = recordio.pack(recordio.IRHeader(0, 3.5, 7, 0), b"xyz")
    assert s.hex() == "00000000000060400700000000000000000000000000000078797a"
    s = recordio.pack(recordio.IRHeader(0, [1, 2, 3], 7, 9), b"xyz")
    assert s.hex() == ("0300000000000000070000000000000009000000000000000000803f"
                       "000000400000404078797a")
    header, payload = recordio.unpack(s)
    assert header.flag == 3 and (header.id, header.id2) == (7, 9) and payload == b"xyz"
    np.testing.assert_array_equal(header.label, np.array([1, 2, 3], np.float32))
    header, payload = recordio.unpack(recordio.pack((5, 2.0, 1, 2), b""))
    assert header == (0, 2.0, 1, 2) and payload == b""
    assert type(recordio.IRHeader(0, 0, 0, 0)).__name__ == "HEADER"
    with pytest.raises(MXNetError, match="shorter"):
        recordio.unpack(b"abc")


def test_pack_img_roundtrip():
    pytest.importorskip("PIL")
    from PIL import Image
    import io
    rng = np.random.RandomState(0)
    img = rng.randint(0, 256, (7, 9, 3)).astype(np.uint8)    # BGR, as with OpenCV
    s = recordio.pack_img((0, 4.0, 3, 0), img, img_fmt=".png")
    header, back = recordio.unpack_img(s)
    assert header.label == 4.0 and header.id == 3
    np.testing.assert_array_equal(back, img)
    stored = np.asarray(Image.open(io.BytesIO(recordio.unpack(s)[1])))
    np.testing.assert_array_equal(stored, img[:, :, ::-1])     # the file holds RGB
    gray = recordio.unpack_img(s, iscolor=0)[1]
    ref = img[:, :, ::-1].astype(np.float64) @ [0.299, 0.587, 0.114]
    assert gray.shape == (7, 9) and np.abs(gray - ref).max() <= 1
    smooth = np.linspace(0, 255, 16 * 16 * 3).reshape(16, 16, 3).astype(np.uint8)
    _, jpg = recordio.unpack_img(recordio.pack_img((0, 0, 0, 0), smooth, quality=95))
    assert jpg.shape == smooth.shape and np.abs(jpg.astype(int) - smooth).mean() < 3
    with pytest.raises(MXNetError, match="format"):
        recordio.pack_img((0, 0, 0, 0), img, img_fmt=".xyz")


def test_bad_files(tmp_path):
    with pytest.raises(MXNetError, match="Invalid flag"):
        recordio.MXRecordIO(str(tmp_path / "a.rec"), "x")
    with pytest.raises(ValueError):
        recordio.MXRecordIO(str(tmp_path / "a.rec"), "x")
    with pytest.raises(MXNetError, match="cannot open"):
        recordio.MXRecordIO(str(tmp_path / "missing" / "a.rec"), "r")
    (tmp_path / "junk.rec").write_bytes(b"this is not a record file")
    with pytest.raises(MXNetError, match="magic"):
        recordio.MXRecordIO(str(tmp_path / "junk.rec"), "r").read()
    (tmp_path / "cut.rec").write_bytes(GOLDEN[:30])
    r = recordio.MXRecordIO(str(tmp_path / "cut.rec"), "r")
    assert r.read() == b"" and r.read() == b"a"
    with pytest.raises(MXNetError, match="truncated"):
        r.read()
    (tmp_path / "part.rec").write_bytes(MAGIC + struct.pack("<I", 2 << 29))
    with pytest.raises(MXNetError, match="continuation"):
        recordio.MXRecordIO(str(tmp_path / "part.rec"), "r").read()
    w = recordio.MXRecordIO(str(tmp_path / "w.rec"), "w")
    with pytest.raises(MXNetError, match="flag r"):
        w.read()
    w.close()
    with pytest.raises(MXNetError, match="closed"):
        w.write(b"x")
