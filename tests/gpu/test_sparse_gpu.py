"""Sparse storage with GPU contexts: csr·dense on the device (cupyx.scipy.sparse),
host kernels whose dense results land in device memory, and the storage fallback on a
GPU. Values against NumPy/scipy. Skipped without a CUDA device seen by CuPy."""
import numpy as np
import pytest
import scipy.sparse as sps

import mxnet as mx

needs_gpu = pytest.mark.skipif(mx.context.num_gpus() == 0,
                               reason="needs a CUDA GPU seen by CuPy")


def _csr(ctx, shape=(6, 5), seed=0):
    m = sps.random(*shape, density=0.4, format="csr", random_state=seed, dtype=np.float32)
    a = mx.nd.sparse.csr_matrix((m.data, m.indices, m.indptr), shape=shape, ctx=ctx)
    return m, a


@needs_gpu
@pytest.mark.parametrize("transpose_b", [False, True])
def test_csr_dot_dense_on_gpu(transpose_b):
    ctx = mx.gpu(0)
    m, a = _csr(ctx)
    b = np.random.RandomState(1).normal(size=(3, 5) if transpose_b else (5, 3))
    b = b.astype(np.float32)
    out = mx.nd.sparse.dot(a, mx.nd.array(b, ctx=ctx), transpose_b=transpose_b)
    assert out.stype == "default" and out.context == ctx
    want = m @ (b.T if transpose_b else b)
    np.testing.assert_allclose(out.asnumpy(), want, rtol=1e-5, atol=1e-6)
    assert type(out._chunk.data).__module__.startswith("cupy")


@needs_gpu
def test_csr_transposed_dot_and_fallback_on_gpu():
    ctx = mx.gpu(0)
    m, a = _csr(ctx)
    g = np.random.RandomState(2).normal(size=(6, 2)).astype(np.float32)
    gw = mx.nd.sparse.dot(a, mx.nd.array(g, ctx=ctx), transpose_a=True)
    assert gw.stype == "row_sparse"
    np.testing.assert_allclose(gw.asnumpy(), m.T @ g, rtol=1e-5, atol=1e-6)
    d = np.random.RandomState(3).normal(size=(6, 5)).astype(np.float32)
    s = a + mx.nd.array(d, ctx=ctx)                 # csr + dense: a dense device result
    assert s.stype == "default" and s.context == ctx
    assert type(s._chunk.data).__module__.startswith("cupy")
    np.testing.assert_allclose(s.asnumpy(), m.toarray() + d, rtol=1e-6)
    e = mx.nd.exp(a)                                  # storage fallback on the GPU
    np.testing.assert_allclose(e.asnumpy(), np.exp(m.toarray()), rtol=1e-5)


@needs_gpu
def test_lazy_sgd_on_gpu_weight():
    ctx = mx.gpu(0)
    w = np.random.RandomState(4).normal(size=(8, 3)).astype(np.float32)
    gd = np.zeros((8, 3), np.float32)
    gd[[1, 5]] = 1.0
    weight = mx.nd.array(w, ctx=ctx)
    grad = mx.nd.array(gd, ctx=ctx).tostype("row_sparse")
    mx.nd.sparse.sgd_update(weight, grad, lr=0.5, out=weight)
    want = w.copy()
    want[[1, 5]] -= 0.5
    np.testing.assert_allclose(weight.asnumpy(), want, rtol=1e-6)
