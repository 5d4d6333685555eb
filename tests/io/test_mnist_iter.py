"""MNISTIter and the IDX reader, checked against IDX bytes parsed here with gzip and
NumPy: synthetic files in a tmp dir, and Debian's Fashion-MNIST when installed."""
import gzip
import os
import struct

import numpy as np
import pytest

import mxnet as mx
from mxnet.base import MXNetError
from mxnet.io.idx import find_mnist_dir, read_idx, read_idx_file



def write_idx(path, array, code=0x08, compress=False):
    head = struct.pack(">BBBB", 0, 0, code, array.ndim)
    head += struct.pack(f">{array.ndim}I", *array.shape)
    raw = head + array.astype(array.dtype.newbyteorder(">")).tobytes()
    with (gzip.open if compress else open)(path, "wb") as f:
        f.write(raw)


def read_reference(path):
    """Independent IDX reading for uint8 images (offset 16) and labels (offset 8)."""
    with gzip.open(path, "rb") as f:
        raw = f.read()
    if "images" in os.path.basename(path):
        n, rows, cols = struct.unpack(">III", raw[4:16])
        return np.frombuffer(raw, np.uint8, offset=16).reshape(n, rows, cols)
    return np.frombuffer(raw, np.uint8, offset=8)


@pytest.fixture
def tiny_mnist(tmp_path):
    rng = np.random.RandomState(3)
    images = rng.randint(0, 256, (23, 6, 5)).astype(np.uint8)
    labels = rng.randint(0, 10, 23).astype(np.uint8)
    write_idx(tmp_path / "img-idx3-ubyte", images)
    write_idx(tmp_path / "lab-idx1-ubyte.gz", labels, compress=True)
    return tmp_path, images, labels


def make_iter(root, **kw):
    kw.setdefault("silent", True)
    return mx.io.MNISTIter(image=str(root / "img-idx3-ubyte"),
                           label=str(root / "lab-idx1-ubyte"), **kw)


def test_read_idx_types_and_gzip(tmp_path):
    a = np.arange(24, dtype=np.int32).reshape(2, 3, 4) - 7
    write_idx(tmp_path / "a", a, code=0x0C)
    write_idx(tmp_path / "b.gz", a.astype(np.float32) / 3, code=0x0D, compress=True)
    np.testing.assert_array_equal(read_idx(tmp_path, "a"), a)
    got = read_idx(tmp_path, "b")           # falls back to b.gz
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, a.astype(np.float32) / 3)
    (tmp_path / "bad").write_bytes(b"\x01\x02\x03\x04rest")
    with pytest.raises(MXNetError, match="not an IDX file"):
        read_idx_file(tmp_path / "bad")
    write_idx(tmp_path / "short", np.zeros((10, 10), np.uint8))
    (tmp_path / "short").write_bytes((tmp_path / "short").read_bytes()[:50])
    with pytest.raises(MXNetError, match="truncated"):
        read_idx_file(tmp_path / "short")
    with pytest.raises(MXNetError, match="not found"):
        read_idx(tmp_path, "missing")


def test_find_mnist_dir(tmp_path, monkeypatch):
    for name in ("train-images-idx3-ubyte", "train-labels-idx1-ubyte",
                 "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"):
        write_idx(tmp_path / (name + ".gz"), np.zeros(3, np.uint8), compress=True)
    assert find_mnist_dir(tmp_path) == str(tmp_path)
    monkeypatch.setenv("MXNET_MNIST_DIR", str(tmp_path))
    assert find_mnist_dir() == str(tmp_path)
    monkeypatch.setenv("MXNET_MNIST_DIR", str(tmp_path / "nowhere"))
    monkeypatch.setattr("mxnet.io.idx.DEBIAN_FASHION_MNIST", str(tmp_path / "none"))
    with pytest.raises(MXNetError, match="train-images-idx3-ubyte"):
        find_mnist_dir()


def test_batches_match_idx_bytes(tiny_mnist):
    root, images, labels = tiny_mnist
    it = make_iter(root, batch_size=5, shuffle=False)
    assert it.provide_data == [("data", (5, 1, 6, 5))]
    assert it.provide_label == [("softmax_label", (5,))]
    for epoch in range(2):
        got = list(it)
        assert len(got) == 4                      # 23 // 5: the short batch is dropped
        for k, b in enumerate(got):
            ref = images[5 * k:5 * k + 5].astype(np.float32)[:, None] / 256
            np.testing.assert_array_equal(b.data[0].asnumpy(), ref)
            np.testing.assert_array_equal(b.label[0].asnumpy(), labels[5 * k:5 * k + 5])
            assert b.data[0].dtype == np.float32 and b.label[0].dtype == np.float32
            assert b.pad == 0
            np.testing.assert_array_equal(b.index, np.arange(5 * k, 5 * k + 5))
        it.reset()


def test_flat_shuffle_parts(tiny_mnist):
    root, images, labels = tiny_mnist
    it = make_iter(root, batch_size=4, flat=True, shuffle=True, seed=7)
    first = [b.index.copy() for b in it]
    it.reset()
    again = [b for b in it]
    assert again[0].data[0].shape == (4, 30)
    for b, idx in zip(again, first):
        np.testing.assert_array_equal(b.index, idx)  # the order is drawn once
        np.testing.assert_array_equal(b.data[0].asnumpy(),
                                      images[idx.astype(int)].reshape(4, 30) / 256)
        np.testing.assert_array_equal(b.label[0].asnumpy(), labels[idx.astype(int)])
    seen = np.concatenate(first)
    assert len(set(seen.tolist())) == len(seen) == 20
    other = make_iter(root, batch_size=4, shuffle=True, seed=8)
    assert not all((a == b.index).all() for a, b in zip(first, other))
    part = make_iter(root, batch_size=2, shuffle=False, num_parts=2, part_index=1)
    b = part.next()
    np.testing.assert_array_equal(b.label[0].asnumpy(), labels[11:13])  # 23*1//2 = 11


def test_protocol_and_names(tiny_mnist):
    root, images, _ = tiny_mnist
    it = make_iter(root, batch_size=3, shuffle=False, data_name="x", label_name="y",
                   unknown_param=1)            # MXNet ignores unknown keys
    assert [d.name for d in it.provide_data + it.provide_label] == ["x", "y"]
    with pytest.raises(MXNetError):
        it.getdata()
    assert it.iter_next()
    np.testing.assert_array_equal(it.getdata().asnumpy()[0, 0], images[0] / 256)
    assert it.getlabel().shape == (3,) and it.getpad() == 0


def test_bad_input(tiny_mnist, tmp_path):
    root, _, _ = tiny_mnist
    with pytest.raises(MXNetError, match="not found"):
        mx.io.MNISTIter(image=str(tmp_path / "none"), label=str(root / "lab-idx1-ubyte"))
    write_idx(tmp_path / "lab2", np.zeros(5, np.uint8))
    with pytest.raises(MXNetError, match="labels"):
        mx.io.MNISTIter(image=str(root / "img-idx3-ubyte"), label=str(tmp_path / "lab2"))
    with pytest.raises(MXNetError, match="batch_size"):
        make_iter(root, batch_size=0)
    with pytest.raises(MXNetError, match="part_index"):
        make_iter(root, num_parts=2, part_index=2)


def test_debian_fashion_mnist(fashion_mnist):
    images = read_reference(os.path.join(fashion_mnist, "t10k-images-idx3-ubyte.gz"))
    labels = read_reference(os.path.join(fashion_mnist, "t10k-labels-idx1-ubyte.gz"))
    it = mx.io.MNISTIter(image=os.path.join(fashion_mnist, "t10k-images-idx3-ubyte"),
                         label=os.path.join(fashion_mnist, "t10k-labels-idx1-ubyte"),
                         batch_size=100, shuffle=False, silent=True)
    for k in range(3):
        b = it.next()
        data = b.data[0].asnumpy()
        assert data.shape == (100, 1, 28, 28)
        assert 0 <= data.min() and data.max() < 1
        np.testing.assert_array_equal(data[:, 0], images[100 * k:100 * k + 100] / 256)
        np.testing.assert_array_equal(b.label[0].asnumpy(), labels[100 * k:100 * k + 100])
    assert sum(1 for _ in it) == 100 - 3
    assert find_mnist_dir(fashion_mnist) == fashion_mnist
    np.testing.assert_array_equal(read_idx(fashion_mnist, "t10k-labels-idx1-ubyte"), labels)
