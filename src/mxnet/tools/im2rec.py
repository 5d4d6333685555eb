"""Turn an image folder into ``.lst`` lists and packed ``.rec``/``.idx`` RecordIO files.

The command line is MXNet 1.9.1's ``tools/im2rec.py``::

    mxnet-im2rec --list --recursive data images/     # images/<class>/* -> data.lst
    mxnet-im2rec --num-thread 4 data images/         # data*.lst -> data.rec + data.idx

(also ``python -m mxnet.tools.im2rec``). Two steps, chosen by ``--list``:

* **List** (``--list``): walks ``root`` (``--recursive``: every sub-folder is a class,
  numbered in sorted order; otherwise only the files in ``root``, label 0), keeps the
  extensions of ``--exts``, shuffles with MXNet's fixed seed (``--no-shuffle`` keeps the
  sorted order) and writes ``prefix.lst`` — or, with ``--chunks`` and
  ``--train-ratio``/``--test-ratio``, ``prefix[_i]_{train,val,test}.lst``. A list line is
  ``index<TAB>label[<TAB>label...]<TAB>relative/path``.
* **Pack** (default): every ``prefix*.lst`` in the prefix's folder becomes a ``.rec``
  and ``.idx`` of the same name. Each image is read (``--color``), optionally
  centre-cropped to a square (``--center-crop``) and resized so its shorter side is
  ``--resize``, then encoded (``--encoding``, ``--quality``) — or stored byte for byte
  with ``--pass-through``. ``--pack-label`` stores all of a line's labels.
  ``--num-thread N`` encodes in N processes; records keep the list's order.

The files are MXNet's RecordIO format (see :mod:`mxnet.recordio`), readable by
``mx.io.ImageRecordIter``, ``gluon.data.vision.ImageRecordDataset`` and real MXNet.
Images are decoded and encoded with Pillow (``pip install pymxnet[image]``) instead of
OpenCV. Both use libjpeg(-turbo) with the same settings, so re-encoded JPEG records are
usually byte-identical to MXNet's, but that is not guaranteed across library builds;
``--pass-through`` records always are, and PNG records hold the same pixels (resizing
and color-to-gray conversion may differ by one level).
"""
import argparse
import multiprocessing
import os
import random
import sys
import time

from .. import recordio
from .._progress import progress_bar
from ..base import MXNetError
from ..image import codec
from ..image.resize import resize as _resize

__all__ = ["main", "parse_args", "list_image", "write_list", "make_list", "read_list",
           "image_encode", "pack_list"]

_SHUFFLE_SEED = 100        # MXNet's im2rec seeds Python's random with this


def list_image(root, recursive, exts):
    """Yields ``(index, relative path, label)`` for the images under ``root``.

    Recursive: every folder holding images is a class, numbered in the order of a
    sorted walk, and the folder -> label table is printed at the end (as MXNet does).
    """
    exts = {e.lower() for e in exts}
    i = 0
    if recursive:
        classes = {}
        for path, dirs, files in os.walk(root, followlinks=True):
            dirs.sort()
            for fname in sorted(files):
                fpath = os.path.join(path, fname)
                if os.path.splitext(fname)[1].lower() in exts and os.path.isfile(fpath):
                    label = classes.setdefault(path, len(classes))
                    yield i, os.path.relpath(fpath, root), label
                    i += 1
        for path, label in sorted(classes.items(), key=lambda kv: kv[1]):
            print(os.path.relpath(path, root), label)
        return
    for fname in sorted(os.listdir(root)):
        fpath = os.path.join(root, fname)
        if os.path.splitext(fname)[1].lower() in exts and os.path.isfile(fpath):
            yield i, os.path.relpath(fpath, root), 0
            i += 1


def write_list(path_out, image_list):
    """Writes ``(index, path, label, ...)`` items as ``.lst`` lines."""
    with open(path_out, "w") as fout:
        for item in image_list:
            labels = "".join("%f\t" % label for label in item[2:])
            fout.write("%d\t%s%s\n" % (item[0], labels, item[1]))


def make_list(args):
    """The list step: writes ``prefix.lst`` or the chunked train/val/test lists."""
    items = list(list_image(args.root, args.recursive, args.exts))
    if args.shuffle:
        random.seed(_SHUFFLE_SEED)
        random.shuffle(items)
    chunk_size = (len(items) + args.chunks - 1) // args.chunks
    written = []
    for c in range(args.chunks):
        chunk = items[c * chunk_size:(c + 1) * chunk_size]
        base = args.prefix + ("_%d" % c if args.chunks > 1 else "")
        # the split points come from the chunk size, not the (shorter) last chunk
        n_train = int(chunk_size * args.train_ratio)
        n_test = int(chunk_size * args.test_ratio)
        parts = []
        if args.train_ratio == 1.0:
            parts.append((".lst", chunk))
        else:
            if args.test_ratio:
                parts.append(("_test.lst", chunk[:n_test]))
            if args.train_ratio + args.test_ratio < 1.0:
                parts.append(("_val.lst", chunk[n_test + n_train:]))
            parts.append(("_train.lst", chunk[n_test:n_test + n_train]))
        for suffix, part in parts:
            write_list(base + suffix, part)
            written.append(base + suffix)
    return written


def read_list(path_in):
    """Yields ``[index, path, label, ...]`` for each valid line of a ``.lst`` file;
    malformed lines are reported and skipped."""
    with open(path_in) as fin:
        for line in fin:
            fields = [f.strip() for f in line.strip().split("\t")]
            if len(fields) < 3:
                print("lst should have at least has three parts, but only has %d parts "
                      "for %s" % (len(fields), fields))
                continue
            try:
                item = [int(fields[0]), fields[-1]] + [float(f) for f in fields[1:-1]]
            except ValueError as err:
                print("Parsing lst met error for %s, detail: %s" % (fields, err))
                continue
            yield item


def _square_crop(img):
    h, w = img.shape[:2]
    if h > w:
        top = (h - w) // 2
        return img[top:top + w]
    left = (w - h) // 2
    return img[:, left:left + h]


def _resize_short(img, size):
    h, w = img.shape[:2]
    if h > w:
        new_w, new_h = size, h * size // w
    else:
        new_w, new_h = w * size // h, size
    return _resize(img, new_w, new_h, interp=1)


def image_encode(args, item):
    """The record bytes for one list item, or None (after printing why) when the image
    cannot be read or encoded."""
    fullpath = os.path.join(args.root, item[1])
    label = item[2:] if len(item) > 3 and args.pack_label else item[2]
    header = recordio.IRHeader(0, label, item[0], 0)
    try:
        with open(fullpath, "rb") as fin:
            raw = fin.read()
    except OSError as err:
        print("imread error trying to load file: %s (%s)" % (fullpath, err.strerror))
        return None
    if args.pass_through:
        return recordio.pack(header, raw)
    try:
        img = codec.decode(raw, flag=args.color, to_rgb=False, squeeze_gray=True)
    except MXNetError as err:
        print("imread read blank (None) image for file: %s (%s)" % (fullpath, err))
        return None
    if args.center_crop:
        img = _square_crop(img)
    if args.resize:
        img = _resize_short(img, args.resize)
    try:
        return recordio.pack_img(header, img, quality=args.quality, img_fmt=args.encoding)
    except MXNetError as err:
        print("pack_img error on file: %s %s" % (fullpath, err))
        return None


_WORKER_ARGS = None


def _init_worker(args):
    global _WORKER_ARGS
    _WORKER_ARGS = args


def _encode_in_worker(item):
    return item, image_encode(_WORKER_ARGS, item)


def _count_lines(path):
    with open(path, "rb") as f:
        return sum(1 for _ in f)


def pack_list(args, lst_path, working_dir):
    """Packs the images of one ``.lst`` file into ``<name>.rec`` and ``<name>.idx`` in
    ``working_dir``; returns the number of records written."""
    name = os.path.splitext(os.path.basename(lst_path))[0]
    rec_path = os.path.join(working_dir, name + ".rec")
    idx_path = os.path.join(working_dir, name + ".idx")
    items = read_list(lst_path)
    bar = progress_bar(total=_count_lines(lst_path), desc=name + ".rec", unit="img",
                       file=sys.stdout, every=1000)
    record = recordio.MXIndexedRecordIO(idx_path, rec_path, "w")
    written = 0
    pool = None
    try:
        if args.num_thread > 1:
            # fork shares the parsed args cheaply; imap keeps the list's order
            ctx = multiprocessing.get_context(
                "fork" if "fork" in multiprocessing.get_all_start_methods() else None)
            pool = ctx.Pool(args.num_thread, initializer=_init_worker, initargs=(args,))
            results = pool.imap(_encode_in_worker, items, chunksize=16)
        else:
            results = ((item, image_encode(args, item)) for item in items)
        for item, packed in results:
            if packed is not None:
                record.write_idx(item[0], packed)
                written += 1
            bar.update(1)
    finally:
        if pool is not None:
            pool.close()
            pool.join()
        record.close()
        bar.close()
    return written


def parse_args(argv=None):
    """The parsed command line (MXNet 1.9.1's options and defaults)."""
    parser = argparse.ArgumentParser(
        prog="mxnet-im2rec", formatter_class=argparse.ArgumentDefaultsHelpFormatter,
        description="Create an image list from a folder (--list), or pack the images of "
                    "<prefix>*.lst into RecordIO .rec/.idx files.")
    parser.add_argument("prefix", help="prefix of the input/output .lst and .rec files")
    parser.add_argument("root", help="folder holding the images")
    lists = parser.add_argument_group("Options for creating image lists")
    lists.add_argument("--list", action="store_true",
                       help="write <prefix>.lst by walking root instead of packing")
    lists.add_argument("--exts", nargs="+", default=[".jpeg", ".jpg", ".png"],
                       help="image file extensions to include")
    lists.add_argument("--chunks", type=int, default=1, help="number of chunks")
    lists.add_argument("--train-ratio", type=float, default=1.0,
                       help="share of the images in the training list")
    lists.add_argument("--test-ratio", type=float, default=0,
                       help="share of the images in the test list")
    lists.add_argument("--recursive", action="store_true",
                       help="walk sub-folders, one label per folder (otherwise only "
                            "root's files, label 0)")
    lists.add_argument("--no-shuffle", dest="shuffle", action="store_false",
                       help="keep the sorted order instead of shuffling the list")
    lists.add_argument("--shuffle", dest="shuffle", action="store_true",
                       help="shuffle the list (the default)")
    packs = parser.add_argument_group("Options for creating database")
    packs.add_argument("--pass-through", action="store_true",
                       help="store the image files' bytes unchanged")
    packs.add_argument("--resize", type=int, default=0,
                       help="resize the shorter side to this many pixels (0: keep)")
    packs.add_argument("--center-crop", action="store_true",
                       help="crop the centre square before resizing")
    packs.add_argument("--quality", type=int, default=95,
                       help="JPEG quality 1-100, or PNG compression 0-9")
    packs.add_argument("--num-thread", type=int, default=1,
                       help="number of encoding processes (record order is kept)")
    packs.add_argument("--color", type=int, default=1, choices=[-1, 0, 1],
                       help="1: color (alpha dropped), 0: grayscale, -1: as stored")
    packs.add_argument("--encoding", type=str, default=".jpg", choices=[".jpg", ".png"],
                       help="image encoding inside the records")
    packs.add_argument("--pack-label", action="store_true",
                       help="store every label of a list line, not only the first")
    args = parser.parse_args(argv)
    if args.chunks < 1:
        parser.error("--chunks must be at least 1")
    if args.num_thread < 1:
        parser.error("--num-thread must be at least 1")
    args.prefix = os.path.abspath(args.prefix)
    args.root = os.path.abspath(args.root)
    return args


def main(argv=None):
    """Entry point of ``mxnet-im2rec``; returns the exit status."""
    args = parse_args(argv)
    if not os.path.isdir(args.root):
        print("mxnet-im2rec: image folder %s does not exist" % args.root, file=sys.stderr)
        return 2
    if args.list:
        make_list(args)
        return 0
    working_dir = args.prefix if os.path.isdir(args.prefix) else os.path.dirname(args.prefix)
    found = 0
    for fname in sorted(os.listdir(working_dir)):
        path = os.path.join(working_dir, fname)
        if path.startswith(args.prefix) and fname.endswith(".lst") and os.path.isfile(path):
            print("Creating .rec file from", path, "in", working_dir)
            start = time.time()
            n = pack_list(args, path, working_dir)
            print("wrote %d records in %.2f s" % (n, time.time() - start))
            found += 1
    if not found:
        print("Did not find and list file with prefix %s" % args.prefix)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
