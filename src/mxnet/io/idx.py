"""Reading MNIST-style IDX files (plain or gzip-compressed) and finding a local copy of
MNIST-format data (pymxnet never downloads).

IDX layout: two zero bytes, a type code (0x08 uint8, 0x09 int8, 0x0B int16, 0x0C int32,
0x0D float32, 0x0E float64), the number of dimensions, each dimension as a big-endian
uint32, then the values in big-endian order.
"""
import gzip
import logging
import os

import numpy as np

from ..base import MXNetError

__all__ = ["read_idx", "read_idx_file", "find_mnist_dir", "MNIST_FILES",
           "DEBIAN_FASHION_MNIST"]

DEBIAN_FASHION_MNIST = "/usr/share/datasets/fashion-mnist"
MNIST_FILES = ("train-images-idx3-ubyte", "train-labels-idx1-ubyte",
               "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")

_TYPES = {0x08: np.uint8, 0x09: np.int8, 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4",
          0x0E: ">f8"}

_log = logging.getLogger("mxnet.io")


def _parse(raw, where):
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0 or raw[2] not in _TYPES:
        raise MXNetError(f"{where} is not an IDX file (bad magic {raw[:4].hex()!r})")
    dtype = np.dtype(_TYPES[raw[2]])
    ndim = raw[3]
    head = 4 + 4 * ndim
    if len(raw) < head:
        raise MXNetError(f"{where}: IDX header truncated")
    shape = tuple(int(d) for d in np.frombuffer(raw, ">u4", ndim, 4))
    count = int(np.prod(shape, dtype=np.int64))
    if len(raw) - head < count * dtype.itemsize:
        raise MXNetError(f"{where}: IDX data truncated: header says shape {shape} "
                         f"({count * dtype.itemsize} bytes), file has {len(raw) - head}")
    data = np.frombuffer(raw, dtype, count, head).reshape(shape)
    return data.astype(dtype.newbyteorder("="), copy=False)


def read_idx_file(path):
    """The array stored in the IDX file ``path`` (gzip-compressed or not; when
    ``path`` is missing, ``path + '.gz'`` is tried)."""
    path = os.fspath(path)
    for candidate in (path, path + ".gz"):
        if os.path.isfile(candidate):
            break
    else:
        raise MXNetError(f"IDX file not found: {path!r} (nor {path + '.gz'!r})")
    try:
        with open(candidate, "rb") as f:
            raw = f.read()
        if raw[:2] == b"\x1f\x8b":
            raw = gzip.decompress(raw)
    except (OSError, EOFError) as err:
        raise MXNetError(f"cannot read IDX file {candidate!r}: {err}") from None
    return _parse(raw, repr(candidate))


def read_idx(root, name):
    """The array in ``root/name`` or ``root/name.gz`` (e.g. name =
    'train-images-idx3-ubyte')."""
    return read_idx_file(os.path.join(os.fspath(root), name))


def _has_mnist(folder):
    return all(os.path.isfile(os.path.join(folder, f)) or
               os.path.isfile(os.path.join(folder, f + ".gz")) for f in MNIST_FILES)


def find_mnist_dir(path=None):
    """A folder holding the four MNIST-format IDX files (each plain or .gz): ``path``
    if given and complete, else ``$MXNET_MNIST_DIR``, else Debian's Fashion-MNIST
    (/usr/share/datasets/fashion-mnist)."""
    tried = []
    candidates = []
    if path is not None:
        candidates.append(("path", os.fspath(path)))
    env = os.environ.get("MXNET_MNIST_DIR")
    if env:
        candidates.append(("$MXNET_MNIST_DIR", env))
    candidates.append(("Debian fashion-mnist", DEBIAN_FASHION_MNIST))
    for what, folder in candidates:
        if os.path.isdir(folder) and _has_mnist(folder):
            if tried:
                _log.warning("MNIST data not found in %s; using %s", tried[0], folder)
            return folder
        tried.append(f"{folder} ({what})")
    raise MXNetError("MNIST data not found: pymxnet does not download it. Put the files "
                     f"{', '.join(MNIST_FILES)} (optionally .gz) in a folder and pass it "
                     "as path or set MXNET_MNIST_DIR, or install Debian's fashion-mnist "
                     f"package. Looked in: {'; '.join(tried)}")
