"""Operators on a GPU where CuPy refuses what NumPy takes (found by MXNet 1.9.1's
test_operator_gpu on a real GPU): cupy.add.at only for CUDA atomicAdd's dtypes (take's
backward: test_np_array_split), cupy.any only for device arrays (_power_scalar:
test_np_array_ufunc_protocol), cupyx.scipy.sparse without float16 (csr dot dense:
test_fp16_spmm), and CuPy's linspace, whose fused multiply-add gives edges that are not
np.histogram's (test_histogram). Each runs on gpu(0): the real one where CuPy sees a
GPU, else one emulated on the host (tests/multi_gpu_host.py, which refuses the same
things CuPy does); values against NumPy."""
import numpy as np
import pytest
import scipy.sparse as sps

import mxnet as mx
from mxnet import autograd
from mxnet.backend import cupy_or_none
from mxnet.operator.ops.indexing import scatter_add

from multi_gpu_host import emulated_gpus

REAL_GPU = cupy_or_none() is not None
emulation_only = pytest.mark.skipif(REAL_GPU, reason="a real GPU is present: the "
                                    "emulation stands aside")


@pytest.fixture
def gpu(gpu_and_module):
    """(the array module of gpu(0), gpu(0)): the real device's, else an emulated one."""
    ctx, cp = gpu_and_module
    return cp, ctx


# --- the emulation refuses what CuPy refuses ----------------------------------------------------
@emulation_only
def test_the_emulation_refuses_as_cupy():
    with emulated_gpus(1) as cp:
        a = cp.zeros(3, dtype=np.int8)
        with pytest.raises(TypeError, match="cupy.add.at only supports int32, int64"):
            cp.add.at(a, cp.asarray([0, 0]), cp.ones(2, dtype=np.int8))
        b = cp.zeros(3, dtype=np.int32)
        cp.add.at(b, cp.asarray([0, 0]), cp.ones(2, dtype=np.int32))
        assert b.get().tolist() == [2, 0, 0]
        cp.add.at(a, cp.asarray([True, False, True]), cp.ones(2, dtype=np.int8))  # a mask
        assert a.get().tolist() == [1, 0, 1]
        with pytest.raises(TypeError, match="'a' must be a cupy.ndarray object"):
            cp.any(np.bool_(True))
        with pytest.raises(TypeError, match="'a' must be a cupy.ndarray object"):
            cp.all(np.ones(2, bool))
        assert bool(cp.any(cp.asarray([False, True])))
        import cupyx.scipy.sparse as cps
        with pytest.raises(ValueError, match="Only bool, float32, float64"):
            cps.csr_matrix((cp.ones(1, np.float16), cp.zeros(1, np.int32),
                            cp.asarray(np.array([0, 1], np.int32))), shape=(1, 2))


# --- take's backward: add.at in a dtype CuPy lacks ----------------------------------------------
@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.int32, np.float16])
def test_take_backward_in_any_dtype(gpu, dtype):
    """The gradient of take scatters ones; 300 picks of element 0 wrap in 8 bits, as
    NumPy's own add.at does."""
    _, ctx = gpu
    idx = np.array([0] * 300 + [2, 4, 2], np.int64)
    want = np.zeros(5, dtype)
    np.add.at(want, idx, np.ones(len(idx), dtype))
    for c in (mx.cpu(), ctx):
        x = mx.np.array(np.arange(5), dtype=dtype, ctx=c)
        x.attach_grad()
        with autograd.record():
            y = mx.np.take(x, mx.np.array(idx, dtype=np.int64, ctx=c))
        y.backward()
        assert x.grad.dtype == dtype
        np.testing.assert_array_equal(x.grad.asnumpy(), want)


@pytest.mark.parametrize("dtype", [np.int8, np.uint8])
def test_array_split_backward_with_empty_sections(gpu, dtype):
    """test_np_array_split's case: empty sections are takes of no index."""
    _, ctx = gpu
    with mx.util.np_shape(True), mx.util.np_array(True):
        x = mx.np.array(np.arange(5), dtype=dtype, ctx=ctx)
        x.attach_grad()
        with autograd.record():
            parts = mx.np.array_split(x, (0, 0, 3, 9))
        autograd.backward(parts)
    np.testing.assert_array_equal(x.grad.asnumpy(), np.ones(5, dtype))
    assert [p.shape for p in parts] == [(0,), (0,), (3,), (2,), (0,)]


@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.uint16, np.complex64])
def test_scatter_add_in_dtypes_cupy_lacks(gpu, dtype):
    xp, _ = gpu
    rs = np.random.RandomState(0)
    target = rs.randint(0, 3, (4, 3)).astype(dtype)
    values = (rs.randint(-2, 3, (6, 3)) + (1j * rs.randint(0, 2, (6, 3)) if
                                            dtype == np.complex64 else 0)).astype(dtype)
    idx = np.array([0, 3, 0, 1, 3, 3])
    want = target.copy()
    np.add.at(want, idx, values)
    t = xp.asarray(target)
    scatter_add(xp, t, xp.asarray(idx), xp.asarray(values))
    assert t.dtype == dtype
    np.testing.assert_array_equal(xp.asnumpy(t), want)
    # through a view (take's backward scatters into a moved axis of the gradient)
    t = xp.asarray(target.T.copy())
    scatter_add(xp, xp.moveaxis(t, 1, 0), xp.asarray(idx), xp.asarray(values))
    np.testing.assert_array_equal(xp.asnumpy(t).T, want)


# --- _power_scalar: the sign test of a scalar exponent ------------------------------------------
@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint8, np.float32])
def test_power_scalar_of_an_integer_array(gpu, dtype):
    _, ctx = gpu
    x = np.array([1, 2, 3], dtype)
    for c in (mx.cpu(), ctx):
        a = mx.nd.array(x, dtype=dtype, ctx=c)
        np.testing.assert_array_equal((a ** 2).asnumpy(), x ** 2)
        np.testing.assert_array_equal((2 ** a).asnumpy(), 2 ** x)
        if dtype in (np.int32, np.int64):
            # integer ** negative: C's pow truncated (2 ** -1 is 0, 1 ** -1 is 1)
            want = np.trunc(np.power(x.astype(np.float64), -1)).astype(dtype)
            np.testing.assert_array_equal((a ** -1).asnumpy(), want)


def test_np_power_of_an_integer_array(gpu):
    """test_np_array_ufunc_protocol's workloads of power (NumPy's ufunc on mx.np arrays)."""
    _, ctx = gpu
    x = np.array([1, 2, 3], np.int32)
    with mx.util.np_shape(True), mx.util.np_array(True):
        got = {c: np.power(mx.np.array(x, ctx=c), 2.00001).asnumpy() for c in (mx.cpu(), ctx)}
        np.testing.assert_array_equal(got[ctx], got[mx.cpu()])
        np.testing.assert_array_equal(np.power(mx.np.array(x, ctx=ctx), 2).asnumpy(), x ** 2)
        np.testing.assert_array_equal(np.power(2, mx.np.array(x, ctx=ctx)).asnumpy(), 2 ** x)


# --- dot(csr float16, dense) on the GPU --------------------------------------------------------
def test_fp16_csr_dot_dense(gpu):
    """test_fp16_spmm: cupyx.scipy.sparse has no float16; the product is taken in float32
    and rounded to float16."""
    _, ctx = gpu
    rs = np.random.RandomState(3)
    m = sps.random(6, 40, density=0.2, format="csr", random_state=rs, dtype=np.float32)
    m.data = m.data.astype(np.float16).astype(np.float32)
    w = rs.randn(40, 5).astype(np.float16)
    a = mx.nd.sparse.csr_matrix((m.data.astype(np.float16), m.indices, m.indptr),
                                shape=m.shape, ctx=ctx, dtype=np.float16)
    out = mx.nd.sparse.dot(a, mx.nd.array(w, ctx=ctx, dtype=np.float16))
    assert out.dtype == np.float16 and out.context == ctx
    want = (m @ w.astype(np.float32)).astype(np.float16)
    np.testing.assert_allclose(out.asnumpy().astype(np.float32), want.astype(np.float32),
                               rtol=1e-3, atol=1e-3)


# --- histogram: NumPy's bin edges, bit for bit -------------------------------------------------
@pytest.mark.parametrize("bins", [2, 3, 6, 7, 10])
def test_histogram_edges_are_numpys(gpu, bins):
    _, ctx = gpu
    x = np.random.RandomState(bins).uniform(-3, 3, (4, 5))
    want_counts, want_edges = np.histogram(x, bins, range=(-2.5, 2.5))
    for c in (mx.cpu(), ctx):
        counts, edges = mx.nd.histogram(mx.nd.array(x, dtype=np.float64, ctx=c), bins=bins,
                                        range=(-2.5, 2.5))
        np.testing.assert_array_equal(edges.asnumpy(), want_edges)
        np.testing.assert_array_equal(counts.asnumpy(), want_counts)


def _fused_linspace(start, stop, num=50, endpoint=True, **kwargs):
    """CuPy's scalar linspace as a GPU computes it: start + i * step in one kernel whose
    multiply-add the compiler fuses (one rounding; here in extended precision, exact for
    i * step with small i), the last value stop."""
    import cupy
    step = (stop - start) / (num - 1)
    i = np.arange(num, dtype=np.longdouble)
    y = (np.longdouble(start) + i * np.longdouble(step)).astype(np.float64)
    y[-1] = stop
    return cupy.asarray(y)


@emulation_only
@pytest.mark.skipif(np.finfo(np.longdouble).nmant < 60,
                    reason="needs a long double wider than double")
def test_histogram_edges_do_not_come_from_cupys_linspace(monkeypatch):
    """With 6 bins over (-2.5, 2.5) a fused multiply-add gives 1.1e-16 for the middle
    edge, NumPy 0.0 (MXNet's test_histogram on a real GPU)."""
    with emulated_gpus(1) as cp:
        monkeypatch.setattr(cp, "linspace", _fused_linspace)
        assert float(cp.linspace(-2.5, 2.5, 7)[3]) == 1.1102230246251565e-16
        x = mx.nd.array(np.linspace(-3, 3, 20), dtype=np.float64, ctx=mx.gpu(0))
        _, edges = mx.nd.histogram(x, bins=6, range=(-2.5, 2.5))
        np.testing.assert_array_equal(edges.asnumpy(),
                                      np.histogram([], 6, range=(-2.5, 2.5))[1])


@pytest.mark.parametrize("dtype", [np.int8, np.uint8])
def test_getitem_and_embedding_backward_in_8_bits(gpu, dtype):
    """The other add.at users: x[index array]'s gradient (whose repeated positions
    must accumulate on the device too: a device index array is an index array) and
    Embedding's weight gradient, in MXNet's 8-bit types."""
    _, ctx = gpu
    idx = np.array([0, 3, 0, 0, 1])
    want = np.zeros(4, dtype)
    np.add.at(want, idx, np.ones(len(idx), dtype))
    for c in (mx.cpu(), ctx):
        with mx.util.np_shape(True), mx.util.np_array(True):
            x = mx.np.array(np.arange(4), dtype=dtype, ctx=c)
            x.attach_grad()
            with autograd.record():
                y = x[idx]
            y.backward()
            np.testing.assert_array_equal(x.grad.asnumpy(), want)
        w = mx.nd.array(np.arange(8).reshape(4, 2), dtype=dtype, ctx=c)
        w.attach_grad()
        with autograd.record():
            e = mx.nd.Embedding(mx.nd.array(idx, ctx=c), w, input_dim=4, output_dim=2,
                                dtype=np.dtype(dtype).name)
        e.backward()
        np.testing.assert_array_equal(w.grad.asnumpy(), np.repeat(want[:, None], 2, 1))
