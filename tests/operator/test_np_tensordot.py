"""_npi_tensordot (mx.np.tensordot, mx.np.inner) on gpu(0), where CuPy's tensordot
refuses a 0-d operand unless ``axes`` is 0 or ``((), ())`` (MXNet 1.9.1's
test_np_inner/test_np_tensordot on a real GPU: the 0-d output gradient of a full
contraction). Runs on the real GPU where CuPy sees one, else on one emulated on the
host (tests/multi_gpu_host.py refuses the same); values against NumPy."""
import numpy as np
import pytest

import mxnet as mx
from mxnet import autograd
from mxnet.backend import cupy_or_none

from multi_gpu_host import emulated_gpus

REAL_GPU = cupy_or_none() is not None


@pytest.fixture(autouse=True)
def np_semantics():
    with mx.util.np_shape(True), mx.util.np_array(True):
        yield


@pytest.mark.skipif(REAL_GPU, reason="a real GPU is present: the emulation stands aside")
def test_the_emulation_refuses_a_zero_dim_operand_with_axes():
    with emulated_gpus(1) as cp:
        a, b = cp.asarray(np.float32(2)), cp.ones(3, np.float32)
        with pytest.raises(ValueError, match="An input is zero-dim while axes has dimensions"):
            cp.tensordot(a, b, axes=([], []))
        assert cp.tensordot(a, b, axes=0).get().tolist() == [2, 2, 2]
        assert cp.tensordot(a, b, axes=((), ())).get().tolist() == [2, 2, 2]


# (a shape, b shape, axes): full contractions (a 0-d result), 0-d operands, and others
CASES = [((3,), (3,), 1), ((2, 3), (2, 3), 2), ((2, 3), (3, 2), ([0, 1], [1, 0])),
         ((), (3,), 0), ((2, 3), (), 0), ((), (), 0), ((2, 3), (3, 4), 1),
         ((4, 2, 3), (3, 2), ([1, 2], [1, 0]))]


@pytest.mark.parametrize("sa,sb,axes", CASES)
def test_tensordot_forward_backward(gpu, sa, sb, axes):
    rng = np.random.default_rng(0)
    a_np, b_np = rng.standard_normal(sa), rng.standard_normal(sb)
    a, b = mx.np.array(a_np, ctx=gpu), mx.np.array(b_np, ctx=gpu)
    a.attach_grad()
    b.attach_grad()
    with autograd.record():
        y = mx.np.tensordot(a, b, axes=axes)
    want = np.tensordot(a_np.astype(np.float32), b_np.astype(np.float32), axes=axes)
    np.testing.assert_allclose(y.asnumpy(), want, rtol=1e-5, atol=1e-5)
    g_np = rng.standard_normal(want.shape).astype(np.float32)
    y.backward(mx.np.array(g_np, ctx=gpu))
    # d<g, tensordot(a, b)>: each operand's gradient by finite differences of a linear map
    ga = np.zeros(sa)
    for i in np.ndindex(sa):
        e = np.zeros(sa)
        e[i] = 1
        ga[i] = np.sum(g_np * np.tensordot(e, b_np, axes=axes))
    gb = np.zeros(sb)
    for i in np.ndindex(sb):
        e = np.zeros(sb)
        e[i] = 1
        gb[i] = np.sum(g_np * np.tensordot(a_np, e, axes=axes))
    np.testing.assert_allclose(a.grad.asnumpy(), ga, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(b.grad.asnumpy(), gb, rtol=1e-4, atol=1e-5)


def test_inner_of_vectors(gpu):
    a_np, b_np = np.array([1., 2., 3.]), np.array([4., 5., 6.])
    a, b = mx.np.array(a_np, ctx=gpu), mx.np.array(b_np, ctx=gpu)
    a.attach_grad()
    b.attach_grad()
    with autograd.record():
        y = mx.np.inner(a, b)
    y.backward()
    assert float(y) == np.inner(a_np, b_np)
    np.testing.assert_array_equal(a.grad.asnumpy(), b_np)
    np.testing.assert_array_equal(b.grad.asnumpy(), a_np)
