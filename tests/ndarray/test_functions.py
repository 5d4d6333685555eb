"""mx.nd's Python-level functions: the named elementwise family with arrays or numbers
on either side, concatenate, moveaxis, NumPy/DLPack interchange, CachedOp, imdecode
and the indexing helpers."""

import numpy as np
import pytest

import mxnet as mx
from mxnet.base import MXNetError

nd = mx.nd
rs = np.random.RandomState(21)

FAMILY = {
    "add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": np.divide,
    "true_divide": np.divide, "modulo": np.mod, "power": np.power, "maximum": np.maximum,
    "minimum": np.minimum, "equal": np.equal, "not_equal": np.not_equal,
    "greater": np.greater, "greater_equal": np.greater_equal, "lesser": np.less,
    "lesser_equal": np.less_equal, "logical_and": np.logical_and,
    "logical_or": np.logical_or, "logical_xor": np.logical_xor,
}


@pytest.mark.parametrize("name", sorted(FAMILY))
def test_named_binary(name):
    ref = FAMILY[name]
    a = rs.uniform(0.5, 2, (2, 3)).astype(np.float32)
    b = rs.uniform(0.5, 2, (1, 3)).astype(np.float32)
    a[0, 0] = b[0, 0]                          # one tie for the comparisons
    fn = getattr(nd, name)
    for lhs, rhs, want in ((nd.array(a), nd.array(b), ref(a, b)),
                           (nd.array(a), 1.5, ref(a, np.float32(1.5))),
                           (1.5, nd.array(a), ref(np.float32(1.5), a))):
        out = fn(lhs, rhs)
        assert out.dtype == np.float32
        np.testing.assert_allclose(out.asnumpy(), np.asarray(want, np.float32), rtol=1e-6)
    assert fn(3, 2) == pytest.approx(float(ref(3, 2)))


def test_named_binary_rejects_other_types():
    with pytest.raises(TypeError):
        nd.add(nd.ones(2), "x")


def test_comparison_keeps_integer_dtype():
    x = nd.array([1, 2, 3], dtype="int32")
    assert nd.equal(x, 2).dtype == np.int32
    assert nd.greater(2, x).asnumpy().tolist() == [1, 0, 0]


def test_concatenate():
    a, b = rs.normal(size=(2, 3)), rs.normal(size=(1, 3))
    out = nd.concatenate([nd.array(a), nd.array(b)])
    np.testing.assert_allclose(out.asnumpy(), np.concatenate([a, b]).astype(np.float32))
    out = nd.concatenate([nd.array(a), nd.array(a)], axis=1)
    assert out.shape == (2, 6)
    one = nd.array(a)
    assert nd.concatenate([one], always_copy=False) is one
    with pytest.raises(MXNetError):
        nd.concatenate([nd.array(a), nd.array(b)], axis=1)


@pytest.mark.parametrize("src,dst", [(0, -1), ([0, 1], [-1, 0]), (2, 0)])
def test_moveaxis(src, dst):
    x = rs.normal(size=(2, 3, 4))
    np.testing.assert_allclose(nd.moveaxis(nd.array(x), src, dst).asnumpy(),
                               np.moveaxis(x, src, dst).astype(np.float32))


def test_moveaxis_bad_axis():
    with pytest.raises(ValueError):
        nd.moveaxis(nd.ones((2, 3)), 2, 0)


def test_dlpack_round_trip_shares_memory():
    x = nd.array([[1.0, 2.0], [3.0, 4.0]])
    y = nd.from_dlpack(nd.to_dlpack_for_read(x))
    np.testing.assert_array_equal(y.asnumpy(), x.asnumpy())
    z = nd.from_dlpack(nd.to_dlpack_for_write(x))
    z[0, 0] = 9
    assert x.asnumpy()[0, 0] == 9
    w = nd.from_dlpack(np.arange(3.0))                  # any __dlpack__ object
    assert w.asnumpy().tolist() == [0.0, 1.0, 2.0]


def test_cached_op():
    data = mx.sym.var("data")
    sym = mx.sym.FullyConnected(data, num_hidden=2, no_bias=True, name="fc")
    op = nd.CachedOp(sym)
    x, w = rs.normal(size=(3, 4)), rs.normal(size=(2, 4))
    out = op(nd.array(x), nd.array(w))
    np.testing.assert_allclose(out.asnumpy(), x @ w.T, rtol=1e-5)


def test_imdecode():
    pil = pytest.importorskip("PIL.Image")
    import io
    img = rs.randint(0, 256, (4, 5, 3)).astype(np.uint8)
    buf = io.BytesIO()
    pil.fromarray(img).save(buf, format="PNG")
    out = nd.imdecode(buf.getvalue())
    assert out.shape == (1, 3, 4, 5) and out.dtype == np.float32
    np.testing.assert_array_equal(out.asnumpy()[0], img.transpose(2, 0, 1))
    crop = nd.imdecode(buf.getvalue(), clip_rect=(1, 1, 3, 4))
    np.testing.assert_array_equal(crop.asnumpy()[0], img[1:4, 1:3].transpose(2, 0, 1))


def test_indexing_helpers():
    assert nd.get_indexing_dispatch_code((slice(None), 1)) == 0
    assert nd.get_indexing_dispatch_code((nd.array([1]),)) == 1
    assert nd.get_indexing_dispatch_code(([0, 1],)) == 1
    with pytest.raises(ValueError):
        nd.get_indexing_dispatch_code((1.5,))
    assert nd.get_oshape_of_gather_nd_op((2, 3, 4), (2, 5)) == (5, 4)
    key, _ = nd.indexing_key_expand_implicit_axes((1, Ellipsis, None), (2, 3, 4))
    assert key == (1, slice(None), slice(None), None)
    key, _ = nd.indexing_key_expand_implicit_axes((None, slice(1, 2)), (2, 3, 4))
    assert key == (None, slice(1, 2), slice(None), slice(None))
    with pytest.raises(IndexError):
        nd.indexing_key_expand_implicit_axes((Ellipsis, Ellipsis), (2,))


def test_dlpack_methods():
    x = nd.array([1.0, 2.0])
    y = nd.from_dlpack(x.to_dlpack_for_write())
    y[1] = 5
    assert x.asnumpy().tolist() == [1.0, 5.0]
    assert nd.from_dlpack(x.to_dlpack_for_read()).asnumpy().tolist() == [1.0, 5.0]


def test_histogram_without_range_returns_float32_counts():
    # with no range MXNet 1.9.1 bins with NumPy and wraps both results with nd.array,
    # so the counts are float32 (with a range or edge array the operator gives int64)
    data = np.array([0.1, 0.5, 0.5, 1.0, 2.0, 3.5, -1, 4], np.float32)
    with pytest.warns(UserWarning):
        counts, edges = nd.histogram(nd.array(data), bins=10)
    ref_c, ref_e = np.histogram(data, bins=10)
    assert counts.dtype == np.float32 and edges.dtype == np.float32
    assert counts.asnumpy().tolist() == ref_c.tolist()
    np.testing.assert_allclose(edges.asnumpy(), ref_e, rtol=1e-6)
    assert nd.histogram(nd.array(data), bins=4, range=(0, 4))[0].dtype == np.int64
