"""ImageIter: a Python image iterator over a RecordIO file or a list of image files,
with a list of augmenters (``CreateAugmenter``'s by default)."""
import os
import random as _random

import numpy as np

from ..base import MXNetError
from ..context import cpu
from ..io.base import DataBatch, DataIter, IOValueError
from ..io.batching import BatchCursor
from ..io.record_file import RecordFile
from ..ndarray.ndarray import NDArray, from_data
from ..recordio import unpack
from .augmenters import CreateAugmenter
from .image import as_nd, as_numpy, imdecode

__all__ = ["ImageIter"]

_DTYPES = ("int32", "float32", "int64", "float64")


def _label_array(value):
    return np.atleast_1d(np.asarray(value, dtype=np.float32))


class ImageIter(DataIter):
    """Iterates over images from a RecordIO file (``path_imgrec``, optionally with
    ``path_imgidx``) or an image list (``path_imglist`` file or ``imglist``, files
    under ``path_root``), applying ``aug_list`` to each image.

    Parameters
    ----------
    batch_size : int
    data_shape : tuple
        (3, height, width) of an output image.
    label_width : int, default 1
    path_imgrec, path_imgidx : str, optional
    path_imglist : str, optional
        A .lst file: index, label(s) and path, tab separated.
    imglist : list, optional
        [[label(s), path], ...]; the keys become '1', '2', ...
    path_root : str, optional
        Folder the list's paths are relative to.
    shuffle : bool, default False
        Reshuffle (with Python's ``random``) at every reset.
    part_index, num_parts : int
        Read only one of ``num_parts`` equal parts.
    aug_list : list of Augmenter, optional
        Default: ``CreateAugmenter(data_shape, **kwargs)``.
    data_name, label_name : str
    dtype : {'float32', 'float64', 'int32', 'int64'}
        Checked, but batches are float32 whatever it says, as in MXNet 1.9.1.
    last_batch_handle : {'pad', 'discard', 'roll_over'}, default 'pad'
    kwargs
        Passed to ``CreateAugmenter`` when ``aug_list`` is None.
    """

    def __init__(self, batch_size, data_shape, label_width=1, path_imgrec=None,
                 path_imglist=None, path_root=None, path_imgidx=None, shuffle=False,
                 part_index=0, num_parts=1, aug_list=None, imglist=None,
                 data_name="data", label_name="softmax_label", dtype="float32",
                 last_batch_handle="pad", **kwargs):
        super().__init__(batch_size)
        if not (path_imgrec or path_imglist or isinstance(imglist, list)):
            raise MXNetError("ImageIter: give path_imgrec, path_imglist or imglist")
        if dtype not in _DTYPES:
            raise IOValueError(f"ImageIter: dtype must be one of {list(_DTYPES)}, got "
                               f"{dtype!r}")
        if last_batch_handle not in ("pad", "discard", "roll_over"):
            raise IOValueError("ImageIter: last_batch_handle must be 'pad', 'discard' or "
                               f"'roll_over', got {last_batch_handle!r}")
        self.last_batch_handle = last_batch_handle
        self.batch_size = batch_size
        self.label_width = label_width
        self.path_root = path_root
        self.shuffle = shuffle
        self.check_data_shape(data_shape)
        self.data_shape = tuple(data_shape)

        self.imgrec = None
        self.imgidx = None
        if path_imgrec:
            self.imgrec = RecordFile(path_imgrec, path_imgidx or None, "ImageIter")
            self.imgidx = path_imgidx
        self.imglist = None
        if path_imglist:
            self.imglist = self._read_list(path_imglist)
        elif isinstance(imglist, list):
            self.imglist = {}
            for i, entry in enumerate(imglist):
                if len(entry) < 2:
                    raise MXNetError(f"ImageIter: imglist entry {i} must be [label(s), "
                                     f"path], got {entry!r}")
                self.imglist[str(i + 1)] = (from_data(_label_array(entry[0]), cpu()),
                                            entry[1])

        if self.imglist is not None:
            self.seq = list(self.imglist.keys())
        elif path_imgidx:
            self.seq = list(self.imgrec.keys)
        else:
            self.seq = None
        self._keys = self.seq if self.seq is not None else list(range(len(self.imgrec)))
        if self.imgrec is not None:
            self._position = {k: i for i, k in enumerate(self.imgrec.keys)}
        if num_parts > 1:
            if not 0 <= part_index < num_parts:
                raise MXNetError(f"ImageIter: part_index {part_index} must be in "
                                 f"[0, {num_parts})")
            per = len(self._keys) // num_parts
            self._keys = self._keys[part_index * per:(part_index + 1) * per]
            if self.seq is not None:
                self.seq = self._keys
        self.num_image = len(self._keys)

        self.provide_data = [(data_name, (batch_size,) + self.data_shape)]
        lshape = (batch_size,) if label_width == 1 else (batch_size, label_width)
        self.provide_label = [(label_name, lshape)]
        self.auglist = CreateAugmenter(data_shape, **kwargs) if aug_list is None \
            else aug_list
        self._cursor = BatchCursor(self.num_image, batch_size, last_batch_handle,
                                   self._shuffled if shuffle else None)
        self._batch = None

    # --- sources ----------------------------------------------------------------------
    def _read_list(self, path):
        out = {}
        try:
            with open(path) as f:
                for lineno, line in enumerate(f, 1):
                    fields = [x for x in line.strip().split("\t") if x]
                    if not fields:
                        continue
                    if len(fields) < 3:
                        raise MXNetError(f"ImageIter: line {lineno} of {path!r} needs an "
                                         "index, label(s) and a path")
                    label = from_data(np.array(fields[1:-1], dtype=np.float32), cpu())
                    out[int(float(fields[0]))] = (label, fields[-1])
        except OSError as err:
            raise MXNetError(f"ImageIter: cannot open {path!r}: {err.strerror}") from None
        return out

    def _shuffled(self):
        order = list(range(self.num_image))
        _random.shuffle(order)
        return np.array(order)

    def read_image(self, fname):
        """The bytes of image file ``fname`` (relative to ``path_root``)."""
        path = os.path.join(self.path_root, fname) if self.path_root else fname
        try:
            with open(path, "rb") as f:
                return f.read()
        except OSError as err:
            raise MXNetError(f"ImageIter: cannot open image {path!r}: {err.strerror}") \
                from None

    def _sample(self, key):
        """(label numpy array, encoded image bytes) of the example with ``key``."""
        if self.imgrec is not None:
            if key not in self._position:
                raise MXNetError(f"ImageIter: key {key!r} is not in the record file")
            header, payload = unpack(self.imgrec.read(self._position[key]))
            if self.imglist is None:
                return _label_array(header.label), payload
            return self.imglist[key][0].asnumpy(), payload
        label, fname = self.imglist[key]
        return label.asnumpy(), self.read_image(fname)

    def next_sample(self):
        raise NotImplementedError("ImageIter.next_sample is not implemented in pymxnet; "
                                  "iterate with next() (batches)")

    # --- per-image steps (overridable, as in MXNet) -------------------------------------
    def imdecode(self, s):
        """Decodes image bytes into an (H, W, C) NDArray."""
        return imdecode(s)

    def check_data_shape(self, data_shape):
        """Checks that ``data_shape`` is (3, H, W)."""
        if not len(data_shape) == 3:
            raise IOValueError("data_shape should have length 3, with dimensions CxHxW")
        if not data_shape[0] == 3:
            raise IOValueError("This iterator expects inputs to have 3 channels.")

    def check_valid_image(self, data):
        """Rejects empty images."""
        if len(data.shape) == 0 or data.shape[0] == 0:
            raise MXNetError("ImageIter: data shape is wrong (empty image)")

    def augmentation_transform(self, data):
        """Applies the augmenters in order."""
        for aug in self.auglist:
            data = aug(data)
        return data

    def postprocess_data(self, datum):
        """(H, W, C) -> (C, H, W)."""
        return np.transpose(datum, axes=(2, 0, 1))

    # --- protocol ---------------------------------------------------------------------
    def reset(self):
        """Starts the next epoch (reshuffling when ``shuffle``)."""
        self._cursor.reset()
        self._batch = None

    def hard_reset(self):
        """Starts over, dropping examples held back by 'roll_over'."""
        self._cursor = BatchCursor(self.num_image, self.batch_size, self._cursor.mode,
                                   self._shuffled if self.shuffle else None)
        self._batch = None

    def _batchify(self, ids):
        data = np.zeros((len(ids),) + self.data_shape, dtype=np.float32)
        label = np.zeros(self.provide_label[0][1], dtype=np.float32)
        for slot, i in enumerate(ids):
            key = self._keys[i]
            lab, raw = self._sample(key)
            img = self.imdecode(raw)
            self.check_valid_image(img)
            img = self.augmentation_transform(img)
            arr = as_numpy(img) if isinstance(img, NDArray) else np.asarray(img)
            if arr.ndim != 3:
                raise MXNetError(f"ImageIter: augmented image {key!r} has shape "
                                 f"{arr.shape}, expected (H, W, {self.data_shape[0]})")
            chw = self.postprocess_data(arr)
            if chw.shape != self.data_shape:
                raise MXNetError(f"ImageIter: image {key!r} is {chw.shape} after "
                                 f"augmentation, data_shape is {self.data_shape}")
            data[slot] = chw
            if lab.size != self.label_width:
                raise MXNetError(f"ImageIter: example {key!r} has {lab.size} label(s), "
                                 f"label_width is {self.label_width}")
            label[slot] = lab if self.label_width > 1 else lab[0]
        return data, label

    def iter_next(self):
        step = self._cursor.next()
        if step is None:
            self._batch = None
            return False
        ids, pad = step
        data, label = self._batchify(ids)
        # as_nd: mx.np arrays under npx.set_np(), as MXNet's iterators give them then
        self._batch = (as_nd(data), as_nd(label), pad)
        return True

    def next(self):
        if self.iter_next():
            return DataBatch([self._batch[0]], [self._batch[1]], self._batch[2])
        raise StopIteration

    def getdata(self):
        return [self._batch[0]]

    def getlabel(self):
        return [self._batch[1]]

    def getpad(self):
        return self._batch[2]

    def getindex(self):
        return None
