"""ImageRecordIter on small .rec files made here from known arrays (PNG, so decoding is
exact): crops, normalisation, labels, batch order, augmentation, errors."""
import numpy as np
import pytest

import mxnet as mx
from mxnet import recordio
from mxnet.base import MXNetError

pytest.importorskip("PIL")

SIZES = [(8, 10), (10, 8), (12, 12), (9, 11), (8, 8), (16, 12), (10, 10), (8, 9),
         (11, 8), (13, 10)]


@pytest.fixture(scope="module")
def rec(tmp_path_factory):
    root = tmp_path_factory.mktemp("rec")
    rng = np.random.RandomState(0)
    imgs = [rng.randint(0, 256, s + (3,)).astype(np.uint8) for s in SIZES]
    w = recordio.MXIndexedRecordIO(str(root / "a.idx"), str(root / "a.rec"), "w")
    w2 = recordio.MXRecordIO(str(root / "multi.rec"), "w")
    for i, img in enumerate(imgs):
        bgr = img[:, :, ::-1]                      # pack_img takes OpenCV's BGR order
        w.write_idx(i, recordio.pack_img((0, float(i), 100 + i, 0), bgr, img_fmt=".png"))
        w2.write(recordio.pack_img((0, [i, 10 + i], i, 0), bgr, img_fmt=".png"))
    w.close()
    w2.close()
    return root, imgs


def make(root, **kw):
    args = dict(path_imgrec=str(root / "a.rec"), data_shape=(3, 8, 8), batch_size=4,
                preprocess_threads=2, verbose=False)
    args.update(kw)
    return mx.io.ImageRecordIter(**args)


def center(img, h, w):
    y0, x0 = (img.shape[0] - h) // 2, (img.shape[1] - w) // 2
    return img[y0:y0 + h, x0:x0 + w].transpose(2, 0, 1).astype(np.float32)


def collect(it, epochs=1):
    out = []
    for _ in range(epochs):
        out.append([(b.data[0].asnumpy(), b.label[0].asnumpy(), b.pad, b.index)
                    for b in it])
        it.reset()
    return out


def test_center_crop_labels_and_round_batch(rec):
    root, imgs = rec
    it = make(root)
    assert it.provide_data == [("data", (4, 3, 8, 8))]
    assert it.provide_label == [("softmax_label", (4,))]
    got = collect(it, 3)
    expect_ids = [[[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 0, 1]],
                  [[2, 3, 4, 5], [6, 7, 8, 9]],          # continues after the borrowed
                  [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 0, 1]]]
    for epoch, ids in zip(got, expect_ids):
        assert len(epoch) == len(ids)
        for (data, label, pad, index), batch_ids in zip(epoch, ids):
            assert data.dtype == np.float32
            np.testing.assert_array_equal(label, batch_ids)
            np.testing.assert_array_equal(index, np.array(batch_ids) + 100)
            assert pad == (2 if batch_ids[-1] == 1 and batch_ids[0] == 8 else 0)
            for k, i in enumerate(batch_ids):
                np.testing.assert_array_equal(data[k], center(imgs[i], 8, 8))


def test_no_round_batch_and_parts(rec):
    root, imgs = rec
    for epoch in collect(make(root, round_batch=False), 2):
        assert [len(e[1]) for e in epoch] == [4, 4, 4]
        assert [e[2] for e in epoch] == [0, 0, 2]
        np.testing.assert_array_equal(epoch[2][1][:2], [8, 9])
    # Parts as MXNet 1.9.1 makes them (observed): equal byte ranges of the .rec, or
    # ceil(n / parts) records each with an index file.
    def part(num, index, **kw):
        it = make(root, num_parts=num, part_index=index, batch_size=1,
                  round_batch=False, **kw)
        return [int(b.label[0].asnumpy()[0]) for b in it]

    assert [part(3, i) for i in range(3)] == [[0, 1, 2, 3], [4, 5, 6], [7, 8, 9]]
    assert [part(4, i, path_imgidx=str(root / "a.idx")) for i in range(4)] == \
        [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]]


def test_normalisation(rec):
    root, imgs = rec
    it = make(root, mean_r=10, mean_g=20, mean_b=30, std_r=2, std_g=4, std_b=5,
              scale=0.5, batch_size=10)
    data = it.next().data[0].asnumpy()
    mean = np.array([10, 20, 30], np.float32)[:, None, None]
    std = np.array([2, 4, 5], np.float32)[:, None, None]
    for i in range(10):
        np.testing.assert_allclose(data[i], (center(imgs[i], 8, 8) - mean) * 0.5 / std,
                                   rtol=1e-6)


def test_uint8_and_gray(rec):
    root, imgs = rec
    for it in (make(root, dtype="uint8"),
               mx.io.ImageRecordUInt8Iter(path_imgrec=str(root / "a.rec"),
                                          data_shape=(3, 8, 8), batch_size=4)):
        b = it.next()
        assert b.data[0].dtype == np.uint8 and it.provide_data[0].dtype == np.uint8
        np.testing.assert_array_equal(b.data[0].asnumpy()[2], center(imgs[2], 8, 8))
    g = make(root, data_shape=(1, 8, 8)).next().data[0].asnumpy()
    luma = imgs[0].astype(np.float64) @ [0.299, 0.587, 0.114]
    assert g.shape == (4, 1, 8, 8)
    assert np.abs(g[0, 0] - center(luma[:, :, None], 8, 8)[0]).max() <= 1


def test_label_width(rec):
    root, _ = rec
    it = make(root, path_imgrec=str(root / "multi.rec"), label_width=2)
    assert it.provide_label == [("softmax_label", (4, 2))]
    np.testing.assert_array_equal(it.next().label[0].asnumpy(),
                                  [[0, 10], [1, 11], [2, 12], [3, 13]])
    with pytest.raises(MXNetError, match="label_width"):
        make(root, path_imgrec=str(root / "multi.rec")).next()


def test_imglist_labels(rec, tmp_path):
    root, _ = rec
    lst = tmp_path / "a.lst"
    lst.write_text("".join(f"{100 + i}\t{i * 2}\t{i * 3}\tim{i}.png\n" for i in range(10)))
    it = make(root, path_imglist=str(lst), label_width=2)
    np.testing.assert_array_equal(it.next().label[0].asnumpy(),
                                  [[0, 0], [2, 3], [4, 6], [6, 9]])


def test_resize_pad_and_small_images(rec):
    root, imgs = rec
    # 16x12 -> shorter edge 6 is not exact; 12x12 -> 6x6 is a 2x bilinear shrink,
    # which averages 2x2 blocks.
    it = make(root, resize=6, data_shape=(3, 6, 6), batch_size=10)
    data = it.next().data[0].asnumpy()
    block = imgs[2].astype(np.float64).reshape(6, 2, 6, 2, 3).mean(axis=(1, 3))
    assert np.abs(data[2] - block.transpose(2, 0, 1)).max() <= 1
    # Smaller than data_shape: scaled up until it covers, then centre-cropped.
    big = make(root, data_shape=(3, 20, 20), batch_size=10).next().data[0].asnumpy()
    assert big.shape == (10, 3, 20, 20) and big.min() >= 0 and big.max() <= 255
    padded = make(root, pad=2, fill_value=7, data_shape=(3, 12, 12)).next()
    p0 = padded.data[0].asnumpy()[0]          # 8x10 -> 12x14 -> crop x0 = 1
    assert (p0[:, :2] == 7).all() and (p0[:, -2:] == 7).all()
    np.testing.assert_array_equal(p0[:, 2:10, 1:11],
                                  imgs[0].transpose(2, 0, 1).astype(np.float32))


def test_random_augmentations(rec):
    root, imgs = rec
    it = make(root, rand_crop=True, rand_mirror=True, batch_size=10, seed=3)
    data = it.next().data[0].asnumpy()
    for i, img in enumerate(imgs):
        h, w = img.shape[:2]
        windows = [img[y:y + 8, x:x + 8].transpose(2, 0, 1)
                   for y in range(h - 7) for x in range(w - 7)]
        assert any((data[i] == win).all() or (data[i] == win[:, :, ::-1]).all()
                   for win in windows)
    again = make(root, rand_crop=True, rand_mirror=True, batch_size=10, seed=3)
    np.testing.assert_array_equal(again.next().data[0].asnumpy(), data)
    mirrored = make(root, mirror=True, batch_size=10).next().data[0].asnumpy()
    np.testing.assert_array_equal(mirrored[0], center(imgs[0], 8, 8)[:, :, ::-1])


def test_shuffle(rec):
    root, _ = rec
    it = make(root, shuffle=True, seed=1, batch_size=5,
              path_imgidx=str(root / "a.idx"))
    orders = [np.concatenate([l for _, l, _, _ in ep]).tolist()
              for ep in collect(it, 2)]
    assert all(sorted(o) == list(range(10)) for o in orders)
    assert orders[0] != orders[1]
    same = make(root, shuffle=True, seed=1, batch_size=5)
    assert np.concatenate([b.label[0].asnumpy() for b in same]).tolist() == orders[0]


def test_mean_img(rec, tmp_path):
    root, imgs = rec
    path = tmp_path / "mean.bin"
    it = make(root, mean_img=str(path), batch_size=10)
    assert path.exists()
    crops = np.stack([center(im, 8, 8) for im in imgs])
    mean = crops.mean(axis=0)
    np.testing.assert_allclose(mx.nd.load(str(path))["mean_img"].asnumpy(), mean,
                               rtol=1e-5)
    np.testing.assert_allclose(it.next().data[0].asnumpy(), crops - mean, rtol=1e-4,
                               atol=1e-4)
    again = make(root, mean_img=str(path), batch_size=10, std_r=2, std_g=2, std_b=2)
    np.testing.assert_allclose(again.next().data[0].asnumpy(), (crops - mean) / 2,
                               rtol=1e-4, atol=1e-4)


def test_errors(rec, tmp_path):
    root, _ = rec
    with pytest.raises(MXNetError, match="cannot open"):
        make(root, path_imgrec=str(tmp_path / "none.rec"))
    (tmp_path / "junk.rec").write_bytes(b"definitely not a record file")
    with pytest.raises(MXNetError, match="magic"):
        make(root, path_imgrec=str(tmp_path / "junk.rec"))
    w = recordio.MXRecordIO(str(tmp_path / "notimg.rec"), "w")
    for _ in range(4):
        w.write(recordio.pack((0, 1.0, 0, 0), b"not an image"))
    w.close()
    with pytest.raises(MXNetError, match="invalid image"):
        make(root, path_imgrec=str(tmp_path / "notimg.rec")).next()
    with pytest.raises(MXNetError, match="data_shape"):
        make(root, data_shape=(2, 8, 8))
    with pytest.raises(MXNetError, match="batch_size"):
        mx.io.ImageRecordIter(path_imgrec=str(root / "a.rec"), data_shape=(3, 8, 8))
    with pytest.raises(NotImplementedError, match="max_rotate_angle"):
        make(root, max_rotate_angle=10)
    it = make(root)
    it.next()
    it.reset()                  # a reset with batches prepared ahead starts over
    np.testing.assert_array_equal(it.next().label[0].asnumpy(), [0, 1, 2, 3])
    it.close()
