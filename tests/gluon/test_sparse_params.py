"""Gluon with sparse storage: Embedding(sparse_grad=True) and SparseEmbedding give
row_sparse gradients, lazy SGD changes only the looked-up rows (NumPy reference), and
row_sparse parameters live whole in the Trainer's store, pulled row by row."""
import numpy as np
import pytest

import mxnet as mx
from mxnet import autograd, gluon


def _train_once(block, idx, lr=1.0):
    trainer = gluon.Trainer(block.collect_params(), "sgd", {"learning_rate": lr})
    x = mx.nd.array(idx)
    with autograd.record():
        y = block(x).sum()
    y.backward()
    grad = block.weight.grad()
    trainer.step(1)
    return grad, trainer          # the parameter holds its trainer weakly


def test_embedding_sparse_grad_updates_looked_up_rows_only():
    emb = gluon.nn.Embedding(20, 4, sparse_grad=True)
    emb.initialize(mx.init.Normal(1.0))
    w0 = emb.weight.data().asnumpy().copy()
    grad, _ = _train_once(emb, [1, 5, 5])
    assert grad.stype == "row_sparse"
    np.testing.assert_array_equal(grad.indices.asnumpy(), [1, 5])
    want = w0.copy()
    want[1] -= 1.0
    want[5] -= 2.0
    np.testing.assert_allclose(emb.weight.data().asnumpy(), want, rtol=1e-6)


def test_sparse_embedding_row_sparse_weight_through_the_store():
    emb = gluon.contrib.nn.SparseEmbedding(20, 4)
    emb.initialize(mx.init.Normal(1.0))
    w0 = emb.weight._reduce().asnumpy()
    with pytest.raises(RuntimeError):
        emb.weight.data()                 # MXNet: row_sparse values via row_sparse_data
    grad, trainer = _train_once(emb, [2, 7, 2])
    assert grad.stype == "row_sparse"
    w1 = emb.weight._reduce().asnumpy()
    want = w0.copy()
    want[2] -= 2.0
    want[7] -= 1.0
    np.testing.assert_allclose(w1, want, rtol=1e-6)
    rows = emb.weight.row_sparse_data(mx.nd.array([7]))
    assert rows.stype == "row_sparse"
    np.testing.assert_array_equal(rows.indices.asnumpy(), [7])


def test_row_sparse_data_needs_a_trainer():
    p = gluon.Parameter("w", shape=(6, 2), stype="row_sparse", grad_stype="row_sparse")
    p.initialize(init="ones")
    with pytest.raises(RuntimeError):
        p.row_sparse_data(mx.nd.array([0, 1]))


def test_symbol_block_refuses_row_sparse_variables():
    data, weight = mx.sym.var("data"), mx.sym.var("weight", stype="row_sparse")
    out = mx.sym.broadcast_add(mx.sym.dot(data, weight), mx.sym.var("bias"))
    with pytest.raises(AssertionError, match="row_sparse"):
        gluon.SymbolBlock(out, data)


def test_hybridized_block_on_csr_input():
    """A hybridized block takes a csr input: dot(csr, w) * csr, summed over two calls;
    w's gradient against NumPy."""
    class Net(gluon.HybridBlock):
        def __init__(self):
            super().__init__()
            with self.name_scope():
                self.w = self.params.get("w", shape=(3, 3))

        def hybrid_forward(self, F, x, w):
            return F.dot(x, w) * x

    net = Net()
    net.initialize(mx.init.Uniform())
    net.hybridize()
    xd = np.array([[1, 0, 2], [0, 0, 3]], np.float32)
    x = mx.nd.array(xd).tostype("csr")
    with autograd.record():
        y = net(x)
        z = y + net(x)
    z.backward()
    w = net.w.data().asnumpy()
    assert y.stype == "csr"                  # dense * csr keeps csr's pattern
    np.testing.assert_allclose(y.asnumpy(), (xd @ w) * xd, rtol=1e-6)
    np.testing.assert_allclose(net.w.grad().asnumpy(), 2 * xd.T @ xd, rtol=1e-6)
    # a dense call after the csr ones uses its own cached executor
    np.testing.assert_allclose(net(mx.nd.array(xd)).asnumpy(), (xd @ w) * xd, rtol=1e-6)


def test_hybridized_csr_input_dense_grad_repeated_steps():
    """GluonNLP's CSREmbeddingModel: F.sparse.dot(csr, weight) hybridized, dense weight
    gradient, several backward/step rounds (the second backward writes into the
    Parameter's gradient buffer, checked against the csr input's memory); weights
    against NumPy SGD."""
    class Net(gluon.HybridBlock):
        def __init__(self):
            super().__init__()
            with self.name_scope():
                self.weight = self.params.get("weight", shape=(4, 2))

        def hybrid_forward(self, F, x, weight):
            return F.sparse.dot(x, weight)

    net = Net()
    net.initialize(mx.init.Constant(0.5))
    net.hybridize()
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
    xd = np.array([[1, 0, 0, 1], [0, 2, 0, 0], [0, 0, 0, 3]], np.float32)
    w = np.full((4, 2), 0.5, np.float32)
    for _ in range(3):
        x = mx.nd.sparse.csr_matrix(xd)
        with autograd.record():
            loss = (net(x) ** 2).sum()
        loss.backward()
        trainer.step(1)
        w = w - 0.1 * (xd.T @ (2 * (xd @ w)))
    np.testing.assert_allclose(net.weight.data().asnumpy(), w, rtol=1e-5)
