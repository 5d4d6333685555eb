"""Vision datasets: MNIST, FashionMNIST, CIFAR10/100 from their standard files in a
local folder, and images from folders or RecordIO files.

Nothing is downloaded: when the files are not in ``root`` the constructor raises an
MXNetError naming the folder and the files it expects. (MXNet 1.9.1 downloaded them
from its repository.)
"""
import os
import tarfile
import warnings

import numpy as np

from .... import ndarray as nd, recordio
from ....base import MXNetError, data_dir
from ....util import is_np_array
from .... import numpy as _mx_np
from ...data import dataset
from ....io.idx import read_idx
from ....backend import image_codec as codec
from ....image import image as _image

__all__ = ["MNIST", "FashionMNIST", "CIFAR10", "CIFAR100", "ImageRecordDataset",
           "ImageFolderDataset"]

# Debian/Ubuntu's fashion-mnist package puts the IDX files here.
_SYSTEM_FASHION_MNIST = "/usr/share/datasets/fashion-mnist"


def _has_files(folder, names):
    return all(os.path.isfile(os.path.join(folder, n)) or
               os.path.isfile(os.path.join(folder, n + ".gz")) for n in names)


def _imdecode(buf, flag):
    # through mx.image's as_nd, as mx.image.imdecode: an mx.np array under npx.set_np()
    # (ImageFolderDataset and ImageRecordDataset samples then feed NumPy-semantics
    # transforms)
    return _image.as_nd(codec.decode(buf, flag=flag, to_rgb=True))


class _DownloadedDataset(dataset.Dataset):
    """Data and labels read once into memory; ``transform(data, label)`` per sample."""

    def __init__(self, root, transform):
        self._transform = transform
        self._data = None
        self._label = None
        self._root = os.path.expanduser(root)
        self._get_data()

    def __getitem__(self, idx):
        if self._transform is not None:
            return self._transform(self._data[idx], self._label[idx])
        return self._data[idx], self._label[idx]

    def __len__(self):
        return len(self._label)

    def _get_data(self):
        raise NotImplementedError

    def _missing(self, names, detail="", hint=""):
        raise MXNetError(
            f"{type(self).__name__}: dataset files not found in {self._root!r}; expected "
            f"{', '.join(names)}{detail}. pymxnet does not download datasets: put the "
            f"files there (or pass root=){hint}")


class MNIST(_DownloadedDataset):
    """MNIST handwritten digits dataset from http://yann.lecun.com/exdb/mnist

    Each sample is an image (in 3D NDArray, uint8) with shape (28, 28, 1) and an
    int32 label.

    Parameters
    ----------
    root : str, default $MXNET_HOME/datasets/mnist
        Folder holding ``train-images-idx3-ubyte.gz``, ``train-labels-idx1-ubyte.gz``,
        ``t10k-images-idx3-ubyte.gz`` and ``t10k-labels-idx1-ubyte.gz`` (gzipped or
        not).
    train : bool, default True
        Whether to load the training or testing set.
    transform : function, default None
        A user defined callback that transforms each sample. For example::

            transform=lambda data, label: (data.astype(np.float32)/255, label)
    """

    _train_data = "train-images-idx3-ubyte"
    _train_label = "train-labels-idx1-ubyte"
    _test_data = "t10k-images-idx3-ubyte"
    _test_label = "t10k-labels-idx1-ubyte"
    _fallback_root = None
    _default_root = os.path.join(data_dir(), "datasets", "mnist")

    def __init__(self, root=_default_root,
                 train=True, transform=None):
        self._train = train
        super().__init__(root, transform)

    def _get_data(self):
        names = (self._train_data, self._train_label) if self._train else \
            (self._test_data, self._test_label)
        folder = self._root
        if not _has_files(folder, names) and self._fallback_root and \
                os.path.normpath(folder) == os.path.normpath(self._default_root) and \
                _has_files(self._fallback_root, names):
            folder = self._fallback_root
        if not _has_files(folder, names):
            hint = f", or install Debian's fashion-mnist package ({self._fallback_root})" \
                if self._fallback_root else ""
            self._missing([n + ".gz" for n in names], " (gzipped or not)", hint)
        data, label = read_idx(folder, names[0]), read_idx(folder, names[1])
        if label.ndim != 1 or data.ndim != 3 or data.shape[0] != label.shape[0]:
            raise MXNetError(f"{type(self).__name__}: in {folder!r}, {names[0]} holds "
                             f"shape {data.shape} and {names[1]} shape {label.shape}; "
                             "expected (N, rows, cols) images and N labels")
        self._label = label.astype(np.int32)
        self._data = nd.array(data.reshape(data.shape + (1,)), dtype=data.dtype)
        if is_np_array():   # made under npx.set_np(): samples are mx.np arrays
            self._label = _mx_np.array(self._label, dtype=np.int32)
            self._data = self._data.as_np_ndarray()


class FashionMNIST(MNIST):
    """A dataset of Zalando's article images, a drop-in replacement of MNIST,
    from https://github.com/zalandoresearch/fashion-mnist

    Each sample is an image (in 3D NDArray, uint8) with shape (28, 28, 1) and an
    int32 label.

    Parameters
    ----------
    root : str, default $MXNET_HOME/datasets/fashion-mnist
        Folder holding the IDX files (same names as MNIST's). When the default folder
        lacks them, Debian's ``/usr/share/datasets/fashion-mnist`` is used if present.
    train : bool, default True
        Whether to load the training or testing set.
    transform : function, default None
        A user defined callback that transforms each sample.
    """

    _fallback_root = _SYSTEM_FASHION_MNIST
    _default_root = os.path.join(data_dir(), "datasets", "fashion-mnist")

    def __init__(self, root=_default_root,
                 train=True, transform=None):
        super().__init__(root, train, transform)


class CIFAR10(_DownloadedDataset):
    """CIFAR10 image classification dataset from
    https://www.cs.toronto.edu/~kriz/cifar.html

    Each sample is an image (in 3D NDArray, uint8) with shape (32, 32, 3) and an
    int32 label.

    Parameters
    ----------
    root : str, default $MXNET_HOME/datasets/cifar10
        Folder holding the binary batches ``data_batch_1.bin`` ... ``data_batch_5.bin``
        and ``test_batch.bin`` (directly or in ``cifar-10-batches-bin/``), or the
        archive ``cifar-10-binary.tar.gz``, which is extracted there.
    train : bool, default True
        Whether to load the training or testing set.
    transform : function, default None
        A user defined callback that transforms each sample.
    """

    _archive = "cifar-10-binary.tar.gz"
    _subdir = "cifar-10-batches-bin"
    _train_files = [f"data_batch_{i}.bin" for i in range(1, 6)]
    _test_files = ["test_batch.bin"]
    _label_bytes = 1

    def __init__(self, root=os.path.join(data_dir(), "datasets", "cifar10"),
                 train=True, transform=None):
        self._train = train
        super().__init__(root, transform)

    def _read_batch(self, filename):
        with open(filename, "rb") as fin:
            raw = np.frombuffer(fin.read(), dtype=np.uint8)
        rec = 3072 + self._label_bytes
        if raw.size % rec:
            raise MXNetError(f"{type(self).__name__}: {filename!r} has {raw.size} bytes, "
                             f"not a multiple of the {rec}-byte record size")
        raw = raw.reshape(-1, rec)
        images = raw[:, self._label_bytes:].reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1)
        return images, raw[:, self._label_column()].astype(np.int32)

    def _label_column(self):
        return 0

    def _locate(self, names):
        for folder in (self._root, os.path.join(self._root, self._subdir)):
            if all(os.path.isfile(os.path.join(folder, n)) for n in names):
                return folder
        return None

    def _get_data(self):
        names = self._train_files if self._train else self._test_files
        folder = self._locate(names)
        archive = os.path.join(self._root, self._archive)
        if folder is None and os.path.isfile(archive):
            with tarfile.open(archive) as tar:
                # the "data" filter refuses absolute paths and links out of root
                safe = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
                tar.extractall(self._root, **safe)
            folder = self._locate(names)
        if folder is None:
            self._missing(names, f" (or the archive {self._archive})")
        data, label = zip(*(self._read_batch(os.path.join(folder, n)) for n in names))
        data = np.concatenate(data)
        self._data = nd.array(data, dtype=data.dtype)
        self._label = np.concatenate(label)
        if is_np_array():   # made under npx.set_np(): samples are mx.np arrays
            self._label = _mx_np.array(self._label, dtype=self._label.dtype)
            self._data = self._data.as_np_ndarray()


class CIFAR100(CIFAR10):
    """CIFAR100 image classification dataset from
    https://www.cs.toronto.edu/~kriz/cifar.html

    Each sample is an image (in 3D NDArray, uint8) with shape (32, 32, 3) and an
    int32 label.

    Parameters
    ----------
    root : str, default $MXNET_HOME/datasets/cifar100
        Folder holding ``train.bin`` and ``test.bin`` (directly or in
        ``cifar-100-binary/``), or the archive ``cifar-100-binary.tar.gz``.
    fine_label : bool, default False
        Whether to load the fine-grained (100 classes) or coarse-grained (20
        super-classes) labels.
    train : bool, default True
        Whether to load the training or testing set.
    transform : function, default None
        A user defined callback that transforms each sample.
    """

    _archive = "cifar-100-binary.tar.gz"
    _subdir = "cifar-100-binary"
    _train_files = ["train.bin"]
    _test_files = ["test.bin"]
    _label_bytes = 2

    def __init__(self, root=os.path.join(data_dir(), "datasets", "cifar100"),
                 fine_label=False, train=True, transform=None):
        self._fine_label = fine_label
        super().__init__(root, train, transform)

    def _label_column(self):
        return 1 if self._fine_label else 0


class ImageRecordDataset(dataset.RecordFileDataset):
    """A dataset wrapping over a RecordIO file containing images.

    Each sample is an image (HxWxC uint8 NDArray, RGB) and its label (from the
    record header).

    Parameters
    ----------
    filename : str
        Path to rec file (its index is the ``.idx`` file of the same name).
    flag : {0, 1}, default 1
        If 0, always convert images to greyscale. If 1, always convert images to
        colored.
    transform : function, default None
        A user defined callback that transforms each sample.
    """

    def __init__(self, filename, flag=1, transform=None):
        super().__init__(filename)
        self._flag = flag
        self._transform = transform

    def __getitem__(self, idx):
        record = super().__getitem__(idx)
        header, img = recordio.unpack(record)
        img = _imdecode(img, self._flag)
        if self._transform is not None:
            return self._transform(img, header.label)
        return img, header.label


class ImageFolderDataset(dataset.Dataset):
    """A dataset for loading image files stored in a folder structure like::

        root/car/0001.jpg
        root/car/xxxa.jpg
        root/bus/123.jpg

    Sub-folders, in sorted order, are the classes; files other than .jpg, .jpeg and
    .png are skipped with a warning.

    Parameters
    ----------
    root : str
        Path to root directory.
    flag : {0, 1}, default 1
        If 0, always convert loaded images to greyscale (1 channel). If 1, always
        convert loaded images to colored (3 channels).
    transform : callable, default None
        A function that takes data and label and transforms them.

    Attributes
    ----------
    synsets : list
        List of class names. `synsets[i]` is the name for the integer label `i`
    items : list of tuples
        List of all images in (filename, label) pairs.
    """

    def __init__(self, root, flag=1, transform=None):
        self._root = os.path.expanduser(root)
        self._flag = flag
        self._transform = transform
        self._exts = [".jpg", ".jpeg", ".png"]
        self._list_images(self._root)

    def _list_images(self, root):
        self.synsets = []
        self.items = []
        if not os.path.isdir(root):
            raise MXNetError(f"ImageFolderDataset: {root!r} is not a directory")
        for folder in sorted(os.listdir(root)):
            path = os.path.join(root, folder)
            if not os.path.isdir(path):
                warnings.warn(f"Ignoring {path}, which is not a directory.", stacklevel=3)
                continue
            label = len(self.synsets)
            self.synsets.append(folder)
            for filename in sorted(os.listdir(path)):
                filename = os.path.join(path, filename)
                ext = os.path.splitext(filename)[1]
                if ext.lower() not in self._exts:
                    warnings.warn(f"Ignoring {filename} of type {ext}. Only support "
                                  f"{', '.join(self._exts)}")
                    continue
                self.items.append((filename, label))

    def __getitem__(self, idx):
        filename, label = self.items[idx]
        with open(filename, "rb") as f:
            img = _imdecode(f.read(), self._flag)
        if self._transform is not None:
            return self._transform(img, label)
        return img, label

    def __len__(self):
        return len(self.items)
