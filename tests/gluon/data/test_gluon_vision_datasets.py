"""Vision datasets read from their standard local files (no downloads)."""
import gzip
import io
import os
import struct

import numpy as np
import pytest

import mxnet as mx
from mxnet.base import MXNetError
from mxnet.gluon.data import DataLoader
from mxnet.gluon.data.vision import (CIFAR10, CIFAR100, MNIST, FashionMNIST,
                                     ImageFolderDataset, ImageRecordDataset)

def _idx_labels(path, count):
    """The first ``count`` labels of an IDX1 file, parsed here from its bytes."""
    with gzip.open(path, "rb") as f:
        head = f.read(8 + count)
    magic, n = struct.unpack(">II", head[:8])
    assert magic == 0x801
    return n, list(head[8:])


def test_fashion_mnist_reads_debian_files(monkeypatch, tmp_path, fashion_mnist):
    monkeypatch.setattr(FashionMNIST, "_default_root", str(tmp_path / "absent"))
    train = FashionMNIST(root=str(tmp_path / "absent"))
    test = FashionMNIST(root=str(tmp_path / "absent"), train=False)
    assert len(train) == 60000 and len(test) == 10000
    n, first = _idx_labels(os.path.join(fashion_mnist, "train-labels-idx1-ubyte.gz"), 20)
    assert n == 60000
    assert [int(train[i][1]) for i in range(20)] == first
    _, first_test = _idx_labels(os.path.join(fashion_mnist, "t10k-labels-idx1-ubyte.gz"), 20)
    assert [int(test[i][1]) for i in range(20)] == first_test
    img, label = train[0]
    assert img.shape == (28, 28, 1) and img.dtype == np.uint8
    assert isinstance(label, np.int32)
    with gzip.open(os.path.join(fashion_mnist, "train-images-idx3-ubyte.gz"), "rb") as f:
        f.read(16)
        pixels = np.frombuffer(f.read(784), np.uint8).reshape(28, 28, 1)
    np.testing.assert_array_equal(img.asnumpy(), pixels)


def _write_idx(path, arr, gz):
    codes = {np.uint8: 0x08}
    head = bytes([0, 0, codes[arr.dtype.type], arr.ndim]) + struct.pack(
        f">{arr.ndim}I", *arr.shape)
    opener = gzip.open if gz else open
    with opener(path, "wb") as f:
        f.write(head + arr.tobytes())


@pytest.mark.parametrize("gz", [True, False])
def test_mnist_from_idx_files(tmp_path, gz):
    rng = np.random.RandomState(0)
    imgs = rng.randint(0, 256, (7, 28, 28)).astype(np.uint8)
    labels = rng.randint(0, 10, 7).astype(np.uint8)
    suffix = ".gz" if gz else ""
    _write_idx(tmp_path / f"t10k-images-idx3-ubyte{suffix}", imgs, gz)
    _write_idx(tmp_path / f"t10k-labels-idx1-ubyte{suffix}", labels, gz)
    ds = MNIST(root=str(tmp_path), train=False)
    assert len(ds) == 7
    for i in range(7):
        np.testing.assert_array_equal(ds[i][0].asnumpy()[:, :, 0], imgs[i])
        assert ds[i][1] == labels[i]
    with pytest.raises(MXNetError, match="train-images-idx3-ubyte"):
        MNIST(root=str(tmp_path), train=True)


def test_mnist_and_cifar_made_in_np_mode_hold_np_arrays(tmp_path):
    # MXNet 1.9.1 under npx.set_np(): FashionMNIST(...)[0] is
    # (mx.np.ndarray uint8 (28, 28, 1), mx.np.ndarray array(9, dtype=int32)).
    rng = np.random.RandomState(3)
    imgs = rng.randint(0, 256, (5, 28, 28)).astype(np.uint8)
    labels = rng.randint(0, 10, 5).astype(np.uint8)
    _write_idx(tmp_path / "t10k-images-idx3-ubyte", imgs, False)
    _write_idx(tmp_path / "t10k-labels-idx1-ubyte", labels, False)
    raw, lab, hwc = _cifar_records(rng, 2, 1)
    (tmp_path / "test_batch.bin").write_bytes(raw)
    mx.npx.set_np()
    try:
        for ds, want_img, want_label in (
                (MNIST(root=str(tmp_path), train=False), imgs[2][:, :, None], labels[2]),
                (CIFAR10(root=str(tmp_path), train=False), hwc[1], lab[1, 0])):
            img, label = ds[2 if isinstance(ds, MNIST) else 1]
            assert isinstance(img, mx.np.ndarray) and img.dtype == np.uint8
            assert isinstance(label, mx.np.ndarray) and label.dtype == np.int32
            assert label.shape == () and int(label) == want_label
            np.testing.assert_array_equal(img.asnumpy(), want_img)
    finally:
        mx.npx.reset_np()
    img, label = MNIST(root=str(tmp_path), train=False)[0]
    assert isinstance(img, mx.nd.NDArray) and not isinstance(img, mx.np.ndarray)
    assert isinstance(label, np.int32)


def test_missing_files_give_clear_error(tmp_path):
    with pytest.raises(MXNetError, match="t10k-labels-idx1-ubyte.*does not download"):
        MNIST(root=str(tmp_path), train=False)
    with pytest.raises(MXNetError, match="data_batch_1.bin"):
        CIFAR10(root=str(tmp_path))
    with pytest.raises(MXNetError, match="test.bin"):
        CIFAR100(root=str(tmp_path), train=False)
    # an explicit root does not fall back to the system copy
    with pytest.raises(MXNetError, match="fashion-mnist"):
        FashionMNIST(root=str(tmp_path))


def _cifar_records(rng, n, n_labels):
    labels = rng.randint(0, 20, (n, n_labels)).astype(np.uint8)
    chw = rng.randint(0, 256, (n, 3, 32, 32)).astype(np.uint8)
    raw = np.concatenate([labels, chw.reshape(n, -1)], axis=1)
    return raw.tobytes(), labels, chw.transpose(0, 2, 3, 1)


def test_cifar10_binary_batches(tmp_path):
    rng = np.random.RandomState(1)
    images, labels = [], []
    for name in [f"data_batch_{i}.bin" for i in range(1, 6)] + ["test_batch.bin"]:
        raw, lab, hwc = _cifar_records(rng, 3, 1)
        (tmp_path / name).write_bytes(raw)
        images.append(hwc)
        labels.append(lab[:, 0])
    train = CIFAR10(root=str(tmp_path))
    assert len(train) == 15
    x = np.concatenate(images[:5])
    y = np.concatenate(labels[:5])
    for i in (0, 4, 14):
        img, label = train[i]
        assert img.shape == (32, 32, 3) and img.dtype == np.uint8
        np.testing.assert_array_equal(img.asnumpy(), x[i])
        assert label == y[i] and isinstance(label, np.int32)
    test = CIFAR10(root=str(tmp_path), train=False)
    assert len(test) == 3
    np.testing.assert_array_equal(test[2][0].asnumpy(), images[5][2])


def test_cifar100_coarse_and_fine(tmp_path):
    rng = np.random.RandomState(2)
    sub = tmp_path / "cifar-100-binary"   # the official archive's folder
    sub.mkdir()
    raw, lab, hwc = _cifar_records(rng, 4, 2)
    (sub / "train.bin").write_bytes(raw)
    coarse = CIFAR100(root=str(tmp_path))
    fine = CIFAR100(root=str(tmp_path), fine_label=True)
    assert [coarse[i][1] for i in range(4)] == lab[:, 0].tolist()
    assert [fine[i][1] for i in range(4)] == lab[:, 1].tolist()
    np.testing.assert_array_equal(fine[3][0].asnumpy(), hwc[3])


def _png(arr):
    from PIL import Image
    buf = io.BytesIO()
    Image.fromarray(arr).save(buf, format="PNG")
    return buf.getvalue()


def test_image_folder_dataset(tmp_path):
    pytest.importorskip("PIL")
    rng = np.random.RandomState(3)
    imgs = {}
    for cls in ("bus", "car"):
        (tmp_path / cls).mkdir()
        for k in range(2):
            arr = rng.randint(0, 256, (5, 4, 3)).astype(np.uint8)
            (tmp_path / cls / f"{k}.png").write_bytes(_png(arr))
            imgs[(cls, k)] = arr
    (tmp_path / "car" / "notes.txt").write_text("skip me")
    with pytest.warns(UserWarning):
        ds = ImageFolderDataset(str(tmp_path))
    assert ds.synsets == ["bus", "car"] and len(ds) == 4
    img, label = ds[3]
    assert label == 1 and img.dtype == np.uint8
    np.testing.assert_array_equal(img.asnumpy(), imgs[("car", 1)])
    with pytest.warns(UserWarning):
        gray = ImageFolderDataset(str(tmp_path), flag=0)[0][0]
    assert gray.shape == (5, 4, 1)


def test_image_folder_dataset_np_mode_gives_np_images(tmp_path):
    # MXNet 1.9.1 reads ImageFolderDataset samples with mx.image.imread, which under
    # npx.set_np() gives mx.np.ndarray (so np-only transforms such as
    # RandomFlipLeftRight accept them); the label stays a Python int
    pytest.importorskip("PIL")
    arr = np.random.RandomState(5).randint(0, 256, (5, 4, 3)).astype(np.uint8)
    (tmp_path / "cls").mkdir()
    (tmp_path / "cls" / "a.png").write_bytes(_png(arr))
    with mx.util.np_array(True):
        img, label = ImageFolderDataset(str(tmp_path))[0]
    assert isinstance(img, mx.np.ndarray) and img.dtype == np.uint8
    assert label == 0
    np.testing.assert_array_equal(img.asnumpy(), arr)
    img, _ = ImageFolderDataset(str(tmp_path))[0]
    assert type(img) is mx.nd.NDArray


def test_image_record_dataset(tmp_path):
    pytest.importorskip("PIL")
    rng = np.random.RandomState(4)
    rec, idx = str(tmp_path / "imgs.rec"), str(tmp_path / "imgs.idx")
    w = mx.recordio.MXIndexedRecordIO(idx, rec, "w")
    arrs = []
    for i in range(3):
        arr = rng.randint(0, 256, (6, 7, 3)).astype(np.uint8)
        arrs.append(arr)
        w.write_idx(i, mx.recordio.pack(mx.recordio.IRHeader(0, float(i + 10), i, 0),
                                        _png(arr)))
    w.close()
    ds = ImageRecordDataset(rec, transform=lambda d, l: (d.astype("float32"), l))
    assert len(ds) == 3
    img, label = ds[2]
    assert label == 12.0 and img.dtype == np.float32
    np.testing.assert_array_equal(img.asnumpy(), arrs[2])
    # records are read again in worker processes (each reopens the file)
    loader = DataLoader(ImageRecordDataset(rec), batch_size=3, num_workers=2)
    batch, labels = next(iter(loader))
    np.testing.assert_array_equal(batch.asnumpy(), np.stack(arrs))
    np.testing.assert_array_equal(labels.asnumpy(), [10, 11, 12])


def test_seed003_pipeline(tmp_path, fashion_mnist):
    """Seed 003: MNIST(train=True) + ToTensor + DataLoader(batch_size=64, shuffle=True),
    with MNIST-format files (Debian's Fashion-MNIST) in the root folder."""
    from mxnet import gluon
    for name in ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz"):
        os.symlink(os.path.join(fashion_mnist, name), tmp_path / name)
    mnist_train = gluon.data.vision.datasets.MNIST(root=str(tmp_path), train=True)
    transform = gluon.data.vision.transforms.ToTensor()
    train_loader = gluon.data.DataLoader(mnist_train.transform_first(transform),
                                         batch_size=64, shuffle=True)
    assert len(train_loader) == 938
    for i, (data, label) in enumerate(train_loader):
        assert data.shape == (64, 1, 28, 28) and data.dtype == np.float32
        assert label.shape == (64,) and label.dtype == np.int32
        assert 0 <= data.asnumpy().min() and data.asnumpy().max() <= 1
        if i == 2:
            break
