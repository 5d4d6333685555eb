"""CSVIter and LibSVMIter (text formats), against NumPy arrays written to tmp files
and the round_batch order MXNet 1.9.1 gives (observed)."""
import numpy as np
import pytest

import mxnet as mx
from mxnet.base import MXNetError


@pytest.fixture
def csv_files(tmp_path):
    data = np.arange(30, dtype=np.float64).reshape(10, 3) / 4
    label = np.arange(20, dtype=np.float64).reshape(10, 2)
    np.savetxt(tmp_path / "d.csv", data, delimiter=",")
    np.savetxt(tmp_path / "l.csv", label[:, 0], delimiter=",")
    np.savetxt(tmp_path / "l2.csv", label, delimiter=",")
    return tmp_path, data.astype(np.float32), label.astype(np.float32)


def epochs(it, n):
    out = []
    for _ in range(n):
        out.append([(b.data[0].asnumpy(), b.label[0].asnumpy(), b.pad) for b in it])
        it.reset()
    return out


def test_round_batch_order(csv_files):
    root, data, label = csv_files
    it = mx.io.CSVIter(data_csv=str(root / "d.csv"), data_shape=(3,),
                       label_csv=str(root / "l.csv"), batch_size=4)
    assert it.provide_data == [("data", (4, 3))]
    assert it.provide_label == [("softmax_label", (4,))]
    got = epochs(it, 3)
    # Epoch 1 borrows rows 0-1 to finish; epoch 2 then starts after them.
    ids = [[[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 0, 1]],
           [[2, 3, 4, 5], [6, 7, 8, 9]],
           [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 0, 1]]]
    pads = [[0, 0, 2], [0, 0], [0, 0, 2]]
    for ep, ep_ids, ep_pads in zip(got, ids, pads):
        assert [p for _, _, p in ep] == ep_pads
        for (d, l, _), rows in zip(ep, ep_ids):
            np.testing.assert_array_equal(d, data[rows])
            np.testing.assert_array_equal(l, label[rows, 0])


def test_no_round_batch(csv_files):
    root, data, _ = csv_files
    it = mx.io.CSVIter(data_csv=str(root / "d.csv"), data_shape=(3,), batch_size=4,
                       round_batch=False)
    for ep in epochs(it, 2):
        assert [p for _, _, p in ep] == [0, 0, 2]
        np.testing.assert_array_equal(ep[2][0][:2], data[8:10])
        np.testing.assert_array_equal(ep[0][0], data[:4])
        assert (ep[0][1] == 0).all()          # no label file: zero labels


def test_shapes_and_dtype(csv_files):
    root, data, label = csv_files
    it = mx.io.CSVIter(data_csv=str(root / "d.csv"), data_shape=(3, 1),
                       label_csv=str(root / "l2.csv"), label_shape=(2,), batch_size=5)
    b = it.next()
    assert b.data[0].shape == (5, 3, 1) and b.label[0].shape == (5, 2)
    np.testing.assert_array_equal(b.label[0].asnumpy(), label[:5])
    it = mx.io.CSVIter(data_csv=str(root / "d.csv"), data_shape=(3,), batch_size=5,
                       dtype="int32")
    b = it.next()
    assert it.provide_data[0].dtype == np.int32 and b.data[0].dtype == np.int32
    assert b.label[0].dtype == np.int32
    np.testing.assert_array_equal(b.data[0].asnumpy(), data[:5].astype(np.int32))


def test_folder_of_files(tmp_path):
    a = np.arange(6).reshape(3, 2)
    (tmp_path / "dir").mkdir()
    np.savetxt(tmp_path / "dir" / "a.csv", a, delimiter=",")
    np.savetxt(tmp_path / "dir" / "b.csv", a + 100, delimiter=",")
    it = mx.io.CSVIter(data_csv=str(tmp_path / "dir"), data_shape=(2,), batch_size=6)
    np.testing.assert_array_equal(it.next().data[0].asnumpy(), np.vstack([a, a + 100]))


def test_bad_input(csv_files, tmp_path):
    root, _, _ = csv_files
    with pytest.raises(MXNetError, match="data_shape"):
        mx.io.CSVIter(data_csv=str(root / "d.csv"), batch_size=2)
    with pytest.raises(MXNetError, match="4"):
        mx.io.CSVIter(data_csv=str(root / "d.csv"), data_shape=(4,), batch_size=2)
    with pytest.raises(MXNetError, match="cannot find"):
        mx.io.CSVIter(data_csv=str(tmp_path / "none.csv"), data_shape=(3,), batch_size=2)
    (tmp_path / "bad.csv").write_text("1,2,3\n4,x,6\n")
    with pytest.raises(MXNetError, match="parse"):
        mx.io.CSVIter(data_csv=str(tmp_path / "bad.csv"), data_shape=(3,), batch_size=2)
    np.savetxt(tmp_path / "short.csv", np.zeros(4), delimiter=",")
    with pytest.raises(MXNetError, match="rows"):
        mx.io.CSVIter(data_csv=str(root / "d.csv"), data_shape=(3,), batch_size=2,
                      label_csv=str(tmp_path / "short.csv"))


def test_libsvm_dense(tmp_path):
    (tmp_path / "data.t").write_text("1.0 0:0.5 2:1.2\n-2.0\n-3.0 0:0.6 1:2.4 2:1.2\n"
                                     "4 2:-1.2\n")
    ref = np.array([[0.5, 0, 1.2], [0, 0, 0], [0.6, 2.4, 1.2], [0, 0, -1.2]], np.float32)
    labels = np.array([1, -2, -3, 4], np.float32)
    it = mx.io.LibSVMIter(data_libsvm=str(tmp_path / "data.t"), data_shape=(3,),
                          batch_size=3)
    b = it.next()
    assert b.data[0].stype == "csr"          # MXNet's LibSVMIter yields csr batches
    np.testing.assert_array_equal(b.data[0].asnumpy(), ref[:3])
    np.testing.assert_array_equal(b.label[0].asnumpy(), labels[:3])
    b = it.next()
    np.testing.assert_array_equal(b.data[0].asnumpy(), ref[[3, 0, 1]])
    assert b.pad == 2
    (tmp_path / "label.t").write_text("1.0\n-2.0 0:0.125\n-3.0 2:1.2\n4 1:1.0 2:-1.2\n")
    it = mx.io.LibSVMIter(data_libsvm=str(tmp_path / "data.t"), data_shape=(3,),
                          label_libsvm=str(tmp_path / "label.t"), label_shape=(3,),
                          batch_size=4)
    lab = it.next().label[0]
    assert lab.stype == "csr"
    np.testing.assert_array_equal(
        lab.asnumpy(),
        np.array([[0, 0, 0], [0.125, 0, 0], [0, 0, 1.2], [0, 1, -1.2]], np.float32))
    with pytest.raises(MXNetError, match="outside"):
        mx.io.LibSVMIter(data_libsvm=str(tmp_path / "data.t"), data_shape=(2,),
                         batch_size=2)
