"""mx.contrib.io.DataLoaderIter: a gluon DataLoader's batches as DataBatches."""
import numpy as np
import pytest

import mxnet as mx
from mxnet.contrib.io import DataLoaderIter
from mxnet.gluon.data import ArrayDataset, DataLoader


def _dataset(n=10):
    data = np.arange(n * 3, dtype=np.float64).reshape(n, 3)
    label = np.arange(n, dtype=np.int32) * 10
    return data, label, ArrayDataset(data, label)


def test_batches_are_the_loaders_with_padding():
    data, label, dataset = _dataset(10)
    it = DataLoaderIter(DataLoader(dataset, batch_size=4), data_name="x", label_name="y")
    assert it.batch_size == 4
    assert [(d.name, d.shape, d.dtype) for d in it.provide_data] == [("x", (4, 3), "float32")]
    assert [(d.name, d.shape) for d in it.provide_label] == [("y", (4,))]
    batches = list(it)
    assert [b.pad for b in batches] == [0, 0, 2]
    for k, batch in enumerate(batches):
        real = 4 - batch.pad
        assert batch.data[0].shape == (4, 3) and batch.label[0].shape == (4,)
        assert batch.data[0].dtype == np.float32 and batch.label[0].dtype == np.float32
        np.testing.assert_array_equal(batch.data[0].asnumpy()[:real],
                                      data[4 * k:4 * k + real])
        np.testing.assert_array_equal(batch.label[0].asnumpy()[:real],
                                      label[4 * k:4 * k + real])
    # the padding is zeros
    np.testing.assert_array_equal(batches[-1].data[0].asnumpy()[2:], 0)


def test_reset_starts_over_and_last_batch_modes():
    _, _, dataset = _dataset(10)
    it = DataLoaderIter(DataLoader(dataset, batch_size=3, last_batch="discard"))
    assert len(list(it)) == 3
    assert list(it) == []                       # exhausted until reset
    it.reset()
    first = next(it)
    np.testing.assert_array_equal(first.label[0].asnumpy(), [0, 10, 20])
    it = DataLoaderIter(DataLoader(dataset, batch_size=3, last_batch="keep"))
    assert [b.pad for b in it] == [0, 0, 0, 2]


def test_dtype_and_module_training():
    rng = np.random.RandomState(0)
    x = rng.uniform(-1, 1, (32, 2)).astype(np.float32)
    y = x @ np.array([2.0, -1.0], dtype=np.float32)
    it = DataLoaderIter(DataLoader(ArrayDataset(x, y), batch_size=8), label_name="lin_label",
                        dtype="float64")
    assert next(it).data[0].dtype == np.float64
    it = DataLoaderIter(DataLoader(ArrayDataset(x, y), batch_size=8), label_name="lin_label")
    net = mx.sym.LinearRegressionOutput(
        mx.sym.FullyConnected(mx.sym.Variable("data"), name="fc", num_hidden=1, no_bias=True),
        mx.sym.Variable("lin_label"))
    mod = mx.mod.Module(net, label_names=["lin_label"])
    mod.fit(it, num_epoch=30, eval_metric="mse", initializer=mx.init.Zero(),
            optimizer_params=(("learning_rate", 0.5),))
    w = mod.get_params()[0]["fc_weight"].asnumpy()
    np.testing.assert_allclose(w, [[2.0, -1.0]], atol=1e-2)


def test_bad_loaders():
    with pytest.raises(mx.MXNetError, match="no batch"):
        DataLoaderIter(DataLoader(ArrayDataset(np.zeros((0, 2)), np.zeros(0)), batch_size=2))
    with pytest.raises(mx.MXNetError, match=r"\(data, label\) pairs"):
        DataLoaderIter(DataLoader(np.zeros((4, 2)), batch_size=2))
