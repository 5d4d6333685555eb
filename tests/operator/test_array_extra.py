"""cumsum, moments, khatri_rao and _histogram against NumPy references and numeric
gradients, nd and sym paths."""
import numpy as np
import pytest

import mxnet as mx
from mxnet.base import MXNetError
from opcheck import F32_64, Case, check

rs = np.random.RandomState(5)
_ALL = (np.float16, np.float32, np.float64)


@pytest.mark.parametrize("axis", [None, 0, 1, -1])
def test_cumsum(axis):
    x = rs.uniform(-1, 1, (3, 4))
    ref = (lambda a: np.cumsum(a)) if axis is None else (lambda a: np.cumsum(a, axis=axis))
    check(Case("cumsum", ref, kwargs={"axis": axis}, ref_kwargs=False, inputs=[x],
               dtypes=_ALL))


def test_cumsum_dtypes():
    x = mx.nd.array([[1, 2], [3, 4]], dtype="int32")
    assert mx.nd.cumsum(x).dtype == np.int32
    out = mx.nd.cumsum(x, axis=0, dtype="float64")
    assert out.dtype == np.float64 and out.asnumpy().tolist() == [[1, 2], [4, 6]]
    with pytest.raises(MXNetError):
        mx.nd.cumsum(x, axis=2)


@pytest.mark.parametrize("axes,keepdims", [((1,), False), ((0, 2), True), ((0, 1, 2), False)])
def test_moments(axes, keepdims):
    x = rs.uniform(-1, 1, (3, 4, 2))

    def ref(a):
        m = a.mean(axis=axes, keepdims=keepdims)
        v = a.var(axis=axes, keepdims=keepdims)
        return [m.reshape(m.shape or (1,)), v.reshape(v.shape or (1,))]
    check(Case("moments", ref, kwargs={"axes": axes, "keepdims": keepdims},
               ref_kwargs=False, inputs=[x], dtypes=_ALL))


def test_moments_rejects_empty_axes():
    with pytest.raises(MXNetError):
        mx.nd.moments(mx.nd.ones((2, 2)), axes=())


def test_khatri_rao():
    a, b, c = rs.uniform(-1, 1, (2, 3)), rs.uniform(-1, 1, (4, 3)), rs.uniform(-1, 1, (2, 3))

    def ref(*ms):
        out = ms[0]
        for m in ms[1:]:
            out = np.stack([np.kron(out[:, j], m[:, j]) for j in range(m.shape[1])], axis=1)
        return out
    check(Case("khatri_rao", ref, inputs=[a, b, c], grad=False, dtypes=F32_64))


def test_khatri_rao_is_not_differentiable():
    """MXNet 1.9.1 registers no gradient for khatri_rao."""
    a = mx.nd.ones((2, 2))
    a.attach_grad()
    with mx.autograd.record():
        y = mx.nd.khatri_rao(a, a)
    with pytest.raises(MXNetError, match="khatri_rao"):
        y.backward()


def test_khatri_rao_column_mismatch():
    with pytest.raises(MXNetError):
        mx.nd.khatri_rao(mx.nd.ones((2, 3)), mx.nd.ones((2, 2)))


def test_histogram_counts_and_edges():
    data = rs.uniform(0, 4, 50)
    counts, edges = mx.nd.histogram(mx.nd.array(data), bins=5, range=(0, 4))
    ref_c, ref_e = np.histogram(data.astype(np.float32), bins=5, range=(0, 4))
    assert counts.dtype == np.int64
    assert counts.asnumpy().tolist() == ref_c.tolist()
    np.testing.assert_allclose(edges.asnumpy(), ref_e, rtol=1e-6)
    bins = np.array([0.0, 1.0, 2.5, 4.0])
    counts, edges = mx.nd.histogram(mx.nd.array(data), bins=mx.nd.array(bins))
    assert counts.asnumpy().tolist() == np.histogram(data.astype(np.float32), bins)[0].tolist()


@pytest.mark.parametrize("dtype,data,bins,rng,want", [
    # expected counts from MXNet 1.9.1: integer data is binned against the edges in
    # its own dtype ([0, 2, 4, 6, 9] here), not NumPy's float edges ([3, 2, 2, 3])
    ("int32", np.arange(10), 4, (0, 9), [2, 2, 2, 4]),
    ("uint8", np.arange(10), 3, (1, 8), [2, 2, 4]),
    ("int32", [3, 1, 2, 0, 5, 5], 2, (0, 5), [2, 4]),
    ("float32", [0.1, 0.2, 0.3, 0.7, 1.0], 3, (0, 1), [3, 0, 2]),
])
def test_histogram_bins_follow_edges_in_data_dtype(dtype, data, bins, rng, want):
    counts, edges = mx.nd.histogram(mx.nd.array(data, dtype=dtype), bins=bins, range=rng)
    assert counts.dtype == np.int64 and edges.dtype == np.dtype(dtype)
    assert counts.asnumpy().tolist() == want


def test_histogram_bin_count_must_not_be_negative():
    # MXNet 1.9.1 fails its shape inference for bins=-1 (oracle); bins=0 gives empty
    # counts
    with pytest.raises(mx.base.MXNetError):
        mx.nd.histogram(mx.nd.ones((3,)), bins=-1, range=(0, 1))[0].wait_to_read()
    assert mx.nd.histogram(mx.nd.ones((3,)), bins=0, range=(0, 1))[0].shape == (0,)


def test_histogram_without_range_uses_numpy_range():
    data = np.array([1.0, 2, 3, 4])
    with pytest.warns(UserWarning):
        counts, edges = mx.nd.histogram(mx.nd.array(data), bins=3)
    assert counts.asnumpy().tolist() == np.histogram(data, bins=3)[0].tolist()


def test_histogram_symbol():
    s = mx.sym.histogram(mx.sym.var("a"), bins=2, range=(0, 2))
    counts, edges = s.eval(a=mx.nd.array([0.5, 1.5, 1.7, 3.0]))
    assert counts.asnumpy().tolist() == [1, 2]
    with pytest.raises(ValueError):
        mx.sym.histogram(mx.sym.var("a"), bins=2)


# --- float16 cumsum on gpu(0): one float16 rounding per element, in order -----------------------
# MXNet's kernel (and NumPy) add along the axis one element at a time, each partial sum
# rounded to float16; CuPy's cumsum scans in parallel and rounds otherwise (MXNet 1.9.1's
# test_np_cumsum on a real GPU). The real GPU where CuPy sees one, else an emulated one.
@pytest.mark.parametrize("axis", [None, 0, 1, 2])
@pytest.mark.parametrize("dtype", [None, "float16"])
def test_cumsum_float16_rounds_each_partial_sum(gpu, axis, dtype):
    x = np.random.RandomState(7).standard_normal((4, 3, 40))
    src = x.astype(np.float16 if dtype is None else np.float32)
    a = mx.nd.array(src, ctx=gpu, dtype=src.dtype)
    a.attach_grad()
    kwargs = {} if dtype is None else {"dtype": dtype}
    with mx.autograd.record():
        y = mx.nd.cumsum(a, axis=axis, **kwargs)
    np.testing.assert_array_equal(y.asnumpy(), np.cumsum(src, axis=axis, dtype=np.float16))
    g = np.random.RandomState(8).standard_normal(y.shape).astype(np.float16)
    y.backward(mx.nd.array(g, ctx=gpu, dtype=np.float16))
    ax = 0 if axis is None else axis
    want = np.flip(np.cumsum(np.flip(g, ax), axis=ax, dtype=np.float16), ax)
    np.testing.assert_array_equal(a.grad.asnumpy(), want.reshape(src.shape).astype(src.dtype))

