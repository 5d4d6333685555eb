"""mx.io.DataDesc, DataBatch and NDArrayIter, checked against NumPy batching written
here (and against MXNet 1.9.1's observed batch orders for roll_over)."""
import pickle

import numpy as np
import pytest

import mxnet as mx
from mxnet.base import MXNetError


def batches(it, epochs=1):
    out = []
    for _ in range(epochs):
        out.append([(b.data[0].asnumpy(), [l.asnumpy() for l in b.label], b.pad)
                    for b in it])
        it.reset()
    return out


def reference_pad(n, bs):
    """NumPy reference for last_batch_handle='pad': (example ids, pad) per batch, the
    last batch wrapping to the start."""
    return [(np.arange(start, start + bs) % n, max(0, start + bs - n))
            for start in range(0, n, bs)]


def test_datadesc():
    d = mx.io.DataDesc("data", (2, 3))
    assert d == ("data", (2, 3))
    name, shape = d
    assert (name, shape) == ("data", (2, 3))
    assert d.dtype is np.float32 and d.layout == "NCHW"
    assert repr(d) == "DataDesc[data,(2, 3),<class 'numpy.float32'>,NCHW]"
    d2 = mx.io.DataDesc("x", (4,), np.int32, "NC")
    assert (d2.dtype, d2.layout) == (np.int32, "NC")
    assert mx.io.DataDesc.get_batch_axis("TNC") == 1
    assert mx.io.DataDesc.get_batch_axis(None) == 0
    lst = mx.io.DataDesc.get_list([("a", (1, 2)), ("b", (3,))], [("a", np.float16),
                                                                 ("b", np.int64)])
    assert [(x.name, x.shape, x.dtype) for x in lst] == [("a", (1, 2), np.float16),
                                                        ("b", (3,), np.int64)]
    again = pickle.loads(pickle.dumps(d2))
    assert again == d2 and again.dtype == np.int32 and again.layout == "NC"


def test_databatch_str_and_checks():
    b = mx.io.DataBatch([mx.nd.ones((2, 3))], [mx.nd.zeros((2,))], pad=1)
    assert str(b) == "DataBatch: data shapes: [(2, 3)] label shapes: [(2,)]"
    assert (b.pad, b.index, b.bucket_key, b.provide_data) == (1, None, None, None)
    assert str(mx.io.DataBatch([mx.nd.ones((1,))])).endswith("label shapes: None")
    with pytest.raises(MXNetError):
        mx.io.DataBatch(mx.nd.ones((2, 3)))


@pytest.mark.parametrize("n,bs", [(10, 3), (12, 4), (5, 7)])
def test_pad_matches_reference(n, bs):
    x = np.random.rand(n, 2).astype(np.float32)
    y = np.arange(n, dtype=np.float32) * 3
    it = mx.io.NDArrayIter(x, y, batch_size=bs)
    ref = reference_pad(n, bs)
    for epoch in batches(it, 2):
        assert len(epoch) == len(ref)
        for (data, labels, pad), (ids, rpad) in zip(epoch, ref):
            np.testing.assert_array_equal(data, x[ids])
            np.testing.assert_array_equal(labels[0], y[ids])
            assert pad == rpad


def test_provide_and_dtypes():
    it = mx.io.NDArrayIter(np.arange(20).reshape(10, 2), np.arange(10), batch_size=3)
    assert it.provide_data == [("data", (3, 2))]
    assert it.provide_label == [("softmax_label", (3,))]
    assert it.provide_data[0].dtype == np.float32   # numpy input becomes float32
    b = next(iter(it))
    assert b.data[0].dtype == np.float32 and b.index is None
    it = mx.io.NDArrayIter(mx.nd.arange(10, dtype="int64"), batch_size=4)
    assert it.provide_data[0].dtype == np.int64
    assert it.next().data[0].dtype == np.int64


def test_dict_and_list_inputs_are_sorted_by_name():
    it = mx.io.NDArrayIter({"b": np.zeros((4, 2)), "a": np.ones((4, 1))}, None,
                           batch_size=2)
    assert [d.name for d in it.provide_data] == ["a", "b"]
    assert it.provide_label == []
    b = it.next()
    np.testing.assert_array_equal(b.data[0].asnumpy(), np.ones((2, 1)))
    assert b.label == []
    it = mx.io.NDArrayIter([np.zeros((4, 2)), np.ones((4, 1))], [np.zeros(4)],
                           batch_size=2, data_name="x", label_name="y")
    assert [d.name for d in it.provide_data] == ["_0_x", "_1_x"]
    assert [d.name for d in it.provide_label] == ["y"]
    # MXNet sorts names as strings, so _10_ comes before _2_.
    it = mx.io.NDArrayIter([np.zeros((4, i + 1)) for i in range(11)], batch_size=2)
    assert [d.name for d in it.provide_data][:3] == ["_0_data", "_10_data", "_1_data"]


def test_discard():
    x = np.arange(10, dtype=np.float32)
    it = mx.io.NDArrayIter(x, batch_size=3, last_batch_handle="discard")
    for epoch in batches(it, 2):
        assert [d.tolist() for d, _, _ in epoch] == [[0, 1, 2], [3, 4, 5], [6, 7, 8]]
        assert all(p == 0 for _, _, p in epoch)


def test_roll_over_sequence():
    # The batch order MXNet 1.9.1 gives (observed): leftovers start the next epoch
    # and the batch that holds them reports their count as pad.
    x = np.arange(10, dtype=np.int32)
    it = mx.io.NDArrayIter(x, np.arange(10) * 10, batch_size=3,
                           last_batch_handle="roll_over")
    got = [[(d.tolist(), l[0].tolist(), p) for d, l, p in ep] for ep in batches(it, 3)]
    assert got[0] == [([0, 1, 2], [0, 10, 20], 0), ([3, 4, 5], [30, 40, 50], 0),
                      ([6, 7, 8], [60, 70, 80], 0)]
    assert got[1] == [([9, 0, 1], [90, 0, 10], 1), ([2, 3, 4], [20, 30, 40], 0),
                      ([5, 6, 7], [50, 60, 70], 0)]
    assert got[2][0] == ([8, 9, 0], [80, 90, 0], 2)
    it.hard_reset()
    assert it.next().data[0].asnumpy().tolist() == [0, 1, 2]


def test_shuffle_is_a_permutation_each_epoch():
    x = np.arange(12, dtype=np.float32)
    it = mx.io.NDArrayIter(x, x * 2, batch_size=4, shuffle=True)
    orders = []
    for epoch in batches(it, 3):
        data = np.concatenate([d for d, _, _ in epoch])
        labels = np.concatenate([l[0] for _, l, _ in epoch])
        np.testing.assert_array_equal(labels, data * 2)   # data and label stay paired
        np.testing.assert_array_equal(np.sort(data), x)
        orders.append(data.tolist())
    assert orders[0] != orders[1] or orders[1] != orders[2]


def test_shuffle_follows_numpy_seed():
    def first_epoch():
        np.random.seed(5)
        it = mx.io.NDArrayIter(np.arange(10), batch_size=5, shuffle=True)
        return [b.data[0].asnumpy().tolist() for b in it]

    np.random.seed(5)
    idx = np.arange(10)
    np.random.shuffle(idx)
    assert first_epoch() == [idx[:5].tolist(), idx[5:].tolist()]


def test_manual_protocol():
    it = mx.io.NDArrayIter(np.arange(8).reshape(4, 2), batch_size=3)
    assert it.iter_next()
    np.testing.assert_array_equal(it.getdata()[0].asnumpy(), [[0, 1], [2, 3], [4, 5]])
    assert it.getlabel() == [] and it.getpad() == 0 and it.getindex() is None
    assert it.iter_next()
    assert it.getpad() == 2
    np.testing.assert_array_equal(it.getdata()[0].asnumpy(), [[6, 7], [0, 1], [2, 3]])
    assert not it.iter_next()
    with pytest.raises(StopIteration):
        it.next()


def test_contiguous_batches_are_views():
    data = mx.nd.array(np.arange(6).reshape(6, 1))
    it = mx.io.NDArrayIter(data, batch_size=2)
    b = it.next()
    b.data[0][:] = -1      # as in MXNet, an unshuffled batch shares the input's memory
    assert data.asnumpy()[:2].ravel().tolist() == [-1, -1]


def test_bad_input():
    with pytest.raises(TypeError):
        mx.io.NDArrayIter("abc")
    with pytest.raises(MXNetError):
        mx.io.NDArrayIter("abc")
    with pytest.raises(MXNetError, match="Invalid type"):
        mx.io.NDArrayIter({"a": "xx"})
    with pytest.raises(MXNetError, match="examples"):      # too few labels
        mx.io.NDArrayIter(np.zeros((4, 2)), np.zeros(3))
    # as in MXNet, longer label arrays are read up to the data's example count
    it = mx.io.NDArrayIter(np.zeros((4, 2)), np.arange(6), batch_size=4)
    assert next(it).label[0].asnumpy().tolist() == [0, 1, 2, 3]
    with pytest.raises(MXNetError, match="last_batch_handle"):
        mx.io.NDArrayIter(np.zeros((4, 2)), last_batch_handle="foo")
    with pytest.raises(MXNetError, match="batch_size"):
        mx.io.NDArrayIter(np.zeros((4, 2)), batch_size=0)
    with pytest.raises(MXNetError, match="empty"):
        mx.io.NDArrayIter([])
    with pytest.raises(MXNetError):
        mx.io.NDArrayIter(np.zeros((4, 2)), batch_size=5, last_batch_handle="roll_over")


def test_num_parts_gives_each_worker_a_contiguous_share():
    data = np.arange(10, dtype=np.float32).reshape(10, 1)
    label = np.arange(10, dtype=np.float32)
    seen = []
    for part in range(3):
        it = mx.io.NDArrayIter(data, label, batch_size=1, num_parts=3, part_index=part)
        seen.append([int(b.label[0].asnumpy()[0]) for b in it])
    assert seen == [[0, 1, 2], [3, 4, 5], [6, 7, 8, 9]]
    with pytest.raises(mx.base.MXNetError):
        mx.io.NDArrayIter(data, label, num_parts=2, part_index=2)


def test_csr_data_needs_discard():
    import scipy.sparse as sps
    dense = np.eye(5, 4, dtype=np.float32)
    for data in (mx.nd.array(dense).tostype("csr"), sps.csr_matrix(dense)):
        with pytest.raises(NotImplementedError):
            mx.io.NDArrayIter({"data": data}, dense, 2)


@pytest.mark.parametrize("shuffle", [False, True])
def test_csr_batches_match_dense_rows(shuffle):
    import scipy.sparse as sps
    rs = np.random.RandomState(4)
    dense = (rs.uniform(size=(7, 5)) * (rs.uniform(size=(7, 5)) > 0.5)).astype(np.float32)
    it = mx.io.NDArrayIter({"csr": sps.csr_matrix(dense), "dns": dense}, None, 3,
                           shuffle=shuffle, last_batch_handle="discard")
    n = 0
    for batch in it:
        csr, dns = batch.data
        assert csr.stype == "csr" and csr.shape == (3, 5)
        np.testing.assert_array_equal(csr.asnumpy(), dns.asnumpy())
        n += 1
    assert n == 7 // 3 and not batch.label


def test_legacy_module_paths_name_the_same_classes():
    # scripts written for MXNet import from the modules MXNet defined these in
    from mxnet.io.io import DataIter, NDArrayIter
    from mxnet.executor_manager import DataParallelExecutorManager
    from mxnet.metric import ndarray
    assert (DataIter, NDArrayIter) == (mx.io.DataIter, mx.io.NDArrayIter)
    assert DataParallelExecutorManager is mx.model.DataParallelExecutorManager
    assert ndarray is mx.nd


def test_data_desc_and_batch_pickles_load_in_either_framework():
    """DataDesc and DataBatch pickle under mxnet.io.io, the module MXNet 1.9.1 defines
    them in: MXNet's pickles (tests/fixtures/mxnet-1.9.1/pickles) load here, and
    pymxnet's name the same classes (a DataBatch's are MXNet's bytes exactly)."""
    from common import fixture_path
    with open(fixture_path("pickles", "data_desc.pkl"), "rb") as f:
        desc = pickle.load(f)
    assert (desc.name, desc.shape, desc.dtype, desc.layout) == ("data", (2, 3), np.float32,
                                                               "NC")
    assert pickle.dumps(desc, protocol=4).startswith(b"\x80\x04\x95") and \
        b"mxnet.io.io" in pickle.dumps(desc, protocol=4)
    with open(fixture_path("pickles", "data_batch.pkl"), "rb") as f:
        theirs = f.read()
    batch = pickle.loads(theirs)
    np.testing.assert_array_equal(batch.data[0].asnumpy(),
                                  np.arange(6, dtype=np.float32).reshape(2, 3))
    assert batch.pad == 1
    ours = mx.io.DataBatch([mx.nd.array(np.arange(6, dtype=np.float32).reshape(2, 3))],
                           [mx.nd.array([1.0, 0.0])], pad=1)
    assert pickle.dumps(ours, protocol=4) == theirs
