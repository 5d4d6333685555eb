"""mx.nd.save / load / load_frombuffer against files written by MXNet 1.9.1, the
documented byte layout, round trips and corrupt input."""
import hashlib
import json
import struct

import numpy as np
import pytest

import mxnet as mx
from mxnet.base import MXNetError
from common import fixture_path

nd = mx.nd

with open(fixture_path("manifest.json")) as _f:
    MANIFEST = json.load(_f)

ALL_FILES = ["ndarray/dense_dict.nd", "ndarray/dense_list.nd", "ndarray/npshape_dict.nd",
             "ndarray/sparse_csr.nd", "ndarray/sparse_row_sparse.nd",
             "module/lenet-0001.params", "gluon/net.params", "gluon/net-0000.params",
             "gluon/net-fullnames.params"]
# Saving what we loaded gives the same bytes (sparse files excepted: they load dense).
BYTE_EXACT = ["ndarray/dense_dict.nd", "ndarray/dense_list.nd", "ndarray/npshape_dict.nd",
              "module/lenet-0001.params",
              "gluon/net.params", "gluon/net-0000.params", "gluon/net-fullnames.params"]


def semantics(rel):
    """The shape semantics a fixture was written in: MXNet loads (and writes) a file
    only in the semantics its records carry."""
    return mx.np_shape("npshape" in rel)


def sha(a):
    return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()


def raw(rel):
    with open(fixture_path(rel), "rb") as f:
        return f.read()


def check_records(loaded, records):
    """loaded (list or dict) against manifest array records, in file order."""
    items = list(loaded.items()) if isinstance(loaded, dict) else list(enumerate(loaded))
    assert len(items) == len(records)
    for (key, arr), rec in zip(items, records):
        assert key == rec.get("name", rec.get("index"))
        a = arr.asnumpy()
        assert a.dtype == np.dtype(rec["dtype"]), key
        assert list(a.shape) == rec["shape"], key
        assert sha(a) == rec["sha256_c_order_bytes"], key
        assert arr.context == mx.cpu(0)


@pytest.mark.parametrize("rel", ["ndarray/dense_dict.nd", "ndarray/dense_list.nd",
                                 "ndarray/npshape_dict.nd"])
def test_dense_files_match_manifest(rel):
    info = MANIFEST["ndarray_files"][rel]
    with semantics(rel):
        loaded = nd.load(fixture_path(rel))
    assert isinstance(loaded, dict if info["kind"] == "dict" else list)
    check_records(loaded, info["arrays"])


def test_dense_files_match_npz_reference():
    ref = np.load(fixture_path("ndarray", "dense_reference.npz"))
    as_dict = nd.load(fixture_path("ndarray", "dense_dict.nd"))
    as_list = nd.load(fixture_path("ndarray", "dense_list.nd"))
    assert list(as_dict) == list(ref.keys())
    for i, name in enumerate(ref.keys()):
        for got in (as_dict[name], as_list[i]):
            a = got.asnumpy()
            assert a.dtype == ref[name].dtype and a.shape == ref[name].shape
            assert a.tobytes() == ref[name].tobytes(), name     # NaN/Inf/subnormals too


def test_npshape_arrays():
    with mx.np_shape(True):
        d = nd.load(fixture_path("ndarray", "npshape_dict.nd"))
    assert d["f32_0d_scalar"].shape == () and d["f32_0d_scalar"].asnumpy() == np.float32(2.5)
    assert d["i64_0d_scalar"].asnumpy() == -7
    assert d["f32_zero_size_0x3"].shape == (0, 3)
    assert d["i32_zero_size_2x0x4"].shape == (2, 0, 4)
    assert d["i32_zero_size_2x0x4"].dtype == np.int32


@pytest.mark.parametrize("rel,key", [("ndarray/sparse_csr.nd", "csr"),
                                     ("ndarray/sparse_row_sparse.nd", "rsp")])
def test_sparse_files_load_dense(rel, key):
    info = MANIFEST["ndarray_files"][rel]
    with semantics(rel):
        loaded = nd.load(fixture_path(rel))
    a = loaded[key].asnumpy()
    assert a.dtype == np.float32 and list(a.shape) == info["shape"]
    np.testing.assert_array_equal(a, np.array(info["dense"], np.float32))
    assert sha(a) == info["dense_sha256_c_order_bytes"]


def test_module_checkpoint_params():
    info = MANIFEST["module_checkpoint"]
    loaded = nd.load(fixture_path("module", "lenet-0001.params"))
    assert list(loaded) == info["param_names_in_file_order"]
    check_records(loaded, info["params"])


def test_gluon_params():
    info = MANIFEST["gluon"]
    loaded = nd.load(fixture_path("gluon", "net.params"))
    assert list(loaded) == info["save_parameters_names"]
    check_records(loaded, info["params"])
    by_sha = {p["sha256_c_order_bytes"] for p in info["params"]}
    full = nd.load(fixture_path("gluon", "net-fullnames.params"))
    assert list(full) == info["collect_params_save_names"]
    exported = nd.load(fixture_path("gluon", "net-0000.params"))
    assert list(exported) == info["export_param_names"]
    for d in (full, exported):
        assert {sha(v.asnumpy()) for v in d.values()} == by_sha


@pytest.mark.parametrize("rel", ALL_FILES)
def test_load_frombuffer_equals_load(rel):
    with semantics(rel):
        a, b = nd.load(fixture_path(rel)), nd.load_frombuffer(raw(rel))
        again = nd.load_frombuffer(bytearray(raw(rel)))
    items_a = a.items() if isinstance(a, dict) else enumerate(a)
    items_b = dict(b.items() if isinstance(b, dict) else enumerate(b))
    for k, v in items_a:
        assert v.asnumpy().tobytes() == items_b[k].asnumpy().tobytes()
    assert again.__class__ is a.__class__


@pytest.mark.parametrize("rel", BYTE_EXACT)
def test_resave_is_byte_identical(rel, tmp_path):
    out = tmp_path / "resaved.nd"
    with semantics(rel):
        nd.save(str(out), nd.load(fixture_path(rel)))
    assert out.read_bytes() == raw(rel)


@pytest.mark.parametrize("rel", ["ndarray/dense_dict.nd", "ndarray/npshape_dict.nd"])
def test_load_refuses_the_other_semantics(rel):
    # as MXNet 1.9.1: np-shape records only under np_shape(True), classic ones outside
    with mx.np_shape("npshape" not in rel):
        with pytest.raises(MXNetError, match="np shape semantics"):
            nd.load(fixture_path(rel))
        with pytest.raises(MXNetError, match="np shape semantics"):
            nd.load_frombuffer(raw(rel))


def test_save_magic_follows_np_shape(tmp_path):
    path = str(tmp_path / "z.nd")
    for np_shape, magic in ((False, 0xF993FAC9), (True, 0xF993FACA)):
        with mx.np_shape(np_shape):
            # zero-size arrays are classic records too (MXNet saves and loads them)
            nd.save(path, [nd.array(np.zeros((2, 0, 3))), nd.ones((2, 1))])
            back = nd.load(path)
        with open(path, "rb") as f:
            assert struct.unpack("<I", f.read(28)[24:28])[0] == magic
        assert [b.shape for b in back] == [(2, 0, 3), (2, 1)]


def test_readme_worked_example(tmp_path):
    path = tmp_path / "s.nd"
    nd.save(str(path), {"s": nd.array([3.0])})
    want = (struct.pack("<QQQ", 0x112, 0, 1) + struct.pack("<I", 0xF993FAC9)
            + struct.pack("<i", 0) + struct.pack("<iq", 1, 1) + struct.pack("<ii", 1, 0)
            + struct.pack("<i", 0) + struct.pack("<f", 3.0)
            + struct.pack("<QQ", 1, 1) + b"s")
    assert path.read_bytes() == want
    assert want.hex().startswith("1201" + "00" * 14 + "0100")


DTYPES = ["float32", "float64", "float16", "uint8", "int8", "int32", "int64", "bool"]


@pytest.mark.parametrize("dtype", DTYPES)
def test_round_trip_dtypes(dtype, tmp_path):
    rs = np.random.RandomState(0)
    arrays = {f"a{i}": (rs.randn(*shape) * 50).astype(dtype)
              for i, shape in enumerate([(1,), (5,), (2, 3), (2, 1, 3, 2), (1, 2, 1, 2, 3)])}
    if np.dtype(dtype).kind == "f":
        arrays["special"] = np.array([np.nan, np.inf, -np.inf, -0.0, 1e-40], dtype=dtype)
    nds = {k: nd.array(v, dtype=dtype) for k, v in arrays.items()}
    path = str(tmp_path / "x.nd")
    for data in (nds, list(nds.values()), nds["a1"], tuple(nds.values())):
        nd.save(path, data)
        back = nd.load(path)
        if isinstance(data, dict):
            assert list(back) == list(arrays)
            back_list = list(back.values())
        else:
            assert isinstance(back, list)
            back_list = back
        want = list(arrays.values()) if not isinstance(data, nd.NDArray) else [arrays["a1"]]
        for got, ref in zip(back_list, want):
            g = got.asnumpy()
            assert g.dtype == ref.dtype and g.shape == ref.shape
            assert g.tobytes() == ref.tobytes()


def test_round_trip_names_and_edge_cases(tmp_path):
    path = str(tmp_path / "x.params")
    data = {"arg:conv0_weight": nd.ones((2, 2)), "é ü 名字": nd.zeros((1,)), "": nd.ones((3,))}
    nd.save(path, data)
    assert list(nd.load(path)) == list(data)
    nd.save(path, [])
    assert nd.load(path) == []
    nd.save(path, {})
    assert nd.load(path) == []                    # as MXNet: no names -> a list
    # 0-d and zero-size arrays (from a numpy-shape file) survive a round trip
    with mx.np_shape(True):
        src = nd.load(fixture_path("ndarray", "npshape_dict.nd"))
        nd.save(path, src)
        back = nd.load(path)
    for k in src:
        assert back[k].shape == src[k].shape and back[k].dtype == src[k].dtype
        assert back[k].asnumpy().tobytes() == src[k].asnumpy().tobytes()


def test_views_and_pending_work(tmp_path):
    base = nd.array(np.arange(12, dtype=np.float32).reshape(4, 3))
    path = str(tmp_path / "v.nd")
    nd.save(path, [base[1:3], base.reshape((3, 4))])
    a, b = nd.load(path)
    np.testing.assert_array_equal(a.asnumpy(), np.arange(3, 9).reshape(2, 3))
    np.testing.assert_array_equal(b.asnumpy(), np.arange(12).reshape(3, 4))


def test_save_bad_arguments(tmp_path):
    path = str(tmp_path / "bad.nd")
    with pytest.raises(ValueError):
        nd.save(path, 5)
    with pytest.raises(TypeError):
        nd.save(path, {1: nd.ones(2)})
    with pytest.raises(TypeError):
        nd.save(path, [nd.ones(2), 3])
    with pytest.raises(MXNetError):
        nd.save(path, [np.ones(2)])
    with pytest.raises(MXNetError, match="int16"):
        nd.save(path, [nd.array([1, 2], dtype="int16")])
    with pytest.raises(MXNetError, match="nonexistent"):
        nd.save(str(tmp_path / "nonexistent" / "x.nd"), [nd.ones(1)])


def test_missing_file():
    with pytest.raises(MXNetError, match="/no/such/dir/x.nd"):
        nd.load("/no/such/dir/x.nd")


def test_load_frombuffer_bad_type():
    with pytest.raises(MXNetError):
        nd.load_frombuffer("not bytes")


def test_every_truncation_raises():
    data = raw("ndarray/npshape_dict.nd")
    with mx.np_shape(True):
        for n in range(len(data)):
            with pytest.raises(MXNetError):
                nd.load_frombuffer(data[:n])
    data = raw("ndarray/sparse_csr.nd")
    for n in range(len(data)):
        with pytest.raises(MXNetError):
            nd.load_frombuffer(data[:n])


def test_truncated_file(tmp_path):
    path = tmp_path / "t.params"
    path.write_bytes(raw("module/lenet-0001.params")[:5000])
    with pytest.raises(MXNetError, match="truncated"):
        nd.load(str(path))


def header(n):
    return struct.pack("<QQQ", 0x112, 0, n)


def dense_record(magic=0xF993FAC9, stype=0, shape=(2,), ctx=(1, 0), flag=0, payload=None):
    payload = b"\0" * (4 * int(np.prod(shape))) if payload is None else payload
    return (struct.pack("<Iii", magic, stype, len(shape)) + struct.pack(f"<{len(shape)}q", *shape)
            + struct.pack("<iii", *ctx, flag) + payload)


@pytest.mark.parametrize("buf,match", [
    (struct.pack("<QQQQ", 0x113, 0, 0, 0), "magic"),
    (header(1) + dense_record(magic=0xDEADBEEF) + struct.pack("<Q", 0), "magic"),
    (header(1) + dense_record(stype=7) + struct.pack("<Q", 0), "storage"),
    (header(1) + dense_record(flag=42) + struct.pack("<Q", 0), "dtype"),
    (header(1) + dense_record(ctx=(9, 0)) + struct.pack("<Q", 0), "context"),
    (header(1) + dense_record(shape=(-3,), payload=b"") + struct.pack("<Q", 0), "shape"),
    (header(1) + dense_record() + struct.pack("<Q", 2) + struct.pack("<Q", 1) + b"a", "names"),
    (header(1) + dense_record() + struct.pack("<QQ", 1, 1 << 40), "truncated"),
    (header(1) + dense_record() + struct.pack("<QQ", 1, 2) + b"\xff\xfe", "UTF-8"),
    (header(1 << 60) + dense_record(), "count"),
    (header(1) + struct.pack("<Iiiq", 0xF993FAC9, 0, 1, 1 << 50) + struct.pack("<iii", 1, 0, 0),
     "truncated"),
    (header(1) + struct.pack("<Iii", 0xF993FAC9, 0, 0) + struct.pack("<Q", 0), "none"),
    (header(1) + struct.pack("<Iii", 0xF993FAC9, 0, 1000) + b"\0" * 32, "dimensions"),
], ids=["file-magic", "record-magic", "stype", "dtype", "context", "negative-dim",
        "name-count", "name-length", "utf8", "array-count", "huge-shape", "none-array",
        "ndim"])
def test_corrupt_buffers(buf, match):
    with pytest.raises(MXNetError, match=match):
        nd.load_frombuffer(buf)


def test_random_corruption_never_crashes():
    data = bytearray(raw("ndarray/sparse_row_sparse.nd"))
    rs = np.random.RandomState(1)
    for _ in range(300):
        bad = bytearray(data)
        for pos in rs.randint(0, len(bad), size=rs.randint(1, 4)):
            bad[pos] = rs.randint(0, 256)
        try:
            nd.load_frombuffer(bytes(bad))
        except MXNetError:
            pass


def test_sparse_index_out_of_range():
    # a row_sparse record whose row index (9) is outside its 2 rows
    rec = (struct.pack("<Iii", 0xF993FAC9, 1, 2) + struct.pack("<qq", 1, 2)
           + struct.pack("<iqq", 2, 2, 2) + struct.pack("<iii", 1, 0, 0)
           + struct.pack("<iiq", 6, 1, 1) + struct.pack("<ff", 1, 2) + struct.pack("<q", 9))
    with pytest.raises(MXNetError, match="row_sparse"):
        nd.load_frombuffer(header(1) + rec + struct.pack("<Q", 0))
    ok = rec[:-8] + struct.pack("<q", 1)
    got = nd.load_frombuffer(header(1) + ok + struct.pack("<Q", 0))[0].asnumpy()
    np.testing.assert_array_equal(got, [[0, 0], [1, 2]])


def test_older_record_layouts():
    """Records from MXNet before the storage-type field (checked against MXNet 1.9.1's
    reader): magic 0xF993FAC8 + int64 dims, and the oldest one, ndim + uint32 dims."""
    data = np.arange(6, dtype=np.float32).reshape(2, 3)
    v1 = (struct.pack("<Iiqq", 0xF993FAC8, 2, 2, 3) + struct.pack("<iii", 1, 0, 0)
          + data.tobytes())
    v0 = struct.pack("<III", 2, 2, 3) + struct.pack("<iii", 1, 0, 0) + data.tobytes()
    for rec in (v1, v0):
        got = nd.load_frombuffer(header(1) + rec + struct.pack("<Q", 0))
        np.testing.assert_array_equal(got[0].asnumpy(), data)


def test_bfloat16_record_and_gpu_record_on_cpu(tmp_path):
    bits = np.array([0x3F80, 0xC000], dtype="<u2")      # 1.0, -2.0 in bfloat16
    buf = header(1) + dense_record(flag=12, payload=bits.tobytes()) + struct.pack("<Q", 0)
    got = nd.load_frombuffer(buf)[0]
    assert got.dtype == mx.base.bfloat16
    np.testing.assert_array_equal(got.asnumpy().astype(np.float32), [1.0, -2.0])
    # written back as the same record, bit for bit
    nd.save(str(tmp_path / "bf16.params"), [got])
    assert (tmp_path / "bf16.params").read_bytes() == buf
    buf = header(1) + dense_record(ctx=(2, 7), payload=struct.pack("<ff", 1, 2)) \
        + struct.pack("<Q", 0)
    got = nd.load_frombuffer(buf)[0]
    assert got.context == mx.cpu(0) or got.context == mx.gpu(7)
    np.testing.assert_array_equal(got.asnumpy(), [1.0, 2.0])


def test_bfloat16_file_from_mxnet(tmp_path):
    """A file MXNet 1.9.1 wrote with a bfloat16 array (tests/fixtures/bfloat16, written
    by its make_fixture.py): it loads as bfloat16 holding MXNet's bits, which are the
    float32 values' upper halves (MXNet 1.9.1's Cast to bfloat16 truncates), and saves
    back byte for byte."""
    import os
    src = os.path.join(os.path.dirname(fixture_path()), "bfloat16", "mxnet191_bfloat16.params")
    got = nd.load(src)
    assert got["bf16"].dtype == mx.base.bfloat16 and got["f32"].dtype == np.float32
    f32 = got["f32"].asnumpy()
    np.testing.assert_array_equal(got["bf16"].asnumpy().view(np.uint16),
                                  (f32.view(np.uint32) >> 16).astype(np.uint16))
    nd.save(str(tmp_path / "again.params"), got)
    with open(src, "rb") as f:
        assert (tmp_path / "again.params").read_bytes() == f.read()
