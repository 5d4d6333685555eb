"""backend/cublas_graph.py: the GEMM used while a CUDA graph is recorded. The operand
layout rule runs everywhere; the products themselves (every transpose combination,
inside a real capture and outside) run where CuPy sees a GPU."""
import numpy as np
import pytest

import mxnet as mx
from mxnet.backend import cublas_graph as CG

HAS_GPU = mx.context.num_gpus() > 0


def test_layout_of_row_and_column_major_operands():
    a = np.zeros((3, 5), np.float32)
    assert CG._layout(a) == (CG._OP_N, 5)
    assert CG._layout(a.T) == (CG._OP_T, 5)         # (5, 3) F-contiguous: a's storage
    assert CG._layout(a[:, ::2]) is None             # neither: the caller falls back


def test_declines_what_it_does_not_cover():
    a = np.zeros((3, 5), np.float32)
    assert CG.matmul(a, np.zeros((4, 2), np.float32)) is NotImplemented    # k mismatch
    assert CG.matmul(a, np.zeros((5, 2), np.float64)) is NotImplemented    # dtypes
    assert CG.matmul(a.astype(np.int32), np.zeros((5, 2), np.int32)) is NotImplemented
    assert CG.matmul(a[:, ::2], np.zeros((3, 2), np.float32)) is NotImplemented


def test_capture_flag_is_per_thread():
    import threading
    assert CG.capturing() is False
    prev = CG.capture_flag(True)
    try:
        seen = []
        t = threading.Thread(target=lambda: seen.append(CG.capturing()))
        t.start()
        t.join()
        assert CG.capturing() is True and seen == [False]
    finally:
        CG.capture_flag(prev)
    assert CG.capturing() is False


@pytest.mark.skipif(not HAS_GPU, reason="needs a CUDA GPU seen by CuPy")
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_gpu_products_match_cupy_inside_and_outside_a_capture(dtype):
    import cupy as cp
    rng = np.random.RandomState(0)
    m, k, n = 7, 5, 3
    cases = []
    for ta in (False, True):
        for tb in (False, True):
            a = cp.asarray(rng.randn(k, m) if ta else rng.randn(m, k)).astype(dtype)
            b = cp.asarray(rng.randn(n, k) if tb else rng.randn(k, n)).astype(dtype)
            cases.append((a.T if ta else a, b.T if tb else b))
    tol = 1e-2 if dtype == np.float16 else 1e-5
    for a, b in cases:
        got = CG.matmul(a, b)
        np.testing.assert_allclose(cp.asnumpy(got), cp.asnumpy(cp.matmul(a, b)),
                                   rtol=tol, atol=tol)
    outs = [cp.zeros((m, n), dtype) for _ in cases]
    CG.prepare(0)
    s = cp.cuda.Stream(non_blocking=True)
    with s:
        s.begin_capture()
        for (a, b), o in zip(cases, outs):
            assert CG.matmul(a, b, o) is o
        g = s.end_capture()
    g.launch(stream=s)
    s.synchronize()
    for (a, b), o in zip(cases, outs):
        np.testing.assert_allclose(cp.asnumpy(o), cp.asnumpy(cp.matmul(a, b)),
                                   rtol=tol, atol=tol)
