"""mxnet.tools.im2rec against real MXNet 1.9.1's im2rec (fixtures made by its tool) and
round trips through pymxnet's readers."""
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("PIL")
from PIL import Image  # noqa: E402

import mxnet as mx  # noqa: E402
from mxnet.tools import im2rec  # noqa: E402

FIX = os.path.join(os.path.dirname(__file__), "..", "fixtures", "mxnet-1.9.1", "recordio")
IMAGES = os.path.join(FIX, "images")


@pytest.fixture(scope="module")
def reference():
    with np.load(os.path.join(FIX, "reference.npz")) as z:
        return dict(z)


def run(*argv):
    assert im2rec.main([str(a) for a in argv]) == 0


def read_all(prefix):
    """{key: (header, decoded BGR image)} of an indexed record file, via pymxnet."""
    rec = mx.recordio.MXIndexedRecordIO(str(prefix) + ".idx", str(prefix) + ".rec", "r")
    out = {k: mx.recordio.unpack_img(rec.read_idx(k), -1) for k in rec.keys}
    rec.close()
    return out


def test_lists_match_mxnet(tmp_path, capsys):
    run("--list", "--recursive", tmp_path / "data", IMAGES)
    assert capsys.readouterr().out == open(os.path.join(FIX, "list_stdout.txt")).read()
    run("--list", "--recursive", "--no-shuffle", tmp_path / "plain", IMAGES)
    run("--list", "--recursive", "--chunks", 2, "--train-ratio", 0.6, "--test-ratio", 0.2,
        tmp_path / "split", IMAGES)
    names = ["data.lst", "plain.lst"] + [f"split_{c}_{s}.lst" for c in (0, 1)
                                         for s in ("train", "val", "test")]
    for name in names:
        assert (tmp_path / name).read_text() == open(os.path.join(FIX, name)).read(), name


def test_non_recursive_list_takes_root_files_only(tmp_path):
    root = tmp_path / "imgs"
    (root / "sub").mkdir(parents=True)
    for name in ["b.JPG", "a.png", "c.txt", "sub/d.png"]:
        (root / name).write_bytes(b"x")
    run("--list", "--no-shuffle", tmp_path / "flat", root)
    assert (tmp_path / "flat.lst").read_text() == "0\t0.000000\ta.png\n1\t0.000000\tb.JPG\n"


def test_pass_through_is_byte_identical_to_mxnet(tmp_path):
    shutil.copy(os.path.join(FIX, "data.lst"), tmp_path / "raw.lst")
    run("--pass-through", tmp_path / "raw", IMAGES)
    for ext in (".rec", ".idx"):
        assert (tmp_path / ("raw" + ext)).read_bytes() == \
            open(os.path.join(FIX, "raw" + ext), "rb").read()


@pytest.mark.parametrize("name,flags", [
    ("png", ["--encoding", ".png", "--resize", 10, "--center-crop"]),
    ("gray", ["--color", 0, "--encoding", ".png"]),
    ("data", []),
    ("multi", ["--pack-label"])])
def test_packed_records_match_mxnet(tmp_path, reference, name, flags):
    """Same keys, headers and labels as MXNet's records; pixels within 1 for lossless
    PNG (OpenCV's and Pillow's resize / gray conversion round differently) and within
    2 for JPEG (OpenCV's and Pillow's libjpeg builds)."""
    lst = "multi.lst" if name == "multi" else "data.lst"
    shutil.copy(os.path.join(FIX, lst), tmp_path / (name + ".lst"))
    run(*flags, tmp_path / name, IMAGES)
    ours = read_all(tmp_path / name)
    assert sorted(ours) == [0, 1, 2, 3, 4]
    for key, (header, img) in ours.items():
        want = reference[f"{name}/{key}/img"]
        np.testing.assert_array_equal(np.asarray(header.label, np.float32).ravel(),
                                      reference[f"{name}/{key}/label"].ravel())
        assert [header.flag, header.id, header.id2] == list(reference[f"{name}/{key}/id"])
        assert img.shape == want.shape and img.dtype == want.dtype
        diff = np.abs(img.astype(int) - want.astype(int))
        if name in ("gray", "png"):
            # lossless; resizing and color -> gray round differently by at most 1
            assert diff.max() <= 1
        else:
            # both encoders are libjpeg(-turbo) at the same quality: equal or within
            # the decoders' rounding
            assert diff.max() <= 2, diff.max()


def test_mxnet_written_records_read_here(reference):
    """The .rec/.idx written by MXNet 1.9.1's im2rec, read by pymxnet: raw decode,
    ImageRecordIter and ImageRecordDataset."""
    for key, (header, img) in read_all(os.path.join(FIX, "png")).items():
        np.testing.assert_array_equal(img, reference[f"png/{key}/img"])
        assert header.label == reference[f"png/{key}/label"]
    it = mx.io.ImageRecordIter(path_imgrec=os.path.join(FIX, "png.rec"),
                               path_imgidx=os.path.join(FIX, "png.idx"),
                               data_shape=(3, 10, 10), batch_size=5, shuffle=False)
    batch = it.next()
    np.testing.assert_array_equal(batch.data[0].asnumpy(), reference["iter/png/data"])
    np.testing.assert_array_equal(batch.label[0].asnumpy(), reference["iter/png/label"])
    ds = mx.gluon.data.vision.ImageRecordDataset(os.path.join(FIX, "png.rec"))
    for i in range(len(ds)):
        img, label = ds[i]
        np.testing.assert_array_equal(img.asnumpy().transpose(2, 0, 1),
                                      reference["iter/png/data"][i])
        assert label == reference["iter/png/label"][i]
    # JPEG records: different decoders agree to within rounding
    for key, (_, img) in read_all(os.path.join(FIX, "data")).items():
        assert np.abs(img.astype(int) - reference[f"data/{key}/img"]).max() <= 2


def make_folder(root, n_per_class=4, size=(12, 9)):
    """Two class folders of random PNG images; returns {relative path: RGB array}."""
    rng = np.random.RandomState(3)
    images = {}
    for cls in ("ant", "bee"):
        os.makedirs(os.path.join(root, cls))
        for j in range(n_per_class):
            arr = rng.randint(0, 256, size + (3,)).astype(np.uint8)
            rel = f"{cls}/{j}.png"
            Image.fromarray(arr).save(os.path.join(root, rel))
            images[rel] = arr
    return images


def test_round_trip_through_pymxnet_readers(tmp_path):
    """A generated folder packed here (PNG, lossless) reads back through ImageRecordIter
    and ImageRecordDataset with the labels of the list and the source pixels."""
    images = make_folder(tmp_path / "imgs")
    prefix = tmp_path / "rt"
    run("--list", "--recursive", prefix, tmp_path / "imgs")
    run("--encoding", ".png", "--num-thread", 2, prefix, tmp_path / "imgs")
    items = list(im2rec.read_list(str(prefix) + ".lst"))
    assert len(items) == 8 and {it[2] for it in items} == {0.0, 1.0}
    it = mx.io.ImageRecordIter(path_imgrec=str(prefix) + ".rec",
                               path_imgidx=str(prefix) + ".idx", data_shape=(3, 12, 9),
                               batch_size=8, shuffle=False)
    batch = it.next()
    ds = mx.gluon.data.vision.ImageRecordDataset(str(prefix) + ".rec")
    for i, (_, rel, label) in enumerate(items):
        assert batch.label[0].asnumpy()[i] == label
        np.testing.assert_array_equal(batch.data[0].asnumpy()[i],
                                      images[rel].transpose(2, 0, 1).astype(np.float32))
        img, ds_label = ds[i]
        np.testing.assert_array_equal(img.asnumpy(), images[rel])
        assert ds_label == label
    # parallel packing writes the same bytes as one process
    (tmp_path / "one").mkdir()
    shutil.copy(str(prefix) + ".lst", tmp_path / "one" / "rt.lst")
    run("--encoding", ".png", tmp_path / "one" / "rt", tmp_path / "imgs")
    assert (tmp_path / "one" / "rt.rec").read_bytes() == (tmp_path / "rt.rec").read_bytes()
    assert (tmp_path / "one" / "rt.idx").read_bytes() == (tmp_path / "rt.idx").read_bytes()


def test_unreadable_image_is_skipped_with_a_message(tmp_path, capsys):
    make_folder(tmp_path / "imgs", n_per_class=1)
    (tmp_path / "imgs" / "ant" / "broken.png").write_bytes(b"not an image")
    run("--list", "--recursive", "--no-shuffle", tmp_path / "b", tmp_path / "imgs")
    capsys.readouterr()
    run(tmp_path / "b", tmp_path / "imgs")
    out = capsys.readouterr().out
    assert "broken.png" in out and "wrote 2 records" in out
    assert sorted(read_all(tmp_path / "b")) == [0, 2]


def test_plain_progress_lines_when_not_a_tty(tmp_path, capsys):
    make_folder(tmp_path / "imgs", n_per_class=2)
    run("--list", "--recursive", tmp_path / "p", tmp_path / "imgs")
    run(tmp_path / "p", tmp_path / "imgs")
    out = capsys.readouterr().out
    assert "p.rec: 4/4 (100%)" in out and "\r" not in out


def test_missing_list_and_bad_flags(tmp_path, capsys):
    (tmp_path / "imgs").mkdir()
    assert im2rec.main([str(tmp_path / "nothing"), str(tmp_path / "imgs")]) == 1
    assert "Did not find" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        im2rec.main(["--color", "2", str(tmp_path / "x"), str(tmp_path / "imgs")])


def test_runs_as_a_module(tmp_path):
    make_folder(tmp_path / "imgs", n_per_class=1)
    env = dict(os.environ, PYTHONPATH=os.path.join(os.path.dirname(mx.__file__), ".."))
    subprocess.run([sys.executable, "-m", "mxnet.tools.im2rec", "--list", "--recursive",
                    str(tmp_path / "m"), str(tmp_path / "imgs")], check=True, env=env,
                   capture_output=True)
    assert len((tmp_path / "m.lst").read_text().splitlines()) == 2


REF_PYTHON = os.environ.get("MXNET_REF_PYTHON", os.path.expanduser("~/mxref/bin/python"))


@pytest.mark.skipif(not os.path.exists(REF_PYTHON), reason="no reference MXNet 1.9.1")
def test_real_mxnet_reads_records_written_here(tmp_path):
    """Real MXNet 1.9.1's ImageRecordIter reads a .rec/.idx packed here (when the
    reference interpreter is on this machine)."""
    images = make_folder(tmp_path / "imgs", n_per_class=2)
    prefix = tmp_path / "ours"
    run("--list", "--recursive", prefix, tmp_path / "imgs")
    run("--encoding", ".png", prefix, tmp_path / "imgs")
    code = ("import mxnet as mx, numpy as np, sys\n"
            "it = mx.io.ImageRecordIter(path_imgrec=sys.argv[1] + '.rec', path_imgidx="
            "sys.argv[1] + '.idx', data_shape=(3, 12, 9), batch_size=4, shuffle=False)\n"
            "b = it.next()\n"
            "np.savez(sys.argv[2], data=b.data[0].asnumpy(), label=b.label[0].asnumpy())\n")
    subprocess.run([REF_PYTHON, "-c", code, str(prefix), str(tmp_path / "ref.npz")],
                   check=True, capture_output=True, env={"PATH": os.environ["PATH"]})
    got = np.load(tmp_path / "ref.npz")
    items = list(im2rec.read_list(str(prefix) + ".lst"))
    for i, (_, rel, label) in enumerate(items):
        assert got["label"][i] == label
        np.testing.assert_array_equal(got["data"][i], images[rel].transpose(2, 0, 1))
