"""ImageRecordIter: decoded, augmented and normalised image batches from a RecordIO
(.rec) file, decoding with Pillow in a thread pool and preparing batches ahead.

The default augmentation follows MXNet's ('aug_default'): resize the shorter edge to
``resize``; pad by ``pad`` pixels of ``fill_value``; if the image is still smaller
than ``data_shape``, scale it up (height first, then width, keeping the aspect
ratio); crop ``data_shape`` at the centre or, with ``rand_crop``, at random; mirror
when ``mirror`` or (half the time) ``rand_mirror``; output RGB in (C, H, W) as
``(pixel - mean) * scale / std``.
"""
import collections
import copy
import logging
import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ..base import MXNetError
from ..backend import image_codec as codec
from ..backend.image_resize import resize as _resize
from ..operator.params import Bool, Float, FloatOrNone, Int, IntOrNone, Shape, Str
from ..recordio import unpack
from .batching import BatchCursor
from .mx_data_iter import MXDataIter, iterator_schema
from .record_file import RecordFile
from .sharding import record_shard
from ..ndarray import load, save
from ..context import cpu
from ..ndarray.ndarray import from_data

__all__ = ["ImageRecordIter", "ImageRecordUInt8Iter", "ImageRecordIter_v1",
           "ImageRecordUInt8Iter_v1"]

_log = logging.getLogger("mxnet.io")

# Augmentations MXNet offers that pymxnet does not implement yet: name -> default.
_UNSUPPORTED = dict(
    random_resized_crop=False, max_rotate_angle=0, max_aspect_ratio=0.0,
    min_aspect_ratio=None, max_shear_ratio=0.0, max_crop_size=-1, min_crop_size=-1,
    max_random_scale=1.0, min_random_scale=1.0, max_random_area=1.0,
    min_random_area=1.0, max_img_size=1e10, min_img_size=0.0, brightness=0.0,
    contrast=0.0, saturation=0.0, pca_noise=0.0, random_h=0, random_s=0, random_l=0,
    rotate=-1, max_random_contrast=0.0, max_random_illumination=0.0,
)

_SCHEMA = iterator_schema(
    path_imglist=Str(""), path_imgrec=Str(""), path_imgidx=Str(""),
    aug_seq=Str("aug_default"), label_width=Int(1, low=1), data_shape=Shape(),
    preprocess_threads=Int(4, low=1), verbose=Bool(True), num_parts=Int(1, low=1),
    part_index=Int(0, low=0), device_id=Int(0), shuffle_chunk_size=Int(0, low=0),
    shuffle_chunk_seed=Int(0), seed_aug=IntOrNone(None), shuffle=Bool(False),
    seed=Int(0), round_batch=Bool(True), resize=Int(-1), rand_crop=Bool(False),
    random_resized_crop=Bool(False), max_rotate_angle=Int(0),
    max_aspect_ratio=Float(0.0), min_aspect_ratio=FloatOrNone(None),
    max_shear_ratio=Float(0.0), max_crop_size=Int(-1), min_crop_size=Int(-1),
    max_random_scale=Float(1.0), min_random_scale=Float(1.0),
    max_random_area=Float(1.0), min_random_area=Float(1.0), max_img_size=Float(1e10),
    min_img_size=Float(0.0), brightness=Float(0.0), contrast=Float(0.0),
    saturation=Float(0.0), pca_noise=Float(0.0), random_h=Int(0), random_s=Int(0),
    random_l=Int(0), rotate=Int(-1), fill_value=Int(255), inter_method=Int(1),
    pad=Int(0, low=0), mirror=Bool(False), rand_mirror=Bool(False), mean_img=Str(""),
    mean_r=Float(0.0), mean_g=Float(0.0), mean_b=Float(0.0), mean_a=Float(0.0),
    std_r=Float(1.0), std_g=Float(1.0), std_b=Float(1.0), std_a=Float(1.0),
    scale=Float(1.0), max_random_contrast=Float(0.0),
    max_random_illumination=Float(0.0),
)


def _read_imglist(path, label_width, owner):
    """key -> float32 labels, from a .lst file (index, labels..., path; tab separated)."""
    labels = {}
    try:
        with open(path) as f:
            for lineno, line in enumerate(f, 1):
                fields = line.strip().split("\t")
                if len(fields) < 2 + label_width:
                    if line.strip():
                        raise MXNetError(f"{owner}: line {lineno} of {path!r} needs an "
                                         f"index, {label_width} label(s) and a path")
                    continue
                labels[int(float(fields[0]))] = np.array(
                    fields[1:1 + label_width], dtype=np.float32)
    except OSError as err:
        raise MXNetError(f"{owner}: cannot open image list {path!r}: {err.strerror}") \
            from None
    return labels


def _f32_scaled(target, num, den):
    # MXNet computes the upscaled side in float32; matching it keeps sizes identical.
    return int(np.float32(target) / np.float32(num) * np.float32(den))


class ImageRecordIter(MXDataIter):
    """Iterates over images in a RecordIO file (made with im2rec or
    ``mx.recordio.pack_img``), decoding and augmenting them in
    ``preprocess_threads`` threads.

    Output data is (batch, C, H, W) = (batch,) + data_shape, RGB (or gray for C=1),
    float32 by default; labels are (batch,) or (batch, label_width). The main
    parameters are those of MXNet: ``path_imgrec``, ``path_imgidx``,
    ``path_imglist``, ``data_shape``, ``batch_size``, ``label_width``, ``shuffle``,
    ``seed``, ``round_batch``, ``num_parts``/``part_index`` (split as MXNet does: by
    bytes, or by records with ``path_imgidx``), ``resize``,
    ``rand_crop``, ``rand_mirror``, ``mirror``, ``pad``, ``fill_value``,
    ``inter_method``, ``mean_img``, ``mean_r/g/b/a``, ``std_r/g/b/a``, ``scale``,
    ``dtype``, ``preprocess_threads``, ``prefetch_buffer``. Rotation, shear, random
    scale/aspect/area, color jitter and PCA noise are not implemented (a
    NotImplementedError names them when set).
    """

    _schema = _SCHEMA
    _default_dtype = np.float32

    def _setup(self, p):
        owner = type(self).__name__
        unsupported = [k for k, d in _UNSUPPORTED.items() if p[k] != d]
        if unsupported:
            raise NotImplementedError(f"{owner}: augmentations {unsupported} are not "
                                      "implemented in pymxnet")
        if p.aug_seq != "aug_default":
            raise NotImplementedError(f"{owner}: aug_seq {p.aug_seq!r} is not supported "
                                      "(only 'aug_default')")
        if not p.path_imgrec:
            raise MXNetError(f"{owner}: path_imgrec is required (reading raw images "
                             "through path_imglist alone is not supported; use "
                             "mx.image.ImageIter)")
        if len(p.data_shape) != 3 or p.data_shape[0] not in (1, 3, 4):
            raise MXNetError(f"{owner}: data_shape must be (channels, height, width) with "
                             f"1, 3 or 4 channels, got {p.data_shape}")
        if p.part_index >= p.num_parts:
            raise MXNetError(f"{owner}: part_index {p.part_index} must be < num_parts "
                             f"{p.num_parts}")
        codec.require_pillow()
        self._records = RecordFile(p.path_imgrec, p.path_imgidx or None, owner)
        n = len(self._records)
        if p.path_imgidx:
            # dmlc's indexed splitter: ceil(n / parts) records per part
            step = -(-n // p.num_parts)
            self._positions = np.arange(min(n, p.part_index * step),
                                        min(n, (p.part_index + 1) * step))
        else:
            # dmlc's InputSplit: equal byte ranges, a record belongs where it starts
            self._positions = record_shard(self._records.offsets,
                                           os.path.getsize(p.path_imgrec),
                                           p.num_parts, p.part_index, owner)
        if len(self._positions) == 0:
            raise MXNetError(f"{owner}: part {p.part_index} of {p.num_parts} of "
                             f"{p.path_imgrec!r} holds no records")
        self._imglist = (_read_imglist(p.path_imglist, p.label_width, owner)
                         if p.path_imglist else None)
        self._out_dtype = np.dtype(p.dtype or self._default_dtype)
        channels = p.data_shape[0]
        self._mean = np.array([p.mean_r, p.mean_g, p.mean_b, p.mean_a][:channels]
                              if channels > 1 else [p.mean_r], dtype=np.float32)
        std = np.array([p.std_r, p.std_g, p.std_b, p.std_a][:channels]
                       if channels > 1 else [p.std_r], dtype=np.float32)
        self._factor = np.float32(p.scale) / std
        self._mean_img = None
        self._normalize = self._out_dtype.kind == "f" or bool(
            np.any(self._mean) or np.any(self._factor != 1) or p.mean_img)
        seed = p.seed
        self._order_rng = np.random.RandomState(seed)
        self._aug_rng = np.random.RandomState(seed if p.seed_aug is None else p.seed_aug)
        self._pool = ThreadPoolExecutor(p.preprocess_threads,
                                        thread_name_prefix="ImageRecordIter-decode")
        self._batcher = ThreadPoolExecutor(1, thread_name_prefix="ImageRecordIter-batch")
        if p.mean_img:
            self._mean_img = self._load_mean_img(p)
        count = len(self._positions)
        new_order = (lambda: self._order_rng.permutation(count)) if p.shuffle else None
        self._cursor = BatchCursor(count, p.batch_size,
                                   "round" if p.round_batch else "pad", new_order)
        self._queue = collections.deque()
        self._exhausted = False
        self._depth = max(1, p.prefetch_buffer)
        if p.verbose:
            _log.info("%s: %s, %d images, %d threads, shape=%s", owner, p.path_imgrec,
                      count, p.preprocess_threads, (p.batch_size,) + p.data_shape)
        bs = p.batch_size
        lshape = (bs,) if p.label_width == 1 else (bs, p.label_width)
        return (bs,) + p.data_shape, self._out_dtype.type, lshape, np.float32

    # --- one image --------------------------------------------------------------------
    def _decode(self, pos):
        p = self.params
        header, payload = unpack(self._records.read(pos))
        if self._imglist is not None:
            try:
                label = self._imglist[int(header.id)]
            except KeyError:
                raise MXNetError(f"{type(self).__name__}: record id {header.id} is not "
                                 f"in {p.path_imglist!r}") from None
        else:
            label = np.atleast_1d(np.asarray(header.label, dtype=np.float32))
            if label.size != p.label_width:
                raise MXNetError(f"{type(self).__name__}: record {pos} has {label.size} "
                                 f"label(s) but label_width is {p.label_width}")
        channels = p.data_shape[0]
        if channels == 1:
            img = codec.decode(payload, flag=0)
        elif channels == 3:
            img = codec.decode(payload, flag=1, to_rgb=True)
        else:
            img = codec.decode(payload, flag=-1, to_rgb=True)
            if img.ndim == 2:
                img = np.repeat(img[:, :, None], 3, axis=2)
            if img.shape[2] == 3:
                img = np.concatenate([img, np.full(img.shape[:2] + (1,), 255, img.dtype)],
                                     axis=2)
        return img, label, header.id

    def _augment(self, img, draw):
        p = self.params
        _, out_h, out_w = p.data_shape
        # Plan the geometry first so that the last resize computes only the crop.
        h, w = img.shape[:2]
        steps = []
        if p.resize > 0:
            h, w = (h * p.resize // w, p.resize) if h > w else (p.resize,
                                                                w * p.resize // h)
            steps.append((w, h))
        if p.pad > 0:
            h, w = h + 2 * p.pad, w + 2 * p.pad
            steps.append(None)
        if h < out_h:
            h, w = out_h, _f32_scaled(out_h, h, w)
            steps.append((w, h))
        if w < out_w:
            h, w = _f32_scaled(out_w, w, h), out_w
            steps.append((w, h))
        if p.rand_crop and draw is not None:
            y0 = int(draw[0] * (h - out_h + 1))
            x0 = int(draw[1] * (w - out_w + 1))
        else:
            y0, x0 = (h - out_h) // 2, (w - out_w) // 2
        window = (x0, y0, out_w, out_h)
        for k, step in enumerate(steps):
            if step is None:
                img = np.pad(img, ((p.pad, p.pad), (p.pad, p.pad), (0, 0)),
                             constant_values=p.fill_value)
            elif k == len(steps) - 1:
                img = _resize(img, step[0], step[1], p.inter_method, window=window)
                window = None
            else:
                img = _resize(img, step[0], step[1], p.inter_method)
        if window is not None:
            img = img[y0:y0 + out_h, x0:x0 + out_w]
        if p.mirror or (p.rand_mirror and draw is not None and draw[2] < 0.5):
            img = img[:, ::-1]
        return img.transpose(2, 0, 1)

    def _fill(self, out, slot, pos, draw):
        img, label, rec_id = self._decode(pos)
        chw = self._augment(img, draw)
        if not self._normalize:
            out[slot] = chw
        elif self._mean_img is not None:
            dst = out[slot]
            np.subtract(chw, self._mean_img, out=dst, casting="unsafe")
            dst *= self._factor[:, None, None]
        else:
            dst = out[slot]
            np.subtract(chw, self._mean[:, None, None], out=dst, casting="unsafe")
            dst *= self._factor[:, None, None]
        return label, rec_id

    # --- batches ------------------------------------------------------------------------
    def _make_batch(self, ids, pad, draws):
        p = self.params
        work_dtype = np.float32 if self._normalize else np.uint8
        data = np.empty((len(ids),) + p.data_shape, dtype=work_dtype)
        results = list(self._pool.map(
            lambda k: self._fill(data, k, self._positions[ids[k]], draws[k]),
            range(len(ids))))
        label = np.stack([r[0] for r in results])
        if p.label_width == 1:
            label = label.reshape(-1)
        index = np.array([r[1] for r in results], dtype=np.uint64)
        return data.astype(self._out_dtype, copy=False), label, pad, index

    def _schedule(self):
        while len(self._queue) < self._depth and not self._exhausted:
            before = copy.copy(self._cursor)
            step = self._cursor.next()
            if step is None:
                self._exhausted = True
                self._queue.append((before, None))
                return
            ids, pad = step
            draws = self._aug_rng.random_sample((len(ids), 3))
            self._queue.append((before, self._batcher.submit(self._make_batch, ids, pad,
                                                             draws)))

    def _next_batch(self):
        self._schedule()
        before, future = self._queue[0]
        if future is None:
            return None
        self._queue.popleft()
        out = future.result()
        self._schedule()
        return out

    def _reset(self):
        if self._queue:
            # Batches prepared ahead but never handed out were not read: rewind to
            # where the first of them started.
            self._cursor = self._queue[0][0]
            for _, future in self._queue:
                if future is not None:
                    future.cancel()
            self._queue.clear()
        self._exhausted = False
        self._cursor.reset()

    def _load_mean_img(self, p):
        if os.path.isfile(p.mean_img):
            saved = load(p.mean_img)
            arr = (saved.get("mean_img", next(iter(saved.values())))
                   if isinstance(saved, dict) else saved[0]).asnumpy()
            if arr.shape != p.data_shape:
                raise MXNetError(f"{type(self).__name__}: mean image {p.mean_img!r} has "
                                 f"shape {arr.shape}, data_shape is {p.data_shape}")
            return arr.astype(np.float32)
        _log.info("%s: computing the mean image into %s", type(self).__name__, p.mean_img)
        total = np.zeros(p.data_shape, dtype=np.float64)

        def one(pos):
            return self._augment(self._decode(pos)[0], None).astype(np.float64)

        for chw in self._pool.map(one, self._positions):
            total += chw
        mean = (total / max(1, len(self._positions))).astype(np.float32)
        save(p.mean_img, {"mean_img": from_data(mean, cpu())})
        return mean

    def close(self):
        """Stops the decoding threads."""
        for pool in (getattr(self, "_batcher", None), getattr(self, "_pool", None)):
            if pool is not None:
                pool.shutdown(wait=False, cancel_futures=True)

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shutdown
            pass


class ImageRecordUInt8Iter(ImageRecordIter):
    """ImageRecordIter giving raw uint8 pixels (no mean/std/scale), as MXNet's
    deprecated ImageRecordUInt8Iter; same as ``ImageRecordIter(dtype='uint8')``."""

    _default_dtype = np.uint8


ImageRecordIter_v1 = ImageRecordIter
ImageRecordUInt8Iter_v1 = ImageRecordUInt8Iter
